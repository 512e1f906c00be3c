"""Pure updates: the functional equivalents of writes, emitted through ``bind``.

``unview(step, parent, child)`` answers "``child`` is the new value of the view
``step(parent)``; what is the new value of ``parent``?". A write ``x[idx] = v``
becomes a chain of such steps: basic indices are views (rev, slice, squeeze,
expand_dims), so the write overwrites a whole view and the steps carry it back;
integer-array indices go through flat element positions and ``scatter``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import primitives as P
from .core import Lit, Primitive
from .indexing import (
    advanced_layout,
    broadcast_shapes,
    indexed_shape,
    to_numpy_index,
)
from .tables import Table


def scalar(value, dtype):
    return Lit(np.asarray(value, dtype=dtype))


def broadcast_value(value, shape, what="setitem"):
    """``value`` broadcast to exactly ``shape`` with NumPy's assignment rules."""
    shape = tuple(shape)
    vshape = value.aval.shape
    if len(vshape) > len(shape):
        extra = vshape[:len(vshape) - len(shape)]
        if any(d != 1 for d in extra):
            raise ValueError(f"could not broadcast input array from shape {vshape} into shape "
                             f"{shape} ({what})")
        vshape = vshape[len(extra):]
        value = P.reshape.bind(value, new_sizes=vshape)
    lead = len(shape) - len(vshape)
    if any(d not in (1, t) for d, t in zip(vshape, shape[lead:], strict=True)):
        raise ValueError(f"could not broadcast input array from shape {value.aval.shape} into "
                         f"shape {shape} ({what})")
    if vshape == shape:
        return value
    keep = [i for i, d in enumerate(vshape) if d == shape[lead + i]]
    if len(keep) != len(vshape):
        value = P.reshape.bind(value, new_sizes=tuple(vshape[i] for i in keep))
    return P.broadcast_in_dim.bind(value, shape=shape,
                                   broadcast_dimensions=tuple(lead + i for i in keep))


def convert(value, dtype):
    return value if value.aval.dtype == dtype else P.convert.bind(value, new_dtype=dtype)


# --- undoing one view step --------------------------------------------------

def _unslice(parent, child, *, start_indices, limit_indices, strides):
    if child.aval.size == 0:
        return parent
    if all(s == 1 for s in strides):
        starts = [scalar(s, np.int64) for s in start_indices]
        return P.dynamic_update_slice.bind(parent, child, *starts)
    config = tuple((s, d - (s + (n - 1) * st + 1), st - 1) for s, st, n, d in
                   zip(start_indices, strides, child.aval.shape, parent.aval.shape, strict=True))
    dt = parent.aval.dtype
    spread = P.pad.bind(child, scalar(0, dt), padding_config=config)
    ones = P.broadcast_in_dim.bind(scalar(True, np.bool_), shape=child.aval.shape,
                                   broadcast_dimensions=())
    mask = P.pad.bind(ones, scalar(False, np.bool_), padding_config=config)
    return P.select.bind(mask, spread, parent)


def _undynamic_slice(parent, child, *idx, slice_sizes):
    return P.dynamic_update_slice.bind(parent, child, *idx)


def _unreshape(parent, child, *, new_sizes):
    return P.reshape.bind(child, new_sizes=parent.aval.shape)


def _untranspose(parent, child, *, permutation):
    return P.transpose.bind(child, permutation=tuple(int(i) for i in np.argsort(permutation)))


def _unsqueeze(parent, child, *, dimensions):
    return P.expand_dims.bind(child, dimensions=tuple(dimensions))


def _unexpand(parent, child, *, dimensions):
    return P.squeeze.bind(child, dimensions=tuple(dimensions))


def _unrev(parent, child, *, dimensions):
    return P.rev.bind(child, dimensions=dimensions)


def _ungather(parent, child, positions, *, axes):
    # only for the synthetic views that place aliased inputs in their shared buffer
    return P.scatter.bind(parent, positions, child, axes=axes)


# view primitive -> (parent, child, *operands, **params) -> the parent with child written in
UNVIEW: Table[Primitive, Callable] = Table("unview", [
    (P.slice, _unslice), (P.dynamic_slice, _undynamic_slice), (P.reshape, _unreshape),
    (P.transpose, _untranspose), (P.squeeze, _unsqueeze), (P.expand_dims, _unexpand),
    (P.rev, _unrev), (P.gather, _ungather),
])


# --- a write x[indexer] = value as a pure value ------------------------------

def basic_steps(shape, indexer):
    """View steps ``(prim, (), params)`` equal to a basic (array-free) index."""
    flips, starts, limits, strides, ints, newaxes = [], [], [], [], [], []
    axis = out = 0
    for e in indexer:
        kind = e[0]
        if kind == "newaxis":
            newaxes.append(out)
            out += 1
            continue
        d = shape[axis]
        if kind == "int":
            starts.append(e[1]), limits.append(e[1] + 1), strides.append(1)
            ints.append(axis)
        else:
            start, stop, step = e[1:]
            n = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = d - 1 - start, -step
            if n == 0:
                start = 0
            starts.append(start), strides.append(step)
            limits.append(start + (n - 1) * step + 1 if n else start)
            out += 1
        axis += 1
    steps = []
    if flips:
        steps.append((P.rev, (), {"dimensions": tuple(flips)}))
    if (tuple(starts), tuple(limits), tuple(strides)) != ((0,) * len(shape), tuple(shape),
                                                          (1,) * len(shape)):
        steps.append((P.slice, (), {"start_indices": tuple(starts),
                                    "limit_indices": tuple(limits), "strides": tuple(strides)}))
    if ints:
        steps.append((P.squeeze, (), {"dimensions": tuple(ints)}))
    if newaxes:
        steps.append((P.expand_dims, (), {"dimensions": tuple(newaxes)}))
    return steps


