"""``gammasgn``, ``rgamma``, ``beta`` and ``erfcinv`` from traced ops, on float64 operands
(the public functions in ``special.py`` convert and round back).

* ``gammasgn(x)``: 1 for ``x > 0`` (and ``+0``, ``+inf``), -1 at ``-0``, ``(-1)^k`` on
  ``(-k, -k + 1)``, NaN at the poles (the negative integers, ``-inf``) and at NaN: SciPy's.
* ``rgamma(x) = 1 / Gamma(x)`` with ``Gamma`` SciPy's (the native call), ``x + euler_gamma
  x^2`` for ``|x| < 2^-60``: 0 at the poles and ``-inf``; within 4 ulp of SciPy's
  ``rgamma`` (its own series) on ``[-175, 180]`` and ``1e-300..1e300`` (measured, 22K
  points), its ``0``/``inf`` where ``Gamma`` over- or underflows. Derivative
  ``-rgamma(x) digamma(x)`` (NaN at the poles, where ``digamma`` is).
* ``beta(a, b)``: SciPy's cases: a non-positive integer argument ``n`` is a pole (``inf``)
  unless the other, ``m``, is an integer with ``1 - n - m > 0``, where ``B`` is
  ``(-1)^m B(1 - n - m, m)``; where ``Gamma(a)``, ``Gamma(b)`` and ``Gamma(a + b)`` are all
  finite (``|a|, |b|, |a + b| <= 171.62``, the larger argument not a million times the
  other) ``Gamma(a) rgamma(a + b)`` times ``Gamma(b)``, or the other way round (SciPy's
  order): within 6 ulp of SciPy's (its ``rgamma`` is 4 from ours), 0 at a pole of
  ``Gamma(a + b)``, ``inf`` where ``Gamma(a + b)`` underflows; elsewhere
  ``gammasgn(a) gammasgn(b) gammasgn(a + b) exp(betaln(a, b))``: within
  ``4 (1 + |log B|)`` ulp of mpmath for positive arguments (measured 2.3; SciPy's exp of a
  sum of lgammas is up to 2.8e7 ulp off there). Derivative
  ``B (digamma(a) - digamma(a + b))`` in ``a`` (and symmetric in ``b``), to any order.
* ``erfcinv(y) = -ndtri(y / 2) / sqrt(2)``, SciPy's formula, with ``ndtri`` this package's
  (within 4 ulp of SciPy's on [0, 1]); derivative ``-sqrt(pi)/2 exp(erfcinv(y)^2)``.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..transforms import custom_jvp
from ._betaln import betaln
from ._normal import ndtri

_MAX_GAMMA = 171.624376956302725        # Gamma overflows above (SciPy's MAXGAM)
_EULER_GAMMA = 0.5772156649015329
_INT_MIN = -2.0 ** 31      # SciPy's beta takes a non-positive integer below as a plain pole
_ASYMPTOTIC = 1e6      # SciPy leaves the ratio of gammas where one argument is this times the other


def _is_pole(x):
    """The non-positive integers and ``-inf`` (not 0: that is ``+-0``, signed)."""
    return fnp.logical_and(x < 0, x == fnp.floor(x))


def gammasgn(x):
    k = fnp.floor(fnp.where(fnp.isfinite(x), x, 0.0))
    odd = k - 2 * fnp.floor(0.5 * k) == 1       # floor(x) odd (-inf: a pole, below)
    negative = fnp.where(odd, -1.0, 1.0)
    out = fnp.where(x > 0, 1.0, fnp.where(x == 0, fnp.copysign(1.0, x), negative))
    return fnp.where(fnp.logical_or(_is_pole(x), fnp.isnan(x)), np.nan, out)


_TINY = 2.0 ** -60     # below: x + euler_gamma x^2, the next term under 2^-120 of it


@custom_jvp
def rgamma(x):
    tiny = fnp.abs(x) < _TINY          # where Gamma(x) overflows (|x| < 5.6e-309) too
    near_zero = x + _EULER_GAMMA * (x * x)
    return fnp.where(tiny, near_zero, fnp.where(_is_pole(x), 0.0, 1 / P.tgamma.bind(x)))


@rgamma.defjvp
def _rgamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    r = rgamma(x)
    return r, -t * r * P.digamma.bind(x)


def _ratio(a, b):
    """``Gamma(a) Gamma(b) / Gamma(a + b)`` where all three are finite, as
    ``Gamma(a) rgamma(a + b)`` times ``Gamma(b)`` or the other way round, the first product
    the one farther from 1 (SciPy's order)."""
    ga, gb, r = P.tgamma.bind(a), P.tgamma.bind(b), rgamma(a + b)
    first = fnp.abs(fnp.abs(ga * r) - 1) > fnp.abs(fnp.abs(gb * r) - 1)
    return fnp.where(first, (gb * r) * ga, (ga * r) * gb)


def _integer_pole(n, m):
    """``n`` a non-positive integer: ``(-1)^m`` where ``B(n, m)`` has a finite limit (``m``
    an integer, ``1 - n - m > 0``, ``n`` a C int), NaN where it is a pole."""
    ints = fnp.logical_and(n > _INT_MIN, fnp.abs(m) < -_INT_MIN)
    finite = fnp.logical_and(m == fnp.floor(m), 1 - n - m > 0) & ints
    sign = fnp.where(m - 2 * fnp.floor(0.5 * m) == 0, 1.0, -1.0)
    return fnp.where(finite, sign, np.nan)


def _nonpositive_integer(x):
    return fnp.logical_and(x <= 0, x == fnp.floor(x))


def _beta(a, b):
    """``B(a, b)`` with no pole in ``a`` or ``b`` (``inf`` there)."""
    big, small = fnp.maximum(fnp.abs(a), fnp.abs(b)), fnp.minimum(fnp.abs(a), fnp.abs(b))
    in_range = (fnp.logical_and(fnp.abs(a + b) <= _MAX_GAMMA, big <= _MAX_GAMMA)
                & fnp.logical_not(fnp.logical_and(big > _ASYMPTOTIC * small,
                                                  big > _ASYMPTOTIC)))
    poles = fnp.logical_or(_nonpositive_integer(a), _nonpositive_integer(b))
    safe = fnp.logical_and(in_range, fnp.logical_not(poles))
    ratio = _ratio(fnp.where(safe, a, 0.5), fnp.where(safe, b, 0.5))
    # Gamma(a + b) underflowing: SciPy's overflow, +inf
    ratio = fnp.where(fnp.isinf(rgamma(fnp.where(safe, a + b, 1.0))), np.inf, ratio)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    sign = fnp.where(_is_pole(a + b), 1.0, sign)        # exp(betaln) is 0 there
    out = fnp.where(safe, ratio, sign * fnp.exp(betaln(a, b)))
    return fnp.where(poles, np.inf, out)


@custom_jvp
def beta(a, b):
    # a non-positive integer n (a first) and the other argument m: SciPy's reflection
    # B(n, m) = (-1)^m B(1 - n - m, m) where finite, else a pole
    a_pole = _nonpositive_integer(a)
    pole = fnp.logical_or(a_pole, _nonpositive_integer(b))
    n, m = fnp.where(a_pole, a, b), fnp.where(a_pole, b, a)
    pole_sign = _integer_pole(n, m)
    out = _beta(fnp.where(pole, 1 - n - m, a), fnp.where(pole, m, b))
    out = fnp.where(pole, fnp.where(fnp.isnan(pole_sign), np.inf, pole_sign * out), out)
    nan = fnp.logical_and(fnp.isnan(a) | fnp.isnan(b), fnp.logical_not(pole))
    return fnp.where(nan, np.nan, out)


@beta.defjvp
def _beta_jvp(primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    out = beta(a, b)
    both = P.digamma.bind(a + b)
    return out, out * (ta * (P.digamma.bind(a) - both) + tb * (P.digamma.bind(b) - both))


@custom_jvp
def erfcinv(y):
    return -ndtri(0.5 * y) * math.sqrt(0.5)


@erfcinv.defjvp
def _erfcinv_jvp(primals, tangents):
    (y,), (t,) = primals, tangents
    x = erfcinv(y)
    return x, t * (-math.sqrt(math.pi) / 2) * fnp.exp(x * x)


__all__ = ["beta", "erfcinv", "gammasgn", "rgamma"]
