"""jvp rules of the special-function primitives (their batching is the elementwise family's).

Each derivative is another special function or elementary expression:
``erf' = 2/sqrt(pi) exp(-x^2)``, ``lgamma' = digamma``, ``digamma' = polygamma(1)``,
``polygamma(n)' = polygamma(n + 1)``, ``tgamma' = tgamma digamma``,
``erfcx' = 2x erfcx - 2/sqrt(pi)``, ``i0e' = i1e - sign(x) i0e``,
``i1e' = i0e - i1e (sign(x) + 1/x)``, ``j0' = -J_1``, ``y0' = -Y_1``, ``y1' = Y_0 - Y_1/x``,
``dY_n(x)/dx = (Y_(n-1) - Y_(n+1)) / 2``, ``dI_v(x)/dx = (I_(v-1) + I_(v+1)) / 2`` (``ive``:
the same of ``ive`` minus ``sign(x) ive``), ``k0' = -K_1``, ``k1' = -K_0 - K_1/x``,
``dK_v(x)/dx = -(K_(v-1) + K_(v+1)) / 2`` (``kve``: the same of ``kve`` plus ``kve``),
``spence'(x) = log(x) / (1 - x)``,
``d zeta(s, q)/dq = -s zeta(s + 1, q)`` (``d/ds``: Euler-Maclaurin differentiated term by
term, :func:`_zeta_ds`), ``dP(a, x)/dx = x^(a-1) e^-x / Gamma(a)``,
``dP(a, x)/da = igamma_grad_a(a, x)`` and ``d^2P/da^2 = igamma_hess_a(a, x)`` (primitives:
series and continued fraction differentiated term by term, once and twice), whose
x-derivatives are ``dP/dx (log x - digamma(a))`` and ``dP/dx ((log x - digamma(a))^2 -
polygamma(1, a))``,
``dI_x(a, b)/dx = x^(a-1) (1-x)^(b-1) / B(a, b)``, ``dJ_v(z)/dz = (J_(v-1) - J_(v+1)) / 2``.
``dI_x(a, b)/da``, ``/db = betainc_grad(a, b, x, wrt)`` and its second derivatives (``wrt``
a pair) (a primitive: the continued fraction differentiated term by term, once and twice),
whose x-derivatives are the density times the log-density's slope ``log x - digamma(a) +
digamma(a + b)`` (``log1p(-x)``, ``digamma(b)`` for ``b``), or times ``slope_i slope_j +
curvature_ij`` for a second derivative. Derivatives with respect to the other order or
shape parameters (Bessel's ``v``; third derivatives in the shape parameters of ``gammainc``
and ``betainc``) have no closed form here: a non-zero tangent there raises
``NotImplementedError`` naming the argument.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import Primitive
from functorch_core.ir import primitives as P
from functorch_core.ir.numerics import ZETA_BERNOULLI, ZETA_TERMS
from functorch_core.ir.tables import Table, caller_site

from .batching import BatchRule, _elementwise
from .jvp import JvpRule, Zero, defjvp_unary, instantiate, is_zero, tangent_aval
from .jvp import const as _c

JVP_RULES: Table[Primitive, JvpRule] = Table("special.py: jvp")
BATCH_RULES: Table[Primitive, BatchRule] = Table("special.py: batching")


def _mul(a, b):
    return P.mul.bind(a, b)


def _unary(prim, dydx):
    """Register ``defjvp_unary(prim, dydx)``, reported from the caller's line."""
    JVP_RULES.register(prim, defjvp_unary(prim, dydx), site=caller_site())


def _sign(x):
    return P.sign.bind(x)


_unary(P.erf, lambda x, y: _mul(_c(2 / math.sqrt(math.pi), x),
                                P.exp.bind(P.neg.bind(_mul(x, x)))))
_unary(P.erfc, lambda x, y: _mul(_c(-2 / math.sqrt(math.pi), x),
                                 P.exp.bind(P.neg.bind(_mul(x, x)))))
