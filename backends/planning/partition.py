"""Split a functional graph into steps: fused loop kernels, products, interpreter fallbacks.

Backend-neutral: each backend hands :func:`partition` its *gap* rule (which equations
it cannot lower; those become :class:`Fallback` steps) and renders the steps itself.
:func:`numpy_gap` holds the reasons every backend shares (NumPy's own semantics).

A *kernel* is a loop nest over one iteration space (its shape). It reads external
arrays through affine views (offset + strides, so broadcasting, transposes, slices,
reversals, squeezes and contiguous reshapes of inputs cost nothing), computes a chain
of elementwise/select/convert/iota values at each point, writes the members other
steps need and accumulates the reductions that consume its members.

Values live in numbered *slots*: graph inputs first, then constants, then the
buffers the steps produce (fresh, C-contiguous). The partitioner is one forward
walk over the equations; a kernel is *sealed* (no more members) as soon as a value
of it is needed outside, which keeps the step order topological.
"""

from __future__ import annotations

import math
import os

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Graph, Lit, Var

from .plan import (
    Blas,
    Conv,
    Fallback,
    Kernel,
    Lapack,
    Loop,
    Op,
    Plan,
    Reduce,
    Scatter,
    Sort,
    View,
    c_strides,
)
from .views import VIEW_RULES

# Equations no backend lowers: they run through the interpreter's implementation.
NEVER_LOWERED = {
    P.setitem: "never reaches a backend (functionalize rewrites mutations)",
    P.call: "never reaches a backend (jit inlines calls)",
    P.custom_jvp_call: "jit inlines it (passes.lower_custom); compiled as is, its body "
                       "graph runs through the interpreter",
    P.custom_vjp_call: "jit inlines it (passes.lower_custom); compiled as is, its body "
                       "graph runs through the interpreter",
    P.custom_lin: "exists only inside differentiation passes",
}
# dtypes (kinds) on which NumPy raises for a primitive: (kinds, reason)
NUMPY_DTYPE_LIMITS = {
    P.pow: ("iu", "integer power raises on negative exponents in NumPy (data dependent)"),
    P.neg: ("b", "NumPy rejects boolean negative"),
    P.sign: ("b", "NumPy has no boolean sign loop"),
}
_WINDOW_REDUCE = {P.reduce_window_sum: P.reduce_sum, P.reduce_window_max: P.reduce_max,
                  P.reduce_window_min: P.reduce_min}
_SELECT_WINDOW = (P.select_and_gather_add, P.select_and_scatter_add)
VIEW_OPS = (P.broadcast_in_dim, P.transpose, P.reshape, P.squeeze, P.expand_dims, P.rev,
            P.slice)
# "special3": betainc and betainc_grad, elementwise in three operands
ELEMENTWISE_FAMILIES = ("unary", "binary", "select", "convert", "special3")
SCANS = (P.cumsum, P.cumprod, P.cummax, P.cummin)
# reductions that NumPy still applies over no axes: (combining op, identity)
_COMBINED_WHEN_EMPTY = {P.reduce_sum: (P.add, 0), P.reduce_prod: (P.mul, 1)}
BLAS_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
# a sort of at least this many elements splits its rows into parts run on several threads
SORT_PARALLEL_POINTS = 1 << 16
SORT_PARTS = os.cpu_count() or 1


# A kernel grows until it touches this many buffers or holds this many operations: LLVM's
# optimizer and instruction scheduler take superlinear time in one loop body's size (one
# kernel of 2,200 buffers: 9 s), so a graph of thousands of arrays compiles in pieces.
MAX_KERNEL_BUFFERS = 128
MAX_KERNEL_OPS = 256


def _room(k: Kernel) -> bool:
    buffers = len(k.reads) + len(k.dyn_reads) + len(k.stores) + len(k.reduces) + len(k.scatters)
    return buffers < MAX_KERNEL_BUFFERS and len(k.ops) < MAX_KERNEL_OPS


class _Member:
    __slots__ = ("kernel", "ref")

    def __init__(self, kernel, ref):
        self.kernel, self.ref = kernel, ref


class _Splat:
    """A constant-filled array that is not materialized unless a non-kernel step needs it."""

    __slots__ = ("dtype", "shape", "value")

    def __init__(self, value, shape, dtype):
        self.value, self.shape, self.dtype = np.asarray(value, dtype)[()], tuple(shape), dtype


class _ColumnAtom:
    """A column of gather indices, addressed as a view over the gather's output shape."""

    __slots__ = ("aval", "key")

    def __init__(self, key, aval):
        self.key, self.aval = key, aval


class _Reduced:
    __slots__ = ("kernel", "slot")

    def __init__(self, kernel, slot):
        self.kernel, self.slot = kernel, slot


