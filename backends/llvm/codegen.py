"""Emit one LLVM function per kernel: a loop nest that reads each input once per point,
computes the fused chain, writes each stored member once and accumulates reductions.

The function takes one ``noalias`` pointer per slot it touches (in ``slots`` order).
Loops run over the kept dimensions first and the reduced ones innermost, so a
reduction keeps its accumulator in a register (a scan, likewise, carries it along its
axis); adjacent dimensions that every access walks contiguously are coalesced into one
loop, which is what lets LLVM vectorize a plain elementwise kernel as one flat loop.
A float sum runs its reduced loops in blocks (vectorized within a block) and adds the
block sums pairwise, in an order fixed by the shape alone.
"""

from __future__ import annotations

import math

import numpy as np
from functorch_core.ir import primitives as P
from llvmlite import ir

from ..planning.partition import SCANS
from ..planning.plan import Kernel, NativeLoop, c_strides
from .blas import GemmCall, emit_gemm
from .complex_ops import add as complex_add
from .ops import I64, RULES, Emitter, compute_type, convert, storage_type

_PTR = ir.PointerType()
# a float sum adds this many elements in loop order per block, then adds the block sums
# pairwise, so its rounding error grows with log2(n), not n, as NumPy's does; along a long
# contiguous innermost loop a block is LONG_SUM_BLOCK (vector lanes split it further, and
# the per-block cost stays off the fast path)
SUM_BLOCK = 1024
LONG_SUM_BLOCK = 4096
_CASCADE = 64       # pending block sums: one per bit of the block count
# innermost reduced loops of this many points compile without unrolling (unrolling_hurts)
SHORT_INNER_REDUCTION = (32, 256)
_BOOL = np.dtype(np.bool_)
# how a reduction, a scan or an arg reduction folds a value into its accumulator
_COMBINE = {P.reduce_sum: P.add, P.reduce_prod: P.mul, P.reduce_max: P.max,
            P.reduce_min: P.min, P.cumsum: P.add, P.cumprod: P.mul, P.cummax: P.max,
            P.cummin: P.min, P.argmax: P.reduce_max, P.argmin: P.reduce_min}


def _identity(prim, dt):
    prim = _COMBINE.get(prim, prim)
    if prim in (P.reduce_sum, P.add):
        return 0
    if prim in (P.reduce_prod, P.mul):
        return 1
    big = prim in (P.reduce_min, P.min)
    if dt.kind == "b":
        return big
    if dt.kind == "f":
        return np.inf if big else -np.inf
    if dt.kind == "c":         # below/above every value in NumPy's lexicographic order
        return complex(np.inf, np.inf) if big else complex(-np.inf, -np.inf)
    info = np.iinfo(dt)
    return info.max if big else info.min


def _scan_identity(prim, dt):
    """A scan's first output is its first element, as in NumPy's accumulate: so a float
    cumsum starts from -0.0 (-0.0 + x is x, +0.0 + -0.0 would not be)."""
    if prim is P.cumsum and dt.kind in "fc":
        return complex(-0.0, -0.0) if dt.kind == "c" else -0.0
    return _identity(prim, dt)


def _acc_dtype(prim, dt):
    """Sums and products of float16 accumulate in float32 as NumPy's reductions do;
    scans round every step (NumPy's accumulate stores each partial result)."""
    if dt == np.float16 and prim in (P.reduce_sum, P.reduce_prod):
        return np.dtype(np.float32)
    return dt


def _leading_reduction(kernel: Kernel) -> bool:
    """Whether ``kernel`` reduces leading axes only (every reduced axis before every kept
    one, as a sum over the rows of a matrix), with plain reductions that accumulate in
    their result's own dtype. Such a kernel loops in memory order and accumulates in the
    result (initialised first), so its reads, its stores and the vectorized loop run along
    the contiguous kept axes instead of striding down the reduced ones. Each result still
    combines its elements in index order, as the reduced-axes-innermost loops do."""
    k, axes = kernel, kernel.axes or ()
    if not k.reduces or k.scatters or k.reverse or any(op.prim in SCANS for op in k.ops):
        return False
    if any(r.axis is not None or r.payload is not None or r.in_dtype != r.out_dtype
           or r.out_dtype.kind not in "fiu" or _acc_dtype(r.prim, r.in_dtype) != r.out_dtype
           for r in k.reduces):
        return False
    dims = [d for d in range(len(k.shape)) if k.shape[d] != 1]
    kept = [d for d in dims if d not in axes]
    if not kept or not any(d in axes for d in dims) or not all(
            d in axes for d in dims[:len(dims) - len(kept)]):
        return False
    # only when that walks memory more contiguously: the reads' and stores' steps along
    # the innermost kept axis against those along the innermost reduced one
    strides = [r.strides for r in k.reads] + [c_strides(k.shape)] * len(k.stores)

    def cost(d):
        return sum(min(abs(st[d]), 16) for st in strides)
    return cost(kept[-1]) < cost(max(d for d in dims if d in axes))


