"""Statistics built from the traced reductions and ``sort``: ``average``, ``ptp``,
``median``/``quantile``/``percentile``, ``cov``/``corrcoef`` and the NaN-ignoring
reductions (``nansum``, ``nanmean``, ``nanmax``, ...).

Result dtypes are NumPy's: where they depend on the method, NumPy is asked what it gives
on a one-element array of the same dtypes (cached). Order statistics are values of the
sorted array, so they are differentiable wherever NumPy's result is continuous.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from functorch_core._internal import autocast
from functorch_core.ir.dtypes import dtype_kind

from . import _elementwise as E
from . import _reductions as R
from ._core import (
    aval,
    complex_from_parts,
    implements,
    is_tracer,
    normalize_axes,
    operand,
    to_result,
)
from ._creation import array_operand, asarray
from ._indexing import take_along_axis
from ._linalg import diag, dot
from ._shape import (
    _atleast_2d,
    broadcast_view,
    concatenate,
    expand_dims,
    moveaxis,
    reshape,
    squeeze,
    stack,
    transpose,
)
from ._sorting import sort

__all__ = ["average", "ptp", "median", "quantile", "percentile", "cov", "corrcoef",
           "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
           "nanargmax", "nanargmin", "nancumsum", "nancumprod", "nanmedian", "nanquantile",
           "nanpercentile"]

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak: ``max - min`` over ``axis``, as ``numpy.ptp``.

    Example::

        >>> fnp.ptp(np.array([[4, 9], [2, 3]]), axis=1)
        array([5, 1])
    """
    if out is not None:
        raise NotImplementedError("ptp(..., out=...) is not supported; use the result")
    return E.subtract(R.max(a, axis, keepdims=keepdims), R.min(a, axis, keepdims=keepdims))


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The (weighted) average over ``axis``, as ``numpy.average``.

    Args:
        a: an array.
        axis (int, tuple or None, default ``None``): the axes averaged over.
        weights (array, default ``None``): of ``a``'s shape, or 1-d along a single
            ``axis``. Weights summing to zero raise eagerly (under a trace they give NaN
            or inf, as the division does).
        returned (bool, default ``False``): also return the sum of the weights.
        keepdims (bool, default ``False``): keep the reduced axes with size 1.

    Example::

        >>> fnp.average(np.array([1.0, 2.0, 4.0]), weights=np.array([1.0, 1.0, 2.0]))
        2.75
    """
    x = array_operand(a)
    if weights is None:
        avg = R.mean(x, axis, keepdims=keepdims)
        if not returned:
            return avg
        n = aval(x).size / max(aval(operand(avg)).size, 1) if aval(x).size else 0
        scl = E.add(E.multiply(avg, 0), np.asarray(n, aval(operand(avg)).dtype))
        return avg, scl
    w = array_operand(weights)
    src, wdt = aval(x).dtype, aval(w).dtype
    dt = np.result_type(src, wdt, "f8") if src.kind in "biu" else np.result_type(src, wdt)
    if aval(x).shape != aval(w).shape:
        if axis is None:
            raise TypeError("average: axis must be specified when shapes of a and weights "
                            f"differ ({aval(x).shape} and {aval(w).shape})")
        if aval(w).ndim != 1:
            raise TypeError(f"average: 1D weights expected when shapes of a and weights "
                            f"differ ({aval(x).shape} and {aval(w).shape})")
        axes = normalize_axes(axis, aval(x).ndim)
        if len(axes) != 1 or aval(w).shape[0] != aval(x).shape[axes[0]]:
            raise ValueError("average: length of weights not compatible with specified "
                             f"axis {axis} for shape {aval(x).shape}")
        w = moveaxis(reshape(w, aval(w).shape + (1,) * (aval(x).ndim - 1)), 0, axes[0])
        w = broadcast_view(w, aval(x).shape)
    scl = R.sum(w, axis, dtype=dt, keepdims=keepdims)
    if not is_tracer(scl) and np.any(np.asarray(scl) == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = E.divide(R.sum(E.multiply(asarray(x, dtype=dt), asarray(w, dtype=dt)), axis,
                             keepdims=keepdims), scl)
    if returned:
        if aval(operand(scl)).shape != aval(operand(avg)).shape:
            scl = broadcast_view(scl, aval(operand(avg)).shape)
        return avg, scl
    return avg


def _reduce_last(x, axis):
    """``x`` with the ``axis`` axes moved to the end and merged into one; the axes."""
    nd = aval(x).ndim
    axes = normalize_axes(axis, nd)
    rest = [i for i in range(nd) if i not in axes]
    x = transpose(x, rest + list(axes))
    shape = aval(operand(x)).shape
    n = math.prod(shape[len(rest):])
    return reshape(x, shape[:len(rest)] + (n,)), axes


def _keepdims(y, axes, nd, lead):
    """Put back the reduced ``axes`` (of an ``nd``-d input) with size 1, after ``lead``
    leading axes of q."""
    for ax in sorted(axes):
        y = expand_dims(y, lead + ax)
    return y


@functools.cache
def _numpy_dtype(fn_name, src, qdt, method, q_nd=0):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        q = np.full((1,) * q_nd, 0.5, qdt) if qdt is not None else 0.5
        return np.asarray(getattr(np, fn_name)(np.ones(2, src), q, method=method)).dtype


def _quantiles(name, a, q, axis, method, keepdims, nan_aware, np_name):
    if method not in _METHODS:
        raise NotImplementedError(f"{name}: method {method!r} is not supported; use one of "
                                  f"{', '.join(_METHODS)}")
    x = array_operand(a)
    weak_q = _weak(q)
    qv = array_operand(q)
    if aval(x).dtype.kind == "c":
        raise TypeError(f"{name}: a must be an array of real numbers")
    if not is_tracer(qv) and not np.all((np.asarray(qv) >= 0) & (np.asarray(qv) <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    nd = aval(x).ndim
    out_dt = _numpy_dtype(np_name, aval(x).dtype,
                          None if weak_q else aval(qv).dtype, method, aval(qv).ndim)
    flat, axes = _reduce_last(x, axis)
    s = sort(flat, axis=-1)
    n_static = aval(operand(s)).shape[-1]
    batch = aval(operand(s)).shape[:-1]
    qshape = aval(qv).shape
    # q's axes first, then the batch axes: (q..., batch..., 1) against s (batch..., n)
    if nan_aware and n_static == 0 and dtype_kind(out_dt) == "f":    # empty slices: NaN, as NumPy
        s = broadcast_view(np.asarray(np.nan, out_dt), qshape + batch)
        return to_result(operand(_keepdims(s, axes, nd, len(qshape)) if keepdims else s),
                         scalar=True)
    qb = reshape(asarray(qv, dtype=np.float64), qshape + (1,) * len(batch))
    if nan_aware:
        valid = R.sum(E.logical_not(E.isnan(s)), axis=-1, dtype=np.int64)
        n = asarray(valid, dtype=np.float64)
    else:
        n = float(n_static)
    virtual = E.multiply(qb, E.subtract(n, 1.0))
    hi_index = E.maximum(E.subtract(n, 1.0), 0.0)
    below = E.clip(E.floor(virtual), 0.0, hi_index)
    above = E.clip(E.ceil(virtual), 0.0, hi_index)
    gamma = E.subtract(virtual, below)
    sb = s if not qshape else _broadcast_lead(s, qshape)
    lo_v = _take_last(sb, asarray(below, dtype=np.int64))
    hi_v = _take_last(sb, asarray(above, dtype=np.int64))
    if method == "lower":
        res = lo_v
    elif method == "higher":
        res = hi_v
    elif method == "nearest":
        # NumPy rounds the virtual index half to even
        near = E.clip(E.rint(virtual), 0.0, hi_index)
        res = _take_last(sb, asarray(near, dtype=np.int64))
    else:
        t = asarray(gamma if method == "linear" else E.where(E.equal(gamma, 0.0), 0.0, 0.5),
                    dtype=out_dt)
        # NumPy interpolates towards the next element even where t is 0 (inf * 0 is NaN)
        nxt = _take_last(sb, asarray(E.minimum(E.add(below, 1.0), hi_index), dtype=np.int64))
        lo_c, hi_c = asarray(lo_v, dtype=out_dt), asarray(nxt, dtype=out_dt)
        # NumPy subtracts floats in their own dtype (integers wrap there: those we widen first)
        d = asarray(E.subtract(nxt, lo_v), dtype=out_dt) if dtype_kind(aval(s).dtype) == "f" \
            else E.subtract(hi_c, lo_c)
        res = E.where(E.greater_equal(t, 0.5), E.subtract(hi_c, E.multiply(d, E.subtract(1, t))),
                      E.add(lo_c, E.multiply(d, t)))
    res = asarray(res, dtype=out_dt)
    if dtype_kind(aval(x).dtype) == "f" and n_static:
        bad = E.isnan(s[..., -1]) if not nan_aware else E.equal(valid, 0)
        res = E.where(bad, np.asarray(np.nan, out_dt), res)
    if keepdims:
        res = _keepdims(res, axes, nd, len(qshape))
    return to_result(operand(res), scalar=True)


def _broadcast_lead(s, qshape):
    return broadcast_view(s, tuple(qshape) + aval(operand(s)).shape)


def _take_last(s, idx):
    """``s[..., idx]``: ``idx`` broadcasts against ``s`` without its last axis."""
    target = aval(operand(s)).shape[:-1] + (1,)
    return take_along_axis(s, broadcast_view(expand_dims(idx, -1), target), axis=-1)[..., 0]


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th quantiles over ``axis``, as ``numpy.quantile``.

    Args:
        a: a real array (a slice holding NaN gives NaN).
        q (float or array in [0, 1]): the quantiles; its axes come first in the result.
        axis (int, tuple or None, default ``None``): the axes reduced.
        out, overwrite_input: NumPy's; ``out`` is not supported.
        method (str, default ``'linear'``): ``'linear'``, ``'lower'``, ``'higher'``,
            ``'midpoint'`` or ``'nearest'``.
        keepdims (bool, default ``False``): keep the reduced axes with size 1.
        weights: not supported (``NotImplementedError``).

    Example::

        >>> fnp.quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.5)
        2.5
    """
    _refuse(out, weights, interpolation, "quantile")
    return _quantiles("quantile", a, q, axis, method, keepdims, False, "quantile")


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """:func:`quantile` with ``q`` in percent (0 to 100), as ``numpy.percentile``.

    Example::

        >>> fnp.percentile(np.array([1.0, 2.0, 3.0, 4.0]), 50)
        2.5
    """
    _refuse(out, weights, interpolation, "percentile")
    return _percentiles("percentile", a, q, axis, method, keepdims, False)


