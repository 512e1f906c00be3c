"""Hurwitz zeta and polygamma (n >= 1) of float and double as inline IR: straight-line, so the
loop around them vectorizes (SciPy's Cephes loop runs an element at a time, with a
data-dependent number of ``pow`` calls).

``zeta(x, q) = sum_{k<N} (q + k)^-x + w^(1-x) (1/(x-1) + 1/(2w) + sum_{j<=M} B_2j/(2j)!
(x)_{2j-1} w^-2j)`` with ``w = q + N`` (Euler-Maclaurin; N and M fixed, chosen from the
remainder measured against a 40-digit sum over x in 1.001..3000, q in 1e-3..1e8: below
1e-19 relative for double, 1e-11 for float32). In double each power is
``exp(-x log(q + k))`` with ``q + k`` and ``log`` carried as double-doubles, so ``x log``
keeps its low bits however large it is, and the terms are summed as double-doubles: the
result is about half an ulp from the exact value. float32 is computed in double (plain
``log`` and ``exp``) and rounded once, as SciPy's float32 loop does.

Negative non-integer ``q`` (``x`` an integer) by ``zeta(x, q) = zeta(x, f) + (-1)^x
(zeta(x, 1 - f) - zeta(x, 1 - q))``, ``f = q - floor(q)``, every argument carried exactly.
The domain edges follow SciPy: inf at ``x == 1`` and at non-positive integer ``q``, NaN below
``x = 1`` and for negative non-integer ``q`` with non-integer ``x``, and Cephes's values at
``x = inf`` and ``q = inf``. ``polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)``.
"""

from __future__ import annotations

import math

from functorch_core.ir.numerics import ZETA_BERNOULLI as BERNOULLI
from functorch_core.ir.numerics import ZETA_TERMS as TERMS

from . import mathfuncs as M
from .erf import _narrow
from .gamma import digamma
from .mathfuncs import F64, _c, _fma, _horner

# log(1 + f) = 2 atanh(s), s = f / (2 + f): 2s + 2s^3/3 + 2 s^5 sum_j s^2j / (2j + 5)
ATANH_TAIL = tuple(1 / (2 * j + 5) for j in range(11))
TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)
X_BIG = 2000.0      # w^(1-x) underflows for x above this: the bracket uses min(x, X_BIG)
CEPHES_BIG_Q = 1e8  # Cephes switches to its asymptotic form above this (x = inf: 0)
# from this x on, Cephes's rising factorial (x)_23 overflows: a sum that underflowed to 0
# becomes 0 * inf = NaN (q <= CEPHES_BIG_Q)
CEPHES_NAN_X = 25256835601046.0


def _two_sum(e, a, c):
    b = e.b
    s = b.fadd(a, c)
    back = b.fsub(s, a)
    return s, b.fadd(b.fsub(a, b.fsub(s, back)), b.fsub(c, back))


def _log_dd(e, a):
    """log(a) = hi + lo to about 2^-68 relative, for finite a > 0 (other lanes: junk)."""
    b = e.b
    kf, f = M._log_parts(e, a)
    d = b.fadd(_c(F64, 2.0), f)
    s = b.fdiv(f, d)
    s2 = b.fadd(s, s)
    s_lo = b.fdiv(_fma(e, b.fneg(s), f, b.fsub(f, s2)), d)       # f - s (2 + f), f - 2s exact
    z = b.fmul(s, s)
    z_lo = _fma(e, s, s, b.fneg(z))
    c = b.fmul(s, z)
    c_lo = b.fadd(_fma(e, s, z, b.fneg(c)),                          # (s + s_lo)^3 - c
                  _fma(e, s, z_lo, b.fmul(_c(F64, 3.0), b.fmul(z, s_lo))))
    t = b.fmul(c, _c(F64, TWO_THIRDS[0]))
    t_lo = b.fadd(_fma(e, c, _c(F64, TWO_THIRDS[0]), b.fneg(t)),
                  _fma(e, c, _c(F64, TWO_THIRDS[1]), b.fmul(c_lo, _c(F64, TWO_THIRDS[0]))))
    h = b.fadd(s2, t)
    h_lo = b.fsub(t, b.fsub(h, s2))                                  # |t| < |2s| / 100
    rest = b.fmul(b.fmul(b.fmul(s2, z), z), _horner(e, z, ATANH_TAIL))
    lo = b.fadd(b.fadd(h_lo, t_lo), b.fadd(b.fadd(s_lo, s_lo), rest))
    ln2_hi, ln2_lo = M.LN2[F64]
    hi, err = _two_sum(e, b.fmul(kf, _c(F64, ln2_hi)), h)
    return _two_sum(e, hi, b.fadd(err, _fma(e, kf, _c(F64, ln2_lo), lo)))


