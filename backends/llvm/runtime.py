"""Compile a partitioned graph with llvmlite's MCJIT and run it.

All kernels of a graph go into one LLVM module, optimized with the new pass builder
(O3, loop and SLP vectorization) for the host CPU; small kernels go in a second module
compiled without loop unrolling. A module's symbols are named from a digest of its IR,
so its object code can be cached on disk (``cache.py``) and several graphs share one
MCJIT engine. The executable is a short
Python loop over steps: native kernels (called through ctypes), BLAS calls, and
interpreter fallbacks for single equations. Compiled graphs are cached in memory by
(graph structure, input avals).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import math
import operator
import os
import sys
import sysconfig
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from ir.core import Graph, Lit

from . import cache, codegen, sort
from .blas import DotGeneral, GemmCall, gemm_address, gemm_layout
from .loops import loop_step
from .partition import partition
from .plan import Blas, Fallback, Kernel, Loop, Plan, Sort

_LIBM_NAMES = ("exp", "exp2", "expm1", "log", "log1p", "cbrt", "tanh", "sin", "cos", "tan",
               "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "pow",
               "atan2", "fmod", "hypot", "csqrt", "cexp", "clog", "csin", "ccos", "ctan",
               "casin", "cacos", "catan", "csinh", "ccosh", "ctanh", "casinh", "cacosh", "catanh")
_lock = threading.Lock()
_state: dict = {}
_CACHE: dict = {}
# kernels are built as @"fc_kernel_<i>" and renamed @"fc_<digest>_<i>" once the IR is known
_STEM = "fc_kernel_"
_MODULE = "fc_graph_"
# Kernels of fewer than SMALL_KERNEL_POINTS points are compiled without loop unrolling:
# they take microseconds either way, and fully unrolling their short inner loops (then
# vectorizing the loop around them) was most of the compile time of small graphs. Big
# kernels keep it (2-4x faster on reductions and broadcasts over short axes).
PIPELINES = {
    "full": dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                 loop_unrolling=True),
    "small": dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                  loop_unrolling=False),
}
SMALL_KERNEL_POINTS = 1 << 12
_CODEGEN_OPT = 3
_loaded: dict = {}      # digest -> {symbol: address} of modules already in the engine
_pending: dict = {}     # module name -> cached object code MCJIT should load instead


def _engine():
    """The process-wide target machine and MCJIT engine (created on first use)."""
    if not _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _register_libm()
        target = llvm.Target.from_default_triple()
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        tm = target.create_target_machine(cpu=cpu, features=features, opt=_CODEGEN_OPT,
                                          jit=True)
        empty = llvm.parse_assembly("")
        empty.triple = llvm.get_process_triple()
        engine = llvm.create_mcjit_compiler(empty, tm)
        engine.set_object_cache(_object_compiled, _cached_object)
        target = f"{tm.triple} cpu={cpu} features={features} codegen=O{_CODEGEN_OPT}"
        _state.update(tm=tm, engine=engine, target=target)
    return _state["tm"], _state["engine"]


def _cached_object(module):
    """MCJIT asks for a module's object code before compiling it: a disk-cache hit."""
    return _pending.pop(module.name, None)


def _object_compiled(module, obj):
    """MCJIT compiled a module: keep its object code on disk (never fails the call)."""
    if not module.name.startswith(_MODULE):
        return      # the engine's initial empty module
    cache.stats["compiled"] += 1
    try:
        cache.store(module.name[len(_MODULE):], obj)
    except Exception:  # an exception cannot cross back through LLVM
        cache.stats["errors"] += 1


def _register_libm():
    """Bind the libm symbols kernels call to this process's libm, explicitly."""
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for base in _LIBM_NAMES:
        for sym in (base, base + "f"):
            llvm.add_symbol(sym, ctypes.cast(getattr(libm, sym), ctypes.c_void_p).value)


def optimize(llmod, tm, pipeline="full"):
    """Run the pass pipeline ``PIPELINES[pipeline]`` on ``llmod`` in place."""
    options = PIPELINES[pipeline]
    pto = llvm.create_pipeline_tuning_options(speed_level=options["speed_level"])
    for option, value in options.items():
        setattr(pto, option, value)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(llmod, pb)


