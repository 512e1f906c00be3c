"""Run a graph on the GPU: the shared partition, fused kernels from ``emit``, products
through the array module's matmul on views (``products``: cuBLAS with transpose flags
through CuPy), structural kernels from ``indexing``, named array-module calls from
``calls``, and only ``calls.HOST``'s named exceptions (and op/dtype pairs the kernels do
not cover yet) on the host.

Equations outside the fused kernels are wrapped, before partitioning, as one-equation
``call`` equations, which the shared partitioner always leaves to a fallback step; that
step runs the equation's structural kernel or named call on device arrays, or, for a
host equation, the interpreter on host copies with the results copied back.
"""

from __future__ import annotations

import threading

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Eqn, Graph, Var
from functorch_core.ir.passes.precision import expand_precision

from .. import profiling
from ..interpreter import IMPLS
from ..planning import buffers
from ..planning.partition import VIEW_OPS, numpy_gap, partition
from ..planning.plan import Blas, Fallback, Kernel, kernel_label
from . import arrays, calls, emit, indexing, products, scalar
from .availability import array_module, simulated

# fused into emit's kernels besides its op tables (index arithmetic, casts, the iota);
# products run as the array module's matmul on views (cuBLAS with transpose flags)
FUSED = (*VIEW_OPS, P.select, P.convert, P.iota)
PRODUCTS = {P.dot_general: "xp.matmul on views (cuBLAS through CuPy)"}
_REDUCTIONS = {P.reduce_sum, P.reduce_prod, P.reduce_max, P.reduce_min}


def device_gap(eqn) -> str | None:
    """Why ``eqn`` runs on the host (None: it becomes part of a kernel or a product)."""
    prim = eqn.prim
    if prim is P.dot_general:
        dt = eqn.inputs[0].aval.dtype
        return None if dt in products.DTYPES else f"dot_general on {dt} is not rendered"
    avals = [a.aval for a in (*eqn.inputs, *eqn.outputs)]
    bad = sorted({str(a.dtype) for a in avals if a.dtype not in emit.DTYPES})
    if bad:
        return f"{prim.name}: dtype {', '.join(bad)} (kernels cover " \
               f"{', '.join(str(d) for d in emit.DTYPES)})"
    if prim in VIEW_OPS:
        return None
    if prim in scalar.PRIMITIVES:
        return scalar.gap(prim, eqn.params["dtype"] if prim is P.iota else
                          eqn.inputs[-1].aval.dtype)
    if prim in _REDUCTIONS or prim in emit.ARG_REDUCTIONS:
        return emit.reduction_gap(prim, eqn.inputs[0].aval.dtype)
    return f"{prim.name} has no kernel rendering yet"


def lowering(eqn) -> tuple[str, str]:
    """How ``eqn`` runs: ``("kernel", "")`` fused by ``emit``, ``("indexing", name)`` a
    structural kernel, ``("call", routine)`` a named array-module call, or ``("host",
    reason)``: a named exception (``calls.HOST``) or a gap of the fused kernels."""
    gap = device_gap(eqn)
    if gap is None:
        return "kernel", ""
    if any(v.aval.dtype == dtypes.bfloat16 for v in (*eqn.inputs, *eqn.outputs)):
        return "host", gap      # no kernel of any kind takes bfloat16 (nor does CuPy)
    if eqn.prim in indexing.RENDERED:
        return "indexing", f"{eqn.prim.name} kernel"
    if eqn.prim in calls.COMPLEX_HOST and any(v.aval.dtype.kind == "c" for v in eqn.outputs):
        return "host", f"{eqn.prim.name}: {calls.COMPLEX_HOST[eqn.prim]}"
    if eqn.prim in calls.CALLS:
        return "call", calls.CALLS[eqn.prim]
    if eqn.prim in calls.HOST:
        return "host", f"{eqn.prim.name}: {calls.HOST[eqn.prim]}"
    return "host", gap


_WRAPPED = "cuda step: "


def _wrapped(eqn, kind, detail):
    return _call_named(eqn, f"{_WRAPPED}{kind}: {detail}")


def _call_named(eqn, name):
    """``eqn`` as a one-equation ``call`` named ``name`` (the partition leaves it to a
    fallback step, which the name routes)."""
    inner_in = [Var(a.aval) for a in eqn.inputs]
    inner_out = [Var(v.aval) for v in eqn.outputs]
    inner = Graph(inner_in, [Eqn(eqn.prim, tuple(inner_in), tuple(inner_out), eqn.params,
                                 eqn.source)], inner_out)
    return Eqn(P.call, eqn.inputs, eqn.outputs, {"graph": inner, "name": name}, eqn.source)


