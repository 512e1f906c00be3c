"""Compile a partitioned graph with llvmlite's MCJIT and run it.

All kernels of a graph go into one LLVM module, optimized with the new pass builder
(O3, loop and SLP vectorization) for the host CPU; small kernels go in a second module
compiled without loop unrolling. A module's symbols are named from a digest of its IR,
so its object code can be cached on disk (``cache.py``) and several graphs share one
MCJIT engine. The executable is a short
Python loop over steps: native kernels (called through ctypes), BLAS calls, and
interpreter fallbacks for single equations. Compiled graphs are cached in memory by
(graph structure, input avals) for as long as something can call them.

Threads: every use of LLVM (parsing, passes, engines, symbols) holds ``_lock``, since
LLVM's global context is not thread-safe; tracing and partitioning run in parallel, and
threads asking for the same graph at once compile it once (``ir.once``).

Memory: modules go into MCJIT engines of up to :data:`MODULES_PER_ENGINE` modules each
(MCJIT never returns the memory of a module removed from a long-lived engine). The
ctypes functions and graph entries that call into a module reference it, and it its
engine; once none of an engine's modules is referenced and it takes no new ones, the
engine (object code, IR, target machine) is disposed. What stays per compile is
llvmlite's: each pass builder leaks its instrumentation callbacks (~70 KB per
``optimize``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import operator
import os
import sys
import sysconfig
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from functorch_core.ir import specs
from functorch_core.ir.core import Graph, Lit
from functorch_core.ir.once import Once
from llvmlite import binding as llvm
from llvmlite import ir

from .. import profiling
from ..planning import buffers
from ..planning.buffers import nbytes as _nbytes
from ..planning.plan import Blas, Conv, Fallback, Kernel, Lapack, Loop, Plan, Sort
from . import cache, codegen, fft, scipy_calls, sort, tinyconv
from .blas import (
    DotGeneral,
    GemmCall,
    gemm_address,
    gemm_layout,
    one_thread_always,
    one_thread_each,
)
from .conv import Conv as ConvGemm
from .lapack import lapack_step
from .loops import loop_step
from .lowering import partition

# the specs' libm functions, and the helpers' (complex sign: hypot)
_LIBM_NAMES = (*specs.libm_names(), "fmod", "hypot")
_lock = threading.Lock()      # held by everything that touches LLVM (never re-entered)
_state: dict = {}
_CACHE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()   # graph key -> Executable
_COMPILING = Once()
# kernels are built as @"fc_kernel_<i>" and renamed @"fc_<digest>_<i>" once the IR is known
_STEM = "fc_kernel_"
_MODULE = "fc_graph_"
# Kernels of fewer than SMALL_KERNEL_POINTS points are compiled without loop unrolling:
# they take microseconds either way, and fully unrolling their short inner loops (then
# vectorizing the loop around them) was most of the compile time of small graphs. Big
# kernels keep it (2-4x faster on reductions and broadcasts over short axes), except pure
# reductions over a short contiguous innermost axis (codegen.unrolling_hurts).
PIPELINES = {
    "full": dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                 loop_unrolling=True),
    "small": dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                  loop_unrolling=False),
}
SMALL_KERNEL_POINTS = 1 << 12
# a kernel of more slots takes them as one array of pointers (ctypes allows ~1024 arguments)
MAX_DIRECT_ARGS = 64
_CODEGEN_OPT = 3
_loaded: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # digest -> _NativeModule
_pending: dict = {}     # module name -> cached object code MCJIT should load instead
_dead: list = []        # engines of collected modules, disposed under _lock at the next use


def _engine():
    """The process-wide target machine used to parse and optimize (created on first use);
    call with ``_lock`` held."""
    if "tm" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _register_libm()
        tm = _target_machine()
        cpu, features = _state["cpu"]
        target = f"{tm.triple} cpu={cpu} features={features} codegen=O{_CODEGEN_OPT}"
        _state.update(tm=tm, target=target)
    _dispose_dead()
    return _state["tm"]


def _dispose_dead():
    """Dispose the engines of collected modules. Holds ``_lock``."""
    while _dead:
        engine, context = _dead.pop()
        type(engine).close(engine)
        type(context).close(context)


def _current_engine():
    """The engine taking new modules. Holds ``_lock``."""
    engine = _state.get("engine")
    if engine is None or engine.modules >= MODULES_PER_ENGINE:
        engine = _state["engine"] = _Engine()
    return engine


def _target_machine():
    if "cpu" not in _state:
        _state["cpu"] = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    cpu, features = _state["cpu"]
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=_CODEGEN_OPT, jit=True)


MODULES_PER_ENGINE = 16   # a fresh engine (and target machine) costs ~3 ms to set up


class _Engine:
    """An MCJIT engine (with a target machine of its own) taking up to
    :data:`MODULES_PER_ENGINE` modules; disposed, code and IR, once it is no longer the
    engine taking new modules and none of its modules is referenced."""

    def __init__(self):
        # its modules are parsed in a context of their own: the types, constants and
        # metadata LLVM interns go with them
        self.context = llvm.create_context()
        empty = llvm.parse_assembly("", context=self.context)
        empty.triple = llvm.get_process_triple()
        self.engine = llvm.create_mcjit_compiler(empty, _target_machine())   # owns its TM
        # llvmlite disposes these when collected, from whichever thread runs the
        # collection: only _dispose_dead may, under _lock (llvmlite skips a None close)
        self.engine.close = self.context.close = None
        self.engine.set_object_cache(_object_compiled, _cached_object)
        self.modules = 0

    def __del__(self):
        # a collection may run inside LLVM work, in this thread or another: dispose now only
        # when no one holds the lock, else at the next use of LLVM
        if _dead is None:       # the interpreter is tearing this module down
            return
        _dead.append((self.engine, self.context))
        lock = _lock
        if lock is not None and lock.acquire(blocking=False):   # None: at interpreter exit
            try:
                _dispose_dead()
            finally:
                lock.release()


class _NativeModule:
    """One LLVM module (parsed in ``engine.context``) compiled into ``engine``:
    ``addresses`` of its functions. Whoever calls into it holds a reference, which keeps
    the engine alive. Build with ``_lock`` held."""

    def __init__(self, engine, llmod, names):
        engine.modules += 1
        self.engine = engine
        engine.engine.add_module(llmod)
        engine.engine.finalize_object()
        self.addresses = {name: engine.engine.get_function_address(name) for name in names}


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
    libm = _libm()
    for base in _LIBM_NAMES:
        for sym in (base, base + "f"):
            llvm.add_symbol(sym, ctypes.cast(getattr(libm, sym), ctypes.c_void_p).value)


def _libm():
    """This process's libm, by its usual names first: ``find_library`` runs ``ldconfig``
    in a subprocess (1-7 ms of a process's first compilation)."""
    for name in ("libm.so.6", "libm.dylib"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    return ctypes.CDLL(ctypes.util.find_library("m"))


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
    raw pointers; a kernel of more than ``MAX_DIRECT_ARGS`` slots takes them as one array
    of pointers (see :class:`PackedKernel`).
    """
    module = ir.Module(name="fc_graph")
    entries = {}
    for i, step in enumerate(kernels):
        name = f"{_STEM}{i}"
        emit = sort.emit_sort if isinstance(step, Sort) else \
            tinyconv.emit if isinstance(step, tinyconv.TinyConv) else codegen.emit_kernel
        slots, outer = emit(module, name, step)
        if DATA_OFFSET is not None or len(slots) > MAX_DIRECT_ARGS:
            module.globals[name].linkage = "internal"
            codegen.emit_array_entry(module, name + "_arrays", name, DATA_OFFSET,
                                     packed=len(slots) > MAX_DIRECT_ARGS)
            name += "_arrays"
        entries[id(step)] = (name, slots, outer)
    return module, entries


def compile_plan(plan: Plan):
    """Native code for every kernel of ``plan``: (:class:`OptimizedIR`, {id: (fn, slots,
    outer)}). Small kernels and the others form two modules (two pipelines); each one's
    object code comes from this process's engine when it already holds the same module,
    else from the disk cache, else from LLVM (then it is written to the cache)."""
    groups: dict = {name: [] for name in PIPELINES}
    tiny = {}       # id(TinyConv) -> the Conv step it runs
    for step in plan.steps:
        if isinstance(step, Kernel | Sort):
            small = math.prod(step.shape) < SMALL_KERNEL_POINTS or (
                isinstance(step, Kernel) and codegen.unrolling_hurts(step))
            groups["small" if small else "full"].append(step)
        elif isinstance(step, Conv):
            conv = tinyconv.plan(step, *plan.slots[step.out])
            if conv is not None:
                tiny[id(conv)] = step
                groups["full"].append(conv)
    fns, parts = {}, []
    for pipeline, kernels in groups.items():
        if kernels:
            text, group_fns = _compile_kernels(kernels, pipeline)
            parts.append((text, pipeline))
            fns.update(group_fns)
    # a small conv's native function, keyed by its plan step
    fns.update({id(tiny[key]): fns.pop(key) for key in list(fns) if key in tiny})
    return OptimizedIR(parts), fns


def _compile_kernels(kernels, pipeline):
    """One module for ``kernels``: (its IR text, {id: (fn, slots, outer)}); each ctypes
    function keeps the module's native code alive (``fn.native``)."""
    module, entries = build_module(kernels)
    text = str(module)
    with _lock:
        _engine()
        digest = cache.key(text, f"{_state['target']} {sorted(PIPELINES[pipeline].items())}")
        stem = f"fc_{digest[:32]}_"
        text = text.replace(f'@"{_STEM}', f'@"{stem}')
        native = _loaded.get(digest)
        if native is None:
            names = [stem + name[len(_STEM):] for name, _, _ in entries.values()]
            native = _loaded[digest] = _add_module(text, digest, names, pipeline)
    fns = {}
    arg = ctypes.c_void_p if DATA_OFFSET is None else ctypes.py_object
    for key, (name, slots, outer) in entries.items():
        symbol = stem + name[len(_STEM):]
        address = native.addresses[symbol]
        if len(slots) > MAX_DIRECT_ARGS:
            fn = PackedKernel(address, len(slots))
        else:
            proto = ctypes.CFUNCTYPE(None, *([arg] * len(slots)), ctypes.c_int64,
                                     ctypes.c_int64)
            fn = proto(address)
        fn.native, fn.symbol = native, symbol
        fns[key] = (fn, slots, outer)
    return text, fns


class PackedKernel:
    """A kernel entry that takes its arrays (or, with no known array layout, their data
    pointers) as one C array of pointers: ``kernel(*arrays, lo, hi)`` from Python."""

    _proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64)

    def __init__(self, address, n):
        self.raw = self._proto(address)
        self.table = ctypes.c_void_p * n
        self.index = (ctypes.c_int64 * n)(*range(n))

    def __call__(self, *args):
        *arrays, lo, hi = args
        # id() is the object's address; the caller's buffer list keeps each one alive
        pointers = self.table(*arrays) if DATA_OFFSET is None else self.table(*map(id, arrays))
        self.raw(pointers, self.index, lo, hi)


def _add_module(text, digest, names, pipeline):
    """A :class:`_NativeModule` for the module ``text``, optimized (``pipeline``; None: not
    at all) only when the disk cache has no object code for ``digest``. Holds ``_lock``."""
    tm = _engine()
    engine = _current_engine()
    llmod = _parse(text, tm, engine.context)
    llmod.name = _MODULE + digest
    obj = cache.load(digest)
    with profiling.span("llvm: disk cache hit" if obj is not None else "llvm: optimize+compile",
                        "compile"):
        if obj is not None:
            _pending[llmod.name] = obj
        elif pipeline is not None:
            optimize(llmod, tm, pipeline)
        try:
            return _NativeModule(engine, llmod, names)
        finally:
            _pending.pop(llmod.name, None)


def _parse(text, tm, context=None):
    llmod = llvm.parse_assembly(text, context=context)
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
            texts = []
            with _lock:
                tm = _engine()
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


def _workers_from_env() -> int:
    value = os.environ.get("FUNCTORCH_CORE_NUM_THREADS", "").strip()
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"FUNCTORCH_CORE_NUM_THREADS must be a positive integer, got {value!r}")
    return int(value)


