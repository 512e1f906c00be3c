"""Functions whose output shape depends on the data: ``nonzero``, ``argwhere``,
``flatnonzero``, ``unique``, ``trim_zeros``.

On concrete arrays they are NumPy's. On traced arrays the number of results is not
known while tracing, so, as in ``jax.numpy``, they take a static ``size=``: the
result has exactly ``size`` entries, cut when there are more and padded with
``fill_value`` when there are fewer.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import TracerError
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.source import user_code, user_source

from . import _elementwise as E
from ._core import aval, implements, is_tracer, operand, to_result
from ._creation import arange, array_operand, asarray, full
from ._indexing import take
from ._reductions import any as any_
from ._reductions import argmax, cumsum
from ._reductions import sum as sum_
from ._shape import concatenate, expand_dims, reshape, stack
from ._shape_base import ravel
from ._sorting import argsort

__all__ = ["nonzero", "argwhere", "flatnonzero", "unique", "trim_zeros"]


def _data_dependent(call, example):
    return TracerError(
        f"{call} of a traced array at {user_source()}{user_code()}: the output shape depends "
        "on the data, so it is not known while tracing. Pass a static size= to "
        f"functorch_core.numpy ({example}: exactly that many entries, padded with "
        "fill_value), or keep the shape with fnp.where(cond, x, y)")


def _size(size, call):
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{call}: size must be a static int, got {type(size).__name__}") \
            from None
    if size < 0:
        raise ValueError(f"{call}: size must be non-negative, got {size}")
    return size


def _kth_true(flags, size):
    """For the 1-d boolean ``flags``: the positions of its first ``size`` True entries
    (int64, shape ``(size,)``) and which of those exist."""
    n = aval(operand(flags)).shape[0]
    if n == 0:
        return (full((size,), 0, np.int64), full((size,), False))
    rank = E.subtract(cumsum(asarray(flags, dtype=np.int64)), 1)
    hit = E.logical_and(E.equal(expand_dims(rank, 0), expand_dims(arange(size), 1)),
                        expand_dims(flags, 0))
    return argmax(hit, axis=1), any_(hit, axis=1)


def _fill(valid, values, fill_value, dtype):
    return E.where(valid, values, asarray(np.asarray(fill_value).astype(dtype)))


@implements(np.nonzero)
def nonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of ``a``, one int64 array per axis, as
    ``numpy.nonzero``.

    Args:
        a: an array, at least 1-d.
        size (int, default ``None``): the static number of indices returned (required on
            traced arrays): the first ``size`` nonzero elements, in C order.
        fill_value (int or tuple of ints, default ``0``): the index padding the result
            where there are fewer than ``size`` nonzero elements; a tuple gives one per
            axis.

    Example::

        >>> fnp.nonzero(np.array([0, 3, 0, 5]), size=3)
        (array([1, 3, 0]),)
    """
    x = array_operand(a)
    if aval(x).ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "np.atleast_1d(scalar).nonzero() instead.")
    if size is None:
        if is_tracer(x):
            raise _data_dependent("nonzero", "fnp.nonzero(x, size=3)")
        return np.nonzero(np.asarray(x))
    size = _size(size, "nonzero")
    shape = aval(x).shape
    flat, valid = _kth_true(ravel(E.not_equal(x, 0)), size)
    fills = fill_value if isinstance(fill_value, tuple | list) else \
        (0 if fill_value is None else fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"nonzero: fill_value has {len(fills)} entries for an array of "
                         f"{len(shape)} dimensions (shape {shape})")
    out = []
    for i, (d, fill) in enumerate(zip(shape, fills, strict=True)):
        stride = max(int(np.prod(shape[i + 1:])), 1)
        coord = E.remainder(E.floor_divide(flat, stride), max(d, 1))
        out.append(to_result(operand(_fill(valid, coord, fill, np.int64))))
    return tuple(out)


