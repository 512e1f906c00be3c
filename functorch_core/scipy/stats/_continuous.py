"""The continuous distributions: each a standardized density, distribution function and
inverse in ``y = (x - loc) / scale`` and its shape parameters, and one wrapper
(:func:`continuous`) that adds ``loc``/``scale`` and SciPy's rules at the edges:

- outside the support ``pdf`` is 0, ``logpdf`` ``-inf``, ``cdf`` 0 below and 1 above;
- ``scale <= 0``, a shape parameter outside its domain, or a NaN argument gives NaN;
- ``ppf(0)``/``ppf(1)`` are the ends of the support, ``q`` outside [0, 1] gives NaN.

Points outside the support or the domain are replaced by an interior one before the formula
sees them, so derivatives there are 0 (never NaN from an unselected branch).
"""

from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from .. import special as S
from ..internal import double_double as _dd
from ._base import REQUIRED, Distribution, f64, nan_where, public
from ._examples import EXAMPLES
from ._inverse import betaincinv_pq, gammaincinv_pq

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_LOG_2 = math.log(2.0)


def _or(*conds):
    out = conds[0]
    for c in conds[1:]:
        out = fnp.logical_or(out, c)
    return out


def _and(*conds):
    out = conds[0]
    for c in conds[1:]:
        out = fnp.logical_and(out, c)
    return out


def _bad_scale_and_shapes(scale, shapes, valid):
    bad = fnp.logical_not(scale > 0)
    if valid is not None:
        bad = fnp.logical_or(bad, fnp.logical_not(valid(*shapes)))
    return bad


def _safe_shapes(shapes, bad, safe_shapes):
    return [fnp.where(bad, s0, s) for s, s0 in zip(shapes, safe_shapes)]


def _log_of(fn, complement, y, s):
    """``log(fn)``, or ``log1p(-complement)`` where ``fn > 1/2`` (as SciPy's generic
    ``_logcdf``/``_logsf``, which split at the median)."""
    v = fn(y, *s)
    small = v < 0.5
    return fnp.where(small, fnp.log(fnp.where(small, v, 1.0)),
                     fnp.log1p(-fnp.where(small, 0.0, complement(y, *s))))


def continuous(name, shapes, support, safe, valid, fns, safe_shapes=None):
    """The public functions of a continuous distribution.

    Args:
        name: SciPy's name (``'norm'``).
        shapes: the shape parameters' names as SciPy's ``.shapes`` spells them.
        support: ``(lo, hi)`` of the standardized variable.
        safe: an interior point of the support (stands in for points outside it).
        valid: ``valid(*shapes)``, the shape parameters' domain (``None``: all reals).
        fns: the standardized functions ``fn(y, *shapes)``; ``logpdf``, ``cdf`` and ``sf``
            are required, ``pdf`` defaults to ``exp(logpdf)``, ``logcdf``/``logsf`` to the
            log of ``cdf``/``sf`` (as SciPy's generic methods), ``ppf``/``isf`` are left out
            when absent.
        safe_shapes: a valid value per shape parameter (stands in for invalid ones).
    """
    lo, hi = support
    safe_shapes = safe_shapes or [1.0] * len(shapes)
    fns = dict(fns)
    fns.setdefault("pdf", lambda y, *s: fnp.exp(fns["logpdf"](y, *s)))
    fns.setdefault("logcdf", lambda y, *s: _log_of(fns["cdf"], fns["sf"], y, s))
    fns.setdefault("logsf", lambda y, *s: _log_of(fns["sf"], fns["cdf"], y, s))

    def standardize(x, shape_values, loc, scale):
        x, loc, scale, *s = f64(x, loc, scale, *shape_values)
        bad = _bad_scale_and_shapes(scale, s, valid)
        s = _safe_shapes(s, bad, safe_shapes)
        scale = fnp.where(bad, 1.0, scale)
        y = (x - loc) / scale
        return y, s, scale, fnp.logical_or(bad, fnp.isnan(y))

    def density(log):
        def impl(x, loc, scale, **kw):
            y, s, scale, bad = standardize(x, [kw[n] for n in shapes], loc, scale)
            inside = _and(y >= lo, y <= hi)
            ys = fnp.where(inside, y, safe)
            if log:
                out = fnp.where(inside, fns["logpdf"](ys, *s) - fnp.log(scale), -np.inf)
            else:
                out = fnp.where(inside, fns["pdf"](ys, *s) / scale, 0.0)
            return nan_where(bad, out)
        return impl

    def distribution(fname, below, above):
        def impl(x, loc, scale, **kw):
            y, s, scale, bad = standardize(x, [kw[n] for n in shapes], loc, scale)
            inside = _and(y > lo, y < hi)
            ys = fnp.where(inside, y, safe)
            out = fnp.where(inside, fns[fname](ys, *s), fnp.where(y >= hi, above, below))
            return nan_where(bad, out)
        return impl

    def inverse(fname, at0, at1):
        def impl(q, loc, scale, **kw):
            q, loc, scale, *s = f64(q, loc, scale, *[kw[n] for n in shapes])
            bad = _or(_bad_scale_and_shapes(scale, s, valid), fnp.isnan(q), q < 0, q > 1)
            s = _safe_shapes(s, bad, safe_shapes)
            scale = fnp.where(bad, 1.0, scale)
            inside = _and(q > 0, q < 1)
            y = fnp.where(inside, fns[fname](fnp.where(inside, q, 0.5), *s),
                          fnp.where(q == 0, at0, at1))
            return nan_where(bad, loc + scale * y)
        return impl

    impls = {"pdf": density(False), "logpdf": density(True),
             "cdf": distribution("cdf", 0.0, 1.0), "logcdf": distribution("logcdf", -np.inf, 0.0),
             "sf": distribution("sf", 1.0, 0.0), "logsf": distribution("logsf", 0.0, -np.inf)}
    if "ppf" in fns:
        impls["ppf"] = inverse("ppf", lo, hi)
    if "isf" in fns:
        impls["isf"] = inverse("isf", hi, lo)
    tail = [(n, REQUIRED) for n in shapes] + [("loc", 0.0), ("scale", 1.0)]
    out = {}
    for fname, impl in impls.items():
        first = "q" if fname in ("ppf", "isf") else "x"
        out[fname] = public(name, fname, [(first, REQUIRED), *tail], impl,
                            _doc(name, fname, first, shapes))
    return Distribution(name, "continuous", out)