def _loops(kernel: Kernel, accesses, leading=False):
    """Coalesced loops: [(size, strides per access)] and how many are kept (outer) loops
    (``leading``: the reduced loops come first, see :func:`_leading_reduction`)."""
    shape, axes = kernel.shape, kernel.axes or ()
    order = [d for d in range(len(shape)) if d not in axes] + list(axes)
    if leading:
        order = list(range(len(shape)))
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


def _accesses(k: Kernel):
    """The strides each access of ``k`` walks memory with (0 the stores, 1 the reduction
    outputs, then the reads, the dynamic reads, the counters (iota, arg reductions) and the
    scatters) and how many counters there are."""
    ndim, axes = len(k.shape), k.axes or ()
    it = iter(c_strides([d for i, d in enumerate(k.shape) if i not in axes]))
    reduce_out = tuple(0 if i in axes else next(it) for i in range(ndim))
    counters = [d for op in k.ops for d in _counters(op, ndim)]
    counters += [r.axis for r in k.reduces if r.axis is not None]
    unit = [tuple(int(i == d) for i in range(ndim)) for d in counters]
    return ([c_strides(k.shape), reduce_out] + [r.strides for r in k.reads]
            + [r.strides for r in k.dyn_reads] + unit + [sc.strides for sc in k.scatters],
            len(unit))


def unrolling_hurts(k: Kernel) -> bool:
    """Whether ``k`` is a pure reduction (nothing stored elementwise) whose innermost loop
    is a reduced, contiguous one of SHORT_INNER_REDUCTION points: LLVM's unroller then
    unrolls it whole and the vectorizer turns the loop around it into gathers (its stride:
    a row), so the kernel compiles without loop unrolling (the contiguous loop vectorizes).
    Measured (f32, one process, min of 400): sum over (0, 2, 3) of (64, 16, 8, 8) 24.6 ->
    6.7 us, over (2, 3) 13.8 -> 2.1, over axis 1 of (4096, 64) 70.5 -> 21.7, over (0, 2)
    of (64, 32, 128) 31 -> 26; with an elementwise store as well, or an innermost loop of 16,
    unrolling was as fast or faster."""
    if (not k.reduces or k.stores or k.scatters or k.reverse or k.dyn_reads
            or any(r.axis is not None or r.payload is not None for r in k.reduces)
            or any(op.prim in SCANS for op in k.ops) or _leading_reduction(k)):
        return False
    loops, n_kept = _loops(k, _accesses(k)[0])
    if n_kept == len(loops):
        return False
    size, strides = loops[-1]
    lo, hi = SHORT_INNER_REDUCTION
    return lo <= size <= hi and all(st == 1 for st in strides[2:2 + len(k.reads)])


