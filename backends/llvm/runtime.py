"""Run a partitioned graph: the :class:`Executable` of a graph and input signature.

``compile_graph`` partitions the graph (``lowering.py``), compiles its kernels
(``kernels.py``, through ``engine.py``'s MCJIT engines) and builds the executable: a short
Python loop over steps (``steps.py``: native kernels called through ctypes, BLAS calls,
interpreter fallbacks for single equations), or one native entry when every step is small
(``entries.py``). Compiled graphs are cached in memory by (graph structure, input avals)
for as long as something can call them; threads asking for the same graph at once compile
it once (``ir.once``).
"""

from __future__ import annotations

import math
import weakref

import functorch_core.backends.interpreter  # noqa: F401  (registers every primitive's impl)
import numpy as np
from functorch_core.ir.core import Graph, Lit
from functorch_core.ir.once import Once

from .. import profiling
from ..planning import buffers
from ..planning.buffers import nbytes as _nbytes
from ..planning.plan import Blas, Conv, Fallback, Kernel, Lapack, Loop, Sort
from . import (
    bounds,
    collectives,
    engine,
    entries,
    fastpath,
    fft,
    profiled,
    scipy_calls,
    steps,
    threads,
    tinyconv,
)
from .blas import GemmCall, one_thread_always
from .kernels import compile_plan
from .lapack_steps import lapack_step
from .loops import loop_step
from .lowering import partition

_CACHE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()   # graph key -> Executable
_COMPILING = Once()
ARENA_ALIGN = 64                  # bytes; every intermediate buffer starts on a cache line
GEMM_ENTRY_MAX_MACS = 1 << 21   # bigger products run as their own (GIL-releasing) step
# a non-C-contiguous argument of at least this many elements is read where it lies, by an
# executable planned for its strides, instead of being copied first (a copy of a transposed
# matrix walks memory by columns: more than the kernel reading it); each executable plans
# for at most STRIDED_LAYOUTS layouts, then copies
STRIDED_MIN_POINTS = 1 << 16
STRIDED_LAYOUTS = 8
# (lowering.BF16_WIDEN_MACS: the bf16 products widened to float32 ones, no bigger than this)


def get_num_threads() -> int:
    """How many threads (the caller's included) a big kernel, sort, conv or product splits
    over."""
    return threads.workers


def set_num_threads(n: int):
    """Split big kernels, sorts, convs and products over ``n`` threads in executables
    compiled from now on (the compiled-graph cache is cleared; a ``jit`` function keeps the
    executables it holds until ``functorch_core.clear_caches()``). The default is the environment
    variable ``FUNCTORCH_CORE_NUM_THREADS``, else the number of cores."""
    if type(n) is not int or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    threads.set_workers(n)
    clear_cache()