def apply_step(step, value):
    prim, extra, params = step
    return prim.bind(value, *extra, **params)


def unview(step, parent, child):
    prim, extra, params = step
    return UNVIEW[prim](parent, child, *extra, **params)


def write_through(steps, base, new_view):
    """The new ``base`` after overwriting ``steps(base)`` with ``new_view``."""
    parents = [base]
    for step in steps[:-1]:
        parents.append(apply_step(step, parents[-1]))
    for step, parent in zip(reversed(steps), reversed(parents), strict=True):
        new_view = unview(step, parent, new_view)
    return new_view


def pure_setitem(x, value, arrays, indexer):
    """The value of ``x`` after ``x[indexer] = value`` (NumPy's unsafe cast into x's dtype)."""
    shape, dt = x.aval.shape, x.aval.dtype
    target = indexed_shape(shape, indexer, [a.aval.shape for a in arrays])
    value = broadcast_value(convert(value, dt), target)
    if not any(e[0] == "array" for e in indexer):
        steps = basic_steps(shape, indexer)
        return write_through(steps, x, value) if steps else value
    if math.prod(target) == 0 or math.prod(shape) == 0:
        return x
    pos = flat_positions(shape, indexer, arrays)
    return scatter_flat(x, pos, value)


def scatter_flat(x, pos, value, prim=P.scatter):
    """``x`` with ``value`` written (or added) at flat element positions ``pos``."""
    n = math.prod(pos.aval.shape)
    flat = P.reshape.bind(x, new_sizes=(x.aval.size,))
    idx = P.reshape.bind(pos, new_sizes=(n, 1))
    upd = P.reshape.bind(value, new_sizes=(n,))
    return P.reshape.bind(prim.bind(flat, idx, upd, axes=(0,)), new_sizes=x.aval.shape)


def flat_positions(shape, indexer, arrays):
    """Flat element positions of ``x[indexer]`` (an int64 array of the indexed shape).

    Concrete index arrays are resolved by NumPy itself, so out-of-bounds and
    negative indices behave exactly as NumPy's; traced ones wrap negatives and
    are clamped into range, as ``gather`` clamps.
    """
    if all(isinstance(a, Lit) for a in arrays):
        iota = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
        return Lit(np.ascontiguousarray(iota[to_numpy_index(indexer, [a.value for a in arrays])]))
    return _traced_positions(shape, indexer, arrays)


def _traced_positions(shape, indexer, arrays):
    out_shape = indexed_shape(shape, indexer, [a.aval.shape for a in arrays])
    adv, front = advanced_layout(indexer)
    bshape = broadcast_shapes(*(a.aval.shape for a in arrays))
    cstr = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    block = 0
    total = P.broadcast_in_dim.bind(scalar(0, np.int64), shape=out_shape, broadcast_dimensions=())
    out, axis = (len(bshape) if front else 0), 0
    for i, e in enumerate(indexer):
        if i == adv[0] and not front:
            block, out = out, out + len(bshape)
        kind = e[0]
        if kind == "newaxis":
            out += 1
            continue
        if kind == "slice":
            coords = np.arange(*e[1:], dtype=np.int64) * cstr[axis]
            term = P.broadcast_in_dim.bind(Lit(coords), shape=out_shape,
                                           broadcast_dimensions=(out,))
            out += 1
        elif kind == "int":
            term = P.broadcast_in_dim.bind(scalar(e[1] * cstr[axis], np.int64), shape=out_shape,
                                           broadcast_dimensions=())
        else:
            term = _index_term(arrays[e[1]], shape[axis], cstr[axis], out_shape, block, bshape)
        total = P.add.bind(total, term)
        axis += 1
    return total


def _index_term(a, d, stride, out_shape, block, bshape):
    a = convert(a, np.dtype(np.int64))
    a = P.select.bind(P.lt.bind(a, _full(0, a)), P.add.bind(a, _full(d, a)), a)
    a = P.max.bind(P.min.bind(a, _full(d - 1, a)), _full(0, a))
    a = P.mul.bind(a, _full(stride, a))
    lead = len(bshape) - a.aval.ndim
    keep = [k for k, n in enumerate(a.aval.shape) if n == bshape[lead + k]]
    if len(keep) != a.aval.ndim:
        a = P.reshape.bind(a, new_sizes=tuple(a.aval.shape[k] for k in keep))
    return P.broadcast_in_dim.bind(a, shape=out_shape,
                                   broadcast_dimensions=tuple(block + lead + k for k in keep))


def _full(value, like):
    return P.broadcast_in_dim.bind(scalar(value, like.aval.dtype), shape=like.aval.shape,
                                   broadcast_dimensions=())
