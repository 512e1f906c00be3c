"""Ahead-of-time compilation of a graph to a shared library with a C entry point.

``compile_library(graph, path, name)`` partitions the graph as the JIT does, emits every
kernel, the gemm calls and one entry function into one LLVM module, compiles it to an
object file for this machine's CPU (position independent) and links it with ``cc
-shared``. The library exports::

    int  NAME(const void *const *inputs, void *const *outputs);
    int  NAME_init(const char *blas_path);
    int  NAME_num_inputs(void);            int  NAME_num_outputs(void);
    int  NAME_input_rank(int i);           int  NAME_output_rank(int i);
    const int64_t *NAME_input_shape(int i);   const int64_t *NAME_output_shape(int i);
    const char *NAME_input_dtype(int i);      const char *NAME_output_dtype(int i);

``inputs[i]`` / ``outputs[j]`` point to C-contiguous buffers of the shapes and dtypes
the query functions report (outputs are written, never read). Constants are globals of
the library; intermediates live in one buffer taken with ``malloc`` per call, so calls
from several threads at once are safe. Kernels run in order on the calling thread (no
thread pool); the gemm calls go to OpenBLAS, which may use its own threads.

BLAS: a graph with products calls ``scipy_?gemm_64_`` (``?gemv`` for one row or column)
of the ILP64 OpenBLAS that NumPy's wheel bundles. The library records that file's
absolute path at build time and, on its first call, ``dlopen``s it
(``NAME_init(NULL)``); ``NAME_init(path)`` loads another copy (a machine without the same
NumPy install) before the first call. The pointers are
published with release/acquire atomics, so calls racing the first one at most run the
init twice (``dlopen`` counts references; the same addresses are stored). Return codes: 0 ok,
1 the BLAS library could not be opened, 2 it lacks a ``?gemm`` (or a LAPACK routine),
3 out of memory, 4 an integer index was out of bounds (NumPy's IndexError: the outputs hold
clamped reads, not a result; ``bounds.py``), 5 a matrix is singular (solve,
triangular_solve, slogdet_inv_t) or not positive definite (cholesky), 6 svd, eigh or eig
did not converge or eig's operand holds infs or NaNs (both NumPy's LinAlgError;
``aot_lapack.py``).

Convolutions are native code (``aot_conv.py``: packed columns and one ?gemm per image and
group), and so is control flow (``aot_loops.py``: each body an internal function, called
from native loops). LAPACK-backed linear algebra on real matrices is native code too
(``aot_lapack.py``: solve, cholesky, det, slogdet, slogdet_inv_t, triangular_solve, lu,
qr, eigh, svd, eig). Steps that are not native code in this backend (interpreter fallbacks,
products whose operands need a copy, the other LAPACK calls: sqrtm, sylvester and complex
operands; fft) and kernels calling SciPy's special functions (``scipy_calls.py``:
pointers only a process that imported SciPy has) make compilation raise
:class:`NotNativeError` naming the primitive; so do collectives (``all_reduce``...: the
MPI library and world of the process).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import functorch_core.backends.interpreter  # noqa: F401  (primitive impls for the partitioner)
import numpy as np
from functorch_core.ir import dtypes
from llvmlite import binding as llvm
from llvmlite import ir

from ..planning import buffers
from ..planning.plan import Blas, Conv, Fallback, Kernel, Lapack, Loop, Sort
from . import (
    aot_conv,
    aot_lapack,
    aot_loops,
    bounds,
    cnames,
    codegen,
    engine,
    irloop,
    scipy_calls,
    sort,
)
from .blas import GemmCall, _numpy_openblas, blas_int_bits, emit_gemm, gemm_layout
from .lowering import partition

I8, I32, I64, PTR = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType()
_GEMM = {"f": "sgemm", "d": "dgemm", "F": "cgemm", "D": "zgemm"}
ALIGN = 64


class NotNativeError(NotImplementedError):
    """A step of the graph that the shared library cannot run (no Python in it)."""


def _check_native(plan):
    for step in plan.steps:
        if isinstance(step, Fallback) and step.eqn.prim.family == "collective":
            raise NotNativeError(f"compile_library: {step.eqn.prim.name} is a collective "
                                 "over the process axis: it calls the MPI library of this "
                                 "process and needs its world; a shared library cannot "
                                 "hold either (jit it in the MPI job instead)")
        if isinstance(step, Fallback):
            raise NotNativeError(f"compile_library: {step.eqn.prim.name} runs in the "
                                 f"interpreter in this backend ({step.reason}); a shared "
                                 "library cannot call Python")
        if isinstance(step, Kernel):
            called = [op.prim.name for op in step.ops
                      if scipy_calls.is_call(op.prim, op.dtype)]
            if called:
                raise NotNativeError(f"compile_library: {called[0]} calls SciPy's compiled "
                                     "scipy.special function through a pointer of this "
                                     "process in this backend; a shared library cannot "
                                     "hold it")
        if isinstance(step, Lapack):
            why = aot_lapack.refusal(step.eqn)
            if why is not None:
                raise NotNativeError(f"compile_library: {why}")
            if blas_int_bits() != 64:
                raise NotNativeError(f"compile_library: {step.eqn.prim.name} needs NumPy's "
                                     "bundled ILP64 OpenBLAS, which this NumPy lacks")
        if isinstance(step, Conv):
            why = aot_conv.refusal(plan.slots[step.out][1], step.params)
            if why is not None:
                raise NotNativeError(f"compile_library: {why}")
            if blas_int_bits() != 64:
                raise NotNativeError("compile_library: conv_general_dilated needs NumPy's "
                                     "bundled ILP64 OpenBLAS, which this NumPy lacks")
        if isinstance(step, Blas):
            if plan.slots[step.out][1] == dtypes.bfloat16:
                raise NotNativeError("compile_library: a bfloat16 dot_general (its vdpbf16ps "
                                     "kernel runs under jit only; store the product as "
                                     "float32, or export with the interpreter)")
            if step.lhs[0] != "slot" or step.rhs[0] != "slot" or gemm_layout(
                    step.lhs[2], step.rhs[2], step.dimension_numbers) is None:
                raise NotNativeError("compile_library: a dot_general whose operands need a "
                                     "copy into a gemm layout (freeze the function, or "
                                     "transpose the operand in the graph)")
            if blas_int_bits() != 64:
                raise NotNativeError("compile_library: dot_general needs NumPy's bundled "
                                     "ILP64 OpenBLAS, which this NumPy lacks")


def _blas_path() -> str:
    lib = _numpy_openblas()
    return os.path.realpath(lib._name)


def _cstring(module, name, text: str):
    data = bytearray(text.encode() + b"\0")
    g = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), name)
    g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
    g.global_constant, g.linkage = True, "internal"
    return g


def _table_fn(module, fname, values, elt, null):
    """``elt fname(int i)``: ``values[i]``, or ``null`` out of range."""
    fn = ir.Function(module, ir.FunctionType(elt, [I32]), fname)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if not values:
        b.ret(null)
        return
    ty = ir.ArrayType(elt, len(values))
    g = ir.GlobalVariable(module, ty, f"{fname}__table")
    g.initializer = ir.Constant(ty, values)
    g.global_constant, g.linkage = True, "internal"
    i = fn.args[0]
    ok = b.and_(b.icmp_signed(">=", i, ir.Constant(I32, 0)),
                b.icmp_signed("<", i, ir.Constant(I32, len(values))))
    with b.if_then(b.not_(ok)):
        b.ret(null)
    b.ret(b.load(b.gep(g, [ir.Constant(I64, 0), b.sext(i, I64)], source_etype=ty), typ=elt))


def _signature_tables(module, name, kind, avals):
    ranks, shapes, dtypes = [], [], []
    for j, (shape, dtype) in enumerate(avals):
        ranks.append(ir.Constant(I32, len(shape)))
        ty = ir.ArrayType(I64, max(len(shape), 1))
        g = ir.GlobalVariable(module, ty, f"{name}__{kind}_shape_{j}")
        g.initializer = ir.Constant(ty, [ir.Constant(I64, d) for d in shape] or
                                    [ir.Constant(I64, 0)])
        g.global_constant, g.linkage = True, "internal"
        shapes.append(g)
        dtypes.append(_cstring(module, f"{name}__{kind}_dtype_{j}", np.dtype(dtype).name))
    fn = ir.Function(module, ir.FunctionType(I32, []), f"{name}_num_{kind}s")
    ir.IRBuilder(fn.append_basic_block("entry")).ret(ir.Constant(I32, len(avals)))
    _table_fn(module, f"{name}_{kind}_rank", ranks, I32, ir.Constant(I32, -1))
    _table_fn(module, f"{name}_{kind}_shape", shapes, PTR, ir.Constant(PTR, None))
    _table_fn(module, f"{name}_{kind}_dtype", dtypes, PTR, ir.Constant(PTR, None))


def build_module(graph, name: str):
    """(LLVM IR text of the library, {"inputs": [(shape, dtype)], "outputs": [...],
    "blas": path or None, "arena_bytes": n})."""
    graph, n_flags = bounds.with_flags(graph)
    plan = partition(graph)
    bodies = aot_loops.Bodies(plan, _check_native)     # every loop body's plan, checked
    module = ir.Module(name=name)

    # BLAS: one function pointer per ?gemm and ?gemv, filled by NAME_init
    gemm_dtypes = sorted({p.slots[s.out][1].char for p in bodies.plans() for s in p.steps
                          if isinstance(s, Blas | Conv)})
    routines = sorted({r for p in bodies.plans() for s in p.steps if isinstance(s, Lapack)
                       for r in aot_lapack.routines(s.eqn)})
    pointers, wrappers = {}, {}
    for r in routines:
        p = pointers[r] = ir.GlobalVariable(module, PTR, f"{name}__lapack_{r}")
        p.initializer, p.linkage = ir.Constant(PTR, None), "internal"
    # ?gemv for the products of one row or column (blas.gemv_form), as the jit calls it
    for ch, routine in ((ch, r) for ch in gemm_dtypes for r in ("gemm", "gemv")):
        blas_name = _GEMM[ch].replace("gemm", routine)
        p = pointers[blas_name] = ir.GlobalVariable(module, PTR, f"{name}__blas_{blas_name}")
        p.initializer, p.linkage = ir.Constant(PTR, None), "internal"
        w = wrappers[ch if routine == "gemm" else ch + "v"] = ir.Function(
            module, ir.FunctionType(ir.VoidType(), [PTR] * (13 if routine == "gemm" else 11)),
            f"{name}__{blas_name}")
        w.linkage = "internal"
        wb = ir.IRBuilder(w.append_basic_block("entry"))
        # a typed pointer prints as ``ptr`` and tells the call its function type
        target = wb.load_atomic(p, "acquire", 8, typ=w.function_type.as_pointer())
        wb.call(target, list(w.args))
        wb.ret_void()
    ready = ir.GlobalVariable(module, I32, f"{name}__ready")
    ready.initializer, ready.linkage = ir.Constant(I32, 0 if pointers else 1), "internal"
    blas = _blas_path() if pointers else None
    init = _emit_init(module, name, blas, pointers, ready)

    emitter = _Emitter(module, wrappers, bodies, pointers)
    fn = ir.Function(module, ir.FunctionType(I32, [PTR, PTR]), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if pointers:
        flag = b.load_atomic(ready, "acquire", 4, typ=I32)     # pairs with init's release
        with b.if_then(b.icmp_signed("==", flag, ir.Constant(I32, 0)), likely=False):
            rc = b.call(init, [ir.Constant(PTR, None)])
            with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0))):
                b.ret(rc)
    in_avals, out_avals, arena_bytes = emitter.body(fn, b, plan, n_flags, name)
    _signature_tables(module, name, "input", in_avals)
    _signature_tables(module, name, "output", out_avals)
    return str(module), {"inputs": in_avals, "outputs": out_avals, "blas": blas,
                         "arena_bytes": arena_bytes}


class _Emitter:
    """Emits a plan as the body of a function ``i32 f(ptr inputs, ptr outputs)`` (the
    library's entry, or an internal function per loop body)."""

    def __init__(self, module, wrappers, bodies, pointers):
        self.module, self.wrappers, self.bodies = module, wrappers, bodies
        self.pointers = pointers      # LAPACK routine name -> the global holding its address
        self.functions = {}         # id(graph) -> the internal function of a loop body

    def function(self, graph):
        """The internal function running ``graph`` (a loop body or branch)."""
        fn = self.functions.get(id(graph))
        if fn is None:
            fname = f"{self.module.name}__body_{len(self.functions)}"
            fn = self.functions[id(graph)] = ir.Function(
                self.module, ir.FunctionType(I32, [PTR, PTR]), fname)
            fn.linkage = "internal"
            self.body(fn, ir.IRBuilder(fn.append_basic_block("entry")),
                      self.bodies.plan_of(graph), 0, fname)
        return fn

    def body(self, fn, b, plan, n_flags, fname):
        """Emit ``plan`` into ``fn`` at ``b``: (input avals, output avals, arena bytes)."""
        module = self.module
        outputs = plan.outputs[:len(plan.outputs) - n_flags]
        flags = [ref[1] for ref in plan.outputs[len(outputs):]]     # 0-d int32 slots
        n_in = plan.n_inputs
        borrowed = set(range(n_in)) | set(plan.consts)
        results = {r[1] for r in plan.outputs if r[0] == "slot"} - borrowed
        lifetimes = buffers.lifetimes(plan.steps, borrowed | results)
        nbytes = {s: buffers.nbytes(*plan.slots[s]) for s in lifetimes}
        offsets, arena_bytes = buffers.plan_arena(nbytes, lifetimes, ALIGN)

        kernels, calls = {}, {}   # calls: the conv and LAPACK steps' functions
        for i, step in enumerate(plan.steps):
            if isinstance(step, Kernel | Sort):
                kname = f"{fname}__kernel_{i}"
                emit = sort.emit_sort if isinstance(step, Sort) else codegen.emit_kernel
                slots, outer = emit(module, kname, step)
                module.globals[kname].linkage = "internal"
                hi = step.rows if isinstance(step, Sort) else (outer or 0)
                kernels[id(step)] = (module.globals[kname], slots, hi)
            elif isinstance(step, Lapack):
                calls[id(step)] = aot_lapack.emit_lapack(
                    module, f"{fname}__lapack_{i}", step.eqn, self.pointers)
            elif isinstance(step, Conv):
                out_shape, dtype = plan.slots[step.out]
                geo = aot_conv.Geometry(_ref_shape(step.lhs), _ref_shape(step.rhs), out_shape,
                                        dtype, step.params)
                calls[id(step)] = aot_conv.emit_conv(module, f"{fname}__conv_{i}", geo,
                                                     self.wrappers[dtype.char])
        for step in plan.steps:
            if isinstance(step, Loop):      # bodies first: their kernels, then this one's
                for g in aot_loops.graphs_of(step.eqn):
                    self.function(g)

        out_avals = []
        for ref in outputs:
            if ref[0] == "lit":
                v = np.asarray(ref[1])
                out_avals.append((v.shape, v.dtype))
            else:
                out_avals.append((tuple(ref[2]), plan.slots[ref[1]][1]))
        in_avals = [plan.slots[i] for i in range(n_in)]

        inputs, out_table = fn.args
        free = irloop.declare(module, "free", ir.VoidType(), [PTR])
        memcpy = irloop.declare(module, "memcpy", PTR, [PTR, PTR, I64])
        raw = None
        if arena_bytes:
            raw = b.call(irloop.declare(module, "malloc", PTR, [I64]),
                         [ir.Constant(I64, arena_bytes + ALIGN)])
            with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)), likely=False):
                b.ret(ir.Constant(I32, 3))
            addr = b.ptrtoint(raw, I64)
            aligned = b.and_(b.add(addr, ir.Constant(I64, ALIGN - 1)), ir.Constant(I64, -ALIGN))
            base = b.inttoptr(aligned, PTR)

        def arg(table, i):
            return b.load(b.gep(table, [ir.Constant(I64, i)], source_etype=PTR), typ=PTR)

        def fail(rc):
            """Return ``rc`` (an i32, not 0) after freeing the arena."""
            if raw is not None:
                b.call(free, [raw])
            b.ret(rc)

        ptrs: dict[int, ir.Value] = {}
        for i in range(n_in):
            ptrs[i] = arg(inputs, i)
        for s, value in plan.consts.items():
            ptrs[s] = b.bitcast(_const_bytes(module, f"{fname}__const_{s}", value, ALIGN), PTR)
        for s, off in offsets.items():
            ptrs[s] = b.gep(base, [ir.Constant(I64, off)], source_etype=I8)
        for s in flags:
            ptrs[s] = b.bitcast(b.alloca(I32), PTR)
        copies = []     # (output index, source pointer, nbytes) after the steps
        for j, ref in enumerate(outputs):
            n = buffers.nbytes(*out_avals[j])
            if ref[0] == "lit":
                g = _const_bytes(module, f"{fname}__lit_out_{j}", np.asarray(ref[1]))
                copies.append((j, g, n))
            elif ref[1] in results and ref[1] not in ptrs:
                ptrs[ref[1]] = arg(out_table, j)
            else:
                copies.append((j, ref[1], n))
        missing = [s for s in range(len(plan.slots)) if s not in ptrs and any(
            s in set().union(*buffers.step_slots(st)) for st in plan.steps)]
        if missing:
            raise NotNativeError(f"compile_library: slots {missing} have no memory (internal)")

        for i, step in enumerate(plan.steps):
            if isinstance(step, Kernel | Sort):
                kfn, slots, hi = kernels[id(step)]
                b.call(kfn, [ptrs[s] for s in slots] + [ir.Constant(I64, 0),
                                                         ir.Constant(I64, hi)])
            elif isinstance(step, Conv):
                lhs, rhs = (_operand(module, f"{fname}__conv_{i}_{j}", ref, ptrs)
                            for j, ref in enumerate((step.lhs, step.rhs)))
                rc = b.call(calls[id(step)], [lhs, rhs, ptrs[step.out]])
                with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
                    fail(rc)
            elif isinstance(step, Lapack):
                args = [_operand(module, f"{fname}__lapack_{i}_{j}", ref, ptrs)
                        for j, ref in enumerate(step.inputs)] + [ptrs[s] for s in step.outputs]
                rc = b.call(calls[id(step)], args)
                with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
                    fail(rc)
            elif isinstance(step, Loop):
                ins = [_operand(module, f"{fname}__loop_{i}_{j}", ref, ptrs)
                       for j, ref in enumerate(step.inputs)]
                aot_loops.emit_loop(b, self, step, ins, [ptrs[s] for s in step.outputs], fail)
            else:       # Blas
                lay = gemm_layout(step.lhs[2], step.rhs[2], step.dimension_numbers)
                ch = plan.slots[step.out][1].char
                call = GemmCall(self.wrappers[ch].name, plan.slots[step.out][1], step.lhs[1],
                                step.rhs[1], step.out, lay, self.wrappers[ch + "v"].name)
                emit_gemm(b, call, lambda s: ptrs[s])
        for j, src, n in copies:
            if n:
                p = src if not isinstance(src, int) else ptrs[src]
                b.call(memcpy, [arg(out_table, j), b.bitcast(p, PTR), ir.Constant(I64, n)])
        if raw is not None:
            b.call(free, [raw])
        rc = ir.Constant(I32, 0)
        for s in flags:
            bad = b.icmp_signed("!=", b.load(ptrs[s], typ=I32), ir.Constant(I32, 0))
            rc = b.select(bad, ir.Constant(I32, 4), rc)
        b.ret(rc)
        return in_avals, out_avals, arena_bytes