_WHAT = {"pmf": "the probability mass function", "logpmf": "the log of the pmf",
         "pdf": "the probability density", "logpdf": "the log of the probability density",
         "cdf": "the cumulative distribution function", "logcdf": "the log of the cdf",
         "sf": "the survival function ``1 - cdf``", "logsf": "the log of the survival function",
         "ppf": "the percent point function (the inverse of the cdf)",
         "isf": "the inverse of the survival function"}


def _doc(name, fname, first, shapes, loc_scale=True):
    shape_lines = "".join(f"        {n}: the shape parameter ``{n}`` (array or scalar).\n"
                          for n in shapes)
    loc = ("        loc (default ``0``): the location; ``x`` enters as ``(x - loc) / scale``.\n"
           "        scale (default ``1``): the scale, > 0 (NaN otherwise).\n") if loc_scale \
        else "        loc (default ``0``): the shift of the support.\n"
    call, value = EXAMPLES[name, fname]
    return (f"``scipy.stats.{name}.{fname}``: {_WHAT.get(fname, fname)}, SciPy's values (its "
            "edge rules: 0 / ``-inf`` outside the support, NaN for invalid parameters), "
            + ("differentiable in every argument.\n\n" if loc_scale else
               "differentiable in the parameters (``k`` is an integer).\n\n") +
            f"    Args:\n        {first}: the point(s) (array or scalar); all arguments "
            "broadcast together.\n" + shape_lines + loc +
            "\n    Returns:\n        float64 (as SciPy, float32 and integer inputs too); a NumPy "
            "scalar for scalar inputs.\n\n"
            f"    Example::\n\n        >>> {call}\n        {value}\n")


def _log_expit(x):
    neg = x < 0
    return fnp.where(neg, x, 0.0) - fnp.log1p(fnp.exp(fnp.where(neg, x, -x)))


def _norm_logpdf(y):
    return -y * y / 2 - _LOG_SQRT_2PI


norm = continuous("norm", (), (-np.inf, np.inf), 0.0, None, {
    "logpdf": _norm_logpdf,
    "pdf": lambda y: fnp.exp(-y * y / 2) / math.sqrt(2 * math.pi),
    "cdf": S.ndtr, "sf": lambda y: S.ndtr(-y),
    "logcdf": S.log_ndtr, "logsf": lambda y: S.log_ndtr(-y),
    "ppf": S.ndtri, "isf": lambda q: -S.ndtri(q)})