class _KernelEmitter:
    """Builds one kernel function; see :func:`emit_kernel`."""

    def __init__(self, module, name, kernel: Kernel):
        self.kernel = k = kernel
        self.slots = sorted({r.slot for r in k.reads + k.dyn_reads}
                            | {s for _, s, _ in k.stores} | {r.slot for r in k.reduces}
                            | {sc.slot for sc in k.scatters})
        # the kernel also takes [lo, hi) of its outermost loop, so threads can split it
        self.fn = ir.Function(module, ir.FunctionType(
            ir.VoidType(), [_PTR] * len(self.slots) + [I64, I64]), name)
        for a in self.fn.args[:len(self.slots)]:
            a.add_attribute("noalias")
        self.arg_of = dict(zip(self.slots, self.fn.args[:len(self.slots)], strict=True))
        accesses, n_counters = _accesses(k)
        self.dyn_base = 2 + len(k.reads)
        self.counter_base = self.dyn_base + len(k.dyn_reads)
        self.scatter_base = self.counter_base + n_counters
        self.leading = _leading_reduction(k)
        self.loops, self.n_kept = _loops(k, accesses, self.leading)
        self.splittable = self.n_kept >= 1 and not k.scatters and not self.leading
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.e = Emitter(self.b)
        self.indices = []
        # accumulators: per reduction (value[, index]) and per scan op
        self.acc = {}
        for r in k.reduces:
            dt = _acc_dtype(r.prim, r.in_dtype)
            self.acc[id(r)] = [(self.b.alloca(compute_type(dt)), dt, _identity(r.prim, dt))]
            if r.payload is not None:
                # the payload and whether it holds one: the first element is taken even
                # when it only ties the identity (-inf, or the integer minimum)
                self.acc[id(r)] += [(self.b.alloca(compute_type(r.out_dtype)), r.out_dtype, 0),
                                    (self.b.alloca(compute_type(_BOOL)), _BOOL, False)]
            elif r.axis is not None:
                self.acc[id(r)].append((self.b.alloca(I64), np.dtype(np.int64), 0))
        for op in k.ops:
            if op.prim in SCANS:
                self.acc[id(op)] = [(self.b.alloca(compute_type(op.dtype)), op.dtype,
                                     _scan_identity(op.prim, op.dtype))]
        self.block_level, self.chunk = (None, 0) if self.leading else \
            _block_level(self.loops, self.n_kept)
        self.pairwise = {}     # id(reduce) -> its pending block sums, when blocked
        if self.block_level is not None:
            for r in k.reduces:
                dt = _acc_dtype(r.prim, r.in_dtype)
                if r.axis is None and r.prim is P.reduce_sum and dt.kind in "fc" \
                        and not r.ordered:
                    self.pairwise[id(r)] = self.b.alloca(
                        ir.ArrayType(compute_type(dt), _CASCADE))
            self.blocks = self.b.alloca(I64)
            if not self.pairwise:
                self.block_level = None

    def linear(self, j, offset=0):
        b, total = self.b, ir.Constant(I64, offset)
        for level, ((size, strides), i) in enumerate(zip(self.loops, self.indices,
                                                         strict=False)):
            if strides[j]:
                if self.kernel.reverse and level >= self.n_kept:
                    i = b.sub(ir.Constant(I64, size - 1), i)
                total = b.add(total, b.mul(i, ir.Constant(I64, strides[j])))
        return total

    def element(self, slot, dt, index):
        return self.b.gep(self.arg_of[slot], [index], inbounds=True,
                          source_etype=storage_type(dt))

    def init_accumulators(self):
        for cells in self.acc.values():
            for ptr, dt, value in cells:
                self.b.store(self.e.const(dt, value), ptr)
        if self.block_level is not None:
            self.b.store(ir.Constant(I64, 0), self.blocks)

    def init_block(self):
        for r in self.kernel.reduces:
            if id(r) in self.pairwise:
                (ptr, dt, value), = self.acc[id(r)]
                self.b.store(self.e.const(dt, value), ptr)

    def _cascade_loop(self, count, state, step):
        """A loop over the bits of ``count``, lowest first, carrying the values ``state``:
        ``step(bits left, level, state, body, exit)`` emits the test that branches to
        ``body`` or ``exit`` and, in ``body``, returns the next state. Returns the bits
        left, the level and the state at the exit."""
        b = self.b
        pre = b.block
        head, body, done = (self.fn.append_basic_block(n) for n in ("cas", "cas_body",
                                                                    "cas_exit"))
        b.branch(head)
        b.position_at_end(head)
        t, level = b.phi(I64), b.phi(I64)
        phis = [b.phi(v.type) for v in state]
        t.add_incoming(count, pre)
        level.add_incoming(ir.Constant(I64, 0), pre)
        for p, v in zip(phis, state, strict=True):
            p.add_incoming(v, pre)
        new = step(t, level, phis, body, done)
        t.add_incoming(b.lshr(t, ir.Constant(I64, 1)), b.block)
        level.add_incoming(b.add(level, ir.Constant(I64, 1)), b.block)
        for p, v in zip(phis, new, strict=True):
            p.add_incoming(v, b.block)
        b.branch(head)
        b.position_at_end(done)
        return t, level, phis

    def _pending(self, r, level):
        return self.b.gep(self.pairwise[id(r)], [ir.Constant(I64, 0), level], inbounds=True)

    def push_block(self):
        """Carry each block sum into its pending sums as a binary counter does: block j
        merges with one pending sum per trailing one bit of j (equal-sized halves)."""
        b, e = self.b, self.e
        rs = [r for r in self.kernel.reduces if id(r) in self.pairwise]
        sums = []
        for r in rs:
            (ptr, dt, _), = self.acc[id(r)]
            sums.append(b.load(ptr, typ=compute_type(dt)))
        count = b.load(self.blocks, typ=I64)

        def step(t, level, phis, body, done):
            b.cbranch(b.trunc(t, ir.IntType(1)), body, done)
            b.position_at_end(body)
            new = []
            for r, s in zip(rs, phis, strict=True):
                dt = self.acc[id(r)][0][1]
                pending = b.load(self._pending(r, level), typ=compute_type(dt))
                new.append(RULES[P.add](e, dt, pending, s))
            return new
        _, level, phis = self._cascade_loop(count, sums, step)
        for r, s in zip(rs, phis, strict=True):
            b.store(s, self._pending(r, level))
        b.store(b.add(count, ir.Constant(I64, 1)), self.blocks)

    def fold_blocks(self):
        """Each blocked sum becomes the sum of its pending block sums, lowest level first."""
        if self.block_level is None:
            return
        b, e = self.b, self.e
        rs = [r for r in self.kernel.reduces if id(r) in self.pairwise]
        totals = [e.const(self.acc[id(r)][0][1], 0) for r in rs]

        def step(t, level, phis, body, done):
            b.cbranch(b.icmp_unsigned("!=", t, ir.Constant(I64, 0)), body, done)
            b.position_at_end(body)
            bit = b.trunc(t, ir.IntType(1))
            new = []
            for r, s in zip(rs, phis, strict=True):
                dt = self.acc[id(r)][0][1]
                pending = b.load(self._pending(r, level), typ=compute_type(dt))
                new.append(b.select(bit, RULES[P.add](e, dt, s, pending), s))
            return new
        _, _, phis = self._cascade_loop(b.load(self.blocks, typ=I64), totals, step)
        for r, s in zip(rs, phis, strict=True):
            b.store(s, self.acc[id(r)][0][0])

    def store_reductions(self):
        if not self.kernel.reduces:
            return
        b, index = self.b, self.linear(1)
        for r in self.kernel.reduces:
            (ptr, dt, _), *rest = self.acc[id(r)]
            if r.payload is not None:
                value = b.load(rest[0][0], typ=compute_type(r.out_dtype))
            elif rest:
                value = b.trunc(b.load(rest[0][0], typ=I64), compute_type(r.out_dtype)) \
                    if r.out_dtype.itemsize < 8 else b.load(rest[0][0], typ=I64)
            else:
                value = self.e.round16(r.out_dtype, b.load(ptr, typ=compute_type(dt)))
            self.e.store(r.out_dtype, value, self.element(r.slot, r.out_dtype, index))

    def open_loop(self, start, end, step=1):
        b = self.b
        pre = b.block
        header, body, done = (self.fn.append_basic_block(n) for n in ("head", "body", "exit"))
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, end), body, done)
        b.position_at_end(body)
        return header, i, done, step

    def close_loop(self, header, i, done, step):
        b = self.b
        i.add_incoming(b.add(i, ir.Constant(I64, step)), b.block)
        b.branch(header)
        b.position_at_end(done)

    def init_results(self):
        """Leading reductions: every element of each result starts at its identity."""
        k = self.kernel
        kept = int(np.prod([d for i, d in enumerate(k.shape) if i not in k.axes], dtype=np.int64))
        loop = self.open_loop(ir.Constant(I64, 0), ir.Constant(I64, kept))
        for r in k.reduces:
            self.e.store(r.out_dtype, self.e.const(r.out_dtype, _identity(r.prim, r.out_dtype)),
                         self.element(r.slot, r.out_dtype, loop[1]))
        self.close_loop(*loop)

    def emit(self):
        if self.leading:
            self.init_results()
        b, stack = self.b, []
        for level, (size, _) in enumerate(self.loops):
            if level == self.n_kept and not self.leading:
                self.init_accumulators()
            split = level == 0 and self.splittable
            start = self.fn.args[-2] if split else ir.Constant(I64, 0)
            end = self.fn.args[-1] if split else ir.Constant(I64, size)
            if level == self.block_level:
                # blocks of `chunk` iterations: each sums into a fresh accumulator
                block = self.open_loop(start, end, self.chunk)
                stack.append(("block", block))
                self.init_block()
                stop = b.add(block[1], ir.Constant(I64, self.chunk))
                start = block[1]
                end = b.select(b.icmp_signed("<", stop, end), stop, end)
            loop = self.open_loop(start, end)
            stack.append(("loop", loop))
            self.indices.append(loop[1])
        inner_reduces = self.n_kept < len(self.loops) and not self.leading
        if not inner_reduces and not self.leading:
            self.init_accumulators()
        self.body()
        if not inner_reduces and not self.leading:
            self.store_reductions()
        while stack:
            kind, loop = stack.pop()
            self.close_loop(*loop)
            if kind == "loop":
                self.indices.pop()
                if stack and stack[-1][0] == "block":
                    self.push_block()
                    continue
            if len(self.indices) == self.n_kept and inner_reduces:
                self.fold_blocks()
                self.store_reductions()
        b.ret_void()
        return self.slots, (self.loops[0][0] if self.splittable else None)

    # -- the innermost body ------------------------------------------------------
    def body(self):
        k, e, b = self.kernel, self.e, self.b
        reads = [e.load(r.dtype, self.element(r.slot, r.dtype, self.linear(2 + j, r.offset)))
                 for j, r in enumerate(k.reads)]
        values = []
        counter = self.counter_base

        def value(ref, dt):
            kind = ref[0]
            if kind == "read":
                return reads[ref[1]]
            if kind == "op":
                return values[ref[1]]
            return e.const(dt, ref[1])

        for op in k.ops:
            if op.prim is P.iota:
                v = convert(e, np.dtype(np.int64), op.dtype, self.linear(counter))
                counter += 1
            elif op.prim in (P.gather, P.dynamic_slice):
                j = op.args[0][1]
                r = k.dyn_reads[j]
                indices = [value(a, dt) for a, dt in
                           zip(op.args[1:], op.params["index_dtypes"], strict=True)]
                index = b.add(self.linear(self.dyn_base + j, r.offset),
                              _clamped_offset(b, indices, op.params["index_dtypes"],
                                              op.params["bounds"], op.params["strides"]))
                v = e.load(r.dtype, self.element(r.slot, r.dtype, index))
            elif op.prim is P.concatenate:
                positions = self.linear(counter)
                counter += 1
                v = self.concatenate(op, positions)
            elif op.prim is P.pad:
                positions = [self.linear(counter + d) for d in range(len(k.shape))]
                counter += len(k.shape)
                v = self.pad(op, positions, value(op.args[1], op.dtype))
            elif op.prim in SCANS:
                (ptr, dt, _), = self.acc[id(op)]
                v = e.round16(dt, RULES[_COMBINE[op.prim]](
                    e, dt, b.load(ptr, typ=compute_type(dt)), value(op.args[0], dt)))
                b.store(v, ptr)
            else:
                args = [value(r, dt) for r, dt in zip(op.args, _arg_dtypes(op), strict=True)]
                if op.prim is P.convert:
                    v = convert(e, op.arg_dtype, op.dtype, args[0])
                else:
                    v = e.round16(op.dtype, RULES[op.prim](e, op.arg_dtype, *args, **op.params))
            values.append(v)

        for j, sc in enumerate(k.scatters):
            self.scatter(j, sc, value)
        full = self.linear(0)
        for ref, slot, dt in k.stores:
            e.store(dt, value(ref, dt), self.element(slot, dt, full))
        for r in k.reduces:
            x = value(r.ref, r.in_dtype)
            if self.leading:
                dt, ptr = r.out_dtype, self.element(r.slot, r.out_dtype, self.linear(1))
                e.store(dt, RULES[_COMBINE[r.prim]](e, dt, e.load(dt, ptr), x), ptr)
            elif r.axis is None and r.payload is None:
                (ptr, dt, _), = self.acc[id(r)]
                acc = b.load(ptr, typ=compute_type(dt))
                if dt.kind == "c" and r.prim is P.reduce_sum:   # reassociated, as float sums
                    combined = complex_add(e, dt, acc, x, flags=("reassoc",))
                else:
                    combined = RULES[_COMBINE[r.prim]](e, dt, acc, x)
                # a product stays in NumPy's order: regrouped, inf * tiny * tiny is nan
                # instead of inf, and a long product of numbers near 1 underflows early
                if dt.kind == "f" and r.prim is P.reduce_sum and not r.ordered:
                    combined.flags.append("reassoc")
                b.store(combined, ptr)
            elif r.payload is not None:
                self.arg_step(r, x, value(r.payload, r.out_dtype))
            else:
                self.arg_step(r, x, self.linear(counter))
                counter += 1

    def concatenate(self, op, pos):
        b, e = self.b, self.e
        result = None
        parts = zip(op.args, op.params["starts"], op.params["sizes"], op.params["strides"],
                    strict=True)
        for ref, start, size, stride in reversed(list(parts)):
            if size == 0:
                continue
            r = self.kernel.dyn_reads[ref[1]]
            q = _clamp(b, b.sub(pos, ir.Constant(I64, start)), size - 1)
            index = b.add(self.linear(self.dyn_base + ref[1], r.offset),
                          b.mul(q, ir.Constant(I64, stride)))
            v = e.load(r.dtype, self.element(r.slot, r.dtype, index))
            if result is None:
                result = v
            else:
                end = ir.Constant(I64, start + size)
                result = b.select(b.icmp_signed("<", pos, end), v, result)
        return result if result is not None else e.const(op.dtype, 0)

    def pad(self, op, positions, fill):
        b, e = self.b, self.e
        r = self.kernel.dyn_reads[op.args[0][1]]
        if 0 in op.params["in_shape"]:
            return fill
        valid, index = ir.Constant(ir.IntType(1), 1), ir.Constant(I64, r.offset)
        for pos, (lo, _, interior), d, stride in zip(positions, op.params["config"],
                                                     op.params["in_shape"],
                                                     op.params["strides"], strict=True):
            t = b.sub(pos, ir.Constant(I64, lo))
            step = ir.Constant(I64, interior + 1)
            t0 = _clamp(b, t, None)
            q, rem = b.udiv(t0, step), b.urem(t0, step)
            ok = b.and_(b.icmp_signed(">=", t, ir.Constant(I64, 0)),
                        b.icmp_signed("==", rem, ir.Constant(I64, 0)))
            valid = b.and_(valid, b.and_(ok, b.icmp_signed("<", q, ir.Constant(I64, d))))
            index = b.add(index, b.mul(_clamp(b, q, d - 1), ir.Constant(I64, stride)))
        v = e.load(r.dtype, self.element(r.slot, r.dtype, index))
        return b.select(valid, v, fill)

    def scatter(self, j, sc, value):
        b, e = self.b, self.e
        index = b.add(self.linear(self.scatter_base + j),
                      _clamped(b, value, sc.index_refs, sc.index_dtypes, sc.bounds,
                               sc.index_strides))
        ptr = self.element(sc.slot, sc.dtype, index)
        x = value(sc.ref, sc.dtype)
        if sc.add:
            x = e.round16(sc.dtype, RULES[P.add](e, sc.dtype, e.load(sc.dtype, ptr), x))
        e.store(sc.dtype, x, ptr)

    def arg_step(self, r, x, index):
        """argmax/argmin: take x when it beats the best so far (NaN beats everything and
        the first NaN stays), so ties keep the first index (or payload), as NumPy does."""
        b, e = self.b, self.e
        (vptr, dt, _), (iptr, _, _), *_ = self.acc[id(r)]
        best = b.load(vptr, typ=compute_type(dt))
        if dt.kind == "f":
            beats = b.fcmp_ordered(">" if r.prim is P.argmax else "<", x, best)
            take = b.and_(b.not_(e.isnan(best)), b.or_(e.isnan(x), beats))
        elif dt.kind == "b":
            take = b.and_(x, b.not_(best)) if r.prim is P.argmax else b.and_(best, b.not_(x))
        else:
            cmp = b.icmp_signed if dt.kind == "i" else b.icmp_unsigned
            take = cmp(">" if r.prim is P.argmax else "<", x, best)
        if r.payload is not None:
            held = self.acc[id(r)][2][0]
            take = b.or_(take, b.not_(b.load(held, typ=compute_type(_BOOL))))
            b.store(e.const(_BOOL, True), held)
        b.store(b.select(take, x, best), vptr)
        b.store(b.select(take, index, b.load(iptr, typ=index.type)), iptr)