_unary(P.erfcx, lambda x, y: P.sub.bind(_mul(_mul(_c(2, x), x), y),
                                        _c(2 / math.sqrt(math.pi), x)))
_unary(P.lgamma, lambda x, y: P.digamma.bind(x))
_unary(P.tgamma, lambda x, y: _mul(y, P.digamma.bind(x)))
_unary(P.digamma, lambda x, y: P.polygamma.bind(x, order=1))
_unary(P.polygamma, lambda x, y, order: P.polygamma.bind(x, order=order + 1))
_unary(P.bessel_i0e, lambda x, y: P.sub.bind(P.bessel_i1e.bind(x), _mul(_sign(x), y)))


def _i1e_derivative(x, y):
    # i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2
    zero = P.eq.bind(x, _c(0, x))
    safe = P.select.bind(zero, _c(1, x), x)
    general = P.sub.bind(P.bessel_i0e.bind(x),
                         _mul(y, P.add.bind(_sign(x), P.div.bind(_c(1, x), safe))))
    return P.select.bind(zero, _c(0.5, x), general)


_unary(P.bessel_i1e, _i1e_derivative)
_unary(P.bessel_j0, lambda x, y: P.neg.bind(P.bessel_jv.bind(_c(1, x), x)))
_unary(P.bessel_y0, lambda x, y: P.neg.bind(P.bessel_y1.bind(x)))
_unary(P.bessel_y1, lambda x, y: P.sub.bind(P.bessel_y0.bind(x), P.div.bind(y, x)))
_unary(P.bessel_k0, lambda x, y: P.neg.bind(P.bessel_k1.bind(x)))
_unary(P.bessel_k1, lambda x, y: P.neg.bind(P.add.bind(P.bessel_k0.bind(x), P.div.bind(y, x))))
_unary(P.spence, lambda x, y: P.div.bind(P.log.bind(x), P.sub.bind(_c(1, x), x)))


def _refuse(name, arg):
    raise NotImplementedError(f"{name}: the derivative with respect to {arg} is not "
                              "implemented (only with respect to the last argument)")


def _last_only(prim, name, args, derivative):
    """A rule differentiable in its last operand only."""
    def rule(primals, tangents):
        y = prim.bind(*primals)
        for a, t in zip(args, tangents[:-1], strict=True):
            if not is_zero(t):
                _refuse(name, a)
        t = tangents[-1]
        if is_zero(t):
            return y, Zero(tangent_aval(y.aval))
        return y, _mul(instantiate(t), derivative(*primals))
    JVP_RULES.register(prim, rule, site=caller_site())


def _zeta_ds(s, q):
    """d zeta(s, q) / ds in float64 for s >= 1, 0 < q < inf (other lanes: a stand-in):
    ``-sum_{n<N} log(q+n) (q+n)^-s`` plus, with ``w = q + N``, ``L = log w``, the
    derivative of ``w^(1-s) (1/(s-1) + 1/(2w) + sum_j B_2j/(2j)! (s)_{2j-1} w^-2j)``, the
    rising factorials' derivatives carried along. Within 6.5e-14 of mpmath (250 digits)
    for s in (1.001, 61], q in [1e-3, 1e6]: the rounding of exp(-s log(q + n))."""
    # the Euler-Maclaurin sum the cpu backend evaluates zeta(s, q) with: its direct terms
    # and its B_2j / (2j)!
    direct, bernoulli = ZETA_TERMS[True]
    add, sub, mul, div = P.add.bind, P.sub.bind, P.mul.bind, P.div.bind

    def c(v):
        return _c(v, s)
    total = c(0.0)
    for n in range(direct):
        log = P.log.bind(add(q, c(n)))
        total = sub(total, mul(log, P.exp.bind(P.neg.bind(mul(s, log)))))
    w = add(q, c(direct))
    log = P.log.bind(w)
    power = P.exp.bind(mul(sub(c(1.0), s), log))            # w^(1-s)
    pole = div(c(1.0), sub(s, c(1.0)))
    bracket = sub(P.neg.bind(mul(add(log, pole), pole)), div(log, mul(c(2.0), w)))
    rising, slope = s, c(1.0)          # (s)_{2j-1} and its derivative in s
    inverse_w2 = div(c(1.0), mul(w, w))
    scale = inverse_w2
    for j, b in enumerate(ZETA_BERNOULLI[:bernoulli]):
        bracket = add(bracket, mul(mul(c(b), scale), sub(slope, mul(log, rising))))
        lo, hi = add(s, c(2 * j + 1)), add(s, c(2 * j + 2))
        slope = add(mul(slope, mul(lo, hi)), mul(rising, add(lo, hi)))
        rising = mul(rising, mul(lo, hi))
        scale = mul(scale, inverse_w2)
    return add(total, mul(power, bracket))