def _array_data_offset():
    """Where a NumPy array object keeps its data pointer (after the PyObject header), checked
    on a live array; None if this build's layout differs (then pointers go through ctypes)."""
    probe = np.zeros(3)
    offset = 2 * ctypes.sizeof(ctypes.c_void_p)
    found = ctypes.c_void_p.from_address(id(probe) + offset).value
    return offset if found == probe.ctypes.data else None


DATA_OFFSET = _array_data_offset()


def build_module(kernels):
    """LLVM IR for ``kernels`` (Kernel steps): (ir.Module, {id(kernel): (entry name, slots,
    outer)}), the same text for the same kernels in every process (kernel i is
    ``fc_kernel_<i>``).

    The entry takes array objects when the data-pointer offset is known (then the kernel
    itself is internal: inlined into its entry, it is optimized and compiled once), else
    raw pointers.
    """
    module = ir.Module(name="fc_graph")
    entries = {}
    for i, step in enumerate(kernels):
        name = f"{_STEM}{i}"
        emit = sort.emit_sort if isinstance(step, Sort) else codegen.emit_kernel
        slots, outer = emit(module, name, step)
        if DATA_OFFSET is not None:
            module.globals[name].linkage = "internal"
            codegen.emit_array_entry(module, name + "_arrays", name, DATA_OFFSET)
            name += "_arrays"
        entries[id(step)] = (name, slots, outer)
    return module, entries


def compile_plan(plan: Plan):
    """Native code for every kernel of ``plan``: (:class:`OptimizedIR`, {id: (fn, slots,
    outer)}). Small kernels and the others form two modules (two pipelines); each one's
    object code comes from this process's engine when it already holds the same module,
    else from the disk cache, else from LLVM (then it is written to the cache)."""
    tm, engine = _engine()
    groups: dict = {name: [] for name in PIPELINES}
    for step in plan.steps:
        if isinstance(step, Kernel | Sort):
            small = math.prod(step.shape) < SMALL_KERNEL_POINTS
            groups["small" if small else "full"].append(step)
    fns, parts = {}, []
    for pipeline, kernels in groups.items():
        if kernels:
            text, group_fns = _compile_kernels(kernels, pipeline, tm, engine)
            parts.append((text, pipeline))
            fns.update(group_fns)
    return OptimizedIR(parts), fns


def _compile_kernels(kernels, pipeline, tm, engine):
    """One module for ``kernels``: (its IR text, {id: (fn, slots, outer)})."""
    module, entries = build_module(kernels)
    text = str(module)
    digest = cache.key(text, f"{_state['target']} {sorted(PIPELINES[pipeline].items())}")
    stem = f"fc_{digest[:32]}_"
    text = text.replace(f'@"{_STEM}', f'@"{stem}')
    with _lock:
        addresses = _loaded.get(digest)
        if addresses is None:
            names = [stem + name[len(_STEM):] for name, _, _ in entries.values()]
            addresses = _loaded[digest] = _add_module(text, digest, names, pipeline, tm,
                                                      engine)
    fns = {}
    arg = ctypes.c_void_p if DATA_OFFSET is None else ctypes.py_object
    for key, (name, slots, outer) in entries.items():
        proto = ctypes.CFUNCTYPE(None, *([arg] * len(slots)), ctypes.c_int64, ctypes.c_int64)
        fns[key] = (proto(addresses[stem + name[len(_STEM):]]), slots, outer)
    return text, fns


def _add_module(text, digest, names, pipeline, tm, engine):
    """Add the module ``text`` to the engine, optimizing it only when the disk cache has
    no object code for ``digest``; the addresses of ``names``. Holds ``_lock``."""
    llmod = _parse(text, tm)
    llmod.name = _MODULE + digest
    obj = cache.load(digest)
    if obj is None:
        optimize(llmod, tm, pipeline)
    else:
        _pending[llmod.name] = obj
    try:
        engine.add_module(llmod)
        engine.finalize_object()
    finally:
        _pending.pop(llmod.name, None)
    return {name: engine.get_function_address(name) for name in names}


def _parse(text, tm):
    llmod = llvm.parse_assembly(text)
    llmod.triple = tm.triple
    llmod.data_layout = str(tm.target_data)
    llmod.verify()
    return llmod


