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
of it is needed outside, which keeps the step order topological. :data:`DISPATCH` maps
each kind of equation to its rule: the :class:`Partitioner`'s own (elementwise chains,
views, sorts, fallbacks, linalg and loops) or one in ``indexing.py``, ``reductions.py``,
``products.py`` or ``windows.py``, each a function of the partitioner and the equation.
"""

from __future__ import annotations

import math
import os

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Graph, Lit, Var
from functorch_core.ir.passes.precision import expand_precision

from . import indexing, products, reductions, windows
from .buffers import step_slots
from .members import ColumnAtom, Member, Reduced, Splat
from .plan import (
    Fallback,
    Kernel,
    Lapack,
    Loop,
    Op,
    Plan,
    Sort,
    View,
    c_strides,
)
from .views import VIEW_RULES
from .windows import WINDOW_REDUCE

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
_SELECT_WINDOW = (P.select_and_gather_add, P.select_and_scatter_add)
VIEW_OPS = (P.broadcast_in_dim, P.transpose, P.reshape, P.squeeze, P.expand_dims, P.rev,
            P.slice)
# "special3": betainc and betainc_grad, elementwise in three operands
ELEMENTWISE_FAMILIES = ("unary", "binary", "select", "convert", "special3")
SCANS = (P.cumsum, P.cumprod, P.cummax, P.cummin)
# reductions that NumPy still applies over no axes: (combining op, identity)
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


class _Room:
    """``room(k)``: whether kernel ``k`` may take another op: :func:`_room`, and fewer
    than ``n`` ops of the ``heavy = (primitives, n)`` the backend bounds (counted as the
    kernel grows; None: no bound)."""

    def __init__(self, heavy):
        self.heavy, self.most = heavy or (frozenset(), None)
        self.seen: dict = {}        # kernel -> (ops counted, heavy ops among them)

    def __call__(self, k: Kernel) -> bool:
        if not _room(k):
            return False
        if self.most is None:
            return True
        seen, count = self.seen.get(k, (0, 0))
        if seen < len(k.ops):
            count += sum(op.prim in self.heavy for op in k.ops[seen:])
            self.seen[k] = (len(k.ops), count)
        return count < self.most


class Partitioner:
    """One forward walk over ``graph``'s equations; see :func:`partition`."""

    def __init__(self, graph: Graph, gap, scratch_shapes=None, isolated=None, heavy=None,
                 widen_bf16_macs=0, input_strides=None):
        self.graph = graph
        self.widen_bf16_macs = widen_bf16_macs
        self.room = _Room(heavy)
        self.gap = gap
        self.scratch_shapes = scratch_shapes or _no_scratch
        self.isolated = isolated or _never
        self.slots = []
        self.consts = {}
        self.steps = []
        # unsealed kernels in creation order, and those of them that may take more ops
        # (a full one never does again: pick() stops scanning it)
        self.open: dict[Kernel, None] = {}
        self.roomy: dict[Kernel, None] = {}
        self.loc: dict[int, object] = {}     # id(var) -> View | Member | Reduced | Lit
        for i, v in enumerate(graph.inputs):
            shape, dtype = v.aval.shape, v.aval.dtype
            view = self._buffer_view(self.new_slot(shape, dtype), shape, dtype)
            if input_strides and input_strides[i] is not None:
                view = View(view.slot, view.shape, view.dtype, 0, tuple(input_strides[i]))
            self.loc[id(v)] = view

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
        if isinstance(loc, Splat):
            slot = self.new_slot(loc.shape, loc.dtype)
            self.consts[slot] = np.full(loc.shape, loc.value, loc.dtype)
            loc = self._buffer_view(slot, loc.shape, loc.dtype)
            self.loc[id(atom)] = loc
        elif isinstance(loc, Member):
            k = loc.kernel
            slot = k.stored.get(loc.ref)
            if slot is None:
                slot = self.new_slot(atom.aval.shape, atom.aval.dtype)
                k.stores.append((loc.ref, slot, atom.aval.dtype))
                k.stored[loc.ref] = slot
            self.seal(k)
            loc = self._buffer_view(slot, atom.aval.shape, atom.aval.dtype)
            self.loc[id(atom)] = loc
        elif isinstance(loc, Reduced):
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
        self.open.pop(k, None)
        self.roomy.pop(k, None)
        self.steps.append(k)

    # -- kernels -------------------------------------------------------------
    def ref(self, k: Kernel, atom, shape):
        if isinstance(atom, ColumnAtom):
            return k.read(self.loc[atom.key])
        if isinstance(atom, Var):
            loc = self.loc[id(atom)]
            if isinstance(loc, Member) and loc.kernel is k:
                return loc.ref
            if isinstance(loc, Splat):
                return ("const", loc.value)
        v = self.view(atom)
        if isinstance(v, Lit):
            return ("const", v.value[()])
        if v.shape != shape:        # a rank-0 operand of an elementwise op
            v = View(v.slot, shape, v.dtype, v.offset, (0,) * len(shape))
        return k.read(v)

    def pick(self, shape, inputs, axes=None, reverse=None) -> Kernel:
        def fits(k):
            return (not k.sealed and k.shape == shape and self.room(k)
                    and (axes is None or k.axes in (None, axes))
                    and (reverse is None or k.reverse in (None, reverse)))
        for a in inputs:
            loc = self.loc.get(id(a)) if isinstance(a, Var) else None
            if isinstance(loc, Member) and fits(loc.kernel):
                return loc.kernel
        full, found = [], None
        for k in self.roomy:
            if not self.room(k):
                full.append(k)
            elif fits(k):
                found = k
                break
        for k in full:
            del self.roomy[k]
        if found is not None:
            return found
        return self.open_kernel(shape)

    def open_kernel(self, shape) -> Kernel:
        k = Kernel(shape)
        self.open[k] = self.roomy[k] = None
        return k

    def refs(self, shape, inputs, axes=None, reverse=None):
        k = self.pick(shape, inputs, axes, reverse)
        refs = [self.ref(k, a, shape) for a in inputs]
        if k.sealed:            # reading an operand sealed the kernel we picked
            k = self.open_kernel(shape)
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
        self.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))
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
            self.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))

    def external_view(self, x) -> View:
        v = self.view(x)
        return self.view_of_array(self.array(x), x) if isinstance(v, Lit) else v

    def layout(self, eqn):
        (x,), out = eqn.inputs, eqn.outputs[0]
        loc = x if isinstance(x, Lit) else self.loc[id(x)]
        if isinstance(loc, Lit | Splat):       # a view of a constant fill is a fill
            value = loc.value[()] if isinstance(loc, Lit) and loc.aval.ndim == 0 else None
            value = loc.value if isinstance(loc, Splat) else value
            if value is not None:
                self.loc[id(out)] = Splat(value, out.aval.shape, out.aval.dtype)
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
        origins = []        # (kernel, step or slot, source) per equation that computes
        for eqn in self.graph.eqns:
            n = len(self.steps)
            reason = self.gap(eqn)
            if reason is not None:
                self.fallback(eqn, reason)
            else:
                DISPATCH[_KIND.get(eqn.prim, eqn.prim.family)](self, eqn)
            if eqn.source and eqn.prim not in VIEW_OPS:
                origins.append((_homes(self, eqn, n), eqn.source))
        outputs = [("lit", o.value) if isinstance(o, Lit) else self.array(o)
                   for o in self.graph.outputs]
        for k in list(self.open):
            self.seal(k)
        steps = [s for s in self.steps
                 if not isinstance(s, Kernel) or s.stores or s.reduces or s.scatters]
        for s in steps:
            if isinstance(s, Kernel) and s.reverse is None:
                s.reverse = False
        return Plan(len(self.graph.inputs), self.slots, self.consts, steps, outputs,
                    _sources(steps, origins))