def _ref_shape(ref):
    return np.shape(ref[1]) if ref[0] == "lit" else tuple(ref[2])


def _operand(module, gname, ref, ptrs):
    """A plan reference's data pointer: its slot's, or a constant global for a literal."""
    if ref[0] == "lit":
        return _const_bytes(module, gname, np.asarray(ref[1]))
    return ptrs[ref[1]]


def _const_bytes(module, gname, value: np.ndarray, align=None):
    data = bytearray(np.ascontiguousarray(value).tobytes()) or bytearray(1)
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, ty, gname)
    g.initializer = ir.Constant(ty, data)
    g.global_constant, g.linkage = True, "internal"
    if align:
        g.align = align
    return g


def _store_release(b, value, ptr, align):
    # IRBuilder.store_atomic checks a typed pointee, which opaque pointers lack
    b._insert(ir.instructions.StoreAtomicInstr(b.block, value, ptr, "release", align))


def _emit_init(module, name, blas, pointers, ready):
    """``int NAME_init(const char *path)``: dlopen the BLAS (``path``, or the recorded one
    for NULL) and look up every ?gemm, ?gemv and LAPACK routine the library calls."""
    fn = ir.Function(module, ir.FunctionType(I32, [PTR]), f"{name}_init")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if not pointers:
        b.ret(ir.Constant(I32, 0))
        return fn
    dlopen = ir.Function(module, ir.FunctionType(PTR, [PTR, I32]), "dlopen")
    dlsym = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR]), "dlsym")
    recorded = _cstring(module, f"{name}__blas_path", blas)
    path = fn.args[0]
    path = b.select(b.icmp_unsigned("==", path, ir.Constant(PTR, None)),
                    b.bitcast(recorded, PTR), path)
    handle = b.call(dlopen, [path, ir.Constant(I32, 2)])       # RTLD_NOW
    with b.if_then(b.icmp_unsigned("==", handle, ir.Constant(PTR, None)), likely=False):
        b.ret(ir.Constant(I32, 1))
    for routine, p in pointers.items():
        sym = _cstring(module, f"{name}__sym_{routine}", f"scipy_{routine}_64_")
        f = b.call(dlsym, [handle, b.bitcast(sym, PTR)])
        with b.if_then(b.icmp_unsigned("==", f, ir.Constant(PTR, None)), likely=False):
            b.ret(ir.Constant(I32, 2))
        _store_release(b, f, p, 8)
    _store_release(b, ir.Constant(I32, 1), ready, 4)
    b.ret(ir.Constant(I32, 0))
    return fn


