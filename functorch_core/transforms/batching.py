"""The batching pass: rewrite a per-example graph into one that runs on a whole batch.

Every value carries an optional batch dimension (an ``int`` axis, or ``None``
for a value that is the same for every example). The pass walks the equations
once, inside a new trace: an equation with no batched input is replayed as
is; any other goes through its rule in ``RULES``:

    rule(args, dims, **params) -> (outs, out_dims)

A rule gets the batched operands (tracers or literals of the new trace) and
their batch dimensions, emits primitives with ``bind``, and returns lists of
outputs and of their batch dimensions. Rules move the batch dimension only
where a primitive needs it somewhere in particular.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable

import numpy as np

from functorch_core.ir import AbstractArray, Graph, Lit, Primitive, bind, dtypes, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import Table

from . import _windows as W

BatchRule = Callable[..., tuple[list, list]]
# The pass reads RULES and NOT_BATCHED; transforms/rules.py assembles them from every rule
# module's tables.
RULES: Table[Primitive, BatchRule] = Table("batching")
# Primitives the pass never sees batched, and why (the coverage test reads this).
NOT_BATCHED: Table[Primitive, str] = Table("not batched")
# Collectives over the axis being batched (vmap's axis_name):
#   rule(args, dims, size, **params) -> (outs, out_dims), applied batched or not
NAMED: Table[Primitive, BatchRule] = Table("batching: named axis")
# The name of the vmap axis the pass is batching (None: an unnamed vmap); the bodies of
# control flow, batched inside the pass, see the same axis.
_AXIS: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "functorch_core_batched_axis", default=None)

BATCH_RULES: Table[Primitive, BatchRule] = Table("batching.py: batching")
NOT_BATCHED_REASONS: Table[Primitive, str] = Table("batching.py: not batched")
NOT_BATCHED_REASONS.register(
    P.iota, "iota has no operands, so its equation is never batched and is replayed as is")
NOT_BATCHED_REASONS.register(
    P.call, "call equations are inlined (passes.inline) before any transform runs")
NOT_BATCHED_REASONS.register(
    P.setitem, "setitem is rewritten into pure updates by functionalize before any transform")


class BatchedOutputError(ValueError):
    """An output asked to be unbatched (out_dim None) depends on the batched inputs."""

    def __init__(self, index: int, shape):
        super().__init__(index, shape)
        self.index, self.shape = index, shape


# --- helpers -----------------------------------------------------------------

def _shape(x) -> tuple[int, ...]:
    return x.aval.shape


def _dtype(x) -> np.dtype:
    return x.aval.dtype


def _axis_size(args, dims) -> int:
    return next(_shape(x)[d] for x, d in zip(args, dims, strict=True) if d is not None)


def _example_shape(x, d) -> tuple[int, ...]:
    s = _shape(x)
    return s if d is None else s[:d] + s[d + 1:]


def _shift(axis: int, d: int) -> int:
    """Where a per-example axis lands in an array batched at ``d``."""
    return axis + (axis >= d)


def _insert(seq, at, value) -> tuple:
    seq = tuple(seq)
    return seq[:at] + (value,) + seq[at:]


def _const(value, dtype) -> Lit:
    return Lit(np.asarray(value, dtype=dtype))


def moveaxis(x, src: int, dst: int):
    if src == dst:
        return x
    perm = [i for i in range(len(_shape(x))) if i != src]
    perm.insert(dst, src)
    return P.transpose.bind(x, permutation=tuple(perm))


def _permute(x, perm):
    return x if list(perm) == sorted(perm) else P.transpose.bind(x, permutation=tuple(perm))


def add_batch_dim(x, size: int, at: int):
    """Broadcast an unbatched ``x`` along a new batch axis ``at`` of ``size``."""
    n = len(_shape(x))
    return P.broadcast_in_dim.bind(x, shape=_insert(_shape(x), at, size),
                                   broadcast_dimensions=tuple(i + (i >= at) for i in range(n)))


def batch_at(x, d, size: int, dst: int):
    """``x`` with its batch dimension at ``dst`` (broadcast first if unbatched)."""
    return add_batch_dim(x, size, dst) if d is None else moveaxis(x, d, dst)


def _all_at(args, dims):
    """Every operand batched at one common axis (all operands have equal rank)."""
    d = next(d for d in dims if d is not None)
    size = _axis_size(args, dims)
    return [batch_at(x, xd, size, d) for x, xd in zip(args, dims, strict=True)], d


# --- elementwise: unary, binary, select, convert ------------------------------

def _elementwise(prim):
    def rule(args, dims, **params):
        shapes = [_example_shape(x, d) for x, d in zip(args, dims, strict=True)]
        full = max(shapes, key=len)
        size = _axis_size(args, dims)
        # keep the batch axis of a full-shape batched operand where it is: no transpose
        at = next((d for d, s in zip(dims, shapes, strict=True) if d is not None and s == full),
                  0)
        ops = [_elementwise_operand(x, d, s, full, size, at)
               for x, d, s in zip(args, dims, shapes, strict=True)]
        return [prim.bind(*ops, **params)], [at]
    return rule


def _elementwise_operand(x, d, shape, full, size, at):
    if d is None:   # an unbatched rank-0 operand still broadcasts implicitly
        return x if not shape else add_batch_dim(x, size, at)
    if shape == full:
        return moveaxis(x, d, at)
    # a batched example scalar (shape (size,)) next to full-shape operands
    return P.broadcast_in_dim.bind(x, shape=_insert(full, at, size), broadcast_dimensions=(at,))


# --- reductions and scans --------------------------------------------------------

def _reduction(prim):
    def rule(args, dims, *, axes):
        (x,), (d,) = args, dims
        out = prim.bind(x, axes=tuple(_shift(a, d) for a in axes))
        return [out], [d - sum(a < d for a in axes)]
    return rule


def _arg_reduction(prim):
    def rule(args, dims, *, axis, index_dtype):
        (x,), (d,) = args, dims
        return [prim.bind(x, axis=_shift(axis, d), index_dtype=index_dtype)], [d - (axis < d)]
    return rule


def _cumulative(prim):
    def rule(args, dims, *, axis, reverse):
        (x,), (d,) = args, dims
        return [prim.bind(x, axis=_shift(axis, d), reverse=reverse)], [d]
    return rule


# --- layout ----------------------------------------------------------------------

def _broadcast_in_dim(args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    bd = broadcast_dimensions
    at = bd[d - 1] + 1 if d > 0 else 0
    new_bd = tuple(b + (b >= at) for b in bd[:d]) + (at,) + tuple(b + 1 for b in bd[d:])
    size = _shape(x)[d]
    return [P.broadcast_in_dim.bind(x, shape=_insert(shape, at, size),
                                    broadcast_dimensions=new_bd)], [at]


def _reshape(args, dims, *, new_sizes):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return [P.reshape.bind(x, new_sizes=(_shape(x)[0], *new_sizes))], [0]


def _transpose(args, dims, *, permutation):
    (x,), (d,) = args, dims
    perm = (d, *(_shift(p, d) for p in permutation))
    return [P.transpose.bind(x, permutation=perm)], [0]


def _squeeze(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    out = P.squeeze.bind(x, dimensions=tuple(_shift(a, d) for a in dimensions))
    return [out], [d - sum(a < d for a in dimensions)]


def _expand_dims(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    n_out = len(_shape(x)) - 1 + len(dimensions)
    kept = [i for i in range(n_out) if i not in dimensions]
    at = kept[d] if d < len(kept) else n_out
    out = P.expand_dims.bind(x, dimensions=tuple(k + (k >= at) for k in dimensions))
    return [out], [at]


def _rev(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return [P.rev.bind(x, dimensions=tuple(_shift(a, d) for a in dimensions))], [d]


def _slice(args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    out = P.slice.bind(x, start_indices=_insert(start_indices, d, 0),
                       limit_indices=_insert(limit_indices, d, _shape(x)[d]),
                       strides=_insert(strides, d, 1))
    return [out], [d]


def _concatenate(args, dims, *, dimension):
    ops, d = _all_at(args, dims)
    return [P.concatenate.bind(*ops, dimension=_shift(dimension, d))], [d]


def _pad(args, dims, *, padding_config):
    (x, value), (d, vd) = args, dims
    size = _axis_size(args, dims)
    if vd is None:
        config = _insert(padding_config, d, (0, 0, 0))
        return [P.pad.bind(x, value, padding_config=config)], [d]
    # A batched padding value: pad with zeros, then select the value where padding went.
    x = batch_at(x, d, size, 0)
    padded = P.pad.bind(x, _const(0, _dtype(x)), padding_config=((0, 0, 0), *padding_config))
    example = _shape(x)[1:]
    inside = P.broadcast_in_dim.bind(_const(False, dtypes.bool_), shape=example,
                                     broadcast_dimensions=())
    mask = P.pad.bind(inside, _const(True, dtypes.bool_), padding_config=padding_config)
    out_shape = _shape(padded)
    mask = add_batch_dim(mask, size, 0)
    value = P.broadcast_in_dim.bind(moveaxis(value, vd, 0), shape=out_shape,
                                    broadcast_dimensions=(0,))
    return [P.select.bind(mask, value, padded)], [0]


# --- dynamic slicing, gather, scatter -----------------------------------------------

def _check_index(args, dims, **params):
    """Elementwise: the batch dimension stays where it is; an example's bad index raises
    with that index, as the loop over examples would."""
    return [P.check_index.bind(args[0], **params)], [dims[0]]


def _dynamic_slice(args, dims, *, slice_sizes):
    (x, *idx), (d, *idims) = args, dims
    size = _axis_size(args, dims)
    if all(i is None for i in idims):
        zero = _const(0, _dtype(idx[0]) if idx else dtypes.int64)
        out = P.dynamic_slice.bind(x, *_insert(idx, d, zero),
                                   slice_sizes=_insert(slice_sizes, d, size))
        return [out], [d]
    if d is None and tuple(slice_sizes) == _shape(x):   # the whole array, in every example
        return [add_batch_dim(x, size, 0)], [0]
    if d is not None:
        x = moveaxis(x, d, 0)
    example = _example_shape(x, None if d is None else 0)
    indices, axes, order = _window(example, idx, idims, slice_sizes, size, d is not None)
    out = P.gather.bind(x, indices, axes=axes)
    return [_permute(out, (0, *(1 + order.index(k) for k in range(len(order)))))], [0]


def _dynamic_update_slice(args, dims):
    (x, update, *idx), (d, ud, *idims) = args, dims
    size = _axis_size(args, dims)
    if all(i is None for i in idims):
        at = d if d is not None else ud
        x, update = batch_at(x, d, size, at), batch_at(update, ud, size, at)
        zero = _const(0, _dtype(idx[0]) if idx else dtypes.int64)
        return [P.dynamic_update_slice.bind(x, update, *_insert(idx, at, zero))], [at]
    x, update = batch_at(x, d, size, 0), batch_at(update, ud, size, 0)
    indices, axes, order = _window(_shape(x)[1:], idx, idims, _shape(update)[1:], size, True)
    updates = _permute(update, (0, *(1 + k for k in order)))
    return [P.scatter.bind(x, indices, updates, axes=axes)], [0]


def _window(example_shape, starts, start_dims, sizes, size, batched_operand):
    """Gather/scatter indices for the window ``sizes`` at each example's (clamped) starts.

    Returns ``(indices, axes, order)`` for an operand batched at 0 (or not
    batched): ``indices`` has shape ``(size, *window of the partial axes, n)``
    with a column for the batch (if the operand is batched) and one per partial
    axis (at least one column in all); a full-size axis needs no index (its start
    clamps to 0). ``order``
    lists the example axes as gather's output holds them after the batch:
    partial, then full.
    """
    partial = [k for k, (s, n) in enumerate(zip(sizes, example_shape, strict=True)) if s < n]
    full = [k for k in range(len(sizes)) if k not in partial]
    grid = (size, *(sizes[k] for k in partial))
    first = int(batched_operand)
    cols = [P.iota.bind(dtype=dtypes.int64, shape=grid, dimension=0)] if first else []
    for j, k in enumerate(partial):
        start = starts[k]
        if _dtype(start) != dtypes.int64:
            start = P.convert.bind(start, new_dtype=dtypes.int64)
        start = P.max.bind(start, _const(0, dtypes.int64))
        start = P.min.bind(start, _const(example_shape[k] - sizes[k], dtypes.int64))
        start = P.broadcast_in_dim.bind(start, shape=grid, broadcast_dimensions=(
            () if start_dims[k] is None else (0,)))
        offset = P.iota.bind(dtype=dtypes.int64, shape=grid, dimension=1 + j)
        cols.append(P.add.bind(start, offset))
    cols = [P.expand_dims.bind(c, dimensions=(len(grid),)) for c in cols]
    indices = P.concatenate.bind(*cols, dimension=len(grid))
    return indices, (0,) * first + tuple(k + first for k in partial), partial + full


def _with_batch_column(indices, size):
    """Batched indices (batch at 0) with a leading column holding each example's number."""
    dt = _dtype(indices)
    if np.iinfo(dt).max < size - 1:
        dt = dtypes.int64
        indices = P.convert.bind(indices, new_dtype=dt)
    shape = _shape(indices)
    col = P.iota.bind(dtype=dt, shape=(*shape[:-1], 1), dimension=0)
    return P.concatenate.bind(col, indices, dimension=len(shape) - 1)