def _zeta_rule(primals, tangents):
    """zeta(s, q): ``d/dq = -s zeta(s + 1, q)``, ``d/ds`` by :func:`_zeta_ds` (float64,
    rounded to the operands' dtype): 0 at ``q = inf`` and at ``s = inf`` for ``q >= 1``,
    ``inf`` there for ``q < 1``, NaN where zeta is not differentiable in s (``s < 1``,
    ``q <= 0``, NaN)."""
    s, q = primals
    y = P.zeta.bind(s, q)
    ts, tq = tangents
    out = Zero(tangent_aval(y.aval))
    if not is_zero(tq):
        dq = P.neg.bind(_mul(s, P.zeta.bind(P.add.bind(s, _c(1, s)), q)))
        out = _mul(instantiate(tq), dq)
    if is_zero(ts):
        return y, out
    dtype = s.aval.dtype
    s64, q64 = (P.convert.bind(v, new_dtype=np.dtype(np.float64)) for v in (s, q))
    finite = P.and_.bind(P.is_finite.bind(s64), P.is_finite.bind(q64))
    inside = P.and_.bind(finite, P.and_.bind(P.ge.bind(s64, _c(1, s64)),
                                             P.gt.bind(q64, _c(0, q64))))
    ds = _zeta_ds(P.select.bind(inside, s64, _c(2, s64)), P.select.bind(inside, q64, _c(1, q64)))
    flat = P.select.bind(P.ge.bind(q64, _c(1, q64)), _c(0, q64), _c(np.inf, q64))
    edge = P.select.bind(P.eq.bind(q64, _c(np.inf, q64)), _c(0, q64),
                         P.select.bind(P.eq.bind(s64, _c(np.inf, s64)), flat, _c(np.nan, s64)))
    nan = P.or_.bind(P.or_.bind(P.ne.bind(s64, s64), P.ne.bind(q64, q64)),
                     P.or_.bind(P.lt.bind(s64, _c(1, s64)), P.le.bind(q64, _c(0, q64))))
    edge = P.select.bind(nan, _c(np.nan, s64), edge)
    ds = P.convert.bind(P.select.bind(inside, ds, edge), new_dtype=dtype)
    term = _mul(instantiate(ts), ds)
    return y, term if is_zero(tq) else P.add.bind(out, term)


JVP_RULES.register(P.zeta, _zeta_rule)


def _incomplete_gamma_density(a, x):
    log = P.sub.bind(P.sub.bind(_mul(P.sub.bind(a, _c(1, a)), P.log.bind(x)), x),
                     P.lgamma.bind(a))
    return P.exp.bind(log)


def _incomplete_gamma(prim, sign):
    """P (sign 1) or Q (-1): ``sign dP/da`` and ``sign dP/dx``."""
    def rule(primals, tangents):
        (a, x), (ta, tx) = primals, tangents
        y = prim.bind(a, x)
        out = None
        for t, d in ((ta, P.igamma_grad_a), (tx, _incomplete_gamma_density)):
            if is_zero(t):
                continue
            term = _mul(instantiate(t), d.bind(a, x) if d is P.igamma_grad_a else d(a, x))
            out = term if out is None else P.add.bind(out, term)
        if out is None:
            return y, Zero(tangent_aval(y.aval))
        return y, out if sign > 0 else P.neg.bind(out)
    JVP_RULES.register(prim, rule, site=caller_site())