_WORKERS = _workers_from_env()    # threads a big kernel, sort or conv splits over
ARENA_ALIGN = 64                  # bytes; every intermediate buffer starts on a cache line


def _pool():
    pool = _state.get("pool")
    if pool is None:
        with _lock:
            pool = _state.get("pool")
            if pool is None:
                pool = _state["pool"] = ThreadPoolExecutor(_WORKERS, thread_name_prefix="fc-cpu")
    return pool


def get_num_threads() -> int:
    """How many threads (the caller's included) a big kernel, sort, conv or product splits
    over."""
    return _WORKERS


def set_num_threads(n: int):
    """Split big kernels, sorts, convs and products over ``n`` threads in executables
    compiled from now on (the compiled-graph cache is cleared; a ``jit`` function keeps the
    executables it holds until ``functorch_core.clear_caches()``). The default is the environment
    variable ``FUNCTORCH_CORE_NUM_THREADS``, else the number of cores."""
    global _WORKERS
    if type(n) is not int or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    with _lock:
        _WORKERS = n
        pool = _state.pop("pool", None)
    if pool is not None:
        pool.shutdown(wait=False)
    clear_cache()


def _after_fork_in_child():
    """A forked child has only the forking thread: the pool's threads and any holder of
    ``_lock`` in the parent do not exist here, so start both afresh."""
    global _lock
    _lock = threading.Lock()
    _state.pop("pool", None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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
            elif type(o) is np.ndarray and o.flags.owndata and o.flags.c_contiguous \
                    and o.dtype == dt and not any(o is a for a in args):
                bufs[slot] = o      # a fresh array of the impl's own: no copy
            else:
                bufs[slot] = np.array(o, dtype=dt, order="C", copy=True)
    return run


def _ref_shape(ref):
    return np.shape(ref[1]) if ref[0] == "lit" else ref[2]


def _binary_step(op, lhs, rhs, out, arena: set):
    """``op(lhs, rhs)`` into slot ``out``: in place when ``out`` lives in the arena."""
    if out in arena:
        def run(bufs):
            op(_fetch(lhs, bufs), _fetch(rhs, bufs), out=bufs[out])
    else:
        def run(bufs):
            bufs[out] = op(_fetch(lhs, bufs), _fetch(rhs, bufs))
    return run


def _blas_step(step: Blas, plan: Plan, arena: set):
    dot = DotGeneral(_ref_shape(step.lhs), _ref_shape(step.rhs), plan.slots[step.out][1],
                     step.dimension_numbers, parallel=_pool, workers=_WORKERS)
    return _binary_step(dot, step.lhs, step.rhs, step.out, arena)


def _conv_step(step: Conv, plan: Plan, arena: set):
    out_shape, dtype = plan.slots[step.out]
    conv = ConvGemm(_ref_shape(step.lhs), _ref_shape(step.rhs), out_shape, dtype,
                    **step.params, parallel=_pool, workers=_WORKERS)
    return _binary_step(conv, step.lhs, step.rhs, step.out, arena)


GEMM_ENTRY_MAX_MACS = 1 << 21   # bigger products run as their own (GIL-releasing) step
_gemm_symbols: set = set()


def _one_blas_thread(entry):
    """``entry`` (a native graph entry) run with OpenBLAS held at one thread: its gemms
    call OpenBLAS from native code, where :class:`DotGeneral` cannot hold it."""
    hold = one_thread_each()

    def held(*bufs):
        with hold:
            return entry(*bufs)
    return held


def _gemm_call(step: Blas, plan: Plan, max_macs=GEMM_ENTRY_MAX_MACS) -> GemmCall | None:
    """``step`` as a call inside the native graph entry, when its operands are slots already
    in a gemm layout and the product has at most ``max_macs`` multiply-adds (the entry holds
    the GIL); else None."""
    if step.lhs[0] != "slot" or step.rhs[0] != "slot":
        return None
    layout = gemm_layout(step.lhs[2], step.rhs[2], step.dimension_numbers)
    if layout is None or min(layout.batch, layout.m, layout.n, layout.k) == 0 or \
            layout.batch * layout.m * layout.n * layout.k > max_macs:
        return None
    dtype = plan.slots[step.out][1]
    symbol = f"fc_{dtype.char}gemm"
    with _lock:
        if symbol not in _gemm_symbols:
            llvm.add_symbol(symbol, gemm_address(dtype))
            _gemm_symbols.add(symbol)
    return GemmCall(symbol, dtype, step.lhs[1], step.rhs[1], step.out, layout)


_METH_FASTCALL = 0x80
_NONE_SYMBOL = "fcx_py_none"
_ENTRY = "fc_entry"


# a prototype of its own (setting ctypes.pythonapi's argtypes per call races between threads)
_new_cfunction = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                   ctypes.c_void_p)(("PyCFunction_NewEx", ctypes.pythonapi))


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
    """One native function that runs kernels in order: a builtin whose ``__self__`` keeps
    its own code, its method definition and the kernels' modules alive.

    ``calls`` holds ``(ctypes kernel, slot indices, lo, hi)`` or a :class:`GemmCall`. The
    entry is a builtin (METH_FASTCALL) taking one array per slot, so calling it costs what
    calling any builtin costs instead of a ctypes call per step; it holds the GIL, so it
    is only for kernels too small to split over threads and for small products.
    """
    named, keep = [], []
    with _lock:
        _engine()   # the target names the entry's digest
        for call in calls:
            if isinstance(call, GemmCall):
                named.append(call)
                continue
            fn, slots, lo, hi = call
            packed = isinstance(fn, PackedKernel)
            # the kernel's own (digest-named) symbol makes the entry's IR the same in every
            # process, so the disk cache keeps its object code and the engine shares it; it
            # is bound under the lock, to the module this entry keeps alive
            symbol = f"fcx_{fn.symbol}"
            llvm.add_symbol(symbol, ctypes.cast(fn.raw if packed else fn, ctypes.c_void_p).value)
            named.append((symbol, slots, lo, hi, packed))
            keep.append(fn.native)
        return _builtin("entry", lambda module: codegen.emit_graph_entry(
            module, _ENTRY, named, n_args, _NONE_SYMBOL, sys.version_info < (3, 12),
            DATA_OFFSET), keep)


