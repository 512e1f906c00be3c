"""``igamma_grad_a`` (``dP(a, x)/da``), ``igamma_hess_a`` (``d^2P/da^2``) and ``betainc_grad``
(``dI_x(a, b)/da``, ``/db``) as native code: the series and continued fractions of
``backends/interpreter/igamma_grad.py`` and ``backends/interpreter/betainc_grad.py``,
operation for operation (same order, same stopping tests, same :data:`MAX_TERMS`), so the
results are the NumPy reference's up to the rounding of the helpers (``lgamma``/``tgamma``
from libm for SciPy's ``gammaln``/``betaln``, the inline ``log``, ``log1p``, ``exp``,
``digamma`` and ``polygamma``).

The trip counts depend on the data, so each is an internal function defined once per module
(loops with phis) that the kernel calls per element. float32 (and float16) operands are
computed in double and rounded once, as the NumPy versions do.
"""

from __future__ import annotations

import numpy as np
from functorch_core.ir import numerics as N
from llvmlite import ir

from . import gamma as G
from . import mathfuncs as M
from . import zeta as Z
from .erf import _narrow
from .mathfuncs import F64, _c

I32, I64 = ir.IntType(32), ir.IntType(64)
_EPS = float(np.finfo(np.float64).eps)
MAXGAM = 171.624376956302725       # SciPy's betaln: Gamma itself below, lgamma above
_PAIR = ir.LiteralStructType([F64, F64])
_TRIPLE = ir.LiteralStructType([F64, F64, F64])


def _fabs(e, x):
    return e.intrinsic("fabs", x)


def _gt(b, x, y):
    return b.fcmp_ordered(">", x, y)


def _finite(e, x):
    return e.b.fcmp_ordered("<", _fabs(e, x), _c(F64, float("inf")))


class _Loop:
    """A loop with phis: ``carried`` is a list of initial values; ``body(values)`` returns
    ``(next_values, go_on)``; ``run`` returns the values at exit."""

    def __init__(self, e, name):
        self.e, self.name = e, name

    def run(self, carried, body):
        b = self.e.b
        pre = b.block
        head = b.append_basic_block(self.name)
        done = b.append_basic_block(self.name + ".done")
        b.branch(head)
        b.position_at_end(head)
        phis = [b.phi(v.type) for v in carried]
        for p, v in zip(phis, carried, strict=True):
            p.add_incoming(v, pre)
        new, go_on = body(phis)
        for p, v in zip(phis, new, strict=True):
            p.add_incoming(v, b.block)
        b.cbranch(go_on, head, done)
        b.position_at_end(done)
        return new


def _define(e, name, ret, args, build):
    """The internal function ``name`` of ``e``'s module, its body built on first use by
    ``build(inner_emitter, *args)`` (which returns the value to return)."""
    fn = e.module.globals.get(name)
    if fn is None:
        fn = ir.Function(e.module, ir.FunctionType(ret, args), name)
        fn.linkage = "internal"
        inner = type(e)(ir.IRBuilder(fn.append_basic_block("entry")))
        inner.b.ret(build(inner, *fn.args))
        e.libm_used |= inner.libm_used
    return fn


def _lgamma(e, x):
    return e.libm("lgamma", x)


# --- igamma_grad_a ------------------------------------------------------------------------

