"""Emit one LLVM function per kernel: a loop nest that reads each input once per point,
computes the fused chain, writes each stored member once and accumulates reductions.

The function takes one ``noalias`` pointer per slot it touches (in ``slots`` order).
Loops run over the kept dimensions first and the reduced ones innermost, so a
reduction keeps its accumulator in a register; adjacent dimensions that every access
walks contiguously are coalesced into one loop, which is what lets LLVM vectorize a
plain elementwise kernel as a single flat loop.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ir import primitives as P

from .ops import I64, RULES, Emitter, compute_type, convert, storage_type
from .partition import Kernel, c_strides

_PTR = ir.PointerType()
_ACCUMULATE = {P.reduce_sum: P.add, P.reduce_prod: P.mul, P.reduce_max: P.max,
               P.reduce_min: P.min}


def _identity(prim, dt):
    if prim is P.reduce_sum:
        return 0
    if prim is P.reduce_prod:
        return 1
    big = prim is P.reduce_min
    if dt.kind == "b":
        return big
    if dt.kind == "f":
        return np.inf if big else -np.inf
    info = np.iinfo(dt)
    return info.max if big else info.min


def _loops(kernel: Kernel, accesses):
    """Coalesced loops: [(size, strides per access)] and how many are kept (outer) loops."""
    shape, axes = kernel.shape, kernel.axes or ()
    order = [d for d in range(len(shape)) if d not in axes] + list(axes)
    loops, n_kept = [], 0
    prev_group = None
    for d in order:
        if shape[d] == 1:
            continue
        group = d in axes
        strides = [a[d] for a in accesses]
        if loops and prev_group == group and all(
                s_prev == s * shape[d] for s_prev, s in zip(loops[-1][1], strides, strict=True)):
            loops[-1] = (loops[-1][0] * shape[d], strides)
        else:
            loops.append((shape[d], strides))
            n_kept += not group
        prev_group = group
    return loops, n_kept


def emit_kernel(module: ir.Module, name: str, kernel: Kernel) -> list[int]:
    """Add function ``name`` for ``kernel`` to ``module``; return the slots it takes, in order."""
    slots = sorted({r.slot for r in kernel.reads + kernel.dyn_reads}
                   | {s for _, s, _ in kernel.stores}
                   | {s for _, _, s, _ in kernel.reduces})
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR] * len(slots)), name)
    for a in fn.args:
        a.add_attribute("noalias")
    arg_of = dict(zip(slots, fn.args, strict=True))

    ndim = len(kernel.shape)
    axes = kernel.axes or ()
    kept_strides = c_strides([d for i, d in enumerate(kernel.shape) if i not in axes])
    it = iter(kept_strides)
    reduce_out = tuple(0 if i in axes else next(it) for i in range(ndim))
    iotas = [op.params["dimension"] for op in kernel.ops if op.prim is P.iota]
    unit = [tuple(int(i == d) for i in range(ndim)) for d in iotas]
    # access k walks memory with accesses[k]: 0 the stores, 1 the reduction outputs, then
    # the reads, the dynamic reads and the iota counters
    accesses = ([c_strides(kernel.shape), reduce_out] + [r.strides for r in kernel.reads]
                + [r.strides for r in kernel.dyn_reads] + unit)
    loops, n_kept = _loops(kernel, accesses)

    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    e = Emitter(b)
    accs = [b.alloca(compute_type(_acc_dtype(dt))) for _, _, _, dt in kernel.reduces]
    indices = []

    def linear(k, offset=0):
        total = ir.Constant(I64, offset)
        for (_, strides), i in zip(loops, indices, strict=False):
            if strides[k]:
                total = b.add(total, b.mul(i, ir.Constant(I64, strides[k])))
        return total

    def element(slot, dt, index):
        return b.gep(arg_of[slot], [index], inbounds=True, source_etype=storage_type(dt))

    def init_accumulators():
        for acc, (prim, _, _, dt) in zip(accs, kernel.reduces, strict=True):
            b.store(e.const(_acc_dtype(dt), _identity(prim, dt)), acc)

    def store_accumulators():
        index = linear(1)
        for acc, (_, _, slot, dt) in zip(accs, kernel.reduces, strict=True):
            value = b.load(acc, typ=compute_type(_acc_dtype(dt)))
            if _acc_dtype(dt) != dt:
                value = e.round16(dt, value)
            e.store(dt, value, element(slot, dt, index))

    stack = []
    for level, (size, _) in enumerate(loops):
        if level == n_kept:
            init_accumulators()
        pre = b.block
        header, body, done = (fn.append_basic_block(n) for n in ("head", "body", "exit"))
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), pre)
        b.cbranch(b.icmp_signed("<", i, ir.Constant(I64, size)), body, done)
        b.position_at_end(body)
        stack.append((header, i, done))
        indices.append(i)
    if n_kept == len(loops):
        init_accumulators()

    _body(kernel, e, linear, element, accs, iotas)

    if n_kept == len(loops) and kernel.reduces:
        store_accumulators()
    while stack:
        header, i, done = stack.pop()
        i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
        b.branch(header)
        b.position_at_end(done)
        indices.pop()
        if len(stack) == n_kept and kernel.reduces and n_kept < len(loops):
            store_accumulators()
    b.ret_void()
    return slots


def emit_array_entry(module: ir.Module, name: str, kernel_name: str, data_offset: int):
    """``name(PyArrayObject*...)``: read each array's data pointer (at ``data_offset`` in
    the object) and call the kernel, so Python passes arrays without converting them."""
    kernel = module.globals[kernel_name]
    n = len(kernel.args)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR] * n), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    data = [b.load(b.gep(a, [ir.Constant(I64, data_offset)], source_etype=ir.IntType(8)),
                   typ=_PTR) for a in fn.args]
    b.call(kernel, data)
    b.ret_void()


def _acc_dtype(dt):
    return np.dtype(np.float32) if dt == np.float16 else dt


def _body(kernel, e, linear, element, accs, iotas):
    """The innermost loop body: loads, the fused ops, stores and accumulations."""
    b = e.b
    reads = [e.load(r.dtype, element(r.slot, r.dtype, linear(2 + k, r.offset)))
             for k, r in enumerate(kernel.reads)]
    dyn_k = 2 + len(kernel.reads)
    values, iota_k = [], dyn_k + len(kernel.dyn_reads)

    def value(ref):
        kind = ref[0]
        if kind == "read":
            return reads[ref[1]]
        if kind == "op":
            return values[ref[1]]
        return None

    for op in kernel.ops:
        if op.prim is P.iota:
            v = convert(e, np.dtype(np.int64), op.dtype, linear(iota_k))
            iota_k += 1
        elif op.prim in (P.gather, P.dynamic_slice):
            k = op.args[0][1]
            r = kernel.dyn_reads[k]
            indices = [value(a) if a[0] != "const" else e.const(dt, a[1])
                       for a, dt in zip(op.args[1:], op.params["index_dtypes"], strict=True)]
            index = b.add(linear(dyn_k + k, r.offset), _clamped_offset(e, op, indices))
            v = e.load(r.dtype, element(r.slot, r.dtype, index))
        else:
            dts = _arg_dtypes(kernel, op)
            args = [value(r) if r[0] != "const" else e.const(dt, r[1])
                    for r, dt in zip(op.args, dts, strict=True)]
            if op.prim is P.convert:
                v = convert(e, op.arg_dtype, op.dtype, args[0])
            else:
                v = e.round16(op.dtype, RULES[op.prim](e, op.arg_dtype, *args, **op.params))
        values.append(v)

    full = linear(0)
    for ref, slot, dt in kernel.stores:
        e.store(dt, value(ref), element(slot, dt, full))
    for acc, (prim, ref, _, dt) in zip(accs, kernel.reduces, strict=True):
        x = value(ref) if ref[0] != "const" else e.const(dt, ref[1])
        acc_dt = _acc_dtype(dt)
        combined = RULES[_ACCUMULATE[prim]](e, acc_dt, b.load(acc, typ=compute_type(acc_dt)), x)
        if acc_dt.kind == "f" and prim in (P.reduce_sum, P.reduce_prod):
            combined.flags.append("reassoc")
        b.store(combined, acc)


def _clamped_offset(e, op, indices):
    """sum_k clip(index_k, 0, bound_k) * stride_k: the runtime part of a dynamic read."""
    b = e.b
    total = ir.Constant(I64, 0)
    for idx, dt, bound, stride in zip(indices, op.params["index_dtypes"], op.params["bounds"],
                                      op.params["strides"], strict=True):
        wide = idx if idx.type == I64 else (b.zext if dt.kind in "bu" else b.sext)(idx, I64)
        wide = b.select(b.icmp_signed("<", wide, ir.Constant(I64, 0)), ir.Constant(I64, 0), wide)
        wide = b.select(b.icmp_signed(">", wide, ir.Constant(I64, bound)),
                        ir.Constant(I64, bound), wide)
        total = b.add(total, b.mul(wide, ir.Constant(I64, stride)))
    return total


def _arg_dtypes(kernel, op):
    """The dtype of each operand of ``op`` (a select's predicate is bool)."""
    if op.prim is P.select:
        return [np.dtype(bool), op.arg_dtype, op.arg_dtype]
    return [op.arg_dtype] * len(op.args)
