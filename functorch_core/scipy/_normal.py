"""``ndtr`` and ``ndtri``, the standard normal CDF and its inverse, from traced ops (so ``jit``
compiles them), accurate to about an ulp in both tails.

``ndtr(x) = erfc(-x / sqrt 2) / 2``: rounding ``x / sqrt 2`` alone would cost ``x^2`` ulps
(erfc's relative condition number is ``2 z^2``), so the argument is carried as an exact
``z_hi + z_lo`` (Veltkamp's splitting and Dekker's product, with ``1/sqrt 2`` in two parts) and
``erfc(z_hi + z_lo) = erfc(z_hi) - 2/sqrt(pi) exp(-z_hi^2) z_lo`` to first order. Under a
trace ``erfc`` is the cpu backend's (the C library's, within an ulp); on concrete arrays the
interpreter's would be SciPy's, tens of ulps off from ``z = 1`` on, so there
``erfc(z) = exp(-z^2) erfcx(z)`` for ``z > 1/2``, with ``z^2 = s + e`` exactly (Dekker) and
``exp(-z^2) = exp(-s) (1 - e)``.

``ndtri``: by symmetry only ``q = min(y, 1 - y)`` (``1 - y`` is exact for ``y >= 1/2``) is
solved for, ``ndtr(x) = q`` with ``x <= 0``:

* ``q >= 1e-16``: Giles' erfinv polynomials (the ones ``random.normal`` uses) at
  ``w = -log(4 q (1 - q))``, so ``x = -sqrt 2 (1 - 2q) p(w)`` without the cancellation of
  ``1 - (1 - 2q)^2``; then one Newton step on ``ndtr(x) - q``. The residual is
  ``erf(x / sqrt 2) / 2 + (1/2 - q)`` for ``q >= 1/4``, where ``1/2 - q`` is exact, so ``x``
  keeps its relative accuracy near 0; the compensated ``ndtr(x) - q`` below;
* ``q < 1e-16`` (``x < -8.2``): a start within 4.5e-4 (Abramowitz & Stegun 26.2.23, a rational
  function of ``t = sqrt(-2 log q)``), then two Newton steps on ``log ndtr(x) - log q`` with
  the asymptotic series ``log ndtr(x) = -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4
  - ...)``, 34 terms: within 1.5e-15 at ``x = -8.2``, far below past it; no ``erfc``, so the
  subnormal ``q`` keep their accuracy.

float32 and float16 are computed in float64 and rounded once, as SciPy does.
"""

from __future__ import annotations

import math

import numpy as np

from ir import primitives as P

from .. import numpy as fnp
from .._erfinv import erfinv as _erfinv_giles
from .._erfinv import erfinv_ratio
from ..numpy._core import is_tracer

_SQRT_HALF = (0.7071067811865476, -4.833646656726457e-17)     # 1/sqrt 2 = hi + lo
_SPLIT = 134217729.0                                           # 2^27 + 1 (Veltkamp)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
# Abramowitz & Stegun 26.2.23: x ~ t - (c0 + c1 t + c2 t^2) / (1 + d1 t + d2 t^2 + d3 t^3)
_AS_NUM = (2.515517, 0.802853, 0.010328)
_AS_DEN = (1.0, 1.432788, 0.189269, 0.001308)
_DEEP = 1e-16
# (-1)^k (2k-1)!!: the asymptotic series of ndtr(x) (-x) / phi(x) in 1/x^2
_SERIES = tuple(float(math.prod(range(1, 2 * k, 2))) * (-1) ** k for k in range(34))


def _poly(coefs, t):
    out = np.float64(coefs[-1])
    for c in coefs[-2::-1]:
        out = out * t + c
    return out


def _log_ndtr_asymptotic(x):
    """``log ndtr(x)`` and its derivative for ``x < -8.2``."""
    w = 1 / (x * x)
    series = _poly(_SERIES, w)
    log_cdf = -0.5 * (x * x) - fnp.log(-x * math.sqrt(2 * math.pi)) + fnp.log(series)
    return log_cdf, -x / series


def _split(v):
    t = _SPLIT * v
    hi = t - (t - v)
    return hi, v - hi


_C_HI, _C_LO = _split(_SQRT_HALF[0])


def _erfc_and_gauss(z):
    """``erfc(z)`` and ``exp(-z^2)`` for float64 ``z >= 0`` (see the module's note)."""
    if is_tracer(z):
        return P.erfc.bind(z), fnp.exp(-(z * z))
    s = z * z
    zh, zl = _split(z)
    gauss = fnp.exp(-s) * (1 - (((zh * zh - s) + 2 * zh * zl) + zl * zl))
    tail = z > 0.5
    erfc = fnp.where(tail, gauss * P.erfcx.bind(z), P.erfc.bind(fnp.where(tail, 0.0, z)))
    return erfc, gauss


