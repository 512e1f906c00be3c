"""More of NumPy's array arrangement, built from the shape functions: ``flipud``,
``fliplr``, ``rot90``, ``rollaxis``, ``atleast_3d``, ``vsplit``/``hsplit``/``dsplit``,
``column_stack``, ``append``, ``meshgrid``, ``partition``/``argpartition``.

Each is a composition of traced functions, so derivatives and batching come from theirs.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import primitives as P

from ._core import aval, implements, normalize_axis, operand, to_result
from ._creation import arange, array, linspace
from ._info import result_type
from ._shape import (
    _atleast_2d,
    broadcast_view,
    concatenate,
    flip,
    ravel,
    reshape,
    split,
    transpose,
)
from ._sorting import argsort, sort

__all__ = ["flipud", "fliplr", "rot90", "rollaxis", "atleast_3d", "vsplit", "hsplit",
           "dsplit", "column_stack", "append", "meshgrid", "partition", "argpartition"]


def _at_least(name, x, n):
    if aval(x).ndim < n:
        raise ValueError(f"{name}: the input must be at least {n}-d, got shape {aval(x).shape}")


@implements(np.flipud)
def flipud(m):
    """Reverse the order of the rows (axis 0) of ``m``, at least 1-d.

    Example::

        >>> fnp.flipud(np.array([1, 2, 3]))
        array([3, 2, 1])
    """
    x = operand(m)
    _at_least("flipud", x, 1)
    return flip(x, 0)


@implements(np.fliplr)
def fliplr(m):
    """Reverse the order of the columns (axis 1) of ``m``, at least 2-d.

    Example::

        >>> fnp.fliplr(np.eye(2))
        array([[0., 1.],
               [1., 0.]])
    """
    x = operand(m)
    _at_least("fliplr", x, 2)
    return flip(x, 1)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """Rotate ``m`` by 90 degrees ``k`` times in the plane of ``axes`` (from the first
    axis towards the second), as ``numpy.rot90``.

    Args:
        m: an array of at least 2 dimensions.
        k (int, default ``1``): the number of quarter turns (negative: clockwise).
        axes (pair of ints, default ``(0, 1)``): the plane.

    Example::

        >>> fnp.rot90(np.array([[1, 2], [3, 4]]))
        array([[2, 4],
               [1, 3]])
    """
    x = operand(m)
    axes = tuple(axes)
    nd = aval(x).ndim
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes={axes}")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError(f"rot90: axes {axes} must be different for an array of shape "
                         f"{aval(x).shape}")
    if not (-nd <= axes[0] < nd and -nd <= axes[1] < nd):
        raise ValueError(f"rot90: axes {axes} out of range for an array of {nd} dimensions")
    k = operator.index(k) % 4
    if k == 0:
        return x[:]
    if k == 2:
        return flip(flip(x, axes[0]), axes[1])
    perm = list(range(nd))
    a0, a1 = axes[0] % nd, axes[1] % nd
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(x, axes[1]), perm)
    return flip(transpose(x, perm), axes[1])


@implements(np.rollaxis)
def rollaxis(a, axis, start=0):
    """Move ``axis`` to the position before ``start`` (older spelling of ``moveaxis``).

    Args:
        a: an array.
        axis (int): the axis to move.
        start (int, default ``0``): it goes before the axis now at ``start``.

    Example::

        >>> fnp.rollaxis(np.ones((3, 4, 5)), 2).shape
        (5, 3, 4)
    """
    x = operand(a)
    n = aval(x).ndim
    axis = normalize_axis(axis, n)
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"rollaxis: 'start' arg requires {-n} <= start < "
                                      f"{n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return x[...]
    perm = list(range(n))
    perm.remove(axis)
    perm.insert(start, axis)
    return transpose(x, perm)


def _atleast_3d(x):
    nd = aval(x).ndim
    s = aval(x).shape
    new = {0: (1, 1, 1), 1: (1, *s, 1), 2: (*s, 1)}.get(nd)
    return x if new is None else P.reshape.bind(x, new_sizes=new)


@implements(np.atleast_3d)
def atleast_3d(*arys):
    """``numpy.atleast_3d``: ``(N,)`` becomes ``(1, N, 1)``, ``(M, N)`` becomes
    ``(M, N, 1)``; one array, or a tuple of them for several arguments.

    Example::

        >>> fnp.atleast_3d(np.ones(4)).shape
        (1, 4, 1)
    """
    res = [to_result(_atleast_3d(operand(a))) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def _split_along(name, ary, indices_or_sections, axis, at_least):
    x = operand(ary)
    _at_least(name, x, at_least)
    return split(x, indices_or_sections, axis)


@implements(np.vsplit)
def vsplit(ary, indices_or_sections):
    """``split`` along axis 0 (the array must be at least 2-d).

    Example::

        >>> [p.shape for p in fnp.vsplit(np.ones((4, 2)), 2)]
        [(2, 2), (2, 2)]
    """
    return _split_along("vsplit", ary, indices_or_sections, 0, 2)


@implements(np.hsplit)
def hsplit(ary, indices_or_sections):
    """``split`` along axis 1 (axis 0 for a 1-d array).

    Example::

        >>> [p.shape for p in fnp.hsplit(np.ones((2, 4)), [1])]
        [(2, 1), (2, 3)]
    """
    x = operand(ary)
    _at_least("hsplit", x, 1)
    return split(x, indices_or_sections, 1 if aval(x).ndim > 1 else 0)


@implements(np.dsplit)
def dsplit(ary, indices_or_sections):
    """``split`` along axis 2 (the array must be at least 3-d).

    Example::

        >>> len(fnp.dsplit(np.ones((1, 1, 4)), 4))
        4
    """
    return _split_along("dsplit", ary, indices_or_sections, 2, 3)


@implements(np.column_stack)
def column_stack(tup):
    """Stack 1-d arrays as columns of a 2-d array (2-d arrays as they are), along axis 1.

    Example::

        >>> fnp.column_stack([np.array([1, 2]), np.array([3, 4])])
        array([[1, 3],
               [2, 4]])
    """
    arrs = []
    for a in tup:
        x = operand(a)
        if aval(x).ndim < 2:
            x = P.transpose.bind(_atleast_2d(x), permutation=(1, 0))
        arrs.append(x)
    return concatenate(arrs, axis=1)


@implements(np.append)
def append(arr, values, axis=None):
    """``values`` appended to ``arr``: both flattened when ``axis`` is None, else
    concatenated along ``axis`` (shapes must match elsewhere).

    Args:
        arr: an array.
        values: what to append.
        axis (int, default ``None``): the axis, or None to flatten both first.

    Example::

        >>> fnp.append(np.array([1, 2]), [[3], [4]])
        array([1, 2, 3, 4])
    """
    x = operand(arr)
    if axis is None:
        if aval(x).ndim != 1:
            x = ravel(x)
        return concatenate([x, ravel(operand(values))], axis=0)
    return concatenate([x, operand(values)], axis=axis)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-d coordinate vectors, as ``numpy.meshgrid``.

    Args:
        *xi: the coordinate vectors (flattened if not 1-d).
        copy (bool, default ``True``): ignored (results are new arrays or traced values).
        sparse (bool, default ``False``): return broadcastable arrays instead of full ones.
        indexing (str, default ``'xy'``): ``'xy'`` (Cartesian: the first two outputs'
            axes swapped) or ``'ij'`` (matrix).

    Example::

        >>> [g.shape for g in fnp.meshgrid(np.arange(3), np.arange(2))]
        [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: valid values for `indexing` are 'xy' and 'ij'")
    n = len(xi)
    out = []
    for i, x in enumerate(xi):
        shape = [1] * n
        shape[i] = -1
        if indexing == "xy" and n > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        out.append(reshape(operand(x), tuple(shape)))
    if not sparse:
        full = np.broadcast_shapes(*(aval(operand(o)).shape for o in out))
        out = [broadcast_view(o, full) for o in out]
        out = [o.copy() if isinstance(o, np.ndarray) else o for o in out]
    return tuple(out)


def _kth(name, x, kth, axis):
    nd = aval(x).ndim
    if axis is None:
        x, ax = ravel(x), 0
    else:
        ax = normalize_axis(axis, nd)
    n = aval(operand(x)).shape[ax]
    for k in np.atleast_1d(np.asarray(kth)).ravel():
        k = operator.index(k)
        if not -n <= k < n:
            raise ValueError(f"{name}: kth(={k}) out of bounds for an axis of length {n}")
    return x, ax


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``numpy.partition``: the ``kth`` element (each, for a sequence) in its sorted place,
    no larger ones before it and no smaller ones after.

    NumPy leaves the order within each side unspecified; this returns the sorted array,
    which satisfies the contract for every ``kth`` at once (and is differentiable, with
    the derivative of ``sort``).

    Args:
        a: an array.
        kth (int or sequence of ints): the position(s) to place.
        axis (int or None, default ``-1``): the axis; None flattens first.
        kind, order: NumPy's; ``order`` (structured arrays) is not supported.

    Example::

        >>> fnp.partition(np.array([3, 1, 2]), 1)[1]
        2
    """
    x, ax = _kth("partition", operand(a), kth, axis)
    return sort(x, axis=ax, order=order)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """``numpy.argpartition``: indices that :func:`partition` ``a`` (here, a stable
    ``argsort``, which satisfies NumPy's contract for every ``kth``).

    Example::

        >>> fnp.argpartition(np.array([3, 1, 2]), 0)[0]
        1
    """
    x, ax = _kth("argpartition", operand(a), kth, axis)
    return argsort(x, axis=ax, kind="stable", order=order)


