"""Histograms with a static number of bins: ``histogram``, ``histogram_bin_edges``.

The number of bins must be known while tracing (an int, or an array of edges); the
edges themselves may depend on traced values (the range defaults to the data's).
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import TracerError

from . import _elementwise as E
from ._core import aval, implements, is_tracer, operand, to_result
from ._creation import arange, array_operand, asarray, linspace
from ._math import diff, searchsorted
from ._reductions import max as max_
from ._reductions import min as min_
from ._reductions import sum as sum_
from ._shape import expand_dims
from ._shape_base import ravel

__all__ = ["histogram", "histogram_bin_edges"]


def _outer_edges(name, a, range):
    if range is not None:
        first, last = range
        for v in (first, last):
            if is_tracer(v):
                raise TracerError(f"{name}: range must be static (Python numbers), got {v}")
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif aval(a).size == 0:
        first, last = 0, 1
    else:
        first, last = min_(a), max_(a)
        if not is_tracer(first) and not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if is_tracer(first):
        same = E.equal(first, last)
        return E.where(same, E.subtract(first, 0.5), first), \
            E.where(same, E.add(last, 0.5), last)
    if first == last:
        return first - 0.5, last + 0.5
    return first, last


def _edges(name, a, bins, range):
    """The bin edges, and whether they are uniform (``bins`` an int)."""
    if isinstance(bins, str):
        if is_tracer(a):
            raise TracerError(f"{name}: bins={bins!r} chooses the number of bins from the "
                              "data, which is not known while tracing; pass an int")
        return None, False
    if aval(operand(bins)).ndim == 0:
        try:
            n = operator.index(bins)
        except TypeError:
            raise TypeError(f"{name}: `bins` must be an integer, a string, or an array, got "
                            f"{type(bins).__name__}") from None
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _outer_edges(name, a, range)
        bin_type = np.result_type(*(aval(operand(v)).dtype if is_tracer(v) else v
                                    for v in (first, last)), aval(a).dtype)
        if bin_type.kind in "biu":
            bin_type = np.dtype(np.float64)
        return operand(linspace(first, last, n + 1, endpoint=True, dtype=bin_type)), True
    edges = array_operand(bins)
    if aval(edges).ndim != 1:
        raise ValueError(f"{name}: `bins` must be 1d, when an array (got shape "
                         f"{aval(edges).shape})")
    if not is_tracer(edges) and np.any(np.asarray(edges)[:-1] > np.asarray(edges)[1:]):
        raise ValueError("`bins` must increase monotonically, when an array")
    return edges, False


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges of :func:`histogram`'s bins, as ``numpy.histogram_bin_edges``.

    Args:
        a: the data (flattened).
        bins (int or 1-d array, default ``10``): the number of equal-width bins, or the
            edges. String estimators (``'auto'``, ...) work on concrete data only.
        range ((float, float), default ``None``): the outer edges; ``None`` uses the
            data's minimum and maximum.
        weights: unused, as in NumPy.

    Example::

        >>> fnp.histogram_bin_edges(np.array([0.0, 1.0, 4.0]), bins=4)
        array([0., 1., 2., 3., 4.])
    """
    x = ravel(array_operand(a))
    edges, _ = _edges("histogram_bin_edges", x, bins, range)
    if edges is None:
        return np.histogram_bin_edges(np.asarray(x), bins, range, weights)
    return to_result(edges)


def _count_dtype(w, uniform):
    if w is None:
        return np.dtype(np.int64), np.dtype(np.int64)
    wdt = aval(w).dtype
    if uniform:    # NumPy sums in float64 (bincount) and casts to the weights' dtype
        return (np.dtype(np.complex128) if wdt.kind == "c" else np.dtype(np.float64)), wdt
    if wdt.kind == "b":
        raise TypeError("histogram: boolean weights with explicit bin edges are not "
                        "supported (NumPy cannot cast their int64 sums back to bool)")
    if wdt.kind in "iu":    # NumPy's cumulative sums of integer weights are int64
        return np.dtype(np.int64), wdt
    return wdt, wdt


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """Counts (or summed ``weights``) of ``a`` in each bin, and the bin edges, as
    ``numpy.histogram``: every bin but the last is half-open ``[lo, hi)``, the last is
    closed, and values outside the edges are not counted.

    Args:
        a: the data (flattened).
        bins (int or 1-d array, default ``10``): the number of equal-width bins (static),
            or the edges (may be traced).
        range ((float, float), default ``None``): the outer edges; ``None`` uses the
            data's minimum and maximum.
        density (bool, default ``None``): divide by the total and the bin widths, so the
            result integrates to 1.
        weights (array, default ``None``): one weight per element of ``a``.

    Returns:
        ``(hist, bin_edges)``.

    Example::

        >>> fnp.histogram(np.array([0.5, 1.5, 1.7, 3.0]), bins=3, range=(0, 3))
        (array([1, 2, 1]), array([0., 1., 2., 3.]))
    """
    x = ravel(array_operand(a))
    w = None
    if weights is not None:
        w = ravel(array_operand(weights))
        if aval(w).shape != aval(x).shape:
            raise ValueError(f"histogram: weights should have the same shape as a: "
                             f"{aval(array_operand(weights)).shape} and "
                             f"{aval(array_operand(a)).shape}")
    edges, uniform = _edges("histogram", x, bins, range)
    if edges is None:
        return np.histogram(np.asarray(x), bins, range, density,
                            None if w is None else np.asarray(w))
    nbins = aval(edges).shape[0] - 1
    idx = E.subtract(searchsorted(edges, x, side="right"), 1)
    # the last bin is closed: values equal to the last edge go in it
    idx = E.where(E.equal(x, edges[-1]), nbins - 1, idx)
    inside = E.logical_and(E.greater_equal(x, edges[0]), E.less_equal(x, edges[-1]))
    hit = E.logical_and(E.equal(expand_dims(idx, 1), arange(max(nbins, 0))),
                        expand_dims(inside, 1))
    acc, out_dt = _count_dtype(w, uniform)
    if w is None:
        n = sum_(hit, axis=0, dtype=np.int64)
    else:
        n = asarray(sum_(E.where(hit, expand_dims(asarray(w, dtype=acc), 1),
                                 np.zeros((), acc)), axis=0), dtype=out_dt)
    if density:
        width = asarray(diff(edges), dtype=np.float64)
        n = E.true_divide(E.true_divide(n, width), sum_(n))
    return to_result(operand(n)), to_result(edges)