def _gather(args, dims, *, axes):
    (x, indices), (d, idim) = args, dims
    size = _axis_size(args, dims)
    if idim is None:
        out = P.gather.bind(x, indices, axes=tuple(_shift(a, d) for a in axes))
        return [out], [len(_shape(indices)) - 1 + d - sum(a < d for a in axes)]
    if d is None:
        if idim == len(_shape(indices)) - 1:
            indices, idim = moveaxis(indices, idim, 0), 0
        return [P.gather.bind(x, indices, axes=axes)], [idim]
    x = moveaxis(x, d, 0)
    indices = _with_batch_column(moveaxis(indices, idim, 0), size)
    return [P.gather.bind(x, indices, axes=(0, *(a + 1 for a in axes)))], [0]


def _scatter(prim):
    def rule(args, dims, *, axes):
        (x, indices, updates), (d, idim, ud) = args, dims
        size = _axis_size(args, dims)
        x = batch_at(x, d, size, 0)
        if idim is None:
            updates = batch_at(updates, ud, size, len(_shape(indices)) - 1)
            return [prim.bind(x, indices, updates, axes=tuple(a + 1 for a in axes))], [0]
        indices = _with_batch_column(moveaxis(indices, idim, 0), size)
        updates = batch_at(updates, ud, size, 0)
        return [prim.bind(x, indices, updates, axes=(0, *(a + 1 for a in axes)))], [0]
    return rule