def _igamma_series(e, a, x, order):
    """``dP/da`` (``d^2P/da^2``: ``order`` 2) by the series (``x <= 1`` or ``x <= a``)."""
    b = e.b
    one, two, eps = _c(F64, 1.0), _c(F64, 2.0), _c(F64, _EPS)
    logx = M.log(e, x)
    a1 = b.fadd(a, one)
    pre = M.exp(e, b.fsub(b.fsub(b.fmul(a, logx), x), _lgamma(e, a1)))
    g = b.fsub(logx, G.digamma(e, a1))
    dpre = b.fmul(pre, g)
    zero = _c(F64, 0.0)

    def step(v):
        c, dc, d2c, s, ds, d2s, r, i = v
        r = b.fadd(r, one)
        ratio = b.fdiv(x, r)
        if order == 2:      # (ratio c)'' with ratio' = -ratio/r, ratio'' = 2 ratio/r^2
            d2c = b.fmul(ratio, b.fadd(b.fsub(d2c, b.fdiv(b.fmul(two, dc), r)),
                                       b.fdiv(b.fmul(two, c), b.fmul(r, r))))
            d2s = b.fadd(d2s, d2c)
        dc = b.fmul(ratio, b.fsub(dc, b.fdiv(c, r)))
        c = b.fmul(c, ratio)
        s, ds = b.fadd(s, c), b.fadd(ds, dc)
        live = b.or_(_gt(b, _fabs(e, c), b.fmul(eps, _fabs(e, s))),
                     _gt(b, _fabs(e, dc), b.fmul(eps, _fabs(e, ds))))
        if order == 2:
            live = b.or_(live, _gt(b, _fabs(e, d2c), b.fmul(eps, _fabs(e, d2s))))
        i = b.add(i, ir.Constant(I32, 1))
        return [c, dc, d2c, s, ds, d2s, r, i], \
            b.and_(live, b.icmp_signed("<", i, _c(I32, N.IGAMMA_MAX_TERMS)))

    start = [one, zero, zero, one, zero, zero, a, _c(I32, 0)]
    _, _, _, s, ds, d2s, _, _ = _Loop(e, "series").run(start, step)
    if order == 1:
        return b.fadd(b.fmul(dpre, s), b.fmul(pre, ds))
    d2pre = b.fmul(pre, b.fsub(b.fmul(g, g), Z.polygamma(e, a1, 1)))
    return b.fadd(b.fadd(b.fmul(d2pre, s), b.fmul(b.fmul(two, dpre), ds)), b.fmul(pre, d2s))


