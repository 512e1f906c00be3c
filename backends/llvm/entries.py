"""Native entries: one CPython builtin (METH_FASTCALL) that runs a graph's small kernels
and products in order (:func:`graph_entry`; for a long graph :func:`table_entry`, a table
of the calls walked by one runner compiled once per process), or a whole native loop
(:func:`loop_entry`), so a call costs what calling any builtin costs instead of a ctypes
call per step."""

from __future__ import annotations

import ctypes
import sys
import sysconfig

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from ..planning.plan import Blas, Plan
from ..planning.products import BLAS_DTYPES as _GEMM_DTYPES
from . import cache, engine, entry_codegen
from .blas import GemmCall, blas_int_bits, gemm_address, gemm_layout, gemv_form, one_thread_each
from .collectives import CollectiveCall
from .kernels import MAX_DIRECT_ARGS, PackedKernel

_gemm_symbols: set = set()
_METH_FASTCALL = 0x80
_NONE_SYMBOL = "fcx_py_none"
_SIGNALS_SYMBOL = "PyErr_CheckSignals"
_ENTRY = "fc_entry"
# graphs of more calls get a table entry (table_entry) instead of one compiled per graph
TABLE_MIN_CALLS = 64


# a prototype of its own (setting ctypes.pythonapi's argtypes per call races between threads)
_new_cfunction = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                   ctypes.c_void_p)(("PyCFunction_NewEx", ctypes.pythonapi))


_check_signals_address = ctypes.cast(ctypes.pythonapi.PyErr_CheckSignals, ctypes.c_void_p).value


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def one_blas_thread(entry):
    """``entry`` (a native graph entry) run with OpenBLAS held at one thread: its gemms
    call OpenBLAS from native code, where :class:`DotGeneral` cannot hold it."""
    hold = one_thread_each()

    def held(*bufs):
        with hold:
            return entry(*bufs)
    return held


def gemm_call(step: Blas, plan: Plan, max_macs) -> GemmCall | None:
    """``step`` as a call inside the native graph entry, when its operands are slots already
    in a gemm layout and the product has at most ``max_macs`` multiply-adds (the entry holds
    the GIL); else None."""
    if step.lhs[0] != "slot" or step.rhs[0] != "slot" or \
            plan.slots[step.out][1] not in _GEMM_DTYPES:     # bfloat16: bf16_gemm.py's step
        return None
    layout = gemm_layout(step.lhs[2], step.rhs[2], step.dimension_numbers)
    if layout is None or min(layout.batch, layout.m, layout.n, layout.k) == 0 or \
            layout.batch * layout.m * layout.n * layout.k > max_macs:
        return None
    dtype = plan.slots[step.out][1]
    symbols = {routine: f"fc_{dtype.char}{routine}" for routine in ("gemm", "gemv")}
    with engine.lock:
        for routine, symbol in symbols.items():
            if symbol not in _gemm_symbols:
                llvm.add_symbol(symbol, gemm_address(dtype, routine))
                _gemm_symbols.add(symbol)
    return GemmCall(symbols["gemm"], dtype, step.lhs[1], step.rhs[1], step.out, layout,
                    symbols["gemv"])


def graph_entry_supported() -> bool:
    """Whether a native function can be a CPython builtin here: a release CPython with
    the GIL (plain reference counts) and a known ndarray layout."""
    return (engine.DATA_OFFSET is not None and sys.implementation.name == "cpython"
            and not hasattr(sys, "gettotalrefcount")
            and not sysconfig.get_config_var("Py_GIL_DISABLED"))


def graph_entry(calls, n_args):
    """One native function that runs kernels in order: a builtin whose ``__self__`` keeps
    its own code, its method definition and the kernels' modules alive.

    ``calls`` holds ``(ctypes kernel, slot indices, lo, hi)``, a :class:`GemmCall` or an
    :class:`CollectiveCall`. The
    entry is a builtin (METH_FASTCALL) taking one array per slot, so calling it costs what
    calling any builtin costs instead of a ctypes call per step; it holds the GIL, so it
    is only for kernels too small to split over threads and for small products.
    """
    named, keep = [], []
    with engine.lock:
        engine.target_machine()   # the target names the entry's digest
        for call in calls:
            if isinstance(call, GemmCall | CollectiveCall):
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
        return _builtin("entry", lambda module: entry_codegen.emit_graph_entry(
            module, _ENTRY, named, n_args, _NONE_SYMBOL, sys.version_info < (3, 12),
            engine.DATA_OFFSET), keep)


