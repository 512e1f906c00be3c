"""Compile a partitioned graph with llvmlite's MCJIT and run it.

All kernels of a graph go into one LLVM module, optimized with the new pass builder
(O3 with loop and SLP vectorization, without loop unrolling) for the host CPU. The
module's symbols are named from a digest of its IR, so its object code can be cached on
disk (``cache.py``) and several graphs share one MCJIT engine. The executable is a short
Python loop over steps: native kernels (called through ctypes), BLAS calls, and
interpreter fallbacks for single equations. Compiled graphs are cached in memory by
(graph structure, input avals).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from ir.core import Graph, Lit

from . import cache, codegen
from .blas import DotGeneral
from .partition import partition
from .plan import Blas, Fallback, Kernel, Plan

_LIBM_NAMES = ("exp", "exp2", "expm1", "log", "log1p", "cbrt", "tanh", "sin", "cos", "tan",
               "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "pow",
               "atan2", "fmod")
_lock = threading.Lock()
_state: dict = {}
_CACHE: dict = {}
# kernels are built as @"fc_kernel_<i>" and renamed @"fc_<digest>_<i>" once the IR is known
_STEM = "fc_kernel_"
_MODULE = "fc_graph_"
# loop unrolling more than doubled optimization and code generation time (full unrolling
# of short inner loops, runtime unrolling of vector loops) for no measurable speed: the
# vectorizer still interleaves its loops
_PIPELINE = dict(speed_level=3, loop_vectorization=True, slp_vectorization=True,
                 loop_unrolling=False)
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
        target = (f"{tm.triple} cpu={cpu} features={features} codegen=O{_CODEGEN_OPT} "
                  f"pipeline={sorted(_PIPELINE.items())}")
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


def optimize(llmod, tm):
    pto = llvm.create_pipeline_tuning_options(speed_level=_PIPELINE["speed_level"])
    for option, value in _PIPELINE.items():
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


def build_module(plan: Plan):
    """LLVM IR for every kernel of ``plan``: (ir.Module, {id(kernel): (entry name, slots,
    outer)}), the same text for the same plan in every process (kernel i is
    ``fc_kernel_<i>``).

    The entry takes array objects when the data-pointer offset is known (then the kernel
    itself is internal: inlined into its entry, it is optimized and compiled once), else
    raw pointers.
    """
    module = ir.Module(name="fc_graph")
    entries = {}
    kernels = (step for step in plan.steps if isinstance(step, Kernel))
    for i, step in enumerate(kernels):
        name = f"{_STEM}{i}"
        slots, outer = codegen.emit_kernel(module, name, step)
        if DATA_OFFSET is not None:
            module.globals[name].linkage = "internal"
            codegen.emit_array_entry(module, name + "_arrays", name, DATA_OFFSET)
            name += "_arrays"
        entries[id(step)] = (name, slots, outer)
    return module, entries


def compile_plan(plan: Plan):
    """Native code for every kernel of ``plan``: (:class:`OptimizedIR`, {id: (fn, slots,
    outer)}). Object code comes from this process's engine when it already holds the same
    module, else from the disk cache, else from LLVM (then it is written to the cache)."""
    tm, engine = _engine()
    module, entries = build_module(plan)
    if not entries:
        return OptimizedIR(""), {}
    text = str(module)
    digest = cache.key(text, _state["target"])
    stem = f"fc_{digest[:32]}_"
    text = text.replace(f'@"{_STEM}', f'@"{stem}')
    with _lock:
        addresses = _loaded.get(digest)
        if addresses is None:
            names = [stem + name[len(_STEM):] for name, _, _ in entries.values()]
            addresses = _loaded[digest] = _add_module(text, digest, names, tm, engine)
    fns = {}
    arg = ctypes.c_void_p if DATA_OFFSET is None else ctypes.py_object
    for key, (name, slots, outer) in entries.items():
        proto = ctypes.CFUNCTYPE(None, *([arg] * len(slots)), ctypes.c_int64, ctypes.c_int64)
        fns[key] = (proto(addresses[stem + name[len(_STEM):]]), slots, outer)
    return OptimizedIR(text), fns


def _add_module(text, digest, names, tm, engine):
    """Add the module ``text`` to the engine, optimizing it only when the disk cache has
    no object code for ``digest``; the addresses of ``names``. Holds ``_lock``."""
    llmod = _parse(text, tm)
    llmod.name = _MODULE + digest
    obj = cache.load(digest)
    if obj is None:
        optimize(llmod, tm)
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

    def __init__(self, text: str):
        self.source = text      # the unoptimized IR
        self._text = None

    def __str__(self):
        if self._text is None:
            if not self.source:
                self._text = ""
            else:
                tm, _ = _engine()
                llmod = _parse(self.source, tm)
                optimize(llmod, tm)
                self._text = str(llmod)
        return self._text

    def __contains__(self, fragment: str):
        return fragment in str(self)


# -- steps at run time ----------------------------------------------------------

PARALLEL_MIN_POINTS = 1 << 18     # below this a kernel runs on the calling thread
_WORKERS = os.cpu_count() or 1


def _pool():
    if "pool" not in _state:
        _state["pool"] = ThreadPoolExecutor(_WORKERS, thread_name_prefix="fc-cpu")
    return _state["pool"]


def _native_step(fn, slots, out_specs, outer, points):
    """Allocate the kernel's outputs and call it; split its outermost loop over the cores
    when it is big (ctypes releases the GIL during the call)."""
    chunks = min(_WORKERS, outer or 1) if points >= PARALLEL_MIN_POINTS else 1
    bounds = [(outer * i // chunks, outer * (i + 1) // chunks) for i in range(chunks)] \
        if outer else [(0, 0)]
    by_pointer = DATA_OFFSET is None

    def run(bufs):
        for slot, shape, dtype in out_specs:
            bufs[slot] = np.empty(shape, dtype)
        args = [bufs[s].ctypes.data for s in slots] if by_pointer else [bufs[s] for s in slots]
        if len(bounds) == 1:
            fn(*args, *bounds[0])
            return
        futures = [_pool().submit(fn, *args, lo, hi) for lo, hi in bounds[1:]]
        fn(*args, *bounds[0])
        for f in futures:
            f.result()
    return run


def _fetch(ref, bufs):
    if ref[0] == "lit":
        return ref[1]
    arr = bufs[ref[1]]
    return arr if arr.shape == ref[2] else arr.reshape(ref[2])


def _fallback_step(step: Fallback):
    eqn, impl = step.eqn, step.eqn.prim.impl
    dtypes = [v.aval.dtype for v in eqn.outputs]

    def run(bufs):
        args = [_fetch(r, bufs) for r in step.inputs]
        with np.errstate(all="ignore"):
            outs = impl(*args, **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        for slot, o, dt in zip(step.outputs, outs, dtypes, strict=True):
            bufs[slot] = np.array(o, dtype=dt, order="C", copy=True)
    return run


def _blas_step(step: Blas, plan: Plan):
    def shape(ref):
        return np.shape(ref[1]) if ref[0] == "lit" else ref[2]
    dot = DotGeneral(shape(step.lhs), shape(step.rhs), plan.slots[step.out][1],
                     step.dimension_numbers)

    def run(bufs):
        bufs[step.out] = dot(_fetch(step.lhs, bufs), _fetch(step.rhs, bufs))
    return run


class Executable:
    """``run(list of arrays) -> list of fresh arrays`` for one graph and input signature."""

    def __init__(self, graph: Graph):
        import backends.interpreter  # noqa: F401  (registers every primitive's impl)
        self.plan = plan = partition(graph)
        self.ir, fns = compile_plan(plan)
        self.fallbacks = [s for s in plan.steps if isinstance(s, Fallback)]
        self.steps = []
        for step in plan.steps:
            if isinstance(step, Kernel):
                fn, slots, outer = fns[id(step)]
                outs = [(s, plan.slots[s][0], plan.slots[s][1])
                        for s in sorted({s for _, s, _ in step.stores}
                                        | {r.slot for r in step.reduces})]
                points = int(np.prod(step.shape, dtype=np.int64))
                self.steps.append(_native_step(fn, slots, outs, outer, points))
            elif isinstance(step, Blas):
                self.steps.append(_blas_step(step, plan))
            else:
                self.steps.append(_fallback_step(step))
        self.template = [plan.consts.get(i) for i in range(len(plan.slots))]
        self.in_dtypes = [plan.slots[i][1] for i in range(plan.n_inputs)]
        self.borrowed = set(range(plan.n_inputs)) | set(plan.consts)
        self._fns = fns     # keep the ctypes prototypes alive

    def __call__(self, args):
        bufs = self.template.copy()
        for i, (a, dt) in enumerate(zip(args, self.in_dtypes, strict=True)):
            bufs[i] = a if type(a) is np.ndarray and a.dtype == dt and a.flags.c_contiguous \
                else np.ascontiguousarray(a, dtype=dt)
        for step in self.steps:
            step(bufs)
        outs = []
        for ref in self.plan.outputs:
            if ref[0] == "lit" or ref[1] in self.borrowed:
                outs.append(np.array(_fetch(ref, bufs), copy=True))
            else:
                outs.append(_fetch(ref, bufs))
        return outs


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