# --- contraction and sorting --------------------------------------------------------

def _dot_general(args, dims, *, dimension_numbers, **precision):
    (lhs, rhs), (ld, rd) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers

    def shifted(axes, d):
        return tuple(axes) if d is None else tuple(_shift(a, d) for a in axes)

    lc, lb, rc, rb = shifted(lc, ld), shifted(lb, ld), shifted(rc, rd), shifted(rb, rd)
    if ld is not None and rd is not None:
        dn = ((lc, rc), ((ld, *lb), (rd, *rb)))
        return [P.dot_general.bind(lhs, rhs, dimension_numbers=dn, **precision)], [0]
    dn = ((lc, rc), (lb, rb))
    out = P.dot_general.bind(lhs, rhs, dimension_numbers=dn, **precision)
    lhs_free = [i for i in range(len(_shape(lhs))) if i not in lc and i not in lb]
    if ld is not None:
        return [out], [len(lb) + lhs_free.index(ld)]
    rhs_free = [i for i in range(len(_shape(rhs))) if i not in rc and i not in rb]
    return [out], [len(lb) + len(lhs_free) + rhs_free.index(rd)]


def _sort(args, dims, *, dimension, num_keys):
    ops, d = _all_at(args, dims)
    outs = P.sort.bind(*ops, dimension=_shift(dimension, d), num_keys=num_keys)
    return list(outs), [d] * len(outs)