def _homes(planner, eqn, n) -> list:
    """Where ``eqn`` was planned: the kernels its results are members of, the slots they
    were written to, the steps (other than kernels) its dispatch added after the first
    ``n``."""
    homes = [s for s in planner.steps[n:] if not isinstance(s, Kernel)]
    for v in eqn.outputs:
        loc = planner.loc.get(id(v))
        if isinstance(loc, Member | Reduced):
            homes.append(loc.kernel)
        elif isinstance(loc, View):
            homes.append(loc.slot)
    return homes


def _sources(steps, origins) -> dict:
    """{id(step): the sources of the equations planned into it, in graph order}."""
    writer, index = {}, {id(s): s for s in steps}
    for s in steps:
        for slot in step_slots(s)[1]:
            writer.setdefault(slot, s)
    found: dict = {}
    for homes, source in origins:
        for h in homes:
            step = writer.get(h) if isinstance(h, int) else h
            if step is not None and id(step) in index:
                found.setdefault(id(step), {})[source] = None
    return {k: tuple(v) for k, v in found.items()}


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
    if prim is P.reduce_window_sum and eqn.inputs[0].aval.dtype in dtypes.NARROW_FLOATS:
        return ("reduce_window_sum: float16 sums round at each addition in NumPy's loop, "
                "bfloat16 ones accumulate in float32 in the interpreter's")
    if (prim in WINDOW_REDUCE or prim in _SELECT_WINDOW) and \
            0 in eqn.outputs[0].aval.shape + eqn.inputs[-1].aval.shape:
        return "an empty windowed reduction (interpreter)"
    if prim in (P.reduce_max, P.reduce_min) and any(
            eqn.inputs[0].aval.shape[a] == 0 for a in eqn.params["axes"]):
        return "max/min of an empty axis raises in NumPy"
    return None