class _AxisConcatenator:
    """``fnp.r_`` and ``fnp.c_``: NumPy's index tricks for tracers.

    NumPy's own ``np.r_``/``np.c_`` convert every entry with ``np.array``, which does not
    dispatch, so they cannot take traced arrays; these follow the same rules (slices as
    ``arange``/``linspace`` with static bounds, scalars, arrays, and a leading
    ``'axis,ndmin,trans1d'`` directive) over traced values. The matrix directives
    ``'r'``/``'c'`` are not supported.
    """

    def __init__(self, name, axis=0, ndmin=1, trans1d=-1):
        self._name, self._axis, self._ndmin, self._trans1d = name, axis, ndmin, trans1d

    def __repr__(self):
        return f"fnp.{self._name}"

    def __len__(self):
        return 0

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self._axis, self._ndmin, self._trans1d
        objs, types = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError(f"{self._name}: special directives must be the first "
                                     f"entry, got {item!r} at {k}")
                try:
                    vec = [int(v) for v in item.split(",")]
                except ValueError:
                    raise ValueError(f"{self._name}: unknown special directive {item!r} (the "
                                     "matrix directives 'r' and 'c' are not supported)") \
                        from None
                axis, ndmin, trans1d = (vec + [ndmin, trans1d][len(vec) - 1:])[:3]
                continue
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, complex | np.complexfloating):
                    obj = linspace(start, item.stop, num=int(abs(step)))
                else:
                    obj = arange(start, item.stop, step)
                obj = array(obj, ndmin=ndmin)
                if ndmin > 1 and trans1d != -1:
                    obj = obj.swapaxes(-1, trans1d)
                types.append(aval(operand(obj)).dtype)
            elif isinstance(item, bool | int | float | complex | np.generic):
                obj = item
                types.append(item)
            else:
                item_ndim = aval(operand(item)).ndim
                obj = array(item, copy=None, ndmin=ndmin)
                if trans1d != -1 and item_ndim < ndmin:
                    k2, k1 = ndmin - item_ndim, trans1d
                    if k1 < 0:
                        k1 += k2 + 1
                    d = list(range(ndmin))
                    obj = transpose(obj, d[:k1] + d[k2:] + d[k1:k2])
                types.append(aval(operand(obj)).dtype)
            objs.append(obj)
        if types:
            dt = result_type(*types)
            objs = [array(o, copy=None, ndmin=ndmin, dtype=dt) for o in objs]
        return concatenate(tuple(objs), axis=axis)


r_ = _AxisConcatenator("r_")
c_ = _AxisConcatenator("c_", axis=-1, ndmin=2, trans1d=0)
__all__ += ["r_", "c_"]
