"""erf, erfc and erfcx of float and double as inline LLVM IR (no libm call, so the loop
around them vectorizes, and the math around them fuses into the same loop).

For ``a = |x|``, ``erfcx(a) = g(t) / (1 + 2a)`` with ``g`` one polynomial in
``t = (a - K) / (a + K)``, which maps ``[0, inf)`` onto ``[-1, 1)`` (the form of Shepherd and
Laframboise, Math. Comp. 36 (1981), 249-253; our coefficients are fitted by
``tools/fit_coefficients.py``); ``erfc(a) = e^-a^2 erfcx(a)``, with ``a^2`` carried exactly as
``hi + lo`` and the power of two applied once at the end (so the subnormal tail rounds
once); ``erf(x) = x + x p(2x^2 - 1)`` below 1, ``1 - erfc(a)`` (signed) above; negative
arguments by ``erfc(-a) = 2 - erfc(a)`` and ``erfcx(-a) = 2 e^a^2 - erfcx(a)``.

Everything is computed in double: float32 (and float16, which arrives as float) with
shorter polynomials, rounded once at the end, as SciPy's float32 loops do.
Accuracy (tests/backends/llvm/test_mathfuncs.py, benchmarks/special_accuracy.py): about an ulp.
"""

from __future__ import annotations

from . import mathfuncs as M
from .mathfuncs import F64, _c, _exp_reduced, _fma, _horner, _reduce, _scale

ERFC_K = 3.75
# g(t) = (1 + 2a) erfcx(a), a = K (1 + t) / (1 - t); lowest degree first
ERFC_G_F64 = (1.2375126308378275, -0.14024059858554697, 0.003585415485463775,
              0.08227673849014516, -0.10880393014171785, 0.09230432116037876,
              -0.058693398590212366, 0.028362277418940665, -0.009746579552504244,
              0.0017556258530017257, 0.0002937136342850081, -0.0002901540809795271,
              5.1649211390702855e-05, 2.2384240314224437e-05, -1.1444412439171722e-05,
              -9.735619015182663e-07, 1.752057970166318e-06, -5.721597255990987e-08,
              -2.591069687796658e-07, 2.3261913276696566e-08, 3.8965452548985966e-08,
              -3.743568033634583e-09, -5.28428697963142e-09, 3.110310719839165e-10,
              4.434959070009628e-10)
ERFC_G_LO = 1.0546160249725448e-16      # the exact constant term is ERFC_G_*[0] + this
ERFC_G_F32 = (1.2375126308378275, -0.14024059953806303, 0.0035854164382932547,
              0.08227677405353499, -0.10880396585225266, 0.09230393701260439,
              -0.05869300922764284, 0.02836410696717548, -0.00974846550716947,
              0.0017511544838523614, 0.0002984595661573952, -0.0002843105190919703,
              4.51046533718834e-05, 1.8521150474374468e-05, -6.5874163383700835e-06)
# erf(x) / x - 1 as a polynomial in 2x^2 - 1, |x| <= 1; lowest degree first
ERF_SMALL_F64 = (-0.03453126133013269, -0.1405360890227171, 0.019852496688983708,
                 -0.0022854855611441132, 0.00021751715604159932, -1.7537169441124866e-05,
                 1.223382738359897e-06, -7.511569286591727e-08, 4.115800583208149e-09,
                 -2.035228405815769e-10, 9.167619596865806e-12, -3.8078824063194953e-13,
                 1.4543887079465116e-14)
ERF_SMALL_F32 = (-0.03453126136243094, -0.14053608902112114, 0.019852497722455814,
                 -0.002285485612212242, 0.0002175119906208899, -1.7536914180800595e-05,
                 1.2316395977478375e-06, -7.552378571474216e-08)
ERFC_ZERO = 30.0            # erfc(30) underflows double: |x| is clamped here (inf included)
ERFC_SMALL = 0.5           # below, erfc x = 1 - erf x (erf x < 0.53)
ERF_ONE = 6.0               # erf(6) rounds to 1
ERFCX_FAR = 1e150           # above, erfcx(a) = 1 / (a sqrt(pi)) to the last bit
ERFCX_INF = -26.7           # below, erfcx overflows (2 e^a^2)
INV_SQRT_PI = 0.5641895835477563


def _wide(e, x):
    """x in double, and the coefficient tables for x's own type."""
    if x.type == F64:
        return x, ERFC_G_F64, ERF_SMALL_F64
    return e.b.fpext(x, F64), ERFC_G_F32, ERF_SMALL_F32


def _narrow(e, x, r):
    return r if x.type == F64 else e.b.fptrunc(r, x.type)


def _erfcx_pos(e, a, g_table):
    """erfcx(a) for finite a >= 0: g(t) / d, d = 1 + 2a, with the rounding errors of g's
    last step (``c0 + t p``, which cancels to 1 near a = 0), of d and of the quotient folded
    back: about half an ulp."""
    b = e.b
    one, k = _c(F64, 1.0), _c(F64, ERFC_K)
    t = b.fdiv(b.fsub(a, k), b.fadd(a, k))
    tp = b.fmul(t, _horner(e, t, g_table[1:]))
    tp_lo = _fma(e, t, _horner(e, t, g_table[1:]), b.fneg(tp))
    c0 = _c(F64, g_table[0])
    g = b.fadd(c0, tp)
    back = b.fsub(g, tp)
    g_lo = b.fadd(b.fadd(b.fsub(c0, back), b.fsub(tp, b.fsub(g, back))),
                  b.fadd(tp_lo, _c(F64, ERFC_G_LO)))
    u = b.fadd(a, a)
    d = b.fadd(one, u)
    back = b.fsub(d, u)
    d_lo = b.fadd(b.fsub(one, back), b.fsub(u, b.fsub(d, back)))      # 2Sum: 1 + u = d + d_lo
    r = b.fdiv(one, d)
    q = b.fmul(g, r)
    rem = b.fadd(b.fsub(_fma(e, b.fneg(q), d, g), b.fmul(q, d_lo)), g_lo)
    return _fma(e, rem, r, q)