def _percentiles(name, a, q, axis, method, keepdims, nan_aware):
    qv = array_operand(q)
    if not is_tracer(qv) and not np.all((np.asarray(qv) >= 0) & (np.asarray(qv) <= 100)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantiles(name, a, q / 100 if _weak(q) else E.true_divide(q, 100), axis,
                      method, keepdims, nan_aware, name)


def _weak(q):
    """A Python number (or a tracer of one): weak under NEP 50, as NumPy sees it."""
    if is_tracer(q):
        return aval(q).weak_type
    return isinstance(q, int | float) and not isinstance(q, np.generic)


def _refuse(out, weights, interpolation, name):
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    if weights is not None:
        raise NotImplementedError(f"{name}(..., weights=...) is not supported")
    if interpolation is not None:
        raise TypeError(f"{name}: 'interpolation' was removed; use method=")


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over ``axis`` (the mean of the two middle values for an even count), as
    ``numpy.median``; a slice holding NaN gives NaN.

    Example::

        >>> fnp.median(np.array([3, 1, 4, 1]))
        2.0
    """
    if out is not None:
        raise NotImplementedError("median(..., out=...) is not supported; use the result")
    x = array_operand(a)
    nd = aval(x).ndim
    flat, axes = _reduce_last(x, axis)
    s = sort(flat, axis=-1)
    n = aval(operand(s)).shape[-1]
    if n == 0:
        res = R.mean(s, axis=-1)
    else:
        mid = s[..., (n - 1) // 2: n // 2 + 1]
        res = R.mean(mid, axis=-1)
        if dtype_kind(aval(x).dtype) in "fc":
            res = E.where(E.isnan(s[..., -1]), np.asarray(np.nan, aval(operand(res)).dtype),
                          res)
    if keepdims:
        res = _keepdims(res, axes, nd, 0)
    return to_result(operand(res), scalar=True)


def _keep(keepdims):
    return False if keepdims is np._NoValue else keepdims


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=np._NoValue, *, weights=None, interpolation=None):
    """:func:`quantile` ignoring NaNs, as ``numpy.nanquantile`` (an all-NaN slice gives
    NaN). The arguments are :func:`quantile`'s.

    Example::

        >>> fnp.nanquantile(np.array([1.0, np.nan, 3.0, 4.0]), 0.5)
        3.0
    """
    _refuse(out, weights, interpolation, "nanquantile")
    return _quantiles("nanquantile", a, q, axis, method, _keep(keepdims), True, "nanquantile")


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=np._NoValue, *, weights=None, interpolation=None):
    """:func:`nanquantile` with ``q`` in percent (0 to 100), as ``numpy.nanpercentile``.

    Example::

        >>> fnp.nanpercentile(np.array([1.0, np.nan, 3.0, 4.0]), 50)
        3.0
    """
    _refuse(out, weights, interpolation, "nanpercentile")
    return _percentiles("nanpercentile", a, q, axis, method, _keep(keepdims), True)


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    """:func:`median` ignoring NaNs, as ``numpy.nanmedian`` (an all-NaN slice gives NaN).

    Example::

        >>> fnp.nanmedian(np.array([3.0, np.nan, 1.0, 4.0]))
        3.0
    """
    if out is not None:
        raise NotImplementedError("nanmedian(..., out=...) is not supported; use the result")
    x = array_operand(a)
    if dtype_kind(aval(x).dtype) not in "fc" or not aval(x).size:
        return median(x, axis, keepdims=_keep(keepdims))
    nd = aval(x).ndim
    flat, axes = _reduce_last(x, axis)
    s = sort(flat, axis=-1)
    last = aval(operand(s)).shape[-1] - 1
    n = R.sum(E.logical_not(E.isnan(s)), axis=-1, dtype=np.int64)
    lo = E.clip(E.floor_divide(E.subtract(n, 1), 2), 0, last)
    hi = E.clip(E.floor_divide(n, 2), 0, last)
    res = R.mean(stack([_take_last(s, lo), _take_last(s, hi)], axis=-1), axis=-1)
    res = E.where(E.equal(n, 0), np.asarray(np.nan, aval(operand(res)).dtype), res)
    if _keep(keepdims):
        res = _keepdims(res, axes, nd, 0)
    return to_result(operand(res), scalar=True)


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """The covariance matrix of the variables in the rows of ``m`` (columns with
    ``rowvar=False``), as ``numpy.cov``.

    Args:
        m (1-d or 2-d array): the variables and their observations.
        y (array, default ``None``): more variables, stacked after ``m``'s.
        rowvar (bool, default ``True``): variables are rows (else columns).
        bias (bool, default ``False``): normalise by N instead of N - 1.
        ddof (int, default ``None``): overrides ``bias``.
        fweights, aweights: not supported (``NotImplementedError``).
        dtype (default ``None``): the computation dtype (at least float64).

    Example::

        >>> fnp.cov(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        array([[ 1., -1.],
               [-1.,  1.]])
    """
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov(..., fweights=/aweights=) is not supported")
    x = array_operand(m)
    if aval(x).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    yv = None if y is None else array_operand(y)
    if yv is not None and aval(yv).ndim > 2:
        raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(aval(x).dtype, np.float64) if yv is None else \
            np.result_type(aval(x).dtype, aval(yv).dtype, np.float64)
    X = asarray(_atleast_2d(operand(x)), dtype=dtype)
    if not rowvar and aval(operand(X)).shape[0] != 1:
        X = X.T
    if aval(operand(X)).shape[0] == 0:
        return np.array([]).reshape(0, 0)
    if yv is not None:
        Y = asarray(_atleast_2d(operand(yv)), dtype=dtype)
        if not rowvar and aval(operand(Y)).shape[0] != 1:
            Y = Y.T
        X = concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = aval(operand(X)).shape[1]
    fact = n - ddof
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    Xc = E.subtract(X, R.mean(X, axis=1, keepdims=True))
    c = dot(Xc, E.conjugate(Xc.T))
    with np.errstate(divide="ignore", invalid="ignore"):
        c = E.multiply(c, np.true_divide(1, fact))
    return squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """Pearson correlation coefficients: :func:`cov` normalised by the standard
    deviations, clipped to [-1, 1], as ``numpy.corrcoef``.

    Example::

        >>> fnp.corrcoef(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        array([[ 1., -1.],
               [-1.,  1.]])
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if aval(operand(c)).ndim == 0:
        return E.divide(c, c)
    d = diag(c)
    sd = E.sqrt(E.real(d))
    c = E.divide(E.divide(c, sd[:, None]), sd[None, :])
    if aval(operand(c)).dtype.kind == "c":
        re, im = E.clip(E.real(c), -1, 1), E.clip(E.imag(c), -1, 1)
        return to_result(complex_from_parts(operand(re), operand(im), aval(operand(c)).dtype))
    return E.clip(c, -1, 1)


# --- NaN-ignoring reductions ------------------------------------------------------------

def _nan_replaced(a, fill):
    x = array_operand(a)
    if dtype_kind(aval(x).dtype) not in "fc":
        return x, None
    nan = E.isnan(x)
    return E.where(nan, np.asarray(fill, aval(x).dtype), x), nan


@implements(np.nansum)
@autocast.float32_op
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.nansum``: :func:`sum` with NaN counted as 0.

    Example::

        >>> fnp.nansum(np.array([1.0, np.nan, 2.0]))
        3.0
    """
    return R.sum(_nan_replaced(a, 0)[0], axis, dtype, out, keepdims, initial, where)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.nanprod``: :func:`prod` with NaN counted as 1.

    Example::

        >>> fnp.nanprod(np.array([2.0, np.nan, 3.0]))
        6.0
    """
    return R.prod(_nan_replaced(a, 1)[0], axis, dtype, out, keepdims, initial, where)


def _nan_extreme(name, reduce, fill, a, axis, out, keepdims):
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    x, nan = _nan_replaced(a, fill)
    res = reduce(x, axis, keepdims=keepdims)
    if nan is None:
        return res
    all_nan = R.all(nan, axis, keepdims=keepdims)
    return E.where(all_nan, np.asarray(np.nan, aval(operand(res)).dtype), res)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    """``numpy.nanmax``: the largest non-NaN value over ``axis`` (NaN for an all-NaN
    slice).

    Example::

        >>> fnp.nanmax(np.array([1.0, np.nan, 2.0]))
        2.0
    """
    return _nan_extreme("nanmax", R.max, -np.inf, a, axis, out, keepdims)


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    """``numpy.nanmin``: the smallest non-NaN value over ``axis`` (NaN for an all-NaN
    slice).

    Example::

        >>> fnp.nanmin(np.array([1.0, np.nan, 2.0]))
        1.0
    """
    return _nan_extreme("nanmin", R.min, np.inf, a, axis, out, keepdims)


def _nan_count(nan, axis, keepdims):
    return R.sum(E.logical_not(nan), axis, dtype=np.int64, keepdims=keepdims)


@implements(np.nanmean)
@autocast.float32_op
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
    """``numpy.nanmean``: the mean of the non-NaN values over ``axis`` (NaN where there
    are none).

    Example::

        >>> fnp.nanmean(np.array([1.0, np.nan, 2.0]))
        1.5
    """
    x, nan = _nan_replaced(a, 0)
    if nan is None:
        return R.mean(x, axis, dtype, out, keepdims)
    tot = R.sum(x, axis, dtype, out, keepdims)
    cnt = _nan_count(nan, axis, keepdims)
    dt = aval(operand(tot)).dtype
    return to_result(operand(asarray(E.divide(tot, cnt), dtype=dt)), scalar=True)


def _nanvar(name, a, axis, dtype, out, ddof, keepdims):
    x, nan = _nan_replaced(a, 0)
    if nan is None:
        return None, x
    cnt = _nan_count(nan, axis, True)
    tot = R.sum(x, axis, dtype, keepdims=True)
    avg = asarray(E.divide(tot, cnt), dtype=aval(operand(tot)).dtype)
    d = E.where(nan, np.asarray(0, aval(x).dtype), E.subtract(x, avg))
    sq = E.real(E.multiply(d, E.conjugate(d))) if aval(x).dtype.kind == "c" else \
        E.multiply(d, d)
    var = R.sum(sq, axis, dtype, keepdims=keepdims)
    dof = E.subtract(_nan_count(nan, axis, keepdims), ddof)
    dt = aval(operand(var)).dtype
    var = E.where(E.less_equal(dof, 0), np.asarray(np.nan, dt), E.divide(var, dof))
    return asarray(var, dtype=dt), x


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
           mean=np._NoValue, correction=np._NoValue):
    """``numpy.nanvar``: :func:`var` of the non-NaN values (NaN where ``count <= ddof``).

    Example::

        >>> fnp.nanvar(np.array([1.0, np.nan, 3.0]))
        1.0
    """
    var, x = _nanvar("nanvar", a, axis, dtype, out, ddof, keepdims)
    if var is None:
        return R.var(x, axis, dtype, out, ddof, keepdims)
    return to_result(operand(var), scalar=True)


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
           mean=np._NoValue, correction=np._NoValue):
    """``numpy.nanstd``: the square root of :func:`nanvar`.

    Example::

        >>> fnp.nanstd(np.array([1.0, np.nan, 3.0]))
        1.0
    """
    var, x = _nanvar("nanstd", a, axis, dtype, out, ddof, keepdims)
    if var is None:
        return R.std(x, axis, dtype, out, ddof, keepdims)
    return E.sqrt(var)


def _nan_arg(name, arg, fill, a, axis, out, keepdims):
    x, nan = _nan_replaced(a, fill)
    if nan is not None and not is_tracer(nan) and np.any(R.all(nan, axis)):
        raise ValueError("All-NaN slice encountered")
    return arg(x, axis, out, keepdims=keepdims)


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    """``numpy.nanargmax``: the index of the largest non-NaN value. An all-NaN slice
    raises eagerly; under a trace it gives the index of its first element.

    Example::

        >>> fnp.nanargmax(np.array([1.0, np.nan, 2.0]))
        np.int64(2)
    """
    kd = False if keepdims is np._NoValue else keepdims
    return _nan_arg("nanargmax", R.argmax, -np.inf, a, axis, out, kd)


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    """``numpy.nanargmin``: the index of the smallest non-NaN value (all-NaN slices as
    :func:`nanargmax`).

    Example::

        >>> fnp.nanargmin(np.array([1.0, np.nan, 2.0]))
        np.int64(0)
    """
    kd = False if keepdims is np._NoValue else keepdims
    return _nan_arg("nanargmin", R.argmin, np.inf, a, axis, out, kd)


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    """``numpy.nancumsum``: :func:`cumsum` with NaN counted as 0.

    Example::

        >>> fnp.nancumsum(np.array([1.0, np.nan, 2.0]))
        array([1., 1., 3.])
    """
    return R.cumsum(_nan_replaced(a, 0)[0], axis, dtype, out)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    """``numpy.nancumprod``: :func:`cumprod` with NaN counted as 1.

    Example::

        >>> fnp.nancumprod(np.array([2.0, np.nan, 3.0]))
        array([2., 2., 6.])
    """
    return R.cumprod(_nan_replaced(a, 1)[0], axis, dtype, out)
