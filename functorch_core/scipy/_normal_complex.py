"""The standard normal CDF and its log for complex128 ``z`` (``scipy.special.ndtr`` and
``log_ndtr`` of complex arguments), composed of the complex ``erfc``/``erfcx`` primitives
(SciPy's Faddeeva functions) and elementary operations as SciPy composes them:

- ``ndtr(z) = erfc(-z / sqrt 2) / 2``, each scaling by a real number part by part (a
  complex product with ``0.5 + 0j`` would turn an infinite part's ``0 * inf`` into NaN);
- ``log_ndtr(z)``: SciPy's ``-t^2 + log(erfcx(t)) - log 2`` with ``t = -z / sqrt 2``, the
  imaginary part of ``-t^2`` reduced modulo ``2 pi`` first and that of the sum brought into
  ``[-pi, pi)``, so the principal branch is kept where ``erfc`` alone would underflow or
  overflow; but where ``u = -erfc(z / sqrt 2) / 2`` is provably below 1/2 in magnitude
  (below), ``log1p(u)``. There SciPy's two large terms cancel (it keeps 7 digits at ``z =
  5.5 + 0.004j``, and returns ``u`` itself, ``log1p(u)`` to ``|u| / 2`` relative, where
  ``Re z > 6`` and ``|u| < 1e-8``); ``log1p(u)`` keeps full precision.

``|u| < 1/2`` follows from ``|erfc(s)| = |exp(-s^2)| |w(is)|`` and ``|w(is)| <= min(1, 1 /
(sqrt(pi) Re s))`` for ``Re s > 0``: so ``Re s > 0`` and ``|Im s| <= Re s`` or ``Im(s)^2 -
Re(s)^2 < log max(1, sqrt(pi) Re s)`` (``s = z / sqrt 2``) suffice, and there ``erfc``'s
derivative is bounded too.
The two branches are each evaluated on their own points only (the other sees a stand-in),
so neither one's infinities reach a derivative through the selection. Both are holomorphic
where used: their derivatives are ``ndtr``'s and ``ndtr'/ndtr``.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..numpy.internal import complex_from_parts
from ..transforms import stop_gradient
from ._loggamma_complex import log1p

_SQRT_HALF = math.sqrt(0.5)


def _scaled(z, c):
    """``c z`` for a real ``c``, part by part."""
    return complex_from_parts(fnp.real(z) * c, fnp.imag(z) * c, np.complex128)


def ndtr(z):
    return _scaled(P.erfc.bind(_scaled(z, -_SQRT_HALF)), 0.5)


def _fmod(m, c):
    """C's ``fmod(m, c)`` for ``c > 0`` (exact, the sign of ``m``, zeros included) from
    NumPy's ``remainder``; its derivative in ``m`` is 1 everywhere, 0 included."""
    nonzero = fnp.where(m < 0, -fnp.remainder(-m, c), fnp.remainder(m, c))
    return fnp.where(m == 0, m, nonzero)


def log_ndtr(z):
    zc = stop_gradient(z)
    a, b = fnp.real(zc) * _SQRT_HALF, fnp.imag(zc) * _SQRT_HALF
    with np.errstate(invalid="ignore", over="ignore"):      # eager: inf - inf is not small
        small = (a > 0) & ((fnp.abs(b) <= a) | (b * b - a * a < fnp.log(
            fnp.maximum(1.0, math.sqrt(math.pi) * a))))
    u = _scaled(P.erfc.bind(_scaled(fnp.where(small, z, 1.0 + 0j), _SQRT_HALF)), -0.5)
    t = _scaled(fnp.where(small, -1.0 + 0j, z), -_SQRT_HALF)
    x, y = fnp.real(t), fnp.imag(t)
    minus_re_t2 = (y - x) * (x + y)            # no overflow of x^2 - y^2 before it cancels
    minus_im_t2 = _fmod(-2.0 * x * y, 2 * np.pi)
    minus_im_t2 = fnp.where(minus_im_t2 > np.pi, minus_im_t2 - 2 * np.pi, minus_im_t2)
    log_w = fnp.log(P.erfcx.bind(t))
    re = minus_re_t2 + fnp.real(log_w) - math.log(2.0)
    im = minus_im_t2 + fnp.imag(log_w)
    im = fnp.where(im >= np.pi, im - 2 * np.pi, fnp.where(im < -np.pi, im + 2 * np.pi, im))
    # u itself where it is zero: its signed zeros, as SciPy's
    series = fnp.where(u == 0, u, log1p(u))
    return fnp.where(small, series, complex_from_parts(re, im, np.complex128))