def _igamma_fraction(e, a, x, order):
    """``dQ/da`` (``d^2Q/da^2``: ``order`` 2) by Legendre's continued fraction (``x > 1``
    and ``x > a``)."""
    b = e.b
    one, two, zero = _c(F64, 1.0), _c(F64, 2.0), _c(F64, 0.0)
    eps, big, small = _c(F64, _EPS), _c(F64, N.IGAMMA_BIG), _c(F64, 1 / N.IGAMMA_BIG)
    logx = M.log(e, x)
    pre = M.exp(e, b.fsub(b.fsub(b.fmul(a, logx), x), _lgamma(e, a)))
    g = b.fsub(logx, G.digamma(e, a))
    dpre = b.fmul(pre, g)
    y, z = b.fsub(one, a), b.fsub(b.fadd(x, two), a)
    p1, q1 = b.fadd(x, one), b.fmul(z, x)
    dq1 = b.fneg(x)
    f = b.fdiv(p1, q1)
    df = b.fdiv(b.fsub(b.fmul(zero, q1), b.fmul(p1, dq1)), b.fmul(q1, q1))
    d2f = b.fdiv(b.fsub(b.fsub(zero, b.fmul(b.fmul(two, df), dq1)), b.fmul(f, zero)), q1)

    def step(v):
        (y, z, p2, q2, p1, q1, dp2, dq2, dp1, dq1, d2p2, d2q2, d2p1, d2q1,
         f, df, d2f, k) = v
        y, z = b.fadd(y, one), b.fadd(z, two)
        kf = b.sitofp(k, F64)
        yk, dyk = b.fmul(y, kf), b.fneg(kf)
        p = b.fsub(b.fmul(p1, z), b.fmul(p2, yk))
        q = b.fsub(b.fmul(q1, z), b.fmul(q2, yk))
        dp = b.fsub(b.fsub(b.fsub(b.fmul(dp1, z), p1), b.fmul(dp2, yk)), b.fmul(p2, dyk))
        dq = b.fsub(b.fsub(b.fsub(b.fmul(dq1, z), q1), b.fmul(dq2, yk)), b.fmul(q2, dyk))
        ok = b.fcmp_unordered("!=", q, zero)
        fk = b.fdiv(p, q)
        dfk = b.fdiv(b.fsub(b.fmul(dp, q), b.fmul(p, dq)), b.fmul(q, q))
        moved = b.or_(_gt(b, _fabs(e, b.fsub(fk, f)), b.fmul(eps, _fabs(e, fk))),
                      _gt(b, _fabs(e, b.fsub(dfk, df)), b.fmul(eps, _fabs(e, dfk))))
        d2p = d2q = d2fk = zero
        if order == 2:      # z' = -1, (yk)' = -k, both linear in a; p = f q, twice
            d2p = b.fsub(b.fsub(b.fsub(b.fmul(d2p1, z), b.fmul(two, dp1)), b.fmul(d2p2, yk)),
                         b.fmul(b.fmul(two, dp2), dyk))
            d2q = b.fsub(b.fsub(b.fsub(b.fmul(d2q1, z), b.fmul(two, dq1)), b.fmul(d2q2, yk)),
                         b.fmul(b.fmul(two, dq2), dyk))
            d2fk = b.fdiv(b.fsub(b.fsub(d2p, b.fmul(b.fmul(two, dfk), dq)), b.fmul(fk, d2q)), q)
            moved = b.or_(moved, _gt(b, _fabs(e, b.fsub(d2fk, d2f)), b.fmul(eps, _fabs(e, d2fk))))
        moved = b.and_(ok, moved)
        f, df, d2f = b.select(ok, fk, f), b.select(ok, dfk, df), b.select(ok, d2fk, d2f)
        scale = b.select(_gt(b, _fabs(e, p), big), small, one)
        carried = [b.fmul(v, scale) for v in (p1, q1, p, q, dp1, dq1, dp, dq, d2p1, d2q1, d2p,
                                              d2q)]
        live = b.or_(moved, b.fcmp_ordered("==", q, zero))
        go_on = b.and_(live, b.icmp_signed("<", k, _c(I32, N.IGAMMA_MAX_TERMS)))
        return [y, z, *carried, f, df, d2f, b.add(k, _c(I32, 1))], go_on

    start = [y, z, one, x, p1, q1, zero, zero, zero, dq1, zero, zero, zero, zero, f, df, d2f,
             _c(I32, 1)]
    out = _Loop(e, "fraction").run(start, step)
    f, df, d2f = out[14], out[15], out[16]
    if order == 1:
        return b.fadd(b.fmul(dpre, f), b.fmul(pre, df))
    d2pre = b.fmul(pre, b.fsub(b.fmul(g, g), Z.polygamma(e, a, 1)))
    return b.fadd(b.fadd(b.fmul(d2pre, f), b.fmul(b.fmul(two, dpre), df)), b.fmul(pre, d2f))


def _igamma_body(order):
    def body(e, a, x):
        b = e.b
        zero, nan = _c(F64, 0.0), _c(F64, float("nan"))
        valid = b.and_(_gt(b, a, zero), b.fcmp_ordered(">=", x, zero))
        edge = b.or_(b.fcmp_ordered("==", x, zero),
                     b.fcmp_ordered("==", x, _c(F64, float("inf"))))
        inner = b.and_(b.and_(valid, _gt(b, x, zero)), b.and_(_finite(e, x), _finite(e, a)))
        outside = b.select(b.and_(valid, edge), zero, nan)
        use_cf = b.and_(_gt(b, x, _c(F64, 1.0)), _gt(b, x, a))
        with b.if_then(b.not_(inner)):
            b.ret(outside)
        with b.if_else(use_cf) as (then, otherwise):
            with then:
                cf = b.fneg(_igamma_fraction(e, a, x, order))
                cf_block = b.block
            with otherwise:
                series = _igamma_series(e, a, x, order)
                series_block = b.block
        r = b.phi(F64)
        r.add_incoming(cf, cf_block)
        r.add_incoming(series, series_block)
        return r
    return body