def _fft(args, dims, *, fft_type, fft_lengths):
    """The transform runs over the trailing axes: a batch axis among them moves to the front."""
    (x,), (d,) = args, dims
    if d >= len(_shape(x)) - len(fft_lengths):
        x, d = moveaxis(x, d, 0), 0
    return [P.fft.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)], [d]

def _threefry2x32(args, dims):
    """Elementwise with two results: every operand at the batch axis of a full-shape one."""
    shapes = [_example_shape(x, d) for x, d in zip(args, dims, strict=True)]
    full = max(shapes, key=len)
    size = _axis_size(args, dims)
    ops = [_elementwise_operand(x, d, s, full, size, 0)
           for x, d, s in zip(args, dims, shapes, strict=True)]
    return list(P.threefry2x32.bind(*ops)), [0, 0]
# --- convolution and windows ------------------------------------------------------------

def _conv(args, dims, **params):
    """Fold the batch axis into the batch / feature-group axes (lax's rule)."""
    (lhs, rhs), (ld, rd) = args, dims
    lspec, rspec, ospec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]

    def conv(x, w, **changed):
        return P.conv_general_dilated.bind(x, w, **{**params, **changed})

    if ld is not None and rd is not None:
        size = _shape(lhs)[ld]
        if bgc > 1:
            new_lhs = W.reshape_axis_into(ld, lspec[0], lhs)
            changed = {"batch_group_count": bgc * size}
        else:
            new_lhs = W.reshape_axis_into(ld, lspec[1], lhs)
            changed = {"feature_group_count": fgc * size}
        out = conv(new_lhs, W.reshape_axis_into(rd, rspec[0], rhs), **changed)
        return [W.reshape_axis_out_of(ospec[1], size, out)], [ospec[1]]
    if ld is not None:
        size = _shape(lhs)[ld]
        if bgc == 1:
            new_lhs = W.reshape_axis_into(ld, lspec[0], lhs)
        else:       # the batch groups stay outermost in the lhs batch axis
            new_lhs = W.reshape_axis_out_of(lspec[0] + int(ld <= lspec[0]), bgc, lhs)
            new_lhs = W.reshape_axis_into(ld + int(lspec[0] < ld), lspec[0] + 1, new_lhs)
            new_lhs = W.reshape_axis_into(lspec[0], lspec[0], new_lhs)
        out = conv(new_lhs, rhs)
        return [W.reshape_axis_out_of(ospec[0], size, out)], [ospec[0]]
    size = _shape(rhs)[rd]
    if fgc == 1 and bgc == 1:
        out = conv(lhs, W.reshape_axis_into(rd, rspec[0], rhs))
        return [W.reshape_axis_out_of(ospec[1], size, out)], [ospec[1]]
    groups = max(fgc, bgc)      # the groups stay outermost in the rhs output features
    new_rhs = W.reshape_axis_out_of(rspec[0] + int(rd <= rspec[0]), groups, rhs)
    new_rhs = W.reshape_axis_into(rd + int(rspec[0] < rd), rspec[0] + 1, new_rhs)
    new_rhs = W.reshape_axis_into(rspec[0], rspec[0], new_rhs)
    out = conv(lhs, new_rhs)
    out = W.reshape_axis_out_of(ospec[1], groups, out)
    out = W.reshape_axis_out_of(ospec[1] + 1, size, out)
    return [W.reshape_axis_into(ospec[1], ospec[1] + 1, out)], [ospec[1]]