def _block_level(loops, n_kept):
    """(level, iterations per block) for blocked float sums: a long contiguous innermost
    loop in LONG_SUM_BLOCK pieces, else the outermost reduced loop whose inner loops
    cover at most half a SUM_BLOCK, or (None, 0) when the reduced loops hold no more
    than one block."""
    sizes = [size for size, _ in loops]
    if n_kept == len(loops):
        return None, 0
    if sizes[-1] >= LONG_SUM_BLOCK and all(s in (0, 1) for s in loops[-1][1]):
        return len(loops) - 1, LONG_SUM_BLOCK
    if math.prod(sizes[n_kept:]) <= SUM_BLOCK:
        return None, 0
    for level in range(n_kept, len(loops)):
        inner = math.prod(sizes[level + 1:])
        if inner <= SUM_BLOCK // 2:
            return level, SUM_BLOCK // inner
    raise AssertionError("the innermost loop covers one element")


def emit_kernel(module: ir.Module, name: str, kernel: Kernel):
    """Add function ``name`` for ``kernel`` to ``module``.

    Returns the slots it takes, in order, and the trip count of its outermost loop when
    that loop may be split into [lo, hi) ranges run in parallel (None otherwise; then it
    ignores lo and hi)."""
    return _KernelEmitter(module, name, kernel).emit()


