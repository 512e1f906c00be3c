"""The executable's steps at run time: each is ``step(bufs)`` on the call's buffer list
(one entry per plan slot). Native kernels and sorts are ctypes calls, split over the
threads when big; products and convolutions call BLAS; the rest go through the
interpreter one equation at a time."""

from __future__ import annotations

import operator

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir.eager import host_impl

from ..planning.plan import Blas, Conv, Fallback, Plan, Sort
from . import bf16_cast, engine, threads
from .bf16_gemm import Bf16DotGeneral
from .blas import DotGeneral
from .conv import Conv as ConvGemm

PARALLEL_MIN_POINTS = 1 << 18     # below this a kernel runs on the calling thread


def native_step(fn, slots, outer, points):
    """Call a kernel on the call's buffers (its outputs are already there); split its
    outermost loop over the cores when it is big (ctypes releases the GIL during the call)."""
    chunks = min(threads.workers, outer or 1) if points >= PARALLEL_MIN_POINTS else 1
    bounds = [(outer * i // chunks, outer * (i + 1) // chunks) for i in range(chunks)] \
        if outer else [(0, 0)]
    if len(bounds) > 1 or engine.DATA_OFFSET is None:
        return _general_step(fn, slots, bounds)
    (lo, hi), get = bounds[0], operator.itemgetter(*slots)
    if len(slots) == 1:
        return lambda bufs: fn(get(bufs), lo, hi)
    return lambda bufs: fn(*get(bufs), lo, hi)


def _general_step(fn, slots, bounds):
    """A kernel call by data pointers (no known array layout) or split over threads."""
    by_pointer = engine.DATA_OFFSET is None

    def run(bufs):
        args = [bufs[s].ctypes.data for s in slots] if by_pointer else [bufs[s] for s in slots]
        futures = [threads.pool().submit(fn, *args, lo, hi) for lo, hi in bounds[1:]]
        fn(*args, *bounds[0])
        for f in futures:
            f.result()
    return run


def sort_step(fn, slots, step: Sort):
    """A sort's rows, split in parts of ``rows_per_part`` (each sorts in its own scratch)."""
    per, rows = step.rows_per_part, step.rows
    bounds = [(lo, min(lo + per, rows)) for lo in range(0, rows, per)]
    if len(bounds) <= 1 and engine.DATA_OFFSET is not None:
        return native_step(fn, slots, rows, 0)
    return _general_step(fn, slots, bounds or [(0, 0)])


def fetch(ref, bufs):
    """The value of a plan reference: a literal, or a slot's array in the ref's shape."""
    if ref[0] == "lit":
        return ref[1]
    arr = bufs[ref[1]]
    return arr if arr.shape == ref[2] else arr.reshape(ref[2])


def fallback_step(step: Fallback, arena: set):
    """One equation through the interpreter; a result lands in the arena when it is an
    intermediate, else in a fresh array (it may be a view of an argument)."""
    eqn, impl = step.eqn, host_impl(step.eqn.prim)
    dtypes = [v.aval.dtype for v in eqn.outputs]

    def run(bufs):
        args = [fetch(r, bufs) for r in step.inputs]
        with np.errstate(all="ignore"):
            outs = impl(*args, **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        for slot, o, dt in zip(step.outputs, outs, dtypes, strict=True):
            if slot in arena:
                np.copyto(bufs[slot], o, casting="unsafe")
            elif type(o) is np.ndarray and o.flags.owndata and o.flags.c_contiguous \
                    and o.dtype == dt and not any(o is a for a in args):
                bufs[slot] = o      # a fresh array of the impl's own: no copy
            else:
                bufs[slot] = np.array(o, dtype=dt, order="C", copy=True)
    return run


def ref_shape(ref):
    """The shape of a plan reference's value."""
    return np.shape(ref[1]) if ref[0] == "lit" else ref[2]


def _binary_step(op, lhs, rhs, out, arena: set):
    """``op(lhs, rhs)`` into slot ``out``: in place when ``out`` lives in the arena."""
    if out in arena:
        def run(bufs):
            op(fetch(lhs, bufs), fetch(rhs, bufs), out=bufs[out])
    else:
        def run(bufs):
            bufs[out] = op(fetch(lhs, bufs), fetch(rhs, bufs))
    return run


def blas_step(step: Blas, plan: Plan, arena: set):
    if plan.slots[step.out][1] == dtypes.bfloat16:
        dot = Bf16DotGeneral(ref_shape(step.lhs), ref_shape(step.rhs), step.dimension_numbers,
                             parallel=threads.pool, workers=threads.workers)
        return _binary_step(dot, step.lhs, step.rhs, step.out, arena)
    dot = DotGeneral(ref_shape(step.lhs), ref_shape(step.rhs), plan.slots[step.out][1],
                     step.dimension_numbers, parallel=threads.pool, workers=threads.workers)
    return _binary_step(dot, step.lhs, step.rhs, step.out, arena)


def conv_step(step: Conv, plan: Plan, arena: set):
    out_shape, dtype = plan.slots[step.out]
    wide = dtypes.compute_dtype(dtype)
    conv = ConvGemm(ref_shape(step.lhs), ref_shape(step.rhs), out_shape, wide,
                    **step.params, parallel=threads.pool, workers=threads.workers)
    if wide != dtype:       # bfloat16: exactly widened, float32 gemms, rounded once
        def narrow(lhs, rhs, out=None):
            return bf16_cast.narrow(conv(bf16_cast.widen(lhs), bf16_cast.widen(rhs)), out)
        return _binary_step(narrow, step.lhs, step.rhs, step.out, arena)
    return _binary_step(conv, step.lhs, step.rhs, step.out, arena)
