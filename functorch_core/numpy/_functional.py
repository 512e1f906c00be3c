"""Functions that call user functions: ``piecewise`` and ``apply_along_axis``."""

from __future__ import annotations

import math

import numpy as np

from . import _elementwise as E
from ._core import aval, implements, normalize_axis, operand, to_result
from ._creation import array_operand, asarray, zeros_like
from ._reductions import any as any_
from ._shape import broadcast_view, moveaxis, reshape, stack

__all__ = ["piecewise", "apply_along_axis"]


def _conditions(condlist, x_ndim):
    """NumPy's reading of ``condlist``: one condition unless it is a sequence whose first
    entry is an array (or ``x`` is 0-d)."""
    if isinstance(condlist, list | tuple):
        first_is_array = bool(condlist) and (isinstance(condlist[0], list | tuple)
                                             or aval(operand(condlist[0])).ndim > 0)
        return list(condlist) if first_is_array or not x_ndim else [condlist]
    nd = aval(operand(condlist)).ndim
    if nd == 0 or (nd < 2 and x_ndim):
        return [condlist]
    return [condlist[i] for i in range(aval(operand(condlist)).shape[0])]


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i]`` where ``condlist[i]`` holds (later conditions win), as
    ``numpy.piecewise``; the result has ``x``'s dtype and is 0 where no condition holds.

    Each function is called on the whole of ``x`` (NumPy calls it on ``x[cond]``) and its
    values are selected with ``where``: the same result for elementwise functions, which
    are what ``piecewise`` is for.

    Args:
        x: the input array.
        condlist (bool array or list of them): the conditions, shaped as ``x``.
        funclist (list): one function (or constant) per condition, plus optionally one more
            used where no condition holds.
        *args, **kw: passed to each function.

    Example::

        >>> fnp.piecewise(np.array([-1.0, 0.5, 2.0]), [np.array([True, False, False])],
        ...               [lambda v: -v, lambda v: v * 10])
        array([ 1.,  5., 20.])
    """
    xv = array_operand(x)
    conds = _conditions(condlist, aval(xv).ndim)
    conds = [broadcast_view(asarray(c, dtype=bool), aval(xv).shape) for c in conds]
    n, funcs = len(conds), list(funclist)
    if len(funcs) == n + 1:
        conds.append(E.logical_not(any_(stack(conds), axis=0)) if n else
                     np.ones(aval(xv).shape, bool))
    elif len(funcs) != n:
        raise ValueError(f"piecewise: with {n} condition(s), either {n} or {n + 1} functions "
                         f"are expected, got {len(funcs)}")
    dt = aval(xv).dtype
    y = zeros_like(xv)
    for cond, func in zip(conds, funcs, strict=True):
        value = func(xv, *args, **kw) if callable(func) else func
        y = E.where(cond, asarray(value, dtype=dt), y)
    return to_result(operand(y))


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to every 1-d slice of ``arr`` along ``axis``, as
    ``numpy.apply_along_axis``: the result's axes at ``axis`` are those of ``func1d``'s
    result (one call per slice, traced one after the other).

    Args:
        func1d (callable): takes a 1-d array, returns an array (all results of one shape).
        axis (int): the axis sliced along.
        arr: the input array.
        *args, **kwargs: passed to ``func1d``.

    Example::

        >>> fnp.apply_along_axis(lambda v: v[::-1] * 2, 1, np.array([[1, 2], [3, 4]]))
        array([[4, 2],
               [8, 6]])
    """
    x = array_operand(arr)
    nd = aval(x).ndim
    ax = normalize_axis(axis, nd)
    shape = aval(x).shape
    outer = shape[:ax] + shape[ax + 1:]
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    rows = reshape(moveaxis(x, ax, -1), (math.prod(outer), shape[ax]))
    results = [array_operand(func1d(rows[i], *args, **kwargs)) for i in range(len(rows))]
    dt = aval(results[0]).dtype
    res = stack([asarray(r, dtype=dt) for r in results])
    rshape = aval(operand(res)).shape[1:]
    res = reshape(res, outer + rshape)
    for i in range(len(rshape)):    # the result's axes go where ``axis`` was
        res = moveaxis(res, len(outer) + i, ax + i)
    return to_result(operand(res))