def emit_array_entry(module: ir.Module, name: str, kernel_name: str, data_offset: int | None,
                     packed: bool = False):
    """``name(PyArrayObject*..., lo, hi)``: read each array's data pointer (at
    ``data_offset`` in the object) and call the kernel, so Python passes arrays without
    converting them. ``packed``: ``name(PyArrayObject **arrays, int64 *index, lo, hi)``
    takes its i-th array at ``arrays[index[i]]`` instead (a C call takes at most about a
    thousand arguments; a graph entry passes its own argument vector and a constant
    index). With ``data_offset`` None the pointers are the data pointers themselves."""
    kernel = module.globals[kernel_name]
    n = len(kernel.args) - 2
    params = [_PTR, _PTR] if packed else [_PTR] * n
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [*params, I64, I64]), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if packed:
        arrays, index = fn.args[:2]
        objects = []
        for i in range(n):
            k = b.load(b.gep(index, [ir.Constant(I64, i)], source_etype=I64), typ=I64)
            objects.append(b.load(b.gep(arrays, [k], source_etype=_PTR), typ=_PTR))
    else:
        objects = fn.args[:n]
    data = objects if data_offset is None else [
        b.load(b.gep(a, [ir.Constant(I64, data_offset)], source_etype=ir.IntType(8)),
               typ=_PTR) for a in objects]
    b.call(kernel, [*data, *fn.args[-2:]])
    b.ret_void()


