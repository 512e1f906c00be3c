"""The principal branch of ``log Gamma(z)`` for complex ``z`` (``scipy.special.loggamma``)
and ``Gamma(z) = exp(log Gamma(z))`` (``scipy.special.gamma``), composed of elementary
complex operations: traceable, batchable, compiled with them, and holomorphic, so their
derivatives (to any order) are those of the formulas.

The regions are SciPy's, so the errors (and the results at infinities) follow its:

- ``Re z > 7`` or ``|Im z| > 7``: Stirling's series with eight terms.
- ``|z - 1| <= 0.2``: the Taylor series about 1, ``-gamma t + sum (-1)^k zeta(k) t^k / k``;
  ``|z - 2| <= 0.2``: ``log1p(z - 2)`` plus that series at ``z - 1`` (both vanish there).
- ``Re z < 0.1``: the reflection ``log pi - L(z) - log Gamma(1 - z)``, where ``L`` is the
  branch of ``log sin(pi z)`` continuous in the upper half-plane (the lower half, ``Im z =
  -0`` included, by conjugation, as in SciPy).
- otherwise the recurrence ``log Gamma(z) = log Gamma(z + n) - sum log(z + k)`` up to
  ``Re(z + n) > 7``: a sum of principal logarithms, each in the right half-plane, so no
  branch correction is needed.

Poles (``z = 0, -1, -2, ...``) and NaN give ``nan + nanj``. Each branch is evaluated on its
own points only (the others see a harmless stand-in), so no branch's infinities reach a
derivative through the selection.
"""

from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp

_SMALL = 7.0          # Stirling beyond this real part or imaginary magnitude
_TAYLOR_RADIUS = 0.2
# B_2k / (2k (2k - 1)), k = 8 down to 1: Stirling's series in 1/z^2, times 1/z
_STIRLING = (-3617 / 122400, 1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260,
             -1 / 360, 1 / 12)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _taylor_coefficients(terms=26):
    """log Gamma(1 + t) = sum c_k t^k: c_1 = -Euler's gamma, c_k = (-1)^k zeta(k) / k;
    highest first (Horner). 0.2^26 / 26 is below double precision's ulp of c_1 0.2."""
    from scipy.special import zeta
    coeffs = [-np.euler_gamma] + [(-1) ** k * float(zeta(k)) / k for k in range(2, terms + 1)]
    return tuple(reversed(coeffs))


_TAYLOR = _taylor_coefficients()


def _horner(coeffs, x):
    acc = coeffs[0]
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def _stirling(z):
    rz = 1.0 / z
    return (z - 0.5) * fnp.log(z) - z + _HALF_LOG_2PI + rz * _horner(_STIRLING, rz * rz)


def _taylor(t):
    """log Gamma(1 + t) for |t| <= 0.2."""
    return t * _horner(_TAYLOR, t)


def _log1p(t):
    """log(1 + t) for small complex t, without the cancellation of log(1 + t) in its real
    part: 0.5 log1p(2x + x^2 + y^2)."""
    x, y = fnp.real(t), fnp.imag(t)
    return fnp.log1p(x * (2.0 + x) + y * y) * 0.5 + 1j * fnp.arctan2(y, 1.0 + x)


def _negative(y):
    """Whether the sign bit of ``y`` is set (-0 included)."""
    return fnp.copysign(1.0, y) < 0