def _pow_dd(e, a_hi, a_lo, y):
    """(a_hi + a_lo)^y = hi + lo for finite a_hi > 0, |a_lo| <= ulp(a_hi) and finite y."""
    b = e.b
    l_hi, l_lo = _log_dd(e, a_hi)
    l_lo = b.fadd(l_lo, b.fdiv(a_lo, a_hi))
    p = b.fmul(y, l_hi)
    p_lo = b.fadd(_fma(e, y, l_hi, b.fneg(p)), b.fmul(y, l_lo))
    lo_clamp, hi_clamp = M.EXP_CLAMP[F64]
    in_range = b.fcmp_ordered("<", e.intrinsic("fabs", p), _c(F64, 2 * hi_clamp))
    k, r, c = M._reduce(e, p, lo_clamp, hi_clamp)
    # p_lo (up to half an ulp of p) goes into r: _exp_reduced takes c to first order only
    r, c2 = _two_sum(e, r, b.fadd(c, b.select(in_range, p_lo, _c(F64, 0.0))))
    hi, lo = M._exp_reduced(e, r, c2)
    return M._scale(e, hi, k), M._scale(e, lo, k)


def _pow(e, a_hi, a_lo, y):
    """float32's precision: plain log and exp in double."""
    b = e.b
    return M.exp(e, b.fmul(y, M.log(e, b.fadd(a_hi, a_lo)))), _c(F64, 0.0)


def _bracket(e, x, u, m):
    """1/(x-1) + u/2 + sum_{j<=m} B_2j/(2j)! (x)_{2j-1} u^2j as hi + lo (x > 1 finite)."""
    b = e.b
    one = _c(F64, 1.0)
    xm1 = b.fsub(x, one)                                    # exact for 1 < x < 2^53
    inv = b.fdiv(one, xm1)
    inv_lo = b.fdiv(_fma(e, b.fneg(inv), xm1, one), xm1)
    xb = b.select(b.fcmp_ordered("<", x, _c(F64, X_BIG)), x, _c(F64, X_BIG))
    u2 = b.fmul(u, u)
    acc = one
    for j in range(m - 1, 0, -1):        # (x)_{2j+1} / (x)_{2j-1} = (x + 2j - 1)(x + 2j)
        step = b.fmul(b.fadd(xb, _c(F64, 2 * j - 1)), b.fadd(xb, _c(F64, 2 * j)))
        ratio = _c(F64, BERNOULLI[j] / BERNOULLI[j - 1])
        acc = _fma(e, b.fmul(u2, b.fmul(step, ratio)), acc, one)
    rest = b.fmul(u, _fma(e, b.fmul(_c(F64, BERNOULLI[0]), b.fmul(xb, u)), acc, _c(F64, 0.5)))
    hi, err = _two_sum(e, inv, rest)
    return hi, b.fadd(err, inv_lo)


def _hurwitz(e, x, q_hi, q_lo, double):
    """zeta(x, q_hi + q_lo) = hi + lo for finite x > 1 and finite q > 0."""
    b = e.b
    n, m = TERMS[double]
    power = _pow_dd if double else _pow
    neg_x = b.fneg(x)
    s_hi = s_lo = _c(F64, 0.0)
    for k in range(n + 1):
        a_hi, a_err = (q_hi, _c(F64, 0.0)) if k == 0 else _two_sum(e, q_hi, _c(F64, float(k)))
        a_lo = b.fadd(a_err, q_lo)
        if k < n:
            t_hi, t_lo = power(e, a_hi, a_lo, neg_x)
        else:       # the tail at w = q + N: w^(1-x) times the bracket
            w_hi, w_lo = power(e, a_hi, a_lo, b.fsub(_c(F64, 1.0), x))
            br_hi, br_lo = _bracket(e, x, b.fdiv(_c(F64, 1.0), a_hi), m)
            t_hi = b.fmul(w_hi, br_hi)
            t_lo = b.fadd(_fma(e, w_hi, br_hi, b.fneg(t_hi)),
                          _fma(e, w_hi, br_lo, b.fmul(w_lo, br_hi)))
        s_hi, err = _two_sum(e, s_hi, t_hi)
        s_lo = b.fadd(s_lo, b.fadd(err, t_lo))
    return s_hi, s_lo


def _finish(e, hi, lo):
    """hi + lo, or hi itself where it is 0 (its sign), inf or NaN (lo: junk)."""
    b = e.b
    a = e.intrinsic("fabs", hi)
    normal = b.and_(b.fcmp_ordered("<", a, _c(F64, math.inf)), b.fcmp_ordered(">", a, _c(F64, 0.0)))
    return b.select(normal, b.fadd(hi, lo), hi)


