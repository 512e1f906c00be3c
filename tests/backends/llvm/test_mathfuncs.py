"""The cpu backend's inline polynomial kernels (backends/llvm/mathfuncs.py) vs wider references.

Errors are in ulps of the result's dtype against the function evaluated in wider precision
(float64 for float32, long double for float64), over the whole float range: every exponent,
the overflow and underflow boundaries, subnormal results, inf, -inf, NaN and -0.0.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st

CPU = registry.get("cpu")
WIDE = {np.dtype(np.float32): np.float64, np.dtype(np.float64): np.longdouble}


def _logistic(x):
    with np.errstate(over="ignore"):
        e = np.exp(-x)
    return 1 / (1 + e)


# NumPy's (SciPy's expit for logistic) reference; evaluated in the wide type it is the exact value
REFERENCE = {"exp": np.exp, "tanh": np.tanh, "logistic": _logistic, "log": np.log,
             "log1p": np.log1p, "expm1": np.expm1, "exp2": np.exp2}
# the most ulps each kernel may be off over the sweep (measured: exp 0.75, tanh 0.99, logistic
# 2.20, log 0.74, log1p 0.74, expm1 1.04, exp2 0.66 in float32; 0.75, 1.05, 2.03, 0.72, 0.81,
# 0.80, 0.59 in float64; NumPy's own float32 exp, tanh, 1/(1+exp(-x)), log, log1p, expm1 reach
# 2.35, 1.35, 2.91, 2.69, 1.72, 2.45)
MAX_ULPS = {"exp": 1.0, "tanh": 1.1, "logistic": 2.5, "log": 1.0, "log1p": 1.0, "expm1": 1.1,
            "exp2": 1.0}


def compiled(names, dtype, n):
    b = Builder()
    x = b.input((n,), dtype)
    return CPU.compile(b.graph(*[b(getattr(P, name), x) for name in names]))


def exact(name, x):
    """The wide-precision value; logistic is 0 where NumPy's e^-x overflows x's dtype, as
    SciPy's expit gives."""
    with np.errstate(all="ignore"):
        wide = x.astype(WIDE[x.dtype])
        value = REFERENCE[name](wide)
        if name == "logistic":
            value = np.where(np.isinf(np.exp(-x)), 0, value)
    return value


def ulp_errors(value, want):
    """|value - want| in ulps of value's dtype at want (want rounded to inf counts as inf);
    0 where both are the same NaN/inf/zero, inf where they differ in kind."""
    wide = want.dtype
    with np.errstate(all="ignore"):
        rounded = want.astype(value.dtype)
        want = np.where(np.isinf(rounded), rounded.astype(wide), want)
        err = np.abs(value.astype(wide) - want) / np.spacing(np.abs(rounded)).astype(wide)
        same = (value.astype(wide) == want) & (np.signbit(value) == np.signbit(want))
    same |= np.isnan(value) & np.isnan(want)
    return np.where(same, 0, np.where(np.isfinite(err), err, np.inf))