def _counters(op, ndim):
    """The dimensions whose loop position ``op`` needs (in the order it consumes them)."""
    if op.prim in (P.iota, P.concatenate):
        return [op.params["dimension"]]
    if op.prim is P.pad:
        return list(range(ndim))
    return []


def _clamp(b, x, hi):
    """min(max(x, 0), hi) on i64 (no upper bound when hi is None)."""
    x = b.select(b.icmp_signed("<", x, ir.Constant(I64, 0)), ir.Constant(I64, 0), x)
    if hi is None:
        return x
    return b.select(b.icmp_signed(">", x, ir.Constant(I64, hi)), ir.Constant(I64, hi), x)


def _clamped(b, value, refs, dtypes, bounds, strides):
    return _clamped_offset(b, [value(r, dt) for r, dt in zip(refs, dtypes, strict=True)],
                           dtypes, bounds, strides)


def _clamped_offset(b, indices, dtypes, bounds, strides):
    """sum_k clip(index_k, 0, bound_k) * stride_k: the runtime part of a dynamic address."""
    total = ir.Constant(I64, 0)
    for idx, dt, bound, stride in zip(indices, dtypes, bounds, strides, strict=True):
        wide = idx if idx.type == I64 else (b.zext if dt.kind in "bu" else b.sext)(idx, I64)
        wide = b.select(b.icmp_signed("<", wide, ir.Constant(I64, 0)), ir.Constant(I64, 0), wide)
        wide = b.select(b.icmp_signed(">", wide, ir.Constant(I64, bound)),
                        ir.Constant(I64, bound), wide)
        total = b.add(total, b.mul(wide, ir.Constant(I64, stride)))
    return total