_incomplete_gamma(P.igamma, 1)
_incomplete_gamma(P.igammac, -1)


def _sum(terms, y):
    """The tangent summing ``terms`` (none: a zero of ``y``'s kind)."""
    if not terms:
        return Zero(tangent_aval(y.aval))
    out = terms[0]
    for t in terms[1:]:
        out = P.add.bind(out, t)
    return out


def _partials(prim, name, partials):
    """A rule summing ``partial(*primals)`` per operand with a tangent; a string instead
    of a function names an argument whose derivative is refused."""
    def rule(primals, tangents):
        terms = []
        for t, partial in zip(tangents, partials, strict=True):
            if is_zero(t):
                continue
            if isinstance(partial, str):
                _refuse(name, partial)
            terms.append(_mul(instantiate(t), partial(*primals)))
        y = prim.bind(*primals)
        return y, _sum(terms, y)
    JVP_RULES.register(prim, rule, site=caller_site())


def _log_x_minus_psi(a, x):
    return P.sub.bind(P.log.bind(x), P.digamma.bind(a))


# d/dx dP/da = density (log x - psi(a)); d/dx d^2P/da^2 = density ((log x - psi(a))^2 -
# psi'(a)): the density x^(a-1) e^-x / Gamma(a) differentiated in a once and twice
_partials(P.igamma_grad_a, "gammainc's derivative in a",
          [lambda a, x: P.igamma_hess_a.bind(a, x),
           lambda a, x: _mul(_incomplete_gamma_density(a, x), _log_x_minus_psi(a, x))])
_partials(P.igamma_hess_a, "gammainc's second derivative in a",
          ["a (a third derivative in a)",
           lambda a, x: _mul(_incomplete_gamma_density(a, x), P.sub.bind(
               _mul(_log_x_minus_psi(a, x), _log_x_minus_psi(a, x)),
               P.polygamma.bind(a, order=1)))])


def _beta_density(a, b, x):
    one = _c(1, x)
    betaln = P.sub.bind(P.add.bind(P.lgamma.bind(a), P.lgamma.bind(b)),
                        P.lgamma.bind(P.add.bind(a, b)))
    log = P.add.bind(_mul(P.sub.bind(a, one), P.log.bind(x)),
                     _mul(P.sub.bind(b, one), P.log1p.bind(P.neg.bind(x))))
    return P.exp.bind(P.sub.bind(log, betaln))


def _betainc_rule(primals, tangents):
    """``dI = dI/da ta + dI/db tb + density tx``."""
    y = P.betainc.bind(*primals)
    terms = [_mul(instantiate(t), P.betainc_grad.bind(*primals, wrt=i))
             for i, t in enumerate(tangents[:2]) if not is_zero(t)]
    if not is_zero(tangents[2]):
        terms.append(_mul(instantiate(tangents[2]), _beta_density(*primals)))
    return y, _sum(terms, y)


def _beta_log_slope(a, b, x, i):
    """d log density / d(a or b) (``i`` 0 or 1): ``log x - psi(a) + psi(a + b)``, with
    ``log1p(-x)`` and ``psi(b)`` for ``b``."""
    log_term = P.log.bind(x) if i == 0 else P.log1p.bind(P.neg.bind(x))
    psis = P.sub.bind(P.digamma.bind(P.add.bind(a, b)), P.digamma.bind(a if i == 0 else b))
    return P.add.bind(log_term, psis)


