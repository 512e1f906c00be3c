"""``log`` and ``log1p`` from correctly rounded operations only, for the random samplers.

NumPy's ``log`` (libm, or SVML on AVX-512 machines) and the cpu backend's native
``log`` are both within 1 ulp but not the same function, so a sampler built on them
gave numbers 1 ulp apart eagerly and under ``jit`` (and, eagerly, from one machine to
the next). These are built from ``+ - * /``, comparisons and ``where`` alone, each
correctly rounded by IEEE 754 in NumPy and in LLVM alike (no fused multiply-add: the
backends do not contract), so every backend computes the same bits.

The method is the cpu backend's (``backends/llvm/mathfuncs.py``; both take the coefficients
from ``ir/numerics.py``): ``x = 2^k (1 + f)`` with ``1 + f`` in ``[sqrt(1/2), sqrt(2))``, the
exponent found by comparisons and exact scalings by powers of two, then the odd series in
``s = f / (2 + f)``. Within 1 ulp of the exact value (tests/api/test_random.py sweeps it).
float16 is computed in float32 and rounded once.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import numerics
from functorch_core.ir.dtypes import dtype_kind

from .. import numpy as fnp


def _coefficients(dtype):
    if dtype == np.float64:
        return numerics.LOG_F64, numerics.LN2_F64
    return numerics.LOG_F32, numerics.LN2_F32


def _work(x):
    dtype = np.dtype(fnp.asarray(x).dtype)
    if dtype_kind(dtype) != "f":
        raise TypeError(f"log of a {dtype} array: a float array is needed")
    return dtype, np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _parts(x, work):
    """(k, f) with x = 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0."""
    c = lambda v: np.asarray(v, work)      # noqa: E731
    mant = np.finfo(work).nmant
    tiny = x < c(np.finfo(work).tiny)
    m = x * fnp.where(tiny, c(2.0 ** mant), c(1.0))
    k = fnp.where(tiny, c(-mant), c(0.0))
    # m in [2^(1 - 2p), 2^2p) before each step, [2^(1 - p), 2^p) after it
    p = 1 << (np.finfo(work).maxexp - 1).bit_length() - 1    # 64 (float32), 512 (float64)
    while p:
        up, down = m >= c(2.0 ** p), m < c(2.0 ** (1 - p))
        m = m * fnp.where(up, c(2.0 ** -p), fnp.where(down, c(2.0 ** p), c(1.0)))
        k = k + fnp.where(up, c(p), fnp.where(down, c(-p), c(0.0)))
        p //= 2
    big = m >= c(np.sqrt(2.0))                # m in [1, 2) here
    m = fnp.where(big, m * c(0.5), m)
    return k + fnp.where(big, c(1.0), c(0.0)), m - c(1.0)     # m - 1 is exact


def _reduced(k, f, tail, work):
    """k ln2 + log(1 + f) + tail, the small terms summed before the exact k * ln2_hi."""
    c = lambda v: np.asarray(v, work)      # noqa: E731
    coeffs, (ln2_hi, ln2_lo) = _coefficients(work)
    hfsq = c(0.5) * (f * f)
    s = f / (c(2.0) + f)
    z = s * s
    q = c(coeffs[-1])
    for a in coeffs[-2::-1]:
        q = q * z + c(a)
    r = z * q
    low = k * c(ln2_lo) + tail
    return k * c(ln2_hi) - ((hfsq - (s * (hfsq + r) + low)) - f)


def _specials(x, r, pole, keep_zero, work):
    c = lambda v: np.asarray(v, work)      # noqa: E731
    r = fnp.where(x == c(np.inf), x, r)
    if keep_zero:
        r = fnp.where(x == c(0.0), x, r)
    r = fnp.where(x == c(pole), c(-np.inf), r)
    r = fnp.where(x < c(pole), c(np.nan), r)
    return fnp.where(x != x, x, r)


def log(x):
    """The natural logarithm of a float array, bit-identical on every backend."""
    dtype, work = _work(x)
    x = fnp.asarray(x, dtype=work)
    # other lanes (0, negatives, inf, NaN) take 1 through the reduction, then specials
    safe = fnp.where((x > np.asarray(0.0, work)) & (x < np.asarray(np.inf, work)), x,
                     np.asarray(1.0, work))
    k, f = _parts(safe, work)
    out = _specials(x, _reduced(k, f, np.asarray(0.0, work), work), 0.0, False, work)
    return fnp.asarray(out, dtype=dtype)


def log1p(x):
    """``log(1 + x)`` of a float array, bit-identical on every backend: log of
    ``u = 1 + x`` rounded, plus ``(1 + x - u) / u`` for the rounding (computed exactly)."""
    dtype, work = _work(x)
    c = lambda v: np.asarray(v, work)      # noqa: E731
    x = fnp.asarray(x, dtype=work)
    xs = fnp.where(fnp.abs(x) == c(np.inf), c(0.0), x)     # the specials' lanes, quietly
    u = c(1.0) + xs
    lost = fnp.where(xs < c(1.0), xs - (u - c(1.0)), c(1.0) - (u - xs))
    ok = (u > c(0.0)) & (u < c(np.inf))
    safe_u = fnp.where(ok, u, c(1.0))
    k, f = _parts(safe_u, work)
    tail = fnp.where(ok, lost / safe_u, c(0.0))
    out = _specials(x, _reduced(k, f, tail, work), -1.0, True, work)
    return fnp.asarray(out, dtype=dtype)
