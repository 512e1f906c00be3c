"""The discrete distributions: ``pmf``/``logpmf`` at integer ``k - loc`` (0 / ``-inf`` at
non-integers and outside the support, as SciPy), ``cdf``/``sf`` at ``floor(k - loc)``, NaN
for invalid parameters or NaN ``k``; :func:`discrete` adds those rules to each
distribution's formulas."""

from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ...lax import fori_loop
from ...transforms import stop_gradient
from .. import special as S
from ._base import REQUIRED, Distribution, f64, nan_where, public
from ._continuous import _and, _doc, _log_of, _or


def discrete(name, shapes, lo, hi, valid, safe_shapes, fns):
    """The public functions of a discrete distribution.

    Args:
        name: SciPy's name; shapes: the shape parameters' names as SciPy spells them.
        lo: the support's lowest integer; hi: ``hi(*shapes)``, its highest (may be inf).
        valid: ``valid(*shapes)``, the parameters' domain.
        safe_shapes: one valid value per shape parameter (stands in for invalid ones).
        fns: ``logpmf(k, *s)``, ``cdf(k, *s)``, ``sf(k, *s)`` at integer ``k`` in the support,
            optional ``pmf`` (default ``exp(logpmf)``), ``logsf`` (default ``log(sf)``) and
            ``ppf(q, *s)`` for ``0 < q < 1``.
    """
    fns = dict(fns)
    fns.setdefault("pmf", lambda k, *s: fnp.exp(fns["logpmf"](k, *s)))
    fns.setdefault("logcdf", lambda k, *s: _log_of(fns["cdf"], fns["sf"], k, s))
    fns.setdefault("logsf", lambda k, *s: _log_of(fns["sf"], fns["cdf"], k, s))

    def prepare(k, loc, kw):
        k, loc, *s = f64(k, loc, *[kw[n] for n in shapes])
        bad = fnp.logical_not(valid(*s))
        s = [fnp.where(bad, s0, v) for v, s0 in zip(s, safe_shapes)]
        return k, loc, s, bad

    def mass(fname, outside):
        def impl(k, loc, **kw):
            k, loc, s, bad = prepare(k, loc, kw)
            k = k - loc
            inside = _and(k >= lo, k <= hi(*s), fnp.floor(k) == k)
            out = fnp.where(inside, fns[fname](fnp.where(inside, k, lo), *s), outside)
            return nan_where(fnp.logical_or(bad, fnp.isnan(k)), out)
        return impl

    def distribution(fname, below, above):
        def impl(k, loc, **kw):
            k, loc, s, bad = prepare(k, loc, kw)
            k = k - loc
            top = hi(*s)
            inside = _and(k >= lo, k < top, fnp.isfinite(k))
            kf = fnp.floor(fnp.where(inside, k, lo))
            out = fnp.where(inside, fns[fname](kf, *s), fnp.where(k >= top, above, below))
            return nan_where(fnp.logical_or(bad, fnp.isnan(k)), out)
        return impl

    def ppf(q, loc, **kw):
        q, loc, s, bad = prepare(q, loc, kw)
        bad = _or(bad, fnp.isnan(q), q < 0, q > 1)
        inside = _and(q > 0, q < 1)
        k = fnp.where(inside, fns["ppf"](fnp.where(inside, q, 0.5), *s),
                      fnp.where(q == 0, lo - 1.0, hi(*s)))
        return nan_where(bad, k + loc)

    impls = {"pmf": mass("pmf", 0.0), "logpmf": mass("logpmf", -np.inf),
             "cdf": distribution("cdf", 0.0, 1.0), "logcdf": distribution("logcdf", -np.inf, 0.0),
             "sf": distribution("sf", 1.0, 0.0), "logsf": distribution("logsf", 0.0, -np.inf)}
    if "ppf" in fns:
        impls["ppf"] = ppf
    tail = [(n, REQUIRED) for n in shapes] + [("loc", 0.0)]
    out = {}
    for fname, impl in impls.items():
        first = "q" if fname == "ppf" else "k"
        out[fname] = public(name, fname, [(first, REQUIRED), *tail], impl,
                            _doc(name, fname, first, shapes, loc_scale=False))
    return Distribution(name, "discrete", out)