def _beta_log_curvature(a, b, i, j):
    """d^2 log density / d(i) d(j): ``psi'(a + b)`` less ``psi'`` of the parameter when
    ``i == j``."""
    both = P.polygamma.bind(P.add.bind(a, b), order=1)
    return both if i != j else P.sub.bind(both, P.polygamma.bind(a if i == 0 else b, order=1))


def _betainc_grad_rule(primals, tangents, *, wrt):
    """``dI/da`` or ``/db`` (``wrt`` 0 or 1): in ``a`` and ``b`` the second derivative
    (``wrt`` a pair), in ``x`` the density times the log-density's slope. A second
    derivative (``wrt`` a pair): in ``x`` the density times ``slope_i slope_j + curvature``;
    a third derivative in ``a`` or ``b`` is refused."""
    a, b, x = primals
    y = P.betainc_grad.bind(a, b, x, wrt=wrt)
    second = isinstance(wrt, tuple)
    terms = []
    for k, t in enumerate(tangents[:2]):
        if is_zero(t):
            continue
        if second:
            _refuse("betainc's second derivative", f"{'ab'[k]} (a third derivative in a or b)")
        terms.append(_mul(instantiate(t), P.betainc_grad.bind(
            a, b, x, wrt=(min(wrt, k), max(wrt, k)))))
    if not is_zero(tangents[2]):
        if second:
            i, j = wrt
            slope = P.add.bind(_mul(_beta_log_slope(a, b, x, i), _beta_log_slope(a, b, x, j)),
                               _beta_log_curvature(a, b, i, j))
        else:
            slope = _beta_log_slope(a, b, x, wrt)
        terms.append(_mul(instantiate(tangents[2]), _mul(_beta_density(a, b, x), slope)))
    return y, _sum(terms, y)


JVP_RULES.register(P.betainc, _betainc_rule)
JVP_RULES.register(P.betainc_grad, _betainc_grad_rule)
_last_only(P.bessel_jv, "jv", ["v (the order)"],
           lambda v, z: _mul(_c(0.5, z), P.sub.bind(
               P.bessel_jv.bind(P.sub.bind(v, _c(1, v)), z),
               P.bessel_jv.bind(P.add.bind(v, _c(1, v)), z))))


def _order_neighbours(prim, v, x):
    """``prim(v - 1, x)`` and ``prim(v + 1, x)``."""
    return (prim.bind(P.sub.bind(v, _c(1, v)), x), prim.bind(P.add.bind(v, _c(1, v)), x))


def _half_difference(a, b):
    return _mul(_c(0.5, a), P.sub.bind(a, b))


def _half_sum(a, b):
    return _mul(_c(0.5, a), P.add.bind(a, b))


_last_only(P.bessel_yn, "yn", ["n (the order)"],
           lambda n, x: _half_difference(*_order_neighbours(P.bessel_yn, n, x)))
_last_only(P.bessel_iv, "iv", ["v (the order)"],
           lambda v, x: _half_sum(*_order_neighbours(P.bessel_iv, v, x)))
# ive = exp(-|x|) iv: (ive(v - 1) + ive(v + 1)) / 2 - sign(x) ive(v)
_last_only(P.bessel_ive, "ive", ["v (the order)"],
           lambda v, x: P.sub.bind(_half_sum(*_order_neighbours(P.bessel_ive, v, x)),
                                   _mul(_sign(x), P.bessel_ive.bind(v, x))))
_last_only(P.bessel_kv, "kv", ["v (the order)"],
           lambda v, x: P.neg.bind(_half_sum(*_order_neighbours(P.bessel_kv, v, x))))
# kve = exp(x) kv: kve(v) - (kve(v - 1) + kve(v + 1)) / 2
_last_only(P.bessel_kve, "kve", ["v (the order)"],
           lambda v, x: P.sub.bind(P.bessel_kve.bind(v, x),
                                   _half_sum(*_order_neighbours(P.bessel_kve, v, x))))

BATCH_RULES.register(P.betainc, _elementwise(P.betainc))
BATCH_RULES.register(P.betainc_grad, _elementwise(P.betainc_grad))
