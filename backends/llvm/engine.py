"""The LLVM handles of the process: target machine, MCJIT engines, object code.

Every module of this package that turns LLVM IR into native code goes through here:
:func:`compile_ir` parses a module's text, optimizes it (unless the disk cache,
``cache.py``, has its object code) and loads it into an MCJIT engine, returning a
:class:`NativeModule` whose ``addresses`` are its functions'. Symbols are named from a
digest of the IR, so several graphs share one engine and the disk cache keeps object code.

Threads: every use of LLVM (parsing, passes, engines, symbols) holds :data:`lock`, since
LLVM's global context is not thread-safe. Read it as ``engine.lock`` at the time of use:
a forked child replaces it.

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
import os
import sys
import threading
import weakref

import llvmlite
import numpy as np
from functorch_core.ir import specs
from llvmlite import binding as llvm

from .. import profiling
from . import cache, compile_worker, objcheck

# the specs' libm functions, and the helpers' (complex sign: hypot)
_LIBM_NAMES = (*specs.libm_names(), "fmod", "hypot")
lock = threading.Lock()      # held by everything that touches LLVM (never re-entered)
_state: dict = {}
_MODULE = "fc_graph_"
# Kernels of fewer than kernels.SMALL_KERNEL_POINTS points are compiled without loop
# unrolling: they take microseconds either way, and fully unrolling their short inner loops
# (then vectorizing the loop around them) was most of the compile time of small graphs.
# Big kernels keep it (2-4x faster on reductions and broadcasts over short axes), except
# pure reductions over a short contiguous innermost axis (codegen.unrolling_hurts).
PIPELINES = {
    "full": dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                 loop_unrolling=True),
    "small": dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                  loop_unrolling=False),
}
_CODEGEN_OPT = 3
MODULES_PER_ENGINE = 16   # a fresh engine (and target machine) costs ~3 ms to set up
loaded: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # digest -> NativeModule
_pending: dict = {}     # module name -> cached object code MCJIT should load instead
_dead: list = []        # engines of collected modules, disposed under lock at the next use
_LLVMLITE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(llvmlite.__file__)))


def target_machine():
    """The process-wide target machine used to parse and optimize (created on first use);
    call with :data:`lock` held."""
    if "tm" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _register_libm()
        tm = _new_target_machine()
        cpu, features = _state["cpu"]
        target = f"{tm.triple} cpu={cpu} features={features} codegen=O{_CODEGEN_OPT}"
        _state.update(tm=tm, target=target)
    _dispose_dead()
    return _state["tm"]


def target() -> str:
    """The target machine's description (triple, CPU, features, codegen level), part of
    every disk-cache key; call after :func:`target_machine`."""
    return _state["target"]


def host_cpu() -> tuple[str, str]:
    """(CPU name, feature string) of this host; call after :func:`target_machine`."""
    return _state["cpu"]


def _dispose_dead():
    """Dispose the engines of collected modules. Holds :data:`lock`."""
    while _dead:
        engine, context = _dead.pop()
        type(engine).close(engine)
        type(context).close(context)


def _current_engine():
    """The engine taking new modules. Holds :data:`lock`."""
    engine = _state.get("engine")
    if engine is None or engine.modules >= MODULES_PER_ENGINE:
        engine = _state["engine"] = _Engine()
    return engine


def retire_engine():
    """Start a fresh engine for the next module; the current one goes once its modules in
    use are collected. Takes :data:`lock`."""
    with lock:
        _state.pop("engine", None)      # its modules in use keep it
        _dispose_dead()


def _new_target_machine():
    if "cpu" not in _state:
        _state["cpu"] = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    cpu, features = _state["cpu"]
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=_CODEGEN_OPT, jit=True)


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
        self.engine = llvm.create_mcjit_compiler(empty, _new_target_machine())   # owns its TM
        # llvmlite disposes these when collected, from whichever thread runs the
        # collection: only _dispose_dead may, under lock (llvmlite skips a None close)
        self.engine.close = self.context.close = None
        self.engine.set_object_cache(_object_compiled, _cached_object)
        self.modules = 0

    def __del__(self):
        # a collection may run inside LLVM work, in this thread or another: dispose now only
        # when no one holds the lock, else at the next use of LLVM
        if _dead is None or sys.is_finalizing():    # at exit: LLVM's hooks may be gone
            return
        _dead.append((self.engine, self.context))
        held = lock
        if held is not None and held.acquire(blocking=False):   # None: at interpreter exit
            try:
                _dispose_dead()
            finally:
                held.release()


class NativeModule:
    """One LLVM module (parsed in ``engine.context``) compiled into ``engine``:
    ``addresses`` of its functions. Whoever calls into it holds a reference, which keeps
    the engine alive. Build with :data:`lock` held."""

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
    m = libm()
    for base in _LIBM_NAMES:
        for sym in (base, base + "f"):
            llvm.add_symbol(sym, ctypes.cast(getattr(m, sym), ctypes.c_void_p).value)


def libm():
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


def add_module(text, digest, names, pipeline):
    """A :class:`NativeModule` for the module ``text``, optimized (``pipeline``; None: not
    at all) only when the disk cache has no object code for ``digest``. Holds :data:`lock`."""
    tm = target_machine()
    engine = _current_engine()
    llmod = parse(text, tm, engine.context)
    llmod.name = _MODULE + digest
    obj = cache.load(digest)
    if obj is not None and not objcheck.loadable(obj, tm.triple, names, _resolves):
        cache.discard(digest)       # checksum right, object wrong: LLVM would abort on it
        obj = None
    hit = obj is not None
    if not hit and pipeline is not None and compile_worker.wanted(text):
        cpu, features = _state["cpu"]
        with profiling.span("llvm: compile worker", "compile"):
            obj = compile_worker.compile_object(text, cpu, features, _CODEGEN_OPT,
                                                PIPELINES[pipeline], _LLVMLITE_DIR)
        if obj is not None and not objcheck.loadable(obj, tm.triple, names, _resolves):
            obj = None      # never seen; compiled here instead
        if obj is not None:
            cache.stats["compiled"] += 1
            cache.store(digest, obj)
    with profiling.span("llvm: disk cache hit" if hit else "llvm: load" if obj is not None
                        else "llvm: optimize+compile", "compile"):
        if obj is not None:
            _pending[llmod.name] = obj
        elif pipeline is not None:
            optimize(llmod, tm, pipeline)
        try:
            return NativeModule(engine, llmod, names)
        finally:
            _pending.pop(llmod.name, None)


def _resolves(symbol: str) -> bool:
    return llvm.address_of_symbol(symbol) is not None


def compile_ir(text, names, pipeline, salt=None, locked=False):
    """:func:`add_module` for ``text`` keyed by its digest with the target (and ``salt``,
    what else decides the object code); ``locked``: the caller holds :data:`lock`."""
    if not locked:
        with lock:
            return compile_ir(text, names, pipeline, salt, locked=True)
    target_machine()
    digest = cache.key(text, target() if salt is None else f"{target()} {salt}")
    return add_module(text, digest, names, pipeline)


def parse(text, tm, context=None):
    llmod = llvm.parse_assembly(text, context=context)
    llmod.triple = tm.triple
    llmod.data_layout = str(tm.target_data)
    llmod.verify()
    return llmod


def _after_fork_in_child():
    """A forked child has only the forking thread: a holder of :data:`lock` in the parent
    does not exist here, so start it afresh."""
    global lock
    lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