def _zeta_parts(e, x, q, double):
    """zeta(x, q) as (hi, lo) in double for double x, q; SciPy's values at every edge."""
    b = e.b
    one, zero = _c(F64, 1.0), _c(F64, 0.0)
    inf, nan = _c(F64, math.inf), _c(F64, math.nan)
    fl = e.intrinsic("floor", q)
    neg = b.fcmp_ordered("<", q, zero)
    # q < 0: f = q - floor(q), 1 - f and 1 - q, each as an exact double-double
    f_hi, f_lo = _two_sum(e, q, b.fneg(fl))
    g1, g_err = _two_sum(e, one, b.fneg(f_hi))
    g_hi, g_lo = _two_sum(e, g1, b.fsub(g_err, f_lo))
    h_hi, h_lo = _two_sum(e, one, b.fneg(q))
    xr = b.select(b.fcmp_ordered(">", x, one), x, _c(F64, 2.0))
    xr = b.select(b.fcmp_ordered("<", xr, inf), xr, _c(F64, 2.0))
    qr = b.select(b.fcmp_ordered("<", e.intrinsic("fabs", q), inf), q, one)
    a_hi, a_lo = _hurwitz(e, xr, b.select(neg, f_hi, qr), b.select(neg, f_lo, zero), double)
    g_hi, g_lo = _hurwitz(e, xr, b.select(neg, g_hi, one), b.select(neg, g_lo, zero), double)
    h_hi, h_lo = _hurwitz(e, xr, b.select(neg, h_hi, one), b.select(neg, h_lo, zero), double)
    d_hi, d_err = _two_sum(e, g_hi, b.fneg(h_hi))
    d_lo = b.fadd(d_err, b.fsub(g_lo, h_lo))
    half = b.fmul(x, _c(F64, 0.5))
    odd = b.fcmp_ordered("!=", half, e.intrinsic("floor", half))
    d_hi = b.select(odd, b.fneg(d_hi), d_hi)
    d_lo = b.select(odd, b.fneg(d_lo), d_lo)
    n_hi, n_err = _two_sum(e, a_hi, d_hi)
    n_lo = b.fadd(n_err, b.fadd(a_lo, d_lo))
    overflow = b.or_(b.fcmp_unordered("uno", n_err, n_err),
                     b.fcmp_ordered("==", e.intrinsic("fabs", n_hi), inf))
    n_hi = b.select(overflow, b.fadd(a_hi, d_hi), n_hi)    # one of them inf: that inf
    hi = b.select(neg, n_hi, a_hi)
    lo = b.select(neg, b.select(overflow, zero, n_lo), a_lo)
    # x = inf (Cephes's sum of (q + k)^-inf): 1 at q = 1, inf below, NaN up to 1e8, then 0
    at_inf = b.select(b.fcmp_ordered("<", q, one), inf,
                      b.select(b.fcmp_ordered("==", q, one), one,
                               b.select(b.fcmp_ordered(">", q, _c(F64, CEPHES_BIG_Q)),
                                        zero, nan)))
    r = b.select(b.fcmp_ordered("==", x, inf), at_inf,
                 b.select(b.fcmp_ordered("==", q, inf), zero, hi))
    cephes_nan = b.and_(b.fcmp_ordered("==", r, zero),
                        b.and_(b.fcmp_ordered(">=", x, _c(F64, CEPHES_NAN_X)),
                               b.fcmp_ordered("<=", q, _c(F64, CEPHES_BIG_Q))))
    r = b.select(cephes_nan, nan, r)
    x_int = b.fcmp_ordered("==", x, e.intrinsic("floor", x))
    r = b.select(b.and_(neg, b.not_(x_int)), nan, r)
    r = b.select(b.or_(e.isnan(q), e.isnan(x)), nan, r)
    pole = b.and_(b.fcmp_ordered("<=", q, zero), b.fcmp_ordered("==", q, fl))
    r = b.select(pole, inf, r)
    r = b.select(b.fcmp_ordered("<", x, one), nan, r)
    r = b.select(b.fcmp_ordered("==", x, one), inf, r)
    regular = b.and_(b.fcmp_ordered(">", x, one), b.fcmp_ordered("<", x, inf))
    regular = b.and_(regular, b.fcmp_ordered("<", e.intrinsic("fabs", q), inf))
    regular = b.and_(regular, b.not_(b.or_(pole, b.and_(neg, b.not_(x_int)))))
    return r, b.select(regular, lo, zero)


def zeta(e, x, q):
    """zeta(x, q) for float or double values ``x``, ``q``."""
    b = e.b
    double = x.type == F64
    xd, qd = (x, q) if double else (b.fpext(x, F64), b.fpext(q, F64))
    return _narrow(e, x, _finish(e, *_zeta_parts(e, xd, qd, double)))


def polygamma(e, x, order):
    """The ``order``-th derivative of digamma at a float or double value ``x``:
    ``(-1)^(order+1) order! zeta(order + 1, x)`` (digamma itself for order 0)."""
    if order == 0:
        return digamma(e, x)
    b = e.b
    double = x.type == F64
    xd = x if double else b.fpext(x, F64)
    hi, lo = _zeta_parts(e, _c(F64, float(order + 1)), xd, double)
    fact = math.factorial(order)
    scale = _c(F64, (-1.0) ** (order + 1) * (float(fact) if fact < 2 ** 1024 else math.inf))
    p = b.fmul(scale, hi)
    p_lo = _fma(e, scale, hi, b.fneg(p))
    return _narrow(e, x, _finish(e, p, b.fadd(p_lo, b.fmul(scale, lo))))