def loop_entry(loop):
    """The native function running ``loop`` (a :class:`plan.NativeLoop`), as a builtin
    like :func:`graph_entry`'s: (builtin, what keeps its code alive)."""
    with _lock:
        _engine()
        return _builtin("loop", lambda module: codegen.emit_loop_entry(
            module, _ENTRY, loop, _NONE_SYMBOL, sys.version_info < (3, 12), DATA_OFFSET))


def _builtin(kind, emit, keep=()):
    """Emit one function with ``emit(module)``, compile it once (disk-cached, named by its
    digest) and wrap it as a builtin: (builtin, what keeps its code alive). Called under
    ``_lock``."""
    llvm.add_symbol(_NONE_SYMBOL, id(None))
    module = ir.Module(name=_ENTRY)
    emit(module)
    text = str(module)
    digest = cache.key(text, f"{_state['target']} {kind}")
    name = f"fc_{digest[:32]}_{kind}"
    text = text.replace(f'@"{_ENTRY}"', f'@"{name}"')
    native = _loaded.get(digest)
    if native is None:
        # straight-line calls and a loop around them: the backend's own codegen
        # optimizations suffice, and each optimize() leaks ~70 KB in llvmlite
        native = _loaded[digest] = _add_module(text, digest, [name], None)
        native.kernels = list(keep)       # the code it was linked against
    method = _MethodDef(name.encode(), native.addresses[name], _METH_FASTCALL, None)
    owner = (method, native)
    return _new_cfunction(ctypes.addressof(method), owner, None), owner