def _c_type(dtype) -> str:
    return {"bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
            "int64": "int64_t", "uint8": "uint8_t", "uint32": "uint32_t",
            "float16": "uint16_t (IEEE half)", "bfloat16": "uint16_t (bfloat16)",
            "float32": "float", "float64": "double",
            "complex64": "float _Complex", "complex128": "double _Complex"}[np.dtype(dtype).name]


def header_text(name: str, info: dict, doc: str = "") -> str:
    def sig(avals, what):
        return "\n".join(f" *   {what}[{i}]: {_c_type(dt)} [{', '.join(map(str, shape))}]"
                         for i, (shape, dt) in enumerate(avals)) or f" *   (no {what})"
    blas = (f" * BLAS: dlopen(\"{info['blas']}\") on the first call (NumPy's bundled ILP64\n"
            f" * OpenBLAS, recorded at build time); call {name}_init(path) first to load\n"
            " * another copy of it (same scipy_?gemm_64_/?gemv symbols). NULL: the recorded path."
            if info["blas"] else f" * No BLAS calls: {name}_init does nothing.")
    guard = f"FUNCTORCH_CORE_{name.upper()}_H"
    return f"""/* {name}: generated by functorch_core (Exported.compile_library). {doc}
 *
 * int {name}(const void *const *inputs, void *const *outputs);
 * inputs[i] and outputs[j] point to C-contiguous buffers:
{sig(info['inputs'], 'inputs')}
{sig(info['outputs'], 'outputs')}
 * Returns 0 on success, 1 when the BLAS library cannot be opened, 2 when it lacks a
 * routine, 3 when out of memory, 4 when an integer index is out of bounds (NumPy raises
 * IndexError there; the outputs are then no result), 5 when a matrix is singular or not
 * positive definite, 6 when svd, eigh or eig does not converge (NumPy raises LinAlgError
 * there). Kernels run in order on the
 * calling thread; each call mallocs its own {info['arena_bytes']}-byte scratch buffer, so
 * concurrent calls are safe.
{blas}
 * The code is compiled for the CPU of the machine that built it.
 */
#ifndef {guard}
#define {guard}
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif
int {name}(const void *const *inputs, void *const *outputs);
int {name}_init(const char *blas_path);
int {name}_num_inputs(void);
int {name}_num_outputs(void);
int {name}_input_rank(int i);
int {name}_output_rank(int i);
const int64_t *{name}_input_shape(int i);
const int64_t *{name}_output_shape(int i);
const char *{name}_input_dtype(int i);
const char *{name}_output_dtype(int i);
#ifdef __cplusplus
}}
#endif
#endif
"""


