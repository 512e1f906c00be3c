"""Planning rules for indexing: gathers and dynamic slices (reads at computed
addresses), concatenation, padding, dynamic updates and scatters. Each rule takes the
:class:`~.partition.Partitioner` and one equation."""

from __future__ import annotations

from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Lit

from .members import ColumnAtom, Member, Reduced
from .plan import (
    Kernel,
    Op,
    Scatter,
    View,
    c_strides,
)


def dynamic_read(planner, eqn):
    """dynamic_slice and gather: a read of an external view at a clamped runtime offset."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    shape = out.aval.shape
    v = planner.view(x)
    if isinstance(v, Lit):
        v = planner.view_of_array(planner.array(x), x)
    if eqn.prim is P.dynamic_slice:
        index_atoms = list(eqn.inputs[1:])
        bounds = [d - s for d, s in zip(x.aval.shape, shape, strict=True)]
        strides, base = list(v.strides), v.strides
    else:
        index_atoms, axes = _gather_columns(planner, eqn.inputs[1], shape), eqn.params["axes"]
        bounds = [x.aval.shape[a] - 1 for a in axes]
        strides = [v.strides[a] for a in axes]
        nb = eqn.inputs[1].aval.ndim - 1
        base = (0,) * nb + tuple(s for i, s in enumerate(v.strides) if i not in axes)
    k, refs = planner.refs(shape, index_atoms)
    k.dyn_reads.append(View(v.slot, shape, v.dtype, v.offset, tuple(base)))
    params = {"bounds": tuple(bounds), "strides": tuple(strides),
              "index_dtypes": tuple(a.aval.dtype for a in index_atoms)}
    k.ops.append(Op(eqn.prim, (("dyn", len(k.dyn_reads) - 1), *refs), params,
                    out.aval.dtype, x.aval.dtype))
    planner.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))


def concatenate(planner, eqn):
    """Each output point loads every operand at a clamped position along the dimension
    and selects the one whose range holds it (loads stay in bounds)."""
    out, dim = eqn.outputs[0], eqn.params["dimension"]
    views = [planner.external_view(x) for x in eqn.inputs]
    k, _ = planner.refs(out.aval.shape, [])
    refs, starts, start = [], [], 0
    for v in views:
        strides = tuple(0 if i == dim else s for i, s in enumerate(v.strides))
        k.dyn_reads.append(View(v.slot, out.aval.shape, v.dtype, v.offset, strides))
        refs.append(("dyn", len(k.dyn_reads) - 1))
        starts.append(start)
        start += v.shape[dim]
    params = {"dimension": dim, "starts": tuple(starts),
              "sizes": tuple(v.shape[dim] for v in views),
              "strides": tuple(v.strides[dim] for v in views)}
    k.ops.append(Op(P.concatenate, tuple(refs), params, out.aval.dtype, out.aval.dtype))
    planner.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))


def pad(planner, eqn):
    """Each output point maps back to an operand position (or to the padding value)."""
    (x, fill), out = eqn.inputs, eqn.outputs[0]
    v = planner.external_view(x)
    k, (fill_ref,) = planner.refs(out.aval.shape, [fill])
    k.dyn_reads.append(View(v.slot, out.aval.shape, v.dtype, v.offset,
                            (0,) * out.aval.ndim))
    params = {"config": tuple(tuple(c) for c in eqn.params["padding_config"]),
              "in_shape": v.shape, "strides": v.strides}
    k.ops.append(Op(P.pad, (("dyn", len(k.dyn_reads) - 1), fill_ref), params,
                    out.aval.dtype, out.aval.dtype))
    planner.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))


def fresh_copy(planner, x) -> int:
    """A new slot holding a copy of ``x`` (for in-place updates)."""
    v = planner.external_view(x)
    k = Kernel(v.shape)
    slot = planner.new_slot(v.shape, v.dtype)
    k.stores.append((k.read(v), slot, v.dtype))
    planner.seal(k)
    return slot


def update(planner, eqn):
    """dynamic_update_slice, scatter, scatter_add: copy the operand, then a kernel over
    the update's shape writes each update element at its clamped position, in C order
    (so the last duplicate wins for scatter, and scatter_add adds in np.add.at order)."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    slot = fresh_copy(planner, x)
    strides = c_strides(x.aval.shape)
    if eqn.prim is P.dynamic_update_slice:
        upd, index_atoms = eqn.inputs[1], list(eqn.inputs[2:])
        bounds = [d - u for d, u in zip(x.aval.shape, upd.aval.shape, strict=True)]
        index_strides, base = strides, strides
    else:
        indices, upd, axes = eqn.inputs[1], eqn.inputs[2], eqn.params["axes"]
        index_atoms = _gather_columns(planner, indices, upd.aval.shape)
        bounds = [x.aval.shape[a] - 1 for a in axes]
        index_strides = [strides[a] for a in axes]
        base = (0,) * (indices.aval.ndim - 1) + tuple(
            s for i, s in enumerate(strides) if i not in axes)
    shape = upd.aval.shape
    k, refs = planner.refs(shape, [upd, *index_atoms], axes=(), reverse=False)
    k.axes, k.reverse = (), False       # C-order loops: duplicates resolve as in NumPy
    k.scatters.append(Scatter(eqn.prim is P.scatter_add, refs[0], slot, out.aval.dtype,
                              tuple(refs[1:]), tuple(a.aval.dtype for a in index_atoms),
                              tuple(bounds), tuple(index_strides), tuple(base)))
    planner.loc[id(out)] = Reduced(k, slot)


def _gather_columns(planner, indices, shape):
    """One atom per indexed axis: column k of ``indices`` seen over the output shape."""
    v = planner.view(indices)
    if isinstance(v, Lit):
        v = planner.view_of_array(planner.array(indices), indices)
    rest = len(shape) - (indices.aval.ndim - 1)
    cols = []
    for c in range(indices.aval.shape[-1]):
        key = ("gather column", id(indices), c, shape)
        if key not in planner.loc:
            planner.loc[key] = View(v.slot, tuple(shape), v.dtype, v.offset + c * v.strides[-1],
                                    tuple(v.strides[:-1]) + (0,) * rest)
        cols.append(ColumnAtom(key, AbstractArray(shape, v.dtype)))
    return cols