class Executable:
    """``run(list of arrays) -> list of fresh arrays`` for one graph and input signature.

    Intermediates (values that are neither inputs, constants nor results) live in an
    *arena*: one block of memory per concurrent call, laid out by ``planning.buffers``,
    reused across calls so big temporaries do not pay fresh page faults every time.
    A call takes a free arena (or makes one) and gives it back when it returns; results
    are fresh arrays, never views of the arena, inputs or constants, except in the
    executable :meth:`donating` returns, whose results may live in donated inputs.
    """

    def __init__(self, graph: Graph, loop_body: bool = False, donate: tuple = ()):
        import functorch_core.backends.interpreter  # noqa: F401  (registers every primitive's impl)
        with profiling.span("partition", "compile"):
            self.plan = plan = partition(graph)
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
                # a loop body's entry runs inside a native loop that holds the GIL anyway
                call = _gemm_call(step, plan, math.inf if loop_body else GEMM_ENTRY_MAX_MACS)
                if call is not None:
                    calls.append(call)
                    gemm_results |= writes & results
            elif isinstance(step, Conv) and id(step) in fns:     # a small conv: native
                fn, slots, _ = fns[id(step)]
                self.steps.append(_native_step(fn, slots, None, 0))
                if tinyconv.plan(step, *plan.slots[step.out]).macs <= GEMM_ENTRY_MAX_MACS:
                    calls.append((fn, slots, 0, 0))     # the entry holds the GIL: small only
                fresh |= writes & results
            elif isinstance(step, Conv):
                self.steps.append(_conv_step(step, plan, arena))
            elif isinstance(step, Loop):
                self.steps.append(loop_step(step, arena))
            elif isinstance(step, Lapack):
                self.steps.append(lapack_step(step, plan, arena))
            elif fft.runs(step.eqn):
                self.steps.append(fft.fft_step(step, arena))
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
            macs = max((c.layout.m * c.layout.n * c.layout.k for c in calls
                        if isinstance(c, GemmCall)), default=0)
            if one_thread_always(macs):
                self.entry = _one_blas_thread(self.entry)
            # gemm results the entry writes: allocated with the kernels' results
            self.fresh = [(s, *plan.slots[s]) for s in sorted(fresh | gemm_results)]
        if donate:      # results in donated memory: bound per call, never allocated
            taken = set(self.donations.values())
            self.fresh = [f for f in self.fresh if f[0] not in taken]
            self._donated = [(i, r) for i, r in self.donations.items()]
            self._consts = [c for c in plan.consts.values() if isinstance(c, np.ndarray)]
            self.trusted, self.trusted_one = self.__call__, None
            return
        self._donated = ()
        self.trusted = self._trusted_call()

    @property
    def entry_address(self) -> int | None:
        """The address of the native entry (METH_FASTCALL: ``(self, args, nargs)``, one
        array object per slot of :meth:`new_arena`'s list), or None without one."""
        return None if self._entry_keep is None else self._entry_keep[0].ml_meth

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

    def profiled(self, args):
        """``self(args)`` with a profiler event per step (see ``profiled.py``)."""
        twin = self.__dict__.get("_twin")
        if twin is None:
            from .profiled import instrumented
            twin = self._twin = instrumented(self)
        return twin(args)

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
        """Whether the arguments this executable would write into are fit for it: owned
        by this call alone (C-contiguous, writable arrays of the input dtype that share no
        memory with another argument or a constant of the graph)."""
        for i in self.reused:
            a = args[i]
            if type(a) is not np.ndarray or a.dtype != self.in_dtypes[i] or \
                    not a.flags.c_contiguous or not a.flags.writeable:
                return False
            if any(j != i and isinstance(b, np.ndarray) and np.may_share_memory(a, b)
                   for j, b in enumerate(args)) or \
                    any(np.may_share_memory(a, c) for c in self._consts):
                return False
        return True

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
            for i, r in self._donated:
                bufs[r] = bufs[i]
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
    with _lock:
        _state.pop("engine", None)      # its modules in use keep it
        _dispose_dead()