def _igamma(order):
    def rule(e, dt, a, x):
        """``dP(a, x)/da`` (``order`` 1) or ``d^2P/da^2`` (2), as
        ``backends/interpreter/igamma_grad.py``, for float or double operands."""
        name = "fc_igamma_grad_a" if order == 1 else "fc_igamma_hess_a"
        fn = _define(e, name, F64, [F64, F64], _igamma_body(order))
        wide = [v if v.type == F64 else e.b.fpext(v, F64) for v in (a, x)]
        return _narrow(e, a, e.b.call(fn, wide))
    return rule


igamma_grad_a, igamma_hess_a = _igamma(1), _igamma(2)


# --- betainc_grad ---------------------------------------------------------------------------

def _betaln(e, a, b_):
    """SciPy's ``betaln`` for positive finite ``a``, ``b``: ``log(Gamma(a) Gamma(b) /
    Gamma(a + b))`` by Gamma itself while every argument is below :data:`MAXGAM`, else the
    sum of ``lgamma`` terms (SciPy's asymptotic series for ``max > 1e6 min`` is not done)."""
    b = e.b
    hi = b.select(b.fcmp_ordered("<", a, b_), b_, a)
    lo = b.select(b.fcmp_ordered("<", a, b_), a, b_)
    s = b.fadd(hi, lo)
    maxgam = _c(F64, MAXGAM)
    large = b.or_(_gt(b, s, maxgam), b.or_(_gt(b, hi, maxgam), _gt(b, lo, maxgam)))
    with b.if_else(large) as (then, otherwise):
        with then:
            by_log = b.fadd(_lgamma(e, hi), b.fsub(_lgamma(e, lo), _lgamma(e, s)))
            log_block = b.block
        with otherwise:
            gs, ghi, glo = (e.libm("tgamma", v) for v in (s, hi, lo))
            # the quotient of the two that are further apart first, as SciPy
            first = _gt(b, _fabs(e, b.fsub(ghi, gs)), _fabs(e, b.fsub(glo, gs)))
            ratio = b.select(first, b.fmul(b.fdiv(glo, gs), ghi), b.fmul(b.fdiv(ghi, gs), glo))
            by_gamma = M.log(e, _fabs(e, ratio))
            gamma_block = b.block
    r = b.phi(F64)
    r.add_incoming(by_log, log_block)
    r.add_incoming(by_gamma, gamma_block)
    return r


def _beta_fraction(second):
    """``(dI/da, dI/db)`` below the switch point (``second``: ``(I_aa, I_ab, I_bb)``):
    ``K F`` differentiated term by term, as ``backends/interpreter/betainc_grad.py``."""
    return lambda e, a, b_, x: _beta_fraction_body(e, a, b_, x, second)