class Partitioner:
    """One forward walk over ``graph``'s equations; see :func:`partition`."""

    def __init__(self, graph: Graph, gap, scratch_shapes=None, isolated=None):
        self.graph = graph
        self.gap = gap
        self.scratch_shapes = scratch_shapes or _no_scratch
        self.isolated = isolated or _never
        self.slots = []
        self.consts = {}
        self.steps = []
        self.open: list[Kernel] = []
        self.loc: dict[int, object] = {}     # id(var) -> View | _Member | _Reduced | Lit
        for v in graph.inputs:
            self.loc[id(v)] = self._buffer_view(self.new_slot(v.aval.shape, v.aval.dtype),
                                                v.aval.shape, v.aval.dtype)

    # -- slots and views ---------------------------------------------------
    def new_slot(self, shape, dtype) -> int:
        self.slots.append((tuple(shape), np.dtype(dtype)))
        return len(self.slots) - 1

    @staticmethod
    def _buffer_view(slot, shape, dtype):
        return View(slot, tuple(shape), np.dtype(dtype), 0, c_strides(shape))

    def view(self, atom) -> View | Lit:
        """Where ``atom`` can be read from: a View of a materialized slot, or a scalar Lit."""
        if isinstance(atom, Lit):
            if atom.aval.ndim == 0:
                return atom
            key = ("lit", id(atom))
            if key not in self.loc:
                slot = self.new_slot(atom.aval.shape, atom.aval.dtype)
                self.consts[slot] = np.ascontiguousarray(atom.value)
                self.loc[key] = self._buffer_view(slot, atom.aval.shape, atom.aval.dtype)
            return self.loc[key]
        loc = self.loc[id(atom)]
        if isinstance(loc, _Splat):
            slot = self.new_slot(loc.shape, loc.dtype)
            self.consts[slot] = np.full(loc.shape, loc.value, loc.dtype)
            loc = self._buffer_view(slot, loc.shape, loc.dtype)
            self.loc[id(atom)] = loc
        elif isinstance(loc, _Member):
            k = loc.kernel
            slot = k.stored.get(loc.ref)
            if slot is None:
                slot = self.new_slot(atom.aval.shape, atom.aval.dtype)
                k.stores.append((loc.ref, slot, atom.aval.dtype))
                k.stored[loc.ref] = slot
            self.seal(k)
            loc = self._buffer_view(slot, atom.aval.shape, atom.aval.dtype)
            self.loc[id(atom)] = loc
        elif isinstance(loc, _Reduced):
            self.seal(loc.kernel)
            loc = self._buffer_view(loc.slot, atom.aval.shape, atom.aval.dtype)
            self.loc[id(atom)] = loc
        return loc

    def array(self, atom):
        """A materialized, C-contiguous array reference for a non-kernel consumer."""
        v = self.view(atom)
        if isinstance(v, Lit):
            return ("lit", v.value)
        if v.offset == 0 and v.contiguous() and int(np.prod(v.shape)) == \
                int(np.prod(self.slots[v.slot][0])):
            return ("slot", v.slot, v.shape)
        k = Kernel(v.shape)
        slot = self.new_slot(v.shape, v.dtype)
        k.stores.append((k.read(v), slot, v.dtype))
        self.seal(k)
        return ("slot", slot, v.shape)

    def seal(self, k: Kernel):
        if k.sealed:
            return
        k.sealed = True
        if k in self.open:
            self.open.remove(k)
        self.steps.append(k)

    # -- kernels -------------------------------------------------------------
    def ref(self, k: Kernel, atom, shape):
        if isinstance(atom, _ColumnAtom):
            return k.read(self.loc[atom.key])
        if isinstance(atom, Var):
            loc = self.loc[id(atom)]
            if isinstance(loc, _Member) and loc.kernel is k:
                return loc.ref
            if isinstance(loc, _Splat):
                return ("const", loc.value)
        v = self.view(atom)
        if isinstance(v, Lit):
            return ("const", v.value[()])
        if v.shape != shape:        # a rank-0 operand of an elementwise op
            v = View(v.slot, shape, v.dtype, v.offset, (0,) * len(shape))
        return k.read(v)

    def pick(self, shape, inputs, axes=None, reverse=None) -> Kernel:
        def fits(k):
            return (not k.sealed and k.shape == shape and _room(k)
                    and (axes is None or k.axes in (None, axes))
                    and (reverse is None or k.reverse in (None, reverse)))
        for a in inputs:
            loc = self.loc.get(id(a)) if isinstance(a, Var) else None
            if isinstance(loc, _Member) and fits(loc.kernel):
                return loc.kernel
        for k in self.open:
            if fits(k):
                return k
        k = Kernel(shape)
        self.open.append(k)
        return k

    def refs(self, shape, inputs, axes=None, reverse=None):
        k = self.pick(shape, inputs, axes, reverse)
        refs = [self.ref(k, a, shape) for a in inputs]
        if k.sealed:            # reading an operand sealed the kernel we picked
            k = Kernel(shape)
            self.open.append(k)
            refs = [self.ref(k, a, shape) for a in inputs]
        return k, refs

    def elementwise(self, eqn):
        out = eqn.outputs[0]
        shape = out.aval.shape
        alone = self.isolated(eqn)
        if alone:       # a kernel of its own: its operands and result go through memory
            k = Kernel(shape)
            refs = [self.ref(k, a, shape) for a in eqn.inputs]
        else:
            k, refs = self.refs(shape, eqn.inputs)
        if eqn.prim is P.iota:
            arg_dtype = eqn.params["dtype"]
        else:
            arg_dtype = eqn.inputs[-1 if eqn.prim is P.select else 0].aval.dtype
        k.ops.append(Op(eqn.prim, tuple(refs), dict(eqn.params), out.aval.dtype, arg_dtype))
        self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))
        if alone:
            self.array(out)     # stored, so that its users read it from memory
            self.seal(k)

    def random_bits(self, eqn):
        """threefry2x32: one op per output word, both reading the same operands."""
        shape = eqn.outputs[0].aval.shape
        k, refs = self.refs(shape, eqn.inputs)
        for word, out in enumerate(eqn.outputs):
            k.ops.append(Op(eqn.prim, tuple(refs), {"word": word}, out.aval.dtype,
                            out.aval.dtype))
            self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))

    def dynamic_read(self, eqn):
        """dynamic_slice and gather: a read of an external view at a clamped runtime offset."""
        x, out = eqn.inputs[0], eqn.outputs[0]
        shape = out.aval.shape
        v = self.view(x)
        if isinstance(v, Lit):
            v = self.view_of_array(self.array(x), x)
        if eqn.prim is P.dynamic_slice:
            index_atoms = list(eqn.inputs[1:])
            bounds = [d - s for d, s in zip(x.aval.shape, shape, strict=True)]
            strides, base = list(v.strides), v.strides
        else:
            index_atoms, axes = self._gather_columns(eqn.inputs[1], shape), eqn.params["axes"]
            bounds = [x.aval.shape[a] - 1 for a in axes]
            strides = [v.strides[a] for a in axes]
            nb = eqn.inputs[1].aval.ndim - 1
            base = (0,) * nb + tuple(s for i, s in enumerate(v.strides) if i not in axes)
        k, refs = self.refs(shape, index_atoms)
        k.dyn_reads.append(View(v.slot, shape, v.dtype, v.offset, tuple(base)))
        params = {"bounds": tuple(bounds), "strides": tuple(strides),
                  "index_dtypes": tuple(a.aval.dtype for a in index_atoms)}
        k.ops.append(Op(eqn.prim, (("dyn", len(k.dyn_reads) - 1), *refs), params,
                        out.aval.dtype, x.aval.dtype))
        self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))

    def external_view(self, x) -> View:
        v = self.view(x)
        return self.view_of_array(self.array(x), x) if isinstance(v, Lit) else v

    def concatenate(self, eqn):
        """Each output point loads every operand at a clamped position along the dimension
        and selects the one whose range holds it (loads stay in bounds)."""
        out, dim = eqn.outputs[0], eqn.params["dimension"]
        views = [self.external_view(x) for x in eqn.inputs]
        k, _ = self.refs(out.aval.shape, [])
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
        self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))

    def pad(self, eqn):
        """Each output point maps back to an operand position (or to the padding value)."""
        (x, fill), out = eqn.inputs, eqn.outputs[0]
        v = self.external_view(x)
        k, (fill_ref,) = self.refs(out.aval.shape, [fill])
        k.dyn_reads.append(View(v.slot, out.aval.shape, v.dtype, v.offset,
                                (0,) * out.aval.ndim))
        params = {"config": tuple(tuple(c) for c in eqn.params["padding_config"]),
                  "in_shape": v.shape, "strides": v.strides}
        k.ops.append(Op(P.pad, (("dyn", len(k.dyn_reads) - 1), fill_ref), params,
                        out.aval.dtype, out.aval.dtype))
        self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))

    def fresh_copy(self, x) -> int:
        """A new slot holding a copy of ``x`` (for in-place updates)."""
        v = self.external_view(x)
        k = Kernel(v.shape)
        slot = self.new_slot(v.shape, v.dtype)
        k.stores.append((k.read(v), slot, v.dtype))
        self.seal(k)
        return slot

    def update(self, eqn):
        """dynamic_update_slice, scatter, scatter_add: copy the operand, then a kernel over
        the update's shape writes each update element at its clamped position, in C order
        (so the last duplicate wins for scatter, and scatter_add adds in np.add.at order)."""
        x, out = eqn.inputs[0], eqn.outputs[0]
        slot = self.fresh_copy(x)
        strides = c_strides(x.aval.shape)
        if eqn.prim is P.dynamic_update_slice:
            upd, index_atoms = eqn.inputs[1], list(eqn.inputs[2:])
            bounds = [d - u for d, u in zip(x.aval.shape, upd.aval.shape, strict=True)]
            index_strides, base = strides, strides
        else:
            indices, upd, axes = eqn.inputs[1], eqn.inputs[2], eqn.params["axes"]
            index_atoms = self._gather_columns(indices, upd.aval.shape)
            bounds = [x.aval.shape[a] - 1 for a in axes]
            index_strides = [strides[a] for a in axes]
            base = (0,) * (indices.aval.ndim - 1) + tuple(
                s for i, s in enumerate(strides) if i not in axes)
        shape = upd.aval.shape
        k, refs = self.refs(shape, [upd, *index_atoms], axes=(), reverse=False)
        k.axes, k.reverse = (), False       # C-order loops: duplicates resolve as in NumPy
        k.scatters.append(Scatter(eqn.prim is P.scatter_add, refs[0], slot, out.aval.dtype,
                                  tuple(refs[1:]), tuple(a.aval.dtype for a in index_atoms),
                                  tuple(bounds), tuple(index_strides), tuple(base)))
        self.loc[id(out)] = _Reduced(k, slot)

    def _gather_columns(self, indices, shape):
        """One atom per indexed axis: column k of ``indices`` seen over the output shape."""
        v = self.view(indices)
        if isinstance(v, Lit):
            v = self.view_of_array(self.array(indices), indices)
        rest = len(shape) - (indices.aval.ndim - 1)
        cols = []
        for c in range(indices.aval.shape[-1]):
            key = ("gather column", id(indices), c, shape)
            if key not in self.loc:
                self.loc[key] = View(v.slot, tuple(shape), v.dtype, v.offset + c * v.strides[-1],
                                     tuple(v.strides[:-1]) + (0,) * rest)
            cols.append(_ColumnAtom(key, AbstractArray(shape, v.dtype)))
        return cols

    def reduction(self, eqn, axes=None):
        (x,), out = eqn.inputs, eqn.outputs[0]
        axes = tuple(sorted(eqn.params["axes"])) if axes is None else axes
        if not axes:
            if eqn.prim in _COMBINED_WHEN_EMPTY and x.aval.dtype.kind in "fc":
                return self._combine_with_identity(eqn)
            self.loc[id(out)] = x if isinstance(x, Lit) else self.loc[id(x)]
            return
        k, (r,) = self.refs(x.aval.shape, [x], axes, reverse=False)
        k.axes, k.reverse = axes, False
        slot = self.new_slot(out.aval.shape, out.aval.dtype)
        axis = eqn.params["axis"] if eqn.prim.family == "arg_reduction" else None
        k.reduces.append(Reduce(eqn.prim, r, slot, out.aval.dtype, x.aval.dtype, axis))
        self.loc[id(out)] = _Reduced(k, slot)

    def _combine_with_identity(self, eqn):
        """A sum or product over no axes is still ``0 + x`` / ``1 * x`` in NumPy (which
        turns -0.0 into 0.0, and (1+0j)*z is not z when z has an inf or nan part)."""
        (x,), out = eqn.inputs, eqn.outputs[0]
        dt = out.aval.dtype
        combine, identity = _COMBINED_WHEN_EMPTY[eqn.prim]
        k, (r,) = self.refs(out.aval.shape, [x])
        k.ops.append(Op(combine, (("const", np.asarray(identity, dt)[()]), r), {}, dt, dt))
        self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))

    def arg_reduction(self, eqn):
        self.reduction(eqn, (eqn.params["axis"],))

    def scan(self, eqn):
        (x,), out = eqn.inputs, eqn.outputs[0]
        axes, reverse = (eqn.params["axis"],), bool(eqn.params["reverse"])
        k, (r,) = self.refs(x.aval.shape, [x], axes, reverse)
        k.axes, k.reverse = axes, reverse
        k.ops.append(Op(eqn.prim, (r,), {}, out.aval.dtype, x.aval.dtype))
        self.loc[id(out)] = _Member(k, ("op", len(k.ops) - 1))

    def layout(self, eqn):
        (x,), out = eqn.inputs, eqn.outputs[0]
        loc = x if isinstance(x, Lit) else self.loc[id(x)]
        if isinstance(loc, Lit | _Splat):       # a view of a constant fill is a fill
            value = loc.value[()] if isinstance(loc, Lit) and loc.aval.ndim == 0 else None
            value = loc.value if isinstance(loc, _Splat) else value
            if value is not None:
                self.loc[id(out)] = _Splat(value, out.aval.shape, out.aval.dtype)
                return
        v = self.view(x)
        if isinstance(v, Lit) or (eqn.prim is P.reshape and not v.contiguous()):
            v = self.view_of_array(self.array(x), x)
        self.loc[id(out)] = VIEW_RULES[eqn.prim](v, out.aval.shape, eqn.params)

    def view_of_array(self, src, atom):
        if src[0] == "lit":
            slot = self.new_slot(atom.aval.shape, atom.aval.dtype)
            self.consts[slot] = np.ascontiguousarray(src[1])
            return self._buffer_view(slot, atom.aval.shape, atom.aval.dtype)
        return self._buffer_view(src[1], src[2], atom.aval.dtype)

    def blas(self, eqn):
        if eqn.inputs[0].aval.dtype not in BLAS_DTYPES:
            return self.contraction_loop(eqn)
        lhs, rhs = (self.array(a) for a in eqn.inputs)
        out = eqn.outputs[0]
        slot = self.new_slot(out.aval.shape, out.aval.dtype)
        self.steps.append(Blas(lhs, rhs, slot, eqn.params["dimension_numbers"]))
        self.loc[id(out)] = self._buffer_view(slot, out.aval.shape, out.aval.dtype)

    def contraction_loop(self, eqn):
        """Integer/bool/float16 dot_general as a loop nest: the product of two views over
        the space (batch, lhs free, rhs free, contracted), summed over the contracted
        dimensions as NumPy's own matmul loop does: integers in the dtype, wrapping;
        float16 as exact float32 products summed in order in float32, rounded once."""
        (lhs, rhs), out = eqn.inputs, eqn.outputs[0]
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        lfree = [i for i in range(lhs.aval.ndim) if i not in lc and i not in lb]
        rfree = [i for i in range(rhs.aval.ndim) if i not in rc and i not in rb]
        space = out.aval.shape + tuple(lhs.aval.shape[i] for i in lc)
        vl, vr = self.external_view(lhs), self.external_view(rhs)
        ls = (tuple(vl.strides[i] for i in (*lb, *lfree)) + (0,) * len(rfree)
              + tuple(vl.strides[i] for i in lc))
        rs = (tuple(vr.strides[i] for i in rb) + (0,) * len(lfree)
              + tuple(vr.strides[i] for i in (*rfree, *rc)))
        dt = out.aval.dtype
        half = dt == np.float16
        acc = np.dtype(np.float32) if half else dt
        k = Kernel(space, axes=tuple(range(out.aval.ndim, len(space))), reverse=False)
        a = k.read(View(vl.slot, space, dt, vl.offset, ls))
        b = k.read(View(vr.slot, space, dt, vr.offset, rs))
        k.ops.append(Op(P.mul, (a, b), {}, acc, acc))
        slot = self.new_slot(out.aval.shape, dt)
        k.reduces.append(Reduce(P.reduce_sum, ("op", 0), slot, dt, acc, ordered=half))
        self.seal(k)
        self.loc[id(out)] = self._buffer_view(slot, out.aval.shape, dt)

    def conv(self, eqn):
        lhs, rhs = (self.array(a) for a in eqn.inputs)
        out = eqn.outputs[0]
        slot = self.new_slot(out.aval.shape, out.aval.dtype)
        self.steps.append(Conv(lhs, rhs, slot, dict(eqn.params)))
        self.loc[id(out)] = self._buffer_view(slot, out.aval.shape, out.aval.dtype)

    def window_reduction(self, eqn):
        """reduce_window_*: a reduction kernel over (output, window) of a strided view of
        the operand (padded and dilated first, into its own buffer, when asked)."""
        (x,), out, p = eqn.inputs, eqn.outputs[0], eqn.params
        dt, nd = x.aval.dtype, x.aval.ndim
        fill = 0 if eqn.prim is P.reduce_window_sum else \
            dtypes.extreme_identity(dt, "max" if eqn.prim is P.reduce_window_max else "min")
        k = Kernel(out.aval.shape + tuple(p["window_dimensions"]),
                   axes=tuple(range(nd, 2 * nd)), reverse=False)
        r = k.read(self._windows(self._window_source(x, fill, p), p, out.aval.shape))
        slot = self.new_slot(out.aval.shape, dt)
        k.reduces.append(Reduce(_WINDOW_REDUCE[eqn.prim], r, slot, dt, dt))
        self.seal(k)
        self.loc[id(out)] = self._buffer_view(slot, out.aval.shape, dt)

    def _window_source(self, x, fill, p) -> View:
        """``x`` padded with ``fill`` and base-dilated as the window parameters ``p`` ask
        (into its own buffer only then)."""
        if not any(lo or hi for lo, hi in p["padding"]) and \
                not any(b > 1 for b in p["base_dilation"]):
            return self.external_view(x)
        v, dt, nd = self.external_view(x), x.aval.dtype, x.aval.ndim
        config = tuple((lo, hi, b - 1) for (lo, hi), b in
                       zip(p["padding"], p["base_dilation"], strict=True))
        shape = tuple(lo + hi + 1 + (d - 1) * (it + 1) for d, (lo, hi, it) in
                      zip(x.aval.shape, config, strict=True))
        k = Kernel(shape)
        k.dyn_reads.append(View(v.slot, shape, v.dtype, v.offset, (0,) * nd))
        params = {"config": config, "in_shape": v.shape, "strides": v.strides}
        k.ops.append(Op(P.pad, (("dyn", 0), ("const", np.asarray(fill, dt)[()])), params,
                        dt, dt))
        slot = self.new_slot(shape, dt)
        k.stores.append((("op", 0), slot, dt))
        self.seal(k)
        return self._buffer_view(slot, shape, dt)

    @staticmethod
    def _windows(v: View, p, out_shape) -> View:
        """``v`` (padded) seen over the space (output position, window tap)."""
        space = tuple(out_shape) + tuple(p["window_dimensions"])
        strides = tuple(st * s for st, s in zip(v.strides, p["window_strides"], strict=True)) \
            + tuple(st * w for st, w in zip(v.strides, p["window_dilation"], strict=True))
        return View(v.slot, space, v.dtype, v.offset, strides)

    @staticmethod
    def _flat_tap(k: Kernel, dims, window, dt):
        """Ops of ``k`` computing the C-order flat index of the loop position over ``dims``
        (sizes ``window``) in integer dtype ``dt``; returns its ref."""
        ref = None
        for d, size in zip(dims, window, strict=True):
            k.ops.append(Op(P.iota, (), {"dimension": d, "dtype": dt, "shape": k.shape},
                            dt, dt))
            tap = ("op", len(k.ops) - 1)
            if ref is not None:
                k.ops.append(Op(P.mul, (ref, ("const", dt.type(size))), {}, dt, dt))
                k.ops.append(Op(P.add, (("op", len(k.ops) - 1), tap), {}, dt, dt))
                tap = ("op", len(k.ops) - 1)
            ref = tap
        return ref if ref is not None else ("const", dt.type(0))

    def select_and_gather(self, eqn):
        """select_and_gather_add: one kernel over (output, window) of the padded operand and
        tangent, an argmax/argmin that keeps the tangent at the first max/min (NaN first)."""
        (t, x), out, p = eqn.inputs, eqn.outputs[0], eqn.params
        nd, shape = x.aval.ndim, out.aval.shape
        sel = P.argmax if p["select"] == "max" else P.argmin
        k = Kernel(shape + tuple(p["window_dimensions"]), axes=tuple(range(nd, 2 * nd)),
                   reverse=False)
        fill = dtypes.extreme_identity(x.aval.dtype, p["select"])
        rx = k.read(self._windows(self._window_source(x, fill, p), p, shape))
        rt = k.read(self._windows(self._window_source(t, 0, p), p, shape))
        slot = self.new_slot(shape, out.aval.dtype)
        k.reduces.append(Reduce(sel, rx, slot, out.aval.dtype, x.aval.dtype, payload=rt))
        self.seal(k)
        self.loc[id(out)] = self._buffer_view(slot, shape, out.aval.dtype)

    def select_and_scatter(self, eqn):
        """select_and_scatter_add: the flat in-window index of each window's first max/min
        (one argmax kernel), then, serially over (output, tap), each window's cotangent (or
        0) added where each tap lands in a zeroed padded buffer: windows in reverse C order
        when they overlap (so each position adds in the interpreter's tap order), stored
        without the zeroing pass when the windows tile the buffer. The result is a strided
        view of that buffer."""
        (ct, x), out, p = eqn.inputs, eqn.outputs[0], eqn.params
        nd, shape, window = x.aval.ndim, ct.aval.shape, tuple(p["window_dimensions"])
        dt, i32 = out.aval.dtype, np.dtype(np.int32)
        sel = P.argmax if p["select"] == "max" else P.argmin
        k = Kernel(shape + window, axes=tuple(range(nd, 2 * nd)), reverse=False)
        fill = dtypes.extreme_identity(x.aval.dtype, p["select"])
        rx = k.read(self._windows(self._window_source(x, fill, p), p, shape))
        chosen = self.new_slot(shape, i32)
        k.reduces.append(Reduce(sel, rx, chosen, i32, x.aval.dtype,
                                payload=self._flat_tap(k, range(nd, 2 * nd), window, i32)))
        self.seal(k)
        sizes = tuple(1 + (d - 1) * bd + lo + hi for d, bd, (lo, hi) in
                      zip(x.aval.shape, p["base_dilation"], p["padding"], strict=True))
        cs, zero = c_strides(sizes), ("const", np.asarray(0, dt)[()])
        once = all(w == 1 or o == 1 or s >= (w - 1) * wd + 1 for w, o, s, wd in
                   zip(window, shape, p["window_strides"], p["window_dilation"], strict=True))
        tiled = once and math.prod(shape) * math.prod(window) == math.prod(sizes)
        acc = self.new_slot(sizes, dt)
        if not tiled:
            z = Kernel(sizes)
            z.stores.append((zero, acc, dt))
            self.seal(z)
        # overlapping windows: a position takes its cotangents in increasing tap order
        # (the interpreter's), which is decreasing window order, so windows go backwards
        back = not once
        space = shape + window
        k = Kernel(space, axes=(), reverse=False)

        def over_space(out_strides, tap_strides=(0,) * nd):
            """Strides over (output, tap), and the offset where the outputs run backwards."""
            if not back:
                return 0, tuple(out_strides) + tuple(tap_strides)
            return (sum((o - 1) * st for o, st in zip(shape, out_strides, strict=True)),
                    tuple(-st for st in out_strides) + tuple(tap_strides))
        v = self.external_view(ct)
        at, st = over_space(c_strides(shape))
        rk = k.read(View(chosen, space, i32, at, st))
        at, st = over_space(v.strides)
        rc = k.read(View(v.slot, space, v.dtype, v.offset + at, st))
        tap = self._flat_tap(k, range(nd, 2 * nd), window, i32)
        k.ops.append(Op(P.eq, (rk, tap), {}, np.dtype(bool), i32))
        k.ops.append(Op(P.select, (("op", len(k.ops) - 1), rc, zero), {}, dt, dt))
        if tiled:       # 0 + value, as the interpreter's zeros + value (-0.0 becomes 0.0)
            k.ops.append(Op(P.add, (zero, ("op", len(k.ops) - 1)), {}, dt, dt))
        at, st = over_space(
            tuple(c * s for c, s in zip(cs, p["window_strides"], strict=True)),
            tuple(c * wd for c, wd in zip(cs, p["window_dilation"], strict=True)))
        i64 = np.dtype(np.int64)
        # the static offset of the backward walk, as a constant index (clipped to itself)
        k.scatters.append(Scatter(not tiled, ("op", len(k.ops) - 1), acc, dt,
                                  (("const", np.int64(at)),), (i64,), (at,), (1,), st))
        self.seal(k)
        self.loc[id(out)] = View(acc, x.aval.shape, dt,
                                 sum(lo * c for (lo, _), c in zip(p["padding"], cs, strict=True)),
                                 tuple(bd * c for bd, c in
                                       zip(p["base_dilation"], cs, strict=True)))

    def sort(self, eqn):
        """A native sort step over materialized operands, with an int64 scratch slot (four
        rows of the sorted length per part of the rows) that lives in the arena."""
        shape, dim = eqn.inputs[0].aval.shape, eqn.params["dimension"]
        inputs = [self.view_of_array(self.array(a), a).slot for a in eqn.inputs]
        n = shape[dim]
        rows = math.prod(shape) // n if n else 0
        parts = SORT_PARTS if math.prod(shape) >= SORT_PARALLEL_POINTS else 1
        per = max(-(-rows // parts), 1)
        scratch = self.new_slot((max(-(-rows // per), 1), 4 * n), np.int64)
        outputs = []
        for v in eqn.outputs:
            outputs.append(self.new_slot(shape, v.aval.dtype))
            self.loc[id(v)] = self._buffer_view(outputs[-1], shape, v.aval.dtype)
        self.steps.append(Sort(tuple(shape), dim, eqn.params["num_keys"], inputs,
                               [a.aval.dtype for a in eqn.inputs], outputs, scratch, rows, per))

    def fallback(self, eqn, reason):
        inputs, outs = self._materialized(eqn)
        self.steps.append(Fallback(eqn, inputs, outs, reason))

    def lapack(self, eqn):
        """A linalg equation the backend lowers: a Lapack step on materialized operands,
        with the scratch slots ``scratch_shapes(eqn)`` asks for (in the arena)."""
        inputs, outs = self._materialized(eqn)
        scratch = [self.new_slot(shape, dtype) for shape, dtype in self.scratch_shapes(eqn)]
        self.steps.append(Lapack(eqn, inputs, outs, scratch))

    def loop(self, eqn):
        """cond/while/scan: a Loop step; ``loops.py`` compiles the bodies once."""
        inputs, outs = self._materialized(eqn)
        self.steps.append(Loop(eqn, inputs, outs))

    def _materialized(self, eqn):
        inputs = [self.array(a) for a in eqn.inputs]
        outs = []
        for v in eqn.outputs:
            slot = self.new_slot(v.aval.shape, v.aval.dtype)
            outs.append(slot)
            self.loc[id(v)] = self._buffer_view(slot, v.aval.shape, v.aval.dtype)
        return inputs, outs

    def run(self) -> Plan:
        for eqn in self.graph.eqns:
            reason = self.gap(eqn)
            if reason is not None:
                self.fallback(eqn, reason)
            else:
                DISPATCH[_KIND.get(eqn.prim, eqn.prim.family)](self, eqn)
        outputs = [("lit", o.value) if isinstance(o, Lit) else self.array(o)
                   for o in self.graph.outputs]
        for k in list(self.open):
            self.seal(k)
        steps = [s for s in self.steps
                 if not isinstance(s, Kernel) or s.stores or s.reduces or s.scatters]
        for s in steps:
            if isinstance(s, Kernel) and s.reverse is None:
                s.reverse = False
        return Plan(len(self.graph.inputs), self.slots, self.consts, steps, outputs)


def numpy_gap(eqn) -> str | None:
    """Why ``eqn`` must run through the interpreter on every backend (None: nothing in
    NumPy's own semantics stops a lowering): empty axes where NumPy raises, and loops
    whose rounding only NumPy's own loop reproduces."""
    prim = eqn.prim
    if prim in NEVER_LOWERED:
        return NEVER_LOWERED[prim]
    limit = NUMPY_DTYPE_LIMITS.get(prim)
    if limit is not None and eqn.inputs[0].aval.dtype.kind in limit[0]:
        return limit[1]
    if prim in (P.gather, P.scatter, P.scatter_add) and \
            eqn.inputs[1].aval.size // max(eqn.inputs[1].aval.shape[-1], 1) and any(
            eqn.inputs[0].aval.shape[a] == 0 for a in eqn.params["axes"]):
        return "indexing an empty axis raises in NumPy"
    if prim is P.iota and eqn.params["dtype"].kind == "b":
        return "iota: NumPy rejects boolean ranges longer than 2"
    if prim is P.reduce_window_sum and eqn.inputs[0].aval.dtype == np.float16:
        return "reduce_window_sum: float16 sums round at each addition only in NumPy's loop"
    if (prim in _WINDOW_REDUCE or prim in _SELECT_WINDOW) and \
            0 in eqn.outputs[0].aval.shape + eqn.inputs[-1].aval.shape:
        return "an empty windowed reduction (interpreter)"
    if prim in (P.reduce_max, P.reduce_min) and any(
            eqn.inputs[0].aval.shape[a] == 0 for a in eqn.params["axes"]):
        return "max/min of an empty axis raises in NumPy"
    return None


DISPATCH = {"view": Partitioner.layout, "reduction": Partitioner.reduction,
            "contraction": Partitioner.blas, "creation": Partitioner.elementwise,
            "dynamic": Partitioner.dynamic_read, "cumulative": Partitioner.scan,
            "arg_reduction": Partitioner.arg_reduction, "concatenate": Partitioner.concatenate,
            "pad": Partitioner.pad, "update": Partitioner.update, "sort": Partitioner.sort,
            "random": Partitioner.random_bits,
            "conv": Partitioner.conv, "window": Partitioner.window_reduction,
            "select_gather": Partitioner.select_and_gather,
            "select_scatter": Partitioner.select_and_scatter,
            "control": Partitioner.loop, "linalg": Partitioner.lapack,
            **{f: Partitioner.elementwise for f in ELEMENTWISE_FAMILIES}}
_KIND = {**{p: "view" for p in VIEW_OPS}, P.gather: "dynamic", P.dynamic_slice: "dynamic",
         P.concatenate: "concatenate", P.pad: "pad", P.dynamic_update_slice: "update",
         P.scatter: "update", P.scatter_add: "update",
         P.select_and_gather_add: "select_gather", P.select_and_scatter_add: "select_scatter"}
# primitives with a planning rule of their own besides the elementwise families (each
# backend's gap says which of these, and which elementwise primitives, it lowers)
PLANNED = set(VIEW_RULES) | set(P.REDUCTIONS) | {P.convert, P.iota, P.dot_general, P.gather,
                                                 P.dynamic_slice, P.argmax, P.argmin, *SCANS,
                                                 P.concatenate, P.pad, P.dynamic_update_slice,
                                                 P.scatter, P.scatter_add, P.sort,
                                                 P.threefry2x32, P.conv_general_dilated,
                                                 *_WINDOW_REDUCE, *_SELECT_WINDOW,
                                                 *P.CONTROL_FLOW}


def _no_scratch(eqn):
    return []


def _never(eqn):
    return False


def partition(graph: Graph, gap, scratch_shapes=None, isolated=None) -> Plan:
    """The plan of ``graph``: its values as numbered slots, its equations as steps.

    Args:
        graph: the functional graph to plan.
        gap: ``gap(eqn) -> str | None``, the backend's rule: a reason makes ``eqn`` a
            :class:`Fallback` step (the interpreter runs it); None plans it natively
            (a kernel member, a product, a sort, a loop, a linalg step, ...). It should
            return :func:`numpy_gap`'s reason where that has one.
        scratch_shapes: ``scratch_shapes(eqn) -> [(shape, dtype)]``, the scratch slots a
            linalg equation's :class:`Lapack` step takes (default: none).
        isolated: ``isolated(eqn) -> bool``, elementwise equations the backend runs as a
            kernel of their own, reading their operands from memory and storing their
            result (default: none): a call its code cannot vectorize, whose kernel would
            otherwise run the math around it one element at a time.

    Example::

        >>> graph = fc.make_graph(lambda x: fnp.sin(x) * 2 + x.sum())(np.ones((3, 4)))
        >>> plan = partition(graph, numpy_gap)
        >>> [type(s).__name__ for s in plan.steps]      # the sum, then the rest
        ['Kernel', 'Kernel']
    """
    return Partitioner(graph, gap, scratch_shapes, isolated).run()
