"""A plan's kernels as native code: all of them in one LLVM module, optimized with the
new pass builder (O3, loop and SLP vectorization) for the host CPU; small kernels go in a
second module compiled without loop unrolling (``engine.PIPELINES``). Kernels that differ
only in the arrays they take (``codegen.kernel_key``: an unrolled Python loop makes
thousands) share one function, emitted and compiled once. A module's symbols
are named from a digest of its IR, so its object code can be cached on disk and several
graphs share one MCJIT engine (``engine.py``)."""

from __future__ import annotations

import ctypes
import math

from llvmlite import ir

from ..planning.plan import Conv, Kernel, Plan, Sort
from . import cache, codegen, engine, entry_codegen, sort, tinyconv

# kernels are built as @"fc_kernel_<i>" and renamed @"fc_<digest>_<i>" once the IR is known
_STEM = "fc_kernel_"
# Kernels of fewer points are compiled without loop unrolling (see engine.PIPELINES).
SMALL_KERNEL_POINTS = 1 << 12
# a kernel of more slots takes them as one array of pointers (ctypes allows ~1024 arguments)
MAX_DIRECT_ARGS = 64


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
    entries, twins = {}, {}
    for i, step in enumerate(kernels):
        name = f"{_STEM}{i}"
        emit = sort.emit_sort if isinstance(step, Sort) else \
            tinyconv.emit if isinstance(step, tinyconv.TinyConv) else codegen.emit_kernel
        key = None
        if emit is codegen.emit_kernel:
            slots = codegen.kernel_slots(step)
            key = codegen.kernel_key(step, slots)
            if key in twins:        # the same function: emitted and compiled once
                entries[id(step)] = (twins[key][0], slots, twins[key][1])
                continue
        slots, outer = emit(module, name, step)
        if engine.DATA_OFFSET is not None or len(slots) > MAX_DIRECT_ARGS:
            module.globals[name].linkage = "internal"
            entry_codegen.emit_array_entry(module, name + "_arrays", name, engine.DATA_OFFSET,
                                     packed=len(slots) > MAX_DIRECT_ARGS)
            name += "_arrays"
        entries[id(step)] = (name, slots, outer)
        if key is not None:
            twins[key] = (name, outer)
    return module, entries


def compile_plan(plan: Plan):
    """Native code for every kernel of ``plan``: (:class:`OptimizedIR`, {id: (fn, slots,
    outer)}). Small kernels and the others form two modules (two pipelines); each one's
    object code comes from this process's engine when it already holds the same module,
    else from the disk cache, else from LLVM (then it is written to the cache)."""
    groups: dict = {name: [] for name in engine.PIPELINES}
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
    with engine.lock:
        engine.target_machine()
        digest = cache.key(text, f"{engine.target()} {sorted(engine.PIPELINES[pipeline].items())}")
        stem = f"fc_{digest[:32]}_"
        text = text.replace(f'@"{_STEM}', f'@"{stem}')
        native = engine.loaded.get(digest)
        if native is None:
            names = list(dict.fromkeys(stem + name[len(_STEM):]
                                       for name, _, _ in entries.values()))
            native = engine.loaded[digest] = engine.add_module(text, digest, names, pipeline)
    fns, made = {}, {}
    arg = ctypes.c_void_p if engine.DATA_OFFSET is None else ctypes.py_object
    for key, (name, slots, outer) in entries.items():
        symbol = stem + name[len(_STEM):]
        fn = made.get(symbol)
        if fn is None:
            address = native.addresses[symbol]
            if len(slots) > MAX_DIRECT_ARGS:
                fn = PackedKernel(address, len(slots))
            else:
                proto = ctypes.CFUNCTYPE(None, *([arg] * len(slots)), ctypes.c_int64,
                                         ctypes.c_int64)
                fn = proto(address)
            fn.native, fn.symbol = native, symbol
            made[symbol] = fn
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
        pointers = self.table(*arrays) if engine.DATA_OFFSET is None else \
            self.table(*map(id, arrays))
        self.raw(pointers, self.index, lo, hi)


class OptimizedIR:
    """The optimized LLVM IR of a graph's kernels, produced when first asked for
    (``str(ir)``, ``"<8 x float>" in ir``): a disk-cache hit never optimizes."""

    def __init__(self, parts):
        self.parts = parts      # (unoptimized IR, pipeline) per module
        self._text = None

    def __str__(self):
        if self._text is None:
            texts = []
            with engine.lock:
                tm = engine.target_machine()
                for source, pipeline in self.parts:
                    llmod = engine.parse(source, tm)
                    engine.optimize(llmod, tm, pipeline)
                    texts.append(str(llmod))
            self._text = "\n".join(texts)
        return self._text

    def __contains__(self, fragment: str):
        return fragment in str(self)
