"""Collectives over named axes, JAX's ``jax.lax`` parallel operators.

An axis name is bound by ``vmap(f, axis_name="i")`` for the examples of its batch, and
``"world"`` (``functorch_core.distributed.WORLD``) is always bound: the processes of the
MPI job (a world of one outside ``mpiexec``). So one function body, written with its axis
name as a parameter, runs vmapped on one machine or data-parallel over ranks. A tuple of
names acts over all of them at once, the first name the slowest-varying. On arrays over
``"world"`` the collectives run eagerly; inside ``jit``, ``grad``, ``jvp`` and ``vmap``
each is an equation with every rule (``functorch_core/transforms/collectives.py`` states
the differentiation convention: JAX's ``pmap`` one, ``grad`` of a psum'd loss on each
member is the derivative of the sum of the members' losses).

Every function takes a pytree of arrays (or Python scalars) and returns one of the same
structure. An unbound name raises ``NameError`` when the function is traced.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core import numpy as fnp
from functorch_core.ir import primitives as P
from functorch_core.ir.pytree import tree_map

from .._internal import axis_env
from ..numpy.internal import aval, operand, to_result

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index"]


def _names(axis_name, call) -> tuple[tuple[str, int], ...]:
    """``((name, size), ...)`` of a name or a tuple of names, each looked up."""
    names = tuple(axis_name) if isinstance(axis_name, tuple | list) else (axis_name,)
    if not names:
        raise ValueError(f"{call}: axis_name is an empty tuple; give at least one name")
    if len(set(names)) != len(names):
        raise ValueError(f"{call}: axis_name {axis_name!r} names an axis twice")
    return tuple((n, axis_env.axis_size(n, call)) for n in names)


def _call(fn, axis_name):
    return f"{fn}(x, axis_name={axis_name!r})"


def _reduce(op, x, axis_name, fn):
    axes = _names(axis_name, _call(fn, axis_name))

    def one(leaf):
        y = operand(leaf)
        for name, _ in axes:
            y = P.all_reduce.bind(y, op=op, axis_name=name)
        return to_result(y)
    return tree_map(one, x)


def psum(x, axis_name):
    """Sum ``x`` over the members of the named axis (every member gets the sum).

    Args:
        x: an array, Python scalar or pytree of them.
        axis_name (str or tuple of str): the axis (``vmap``'s ``axis_name``, or
            ``"world"`` for the processes); a tuple sums over all of them.

    Returns:
        The sum, with ``x``'s structure, shapes and dtypes. Under ``vmap`` over the axis it
        is the same for every example. ``psum(1, name)`` is the axis size.

    Example::

        >>> fc.vmap(lambda x: fc.lax.psum(x, "i"), axis_name="i")(np.arange(3.0))
        array([3., 3., 3.])
    """
    return _reduce("sum", x, axis_name, "psum")


def _extreme(op, word, example):
    def reduce(x, axis_name):
        return _reduce(op, x, axis_name, f"p{op}")
    reduce.__name__ = reduce.__qualname__ = f"p{op}"
    reduce.__doc__ = f"""The elementwise {word} of ``x`` over the members of the named axis.

    Args:
        x: a real array or pytree of them.
        axis_name (str or tuple of str): the axis (see :func:`psum`).

    Returns:
        The {word}, with ``x``'s structure. Its derivative is the tangent of the member
        holding the {word}; tied members' tangents are averaged.

    Example::

        >>> fc.vmap(lambda x: fc.lax.p{op}(x, "i"), axis_name="i")(np.array([1.0, 5.0, 2.0]))
        array([{example}, {example}, {example}])
    """
    return reduce


pmax = _extreme("max", "maximum", "5.")
pmin = _extreme("min", "minimum", "1.")


def pmean(x, axis_name):
    """The mean of ``x`` over the members of the named axis: ``psum(x) / size``.

    Args:
        x: an array or pytree of them; integer and bool arrays give float64 means (NumPy's
            true division).
        axis_name (str or tuple of str): the axis (see :func:`psum`).

    Returns:
        The mean, with ``x``'s structure.

    Example::

        >>> fc.vmap(lambda x: fc.lax.pmean(x, "i"), axis_name="i")(np.array([1.0, 5.0]))
        array([3., 3.])
    """
    axes = _names(axis_name, _call("pmean", axis_name))
    size = math.prod(s for _, s in axes)
    total = _reduce("sum", x, axis_name, "pmean")
    return tree_map(lambda t: fnp.true_divide(t, size), total)


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every member's ``x``, stacked in member order along a new axis (JAX's semantics).

    Args:
        x: an array or pytree of them.
        axis_name (str or tuple of str): the axis (see :func:`psum`); for a tuple the
            members are ordered with the first name slowest.
        axis (int, default ``0``): where the new axis goes in the result.
        tiled (bool, default ``False``): concatenate along ``axis`` instead of stacking.

    Returns:
        An array of shape ``x.shape`` with the axis size inserted at ``axis`` (tiled:
        ``x.shape[axis]`` multiplied by it). Its transpose is :func:`psum_scatter`.

    Example::

        >>> fc.vmap(lambda x: fc.lax.all_gather(x, "i"), axis_name="i")(np.arange(2.0))
        array([[0., 1.],
               [0., 1.]])
    """
    call = _call("all_gather", axis_name)
    axes = _names(axis_name, call)

    def one(leaf):
        y = operand(leaf)
        shape = aval(y).shape
        ndim = len(shape)
        lo, hi = (-ndim, ndim - 1) if tiled else (-ndim - 1, ndim)
        if tiled and ndim == 0:
            raise ValueError(f"{call}: tiled=True needs an operand of rank >= 1, got a scalar")
        if not lo <= axis <= hi:
            raise ValueError(f"{call}: axis={axis} is out of range [{lo}, {hi}] for an "
                             f"operand of shape {shape}")
        for name, size in reversed(axes):
            y = P.all_gather.bind(y, axis_name=name, axis_size=size)
        y = fnp.reshape(y, (math.prod(s for _, s in axes), *shape))
        if not tiled:
            return to_result(fnp.moveaxis(y, 0, axis % (ndim + 1)))
        k = axis % ndim
        y = fnp.moveaxis(y, 0, k)
        merged = (*shape[:k], aval(y).shape[k] * shape[k], *shape[k + 1:])
        return to_result(fnp.reshape(y, merged))
    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """Sum ``x`` over the named axis and give member ``i`` the ``i``-th slice of the sum.

    Args:
        x: an array or pytree of them whose ``scatter_dimension`` has the axis size (or,
            tiled, a multiple of it).
        axis_name (str or tuple of str): the axis (see :func:`psum`; a tuple orders the
            members with the first name slowest).
        scatter_dimension (int, default ``0``): the dimension split among the members.
        tiled (bool, default ``False``): keep the dimension (of length ``n / size``)
            instead of removing it.

    Returns:
        This member's part of the sum. Its transpose is :func:`all_gather`.

    Example::

        >>> fc.vmap(lambda x: fc.lax.psum_scatter(x, "i"), axis_name="i")(np.ones((2, 2)))
        array([2., 2.])
    """
    call = _call("psum_scatter", axis_name)
    axes = _names(axis_name, call)
    total = math.prod(s for _, s in axes)

    def one(leaf):
        y = operand(leaf)
        shape = aval(y).shape
        if not -len(shape) <= scatter_dimension < len(shape):
            raise ValueError(f"{call}: scatter_dimension={scatter_dimension} is out of range "
                             f"for an operand of shape {shape}")
        k = scatter_dimension % len(shape)
        n = shape[k]
        if (n % total if tiled else n != total):
            raise ValueError(f"{call}: dimension {k} of the operand (shape {shape}) must be "
                             f"{'a multiple of ' if tiled else ''}the axis size {total}")
        y = fnp.moveaxis(y, k, 0)
        rest = tuple(s for i, s in enumerate(shape) if i != k)
        y = fnp.reshape(y, (*(s for _, s in axes), *((n // total,) if tiled else ()), *rest))
        for name, size in axes:
            y = P.reduce_scatter.bind(y, op="sum", axis_name=name, axis_size=size)
        return to_result(fnp.moveaxis(y, 0, k) if tiled else y)
    return tree_map(one, x)


def axis_index(axis_name):
    """This member's position along the named axis (an int32 scalar).

    Args:
        axis_name (str or tuple of str): the axis (see :func:`psum`); for a tuple the
            position in the flattened order, the first name slowest.

    Returns:
        ``0 <= index < size``: the example's position under ``vmap``, the rank over
        ``"world"``.

    Example::

        >>> fc.vmap(lambda x: x * fc.lax.axis_index("i"), axis_name="i")(np.ones(3))
        array([0., 1., 2.])
    """
    axes = _names(axis_name, f"axis_index(axis_name={axis_name!r})")
    index = None
    for name, size in axes:
        i = P.axis_index.bind(axis_name=name, axis_size=size)
        index = i if index is None else P.add.bind(
            P.mul.bind(index, np.int32(size)), i)
    return to_result(index, scalar=True)
