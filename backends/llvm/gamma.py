"""digamma of float and double as inline IR: polynomials, so the loop around it vectorizes
(SciPy's runs an element at a time).

For ``x >= 1``: on ``[1, 2]``, ``psi(x) = (x - x0) R(x)`` with ``x - x0`` carried past the
double nearest the positive root ``x0`` (relative accuracy next to it, as SciPy has); on
``[2, 4]`` and ``[4, 10]``, one polynomial each; from 10 on, ``log x - 1/(2x) - sum B_2k /
(2k x^2k)``. Below 1: ``psi(x) = psi(x + 1) - 1/x`` on ``(0, 1)``, and the reflection
``psi(x) = psi(1 - x) - pi cot(pi x)`` below 0, ``cot(pi x)`` from ``x = n/2 + r``
(polynomials in ``r``, no rounding of ``pi x``). Poles as SciPy: ``-inf`` at +0, ``inf`` at
-0, NaN at the negative integers and at -inf. The polynomials are fitted by
``tools/fit_coefficients.py`` (lowest degree first); float32 is computed in double and rounded.
"""

from __future__ import annotations

from functorch_core.ir.numerics import COSPI_F64, SINC_F64

from . import mathfuncs as M
from .erf import _narrow
from .mathfuncs import F64, _c, _fma, _horner

PIECES = ((1.0, 2.0), (2.0, 4.0), (4.0, 10.0))
ROOT = (1.4616321449683622, 9.549995429965697e-17)
PIECE0 = (0.9510558760318328, -0.21181371064073024, 0.06013562106019673, -0.018550615381739837,
          0.0059367952783072235, -0.0019350666647357589, 0.0006368880302846364,
          -0.00021074841288832956, 6.995018923408578e-05, -2.3258232475310846e-05,
          7.741228917125823e-06, -2.5781348596283653e-06, 8.589262341522206e-07,
          -2.8620913305524894e-07, 9.538512882131195e-08, -3.1812511684429887e-08,
          1.0603457246127488e-08, -3.503398923223047e-09, 1.167771177499064e-09,
          -4.1965284357280646e-10, 1.3988314142821704e-10, -2.7517988497113302e-11,
          9.172618879913334e-12, -1.0006438997505267e-11, 3.335477322544212e-12)
PIECE1 = (0.9227843350984671, 0.39493406684822646, -0.07705690315959428, 0.019823233711138318,
          -0.005677755143369968, 0.0017180619844452737, -0.0005367773819215383,
          0.00017110619799933776, -5.526782610054533e-05, 1.8012627380772404e-05,
          -5.907353973708587e-06, 1.945930452393853e-06, -6.430357931971424e-07,
          2.1297196208088225e-07, -7.065590004953891e-08, 2.3484969781344548e-08,
          -7.807980683014728e-09, 2.5750000616185833e-09, -8.570847101578604e-10,
          3.0761159462534514e-10, -1.0245924879778448e-10, 2.016244166846341e-11,
          -6.716451775409901e-12, 7.318176106474668e-12, -2.4389473908110702e-12)
PIECE2 = (1.8727843350984672, 0.46063553387801265, -0.10588712843634858, 0.032391893534061376,
          -0.011126604112962696, 0.004069223679586381, -0.0015473825155387017,
          0.0006041465560480041, -0.00024037116484435523, 9.698842437746631e-05,
          -3.955746037559213e-05, 1.627022226680542e-05, -6.7371930688733735e-06,
          2.8053513374978583e-06, -1.1731765695758025e-06, 4.913246665721799e-07,
          -2.068467739246879e-07, 8.93290020954184e-08, -3.7794681658786727e-08,
          1.3416170809894555e-08, -5.687066532132697e-09, 4.695303116155373e-09,
          -2.0016517760260176e-09, -4.4434173326455126e-10, 1.9065201157137138e-10,
          3.5096925258353217e-10, -1.4997609435013396e-10)
SERIES = (0.08333333333333333, -0.008333333333333333, 0.003968253968253968, -0.004166666666666667,
          0.007575757575757576, -0.021092796092796094, 0.08333333333333333, -0.4432598039215686,
          3.0539543302701198, -26.456212121212122)
PIECE_TABLES = (PIECE0, PIECE1, PIECE2)


