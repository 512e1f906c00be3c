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

from .. import profiling
from ..planning.plan import Blas, Conv, Fallback, Kernel, Loop, Sort
from . import fft
from .steps import PARALLEL_MIN_POINTS, native_step, sort_step

_MAX_NAMES = 6


def _prim_name(prim) -> str:
    return prim if isinstance(prim, str) else prim.name


def step_name(step, native=False) -> tuple[str, str]:
    """(event name, category) of a plan step; ``native``: a conv compiled as a loop nest
    (tinyconv.py)."""
    if isinstance(step, Kernel):
        names = [_prim_name(op.prim) for op in step.ops]
        names += [_prim_name(r.prim) for r in step.reduces]
        names += ["scatter_add" if sc.add else "scatter" for sc in step.scatters]
        unique = list(dict.fromkeys(names)) or ["copy"]
        if len(unique) > _MAX_NAMES:
            unique = unique[:_MAX_NAMES] + [f"{len(unique) - _MAX_NAMES} more"]
        return "kernel[" + "+".join(unique) + "]", "kernel"
    if isinstance(step, Sort):
        return "sort", "sort"
    if isinstance(step, Blas):
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


def _shape_args(step):
    shape = getattr(step, "shape", None)
    return {"shape": list(shape)} if shape is not None else None


def _wrap(run, name, cat, args):
    def step(bufs):
        rec = profiling.recorder
        if rec is None:
            return run(bufs)
        ev = rec.begin(name, cat, args if rec.record_shapes else None)
        try:
            return run(bufs)
        finally:
            rec.end(ev)
    return step


def _split_step(exe, plan_step, run, name, cat):
    """The step again, with each thread's part timed, when it splits over threads."""
    if isinstance(plan_step, Kernel):
        fn, slots, outer = exe._fns[id(plan_step)]
        points = math.prod(plan_step.shape)
        if outer and points >= PARALLEL_MIN_POINTS:
            return native_step(profiling.timed(fn, name + " part", cat), slots, outer, points)
    elif isinstance(plan_step, Sort) and plan_step.rows > plan_step.rows_per_part:
        fn, slots, _ = exe._fns[id(plan_step)]
        return sort_step(profiling.timed(fn, name + " part", cat), slots, plan_step)
    return run


def _twin(exe):
    twin = copy.copy(exe)
    names = [step_name(s, id(s) in exe._fns) for s in exe.plan.steps]
    twin.steps = [_wrap(_split_step(exe, s, run, name, cat), name, cat, _shape_args(s))
                  for s, run, (name, cat) in zip(exe.plan.steps, exe.steps, names, strict=True)]
    if exe.entry is not None:
        entry = exe.entry
        listed = {"kernels": [n for n, _ in names]}

        def run_entry(*bufs):
            with profiling.span(f"native entry ({len(names)} steps)", "kernel", listed):
                entry(*bufs)
        twin.entry = run_entry
    twin.trusted = twin.trusted_one = None
    return twin


def instrumented(exe):
    """The instrumented twin of ``exe`` (the executable keeps it)."""
    return _twin(exe)
