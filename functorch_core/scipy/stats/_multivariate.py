"""``multivariate_normal`` (``logpdf``/``pdf``), ``dirichlet`` (``logpdf``/``pdf``) and
``multinomial`` (``logpmf``/``pmf``), with SciPy's argument conventions (its shapes, its
squeezed outputs) and values."""

from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from ...numpy.internal import aval, cast, is_tracer, result_type
from .. import linalg as L
from .. import special as S
from ._base import REQUIRED, Distribution, as_array, f64, nan_where, public

_LOG_2PI = math.log(2 * math.pi)


def _squeeze(out):
    """SciPy's ``_squeeze_output``: every length-1 axis dropped."""
    shape = tuple(aval(out).shape)
    return fnp.reshape(out, tuple(n for n in shape if n != 1))


def _mvn_logpdf(x, mean, cov, allow_singular):
    if allow_singular:
        raise NotImplementedError(
            "functorch_core.scipy.stats.multivariate_normal: allow_singular=True (a "
            "pseudo-determinant over a singular cov) is not supported; cov must be positive "
            "definite")
    x = f64(x)[0]
    cov = f64(cov)[0]
    mean = None if mean is None else f64(mean)[0]
    if mean is not None and aval(mean).ndim > 1:
        raise ValueError("functorch_core.scipy.stats.multivariate_normal: mean must be a "
                         f"scalar or 1-d, got shape {tuple(aval(mean).shape)}")
    dim = (aval(mean).size if mean is not None and aval(mean).ndim == 1
           else aval(cov).shape[0] if aval(cov).ndim > 0 else 1)
    mean = fnp.zeros(dim) if mean is None else fnp.broadcast_to(mean, (dim,))
    if aval(cov).ndim == 0:
        cov = cov * fnp.eye(dim)
    elif aval(cov).ndim == 1:
        cov = fnp.diag(fnp.broadcast_to(cov, (dim,)))
    if tuple(aval(cov).shape) != (dim, dim):
        raise ValueError("functorch_core.scipy.stats.multivariate_normal: cov must be a "
                         f"scalar, a length-{dim} diagonal or {dim}x{dim}, got shape "
                         f"{tuple(aval(cov).shape)}")
    if aval(x).ndim == 0:
        x = fnp.reshape(x, (1,))
    if aval(x).ndim == 1:
        x = fnp.reshape(x, (-1, 1) if dim == 1 else (1, -1))
    if aval(x).shape[-1] != dim:
        raise ValueError("functorch_core.scipy.stats.multivariate_normal: x's last axis must "
                         f"have length {dim} (mean's), got shape {tuple(aval(x).shape)}")
    batch = tuple(aval(x).shape[:-1])
    chol = L.cholesky(cov, lower=True)
    dev = fnp.reshape(x - mean, (-1, dim)).T
    z = L.solve_triangular(chol, dev, lower=True)
    maha = fnp.reshape(fnp.sum(z * z, axis=0), batch)
    logdet = 2 * fnp.sum(fnp.log(fnp.diagonal(chol)))
    return _squeeze(-0.5 * (dim * _LOG_2PI + logdet + maha))


_MVN_ARGS = [("x", REQUIRED), ("mean", None), ("cov", 1), ("allow_singular", False)]
_MVN_DOC = """``scipy.stats.multivariate_normal.{f}``: the {what} of the normal distribution
    with ``mean`` and ``cov`` at ``x``, through ``cov``'s Cholesky factor; differentiable in
    ``x``, ``mean`` and ``cov``.

    Args:
        x: points, the last axis the components (a 1-d ``x`` is one point, or, for a
            one-dimensional distribution, many).
        mean (default ``None``: zeros): the mean, a scalar or length ``d``.
        cov (default ``1``): a scalar (times the identity), a length-``d`` diagonal, or a
            ``d x d`` symmetric positive definite matrix.
        allow_singular (default ``False``): ``True`` is not supported (raises).

    Returns:
        float64, every length-1 axis squeezed as SciPy (a scalar for one point).

    Example::

        >>> stats.multivariate_normal.{f}(np.zeros(2), cov=np.eye(2))
"""

multivariate_normal = Distribution("multivariate_normal", "multivariate", {
    "logpdf": public("multivariate_normal", "logpdf", _MVN_ARGS, _mvn_logpdf,
                     _MVN_DOC.format(f="logpdf", what="log density")),
    "pdf": public("multivariate_normal", "pdf", _MVN_ARGS,
                  lambda **kw: fnp.exp(_mvn_logpdf(**kw)),
                  _MVN_DOC.format(f="pdf", what="density"))})


