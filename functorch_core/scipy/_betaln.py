"""``betaln``, ``log|B(a, b)|``, from traced ops, without the cancellation of
``lgamma(a) + lgamma(b) - lgamma(a + b)`` when ``a`` or ``b`` is large.

With ``lo = min(a, b)``, ``hi = max(a, b)``, ``s = a + b`` and Stirling's series
``lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + d(x)``,
``d(x) = sum_k B_2k / (2k (2k - 1) x^(2k-1))``:

* ``lo >= 8``: ``log(2 pi)/2 - log(lo)/2 + lo log(lo/s) - (hi - 1/2) log1p(lo/hi)
  + d(lo) + d(hi) - d(s)``: the large terms all have one sign;
* ``hi >= 8`` otherwise: ``lgamma(lo) + lo - lo log s - (hi - 1/2) log1p(lo/hi) + d(hi) -
  d(s)``, the difference ``lgamma(hi) - lgamma(s)`` by the series;
* elsewhere (both below 8, or a non-positive argument) the sum of ``lgamma`` terms (within
  9 ulp of the exact value natively; SciPy's ratio of gammas is 245 off near zeros of
  betaln).

float32 and float16 are computed in float64 and rounded once, as SciPy does.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ir import primitives as P

from .. import numpy as fnp

# B_2k / (2k (2k - 1)) for k = 1..8: the terms of d(x) in powers of 1/x^2, after 1/x; the
# first one left out is below 1e-16 at x = 8
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510))
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI, 1))
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LARGE = 8.0


def _stirling_tail(x):
    """``d(x)`` for ``x >= 8``."""
    w = 1 / (x * x)
    out = np.float64(_STIRLING[-1])
    for c in _STIRLING[-2::-1]:
        out = out * w + c
    return out / x


def betaln(a, b):
    """``log|B(a, b)|`` of float arrays ``a``, ``b`` of one shape."""
    with np.errstate(all="ignore"):     # eager: the branches not taken may overflow
        return _betaln(a, b)


def _betaln(a, b):
    dtype = np.dtype(fnp.asarray(a).dtype)
    a, b = fnp.asarray(a, dtype=np.float64), fnp.asarray(b, dtype=np.float64)
    lo, hi = fnp.minimum(a, b), fnp.maximum(a, b)
    s = a + b
    positive = lo > 0
    both_large = fnp.logical_and(positive, lo >= _LARGE)
    hi_large = fnp.logical_and(positive, hi >= _LARGE)

    # safe operands for each branch, so that the branches not taken stay finite
    lo_l = fnp.where(both_large, lo, _LARGE)
    hi_l = fnp.where(hi_large, hi, _LARGE)
    s_l = lo_l + hi_l
    ratio = fnp.where(hi_large, lo, 1.0) / hi_l
    d_hi_s = _stirling_tail(hi_l) - _stirling_tail(fnp.where(hi_large, s, 2 * _LARGE))
    large = (_HALF_LOG_2PI - 0.5 * fnp.log(lo_l) + lo_l * fnp.log(lo_l / s_l)
             - (hi_l - 0.5) * fnp.log1p(lo_l / hi_l) + _stirling_tail(lo_l)
             + (_stirling_tail(hi_l) - _stirling_tail(s_l)))
    lo_b = fnp.where(hi_large, lo, 1.0)
    s_b = fnp.where(hi_large, s, 2 * _LARGE)
    lgamma_a, lgamma_b = P.lgamma.bind(a), P.lgamma.bind(b)
    one_large = (fnp.where(a <= b, lgamma_a, lgamma_b)
                 + (lo_b - (hi_l - 0.5) * fnp.log1p(ratio)) - lo_b * fnp.log(s_b) + d_hi_s)
    by_lgamma = lgamma_a + lgamma_b - P.lgamma.bind(s)
    out = fnp.where(both_large, large, fnp.where(hi_large, one_large, by_lgamma))
    infinite = fnp.logical_and(fnp.logical_and(positive, fnp.isinf(hi)), fnp.isfinite(lo))
    out = fnp.where(infinite, -np.inf, out)           # B(a, inf) = 0 for a > 0
    return fnp.asarray(out, dtype=dtype)