def table_entry(calls, n_args):
    """:func:`graph_entry` for many calls: the calls as a table (an int64 array, the
    builtin's ``self``) that one native runner, the same for every graph, walks
    (``entry_codegen.emit_table_entry``). Nothing of the graph is compiled, so a graph of
    thousands of steps costs a table row per step, not native code. Its ``self`` is the
    table, so only Python calls it (a native loop calls bodies with a NULL ``self``)."""
    records, keep = [n_args, len(calls)], []
    blas_int = np.int64 if blas_int_bits() == 64 else np.int32
    for call in calls:
        form = gemv_form(call.layout) if isinstance(call, GemmCall) else None
        if form is not None:
            lay, dtype, item = call.layout, call.dtype, call.dtype.itemsize
            ints = np.array([form.rows, form.cols, form.ld, 1], blas_int)
            scalars = np.array([1.0, 0.0], dtype)
            chars = np.array([ord("T" if form.trans else "N")], np.uint8)
            keep += [ints, scalars, chars]
            i, f, size = ints.ctypes.data, scalars.ctypes.data, ints.itemsize
            steps = {"lhs": lay.m * lay.k * item, "rhs": lay.k * lay.n * item}
            mat, vec = ("rhs", "lhs") if form.matrix == "rhs" else ("lhs", "rhs")
            records += [entry_codegen.RECORD_GEMV, gemm_address(dtype, "gemv"), lay.batch, 0,
                        entry_codegen.GEMV_FIELDS, chars.ctypes.data, i, i + size, f,
                        i + 2 * size, i + 3 * size, f + item, getattr(call, mat),
                        getattr(call, vec), call.out, steps[mat], steps[vec],
                        lay.m * lay.n * item]
            continue
        if isinstance(call, GemmCall):
            lay, dtype = call.layout, call.dtype
            ints = np.array([lay.n, lay.m, lay.k, lay.ldb, lay.lda, max(lay.n, 1)], blas_int)
            scalars = np.array([1.0, 0.0], dtype)
            chars = np.array([ord("T" if t else "N") for t in (lay.trans_rhs, lay.trans_lhs)],
                             np.uint8)
            keep += [ints, scalars, chars]
            i, f, ch = ints.ctypes.data, scalars.ctypes.data, chars.ctypes.data
            size, item = ints.itemsize, dtype.itemsize
            records += [entry_codegen.RECORD_GEMM, gemm_address(dtype), lay.batch, 0,
                        entry_codegen.GEMM_FIELDS, ch, ch + 1, i, i + size, i + 2 * size, f,
                        i + 3 * size, i + 4 * size, f + item, i + 5 * size,
                        call.rhs, call.lhs, call.out, lay.k * lay.n * item,
                        lay.m * lay.k * item, lay.m * lay.n * item]
            continue
        fn, slots, lo, hi = call
        packed = isinstance(fn, PackedKernel)
        kind = entry_codegen.RECORD_PACKED if packed else entry_codegen.RECORD_KERNEL
        address = ctypes.cast(fn.raw if packed else fn, ctypes.c_void_p).value
        records += [kind, address, lo, hi, len(slots), *slots]
        keep.append(fn)
    table = np.array(records, np.int64)
    with engine.lock:
        engine.target_machine()
        return _builtin("table", lambda module: entry_codegen.emit_table_entry(
            module, _ENTRY, _NONE_SYMBOL, sys.version_info < (3, 12), engine.DATA_OFFSET,
            MAX_DIRECT_ARGS), table=(table, keep))


def loop_entry(loop):
    """The native function running ``loop`` (a :class:`plan.NativeLoop`), as a builtin
    like :func:`graph_entry`'s: (builtin, what keeps its code alive)."""
    with engine.lock:
        engine.target_machine()
        return _builtin("loop", lambda module: entry_codegen.emit_loop_entry(
            module, _ENTRY, loop, _NONE_SYMBOL, sys.version_info < (3, 12), engine.DATA_OFFSET,
            _SIGNALS_SYMBOL))


def _builtin(kind, emit, keep=(), table=None):
    """Emit one function with ``emit(module)``, compile it once (disk-cached, named by its
    digest) and wrap it as a builtin: (builtin, what keeps its code alive); ``keep``: the
    code it calls. ``table``: (the table array, what its records point into) of a table
    entry, whose code is shared by every graph: the table is the builtin's ``self``.
    Called under ``engine.lock``."""
    llvm.add_symbol(_NONE_SYMBOL, id(None))
    llvm.add_symbol(_SIGNALS_SYMBOL, _check_signals_address)
    module = ir.Module(name=_ENTRY)
    emit(module)
    text = str(module)
    digest = cache.key(text, f"{engine.target()} {kind}")
    name = f"fc_{digest[:32]}_{kind}"
    text = text.replace(f'@"{_ENTRY}"', f'@"{name}"')
    native = engine.loaded.get(digest)
    if native is None:
        # straight-line calls and a loop around them: the backend's own codegen
        # optimizations suffice, and each optimize() leaks ~70 KB in llvmlite
        native = engine.loaded[digest] = engine.add_module(text, digest, [name], None)
        native.kernels = list(keep)       # the code it was linked against
    method = _MethodDef(name.encode(), native.addresses[name], _METH_FASTCALL, None)
    owner = (method, native) if table is None else (method, native, *table)
    return _new_cfunction(ctypes.addressof(method), owner if table is None else table[0],
                          None), owner