def split_for_device(graph):
    """``graph`` with each equation outside the fused kernels wrapped as a ``call``; and
    the reasons of those that run on the host."""
    eqns, host = [], []
    for e in graph.eqns:
        kind, detail = lowering(e)
        if kind == "kernel" and e.prim is P.dot_general \
                and e.inputs[0].aval.dtype not in products.GEMM_DTYPES:
            eqns.append(_call_named(e, products.DEVICE_CALL))   # not a loop-nest kernel
        elif kind == "kernel":
            eqns.append(e)
        else:
            if kind == "host":
                host.append(detail)
            eqns.append(_wrapped(e, kind, detail))
    return Graph(list(graph.inputs), eqns, list(graph.outputs)), host


def sources(graph):
    """The plan of ``graph`` and, per kernel step, its rendered sources."""
    split, host = split_for_device(expand_precision(graph))
    plan = partition(split, numpy_gap)
    sim = simulated()
    rendered = {id(s): emit.render(s, sim) for s in plan.steps if isinstance(s, Kernel)}
    return plan, rendered, host


def compile_graph(graph):
    plan, rendered, host = sources(graph)
    sim, xp = simulated(), array_module()
    consts = {s: xp.asarray(c) for s, c in plan.consts.items()}
    steps, structural = [], []
    for s in plan.steps:
        if isinstance(s, Kernel):
            steps.append(_kernel_step(rendered[id(s)], plan.slots, sim, xp))
        elif isinstance(s, Blas):
            steps.append(_blas_step(s, xp))
        elif isinstance(s, Fallback) and s.eqn.params.get("name") == products.DEVICE_CALL:
            steps.append(_product_step(s, xp))
        elif isinstance(s, Fallback):
            steps.append(_fallback_step(s, xp, sim, structural))
        else:
            raise NotImplementedError(f"cuda runtime: no step for {type(s).__name__}")
    arena = _Arena(plan, xp)
    run = _runner(plan, steps, consts, arena, xp)
    run.profiled = _profiled(run, plan, _timed_steps(plan, steps, xp), consts, arena, xp)
    run.host_only = host
    run.arena_offsets, run.arena_bytes = arena.offsets, arena.nbytes
    run.kernel_sources = [src for srcs in rendered.values() for src in srcs] + structural
    return run


def _step_name(s) -> str:
    if isinstance(s, Kernel):
        return f"cuda {kernel_label(s)}"
    if isinstance(s, Blas):
        return "cuda dot_general"
    eqn = s.eqn
    if eqn.prim is P.call and eqn.params["name"].startswith(_WRAPPED):
        return f"cuda {eqn.params['graph'].eqns[0].prim.name}"
    return f"cuda {eqn.prim.name}"


def _timed_steps(plan, steps, xp):
    """The steps, each recorded as a ``cuda`` event that ends when the device has done its
    work (the device is synchronized after each step: the cuda activity's timing)."""
    sync = None if xp is np else xp.cuda.runtime.deviceSynchronize
    timed = []
    for s, step in zip(plan.steps, steps, strict=True):
        shape = getattr(s, "shape", None)
        stack = {"stack": list(plan.sources.get(id(s), ()))}
        shapes = {"shape": list(shape)} if shape is not None else {}
        args = (None, shapes or None, stack, {**shapes, **stack})
        timed.append(_timed(step, _step_name(s), args, sync))
    return timed


def _timed(step, name, args, sync):
    def run(bufs):
        rec = profiling.recorder
        if rec is None:
            return step(bufs)
        ev = rec.begin(name, "cuda", args[rec.detail])
        try:
            step(bufs)
            if sync is not None:
                sync()
        finally:
            rec.end(ev)
    return run


def _profiled(run, plan, timed, consts, arena, xp):
    """``run`` as the profiler sees it: one ``run(cuda)`` event, holding a ``cuda`` event
    per step when the profile records the cuda activity."""
    traced = _runner(plan, timed, consts, arena, xp)

    def profiled(args):
        rec = profiling.recorder
        with profiling.span("run(cuda)", "run"):
            return traced(args) if rec is not None and rec.cuda else run(args)
    return profiled


def _runner(plan, steps, consts, arena, xp):
    n_in = plan.n_inputs

    def run(args):
        # results stay where the inputs are: on the device, or (host inputs) copied back
        on_device = any(arrays.is_device_array(a) for a in args)
        views = arena.take()
        bufs = list(views)
        for i, a in enumerate(args):
            bufs[i] = xp.ascontiguousarray(arrays.buffer(a, xp))
        for slot, c in consts.items():
            bufs[slot] = c
        for step in steps:
            step(bufs)
        outs = []
        for o in plan.outputs:
            if o[0] == "lit":
                outs.append(xp.array(o[1], copy=True))
            else:
                a = bufs[o[1]].reshape(o[2])
                outs.append(a.copy() if o[1] < n_in or o[1] in consts else a)
        arena.give_back(views)
        return [arrays.result(o, on_device, xp) for o in outs]
    return run


