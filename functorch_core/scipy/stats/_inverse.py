"""``x`` with ``P(a, x) = p`` (``scipy.special.gammaincinv``; ``Q(a, x) = q`` for
``gammainccinv``): Newton's method on ``log P`` in ``log x`` (on ``log Q`` in ``x``), from
Wilson and Hilferty's cube-root start (the small-``x`` series start in the lower tail), a
fixed number of steps so that it traces; derivatives by the implicit function theorem,
``dx = (dp - dP/da da) / f(x)`` with ``f`` the gamma density, itself differentiable (so
every order that ``gammainc``'s derivative in ``a`` has)."""

from __future__ import annotations

import numpy as np

from functorch_core.ir import primitives as P

from ... import numpy as fnp
from ...lax import fori_loop
from ...transforms import custom_jvp
from .. import special as S

_STEPS = 30


def _log_density(a, x):
    return S.xlogy(a - 1, x) - x - S.gammaln(a)


def _start(a, p, q, upper):
    """``a > 1``: Wilson and Hilferty's ``x = a (1 - 1/(9a) + z / (3 sqrt a))^3``, ``z`` the
    normal quantile of ``p``, or in a deep lower tail the series start
    ``x = (p Gamma(a + 1))^(1/a)``; ``a <= 1``: Numerical Recipes' start, ``(p / t)^(1/a)``
    for ``p < t = 1 - a (0.253 + 0.12 a)``, else ``1 - log(q / (1 - t))``."""
    z = fnp.where(upper, -S.ndtri(q), S.ndtri(p))
    wh = a * (1 - 1 / (9 * a) + z / (3 * fnp.sqrt(a))) ** 3
    series = fnp.exp((fnp.log(p) + S.gammaln(a + 1)) / a)
    use_series = fnp.logical_and(fnp.logical_not(upper),
                                 fnp.logical_or(wh <= 0, series < 0.05 * (a + 1)))
    big = fnp.where(use_series, series, fnp.maximum(wh, 1e-3))
    t = 1 - a * (0.253 + 0.12 * a)
    small = fnp.where(p < t, fnp.exp((fnp.log(p) - fnp.log(t)) / a),
                      1 - fnp.log(q / (1 - t)))
    return fnp.where(a > 1, big, small)


@custom_jvp
def gammaincinv_pq(a, p, q):
    """``x`` with ``P(a, x) = p``, given ``q = 1 - p`` too (the caller's exact one of the
    two sets the branch: the equation in ``Q`` where ``p > 1/2``)."""
    return _solve(a, p, q)


def _solve(a, p, q):
    upper = p > 0.5
    x = _start(a, p, q, upper)
    target = fnp.log(fnp.where(upper, q, p))

    def step(_, state):
        x, lo, hi = state                      # the root's bracket, narrowed as we go
        v = fnp.where(upper, S.gammaincc(a, x), S.gammainc(a, x))
        below_root = fnp.where(upper, v > q, v < p)
        lo = fnp.where(below_root, x, lo)
        hi = fnp.where(below_root, hi, x)
        rate = fnp.exp(_log_density(a, x) - fnp.log(v))        # |d log v / dx|
        gap = fnp.log(v) - target
        # lower tail: log P is nearly linear in log x, so Newton in log x; upper: log Q is
        # nearly linear in x
        down = x * fnp.exp(-fnp.clip(gap / (x * rate), -50.0, 50.0))
        new = fnp.where(upper, x + gap / rate, down)
        # outside the bracket (or v underflowed): bisect it, in log x (an e-fold while open)
        halve = fnp.where(fnp.isinf(hi), x * np.e, fnp.where(lo == 0, x / np.e,
                                                               fnp.sqrt(lo) * fnp.sqrt(hi)))
        ok = fnp.logical_and(fnp.logical_and(fnp.isfinite(new), new > 0),
                             fnp.logical_and(new >= lo, new <= hi))
        tight = hi - lo <= 1e-14 * hi                 # converged to the last few ulps
        x = fnp.where(ok, new, fnp.where(fnp.logical_and(tight, fnp.isfinite(new)), x, halve))
        return x, lo, hi

    x, _, _ = fori_loop(0, _STEPS, step, (x, fnp.zeros_like(x), fnp.full_like(x, np.inf)))
    return x


