"""``ndtr`` and ``ndtri``, the standard normal CDF and its inverse, from traced ops (so ``jit``
compiles them), accurate to about an ulp in both tails.

``ndtr(x) = erfc(-x / sqrt 2) / 2``: rounding ``x / sqrt 2`` alone would cost ``x^2`` ulps
(erfc's relative condition number is ``2 z^2``), so the argument is carried as an exact
``z_hi + z_lo`` (Veltkamp's splitting and Dekker's product, with ``1/sqrt 2`` in two parts) and
``erfc(z_hi + z_lo) = erfc(z_hi) - 2/sqrt(pi) exp(-z_hi^2) z_lo`` to first order. Under a
trace ``erfc`` is the cpu backend's (inline polynomial code, within an ulp); on concrete arrays the
interpreter's would be SciPy's, tens of ulps off from ``z = 1`` on, so there
``erfc(z) = exp(-z^2) erfcx(z)`` for ``z > 1/2``, with ``z^2 = s + e`` exactly (Dekker) and
``exp(-z^2) = exp(-s) (1 - e)``.

``ndtri`` and ``erfinv``: no iteration, a polynomial and at most two logs and a root per
value (``_normal_tables.py``): with ``d = y - 1/2`` (``y/2`` for erfinv; exact),
``ndtri = d P(2 d^2 / c^2 - 1)`` for ``|d| <= c = 0.3``, so ``x`` keeps its relative accuracy
near 0; beyond, with ``q = min(y, 1 - y)`` (``1 - y`` is exact for ``y >= 1/2``),
``t^2 = -2 log q`` and ``s = log t``, ``ndtri = -sqrt(t^2 H(s))`` with ``H`` one polynomial per
piece of ``s`` (three, down to ``q = 2^-1075``: ``log q`` is accurate for subnormal ``q`` too),
one rounding in the root instead of a root and a product. erfinv's tail is the same at
``q = (1 - |y|) / 2`` with ``t^2 / 2 = -log q`` (the ``1/sqrt 2`` folded into the root).

float32 and float16 are computed in float64 and rounded once, as SciPy does.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..numpy.internal import is_tracer
from . import _normal_tables as T
from ._double_double import split as _split
from ._double_double import two_prod as _two_product

_SQRT_HALF = (0.7071067811865476, -4.833646656726457e-17)     # 1/sqrt 2 = hi + lo
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)



def _poly(coefs, t):
    out = np.float64(coefs[-1])
    for c in coefs[-2::-1]:
        out = out * t + c
    return out


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


def _sqrt_of_product(a, b):
    """``sqrt(a b)`` for positive ``a``, ``b``: the root of the rounded product, then one
    Newton correction with the product's and the square's exact errors (about half an ulp
    instead of one and a half)."""
    p, p_lo = _two_product(a, b)
    x = fnp.sqrt(p)
    sq, sq_lo = _two_product(x, x)
    return x + (((p - sq) - sq_lo) + p_lo) / (2 * x)


def _quantile(lead, d, q, central_table, t2_scale):
    """``ndtri(1/2 + d)`` (``t2_scale`` 2, ``lead`` d) or ``erfinv(2d)`` (``t2_scale`` 1,
    ``lead`` 2d), given ``q = min(1/2 + d, 1/2 - d)`` in (0, 1/2], both exact."""
    central = fnp.abs(d) <= T.CENTRAL
    dc = fnp.where(central, d, 0.0)
    # lead (c0 + u Q(u)): the big product c0 lead exact in two parts, so only the small
    # term's rounding is left with the final one
    lc = fnp.where(central, lead, 0.0)
    u = dc * dc * (2 / T.CENTRAL ** 2) - 1
    hi, lo = _two_product(lc, central_table[0])
    x_central = fnp.where(lc == 0, lc, hi + (lo + lc * (u * _poly(central_table[1:], u))))
    log_q = fnp.log(fnp.where(central, 0.25, q))
    t2 = -2 * log_q
    s = 0.5 * fnp.log(t2)
    h = None
    for i in reversed(range(len(T.TAIL_H))):
        lo, hi = T.TAIL_S[i:i + 2]
        piece = _poly(T.TAIL_H[i], (s - (hi + lo) / 2) * (2 / (hi - lo)))
        h = piece if h is None else fnp.where(s < hi, piece, h)
    x_tail = _sqrt_of_product(-t2_scale * log_q, h)
    return fnp.where(central, x_central, fnp.where(d > 0, x_tail, -x_tail))


def ndtri(y):
    """The inverse of the standard normal CDF of a float array ``y`` (±inf at 1 and 0, NaN
    outside [0, 1])."""
    with np.errstate(all="ignore"):     # eager: the branch not taken may overflow
        return _ndtri(y)


def _ndtri(y):
    dtype = np.dtype(fnp.asarray(y).dtype)
    y = fnp.asarray(y, dtype=np.float64)
    inside = fnp.logical_and(y > 0, y < 1)
    ys = fnp.where(inside, y, 0.5)
    q = fnp.where(ys > 0.5, 1 - ys, ys)
    x = _quantile(ys - 0.5, ys - 0.5, q, T.CENTRAL_P, 2.0)
    edge = fnp.where(y == 0, -np.inf, fnp.where(y == 1, np.inf, np.nan))
    return fnp.asarray(fnp.where(inside, x, edge), dtype=dtype)


def erfinv(y):
    """The inverse error function of a float array ``y`` in [-1, 1] (±inf at ±1, NaN
    outside). float32 and float16 are computed in float64 and rounded once."""
    dtype = np.dtype(fnp.asarray(y).dtype)
    y = fnp.asarray(y, dtype=np.float64)
    a = fnp.abs(y)
    inside = a < 1
    with np.errstate(all="ignore"):
        ys = fnp.where(inside, y, 0.0)
        x = _quantile(ys, 0.5 * ys, 0.5 * (1 - fnp.abs(ys)), T.ERFINV_CENTRAL_P, 1.0)
        edge = fnp.where(y == 1, np.inf, fnp.where(y == -1, -np.inf, np.nan))
        return fnp.asarray(fnp.where(inside, x, edge), dtype=dtype)