def sort(p: Partitioner, eqn):
    """A native sort step over materialized operands, with an int64 scratch slot (four
    rows of the sorted length per part of the rows) that lives in the arena."""
    shape, dim = eqn.inputs[0].aval.shape, eqn.params["dimension"]
    inputs = [p.view_of_array(p.array(a), a).slot for a in eqn.inputs]
    n = shape[dim]
    rows = math.prod(shape) // n if n else 0
    parts = SORT_PARTS if math.prod(shape) >= SORT_PARALLEL_POINTS else 1
    per = max(-(-rows // parts), 1)
    scratch = p.new_slot((max(-(-rows // per), 1), 4 * n), np.int64)
    outputs = []
    for v in eqn.outputs:
        outputs.append(p.new_slot(shape, v.aval.dtype))
        p.loc[id(v)] = p._buffer_view(outputs[-1], shape, v.aval.dtype)
    p.steps.append(Sort(tuple(shape), dim, eqn.params["num_keys"], inputs,
                           [a.aval.dtype for a in eqn.inputs], outputs, scratch, rows, per))


DISPATCH = {"view": Partitioner.layout, "reduction": reductions.reduction,
            "contraction": products.blas, "creation": Partitioner.elementwise,
            "dynamic": indexing.dynamic_read, "cumulative": reductions.scan,
            "arg_reduction": reductions.arg_reduction, "concatenate": indexing.concatenate,
            "pad": indexing.pad, "update": indexing.update, "sort": sort,
            "random": Partitioner.random_bits,
            "conv": products.conv, "window": windows.window_reduction,
            "select_gather": windows.select_and_gather,
            "select_scatter": windows.select_and_scatter,
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
                                                 *WINDOW_REDUCE, *_SELECT_WINDOW,
                                                 *P.CONTROL_FLOW}


def _no_scratch(eqn):
    return []


def _never(eqn):
    return False


def partition(graph: Graph, gap, scratch_shapes=None, isolated=None, heavy=None,
              widen_bf16_macs=0, input_strides=None) -> Plan:
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
        heavy: ``(primitives, n)``: a kernel holds fewer than ``n`` ops of those
            primitives (the backend's long inline code), so a long chain of them becomes
            several kernels of bounded size, most of them alike (default: no bound).
        widen_bf16_macs: bfloat16 products of at most this many multiply-adds are planned
            as the interpreter computes them: operands widened exactly to float32 (kernel
            ops), a float32 :class:`Blas` step, its result rounded once to bfloat16 (an op
            that fuses with its users), so a backend runs them with its float32 products
            (default 0: every bfloat16 product is a bfloat16 :class:`Blas` step).
        input_strides: per graph input, None (a C-contiguous buffer) or the element strides
            its buffer is read with from its first element (a transposed, sliced or
            reversed array passed as it is): kernels read it through that view, and any
            other consumer (a product, a fallback, a reshape that needs C order, a result)
            gets a C-contiguous copy a kernel makes (default: all C-contiguous).

    Example::

        >>> graph = fc.make_graph(lambda x: fnp.sin(x) * 2 + x.sum())(np.ones((3, 4)))
        >>> plan = partition(graph, numpy_gap)
        >>> [type(s).__name__ for s in plan.steps]      # the sum, then the rest
        ['Kernel', 'Kernel']
    """
    # reduced-precision products become reduce_precision and plain products here, once
    # for every compiling backend
    return Partitioner(expand_precision(graph), gap, scratch_shapes, isolated, heavy,
                       widen_bf16_macs, input_strides).run()