def _windowed(prim):
    """A window of extent 1 along the batch axis."""
    def rule(args, dims, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation, **rest):
        ops, d = _all_at(args, dims)
        out = prim.bind(*ops, window_dimensions=_insert(window_dimensions, d, 1),
                        window_strides=_insert(window_strides, d, 1),
                        padding=_insert(padding, d, (0, 0)),
                        base_dilation=_insert(base_dilation, d, 1),
                        window_dilation=_insert(window_dilation, d, 1), **rest)
        return [out], [d]
    return rule


# --- the table ------------------------------------------------------------------------

_FAMILIES = {"unary": _elementwise, "binary": _elementwise, "select": _elementwise,
             "convert": _elementwise, "reduction": _reduction,
             "arg_reduction": _arg_reduction, "cumulative": _cumulative, "window": _windowed}
for _p in P.ALL.values():
    if _p.family in _FAMILIES:
        BATCH_RULES.register(_p, _FAMILIES[_p.family](_p))
for _p, _rule in (
    (P.broadcast_in_dim, _broadcast_in_dim), (P.reshape, _reshape), (P.transpose, _transpose),
    (P.squeeze, _squeeze), (P.expand_dims, _expand_dims), (P.rev, _rev), (P.slice, _slice),
    (P.concatenate, _concatenate), (P.pad, _pad), (P.dynamic_slice, _dynamic_slice),
    (P.dynamic_update_slice, _dynamic_update_slice), (P.gather, _gather),
    (P.scatter, _scatter(P.scatter)), (P.scatter_add, _scatter(P.scatter_add)),
    (P.dot_general, _dot_general), (P.sort, _sort), (P.threefry2x32, _threefry2x32),
    (P.conv_general_dilated, _conv), (P.fft, _fft), (P.check_index, _check_index),
):
    BATCH_RULES.register(_p, _rule)