def _erfc_pos(e, a, g_table):
    """erfc(a) for a in [0, ERFC_ZERO]: e^-(hi + lo) erfcx(a), a^2 = hi + lo exactly."""
    b = e.b
    hi = b.fmul(a, a)
    lo = _fma(e, a, a, b.fneg(hi))
    k, r, c = _reduce(e, b.fneg(hi), *M.EXP_CLAMP[F64])
    eh, el = _exp_reduced(e, r, c)
    el = _fma(e, b.fneg(lo), b.fadd(eh, el), el)      # e^-lo = 1 - lo (too big for c's slot)
    q = _erfcx_pos(e, a, g_table)
    return _scale(e, _fma(e, eh, q, b.fmul(el, q)), k)


def _clamped_abs(e, x, top):
    """|x| clamped to [0, top] (NaN to top: the caller selects NaN back in)."""
    b = e.b
    a = e.intrinsic("fabs", x)
    return b.select(b.fcmp_ordered("<", a, _c(F64, top)), a, _c(F64, top))


def _erf_over_x_minus_1(e, x, small_table):
    """erf(x) / x - 1 for |x| <= 1."""
    b = e.b
    return _horner(e, _fma(e, b.fadd(x, x), x, _c(F64, -1.0)), small_table)


def erfc(e, x):
    """erfc x for a float or double value ``x``: below ERFC_SMALL, ``(1 - x) - x y`` with
    ``erf(x) = x + x y`` and ``1 - x`` carried exactly (the g(t) route loses up to 3 ulps
    near 0, through the rounding of t)."""
    b = e.b
    xd, g_table, small_table = _wide(e, x)
    a = _clamped_abs(e, xd, ERFC_ZERO)
    pos = _erfc_pos(e, a, g_table)
    r = b.select(b.fcmp_ordered("<", xd, _c(F64, 0.0)), b.fsub(_c(F64, 2.0), pos), pos)
    is_small = b.fcmp_ordered("<", a, _c(F64, ERFC_SMALL))
    xs = b.select(is_small, xd, _c(F64, 0.0))
    one = _c(F64, 1.0)
    h = b.fsub(one, xs)
    h_lo = b.fsub(b.fsub(one, h), xs)                      # exact: |xs| < 1/2
    y = _erf_over_x_minus_1(e, xs, small_table)
    small = b.fadd(h, b.fsub(h_lo, b.fmul(xs, y)))
    r = b.select(is_small, small, r)
    return _narrow(e, x, b.select(e.isnan(xd), xd, r))


def erf(e, x):
    """erf x for a float or double value ``x`` (keeps the sign of zero)."""
    b = e.b
    xd, g_table, small_table = _wide(e, x)
    a = _clamped_abs(e, xd, ERF_ONE)
    big = b.fsub(_c(F64, 1.0), _erfc_pos(e, a, g_table))
    xs = b.select(b.fcmp_ordered("<", a, _c(F64, 1.0)), xd, _c(F64, 0.0))
    small = _fma(e, xs, _erf_over_x_minus_1(e, xs, small_table), xs)
    r = b.select(b.fcmp_ordered("<", a, _c(F64, 1.0)), small, e.intrinsic("copysign", big, xd))
    return _narrow(e, x, b.select(e.isnan(xd), xd, r))


def erfcx(e, x):
    """erfcx x = e^x^2 erfc x for a float or double value ``x`` (inf below ERFCX_INF, 0 at
    inf)."""
    b = e.b
    xd, g_table, _ = _wide(e, x)
    a = e.intrinsic("fabs", xd)
    far = b.fcmp_ordered(">", a, _c(F64, ERFCX_FAR))
    pos = _erfcx_pos(e, b.select(far, _c(F64, 0.0), a), g_table)
    pos = b.select(far, b.fdiv(_c(F64, INV_SQRT_PI), a), pos)
    # 2 e^(hi + lo) - pos for x < 0, a^2 = hi + lo exactly
    an = b.select(b.fcmp_ordered("<=", a, _c(F64, -ERFCX_INF)), a, _c(F64, 0.0))
    hi = b.fmul(an, an)
    lo = _fma(e, an, an, b.fneg(hi))
    k, r, c = _reduce(e, hi, *M.EXP_CLAMP[F64])
    eh, el = _exp_reduced(e, r, c)
    el = _fma(e, lo, b.fadd(eh, el), el)
    rest = b.fsub(b.fmul(_c(F64, 2.0), el), _scale(e, pos, b.fneg(k)))
    neg = _scale(e, _fma(e, _c(F64, 2.0), eh, rest), k)
    neg = b.select(b.fcmp_ordered("<", xd, _c(F64, ERFCX_INF)), _c(F64, float("inf")), neg)
    r = b.select(b.fcmp_ordered("<", xd, _c(F64, 0.0)), neg, pos)
    return _narrow(e, x, b.select(e.isnan(xd), xd, r))