class _Arena:
    """The buffer plan's memory: intermediates at their ``buffers.arena_layout`` offsets in
    one device block per concurrent call, reused across calls (kernels on one stream run
    in order, so a block handed back is free for the next call's kernels)."""

    ALIGN = 256     # bytes: cudaMalloc's alignment, so every buffer starts a transaction

    def __init__(self, plan, xp):
        self.slots, self.xp = plan.slots, xp
        self.offsets, self.nbytes = buffers.arena_layout(plan, self.ALIGN)
        self._free, self._lock = [], threading.Lock()

    def take(self) -> list:
        """A free block as a list over the slots: its views at the intermediates, None
        elsewhere (a call fills a copy of the list, and hands this one back)."""
        with self._lock:
            if self._free:
                return self._free.pop()
        bufs = [None] * len(self.slots)
        if self.offsets:
            raw = self.xp.empty(self.nbytes + self.ALIGN, np.uint8)
            address = raw.ctypes.data if isinstance(raw, np.ndarray) else raw.data.ptr
            base = -address % self.ALIGN
            for s, off in self.offsets.items():
                shape, dtype = self.slots[s]
                n = buffers.nbytes(shape, dtype)
                bufs[s] = raw[base + off:base + off + n].view(dtype).reshape(shape)
        return bufs

    def give_back(self, views):
        with self._lock:
            self._free.append(views)


def _kernel_step(srcs, slots, sim, xp):
    fns = [emit.compile_source(src, sim) for src in srcs]
    outs = sorted({s for src in srcs for s in src.arg_slots if s >= 0})
    scratch = [(k, n, dt) for src in srcs for k, n, dt in src.scratch]

    def step(bufs):
        for s in outs:
            if bufs[s] is None:
                bufs[s] = xp.empty(slots[s][0], slots[s][1])
        extra = {-(k + 1): xp.empty(n, dt) for k, n, dt in scratch}
        for fn, src in zip(fns, srcs, strict=True):
            args = [extra[s] if s < 0 else bufs[s].reshape(-1) for s in src.arg_slots]
            fn[src.blocks, src.threads](*args)
    return step


def _array(bufs, ref, xp):
    return xp.asarray(ref[1]) if ref[0] == "lit" else bufs[ref[1]].reshape(ref[2])


def _blas_step(s, xp):
    def step(bufs):
        bufs[s.out] = products.matmul(xp, _array(bufs, s.lhs, xp), _array(bufs, s.rhs, xp),
                                      s.dimension_numbers)
    return step


def _product_step(s, xp):
    """A non-gemm dtype's ``dot_general`` (wrapped by ``split_for_device``) on the device."""
    (eqn,) = s.eqn.params["graph"].eqns
    (slot,) = s.outputs

    def step(bufs):
        lhs, rhs = (_array(bufs, r, xp) for r in s.inputs)
        bufs[slot] = products.matmul(xp, lhs, rhs, eqn.params["dimension_numbers"])
    return step


def _fallback_step(s, xp, sim, sources):
    """A structural kernel or a named call on device arrays, else a host step."""
    eqn = s.eqn
    if eqn.prim is P.call and eqn.params["name"].startswith(_WRAPPED):
        eqn = eqn.params["graph"].eqns[0]
    kind, _ = lowering(eqn)
    if kind == "indexing":
        fn = indexing.lower(eqn, xp, sim)
        sources.extend(fn.sources)
    elif kind == "call":
        fn = calls.lower(eqn, xp, sim)
    else:
        return _host_step(s, xp)

    def step(bufs):
        args = [xp.asarray(r[1]) if r[0] == "lit" else bufs[r[1]].reshape(r[2])
                for r in s.inputs]
        for slot, o in zip(s.outputs, fn(args), strict=True):
            bufs[slot] = xp.ascontiguousarray(o)
    return step


def _host_step(s, xp):
    impl = IMPLS[s.eqn.prim]
    to_host = (lambda a: a) if xp is np else xp.asnumpy

    def step(bufs):
        args = [r[1] if r[0] == "lit" else to_host(bufs[r[1]].reshape(r[2])) for r in s.inputs]
        outs = impl(*args, **s.eqn.params)
        if not s.eqn.prim.multiple_results:
            outs = [outs]
        for slot, v, o in zip(s.outputs, s.eqn.outputs, outs, strict=True):
            # a copy: an implementation may hand back its operand (abs of bool)
            bufs[slot] = xp.array(np.asarray(o, v.aval.dtype), copy=True, order="C")
    return step

