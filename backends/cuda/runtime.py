"""Run a graph on the GPU: the shared partition, kernels from ``emit``, products through
the array module's matmul on views (``products``: cuBLAS with transpose flags through
CuPy), everything else on the host.

Equations the kernels do not cover are wrapped, before partitioning, as one-equation
``call`` equations, which the shared partitioner always leaves to the interpreter; they
run on host copies of their operands and their results go back to the device.
"""

from __future__ import annotations

import numpy as np

from ir import primitives as P
from ir.core import Eqn, Graph, Var

from ..interpreter import IMPLS
from ..llvm.partition import VIEW_OPS, partition
from ..llvm.plan import Blas, Fallback, Kernel
from . import arrays, emit, products
from .availability import array_module, simulated

_ARITH = {P.add, P.sub, P.mul, P.max, P.min, P.div, P.pow, P.neg, P.abs}
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
    kind = eqn.inputs[-1].aval.dtype.kind if eqn.inputs else eqn.outputs[0].aval.dtype.kind
    if prim in VIEW_OPS or prim is P.select:
        return None
    if prim in emit.UNARY or prim in emit.BINARY:
        if prim in emit.FLOAT_ONLY and kind != "f":
            return f"{prim.name} on {kind!r} dtypes is not rendered"
        if prim in _ARITH and kind == "b":
            return f"{prim.name} on bool is not rendered"
        return None
    if prim is P.convert:
        src, dst = eqn.inputs[0].aval.dtype, eqn.outputs[0].aval.dtype
        if dst.kind == "f" or (dst.kind in "iu" and src.kind in "biu"
                               and dst.itemsize >= src.itemsize):
            return None
        return f"convert {src} -> {dst} is not rendered"
    if prim is P.iota:
        return None if eqn.params["dtype"].kind in "iuf" else "iota of bool is not rendered"
    if prim in _REDUCTIONS:
        return None if kind in "iuf" else f"{prim.name} on bool is not rendered"
    return f"{prim.name} has no kernel rendering yet"


def _host_call(eqn, reason):
    inner_in = [Var(a.aval) for a in eqn.inputs]
    inner_out = [Var(v.aval) for v in eqn.outputs]
    inner = Graph(inner_in, [Eqn(eqn.prim, tuple(inner_in), tuple(inner_out), eqn.params,
                                 eqn.source)], inner_out)
    return Eqn(P.call, eqn.inputs, eqn.outputs, {"graph": inner, "name": reason}, eqn.source)


def split_for_device(graph):
    """``graph`` with each host-only equation wrapped as a ``call``; and the reasons."""
    eqns, host = [], []
    for e in graph.eqns:
        reason = device_gap(e)
        if reason is None and e.prim is P.dot_general \
                and e.inputs[0].aval.dtype not in products.GEMM_DTYPES:
            eqns.append(_host_call(e, products.DEVICE_CALL))    # not a loop-nest kernel
        elif reason is None:
            eqns.append(e)
        else:
            host.append(reason)
            eqns.append(_host_call(e, reason))
    return Graph(list(graph.inputs), eqns, list(graph.outputs)), host


def sources(graph):
    """The plan of ``graph`` and, per kernel step, its rendered sources."""
    split, host = split_for_device(graph)
    plan = partition(split)
    sim = simulated()
    rendered = {id(s): emit.render(s, sim) for s in plan.steps if isinstance(s, Kernel)}
    return plan, rendered, host


def compile_graph(graph):
    plan, rendered, host = sources(graph)
    sim, xp = simulated(), array_module()
    consts = {s: xp.asarray(c) for s, c in plan.consts.items()}
    steps = []
    for s in plan.steps:
        if isinstance(s, Kernel):
            steps.append(_kernel_step(rendered[id(s)], plan.slots, sim, xp))
        elif isinstance(s, Blas):
            steps.append(_blas_step(s, xp))
        elif isinstance(s, Fallback) and s.eqn.params.get("name") == products.DEVICE_CALL:
            steps.append(_product_step(s, xp))
        elif isinstance(s, Fallback):
            steps.append(_host_step(s, xp))
        else:
            raise NotImplementedError(f"cuda runtime: no step for {type(s).__name__}")
    n_in, slots = plan.n_inputs, plan.slots

    def run(args):
        # results stay where the inputs are: on the device, or (host inputs) copied back
        on_device = any(arrays.is_device_array(a) for a in args)
        bufs = [None] * len(slots)
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
        return [arrays.result(o, on_device, xp) for o in outs]
    run.host_only = host
    run.kernel_sources = [src for srcs in rendered.values() for src in srcs]
    return run


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