def sweep_values(dtype, n):
    """n/2 bit patterns spread evenly over every sign and exponent (NaNs and infs included),
    n/2 uniform over the range where exp's results are neither 0, 1 nor inf; then their
    absolute values (log's domain) and those scaled towards -1 (log1p's pole)."""
    rng = np.random.default_rng(0)
    bits = 8 * np.dtype(dtype).itemsize
    itype = np.uint32 if bits == 32 else np.uint64
    shift = bits - (n // 2).bit_length() + 1
    spread = (np.arange(n // 2, dtype=np.uint64) << np.uint64(shift))
    spread |= rng.integers(0, 1 << shift, n // 2, dtype=np.uint64)
    lo, hi = (-110, 95) if bits == 32 else (-750, 715)
    x = np.concatenate([spread.astype(itype).view(dtype), rng.uniform(lo, hi, n // 2)
                        .astype(dtype)])
    with np.errstate(invalid="ignore"):
        return np.concatenate([x, np.abs(x), np.abs(x) * dtype(1e-3) - 1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_sweep_max_ulp(dtype):
    x = sweep_values(dtype, 1 << 19)
    names = list(REFERENCE)
    got = compiled(names, dtype, x.size)([x])
    worst = {}
    for name, value in zip(names, got, strict=True):
        err = ulp_errors(value, exact(name, x))
        i = int(np.argmax(err))
        worst[name] = (float(err[i]), x[i], value[i])
    print({n: round(w[0], 3) for n, w in worst.items()})
    assert all(w[0] <= MAX_ULPS[n] for n, w in worst.items()), worst


def boundary_values(dtype):
    """Specials and the neighbourhoods of exp's overflow and underflow thresholds."""
    info, wide = np.finfo(dtype), WIDE[np.dtype(dtype)]
    edges = [np.log(wide(v)) for v in (info.max, info.smallest_normal, info.smallest_subnormal)]
    edges.append(edges[-1] - np.log(wide(2)))      # below it e^x rounds to 0
    edges += [info.maxexp, info.minexp - 1, info.minexp - info.nmant - 1,
              info.minexp - info.nmant - 2]        # the same for 2^x
    out = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, info.max, -info.max,
           info.smallest_subnormal, -info.smallest_subnormal, info.smallest_normal,
           1.0, -1.0, 0.625, -0.625, np.sqrt(0.5), np.sqrt(2.0), info.eps, -info.eps / 4]
    for one in np.array([1.0, -1.0], dtype):       # log's zero and log1p's pole
        out += [np.nextafter(one, np.array(side, dtype)) for side in (np.inf, -np.inf)]
    for edge in np.array(edges, dtype):
        for side in (np.inf, -np.inf):
            v = edge
            for _ in range(4):
                out.append(v)
                v = np.nextafter(v, np.array(side, dtype))
        out += [-edge, edge * 1.01, edge * 0.99, -edge * 1.01, -edge * 0.99]
    return np.array(out, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_specials_and_range_boundaries_as_numpy(dtype):
    """inf, -inf, NaN, +-0.0 and the largest/smallest inputs give NumPy's values exactly; around
    the overflow, underflow and pole thresholds zero, inf and NaN (sign included) fall exactly
    where the correctly rounded value has them (NumPy's float32 exp2 misses a few there, e.g.
    2^-149.99998 is 2^-149, not 0) and the rest is within the sweep's bound."""
    x = boundary_values(dtype)
    names = list(REFERENCE)
    got = compiled(names, dtype, x.size)([x])
    pure = slice(0, 10)         # 0, -0, inf, -inf, nan, -nan, max, -max, smallest subnormals
    for name, value in zip(names, got, strict=True):
        with np.errstate(all="ignore"):
            numpys = (1 / (1 + np.exp(-x))) if name == "logistic" else REFERENCE[name](x)
            want = exact(name, x).astype(dtype)
        np.testing.assert_array_equal(value[pure], numpys[pure], err_msg=name)
        for kind in (np.isnan, np.isinf, lambda v: v == 0):
            np.testing.assert_array_equal(kind(value), kind(want), err_msg=f"{name} {x}")
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(value[number]), np.signbit(want[number]))
        assert (ulp_errors(value, exact(name, x))[np.isfinite(want)] <= MAX_ULPS[name]).all()


def test_subnormal_results_are_gradual():
    """exp across float32's subnormal range: nonzero and within an ulp down to the smallest."""
    x = np.linspace(-103.9, -87.4, 4001).astype(np.float32)
    (value,) = compiled(["exp"], np.float32, x.size)([x])
    assert (value > 0).all() and (value < np.finfo(np.float32).smallest_normal).any()
    assert ulp_errors(value, exact("exp", x)).max() <= 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(deadline=None)
@given(data=st.data())
def test_any_float_within_bound(dtype, data):
    width = 8 * np.dtype(dtype).itemsize
    xs = data.draw(st.lists(st.floats(width=width), min_size=1, max_size=64))
    x = np.array(xs + [0.0] * (64 - len(xs)), dtype)      # one shape: one compile
    names = list(REFERENCE)
    got = compiled(names, dtype, x.size)([x])
    for name, value in zip(names, got, strict=True):
        err = ulp_errors(value, exact(name, x))
        assert err.max() <= MAX_ULPS[name], (name, x[np.argmax(err)], value[np.argmax(err)])


def test_float16_rounds_the_float32_kernel_within_an_ulp_of_numpy():
    x = np.concatenate([np.linspace(-12, 12, 3001), [0.0, -0.0, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float16)
    names = ["exp", "exp2", "expm1", "tanh", "log", "log1p"]
    got = compiled(names, np.float16, x.size)([x])
    with np.errstate(all="ignore"):
        wants = [REFERENCE[name](x) for name in names]
    for value, want in zip(got, wants, strict=True):
        assert value.dtype == np.float16
        assert (ulp_errors(value, want.astype(np.float64)) <= 1).all()


@pytest.mark.parametrize("name", list(REFERENCE))
def test_kernels_vectorize(name):
    """Vector code (<16 x float> with AVX-512, <8 x float> with AVX2) and no libm call."""
    for dtype, scalar in ((np.float32, "float"), (np.float64, "double")):
        ir_text = str(compiled([name], dtype, 4096).ir)
        widths = {int(w) for w in re.findall(rf"<(\d+) x {scalar}>", ir_text)}
        assert widths and max(widths) >= 4, (name, dtype, widths)
        assert not re.findall(r"declare [^@]*@(?!llvm\.)\w+", ir_text), (name, dtype)
