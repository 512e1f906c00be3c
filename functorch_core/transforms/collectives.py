"""Rules of the collectives (``ir/primitives/collectives.py``): jvp, transpose, batching.

Differentiation across the axis follows JAX's ``pmap``: the function being differentiated
is the sum over the axis's members of each member's output, so a member's cotangent seed
is its share of that sum. ``all_reduce(sum)`` is linear and is its own transpose (the
cotangent of member ``k``'s operand is the sum over members of their cotangents), the
transposes of ``all_gather`` and ``reduce_scatter(sum)`` are each other. ``grad`` of
``f(x) = psum(x ** 2)`` on every member is ``2 x`` times the axis size: the derivative
of the global objective ``sum_r f_r``. ``max``/``min``: the tangent is that of the member
holding the extreme; on ties the tied members' tangents are averaged (as ``reduce_max``
splits a tie evenly).

Batching: ``NAMED_RULES`` rewrite a collective over the axis being vmapped into array
operations along the batch axis (``psum`` sums the examples, its result is the same for
every example: unbatched, broadcast at the output as JAX does; ``all_gather`` stacks
them; ``axis_index`` is an iota); ``BATCH_RULES`` carry a batched operand through a
collective over another axis.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import Lit, Primitive
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import Table

from .batching import BatchRule, add_batch_dim, moveaxis
from .jvp import JvpRule, Zero, instantiate, is_zero, tangent_aval, zero_rule
from .transpose import TransposeRule, is_linear

JVP_RULES: Table[Primitive, JvpRule] = Table("collectives.py: jvp")
TRANSPOSE_RULES: Table[Primitive, TransposeRule] = Table("collectives.py: transpose")
BATCH_RULES: Table[Primitive, BatchRule] = Table("collectives.py: batching")
NAMED_RULES: Table[Primitive, BatchRule] = Table("collectives.py: named-axis batching")
NOT_BATCHED_REASONS: Table[Primitive, str] = Table("collectives.py: not batched")
NOT_BATCHED_REASONS.register(
    P.axis_index, "axis_index has no operands: replayed as is, except under a vmap of its "
                  "axis, whose named rule makes it an iota along the batch")

_REDUCE = {"sum": P.reduce_sum, "max": P.reduce_max, "min": P.reduce_min}


def _psum(x, axis_name):
    return P.all_reduce.bind(x, op="sum", axis_name=axis_name)


def _masked_tangent(x, extreme, t, reduce):
    """The tangent of the member(s) whose ``x`` equals ``extreme``, averaged over ties:
    ``reduce(where(x == extreme, t, 0)) / reduce(x == extreme)``."""
    mask = P.eq.bind(x, extreme)
    count = reduce(P.convert.bind(mask, new_dtype=t.aval.dtype))
    picked = reduce(P.select.bind(mask, t, P.broadcast_in_dim.bind(
        Lit(np.zeros((), t.aval.dtype)), shape=t.aval.shape, broadcast_dimensions=())))
    return P.div.bind(picked, count)


# --- jvp ------------------------------------------------------------------------------

def _all_reduce_jvp(primals, tangents, *, op, axis_name):
    (x,), (t,) = primals, tangents
    y = P.all_reduce.bind(x, op=op, axis_name=axis_name)
    if is_zero(t):
        return y, Zero(tangent_aval(y.aval))
    if op == "sum":
        return y, _psum(t, axis_name)
    return y, _masked_tangent(x, y, t, lambda v: _psum(v, axis_name))


def _all_gather_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    y = P.all_gather.bind(x, **params)
    return y, Zero(tangent_aval(y.aval)) if is_zero(t) else P.all_gather.bind(t, **params)


def _reduce_scatter_jvp(primals, tangents, *, op, axis_name, axis_size):
    (x,), (t,) = primals, tangents
    params = dict(axis_name=axis_name, axis_size=axis_size)
    y = P.reduce_scatter.bind(x, op=op, **params)
    if is_zero(t):
        return y, Zero(tangent_aval(y.aval))
    if op == "sum":
        return y, P.reduce_scatter.bind(t, op="sum", **params)
    every = P.all_gather.bind(y, **params)      # every member's extreme, in member order
    return y, _masked_tangent(x, every, t,
                              lambda v: P.reduce_scatter.bind(v, op="sum", **params))


JVP_RULES.register(P.all_reduce, _all_reduce_jvp)
JVP_RULES.register(P.all_gather, _all_gather_jvp)
JVP_RULES.register(P.reduce_scatter, _reduce_scatter_jvp)
JVP_RULES.register(P.axis_index, zero_rule(P.axis_index))


# --- transpose ------------------------------------------------------------------------

def _only_sum(prim, op):
    if op != "sum":
        raise NotImplementedError(f"transpose: {prim} with op={op!r} is not linear (its jvp "
                                  "applies op='sum' to tangents)")


def _all_reduce_t(ct, x, *, op, axis_name):
    _only_sum("all_reduce", op)
    return [_psum(instantiate(ct), axis_name) if is_linear(x) else None]


def _all_gather_t(ct, x, *, axis_name, axis_size):
    return [P.reduce_scatter.bind(instantiate(ct), op="sum", axis_name=axis_name,
                                  axis_size=axis_size) if is_linear(x) else None]


def _reduce_scatter_t(ct, x, *, op, axis_name, axis_size):
    _only_sum("reduce_scatter", op)
    return [P.all_gather.bind(instantiate(ct), axis_name=axis_name, axis_size=axis_size)
            if is_linear(x) else None]


TRANSPOSE_RULES.register(P.all_reduce, _all_reduce_t)
TRANSPOSE_RULES.register(P.all_gather, _all_gather_t)
TRANSPOSE_RULES.register(P.reduce_scatter, _reduce_scatter_t)


# --- batching over another axis (or an unnamed vmap) ----------------------------------

def _all_reduce_batch(args, dims, **params):
    (x,), (d,) = args, dims
    return [P.all_reduce.bind(x, **params)], [d]


def _all_gather_batch(args, dims, **params):
    (x,), (d,) = args, dims
    return [P.all_gather.bind(x, **params)], [d + 1]


def _reduce_scatter_batch(args, dims, **params):
    (x,), (d,) = args, dims
    return [P.reduce_scatter.bind(moveaxis(x, d, 1), **params)], [0]


BATCH_RULES.register(P.all_reduce, _all_reduce_batch)
BATCH_RULES.register(P.all_gather, _all_gather_batch)
BATCH_RULES.register(P.reduce_scatter, _reduce_scatter_batch)


# --- batching over the named axis itself: the collective becomes array operations -----

def _times(x, n):
    return P.mul.bind(x, Lit(np.asarray(n, x.aval.dtype)))


def _all_reduce_named(args, dims, size, *, op, axis_name):
    (x,), (d,) = args, dims
    if d is None:       # the same value on every member: the sum of size copies
        return [_times(x, size) if op == "sum" else x], [None]
    return [_REDUCE[op].bind(x, axes=(d,))], [None]


def _all_gather_named(args, dims, size, *, axis_name, axis_size):
    (x,), (d,) = args, dims
    return [add_batch_dim(x, size, 0) if d is None else moveaxis(x, d, 0)], [None]


def _reduce_scatter_named(args, dims, size, *, op, axis_name, axis_size):
    # member i gets op over members j of x_j[i]: reduce the batch axis; the operand's
    # leading axis (one row per member) becomes the result's batch axis
    (x,), (d,) = args, dims
    if d is None:
        return [_times(x, size) if op == "sum" else x], [0]
    return [_REDUCE[op].bind(x, axes=(d,))], [0]


def _axis_index_named(args, dims, size, *, axis_name, axis_size):
    return [P.iota.bind(dtype=np.dtype(np.int32), shape=(size,), dimension=0)], [0]


NAMED_RULES.register(P.all_reduce, _all_reduce_named)
NAMED_RULES.register(P.all_gather, _all_gather_named)
NAMED_RULES.register(P.reduce_scatter, _reduce_scatter_named)
NAMED_RULES.register(P.axis_index, _axis_index_named)