def _search_ppf(cdf, sf, top):
    """SciPy's discrete ppf, the smallest integer ``k >= 0`` with ``cdf(k) >= q`` (as
    ``sf(k) <= 1 - q`` where ``q > 1/2``, ``1 - q`` exact there), found by doubling an
    upper bound and bisecting (64 steps each: every float64 integer), at the cost of 128
    cdf evaluations."""
    def ppf(q, *s):
        q, s = stop_gradient(q), [stop_gradient(v) for v in s]    # integer-valued: 0
        end = top(*s)
        upper = q > 0.5

        def reached(k):
            inside = fnp.logical_and(k >= 0, k < end)
            ks = fnp.where(inside, k, 0.0)
            test = fnp.where(upper, sf(ks, *s) <= 1 - q, cdf(ks, *s) >= q)
            return fnp.where(inside, test, k >= end)

        def grow(_, hi):
            return fnp.where(reached(hi), hi, fnp.minimum(2 * hi + 1, end))

        hi = fori_loop(0, 64, grow, fnp.zeros_like(q))

        def bisect(_, bracket):
            lo, hi = bracket                         # not reached(lo), reached(hi)
            mid = fnp.floor((lo + hi) / 2)
            up = reached(mid)
            move = hi - lo > 1
            return (fnp.where(fnp.logical_and(move, fnp.logical_not(up)), mid, lo),
                    fnp.where(fnp.logical_and(move, up), mid, hi))

        _, hi = fori_loop(0, 64, bisect, (fnp.full_like(q, -1.0), hi))
        return hi
    return ppf


def _inf(*s):
    return np.inf


def _binom_logpmf(k, n, p):
    comb = -fnp.log1p(n) - S.betaln(n - k + 1, k + 1)
    return comb + S.xlogy(k, p) + S.xlog1py(n - k, -p)


poisson = discrete("poisson", ("mu",), 0, _inf, lambda mu: mu >= 0, (1.0,), {
    "logpmf": lambda k, mu: S.xlogy(k, mu) - S.gammaln(k + 1) - mu,
    "cdf": lambda k, mu: S.gammaincc(k + 1, mu),
    "sf": lambda k, mu: S.gammainc(k + 1, mu),
    "ppf": _search_ppf(lambda k, mu: S.gammaincc(k + 1, mu),
                       lambda k, mu: S.gammainc(k + 1, mu), _inf)})

binom = discrete(
    "binom", ("n", "p"), 0, lambda n, p: n,
    lambda n, p: _and(n >= 0, fnp.floor(n) == n, p >= 0, p <= 1), (1.0, 0.5), {
        "logpmf": _binom_logpmf,
        "cdf": lambda k, n, p: S.betainc(n - k, k + 1, 1 - p),
        "sf": lambda k, n, p: S.betainc(k + 1, n - k, p),
        "ppf": _search_ppf(lambda k, n, p: S.betainc(n - k, k + 1, 1 - p),
                           lambda k, n, p: S.betainc(k + 1, n - k, p), lambda n, p: n)})

bernoulli = discrete(
    "bernoulli", ("p",), 0, lambda p: 1.0, lambda p: _and(p >= 0, p <= 1), (0.5,), {
        "logpmf": lambda k, p: S.xlogy(k, p) + S.xlog1py(1 - k, -p),
        "cdf": lambda k, p: 1 - p, "sf": lambda k, p: p,
        "ppf": lambda q, p: fnp.where(1 - p >= q, 0.0, 1.0)})

nbinom = discrete(
    "nbinom", ("n", "p"), 0, _inf, lambda n, p: _and(n > 0, p > 0, p <= 1), (1.0, 0.5), {
        "logpmf": lambda k, n, p: (-fnp.log(n + k) - S.betaln(n, k + 1)
                                   + n * fnp.log(p) + S.xlog1py(k, -p)),
        "cdf": lambda k, n, p: S.betainc(n, k + 1, p),
        "sf": lambda k, n, p: S.betainc(k + 1, n, 1 - p),
        "ppf": _search_ppf(lambda k, n, p: S.betainc(n, k + 1, p),
                           lambda k, n, p: S.betainc(k + 1, n, 1 - p), _inf)})


def _geom_ppf(q, p):
    vals = fnp.ceil(fnp.log1p(-q) / fnp.log1p(-p))
    temp = 1.0 - (1.0 - p) ** (vals - 1)
    return fnp.where(_and(temp >= q, vals > 0), vals - 1, vals)


geom = discrete("geom", ("p",), 1, _inf, lambda p: _and(p > 0, p <= 1), (0.5,), {
    "logpmf": lambda k, p: S.xlog1py(k - 1, -p) + fnp.log(p),
    "pmf": lambda k, p: (1 - p) ** (k - 1) * p,
    "cdf": lambda k, p: -fnp.expm1(fnp.log1p(-p) * k),
    "sf": lambda k, p: fnp.exp(fnp.log1p(-p) * k),
    "logsf": lambda k, p: fnp.log1p(-p) * k,
    "ppf": _geom_ppf})
