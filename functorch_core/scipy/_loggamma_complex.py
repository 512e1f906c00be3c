"""The principal branch of ``log Gamma(z)`` for complex ``z`` (``scipy.special.loggamma``),
``Gamma(z) = exp(log Gamma(z))`` (``scipy.special.gamma``) and ``psi(z)``
(``scipy.special.digamma``, at the end), composed of elementary complex operations:
traceable, batchable, compiled with them, and holomorphic, so their derivatives (to any
order) are those of the formulas.

The regions are SciPy's, so the errors (and the results at infinities) follow its:

- ``Re z > 7`` or ``|Im z| > 7``: Stirling's series with eight terms.
- ``|z - 1| <= 0.2``: the Taylor series about 1, ``-gamma t + sum (-1)^k zeta(k) t^k / k``;
  ``|z - 2| <= 0.2``: ``log1p(z - 2)`` plus that series at ``z - 1`` (both vanish there).
- ``Re z < 0.1``: the reflection ``log pi - L(z) - log Gamma(1 - z)``, where ``L`` is the
  branch of ``log sin(pi z)`` continuous in the upper half-plane (the lower half, ``Im z =
  -0`` included, by conjugation, as in SciPy).
- otherwise the recurrence ``log Gamma(z) = log Gamma(z + n) - log(z (z + 1) ... (z + n -
  1))`` up to ``Re(z + n) > 7``, the log of the product on the branch of the sum of the
  factors' principal logs (its turns counted).

Poles (``z = 0, -1, -2, ...``) and NaN give ``nan + nanj``. Each branch is evaluated on its
own points only (the others see a harmless stand-in), so no branch's infinities reach a
derivative through the selection.
"""

from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from .._internal.horner import horner
from ..numpy.internal import complex_from_parts

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


def _stirling(z):
    rz = 1.0 / z
    return (z - 0.5) * fnp.log(z) - z + _HALF_LOG_2PI + rz * horner(_STIRLING, rz * rz)


def _taylor(t):
    """log Gamma(1 + t) for |t| <= 0.2."""
    return t * horner(_TAYLOR, t)


def log1p(t):
    """log(1 + t) for small complex128 t (|t| < 1/2), without the cancellation of log(1 + t)
    in its real part: 0.5 log1p(2x + x^2 + y^2)."""
    x, y = fnp.real(t), fnp.imag(t)
    return complex_from_parts(fnp.log1p(x * (2.0 + x) + y * y) * 0.5,
                              fnp.arctan2(y, 1.0 + x), np.complex128)


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
    taylor = fnp.where(near2, taylor + log1p(t), taylor)
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


def _sincospi(w):
    """(sin(pi w), cos(pi w)) for complex w, the real argument reduced exactly first."""
    a, b = fnp.real(w), fnp.imag(w)
    n = fnp.rint(a)
    f = a - n
    sign = fnp.where(fnp.abs(n - 2.0 * fnp.rint(0.5 * n)) == 1.0, -1.0, 1.0)
    s, c = fnp.sin(np.pi * f) * sign, fnp.cos(np.pi * f) * sign
    ch, sh = fnp.cosh(np.pi * b), fnp.sinh(np.pi * b)
    return s * ch + 1j * (c * sh), c * ch - 1j * (s * sh)


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
    s, _ = _sincospi(w)
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


# digamma: psi(z) = d/dz log Gamma(z), by SciPy's regions for complex z
_PSI_BIG = 10.0           # the asymptotic series from |z| >= 10 (next term below 4e-18)
# B_2k / 2k, k = 8 down to 1: psi(z) ~ log z - 1/(2z) - sum B_2k / (2k z^2k)
_PSI_ASYMPTOTIC = (-3617 / 8160, 1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120,
                   1 / 12)
# psi's real roots nearest 0, the doubles nearest them, and psi there (mpmath, 300 bits)
_ROOTS = ((1.4616321449683622, -9.2412655217294275e-17, 0.3),
          (-0.5040830082644554, 7.2897639029768949e-17, 0.1))


def _root_series(root, value, terms=26):
    """psi(root + t) = value + sum_k c_k t^k, c_k = psi^(k)(root) / k! = (-1)^(k+1)
    zeta(k + 1, root) (Hurwitz's, its first terms apart for a negative root); highest
    first."""
    from scipy.special import zeta
    shift = max(0, math.ceil(-root) + 1)
    coeffs = []
    for k in range(1, terms + 1):
        head = sum((root + n) ** -(k + 1) for n in range(shift))
        coeffs.append((-1) ** (k + 1) * (head + float(zeta(k + 1, root + shift))))
    return tuple(reversed(coeffs)), value


_ROOT_SERIES = [(root, radius, *_root_series(root, value)) for root, value, radius in _ROOTS]


def _psi_right(u):
    """psi(u) for Re u >= 0 (or |u| >= 10): the asymptotic series at u + n, n >= 0 steps
    of the recurrence psi(u) = psi(u + 1) - 1/u up to Re(u + n) >= 10."""
    big = fnp.abs(u) >= _PSI_BIG
    r = fnp.where(big, _PSI_BIG + 0.0j, u)
    total, steps = 0.0, 0.0
    for k in range(int(_PSI_BIG)):
        active = fnp.real(r) + k < _PSI_BIG
        total = total + fnp.where(active, 1.0 / fnp.where(active, r + k, 1.0), 0.0)
        steps = steps + fnp.where(active, 1.0, 0.0)
    v = fnp.where(big, u, r + steps)
    infinite = fnp.isinf(fnp.abs(v))        # 1/v is 0 there (NumPy's division: NaN)
    rv = fnp.where(infinite, 0j, 1.0 / fnp.where(infinite, 1.0, v))
    rvv = rv * rv
    asymptotic = fnp.log(v) - 0.5 * rv - rvv * horner(_PSI_ASYMPTOTIC, rvv)
    return fnp.where(big, asymptotic, asymptotic - total)


def digamma(z):
    """psi of complex128 ``z``: near its two real roots nearest 0 a Taylor series about
    them (relative accuracy where psi vanishes); for ``Re z < 0``, ``|Im z| < 16`` the
    reflection ``psi(1 - z) - pi cot(pi z)``; else :func:`_psi_right`. Poles and NaN give
    ``nan + nanj``."""
    x, y = fnp.real(z), fnp.imag(z)
    undefined = fnp.isnan(x) | fnp.isnan(y) | ((y == 0) & (x <= 0) & (x == fnp.floor(x)))
    series = []
    for root, radius, coeffs, value in _ROOT_SERIES:
        near = ~undefined & (fnp.abs(z - root) < radius)
        t = fnp.where(near, z - root, 0.0)
        series.append((near, value + t * horner(coeffs, t)))
    reflect = ~undefined & (x < 0) & (fnp.abs(y) < 16.0)
    w = fnp.where(reflect, z, 0.5 + 0.5j)
    s, c = _sincospi(w)
    right = _psi_right(fnp.where(reflect, 1.0 - w, fnp.where(undefined, 2.5 + 0.0j, z)))
    out = fnp.where(reflect, right - np.pi * c / s, right)
    for near, value in reversed(series):
        out = fnp.where(near, value, out)
    return fnp.where(undefined, np.array(complex(np.nan, np.nan)), out)