class OptimizedIR:
    """The optimized LLVM IR of a graph's kernels, produced when first asked for
    (``str(ir)``, ``"<8 x float>" in ir``): a disk-cache hit never optimizes."""

    def __init__(self, parts):
        self.parts = parts      # (unoptimized IR, pipeline) per module
        self._text = None

    def __str__(self):
        if self._text is None:
            tm, _ = _engine()
            texts = []
            for source, pipeline in self.parts:
                llmod = _parse(source, tm)
                optimize(llmod, tm, pipeline)
                texts.append(str(llmod))
            self._text = "\n".join(texts)
        return self._text

    def __contains__(self, fragment: str):
        return fragment in str(self)


# -- steps at run time ----------------------------------------------------------

PARALLEL_MIN_POINTS = 1 << 18     # below this a kernel runs on the calling thread
_WORKERS = os.cpu_count() or 1
ARENA_ALIGN = 64                  # bytes; every intermediate buffer starts on a cache line


def _pool():
    if "pool" not in _state:
        _state["pool"] = ThreadPoolExecutor(_WORKERS, thread_name_prefix="fc-cpu")
    return _state["pool"]


def _native_step(fn, slots, outer, points):
    """Call a kernel on the call's buffers (its outputs are already there); split its
    outermost loop over the cores when it is big (ctypes releases the GIL during the call)."""
    chunks = min(_WORKERS, outer or 1) if points >= PARALLEL_MIN_POINTS else 1
    bounds = [(outer * i // chunks, outer * (i + 1) // chunks) for i in range(chunks)] \
        if outer else [(0, 0)]
    if len(bounds) > 1 or DATA_OFFSET is None:
        return _general_step(fn, slots, bounds)
    (lo, hi), get = bounds[0], operator.itemgetter(*slots)
    if len(slots) == 1:
        return lambda bufs: fn(get(bufs), lo, hi)
    return lambda bufs: fn(*get(bufs), lo, hi)


def _general_step(fn, slots, bounds):
    """A kernel call by data pointers (no known array layout) or split over threads."""
    by_pointer = DATA_OFFSET is None

    def run(bufs):
        args = [bufs[s].ctypes.data for s in slots] if by_pointer else [bufs[s] for s in slots]
        futures = [_pool().submit(fn, *args, lo, hi) for lo, hi in bounds[1:]]
        fn(*args, *bounds[0])
        for f in futures:
            f.result()
    return run


def _sort_step(fn, slots, step: Sort):
    """A sort's rows, split in parts of ``rows_per_part`` (each sorts in its own scratch)."""
    per, rows = step.rows_per_part, step.rows
    bounds = [(lo, min(lo + per, rows)) for lo in range(0, rows, per)]
    if len(bounds) <= 1 and DATA_OFFSET is not None:
        return _native_step(fn, slots, rows, 0)
    return _general_step(fn, slots, bounds or [(0, 0)])


def _fetch(ref, bufs):
    if ref[0] == "lit":
        return ref[1]
    arr = bufs[ref[1]]
    return arr if arr.shape == ref[2] else arr.reshape(ref[2])


def _fallback_step(step: Fallback, arena: set):
    """One equation through the interpreter; a result lands in the arena when it is an
    intermediate, else in a fresh array (it may be a view of an argument)."""
    eqn, impl = step.eqn, step.eqn.prim.impl
    dtypes = [v.aval.dtype for v in eqn.outputs]

    def run(bufs):
        args = [_fetch(r, bufs) for r in step.inputs]
        with np.errstate(all="ignore"):
            outs = impl(*args, **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        for slot, o, dt in zip(step.outputs, outs, dtypes, strict=True):
            if slot in arena:
                np.copyto(bufs[slot], o, casting="unsafe")
            else:
                bufs[slot] = np.array(o, dtype=dt, order="C", copy=True)
    return run


def _blas_step(step: Blas, plan: Plan, arena: set):
    def shape(ref):
        return np.shape(ref[1]) if ref[0] == "lit" else ref[2]
    dot = DotGeneral(shape(step.lhs), shape(step.rhs), plan.slots[step.out][1],
                     step.dimension_numbers)
    lhs, rhs, out = step.lhs, step.rhs, step.out

    if out in arena:
        def run(bufs):
            dot(_fetch(lhs, bufs), _fetch(rhs, bufs), out=bufs[out])
    else:
        def run(bufs):
            bufs[out] = dot(_fetch(lhs, bufs), _fetch(rhs, bufs))
    return run


GEMM_ENTRY_MAX_MACS = 1 << 21   # bigger products run as their own (GIL-releasing) step
_gemm_symbols: set = set()


def _gemm_call(step: Blas, plan: Plan) -> GemmCall | None:
    """``step`` as a call inside the native graph entry, when its operands are slots already
    in a gemm layout and the product is small (the entry holds the GIL); else None."""
    if step.lhs[0] != "slot" or step.rhs[0] != "slot":
        return None
    layout = gemm_layout(step.lhs[2], step.rhs[2], step.dimension_numbers)
    if layout is None or min(layout.batch, layout.m, layout.n, layout.k) == 0 or \
            layout.batch * layout.m * layout.n * layout.k > GEMM_ENTRY_MAX_MACS:
        return None
    dtype = plan.slots[step.out][1]
    symbol = f"fc_{dtype.char}gemm"
    if symbol not in _gemm_symbols:
        llvm.add_symbol(symbol, gemm_address(dtype))
        _gemm_symbols.add(symbol)
    return GemmCall(symbol, dtype, step.lhs[1], step.rhs[1], step.out, layout)


def step_slots(step) -> tuple[set, set]:
    """(slots ``step`` reads, slots it writes); a scatter's target is both."""
    def refs(rs):
        return {r[1] for r in rs if r[0] == "slot"}
    if isinstance(step, Kernel):
        scattered = {sc.slot for sc in step.scatters}
        reads = {v.slot for v in step.reads + step.dyn_reads} | scattered
        writes = {s for _, s, _ in step.stores} | {r.slot for r in step.reduces} | scattered
        return reads, writes
    if isinstance(step, Blas):
        return refs([step.lhs, step.rhs]), {step.out}
    if isinstance(step, Sort):
        return set(step.inputs) | {step.scratch}, set(step.outputs) | {step.scratch}
    return refs(step.inputs), set(step.outputs)


def plan_arena(nbytes: dict, lifetimes: dict, align: int = ARENA_ALIGN):
    """Byte offsets that let buffers share memory when their lifetimes do not overlap.

    ``nbytes[s]`` is buffer s's size, ``lifetimes[s]`` its (first, last) step, both
    inclusive: a buffer lives from the step that first writes it to the last step that
    touches it, so a step never writes over a buffer it reads. Biggest first, each at the
    lowest aligned offset free of every placed buffer whose lifetime overlaps its own.
    Returns ({slot: offset}, total bytes).
    """
    placed, offsets = [], {}
    for s in sorted(lifetimes, key=lambda s: (-nbytes[s], s)):
        first, last = lifetimes[s]
        size = -(-nbytes[s] // align) * align
        off = 0
        for lo, hi in sorted((o, e) for f, la, o, e in placed if f <= last and first <= la):
            if off + size <= lo:
                break
            off = max(off, hi)
        offsets[s] = off
        placed.append((first, last, off, off + size))
    return offsets, max((e for *_, e in placed), default=0)


_METH_FASTCALL = 0x80
_entry_ids = itertools.count()


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def graph_entry_supported() -> bool:
    """Whether a native function can be a CPython builtin here: a release CPython with
    the GIL (plain reference counts) and a known ndarray layout."""
    return (DATA_OFFSET is not None and sys.implementation.name == "cpython"
            and not hasattr(sys, "gettotalrefcount")
            and not sysconfig.get_config_var("Py_GIL_DISABLED"))


def graph_entry(calls, n_args):
    """One native function that runs kernels in order: ``(entry, keep-alive)``.

    ``calls`` holds ``(ctypes kernel, slot indices, lo, hi)`` or a :class:`GemmCall`. The
    entry is a builtin (METH_FASTCALL) taking one array per slot, so calling it costs what
    calling any builtin costs instead of a ctypes call per step; it holds the GIL, so it
    is only for kernels too small to split over threads and for small products.
    """
    tm, engine = _engine()
    n = next(_entry_ids)
    named = []
    for j, call in enumerate(calls):
        if isinstance(call, GemmCall):
            named.append(call)
            continue
        fn, slots, lo, hi = call
        symbol = f"fc_entry_{n}_kernel_{j}"
        llvm.add_symbol(symbol, ctypes.cast(fn, ctypes.c_void_p).value)
        named.append((symbol, slots, lo, hi))
    name = f"fc_entry_{n}"   # not _MODULE's prefix: never in the disk cache
    module = ir.Module(name=name)
    codegen.emit_graph_entry(module, name, named, n_args, id(None), sys.version_info < (3, 12),
                             DATA_OFFSET)
    llmod = llvm.parse_assembly(str(module))
    llmod.triple = tm.triple
    llmod.data_layout = str(tm.target_data)
    llmod.verify()
    optimize(llmod, tm)
    with _lock:
        engine.add_module(llmod)
        engine.finalize_object()
        address = engine.get_function_address(name)
    method = _MethodDef(name.encode(), address, _METH_FASTCALL, None)
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return new(ctypes.addressof(method), None, None), method


class Executable:
    """``run(list of arrays) -> list of fresh arrays`` for one graph and input signature.

    Intermediates (values that are neither inputs, constants nor results) live in an
    *arena*: one block of memory per concurrent call, laid out by :func:`plan_arena`,
    reused across calls so big temporaries do not pay fresh page faults every time.
    A call takes a free arena (or makes one) and gives it back when it returns; results
    are always fresh arrays, never views of the arena, inputs or constants.
    """

    def __init__(self, graph: Graph):
        import backends.interpreter  # noqa: F401  (registers every primitive's impl)
        self.plan = plan = partition(graph)
        self.ir, fns = compile_plan(plan)
        self.fallbacks = [s for s in plan.steps if isinstance(s, Fallback)]
        self.n_inputs = plan.n_inputs
        self.borrowed = set(range(plan.n_inputs)) | set(plan.consts)
        results = {r[1] for r in plan.outputs if r[0] == "slot"} - self.borrowed
        io = [step_slots(s) for s in plan.steps]
        lifetimes: dict = {}
        for k, (reads, writes) in enumerate(io):
            for s in writes:
                lifetimes.setdefault(s, [k, k])[1] = k
            for s in reads:
                if s in lifetimes:
                    lifetimes[s][1] = k
        for s in self.borrowed | results:
            lifetimes.pop(s, None)
        nbytes = {s: _nbytes(*plan.slots[s]) for s in lifetimes}
        self.arena_offsets, self.arena_bytes = plan_arena(nbytes, lifetimes)
        arena = set(self.arena_offsets)
        self.steps, calls = [], []
        fresh, gemm_results = set(), set()
        for step, (_, writes) in zip(plan.steps, io, strict=True):
            if isinstance(step, Kernel):
                fn, slots, outer = fns[id(step)]
                points = int(np.prod(step.shape, dtype=np.int64))
                self.steps.append(_native_step(fn, slots, outer, points))
                if points < PARALLEL_MIN_POINTS:   # the entry holds the GIL: small only
                    calls.append((fn, slots, 0, outer or 0))
                fresh |= writes & results
            elif isinstance(step, Sort):
                fn, slots, _ = fns[id(step)]
                self.steps.append(_sort_step(fn, slots, step))
                if step.rows <= step.rows_per_part and math.prod(step.shape) < PARALLEL_MIN_POINTS:
                    calls.append((fn, slots, 0, step.rows))
                fresh |= writes & results
            elif isinstance(step, Blas):
                self.steps.append(_blas_step(step, plan, arena))
                call = _gemm_call(step, plan)
                if call is not None:
                    calls.append(call)
                    gemm_results |= writes & results
            elif isinstance(step, Loop):
                self.steps.append(loop_step(step, arena))
            else:
                self.steps.append(_fallback_step(step, arena))
        # results the kernels write: allocated for each call, handed to the caller
        self.fresh = [(s, *plan.slots[s]) for s in sorted(fresh)]
        self.in_dtypes = [plan.slots[i][1] for i in range(plan.n_inputs)]
        self.outputs = self._output_rules(plan.outputs)
        # results taken as they are (no copy, no reshape): a list of slots, else None
        self._plain_outputs = [ref[1] for _, ref in self.outputs] if all(
            not copy and ref[2] == plan.slots[ref[1]][0] for copy, ref in self.outputs) else None
        self._in_dtypes = list(enumerate(self.in_dtypes))
        self._no_inputs = [None] * plan.n_inputs
        self._results = sorted(results)     # with the inputs, cleared after each call
        self.template = [plan.consts.get(i) for i in range(len(plan.slots))]
        self._free: list = []
        self._fns = fns     # keep the ctypes prototypes alive
        # a graph of small kernels only: one native call runs them all
        self.entry = self._entry_keep = None
        if calls and len(calls) == len(plan.steps) and graph_entry_supported() and all(
                isinstance(c, np.ndarray) for c in plan.consts.values()):
            self.entry, self._entry_keep = graph_entry(calls, len(plan.slots))
            # gemm results the entry writes: allocated with the kernels' results
            self.fresh = [(s, *plan.slots[s]) for s in sorted(fresh | gemm_results)]
        self.trusted = self._trusted_call()

    def _trusted_call(self):
        """``call(args)`` for a caller that guarantees ``n_inputs`` C-contiguous ndarrays of
        the input dtypes (jit's fast path keys on exactly that): ``__call__`` without the
        argument checks, on local names. Results that need copies take ``__call__``.

        Also sets ``trusted_one``: ``call(array) -> array`` for a graph of one input and
        one result run by the native entry, else None."""
        self.trusted_one = None
        if self._plain_outputs is None:
            return self.__call__
        if self.entry is not None and self.n_inputs == 1 and len(self._plain_outputs) == 1 \
                and [s for s, *_ in self.fresh] == self._plain_outputs:
            self.trusted_one = self._one_call()
        free, new_arena, entry, steps = self._free, self.new_arena, self.entry, self.steps
        fresh, outputs, n = self.fresh, self._plain_outputs, self.n_inputs
        nones, results, keep, empty = self._no_inputs, self._results, _WORKERS, np.empty

        def call(args):
            try:
                bufs = free.pop()
            except IndexError:
                bufs = new_arena()
            try:
                bufs[:n] = args
                for s, shape, dtype in fresh:
                    bufs[s] = empty(shape, dtype)
                if entry is not None:
                    entry(*bufs)
                else:
                    for step in steps:
                        step(bufs)
                return [bufs[s] for s in outputs]
            finally:
                bufs[:n] = nones
                for s in results:
                    bufs[s] = None
                if len(free) <= keep:
                    free.append(bufs)
        return call

    def _one_call(self):
        """The native entry on one array, its result allocated per call. Without
        intermediates every call builds its own argument tuple (nothing shared between
        threads); with them, a call takes an arena from the free list as ``call`` does."""
        entry, empty, free, new_arena = self.entry, np.empty, self._free, self.new_arena
        (out, shape, dtype), = self.fresh
        bufs = self.template
        if not self.arena_offsets and out == len(bufs) - 1:
            mid = tuple(bufs[1:-1])
            if not mid:
                def one(a):
                    r = empty(shape, dtype)
                    entry(a, r)
                    return r
            else:
                def one(a):
                    r = empty(shape, dtype)
                    entry(a, *mid, r)
                    return r
            return one
        keep = _WORKERS

        def one_arena(a):
            try:
                bufs = free.pop()
            except IndexError:
                bufs = new_arena()
            r = bufs[out] = empty(shape, dtype)
            bufs[0] = a
            entry(*bufs)
            bufs[0] = bufs[out] = None
            if len(free) <= keep:
                free.append(bufs)
            return r
        return one_arena

    def _output_rules(self, refs):
        """(copy?, ref) per result: literals, inputs, constants and a second use of one
        buffer are copied, so no two results and no result and argument share memory."""
        rules, seen = [], set()
        for ref in refs:
            copy = ref[0] == "lit" or ref[1] in self.borrowed or ref[1] in seen
            if ref[0] == "slot":
                seen.add(ref[1])
            rules.append((copy, ref))
        return rules

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
                    bufs[i] = np.ascontiguousarray(a, dtype=dt)
            for s, shape, dtype in self.fresh:
                bufs[s] = np.empty(shape, dtype)
            if self.entry is not None:
                self.entry(*bufs)
            else:
                for step in self.steps:
                    step(bufs)
            if self._plain_outputs is not None:
                return [bufs[s] for s in self._plain_outputs]
            return [np.array(_fetch(ref, bufs), copy=True) if copy else _fetch(ref, bufs)
                    for copy, ref in self.outputs]
        finally:
            bufs[:n] = self._no_inputs
            for s in self._results:
                bufs[s] = None
            if len(self._free) <= _WORKERS:
                self._free.append(bufs)


def _nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


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


def compile_graph(graph: Graph) -> Executable:
    """The cached executable for ``graph`` (compiled on the first request)."""
    try:
        key = graph_key(graph)
        hash(key)
    except TypeError:
        return Executable(graph)
    exe = _CACHE.get(key)
    if exe is None:
        exe = _CACHE[key] = Executable(graph)
    return exe
