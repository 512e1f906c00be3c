"""``betaln``, ``log|B(a, b)|``, from traced ops, without the cancellation of
``lgamma(a) + lgamma(b) - lgamma(a + b)``: when ``a`` or ``b`` is large, and near the zeros
of betaln (``B(a, b) = 1``, a curve from ``(1, 1)`` through ``(0.5, 3.5)`` towards
``(0, inf)``), where the lgamma terms are several times the result.

With ``lo = min(a, b)``, ``hi = max(a, b)``, ``s = a + b`` and Stirling's series
``lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + d(x)``,
``d(x) = sum_k B_2k / (2k (2k - 1) x^(2k-1))``:

* ``lo >= 8``: ``log(2 pi)/2 - log(lo)/2 + lo log(lo/s) - (hi - 1/2) log1p(lo/hi)
  + d(lo) + d(hi) - d(s)``: the large terms all have one sign;
* ``lo < 2^-60``: ``-log(lo) + log1p(lo/hi) - lo (euler_gamma + psi(1 + hi))`` to ``O(lo^2)``;
* ``2^-60 <= lo < 8``: ``lgamma(lo) = lgamma(2 + z) + log(num / den)`` with ``z = lo - round(lo)``
  (``lgamma(2 + z)`` by its Taylor series, below 0.29 in size) and rational ``num / den``;
  ``lgamma(hi) - lgamma(s) = log prod_k<n (s + k) / (hi + k) + lgamma(h) - lgamma(h + lo)``
  with ``h = hi + n >= 8``, the last difference ``-lo log(h + lo) - e + d(h) - d(h + lo)``,
  ``e = (h - 1/2) log1p(lo/h) - lo`` small; ``s`` carries its rounding error. The
  products and the two logs of the large terms are double-double (``_double_double.py``);
  everything else is small, so plain float64 is enough: within 2 ulp of the exact value
  over ``a, b`` in ``1e-3..30`` (SciPy's ratio of gammas is 245 off near the zeros, the
  plain lgamma sum 9-25);
* a non-positive or NaN argument, in a ``cond`` so that its libm calls run only when such
  an argument is there, with SciPy's values: ``inf`` at a pole of ``Gamma(lo)`` or
  ``Gamma(hi)`` (whatever the other argument), but for a negative integer ``a`` and a
  positive integer ``b <= -a``, ``|B| = Gamma(b) Gamma(1-a-b) / Gamma(1-a)``; for a
  negative ``lo`` and ``hi + lo >= 8``, ``lgamma(lo)`` plus the Stirling difference
  ``lgamma(hi) - lgamma(hi + lo)`` (``inf`` for ``hi = inf``); elsewhere the sum of
  ``lgamma`` terms.

``B(1, b) = 1 / b`` exactly.

float32 and float16 are computed in float64 and rounded once, as SciPy does.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..lax import cond
from . import _double_double as dd

# B_2k / (2k (2k - 1)) for k = 1..8: the terms of d(x) in powers of 1/x^2, after 1/x; the
# first one left out is below 1e-16 at x = 8
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510))
_STIRLING = tuple(float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI, 1))
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LARGE = 8.0
# 1/3 + u^2/5 + ...: terms to u^36, below 2^-57 of it for u <= 1/3 (lo < h = 8)
_E_TERMS = 19
_TINY = 2.0 ** -60           # lo below: -log(lo) + log1p(lo/hi), the rest below 2^-50
# B_2k / (2k (2k - 1)) for k = 1..13: d(x) to below 2^-62 from x = 8 on
_STIRLING_LONG = _STIRLING + tuple(
    float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(
        (Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
         Fraction(-236364091, 2730), Fraction(8553103, 6)), len(_BERNOULLI) + 1))
_EULER = 0.5772156649015329
_EULER_COMPLEMENT = (0.42278433509846713, 4.942915152430645e-18)     # 1 - euler_gamma
# lgamma(2 + z) = (1 - euler_gamma) z + sum_k>=2 (-1)^k (zeta(k) - 1) z^k / k: the
# coefficients of z^1..z^28 (below 2^-61 at |z| = 1/2), from mpmath at 40 digits
_LGAMMA_TWO = (
    0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546,
    -0.007385551028673986, 0.0028905103307415234, -0.001192753911703261,
    0.0005096695247430425, -0.00022315475845357939, 9.945751278180853e-05,
    -4.492623673813314e-05, 2.050721277567069e-05, -9.439488275268397e-06,
    4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07,
    -4.492469198764566e-07, 2.1207184805554665e-07, -1.0043224823968099e-07,
    4.7698101693639804e-08, -2.2711094608943164e-08, 1.0838659214896955e-08,
    -5.183475041970047e-09, 2.4836745438024785e-09, -1.1921401405860912e-09,
    5.731367241678862e-10, -2.7595228851242334e-10, 1.330476437424449e-10)


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
    s, s_err = dd.two_sum(a, b)
    positive = lo > 0
    both_large = fnp.logical_and(positive, lo >= _LARGE)
    paired = fnp.logical_and(fnp.logical_and(lo >= _TINY, lo < _LARGE), fnp.isfinite(hi))
    tiny = fnp.logical_and(positive, lo < _TINY)

    # safe operands for each branch, so that the branches not taken stay finite
    lo_l = fnp.where(both_large, lo, _LARGE)
    hi_l = fnp.where(both_large, hi, _LARGE)
    s_l = lo_l + hi_l
    large = (_HALF_LOG_2PI - 0.5 * fnp.log(lo_l) + lo_l * fnp.log(lo_l / s_l)
             - (hi_l - 0.5) * fnp.log1p(lo_l / hi_l) + _stirling_tail(lo_l)
             + (_stirling_tail(hi_l) - _stirling_tail(s_l)))
    small = _paired(fnp.where(paired, lo, 1.0), fnp.where(paired, hi, 1.0),
                    fnp.where(paired, s, 2.0), fnp.where(paired, s_err, 0.0))
    out = fnp.where(paired, small, large)
    # lgamma(lo) = -log(lo) - euler_gamma lo, lgamma(hi) - lgamma(hi + lo) = log1p(lo/hi)
    # - lo psi(1 + hi) to O(lo^2); psi(1 + hi) ~ log(hi + 1/2) in a term below 2^-50
    lo_t, hi_t = fnp.where(tiny, lo, 1.0), fnp.where(tiny, hi, 1.0)
    out = fnp.where(tiny, (fnp.log1p(lo_t / hi_t) - fnp.log(lo_t))
                    - lo_t * (_EULER + fnp.log(hi_t + 0.5)), out)
    infinite = fnp.logical_and(fnp.logical_and(positive, fnp.isinf(hi)), fnp.isfinite(lo))
    out = fnp.where(infinite, -np.inf, out)           # B(a, inf) = 0 for a > 0
    one = fnp.logical_and(positive, lo == 1)
    out = fnp.where(one, 0.0 - fnp.log(fnp.where(one, hi, 1.0)), out)     # B(1, b) = 1/b
    # a non-positive or NaN argument: libm calls run only then
    summed = fnp.logical_not(positive)
    out = cond(fnp.any(summed), _non_positive, lambda out, *_: out, out, summed, a, b)
    return fnp.asarray(out, dtype=dtype)


def _non_positive(out, summed, a, b):
    a, b = fnp.where(summed, a, 1.0), fnp.where(summed, b, 1.0)     # elsewhere cheap calls
    lo, hi = fnp.minimum(a, b), fnp.maximum(a, b)
    s = a + b
    lgammas = P.lgamma.bind(a) + P.lgamma.bind(b) - P.lgamma.bind(s)
    # lo < 0 with hi + lo >= 8: lgamma(hi) - lgamma(hi + lo) by Stirling's series
    far = fnp.logical_and(s >= _LARGE, fnp.isfinite(hi))
    hi_f, s_f = fnp.where(far, hi, 2 * _LARGE), fnp.where(far, s, 2 * _LARGE)
    lo_f = fnp.where(far, lo, 0.0)
    stirling = (P.lgamma.bind(fnp.where(far, lo, 0.5)) + lo_f - lo_f * fnp.log(s_f)
                - (hi_f - 0.5) * fnp.log1p(lo_f / hi_f)
                + (_stirling_tail(hi_f) - _stirling_tail(s_f)))
    value = fnp.where(far, stirling, lgammas)
    value = fnp.where(fnp.isinf(hi) & (hi > 0) & (lo < 0), np.inf, value)   # Gamma(lo) hi^-lo
    # poles: inf whatever the other argument, but a negative integer a against an integer
    # 0 < b <= -a, where |B(a, b)| = Gamma(b) Gamma(1-a-b) / Gamma(1-a) (SciPy's limit)
    pole_a, pole_b = _non_positive_integer(a), _non_positive_integer(b)
    a_n, b_n = fnp.where(pole_a, a, b), fnp.where(pole_a, b, a)        # the pole first
    count = fnp.logical_and(fnp.logical_and(b_n > 0, fnp.floor(b_n) == b_n), a_n + b_n <= 0)
    count = fnp.logical_and(count, fnp.isfinite(a_n))
    a_c, b_c = fnp.where(count, a_n, -1.0), fnp.where(count, b_n, 1.0)
    finite = (P.lgamma.bind(b_c) + P.lgamma.bind(1 - a_c - b_c) - P.lgamma.bind(1 - a_c))
    value = fnp.where(fnp.logical_or(pole_a, pole_b), fnp.where(count, finite, np.inf), value)
    return fnp.where(summed, value, out)


def _non_positive_integer(x):
    """Where ``x`` is 0, a negative integer or ``-inf`` (a pole of ``Gamma``)."""
    return fnp.logical_and(x <= 0, fnp.floor(x) == x)


def _paired(lo, hi, s, s_err):
    """betaln for ``0 < lo < 8``, ``lo <= hi`` finite, ``s + s_err = lo + hi``: the large
    terms as pairs (see the module notes), to a few units of ``2^-57``."""
    # lgamma(lo) = lgamma(2 + z) + log(num / den): z = lo - round(lo); num = (lo - 1)...
    # (lo - round(lo) + 2) from lo = 5/2 on (exact factors), den = lo (1 + lo) below 1/2,
    # lo below 3/2
    below_half, below = lo < 0.5, lo < 1.5
    r = fnp.where(below_half, 0.0, fnp.where(below, 1.0, fnp.rint(lo)))
    z = lo - r
    one_lo, one_lo_err = dd.two_sum(lo, 1.0)
    den = dd.mul((fnp.where(below, lo, 1.0), 0.0),
                 (fnp.where(below_half, one_lo, 1.0), fnp.where(below_half, one_lo_err, 0.0)))
    num = (fnp.ones_like(lo), fnp.zeros_like(lo))
    for i in range(1, int(_LARGE) - 1):      # r <= 8
        p, e = dd.two_prod(num[0], fnp.where(i <= r - 2, lo - i, 1.0))
        num = p, e + num[1] * fnp.where(i <= r - 2, lo - i, 1.0)
    # lgamma(hi) - lgamma(s) = lgamma(h) - lgamma(h + lo) + log prod_k<n (s + k) / (hi + k)
    # for h = hi + n >= 8
    n = fnp.maximum(fnp.ceil(_LARGE - hi), 0.0)
    for k in range(int(_LARGE)):
        use = k < n
        top, top_err = dd.two_sum(s, float(k))
        bottom, bottom_err = dd.two_sum(hi, float(k))
        num = dd.mul(num, (fnp.where(use, top, 1.0), fnp.where(use, top_err + s_err, 0.0)))
        den = dd.mul(den, (fnp.where(use, bottom, 1.0), fnp.where(use, bottom_err, 0.0)))
    log_q = dd.log(dd.div(num, den))
    h = hi + n
    big_s, big_s_err = dd.two_sum(s, n)
    log_s = dd.log((big_s, big_s_err + s_err))
    lo_log_s, lo_log_s_err = dd.two_prod(lo, log_s[0])
    # lgamma(h) - lgamma(h + lo) = -lo log(h + lo) - e + d(h) - d(h + lo) by Stirling, with
    # e = (h - 1/2) log1p(t) - lo = -u lo + 2 h u^3 (1/3 + u^2/5 + ...) - log1p(t)/2 for
    # t = lo / h, u = t / (2 + t) (log1p(t) = 2 atanh u)
    t = lo / h
    u = lo / (2 * h + lo)
    u2 = u * u
    series = fnp.full_like(u, 1.0 / (2 * _E_TERMS + 1))
    for j in range(_E_TERMS - 2, -1, -1):
        series = series * u2 + 1.0 / (2 * j + 3)
    e = 2 * h * u * u2 * series - u * lo - 0.5 * fnp.log1p(t)
    # the sum of the pairs and of the terms up to 0.29 (lgamma(2 + z)) with its roundings
    lin, lin_err = dd.two_prod(z, _EULER_COMPLEMENT[0])
    head, err = dd.two_sum(log_q[0], -lo_log_s)
    head, err2 = dd.two_sum(head, lin)
    head, err3 = dd.two_sum(head, z * _lgamma_two_rest(z) - e)
    tail = (err + err2 + err3 + (log_q[1] - lo_log_s_err - lo * log_s[1])
            + (lin_err + z * _EULER_COMPLEMENT[1])
            + (_stirling_tail_long(h) - _stirling_tail_long(big_s)))
    return head + tail


def _lgamma_two_rest(z):
    """``(lgamma(2 + z) - (1 - euler_gamma) z) / z`` for ``|z| <= 1/2``: its Taylor series."""
    out = fnp.full_like(z, _LGAMMA_TWO[-1])
    for c in _LGAMMA_TWO[-2:0:-1]:
        out = out * z + c
    return out * z


def _stirling_tail_long(x):
    """``d(x)`` for ``x >= 8`` to below ``2^-62``."""
    w = 1 / x
    w2 = w * w
    out = np.float64(_STIRLING_LONG[-1])
    for c in _STIRLING_LONG[-2::-1]:
        out = out * w2 + c
    return out * w