@gammaincinv_pq.defjvp
def _gammaincinv_jvp(primals, tangents):
    (a, p, q), (ta, tp, _) = primals, tangents
    x = gammaincinv_pq(a, p, q)
    density = fnp.exp(_log_density(a, x))
    return x, (tp - P.igamma_grad_a.bind(a, x) * ta) / density


def _beta_log_density(a, b, x):
    return S.xlogy(a - 1, x) + S.xlog1py(b - 1, -x) - S.betaln(a, b)


def _lower_beta_root(a, b, p, q):
    """``u <= 1/2`` with ``I_u(a, b) = p`` (``q = 1 - p``): where ``p <= 1/2``, Newton on
    ``log I`` in ``log u`` (``I`` is nearly ``u^a / (a B(a, b))`` there) from that series'
    start; else Newton on ``log(1 - I) = log I_{1-u}(b, a)`` in ``u`` (the equation in the
    exact ``q``); the bracket bisected in ``log u`` where a step leaves it."""
    in_q = p > 0.5
    x0 = fnp.exp((fnp.log(p) + fnp.log(a) + S.betaln(a, b)) / a)
    x0 = fnp.minimum(fnp.where(fnp.isfinite(x0), x0, 0.25), 0.5)
    log_target = fnp.log(fnp.where(in_q, q, p))

    def step(_, state):
        x, lo, hi = state
        v = fnp.where(in_q, S.betainc(b, a, 1 - x), S.betainc(a, b, x))
        below_root = fnp.where(in_q, v > q, v < p)
        lo = fnp.where(below_root, x, lo)
        hi = fnp.where(below_root, hi, x)
        rate = fnp.exp(_beta_log_density(a, b, x) - fnp.log(v))     # |d log v / dx|
        gap = fnp.log(v) - log_target
        down = x * fnp.exp(-fnp.clip(gap / (x * rate), -50.0, 50.0))
        new = fnp.where(in_q, x + gap / rate, down)
        halve = fnp.where(lo == 0, fnp.minimum(x, hi) / np.e, fnp.sqrt(lo) * fnp.sqrt(hi))
        ok = fnp.logical_and(fnp.logical_and(fnp.isfinite(new), new > 0),
                             fnp.logical_and(new >= lo, new <= hi))
        tight = hi - lo <= 1e-14 * hi
        x = fnp.where(ok, new, fnp.where(fnp.logical_and(tight, fnp.isfinite(new)), x, halve))
        return x, lo, hi

    x, _, _ = fori_loop(0, _STEPS, step, (x0, fnp.zeros_like(x0), fnp.full_like(x0, 0.5)))
    return x


@custom_jvp
def betaincinv_pq(a, b, p, q):
    """``(x, 1 - x)`` with ``I_x(a, b) = p``, given ``q = 1 - p`` too, each of the pair to
    its own relative accuracy: the one below 1/2 is solved for (``I_x(a, b) = p`` or
    ``I_{1-x}(b, a) = q``), the other is 1 minus it."""
    upper = p > S.betainc(a, b, 0.5 * fnp.ones_like(p))
    small = _lower_beta_root(fnp.where(upper, b, a), fnp.where(upper, a, b),
                             fnp.where(upper, q, p), fnp.where(upper, p, q))
    return fnp.where(upper, 1 - small, small), fnp.where(upper, small, 1 - small)


@betaincinv_pq.defjvp
def _betaincinv_jvp(primals, tangents):
    (a, b, p, q), (ta, tb, tp, _) = primals, tangents
    x, y = betaincinv_pq(a, b, p, q)
    density = fnp.exp(_beta_log_density(a, b, x))
    dx = (tp - P.betainc_grad.bind(a, b, x, wrt=0) * ta
          - P.betainc_grad.bind(a, b, x, wrt=1) * tb) / density
    return (x, y), (dx, -dx)
