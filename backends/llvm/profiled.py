"""An executable's instrumented twin, run instead of it while a profile is active.

The twin is a shallow copy of the :class:`~.runtime.Executable` (same arenas, same
native code) whose steps are wrapped in profiler events named by what they do: a
kernel by its fused primitives, BLAS, conv, sort and fft steps by their kind,
control-flow loop and interpreter fallback steps by their primitive. A kernel or sort
split over the worker threads also records each part on the thread that runs it. A graph
run by one native entry (every kernel small) stays one call, reported as one event that
lists its kernels.

Built on first use and kept by the executable (``Executable.profiled``); its steps, and so
the cached call path, are never changed.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from functorch_core.ir import dtypes

from .. import profiling
from ..planning import buffers
from ..planning.plan import Blas, Conv, Fallback, Kernel, Loop, Sort, kernel_label
from . import bf16_gemm, fft
from .steps import PARALLEL_MIN_POINTS, native_step, sort_step

_MAX_NAMES = 6


def step_name(step, native=False, dtype=None) -> tuple[str, str]:
    """(event name, category) of a plan step; ``native``: a conv compiled as a loop nest
    (tinyconv.py); ``dtype``: the step's result dtype (a bf16 product names its path)."""
    if isinstance(step, Kernel):
        return kernel_label(step, _MAX_NAMES), "kernel"
    if isinstance(step, Sort):
        return "sort", "sort"
    if isinstance(step, Blas):
        if dtype == dtypes.bfloat16:
            return f"dot_general (bf16: {bf16_gemm.path()})", "blas"
        return "dot_general (blas)", "blas"
    if isinstance(step, Conv):
        return f"conv_general_dilated ({'native' if native else 'blas'})", "conv"
    if isinstance(step, Loop):
        return f"loop[{step.eqn.prim.name}]", "loop"
    if isinstance(step, Fallback) and fft.runs(step.eqn):
        return "fft", "fft"
    if isinstance(step, Fallback) and step.eqn.prim.family == "collective":
        return f"{step.eqn.prim.name} (mpi)", "collective"
    if isinstance(step, Fallback):
        return f"fallback[{step.eqn.prim.name}]", "fallback"
    return type(step).__name__, "step"


def _args(step, sources) -> tuple:
    """A step's event args per ``Recorder.detail``: none, shape, stack, both."""
    shape = getattr(step, "shape", None)
    shapes = {"shape": list(shape)} if shape is not None else {}
    stack = {"stack": list(sources)}
    return (None, shapes or None, stack, {**shapes, **stack})


def _wrap(run, name, cat, args):
    def step(bufs):
        rec = profiling.recorder
        if rec is None:
            return run(bufs)
        ev = rec.begin(name, cat, args[rec.detail])
        try:
            return run(bufs)
        finally:
            rec.end(ev)
    return step


def _split_step(exe, plan_step, run, name, cat, args):
    """The step again, with each thread's part timed, when it splits over threads."""
    if isinstance(plan_step, Kernel):
        fn, slots, outer = exe._fns[id(plan_step)]
        points = math.prod(plan_step.shape)
        if outer and points >= PARALLEL_MIN_POINTS:
            return native_step(profiling.timed(fn, name + " part", cat, args), slots, outer, points)
    elif isinstance(plan_step, Sort) and plan_step.rows > plan_step.rows_per_part:
        fn, slots, _ = exe._fns[id(plan_step)]
        return sort_step(profiling.timed(fn, name + " part", cat, args), slots, plan_step)
    return run


def _twin(exe):
    twin = copy.copy(exe)
    plan = exe.plan
    names = [step_name(s, id(s) in exe._fns, plan.slots[s.out][1] if isinstance(s, Blas)
                       else None) for s in plan.steps]
    stacks = [plan.sources.get(id(s), ()) for s in plan.steps]
    args = [_args(s, stack) for s, stack in zip(plan.steps, stacks, strict=True)]
    twin.steps = [_wrap(_split_step(exe, s, run, name, cat, a), name, cat, a)
                  for s, run, (name, cat), a in zip(plan.steps, exe.steps, names, args,
                                                    strict=True)]
    if exe.entry is not None:
        entry = exe.entry
        listed = {"kernels": [n for n, _ in names]}
        stack = {"stack": list(dict.fromkeys(line for lines in stacks for line in lines))}
        args = (listed, listed, {**listed, **stack}, {**listed, **stack})
        title = f"native entry ({len(names)} steps)"

        def run_entry(*bufs):
            with profiling.span(title, "kernel", args[profiling.recorder.detail]):
                entry(*bufs)
        twin.entry = run_entry
    twin.trusted = twin.trusted_one = None
    twin.instrumented = True
    twin.arena_peak_bytes = arena_peak(exe)
    return twin


def instrumented(exe):
    """The instrumented twin of ``exe`` (the executable keeps it)."""
    return _twin(exe)


def arena_peak(exe) -> int:
    """The most bytes of intermediates alive at once over ``exe``'s steps (the arena's
    layout, ``arena_bytes``, is at least this)."""
    plan = exe.plan
    keep = set(range(len(plan.slots))) - set(exe.arena_offsets)
    change: dict = {}
    for s, (first, last) in buffers.lifetimes(plan.steps, keep).items():
        n = buffers.nbytes(*plan.slots[s])
        change[first] = change.get(first, 0) + n
        change[last + 1] = change.get(last + 1, 0) - n
    peak = live = 0
    for k in sorted(change):
        live += change[k]
        peak = max(peak, live)
    return peak


def run(twin, args):
    """``twin(args)`` as one ``run(cpu)`` event; with ``profile_memory`` its args hold the
    arena's size and peak and the bytes of the results this call allocated."""
    rec = profiling.recorder
    if rec is None:
        return twin(args)
    ev = rec.begin("run(cpu)", "run")
    try:
        outs = twin(args)
    finally:
        rec.end(ev)
    if rec.profile_memory:
        # a call's results are fresh arrays (the twin never runs donated inputs)
        fresh = sum(o.nbytes for o in outs if isinstance(o, np.ndarray))
        ev.args = {"arena_bytes": twin.arena_bytes, "arena_peak_bytes": twin.arena_peak_bytes,
                   "result_bytes": fresh, "memory_bytes": twin.arena_bytes + fresh}
    return outs
