"""``vonmises``, SciPy's circular distribution, with SciPy's formulas and conventions: the
density is periodic (SciPy's support is the whole line), computed through ``i0e`` (no
overflow for a large ``kappa``); the distribution function is SciPy's ``von_mises_cdf``:
``x`` is wrapped into ``[-pi, pi]`` and the number of whole turns added back (so it is not
a probability outside ``[-pi, pi]``, as in SciPy), with a backward recurrence of
``p(kappa) = 1 + 28 + kappa / 2 - 100 / (kappa + 5)`` terms for ``kappa < 50`` and a normal
approximation above; ``kappa = 0`` is the uniform circle. The recurrence runs the most
terms any ``kappa < 50`` needs, each one applied only where ``kappa``'s own count reaches
it, so every element takes SciPy's steps.
``ppf``/``isf`` are left out: SciPy inverts the cdf by a generic root search.
"""

from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from .. import special as S
from ._continuous import continuous

_CK = 50.0
_A1, _A2, _A3, _A4 = 28.0, 0.5, 100.0, 5.0
# the most terms the series takes (kappa just below _CK)
_P_MAX = int(1 + _A1 + _A2 * _CK - _A3 / (_CK + _A4))
_SQRT2_PI = math.sqrt(2.0 / math.pi)


def _cosm1(y):
    """``cos(y) - 1`` without the cancellation near 0."""
    h = fnp.sin(y / 2.0)
    return -2.0 * h * h


def _logpdf(y, kappa):
    return kappa * _cosm1(y) - math.log(2 * math.pi) - fnp.log(S.i0e(kappa))


def _series(y, kappa):
    small = kappa < _CK
    k = fnp.where(small, kappa, 1.0)
    p = fnp.floor(1 + _A1 + _A2 * k - _A3 / (k + _A4))
    s, c = fnp.sin(y), fnp.cos(y)
    sn, cn = fnp.sin(p * y), fnp.cos(p * y)
    r = v = fnp.zeros_like(y * k)
    for n in range(_P_MAX - 1, 0, -1):
        on = n <= p - 1
        sn, cn = (fnp.where(on, sn * c - cn * s, sn), fnp.where(on, cn * c + sn * s, cn))
        r = fnp.where(on, k / (2 * n + k * r), r)
        v = fnp.where(on, r * (sn / n + v), v)
    return 0.5 + y / (2 * np.pi) + v / np.pi


def _cdf(y, kappa):
    turns = fnp.round(y / (2 * np.pi))
    y = y - turns * (2 * np.pi)
    normal = S.ndtr(_SQRT2_PI / S.i0e(kappa) * fnp.sin(y / 2.0))
    return fnp.where(kappa < _CK, _series(y, kappa), normal) + turns


vonmises = continuous("vonmises", ("kappa",), (-np.inf, np.inf), 0.0, lambda kappa: kappa >= 0, {
    "logpdf": _logpdf,
    "pdf": lambda y, kappa: fnp.exp(kappa * _cosm1(y)) / (2 * np.pi * S.i0e(kappa)),
    "cdf": _cdf,
    "sf": lambda y, kappa: 1.0 - _cdf(y, kappa)})
