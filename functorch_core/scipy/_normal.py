"""``ndtr`` and ``ndtri``, the standard normal CDF and its inverse, from traced ops (so ``jit``
compiles them), accurate to about an ulp in both tails.

``ndtr(x) = erfc(-x / sqrt 2) / 2``: rounding ``x / sqrt 2`` alone would cost ``x^2`` ulps
(erfc's relative condition number is ``2 z^2``), so the argument is carried as an exact
``z_hi + z_lo`` (Veltkamp's splitting and Dekker's product, with ``1/sqrt 2`` in two parts) and
``erfc(z_hi + z_lo) = erfc(z_hi) - 2/sqrt(pi) exp(-z_hi^2) z_lo`` to first order.

``ndtri``:
By symmetry only ``q = min(y, 1 - y)`` (``1 - y`` is exact for ``y >= 1/2``) is solved for,
``ndtr(x) = q`` with ``x <= 0``:

* a start within 4.5e-4 of the root, Abramowitz & Stegun 26.2.23 (a rational function of
  ``t = sqrt(-2 log q)``), valid on all of ``0 < q <= 1/2``;
* two Halley steps on ``ndtr(x) - q`` (cubic convergence: 4.5e-4 -> 1e-8 -> 1e-22 even at
  ``|x| = 38``). The residual is ``erf(x / sqrt 2) / 2 + (1/2 - q)`` for ``q >= 1/4``, where
  ``1/2 - q`` is exact, so ``x`` keeps its relative accuracy near 0; ``erfc(-x / sqrt 2) / 2 - q``
  below, whose rounding error moves ``x`` by about one ulp (``ndtr``'s relative error
  ``x^2 eps`` divided by the slope ``|x|`` of ``log ndtr``);
* below ``q = 2^-1000`` (``x < -37``) ``erfc`` and the normal density reach the subnormals, so
  the steps are Newton steps on ``log ndtr(x) - log q`` with the asymptotic series
  ``log ndtr(x) = -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + ...)``.

float32 and float16 are computed in float64 and rounded once, as SciPy does.
"""

from __future__ import annotations

import math

import numpy as np

from ir import primitives as P

from .. import numpy as fnp
from .._erfinv import erfinv as _erfinv_giles

_SQRT_HALF = (0.7071067811865476, -4.833646656726457e-17)     # 1/sqrt 2 = hi + lo
_SPLIT = 134217729.0                                           # 2^27 + 1 (Veltkamp)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
# Abramowitz & Stegun 26.2.23: x ~ t - (c0 + c1 t + c2 t^2) / (1 + d1 t + d2 t^2 + d3 t^3)
_AS_NUM = (2.515517, 0.802853, 0.010328)
_AS_DEN = (1.0, 1.432788, 0.189269, 0.001308)
_DEEP = 2.0 ** -1000
# (2k-1)!! for the asymptotic series of ndtr(x) phi(x)^-1 (-x) in 1/x^2; 9 terms reach
# below 1e-19 relative at |x| >= 37
_SERIES = tuple(float(math.prod(range(1, 2 * k, 2))) * (-1) ** k for k in range(9))


def _poly(coefs, t):
    out = np.float64(coefs[-1])
    for c in coefs[-2::-1]:
        out = out * t + c
    return out


def _log_ndtr_asymptotic(x):
    """``log ndtr(x)`` and its derivative for ``x <= -37``."""
    w = 1 / (x * x)
    series = _poly(_SERIES, w)
    log_cdf = -0.5 * (x * x) - fnp.log(-x * math.sqrt(2 * math.pi)) + fnp.log(series)
    return log_cdf, -x / series


def _split(v):
    t = _SPLIT * v
    hi = t - (t - v)
    return hi, v - hi


_C_HI, _C_LO = _split(_SQRT_HALF[0])


def _lower_cdf(x):
    """``ndtr(x)`` for float64 ``x <= 0`` (any ``x``: ``erfc(-x / sqrt 2) / 2``)."""
    x = fnp.maximum(x, -40.0)                 # ndtr(-40) underflows; keeps the split finite
    p = x * _SQRT_HALF[0]
    xh, xl = _split(x)
    err = ((xh * _C_HI - p) + xh * _C_LO + xl * _C_HI) + xl * _C_LO
    z_hi, z_lo = -p, -(err + x * _SQRT_HALF[1])
    return 0.5 * (P.erfc.bind(z_hi) - _TWO_OVER_SQRT_PI * fnp.exp(-(z_hi * z_hi)) * z_lo)


def ndtr(x):
    """The standard normal CDF of a float array ``x`` (float32 and float16 through float64)."""
    dtype = np.dtype(fnp.asarray(x).dtype)
    x = fnp.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        below = _lower_cdf(fnp.minimum(x, 0.0))
        above = 1 - _lower_cdf(-fnp.maximum(x, 0.0))
    return fnp.asarray(fnp.where(x > 0, above, fnp.where(fnp.isnan(x), x, below)), dtype=dtype)


def _halley(x, q):
    central = q >= 0.25
    r = fnp.where(central, 0.5 * P.erf.bind(x * _SQRT_HALF[0]) + (0.5 - q), _lower_cdf(x) - q)
    u = r * math.sqrt(2 * math.pi) * fnp.exp(0.5 * (x * x))
    return x - u / (1 + 0.5 * x * u)


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
    log_q = fnp.log(q)
    t = fnp.sqrt(-2 * log_q)
    x = -(t - _poly(_AS_NUM, t) / _poly(_AS_DEN, t))
    deep = q < _DEEP
    x_deep = fnp.where(deep, x, -40.0)
    for _ in range(2):
        x = _halley(x, q)
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