def _beta_fraction_body(e, a, b_, x, second):
    b = e.b
    one, zero = _c(F64, 1.0), _c(F64, 0.0)
    tol, big, small = _c(F64, N.BETAINC_TOL), _c(F64, N.BETAINC_BIG), _c(F64, 1 / N.BETAINC_BIG)
    tol2 = _c(F64, N.BETAINC_TOL_SECOND)
    logx, log1mx = M.log(e, x), M.log1p(e, b.fneg(x))
    k = M.exp(e, b.fsub(b.fsub(b.fadd(b.fmul(a, logx), b.fmul(b_, log1mx)), M.log(e, a)),
                        _betaln(e, a, b_)))
    ab = b.fadd(a, b_)
    both = G.digamma(e, ab)
    dlk_a = b.fadd(b.fsub(b.fsub(logx, b.fdiv(one, a)), G.digamma(e, a)), both)
    dlk_b = b.fadd(b.fsub(log1mx, G.digamma(e, b_)), both)

    def recip(v):
        return b.fdiv(one, v)

    def step(v):
        a2, a2a, a2b, b2, b2a, b2b, a1, a1a, a1b, b1, b1a, b1b, f, fa, fb, n = v[:16]
        h_a2, h_b2, h_a1, h_b1, h_f = (list(v[16 + 3 * i:19 + 3 * i]) for i in range(5))
        m = b.sitofp(b.lshr(n, _c(I32, 1)), F64)
        am, a2m = b.fadd(a, m), b.fadd(a, b.fmul(_c(F64, 2.0), m))
        with b.if_else(b.trunc(n, ir.IntType(1))) as (odd, even):
            with odd:
                a2m1 = b.fadd(a2m, one)
                den = b.fmul(a2m, a2m1)
                abm = b.fadd(ab, m)
                d_o = b.fdiv(b.fmul(b.fmul(b.fneg(am), abm), x), den)
                inv = b.fsub(b.fsub(b.fadd(b.fdiv(one, am), b.fdiv(one, abm)),
                                    b.fdiv(one, a2m)), b.fdiv(one, a2m1))
                da_o = b.fmul(d_o, inv)
                db_o = b.fdiv(b.fmul(b.fneg(am), x), den)
                if second:      # d is linear in b
                    inv2 = b.fadd(b.fadd(b.fsub(b.fneg(b.fmul(recip(am), recip(am))),
                                                b.fmul(recip(abm), recip(abm))),
                                         b.fmul(recip(a2m), recip(a2m))),
                                  b.fmul(recip(a2m1), recip(a2m1)))
                    daa_o = b.fmul(d_o, b.fadd(b.fmul(inv, inv), inv2))
                    dab_o = b.fmul(db_o, b.fsub(b.fsub(recip(am), recip(a2m)), recip(a2m1)))
                odd_block = b.block
            with even:
                a2m_1 = b.fsub(a2m, one)
                den = b.fmul(a2m_1, a2m)
                d_e = b.fdiv(b.fmul(b.fmul(m, b.fsub(b_, m)), x), den)
                sig = b.fadd(b.fdiv(one, a2m_1), b.fdiv(one, a2m))
                da_e = b.fmul(b.fneg(d_e), sig)
                db_e = b.fdiv(b.fmul(m, x), den)
                if second:
                    sig2 = b.fadd(b.fmul(recip(a2m_1), recip(a2m_1)),
                                  b.fmul(recip(a2m), recip(a2m)))
                    daa_e = b.fmul(d_e, b.fadd(b.fmul(sig, sig), sig2))
                    dab_e = b.fmul(b.fneg(db_e), sig)
                even_block = b.block
        phis = [(d_o, d_e), (da_o, da_e), (db_o, db_e)]
        if second:
            phis += [(daa_o, daa_e), (dab_o, dab_e)]
        merged = []
        for vo, ve in phis:
            phi = b.phi(F64)
            phi.add_incoming(vo, odd_block)
            phi.add_incoming(ve, even_block)
            merged.append(phi)
        d, da, db = merged[:3]
        if second:          # v_ij = v1_ij + d_ij v2 + d_i v2_j + d_j v2_i + d v2_ij
            dd = (merged[3], merged[4], zero)
            pairs = ((da, da), (da, db), (db, db))
            h_new = [[b.fadd(b.fadd(b.fadd(b.fadd(v1, b.fmul(dij, v2)), b.fmul(di, w2j)),
                                    b.fmul(dj, w2i)), b.fmul(d, v2ij))
                      for v1, dij, (di, dj), (w2i, w2j), v2ij in zip(h1, dd, pairs, ws, h2,
                                                                     strict=True)]
                     for h1, v2, ws, h2 in (
                         (h_a1, a2, ((a2a, a2a), (a2a, a2b), (a2b, a2b)), h_a2),
                         (h_b1, b2, ((b2a, b2a), (b2a, b2b), (b2b, b2b)), h_b2))]

        def term(v1, v1x, v2, v2x, dx):     # v1x + dx v2 + d v2x, in the reference's order
            return b.fadd(b.fadd(v1x, b.fmul(dx, v2)), b.fmul(d, v2x))
        new = (b.fadd(a1, b.fmul(d, a2)), term(a1, a1a, a2, a2a, da), term(a1, a1b, a2, a2b, db),
               b.fadd(b1, b.fmul(d, b2)), term(b1, b1a, b2, b2a, da), term(b1, b1b, b2, b2b, db))
        a2, a2a, a2b, b2, b2a, b2b = a1, a1a, a1b, b1, b1a, b1b
        a1, a1a, a1b, b1, b1a, b1b = new
        if second:
            h_a2, h_b2, h_a1, h_b1 = h_a1, h_b1, *h_new
        fn = b.fdiv(a1, b1)
        fna = b.fdiv(b.fsub(a1a, b.fmul(fn, b1a)), b1)
        fnb = b.fdiv(b.fsub(a1b, b.fmul(fn, b1b)), b1)
        ok = b.fcmp_unordered("!=", b1, zero)
        steps = [(fn, f), (fna, fa), (fnb, fb)]
        if second:          # A = F B, twice
            h_fn = [b.fdiv(b.fsub(b.fsub(b.fsub(ha, b.fmul(fi, bj)), b.fmul(fj, bi)),
                                  b.fmul(fn, hb)), b1)
                    for ha, hb, (fi, fj), (bi, bj) in zip(
                        h_a1, h_b1, ((fna, fna), (fna, fnb), (fnb, fnb)),
                        ((b1a, b1a), (b1a, b1b), (b1b, b1b)), strict=True)]
            steps += list(zip(h_fn, h_f, strict=True))
        changed = [_gt(b, _fabs(e, b.fsub(new_, old)), b.fmul(tol, _fabs(e, new_)))
                   for new_, old in steps[:3]]
        changed += [_gt(b, _fabs(e, b.fsub(new_, old)),      # relative to it plus F
                        b.fmul(tol2, b.fadd(_fabs(e, new_), _fabs(e, fn))))
                    for new_, old in steps[3:]]
        moved = b.or_(b.or_(changed[0], changed[1]), changed[2])
        for c in changed[3:]:
            moved = b.or_(moved, c)
        moved = b.and_(ok, moved)
        f, fa, fb = b.select(ok, fn, f), b.select(ok, fna, fa), b.select(ok, fnb, fb)
        if second:
            h_f = [b.select(ok, nh, oh) for nh, oh in zip(h_fn, h_f, strict=True)]
        scale = b.select(_gt(b, _fabs(e, b1), big), small, one)
        carried = [b.fmul(v, scale) for v in (a2, a2a, a2b, b2, b2a, b2b,
                                              a1, a1a, a1b, b1, b1a, b1b)]
        hessians = [b.fmul(v, scale) for h in (h_a2, h_b2, h_a1, h_b1) for v in h] + h_f \
            if second else []
        live = b.or_(moved, b.fcmp_ordered("==", b1, zero))
        go_on = b.and_(live, b.icmp_signed("<", n, _c(I32, N.BETAINC_MAX_TERMS)))
        return [*carried, f, fa, fb, b.add(n, _c(I32, 1)), *hessians], go_on

    start = [zero, zero, zero, one, zero, zero, one, zero, zero, one, zero, zero,
             one, zero, zero, _c(I32, 1)] + ([zero] * 15 if second else [])
    out = _Loop(e, "beta_fraction").run(start, step)
    f, fa, fb = out[12:15]
    if not second:
        da = b.fmul(k, b.fadd(b.fmul(f, dlk_a), fa))
        db = b.fmul(k, b.fadd(b.fmul(f, dlk_b), fb))
        return b.insert_value(b.insert_value(ir.Constant(_PAIR, ir.Undefined), da, 0), db, 1)
    h_f = out[28:31]
    tri = Z.polygamma(e, ab, 1)
    logs = ((dlk_a, dlk_a, b.fadd(b.fsub(b.fdiv(one, b.fmul(a, a)), Z.polygamma(e, a, 1)),
                                  tri)),
            (dlk_a, dlk_b, tri), (dlk_b, dlk_b, b.fsub(tri, Z.polygamma(e, b_, 1))))
    firsts = ((fa, fa), (fa, fb), (fb, fb))
    out3 = ir.Constant(_TRIPLE, ir.Undefined)
    for i, ((li, lj, lij), (fi, fj), hf) in enumerate(zip(logs, firsts, h_f, strict=True)):
        inner = b.fadd(b.fadd(b.fadd(b.fmul(f, b.fadd(b.fmul(li, lj), lij)), b.fmul(fi, lj)),
                              b.fmul(fj, li)), hf)
        out3 = b.insert_value(out3, b.fmul(k, inner), i)
    return out3


