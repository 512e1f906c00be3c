"""Collectives over a named axis: the process axis ``"world"`` (MPI ranks) or a ``vmap``
axis that carries a name.

Each primitive names one axis (``axis_name``, a string); the API layer
(``functorch_core.lax.parallel``) splits a tuple of names into one equation per name. Those
that need the axis size for their shape carry it (``axis_size``), so the rules here never
consult the world or an enclosing ``vmap``. Under ``vmap(..., axis_name=n)`` the batching
pass rewrites an equation over ``n`` into array operations; what reaches a backend is a
collective over the process axis.
"""

from __future__ import annotations

import numpy as np

from ..catalogue import fail as _fail
from ..catalogue import kinds_check as _kinds_check
from ..catalogue import register as _register
from ..core import AbstractArray

__all__ = ["all_reduce", "all_gather", "reduce_scatter", "axis_index", "COLLECTIVES",
           "REDUCE_OPS"]

REDUCE_OPS = ("sum", "max", "min")
_KINDS = {"sum": "iufc", "max": "iuf", "min": "iuf"}


def _check_name(prim, axis_name):
    if not isinstance(axis_name, str) or not axis_name:
        _fail(f"{prim}: axis_name must be a non-empty string, got {axis_name!r}")


def _check_size(prim, axis_size):
    if isinstance(axis_size, bool) or not isinstance(axis_size, int | np.integer) \
            or axis_size < 1:
        _fail(f"{prim}: axis_size must be a positive int, got {axis_size!r}")


def _check_op(prim, op, x):
    if op not in REDUCE_OPS:
        _fail(f"{prim}: op must be one of {REDUCE_OPS}, got {op!r}")
    _kinds_check(f"{prim} (op={op!r})", [x], _KINDS[op])


def _all_reduce_rule(x, *, op, axis_name):
    """all_reduce(x): the elementwise ``op`` of ``x`` over every member of the axis."""
    _check_name("all_reduce", axis_name)
    _check_op("all_reduce", op, x)
    return [x.strong()]


def _all_gather_rule(x, *, axis_name, axis_size):
    """all_gather(x): every member's ``x`` stacked along a new leading axis, in order."""
    _check_name("all_gather", axis_name)
    _check_size("all_gather", axis_size)
    return [AbstractArray((int(axis_size), *x.shape), x.dtype)]


def _reduce_scatter_rule(x, *, op, axis_name, axis_size):
    """reduce_scatter(x): member ``i`` gets the ``op`` over the axis of ``x[i]`` (JAX's
    untiled ``psum_scatter``); the leading axis of ``x`` has the axis size."""
    _check_name("reduce_scatter", axis_name)
    _check_size("reduce_scatter", axis_size)
    _check_op("reduce_scatter", op, x)
    if x.ndim == 0 or x.shape[0] != axis_size:
        _fail(f"reduce_scatter over {axis_name!r}: the leading axis of the operand (shape "
              f"{x.shape}) must be the axis size {axis_size}")
    return [AbstractArray(x.shape[1:], x.dtype)]


def _axis_index_rule(*, axis_name, axis_size):
    """axis_index(): this member's position along the axis (int32)."""
    _check_name("axis_index", axis_name)
    _check_size("axis_index", axis_size)
    return [AbstractArray((), np.dtype(np.int32))]


all_reduce = _register("all_reduce", _all_reduce_rule, "collective")
all_gather = _register("all_gather", _all_gather_rule, "collective")
reduce_scatter = _register("reduce_scatter", _reduce_scatter_rule, "collective")
axis_index = _register("axis_index", _axis_index_rule, "collective")
COLLECTIVES = (all_reduce, all_gather, reduce_scatter, axis_index)
