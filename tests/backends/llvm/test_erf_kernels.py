"""The cpu backend's inline erf, erfc and erfcx (backends/llvm/erf.py) against mpmath.

Errors are counted in representable values between ours and the correctly rounded value
(subnormal results included), over the core range, both tails and the special values.
"""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.ir import primitives as P
from graph_builder import Builder

from functorch_core.testing import ulp_distance

mp = pytest.importorskip("mpmath")
CPU = registry.get("cpu")
NAMES = ("erf", "erfc", "erfcx")
# measured on these points: erf 1, erfc 1, erfcx 2 in float64; 1 (the final rounding of the
# float64 value, a tie away at worst) in float32
MAX_ULPS = {np.float64: {"erf": 1, "erfc": 1, "erfcx": 2},
            np.float32: {"erf": 1, "erfc": 1, "erfcx": 1}}


def _exact(name, x):
    with mp.workdps(40):
        v = mp.mpf(float(x))
        if not mp.isfinite(v):
            return {"erf": mp.sign(v), "erfc": 1 - mp.sign(v),
                    "erfcx": 0 if v > 0 else mp.inf}[name]
        if v > 1e10:                    # (mpmath's erfc overflows out there)
            return {"erf": 1, "erfc": 0, "erfcx": 1 / (v * mp.sqrt(mp.pi))}[name]
        if name == "erf":
            return mp.erf(v)
        if name == "erfc":
            return mp.erfc(v)
        return mp.erfc(v) * mp.exp(v * v)


def _points(dtype):
    rng = np.random.default_rng(3)
    top = 27.5 if dtype == np.float64 else 10.5            # erfc's underflow
    x = np.concatenate([rng.uniform(-6, 6, 600), rng.uniform(0, 1, 300),
                        rng.uniform(6, top, 300), np.geomspace(1e-300, 1, 200),
                        -np.geomspace(1e-300, 1, 100), rng.uniform(-26, 0, 200),
                        np.geomspace(1, 1e300, 100)])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _compiled(dtype, n):
    b = Builder()
    x = b.input((n,), np.dtype(dtype).name)
    return CPU.compile(b.graph(*[b(getattr(P, name), x) for name in NAMES]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erf_erfc_erfcx_within_their_ulp_bounds_of_mpmath(dtype):
    x = _points(dtype)
    got = _compiled(dtype, x.size)([x])
    worst = {}
    for name, value in zip(NAMES, got, strict=True):
        with np.errstate(over="ignore", under="ignore"):
            want = np.array([float(_exact(name, v)) for v in x]).astype(dtype)
        err = ulp_distance(np.asarray(value), want)
        worst[name] = (err.max(), x[np.argmax(err)])
    assert all(worst[n][0] <= MAX_ULPS[dtype][n] for n in NAMES), worst


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erf_special_values_and_edges(dtype):
    """NaN, +-inf, +-0 as SciPy gives them; erfc underflows through the subnormals to 0 and
    erfcx overflows to inf where the exact values do."""
    info = np.finfo(dtype)
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.max, -info.max,
                  info.smallest_subnormal, -info.smallest_subnormal, 40.0, -40.0], dtype)
    edges = {np.float64: [26.5, 27.0, 27.2, 27.25, 27.3, -26.6, -26.7],
             np.float32: [9.5, 10.0, 10.05, -9.35, -9.4]}[dtype]
    x = np.concatenate([x, np.array(edges, dtype)])
    got = _compiled(dtype, x.size)([x])
    for name, value in zip(NAMES, got, strict=True):
        value = np.asarray(value)
        with np.errstate(over="ignore", under="ignore"):
            want = np.array([float(_exact(name, v)) if np.isfinite(v) or name != "erf"
                             else float(np.sign(v)) for v in x]).astype(dtype)
        want[0] = np.nan
        assert np.all(ulp_distance(value, want) <= 1), (name, x, value, want)
        zero = (x == 0) & (name == "erf")
        assert np.array_equal(np.signbit(value[zero]), np.signbit(x[zero])), name