def compile_library(graph, path, name: str, header=None, doc: str = "") -> dict:
    """Write the shared library ``path`` and its C header (``header``, default ``path``
    with ``.h``) for ``graph``; returns what :func:`build_module` describes plus the
    header's path. Raises :class:`NotNativeError` for steps that are not native code and
    RuntimeError without a C compiler."""
    cnames.check_library_name(name)
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise RuntimeError("compile_library: no C compiler (cc) to link the shared library")
    text, info = build_module(graph, name)
    with engine.lock:
        engine.target_machine()
        cpu, features = engine.host_cpu()
        tm = llvm.Target.from_default_triple().create_target_machine(
            cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default")
        llmod = llvm.parse_assembly(text)
        llmod.triple, llmod.data_layout = tm.triple, str(tm.target_data)
        llmod.verify()
        engine.optimize(llmod, tm, "full")
        obj = tm.emit_object(llmod)
    header = header or os.path.splitext(os.fspath(path))[0] + ".h"
    with tempfile.TemporaryDirectory() as d:
        o = os.path.join(d, f"{name}.o")
        with open(o, "wb") as f:
            f.write(obj)
        done = subprocess.run([cc, "-shared", "-o", os.fspath(path), o, "-lm", "-ldl"],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"compile_library: {cc} failed to link {path}:\n{done.stderr}")
    with open(header, "w") as f:
        f.write(header_text(name, info, doc))
    return {**info, "header": header}
