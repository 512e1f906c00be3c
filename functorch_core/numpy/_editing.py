"""``insert``, ``delete`` and ``resize`` with static positions: the result's layout is
NumPy's own, computed on index arrays, and the values are gathered from the (possibly
traced) operands."""

from __future__ import annotations

import math
import operator

import numpy as np

from . import _elementwise as E
from ._core import aval, implements, operand, to_result
from ._creation import array_operand, asarray, zeros
from ._indexing import take
from ._shape import reshape
from ._shape_base import ravel

__all__ = ["insert", "delete", "resize"]


def _static(name, obj):
    if isinstance(obj, slice):
        return obj
    o = operand(obj)
    if not isinstance(o, np.ndarray | int | bool):
        raise NotImplementedError(f"{name}: the positions (obj) must be static (concrete), "
                                  f"got a traced {aval(o)}: the result's shape depends on them")
    return obj


def _codes(x):
    """The flat index of every element of ``x``, shaped as ``x``."""
    return np.arange(aval(x).size, dtype=np.int64).reshape(aval(x).shape)


@implements(np.delete)
def delete(arr, obj, axis=None):
    """``arr`` without the sub-arrays at ``obj`` along ``axis``, as ``numpy.delete``.

    Args:
        arr: an array (flattened when ``axis`` is None).
        obj (int, slice, sequence of ints or boolean mask): the static positions removed.
        axis (int, default ``None``): the axis.

    Example::

        >>> fnp.delete(np.array([1.0, 2.0, 3.0, 4.0]), [0, 2])
        array([2., 4.])
    """
    x = array_operand(arr)
    kept = np.delete(_codes(x), _static("delete", obj), axis)
    return to_result(operand(reshape(take(ravel(x), kept.ravel()), kept.shape)))


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the positions ``obj`` along ``axis``, as
    ``numpy.insert`` (``values`` are cast to ``arr``'s dtype and may be traced).

    Args:
        arr: an array (flattened when ``axis`` is None).
        obj (int, slice or sequence of ints): the static positions.
        values: what is inserted, broadcast as NumPy does.
        axis (int, default ``None``): the axis.

    Example::

        >>> fnp.insert(np.array([1, 2, 3]), 1, [7, 8])
        array([1, 7, 8, 2, 3])
    """
    x = array_operand(arr)
    v = asarray(array_operand(values), dtype=aval(x).dtype)
    # the values' flat indices, encoded as negative numbers, go through NumPy's insert
    new = -1 - _codes(v)
    layout = np.insert(_codes(x), _static("insert", obj), new, axis)
    flat = layout.ravel()
    from_x = take(ravel(x), np.maximum(flat, 0)) if aval(x).size else None
    from_v = take(ravel(v), np.maximum(-1 - flat, 0)) if aval(v).size else None
    if from_x is None or from_v is None:
        out = from_x if from_v is None else from_v
        if out is None:
            return to_result(operand(zeros(layout.shape, aval(x).dtype)))
    else:
        out = E.where(flat >= 0, from_x, from_v)
    return to_result(operand(reshape(out, layout.shape)))


@implements(np.resize)
def resize(a, new_shape):
    """``a`` flattened, repeated cyclically to fill ``new_shape``, as ``numpy.resize``
    (zeros when ``a`` is empty).

    Example::

        >>> fnp.resize(np.array([1, 2, 3]), (2, 4))
        array([[1, 2, 3, 1],
               [2, 3, 1, 2]])
    """
    x = array_operand(a)
    shape = (new_shape,) if isinstance(new_shape, int | np.integer) else tuple(new_shape)
    shape = tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"resize: all elements of `new_shape` must be non-negative, got "
                         f"{shape}")
    n = math.prod(shape)
    if aval(x).size == 0 or n == 0:
        return to_result(operand(zeros(shape, aval(x).dtype)))
    idx = np.arange(n, dtype=np.int64) % aval(x).size
    return to_result(operand(reshape(take(ravel(x), idx), shape)))