class Executable:
    """``run(list of arrays) -> list of fresh arrays`` for one graph and input signature.

    Intermediates (values that are neither inputs, constants nor results) live in an
    *arena*: one block of memory per concurrent call, laid out by ``planning.buffers``,
    reused across calls so big temporaries do not pay fresh page faults every time.
    A call takes a free arena (or makes one) and gives it back when it returns; results
    are fresh arrays, never views of the arena, inputs or constants, except in the
    executable :meth:`donating` returns, whose results may live in donated inputs.
    """

    def __init__(self, graph: Graph, loop_body: bool = False, donate: tuple = (),
                 input_strides: tuple | None = None):
        # bounds checks fused, their flags as the last results (a loop body keeps the
        # interpreter's check: a native loop runs its entry, never this object's call)
        fused, self.checks = (graph, 0) if loop_body else bounds.with_flags(graph)
        with profiling.span("partition", "compile"):
            self.plan = plan = partition(fused, input_strides)
        # input_strides: the element strides of the arguments read where they lie (see
        # strided_layout); those are passed as they are, the others made C-contiguous
        self.input_strides = input_strides
        self._layouts = None if loop_body or donate or input_strides else {}
        self.graph, self.loop_body = graph, loop_body
        # donated inputs: {input: result living in its memory}, inputs returned as they are
        self.donations, self.passthrough = buffers.donations(plan, donate) if donate else \
            ({}, set())
        buffers.read_donated_in_place(plan, self.donations)
        self.reused = frozenset(self.donations) | frozenset(self.passthrough)
        with profiling.span("llvm", "compile"):
            self.ir, fns = compile_plan(plan)
        self.fallbacks = [s for s in plan.steps if isinstance(s, Fallback)]
        self.n_inputs = plan.n_inputs
        self.borrowed = set(range(plan.n_inputs)) | set(plan.consts)
        results = {r[1] for r in plan.outputs if r[0] == "slot"} - self.borrowed
        io = [buffers.step_slots(s) for s in plan.steps]
        lifetimes = buffers.lifetimes(plan.steps, self.borrowed | results)
        nbytes = {s: _nbytes(*plan.slots[s]) for s in lifetimes}
        self.arena_offsets, self.arena_bytes = buffers.plan_arena(nbytes, lifetimes, ARENA_ALIGN)
        arena = set(self.arena_offsets)
        self.steps, calls = [], []
        fresh, gemm_results = set(), set()
        for step, (_, writes) in zip(plan.steps, io, strict=True):
            if isinstance(step, Kernel):
                fn, slots, outer = fns[id(step)]
                points = int(np.prod(step.shape, dtype=np.int64))
                if scipy_calls.calls_scipy(step):
                    points *= scipy_calls.POINTS_PER_CALL
                self.steps.append(steps.native_step(fn, slots, outer, points))
                if points < steps.PARALLEL_MIN_POINTS:   # the entry holds the GIL: small only
                    calls.append((fn, slots, 0, outer or 0))
                fresh |= writes & results
            elif isinstance(step, Sort):
                fn, slots, _ = fns[id(step)]
                self.steps.append(steps.sort_step(fn, slots, step))
                if step.rows <= step.rows_per_part and \
                        math.prod(step.shape) < steps.PARALLEL_MIN_POINTS:
                    calls.append((fn, slots, 0, step.rows))
                fresh |= writes & results
            elif isinstance(step, Blas):
                self.steps.append(steps.blas_step(step, plan, arena))
                # a loop body's entry runs inside a native loop that holds the GIL anyway
                call = entries.gemm_call(step, plan, math.inf if loop_body else GEMM_ENTRY_MAX_MACS)
                if call is not None:
                    calls.append(call)
                    gemm_results |= writes & results
            elif isinstance(step, Conv) and id(step) in fns:     # a small conv: native
                fn, slots, _ = fns[id(step)]
                self.steps.append(steps.native_step(fn, slots, None, 0))
                if tinyconv.plan(step, *plan.slots[step.out]).macs <= GEMM_ENTRY_MAX_MACS:
                    calls.append((fn, slots, 0, 0))     # the entry holds the GIL: small only
                fresh |= writes & results
            elif isinstance(step, Conv):
                self.steps.append(steps.conv_step(step, plan, arena))
            elif isinstance(step, Loop):
                self.steps.append(loop_step(step, arena, compile_graph))
            elif isinstance(step, Lapack):
                self.steps.append(lapack_step(step, plan, arena))
            elif fft.runs(step.eqn):
                self.steps.append(fft.fft_step(step, arena))
            elif (collective := collectives.collective_call(step)) is not None:
                self.steps.append(collectives.collective_step(collective))
                calls.append(collective)
                fresh |= writes & results
            else:
                self.steps.append(steps.fallback_step(step, arena))
        # results the kernels write: allocated for each call, handed to the caller
        self.fresh = [(s, *plan.slots[s]) for s in sorted(fresh)]
        self.in_dtypes = [plan.slots[i][1] for i in range(plan.n_inputs)]
        self.outputs = self._output_rules(plan.outputs)
        # results taken as they are (no copy, no reshape): a list of slots, else None
        self._plain_outputs = [ref[1] for _, ref in self.outputs] if all(
            not copy and ref[2] == plan.slots[ref[1]][0] for copy, ref in self.outputs) else None
        self._in_dtypes = [(i, dt) for i, dt in enumerate(self.in_dtypes)
                           if not input_strides or input_strides[i] is None]
        self._no_inputs = [None] * plan.n_inputs
        self._results = sorted(results)     # with the inputs, cleared after each call
        self.template = [plan.consts.get(i) for i in range(len(plan.slots))]
        self._free: list = []
        self._fns = fns     # keep the ctypes prototypes alive
        # a graph of small kernels only: one native call runs them all
        self.entry = self._entry_keep = None
        self.table_entry = False      # the entry walks a table (entries.table_entry)
        if calls and len(calls) == len(plan.steps) and entries.graph_entry_supported() and all(
                isinstance(c, np.ndarray) for c in plan.consts.values()):
            # a long graph: its calls as a table one shared runner walks (no code to
            # compile per graph); a loop body's entry must take a NULL self: code
            # (the table has no record for an MPI call: a graph with one keeps its code)
            build = entries.table_entry if len(calls) > entries.TABLE_MIN_CALLS and \
                not loop_body and not any(isinstance(c, collectives.CollectiveCall)
                                          for c in calls) else entries.graph_entry
            self.entry, self._entry_keep = build(calls, len(plan.slots))
            self.table_entry = build is entries.table_entry
            macs = max((c.layout.m * c.layout.n * c.layout.k for c in calls
                        if isinstance(c, GemmCall)), default=0)
            if one_thread_always(macs):
                self.entry = entries.one_blas_thread(self.entry)
            # gemm results the entry writes: allocated with the kernels' results
            self.fresh = [(s, *plan.slots[s]) for s in sorted(fresh | gemm_results)]
        if donate:      # results in donated memory: bound per call, never allocated
            taken = set(self.donations.values())
            self.fresh = [f for f in self.fresh if f[0] not in taken]
            self._donated = [(i, r) for i, r in self.donations.items()]
            self._consts = [c for c in plan.consts.values() if isinstance(c, np.ndarray)]
            # the arrays owning the constants' memory; constants whose memory no array
            # owns (a view of a foreign buffer) are checked against each call's arguments
            owners = [_owner(c) for c in self._consts]
            self._const_owners = {id(o) for o in owners if o is not None}
            self._loose_consts = [c for c, o in zip(self._consts, owners, strict=True)
                                  if o is None]
            self.trusted, self.trusted_one = self.__call__, None
            return
        self._donated = ()
        if input_strides:       # called only by the executable that planned it
            self.trusted, self.trusted_one = self.__call__, None
            return
        self.trusted, self.trusted_one = fastpath.trusted_calls(self)

    @property
    def entry_address(self) -> int | None:
        """The address of the native entry (METH_FASTCALL: ``(self, args, nargs)``, one
        array object per slot of :meth:`new_arena`'s list, any ``self``), or None without
        one or when the entry is a table entry (it reads its table from ``self``)."""
        if self._entry_keep is None or self.table_entry:
            return None
        return self._entry_keep[0].ml_meth

    instrumented = False        # profiled.py's twins say True

    def twin(self):
        """This executable with a profiler event per step (see ``profiled.py``), made once."""
        twin = self.__dict__.get("_twin")
        if twin is None:
            twin = self._twin = profiled.instrumented(self)
        return twin

    def profiled(self, args):
        """``self(args)`` with a profiler event per step (see ``profiled.py``)."""
        return profiled.run(self.twin(), args)

    def _checked(self, outs, args):
        """The results without the bounds checks' flags; raises if a flag is set."""
        k = self.checks
        if any(outs[-k:]):
            bounds.raise_first(self.graph, args)
        return outs[:-k]

    def _output_rules(self, refs):
        """(copy?, ref) per result: literals, inputs, constants and a second use of one
        buffer are copied, so no two results and no result and argument share memory."""
        rules, seen = [], set()
        for ref in refs:
            copy = ref[0] == "lit" or ref[1] in seen or (
                ref[1] in self.borrowed and ref[1] not in self.passthrough)
            if ref[0] == "slot":
                seen.add(ref[1])
            rules.append((copy, ref))
        return rules

    def donating(self, inputs) -> Executable:
        """The executable of this graph that may reuse the memory of the arguments at
        ``inputs`` (indices of arguments the caller donates) for its results: see
        ``planning.buffers.donations``. Its ``reused`` says which it does reuse; call it
        only with arguments that :meth:`accepts_donation`."""
        inputs = tuple(sorted(set(inputs)))
        if not inputs:
            return self
        key = ("donate", inputs, self.loop_body, graph_key(self.graph))
        return _COMPILING.get(_CACHE, key, lambda: Executable(self.graph, self.loop_body,
                                                              inputs))

    def accepts_donation(self, args) -> bool:
        """Whether the arguments this executable would write into are fit for it (see
        :func:`donation_fits`)."""
        return donation_fits(self, args)

    def new_arena(self) -> list:
        """A buffer list for one call: constants, and the arena's views for intermediates."""
        bufs = self.template.copy()
        if self.arena_offsets:
            raw = np.empty(self.arena_bytes + ARENA_ALIGN, np.uint8)
            base = -raw.ctypes.data % ARENA_ALIGN
            for s, off in self.arena_offsets.items():
                shape, dtype = self.plan.slots[s]
                n = _nbytes(shape, dtype)
                bufs[s] = raw[base + off:base + off + n].view(dtype).reshape(shape)
        return bufs

    def __call__(self, args):
        n = self.n_inputs
        if len(args) != n:
            raise TypeError(f"this executable takes {n} arrays, got {len(args)}")
        try:
            bufs = self._free.pop()
        except IndexError:
            bufs = self.new_arena()
        try:
            bufs[:n] = args
            for i, dt in self._in_dtypes:
                a = bufs[i]
                if type(a) is not np.ndarray or (a.dtype is not dt and a.dtype != dt) \
                        or not a.flags.c_contiguous:
                    if type(a) is np.ndarray and a.size >= STRIDED_MIN_POINTS and \
                            (planned := strided_executable(self, args)) is not None:
                        return planned(args)
                    bufs[i] = np.ascontiguousarray(a, dtype=dt)
            for s, shape, dtype in self.fresh:
                bufs[s] = np.empty(shape, dtype)
            for i, r in self._donated:
                bufs[r] = bufs[i]
            if self.entry is not None:
                self.entry(*bufs)
            else:
                for step in self.steps:
                    step(bufs)
            if self._plain_outputs is not None:
                outs = [bufs[s] for s in self._plain_outputs]
            else:
                outs = [np.array(steps.fetch(ref, bufs), copy=True) if copy else
                        steps.fetch(ref, bufs) for copy, ref in self.outputs]
            return self._checked(outs, args) if self.checks else outs
        finally:
            bufs[:n] = self._no_inputs
            for s in self._results:
                bufs[s] = None
            if len(self._free) <= threads.workers:
                self._free.append(bufs)