def _betainc_value(e, a, b_, x, wrt, second):
    b = e.b
    zero, one, nan = _c(F64, 0.0), _c(F64, 1.0), _c(F64, float("nan"))
    valid = b.and_(b.and_(_gt(b, a, zero), _gt(b, b_, zero)),
                   b.and_(b.fcmp_ordered(">=", x, zero), b.fcmp_ordered("<=", x, one)))
    valid = b.and_(valid, b.and_(_finite(e, a), _finite(e, b_)))
    edge = b.or_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", x, one))
    with b.if_then(b.or_(b.not_(valid), edge)):
        b.ret(b.select(valid, zero, nan))
    # I = 1 - I_(1-x)(b, a) above (a + 1) / (a + b + 2): the parameters trade places
    swap = _gt(b, x, b.fdiv(b.fadd(a, one), b.fadd(b.fadd(a, b_), _c(F64, 2.0))))
    args = [b.select(swap, b_, a), b.select(swap, a, b_), b.select(swap, b.fsub(one, x), x)]
    if not second:
        fn = _define(e, "fc_beta_fraction", _PAIR, [F64, F64, F64], _beta_fraction(False))
        pair = b.call(fn, args)
        first = b.icmp_signed("==", b.xor(wrt, b.zext(swap, I32)), _c(I32, 0))
        r = b.select(first, b.extract_value(pair, 0), b.extract_value(pair, 1))
    else:           # wrt: 0 aa, 1 ab, 2 bb; swapped roles: aa and bb trade places
        fn = _define(e, "fc_beta_hessian", _TRIPLE, [F64, F64, F64], _beta_fraction(True))
        triple = b.call(fn, args)
        at = b.select(swap, b.sub(_c(I32, 2), wrt), wrt)
        r = b.select(b.icmp_signed("==", at, _c(I32, 0)), b.extract_value(triple, 0),
                     b.select(b.icmp_signed("==", at, _c(I32, 1)),
                              b.extract_value(triple, 1), b.extract_value(triple, 2)))
    return b.select(swap, b.fneg(r), r)


def _betainc_body(second):
    return lambda e, a, b_, x, wrt: _betainc_value(e, a, b_, x, wrt, second)


# a second derivative's pair of parameters -> its index among (I_aa, I_ab, I_bb)
_HESS = {(0, 0): 0, (0, 1): 1, (1, 1): 2}


def betainc_grad(e, dt, a, b_, x, *, wrt):
    """``dI_x(a, b)/da`` (``wrt`` 0) or ``/db`` (1), or a second derivative (``wrt`` a pair)
    (``backends/interpreter/betainc_grad.py``) for float or double operands."""
    second = isinstance(wrt, tuple)
    name = "fc_betainc_hess" if second else "fc_betainc_grad"
    fn = _define(e, name, F64, [F64, F64, F64, I32], _betainc_body(second))
    wide = [v if v.type == F64 else e.b.fpext(v, F64) for v in (a, b_, x)]
    return _narrow(e, a, e.b.call(fn, [*wide, _c(I32, _HESS[wrt] if second else wrt)]))