# --- the pass -----------------------------------------------------------------------

def batched_aval(aval: AbstractArray, d: int | None, size: int) -> AbstractArray:
    return aval if d is None else aval.update(shape=_insert(aval.shape, d, size))


_INHERIT = object()


def batch_graph(graph: Graph, in_dims, axis_size: int, out_dims, *, name="vmap",
                axis_name=_INHERIT):
    """Rewrite ``graph`` to run on a batch of ``axis_size`` examples.

    Args:
        graph: a per-example graph (calls inlined, no mutation).
        in_dims: one entry per graph input: the batch axis of the input, or None.
        axis_size: the batch size.
        out_dims: one entry per graph output: the (non-negative) axis where
            its batch dimension goes, or None to require it to be unbatched
            (``BatchedOutputError`` otherwise).
        name: the name of the new graph's trace.
        axis_name: the name of the batched axis (None for none): collectives over it
            go through their ``NAMED`` rule. By default the axis of the pass this call
            runs inside (the bodies of control flow), else none.

    Returns:
        ``(graph, captured)`` as ``trace_flat`` returns them; the new graph
        takes the batched inputs.
    """
    in_avals = [batched_aval(v.aval, d, axis_size)
                for v, d in zip(graph.inputs, in_dims, strict=True)]

    def walk(*args):
        outs = batch_eval(graph, args, in_dims, axis_size)
        return [_finish(i, x, d, od, axis_size)
                for i, ((x, d), od) in enumerate(zip(outs, out_dims, strict=True))]

    with contextlib.nullcontext() if axis_name is _INHERIT else _batching(axis_name):
        return trace_flat(walk, in_avals, name=name)


@contextlib.contextmanager
def _batching(axis_name):
    token = _AXIS.set(axis_name)
    try:
        yield
    finally:
        _AXIS.reset(token)


def batch_eval(graph: Graph, args, in_dims, axis_size=None) -> list[tuple]:
    """Emit the batched equations of ``graph`` into the current trace.

    Returns one ``(value, batch_dim)`` pair per graph output. ``axis_size`` is the batch
    size (needed only by collectives over the named axis being batched).
    """
    env = {id(v): (a, d) for v, a, d in zip(graph.inputs, args, in_dims, strict=True)}
    axis = _AXIS.get()

    def read(atom):
        return (atom, None) if isinstance(atom, Lit) else env[id(atom)]

    for eqn in graph.eqns:
        vals = [read(a)[0] for a in eqn.inputs]
        dims = [read(a)[1] for a in eqn.inputs]
        if eqn.prim.mutates or (eqn.prim in NOT_BATCHED and any(d is not None for d in dims)):
            raise NotImplementedError(
                f"vmap: cannot batch {eqn.prim.name} (at {eqn.source}): "
                f"{NOT_BATCHED.get(eqn.prim, 'it mutates its operand')}")
        if axis is not None and eqn.prim in NAMED and eqn.params["axis_name"] == axis:
            outs, out_dims = NAMED[eqn.prim](vals, dims, axis_size, **eqn.params)
        elif all(d is None for d in dims):
            outs = bind(eqn.prim, *vals, **eqn.params)
            outs, out_dims = (outs if eqn.prim.multiple_results else [outs]), None
        else:
            rule = RULES.get(eqn.prim)
            if rule is None:
                raise NotImplementedError(f"vmap: no batching rule for {eqn.prim.name} "
                                          f"(at {eqn.source})")
            outs, out_dims = rule(vals, dims, **eqn.params)
        out_dims = out_dims or [None] * len(outs)
        for v, o, d in zip(eqn.outputs, outs, out_dims, strict=True):
            env[id(v)] = (o, d)
    return [read(o) for o in graph.outputs]


def _finish(i, x, d, out_dim, size):
    if out_dim is None:
        if d is not None:
            raise BatchedOutputError(i, _shape(x))
        return x
    return batch_at(x, d, size, out_dim)