def donation_fits(exe: Executable, args) -> bool:
    """Whether the arguments ``exe`` would write into are fit for it: owned
    by this call alone (C-contiguous, writable arrays of the input dtype that share no
    memory with another argument or a constant of the graph)."""
    arrays = [b for b in args if isinstance(b, np.ndarray)]
    # distinct arrays that own their memory cannot share any (the common call: no
    # pairwise bounds checks, which cost a Python call per pair)
    owned = len({id(b) for b in arrays}) == len(arrays) and \
        all(b.flags.owndata for b in arrays)
    for i in exe.reused:
        a = args[i]
        if type(a) is not np.ndarray or a.dtype != exe.in_dtypes[i] or \
                not a.flags.c_contiguous or not a.flags.writeable:
            return False
        if owned:
            if id(a) in exe._const_owners or \
                    any(np.may_share_memory(a, c) for c in exe._loose_consts):
                return False
        elif any(j != i and isinstance(b, np.ndarray) and np.may_share_memory(a, b)
                 for j, b in enumerate(args)) or \
                any(np.may_share_memory(a, c) for c in exe._consts):
            return False
    return True


def strided_executable(exe: Executable, args) -> Executable | None:
    """The executable of ``exe``'s graph planned for the strides of ``args`` (see
    :func:`strided_layout`), or None where they are all to be copied (or ``exe`` already
    plans for STRIDED_LAYOUTS layouts, or is a loop body's or a donating one)."""
    layouts = exe._layouts
    layout = None if layouts is None else strided_layout(args, exe.in_dtypes)
    if layout is None:
        return None
    planned = layouts.get(layout)
    if planned is None:
        if len(layouts) >= STRIDED_LAYOUTS:
            return None

        def make():
            return Executable(exe.graph, input_strides=layout)
        try:
            key = ("strided", layout, graph_key(exe.graph))
            hash(key)
        except TypeError:
            planned = make()
        else:
            planned = _COMPILING.get(_CACHE, key, make)
        layouts[layout] = planned
    return planned.twin() if exe.instrumented else planned