expon = continuous("expon", (), (0.0, np.inf), 1.0, None, {
    "logpdf": lambda y: -y, "pdf": lambda y: fnp.exp(-y),
    "cdf": lambda y: -fnp.expm1(-y), "sf": lambda y: fnp.exp(-y), "logsf": lambda y: -y,
    "ppf": lambda q: -fnp.log1p(-q), "isf": lambda q: -fnp.log(q)})


def _laplace_cdf(y):
    pos = y > 0
    return fnp.where(pos, 1.0 - 0.5 * fnp.exp(-fnp.where(pos, y, 0.0)),
                     0.5 * fnp.exp(fnp.where(pos, 0.0, y)))


def _laplace_ppf(q):
    upper = q > 0.5
    return fnp.where(upper, -fnp.log(2 * (1 - fnp.where(upper, q, 0.25))),
                     fnp.log(2 * fnp.where(upper, 0.25, q)))


laplace = continuous("laplace", (), (-np.inf, np.inf), 0.0, None, {
    "logpdf": lambda y: -fnp.abs(y) - _LOG_2,
    "pdf": lambda y: 0.5 * fnp.exp(-fnp.abs(y)),
    "cdf": _laplace_cdf, "sf": lambda y: _laplace_cdf(-y),
    "ppf": _laplace_ppf, "isf": lambda q: -_laplace_ppf(q)})


def _logistic_logpdf(y):
    m = fnp.where(y < 0, y, -y)            # -|y|, differentiable on both sides of 0
    return m - 2.0 * fnp.log1p(fnp.exp(m))


logistic = continuous("logistic", (), (-np.inf, np.inf), 0.0, None, {
    "logpdf": _logistic_logpdf,
    "cdf": S.expit, "sf": lambda y: S.expit(-y),
    "logcdf": _log_expit, "logsf": lambda y: _log_expit(-y),
    "ppf": S.logit, "isf": lambda q: -S.logit(q)})


def _cauchy_logpdf(y):
    small = fnp.abs(y) < 1
    ys = fnp.where(small, y, 0.5)
    yl = fnp.where(small, 2.0, y)
    return fnp.where(small, -_LOG_PI - fnp.log1p(ys * ys),
                     -_LOG_PI - (2 * fnp.log(fnp.abs(yl)) + fnp.log1p((1 / yl) ** 2)))


def _cauchy_ppf(q):
    lower = q < 0.5
    ql = fnp.where(lower, q, 0.25)
    qu = fnp.where(lower, 0.75, q)
    return fnp.where(q == 0.5, 0.0, fnp.where(lower, -1 / fnp.tan(math.pi * ql),
                                               1 / fnp.tan(math.pi * (1 - qu))))


cauchy = continuous("cauchy", (), (-np.inf, np.inf), 0.0, None, {
    "logpdf": _cauchy_logpdf, "pdf": lambda y: 1.0 / math.pi / (1.0 + y * y),
    "cdf": lambda y: fnp.arctan2(1.0, -y) / math.pi,
    "sf": lambda y: fnp.arctan2(1.0, y) / math.pi,
    "ppf": _cauchy_ppf, "isf": lambda q: -_cauchy_ppf(q)})

uniform = continuous("uniform", (), (0.0, 1.0), 0.5, None, {
    "logpdf": lambda y: fnp.zeros_like(y), "pdf": lambda y: fnp.ones_like(y),
    "cdf": lambda y: y, "sf": lambda y: 1.0 - y,
    "ppf": lambda q: q, "isf": lambda q: 1.0 - q})


def _t_finite(df):
    return fnp.where(fnp.isinf(df), 1.0, df)


def _t_logpdf(y, df):
    d = _t_finite(df)
    t = -S.betaln(d / 2, 0.5) - 0.5 * fnp.log(d) - (d + 1) / 2 * fnp.log1p(y * y / d)
    return fnp.where(fnp.isinf(df), _norm_logpdf(y), t)


def _t_lower_tail(y, df):
    """``P(T < -|y|)``: ``(1 - I_z(1/2, df/2)) / 2`` with ``z = y^2 / (df + y^2)`` while that
    is at least 1/4 (no cancellation), else ``I_x(df/2, 1/2) / 2`` with ``x = 1 - z`` (whose
    rounding costs about ``df/2`` ulps: the tail of a large-``df`` t is that far off)."""
    d = _t_finite(df)
    r = y * y / d
    near = S.betainc(0.5, d / 2, r / (1 + r))
    use_near = near < 0.5
    yt = fnp.where(use_near, 1.0, y)
    t = fnp.where(use_near, 0.5 - 0.5 * near, 0.5 * _betainc_near_one(d / 2, 0.5, d, yt))
    return fnp.where(fnp.isinf(df), S.ndtr(-fnp.abs(y)), t)