def _psi_from_one(e, y):
    """psi(y) for y >= 1 (finite)."""
    b = e.b
    big = b.fcmp_ordered(">=", y, _c(F64, PIECES[-1][1]))
    yb = b.select(big, y, _c(F64, PIECES[-1][1]))
    w = b.fdiv(_c(F64, 1.0), b.fmul(yb, yb))
    asym = b.fsub(b.fsub(M.log(e, yb), b.fdiv(_c(F64, 0.5), yb)),
                  b.fmul(w, _horner(e, w, SERIES)))
    near = None
    for i in reversed(range(len(PIECES))):
        lo, hi = PIECES[i]
        u = _fma(e, y, _c(F64, 2 / (hi - lo)), _c(F64, -(lo + hi) / (hi - lo)))
        p = _horner(e, u, PIECE_TABLES[i])
        if i == 0:      # (y - x0) R: y - x0_hi is exact on [1, 2]
            p = b.fmul(b.fsub(b.fsub(y, _c(F64, ROOT[0])), _c(F64, ROOT[1])), p)
        near = p if near is None else b.select(b.fcmp_ordered("<", y, _c(F64, hi)), p, near)
    return b.select(big, asym, near)


def _pi_cot_pi(e, x):
    """pi cot(pi x) for finite x: x = n/2 + r, |r| <= 1/4, n = round(2x) (exact)."""
    b = e.b
    n = e.intrinsic("roundeven", b.fmul(x, _c(F64, 2.0)))
    r = _fma(e, n, _c(F64, -0.5), x)
    rr = b.fmul(r, r)
    sin_over = _horner(e, rr, SINC_F64)               # sin(pi r) / (pi r)
    cos = _horner(e, rr, COSPI_F64)
    half = b.fmul(n, _c(F64, 0.5))
    even = b.fcmp_ordered("==", half, e.intrinsic("floor", half))
    # n even: cot(pi x) = cot(pi r); n odd: -tan(pi r)
    d = b.fmul(r, sin_over)
    d_lo = _fma(e, r, sin_over, b.fneg(d))
    q = b.fdiv(cos, d)          # cos / (d + d_lo), the quotient's remainder folded back
    at_even = b.fadd(q, b.fdiv(b.fsub(_fma(e, b.fneg(q), d, cos), b.fmul(q, d_lo)), d))
    at_odd = b.fdiv(b.fmul(b.fmul(_c(F64, -9.869604401089358), r), sin_over), cos)
    return b.select(even, at_even, at_odd)


def digamma(e, x):
    """psi(x) for a float or double value ``x``."""
    b = e.b
    xd = x if x.type == F64 else b.fpext(x, F64)
    one = _c(F64, 1.0)
    neg = b.fcmp_ordered("<", xd, _c(F64, 0.0))
    small = b.fcmp_ordered("<", xd, one)
    finite = b.fcmp_ordered("<", e.intrinsic("fabs", xd), _c(F64, float("inf")))
    xf = b.select(finite, xd, _c(F64, 2.0))
    shifted = b.select(neg, b.fneg(xf), xf)           # y = 1 + shifted, below 1
    y = b.select(small, b.fadd(one, shifted), xf)
    back = b.fsub(y, shifted)
    y_lo = b.select(small, b.fadd(b.fsub(one, back), b.fsub(shifted, b.fsub(y, back))),
                    _c(F64, 0.0))                       # 2Sum: 1 + shifted = y + y_lo
    # psi(y + y_lo) = psi(y) + y_lo psi'(y), psi'(y) ~ 1/y + 1/(2y^2) + 1/(6y^3) for y >= 1
    inv = b.fdiv(one, y)
    slope = b.fmul(inv, _fma(e, inv, _fma(e, inv, _c(F64, 1 / 6), _c(F64, 0.5)), one))
    psi = _fma(e, y_lo, slope, _psi_from_one(e, y))
    below_one = b.fsub(psi, b.fdiv(one, xf))
    reflected = b.fsub(psi, _pi_cot_pi(e, xf))
    r = b.select(neg, reflected, b.select(small, below_one, psi))
    integer = b.fcmp_ordered("==", xd, e.intrinsic("floor", xd))
    r = b.select(b.and_(neg, integer), _c(F64, float("nan")), r)    # poles, -inf included
    r = b.select(b.fcmp_ordered("==", xd, _c(F64, float("inf"))), xd, r)
    return _narrow(e, x, b.select(e.isnan(xd), xd, r))