def strided_layout(args, dtypes) -> tuple | None:
    """Per argument, the element strides it is read with where it lies, or None (it is
    C-contiguous, or is copied: not an aligned ndarray of its input dtype with strides in
    whole elements and at least STRIDED_MIN_POINTS elements); None when all are None."""
    layout = []
    for a, dt in zip(args, dtypes, strict=True):
        item = dt.itemsize
        fits = type(a) is np.ndarray and not a.flags.c_contiguous and a.dtype == dt and \
            a.flags.aligned and a.size >= STRIDED_MIN_POINTS and \
            all(st % item == 0 for st in a.strides)
        layout.append(tuple(st // item for st in a.strides) if fits else None)
    return tuple(layout) if any(s is not None for s in layout) else None


def graph_key(graph: Graph):
    """A hashable structural key: primitives, params, wiring, avals and literal values."""
    index = {id(v): i for i, v in enumerate(graph.inputs)}

    def atom(a):
        if isinstance(a, Lit):
            return ("lit", a.aval, a.value.tobytes())
        return index[id(a)]

    eqns = []
    for eqn in graph.eqns:
        eqns.append((eqn.prim.name, tuple(atom(a) for a in eqn.inputs),
                     tuple(sorted(eqn.params.items())), tuple(v.aval for v in eqn.outputs)))
        for v in eqn.outputs:
            index[id(v)] = len(index)
    return (tuple(graph.in_avals), tuple(eqns), tuple(atom(o) for o in graph.outputs))


def compile_graph(graph: Graph, loop_body: bool = False) -> Executable:
    """The cached executable for ``graph``: compiled on the first request (once, when
    several threads ask together), kept while a caller holds it. ``loop_body``: the body
    of a loop, whose native entry may hold gemms of any size."""
    try:
        key = graph_key(graph)
        hash(key)
    except TypeError:
        return Executable(graph, loop_body)
    if loop_body:
        key = ("loop body", key)
    return _COMPILING.get(_CACHE, key, lambda: Executable(graph, loop_body))


def clear_cache():
    """Forget every compiled graph (executables in use stay valid) and dispose the
    native code nothing references any more."""
    _CACHE.clear()
    engine.retire_engine()


def _owner(a):
    """The array that owns ``a``'s memory (``a`` itself, or the end of its ``base`` chain),
    or None when no array does (a view of a bytes object, an mmap...)."""
    while not a.flags.owndata:
        a = a.base
        if not isinstance(a, np.ndarray):
            return None
    return a