def _arg_dtypes(op):
    """The dtype of each operand of ``op`` (a select's predicate is bool; jv's argument
    may be complex where its order is real)."""
    if op.prim is P.select:
        return [np.dtype(bool), op.arg_dtype, op.arg_dtype]
    if op.prim is P.bessel_jv:
        return [op.arg_dtype, op.dtype]
    return [op.arg_dtype] * len(op.args)


def emit_graph_entry(module: ir.Module, name: str, calls, n_args: int, none_symbol: str,
                     incref_none: bool, data_offset: int = 0):
    """``name(self, PyObject *const *args, Py_ssize_t nargs)``: a CPython METH_FASTCALL
    function that runs a whole graph of kernels in one call from Python.

    ``args`` are the graph's array objects, one per slot; ``calls`` lists, in execution
    order, ``(array-entry symbol, slot indices, lo, hi, packed)`` per kernel (each entry
    reads its arrays' data pointers itself; a packed one gets ``args`` and a constant
    table of its slots) or a :class:`blas.GemmCall` (data pointers read here,
    at ``data_offset`` in the array object). Returns ``None`` (a new reference,
    so incremented unless this CPython's None is immortal), or NULL for a wrong ``nargs``.
    ``None`` is the external symbol ``none_symbol``: no address of this process is in the
    code, so its object code can be cached on disk.
    """
    fn = ir.Function(module, ir.FunctionType(_PTR, [_PTR, _PTR, I64]), name)
    _, args, nargs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    body, fail = fn.append_basic_block("body"), fn.append_basic_block("fail")
    b.cbranch(b.icmp_signed("==", nargs, ir.Constant(I64, n_args)), body, fail)
    b.position_at_end(fail)
    b.ret(ir.Constant(_PTR, None))
    b.position_at_end(body)
    objects = [b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=_PTR), typ=_PTR)
               for i in range(n_args)]
    def data(slot):
        field = b.gep(objects[slot], [ir.Constant(I64, data_offset)], source_etype=ir.IntType(8))
        return b.load(field, typ=_PTR)

    for call in calls:
        if isinstance(call, GemmCall):
            emit_gemm(b, call, data)
            continue
        symbol, slots, lo, hi, packed = call
        bounds = [ir.Constant(I64, lo), ir.Constant(I64, hi)]
        if packed:
            kernel = ir.Function(module, ir.FunctionType(
                ir.VoidType(), [_PTR, _PTR, I64, I64]), symbol)
            table_type = ir.ArrayType(I64, len(slots))
            table = ir.GlobalVariable(module, table_type, f"{symbol}_slots")
            table.initializer = ir.Constant(table_type, [ir.Constant(I64, s) for s in slots])
            table.global_constant, table.linkage = True, "internal"
            b.call(kernel, [args, table, *bounds])
            continue
        kernel = ir.Function(module, ir.FunctionType(
            ir.VoidType(), [_PTR] * len(slots) + [I64, I64]), symbol)
        b.call(kernel, [objects[s] for s in slots] + bounds)
    none = ir.GlobalVariable(module, I64, none_symbol)     # its reference count
    if incref_none:
        b.store(b.add(b.load(none, typ=I64), ir.Constant(I64, 1)), none)
    b.ret(b.bitcast(none, _PTR))