def _lower_cdf(x):
    """``ndtr(x)`` for float64 ``x <= 0`` (any ``x``: ``erfc(-x / sqrt 2) / 2``)."""
    x = fnp.maximum(x, -40.0)                 # ndtr(-40) underflows; keeps the split finite
    p = x * _SQRT_HALF[0]
    xh, xl = _split(x)
    err = ((xh * _C_HI - p) + xh * _C_LO + xl * _C_HI) + xl * _C_LO
    z_hi, z_lo = -p, -(err + x * _SQRT_HALF[1])
    erfc, gauss = _erfc_and_gauss(z_hi)
    return 0.5 * (erfc - _TWO_OVER_SQRT_PI * gauss * z_lo)


def ndtr(x):
    """The standard normal CDF of a float array ``x`` (float32 and float16 through float64)."""
    dtype = np.dtype(fnp.asarray(x).dtype)
    x = fnp.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        below = _lower_cdf(fnp.minimum(x, 0.0))
        above = 1 - _lower_cdf(-fnp.maximum(x, 0.0))
    return fnp.asarray(fnp.where(x > 0, above, fnp.where(fnp.isnan(x), x, below)), dtype=dtype)


def _newton(x, q):
    central = q >= 0.25
    # each branch sees a cheap argument (erf(0), erfc of the far tail) where it is not taken
    mid = 0.5 * P.erf.bind(fnp.where(central, x, 0.0) * _SQRT_HALF[0]) + (0.5 - q)
    r = fnp.where(central, mid, _lower_cdf(fnp.where(central, -40.0, x)) - q)
    return x - r * math.sqrt(2 * math.pi) * fnp.exp(0.5 * (x * x))


def ndtri(y):
    """The inverse of the standard normal CDF of a float array ``y`` (±inf at 1 and 0, NaN
    outside [0, 1])."""
    with np.errstate(all="ignore"):     # eager: the branch not taken may overflow
        return _ndtri(y)


def _ndtri(y):
    dtype = np.dtype(fnp.asarray(y).dtype)
    y = fnp.asarray(y, dtype=np.float64)
    upper = y > 0.5
    q = fnp.where(upper, 1 - y, y)
    inside = fnp.logical_and(q > 0, q <= 0.5)
    q = fnp.where(inside, q, 0.25)                   # keeps logs and steps finite
    deep = q < _DEEP
    log_q = fnp.log(q)
    qs = fnp.where(deep, 0.25, q)
    w = -(fnp.log(4 * qs) + fnp.log1p(-qs))          # -log(1 - (1 - 2q)^2), no cancellation
    x = _newton(-math.sqrt(2) * (1 - 2 * qs) * erfinv_ratio(w, np.dtype(np.float64)), qs)
    t = fnp.sqrt(-2 * fnp.where(deep, log_q, -800.0))
    x_deep = -(t - _poly(_AS_NUM, t) / _poly(_AS_DEN, t))
    for _ in range(2):
        log_cdf, slope = _log_ndtr_asymptotic(x_deep)
        x_deep = x_deep - (log_cdf - log_q) / slope
    x = fnp.where(deep, x_deep, x)
    x = fnp.where(upper, -x, x)
    edge = fnp.where(y == 0, -np.inf, fnp.where(y == 1, np.inf, np.nan))
    x = fnp.where(inside, fnp.where(y == 0.5, 0.0, x), edge)
    return fnp.asarray(x, dtype=dtype)


def erfinv(y):
    """The inverse error function of a float array ``y`` in [-1, 1]: Giles' polynomials (the
    ones ``random.normal`` uses) for ``|y| < 1/2``, ``-ndtri((1 - |y|) / 2) / sqrt 2`` with
    its sign above (``1 - |y|`` is exact there; Giles' ``log1p(-y*y)`` is not: a million ulps
    at ``1 - y = 1e-16``). float32 and float16 are computed in float64 and rounded once."""
    dtype = np.dtype(fnp.asarray(y).dtype)
    y = fnp.asarray(y, dtype=np.float64)
    a = fnp.abs(y)
    tail = a >= 0.5
    with np.errstate(all="ignore"):
        t = -_ndtri(fnp.where(tail, 0.5 * (1 - a), 0.25)) * _SQRT_HALF[0]
        out = fnp.where(tail, fnp.where(y < 0, -t, t), _erfinv_giles(fnp.where(tail, 0.0, y)))
    return fnp.asarray(out, dtype=dtype)