def _betainc_near_one(a, b, d, y):
    """``I_x(a, b)`` at ``x = d / (d + y^2)``: ``x`` in double-double ``x_hi + x_lo`` and
    ``I(x_hi) + x_lo I'(x_hi)``, since near ``x = 1`` the rounding of ``x`` alone would cost
    ``a`` ulps."""
    sq = _dd.two_prod(y, y)
    den = _dd.two_sum(d, sq[0])
    x_hi, x_lo = _dd.div((d, 0.0 * d), (den[0], den[1] + sq[1]))
    density = fnp.exp(S.xlogy(a - 1, x_hi) + S.xlog1py(b - 1, -x_hi) - S.betaln(a, b))
    return S.betainc(a, b, x_hi) + x_lo * density


def _t_cdf(y, df):
    low = _t_lower_tail(y, df)
    return fnp.where(y < 0, low, 1.0 - low)


def _t_ppf(q, df):
    """``|t| = sqrt(df y / x)`` from ``(x, y = 1 - x)`` with ``I_x(df/2, 1/2) = 2 min(q, 1 - q)``
    (each of the pair accurate, :func:`betaincinv_pq`)."""
    d = _t_finite(df)
    centre = q == 0.5
    tail = fnp.where(centre, 0.25, fnp.minimum(q, 1 - q))
    x, y = betaincinv_pq(d / 2, 0.5 * fnp.ones_like(d), 2 * tail, 1 - 2 * tail)
    size = fnp.sqrt(d * y / x)
    value = fnp.where(centre, 0.0, fnp.where(q < 0.5, -size, size))
    return fnp.where(fnp.isinf(df), S.ndtri(q), value)


t = continuous("t", ("df",), (-np.inf, np.inf), 0.0, lambda df: df > 0, {
    "logpdf": _t_logpdf,
    "pdf": lambda y, df: fnp.where(fnp.isinf(df), fnp.exp(-y * y / 2) / math.sqrt(2 * math.pi),
                                   fnp.exp(_t_logpdf(y, df))),
    "cdf": _t_cdf, "sf": lambda y, df: _t_cdf(-y, df),
    "ppf": _t_ppf, "isf": lambda q, df: -_t_ppf(q, df)})


def _gamma_logpdf(y, a):
    return S.xlogy(a - 1.0, y) - y - S.gammaln(a)


gamma = continuous("gamma", ("a",), (0.0, np.inf), 1.0, lambda a: a > 0, {
    "logpdf": _gamma_logpdf, "cdf": lambda y, a: S.gammainc(a, y),
    "sf": lambda y, a: S.gammaincc(a, y),
    "ppf": lambda q, a: gammaincinv_pq(a, q, 1 - q),
    "isf": lambda q, a: gammaincinv_pq(a, 1 - q, q)})

chi2 = continuous("chi2", ("df",), (0.0, np.inf), 1.0, lambda df: df > 0, {
    "logpdf": lambda y, df: (S.xlogy(df / 2 - 1, y) - y / 2 - S.gammaln(df / 2)
                             - _LOG_2 * df / 2),
    "cdf": lambda y, df: S.gammainc(df / 2, y / 2),
    "sf": lambda y, df: S.gammaincc(df / 2, y / 2),
    "ppf": lambda q, df: 2 * gammaincinv_pq(df / 2, q, 1 - q),
    "isf": lambda q, df: 2 * gammaincinv_pq(df / 2, 1 - q, q)})

def _beta_sf(y, a, b):
    """``1 - I_y(a, b)`` where that is at least 1/2, else ``I_{1-y}(b, a)`` (rounding ``1 - y``
    would cost ``y`` its low digits where the sf is near 1)."""
    low = S.betainc(a, b, y)
    top = low < 0.5
    return fnp.where(top, 1.0 - low, S.betainc(b, a, 1.0 - fnp.where(top, 0.5, y)))


beta = continuous("beta", ("a", "b"), (0.0, 1.0), 0.5, lambda a, b: fnp.logical_and(a > 0, b > 0), {
    "logpdf": lambda y, a, b: S.xlog1py(b - 1.0, -y) + S.xlogy(a - 1.0, y) - S.betaln(a, b),
    "cdf": lambda y, a, b: S.betainc(a, b, y),
    "sf": _beta_sf,
    "ppf": lambda q, a, b: betaincinv_pq(a, b, q, 1 - q)[0],
    "isf": lambda q, a, b: betaincinv_pq(a, b, 1 - q, q)[0]})