@implements(np.argwhere)
def argwhere(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements, one row each (shape ``(N, a.ndim)``), as
    ``numpy.argwhere``.

    Args:
        a: an array.
        size (int, default ``None``): the static number of rows (required on traced
            arrays); see :func:`nonzero`.
        fill_value (int or tuple, default ``0``): the index padding missing rows.

    Example::

        >>> fnp.argwhere(np.array([[0, 2], [3, 0]]), size=2)
        array([[0, 1],
               [1, 0]])
    """
    x = array_operand(a)
    if size is None and is_tracer(x):
        raise _data_dependent("argwhere", "fnp.argwhere(x, size=3)")
    if size is None:
        return np.argwhere(np.asarray(x))
    if aval(x).ndim == 0:
        return to_result(operand(full((_size(size, "argwhere"), 0), 0, np.int64)))
    return to_result(operand(stack(nonzero(x, size=size, fill_value=fill_value), axis=-1)))


@implements(np.flatnonzero)
def flatnonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of ``a`` flattened, as ``numpy.flatnonzero``.

    Args:
        a: an array.
        size (int, default ``None``): the static number of indices (required on traced
            arrays); see :func:`nonzero`.
        fill_value (int, default ``0``): the index padding the result.

    Example::

        >>> fnp.flatnonzero(np.array([[0, 2], [3, 0]]), size=3, fill_value=-1)
        array([ 1,  2, -1])
    """
    x = array_operand(a)
    if size is None and is_tracer(x):
        raise _data_dependent("flatnonzero", "fnp.flatnonzero(x, size=3)")
    return nonzero(ravel(x), size=size, fill_value=fill_value)[0]


def _starts(s, equal_nan):
    """Where each run of equal values of the sorted 1-d ``s`` begins."""
    same = E.equal(s[1:], s[:-1])
    if equal_nan and dtype_kind(aval(operand(s)).dtype) in "fc":
        same = E.logical_or(same, E.logical_and(E.isnan(s[1:]), E.isnan(s[:-1])))
    return concatenate([np.ones(1, bool), E.logical_not(same)])


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True, size=None, fill_value=None):
    """The sorted distinct elements of ``ar`` (flattened), as ``numpy.unique``.

    Args:
        ar: an array.
        return_index (bool, default ``False``): also the index of each value's first
            occurrence in the flattened ``ar``.
        return_inverse (bool, default ``False``): also, for each element of ``ar``, the
            index of its value in the result (shaped as ``ar``).
        return_counts (bool, default ``False``): also how often each value occurs.
        axis (default ``None``): only ``None`` is supported on traced arrays.
        equal_nan (bool, default ``True``): count all NaNs as one value.
        sorted (bool, default ``True``): the result is always sorted.
        size (int, default ``None``): the static number of values returned (required on
            traced arrays): the ``size`` smallest, padded with ``fill_value``.
        fill_value (scalar, default the smallest value): pads the values; padded
            indices and counts are 0.

    Example::

        >>> fnp.unique(np.array([3, 1, 3, 2]), size=4, fill_value=0)
        array([1, 2, 3, 0])
    """
    x = array_operand(ar)
    if size is None:
        if is_tracer(x):
            raise _data_dependent("unique", "fnp.unique(x, size=3)")
        return np.unique(np.asarray(x), return_index, return_inverse, return_counts, axis,
                         equal_nan=equal_nan)
    if axis is not None:
        raise NotImplementedError("unique(..., size=...) supports axis=None only")
    size = _size(size, "unique")
    flat = ravel(x)
    n = aval(operand(flat)).shape[0]
    order = argsort(flat, kind="stable")
    s = take(flat, order)
    starts = _starts(s, equal_nan) if n else np.zeros(0, bool)
    first, valid = _kth_true(starts, size)
    dt = aval(operand(flat)).dtype
    if n == 0 and fill_value is None:
        raise ValueError("unique(..., size=...) of an empty array needs a fill_value")
    values = take(s, first) if n else full((size,), 0, dt)
    fill = s[0] if fill_value is None else np.asarray(fill_value).astype(dt)
    out = [to_result(operand(E.where(valid, values, fill)))]
    if return_index:
        out.append(to_result(operand(E.where(valid, take(order, first) if n else first, 0))))
    if return_inverse:
        group = E.subtract(cumsum(asarray(starts, dtype=np.int64)), 1)
        inverse = take(group, argsort(order)) if n else full((0,), 0, np.int64)
        out.append(to_result(operand(reshape(inverse, aval(x).shape))))
    if return_counts:
        counts = full((size,), 0, np.int64)
        if n:
            group = E.subtract(cumsum(asarray(starts, dtype=np.int64)), 1)
            counts = sum_(E.equal(expand_dims(group, 0), expand_dims(arange(size), 1)),
                          axis=1, dtype=np.int64)
        out.append(to_result(operand(counts)))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.trim_zeros)
def trim_zeros(filt, trim="fb", axis=None):
    """``numpy.trim_zeros`` of a concrete array: the result's length depends on the
    values, so a traced array is refused (``TracerError``).

    Example::

        >>> fnp.trim_zeros(np.array([0, 1, 2, 0]))
        array([1, 2])
    """
    x = operand(filt)
    if is_tracer(x):
        raise TracerError(
            f"trim_zeros of a traced array at {user_source()}{user_code()}: the result's "
            "length depends on the values, so it is not known while tracing. Keep the shape "
            "with a mask instead (fnp.where(x != 0, x, ...))")
    return np.trim_zeros(np.asarray(x), trim, axis)