def _dirichlet_logpdf(x, alpha):
    dtype = result_type(as_array(x), as_array(alpha))
    dtype = np.dtype(np.float64) if dtype.kind in "biu" else dtype
    if not is_tracer(x) and not is_tracer(alpha):
        _dirichlet_check(np.asarray(x), np.asarray(alpha))
    x, alpha = f64(x)[0], f64(alpha)[0]
    if aval(alpha).ndim != 1:
        raise ValueError("functorch_core.scipy.stats.dirichlet: alpha must be 1-d, got shape "
                         f"{tuple(aval(alpha).shape)}")
    k = aval(alpha).shape[0]
    if aval(x).ndim == 0 or aval(x).shape[0] not in (k, k - 1):
        raise ValueError("functorch_core.scipy.stats.dirichlet: x's first axis must have "
                         f"alpha's length {k} or one fewer, got x of shape "
                         f"{tuple(aval(x).shape)}")
    if aval(x).shape[0] == k - 1:
        x = fnp.concatenate([x, (1 - fnp.sum(x, axis=0))[None]], axis=0)
    a = fnp.reshape(alpha, (k,) + (1,) * (aval(x).ndim - 1))
    log_b = fnp.sum(S.gammaln(alpha)) - S.gammaln(fnp.sum(alpha))
    out = fnp.sum(S.xlogy(a - 1, x), axis=0) - log_b
    return cast(out, dtype)


def _dirichlet_check(x, alpha):
    """SciPy's checks of concrete arguments, in their own dtype (traced ones are not
    checked)."""
    if alpha.ndim != 1 or x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        return                                  # the shape errors are raised by the caller
    if x.shape[0] == alpha.shape[0] - 1:
        x = np.concatenate([x, (1 - np.sum(x, axis=0))[None]], axis=0)
    if np.any(alpha <= 0):
        raise ValueError("functorch_core.scipy.stats.dirichlet: all alpha must be > 0")
    if np.any(x < 0) or np.any(x > 1):
        raise ValueError("functorch_core.scipy.stats.dirichlet: x must lie in [0, 1]")
    if np.any(np.abs(np.sum(x, axis=0) - 1) > 1e-9):
        raise ValueError("functorch_core.scipy.stats.dirichlet: x must sum to 1 along "
                         "its first axis")


_DIR_DOC = """``scipy.stats.dirichlet.{f}``: the {what} of the Dirichlet distribution with
    concentration ``alpha`` at ``x``; differentiable in ``x`` and ``alpha``.

    Args:
        x: points on the simplex, the FIRST axis the components (SciPy's convention); with
            one component fewer than ``alpha`` the last is ``1 - sum``. Concrete arguments
            are checked as SciPy does (in [0, 1], summing to 1); traced ones are not.
        alpha: the concentration, 1-d, > 0.

    Returns:
        The arguments' floating dtype (float32 stays float32, as SciPy), computed in float64.

    Example::

        >>> stats.dirichlet.{f}(np.array([0.2, 0.8]), np.array([1.0, 2.0]))
"""

dirichlet = Distribution("dirichlet", "multivariate", {
    "logpdf": public("dirichlet", "logpdf", [("x", REQUIRED), ("alpha", REQUIRED)],
                     _dirichlet_logpdf, _DIR_DOC.format(f="logpdf", what="log density")),
    "pdf": public("dirichlet", "pdf", [("x", REQUIRED), ("alpha", REQUIRED)],
                  lambda **kw: fnp.exp(_dirichlet_logpdf(**kw)),
                  _DIR_DOC.format(f="pdf", what="density"))})


def _multinomial_logpmf(x, n, p):
    x, p = f64(x)[0], f64(p)[0]
    n = fnp.trunc(f64(n)[0])                      # SciPy takes n as int
    rest = p[..., :-1]
    p = fnp.concatenate([rest, (1 - fnp.sum(rest, axis=-1))[..., None]], axis=-1)
    out = S.gammaln(n + 1) + fnp.sum(S.xlogy(x, p) - S.gammaln(x + 1), axis=-1)
    bad_x = fnp.logical_or(
        fnp.any(fnp.logical_or(fnp.floor(x) != x, x < 0), axis=-1),
        fnp.sum(x, axis=-1) != n)
    bad = fnp.logical_or(n < 0, fnp.any(fnp.logical_or(p < 0, p > 1), axis=-1))
    return nan_where(bad, fnp.where(bad_x, -np.inf, out))


_MULT_ARGS = [("x", REQUIRED), ("n", REQUIRED), ("p", REQUIRED)]
_MULT_DOC = """``scipy.stats.multinomial.{f}``: the {what} of ``n`` draws over the categories
    of ``p`` at counts ``x``; differentiable in ``p``. As SciPy, the last probability is
    taken as ``1 - sum(p[..., :-1])``; non-integer, negative or wrongly summing counts give
    ``{zero}``; ``n < 0`` or ``p`` outside [0, 1] give NaN.

    Args:
        x: counts, the last axis the categories.
        n: the number of draws (truncated to an integer, as SciPy's).
        p: the probabilities, the last axis the categories (broadcast with ``x``).

    Returns:
        float64, of the broadcast shape without the last axis.

    Example::

        >>> stats.multinomial.{f}(np.array([1.0, 2.0]), 3, np.array([0.3, 0.7]))
"""

multinomial = Distribution("multinomial", "multivariate", {
    "logpmf": public("multinomial", "logpmf", _MULT_ARGS, _multinomial_logpmf,
                     _MULT_DOC.format(f="logpmf", what="log probability", zero="-inf")),
    "pmf": public("multinomial", "pmf", _MULT_ARGS,
                  lambda **kw: fnp.exp(_multinomial_logpmf(**kw)),
                  _MULT_DOC.format(f="pmf", what="probability", zero="0"))})