def emit_loop_entry(module: ir.Module, name: str, loop: NativeLoop, none_symbol: str,
                    incref_none: bool, data_offset: int):
    """``name(self, PyObject *const *args, Py_ssize_t nargs)``: a METH_FASTCALL function
    that runs the loop ``loop`` describes (see :class:`plan.NativeLoop`), calling the
    bodies' graph entries (METH_FASTCALL themselves) through the addresses in its table
    argument, so its code holds no address of this process and can be cached on disk."""
    fn = ir.Function(module, ir.FunctionType(_PTR, [_PTR, _PTR, I64]), name)
    _, args, nargs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    start, fail = fn.append_basic_block("start"), fn.append_basic_block("fail")
    b.cbranch(b.icmp_signed("==", nargs, ir.Constant(I64, loop.n_args)), start, fail)
    b.position_at_end(fail)
    b.ret(ir.Constant(_PTR, None))
    b.position_at_end(start)
    i8 = ir.IntType(8)
    objects = [b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=_PTR), typ=_PTR)
               for i in range(loop.n_args)]

    def field(k):
        return b.gep(objects[k], [ir.Constant(I64, data_offset)], source_etype=i8)

    def data(k):
        return b.load(field(k), typ=_PTR)

    entry_type = ir.FunctionType(_PTR, [_PTR, _PTR, I64])
    table = data(loop.table)
    entries = []
    for k in range(2):
        address = b.load(b.gep(table, [ir.Constant(I64, k)], source_etype=I64), typ=I64)
        # a pointer that knows its function type (it prints as a plain ``ptr``)
        entries.append(b.inttoptr(address, entry_type.as_pointer()))
    carry_a = [data(a) for a, _ in loop.carry]
    carry_b = [data(c) for _, c in loop.carry]
    bases = {k: data(k) for _, kind, k, _ in loop.pointers if kind == "x"}
    bases.update({k: data(k) for kind, k, *_ in loop.copies if kind == "x"})
    limit = ir.Constant(I64, (1 << 62) if loop.length is None else loop.length)
    memcpy = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR, _PTR, I64, ir.IntType(1)]),
                         "llvm.memcpy.p0.p0.i64")

    def call(which, span):
        first, count = span
        result = b.call(entries[which], [ir.Constant(_PTR, None),
                                         b.gep(args, [ir.Constant(I64, first)], source_etype=_PTR),
                                         ir.Constant(I64, count)])
        if incref_none:     # the entry returned None as a new reference: give it back
            b.store(b.sub(b.load(result, typ=I64), ir.Constant(I64, 1)), result)

    pre = b.block
    head, step, done = (fn.append_basic_block(x) for x in ("head", "step", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), pre)
    b.cbranch(b.icmp_signed("<", i, limit), step, done)
    b.position_at_end(step)
    odd = b.trunc(i, ir.IntType(1))
    t = b.sub(ir.Constant(I64, loop.length - 1), i) if loop.reverse else i

    def where(kind, k, stride):
        if kind == "in":
            return b.select(odd, carry_b[k], carry_a[k])
        if kind == "out":
            return b.select(odd, carry_a[k], carry_b[k])
        return b.gep(bases[k], [b.mul(t, ir.Constant(I64, stride))], source_etype=i8)

    for proxy, kind, k, stride in loop.pointers:
        b.store(where(kind, k, stride), field(proxy))
    if loop.cond_result is not None:
        if loop.cond is not None:
            call(1, loop.cond)
        go = fn.append_basic_block("go")
        pred = b.load(data(loop.cond_result), typ=i8)
        b.cbranch(b.icmp_unsigned("!=", pred, ir.Constant(i8, 0)), go, done)
        b.position_at_end(go)
    if loop.body is not None:
        call(0, loop.body)
    for kind, k, stride, source, nbytes in loop.copies:
        b.call(memcpy, [where(kind, k, stride), data(source), ir.Constant(I64, nbytes),
                        ir.Constant(ir.IntType(1), 0)])
    i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)
    if loop.steps is not None:
        b.store(i, data(loop.steps))
    none = ir.GlobalVariable(module, I64, none_symbol)
    if incref_none:
        b.store(b.add(b.load(none, typ=I64), ir.Constant(I64, 1)), none)
    b.ret(b.bitcast(none, _PTR))