def _right(z):
    """log Gamma(z) for Re z >= 0.1 (or anywhere Stirling applies)."""
    x, y = fnp.real(z), fnp.imag(z)
    stirling = (x > _SMALL) | (fnp.abs(y) > _SMALL)
    near1 = ~stirling & (fnp.abs(z - 1.0) <= _TAYLOR_RADIUS)
    near2 = ~stirling & ~near1 & (fnp.abs(z - 2.0) <= _TAYLOR_RADIUS)
    shifted = ~(stirling | near1 | near2)
    big = _stirling(fnp.where(stirling, z, 8.0))
    # near 2: log Gamma(z) = log(z - 1) + log Gamma(z - 1), z - 1 near 1
    t = fnp.where(near1, z - 1.0, fnp.where(near2, z - 2.0, 0.0))
    taylor = _taylor(t)
    taylor = fnp.where(near2, taylor + _log1p(t), taylor)
    # recurrence: log Gamma(z + n) - log(z (z + 1) ... (z + n - 1)) with Re(z + n) > 7 (n <= 7
    # from Re z >= 0.1), in the upper half-plane (the lower by conjugation: SciPy's signed
    # zeros). Each factor turns the product by less than pi/2: the principal log of the
    # product plus 2 pi i for each time its imaginary part turned negative
    lower = _negative(y)
    r = fnp.where(shifted, z, 1.5)
    r = fnp.where(lower, fnp.conj(r), r)
    product, turns, steps = r, 0.0, 1.0
    for k in range(1, 7):
        active = fnp.real(r) + k <= _SMALL
        moved = product * (r + k)
        turns = turns + fnp.where(active & ~_negative(fnp.imag(product))
                                  & _negative(fnp.imag(moved)), 1.0, 0.0)
        product = fnp.where(active, moved, product)
        steps = steps + fnp.where(active, 1.0, 0.0)
    recurrence = _stirling(r + steps) - fnp.log(product) - 2j * np.pi * turns
    recurrence = fnp.where(lower, fnp.conj(recurrence), recurrence)
    return fnp.where(stirling, big, fnp.where(near1 | near2, taylor, recurrence))


def _sinpi(w):
    """sin(pi w) for complex w, the real argument reduced exactly first."""
    a, b = fnp.real(w), fnp.imag(w)
    n = fnp.rint(a)
    f = a - n
    sign = fnp.where(fnp.abs(n - 2.0 * fnp.rint(0.5 * n)) == 1.0, -1.0, 1.0)
    s, c = fnp.sin(np.pi * f) * sign, fnp.cos(np.pi * f) * sign
    return s * fnp.cosh(np.pi * b) + 1j * (c * fnp.sinh(np.pi * b))


def loggamma(z):
    """The principal ``log Gamma`` of complex128 ``z`` (module notes). One evaluation of
    :func:`_right` serves both sides: at ``z``, or at ``1 - w`` for the reflection."""
    x, y = fnp.real(z), fnp.imag(z)
    undefined = fnp.isnan(x) | fnp.isnan(y) | ((y == 0) & (x <= 0) & (x == fnp.floor(x)))
    reflect = ~undefined & (x < 0.1) & (fnp.abs(y) <= _SMALL)
    lower = _negative(y)
    w = fnp.where(reflect, z, 0.05 + 0.5j)
    w = fnp.where(lower, fnp.conj(w), w)          # Im w >= +0
    right = _right(fnp.where(reflect, 1.0 - w, fnp.where(undefined, 2.5 + 0.0j, z)))
    s = _sinpi(w)
    # the branch of log sin(pi w) continuous from the interval (0, 1) through the upper
    # half-plane: Im = pi (1/2 - Re w) + arg(1 - exp(2 pi i w)), the last within (-pi/2, pi/2)
    turns = fnp.rint((np.pi * (0.5 - fnp.real(w)) - fnp.arctan2(fnp.imag(s), fnp.real(s)))
                     / (2 * np.pi))
    left = math.log(math.pi) - (fnp.log(s) + 2j * np.pi * turns) - right
    left = fnp.where(lower, fnp.conj(left), left)
    nan = np.array(complex(np.nan, np.nan))
    return fnp.where(undefined, nan, fnp.where(reflect, left, right))


def gamma(z):
    """``exp(log Gamma(z))``: NaN at the poles; ``0 - 0j`` where ``log Gamma`` is ``-inf``
    (SciPy's, from its C library's ``cexp(-inf + nan j)``)."""
    lg = loggamma(z)
    return fnp.where(fnp.real(lg) == -np.inf, complex(0.0, -0.0), fnp.exp(lg))
