"""The accumulators of one kernel (``codegen.py``'s loop nest): reductions, arg
reductions and scans, each in a register-promoted cell set to its identity.

A float sum runs its reduced loops in blocks (vectorized within a block) and adds the
block sums pairwise, in an order fixed by the shape alone: block j merges with one pending
sum per trailing one bit of j, as a binary counter carries. A kernel that reduces leading
axes only (``codegen._leading_reduction``) accumulates in its results instead.
"""

from __future__ import annotations

import math

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from llvmlite import ir

from ..planning.partition import SCANS
from .complex_ops import add as complex_add
from .ops import I64, RULES, compute_type

# a float sum adds this many elements in loop order per block, then adds the block sums
# pairwise, so its rounding error grows with log2(n), not n, as NumPy's does; along a long
# contiguous innermost loop a block is LONG_SUM_BLOCK (vector lanes split it further, and
# the per-block cost stays off the fast path)
SUM_BLOCK = 1024
LONG_SUM_BLOCK = 4096
_CASCADE = 64       # pending block sums: one per bit of the block count
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
    if dtype_kind(dt) == "b":
        return big
    if dtype_kind(dt) == "f":
        return np.inf if big else -np.inf
    if dtype_kind(dt) == "c":         # below/above every value in NumPy's lexicographic order
        return complex(np.inf, np.inf) if big else complex(-np.inf, -np.inf)
    info = np.iinfo(dt)
    return info.max if big else info.min


def _scan_identity(prim, dt):
    """A scan's first output is its first element, as in NumPy's accumulate: so a float
    cumsum starts from -0.0 (-0.0 + x is x, +0.0 + -0.0 would not be)."""
    if prim is P.cumsum and dtype_kind(dt) in "fc":
        return complex(-0.0, -0.0) if dtype_kind(dt) == "c" else -0.0
    return _identity(prim, dt)


def acc_dtype(prim, dt):
    """Sums and products of float16 and bfloat16 accumulate in float32 as NumPy's reductions
    do; float16 scans round every step (NumPy's accumulate stores each partial result)."""
    if dt in dtypes.NARROW_FLOATS and prim in (P.reduce_sum, P.reduce_prod):
        return np.dtype(np.float32)
    return dt


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


class Accumulators:
    """The reduction and scan state of the kernel that emitter ``em`` builds (its cells are
    allocated in the entry block, when the emitter has laid out its loops)."""

    def __init__(self, em):
        self.em = em
        k, b = em.kernel, em.b
        # per reduction (value[, index]) and per scan op
        self.acc = {}
        for r in k.reduces:
            dt = acc_dtype(r.prim, r.in_dtype)
            self.acc[id(r)] = [(b.alloca(compute_type(dt)), dt, _identity(r.prim, dt))]
            if r.payload is not None:
                # the payload and whether it holds one: the first element is taken even
                # when it only ties the identity (-inf, or the integer minimum)
                self.acc[id(r)] += [(b.alloca(compute_type(r.out_dtype)), r.out_dtype, 0),
                                    (b.alloca(compute_type(_BOOL)), _BOOL, False)]
            elif r.axis is not None:
                self.acc[id(r)].append((b.alloca(I64), np.dtype(np.int64), 0))
        for op in k.ops:
            if op.prim in SCANS:
                self.acc[id(op)] = [(b.alloca(compute_type(op.dtype)), op.dtype,
                                     _scan_identity(op.prim, op.dtype))]
        self.block_level, self.chunk = (None, 0) if em.leading else \
            _block_level(em.loops, em.n_kept)
        self.pairwise = {}     # id(reduce) -> its pending block sums, when blocked
        if self.block_level is not None:
            for r in k.reduces:
                dt = acc_dtype(r.prim, r.in_dtype)
                if r.axis is None and r.prim is P.reduce_sum and dtype_kind(dt) in "fc" \
                        and not r.ordered:
                    self.pairwise[id(r)] = b.alloca(
                        ir.ArrayType(compute_type(dt), _CASCADE))
            self.blocks = b.alloca(I64)
            if not self.pairwise:
                self.block_level = None

    def init(self):
        for cells in self.acc.values():
            for ptr, dt, value in cells:
                self.em.b.store(self.em.e.const(dt, value), ptr)
        if self.block_level is not None:
            self.em.b.store(ir.Constant(I64, 0), self.blocks)

    def init_block(self):
        for r in self.em.kernel.reduces:
            if id(r) in self.pairwise:
                (ptr, dt, value), = self.acc[id(r)]
                self.em.b.store(self.em.e.const(dt, value), ptr)

    def _cascade_loop(self, count, state, step):
        """A loop over the bits of ``count``, lowest first, carrying the values ``state``:
        ``step(bits left, level, state, body, exit)`` emits the test that branches to
        ``body`` or ``exit`` and, in ``body``, returns the next state. Returns the bits
        left, the level and the state at the exit."""
        b = self.em.b
        pre = b.block
        head, body, done = (self.em.fn.append_basic_block(n) for n in ("cas", "cas_body",
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
        return self.em.b.gep(self.pairwise[id(r)], [ir.Constant(I64, 0), level], inbounds=True)

    def push_block(self):
        """Carry each block sum into its pending sums as a binary counter does: block j
        merges with one pending sum per trailing one bit of j (equal-sized halves)."""
        b, e = self.em.b, self.em.e
        rs = [r for r in self.em.kernel.reduces if id(r) in self.pairwise]
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
        b, e = self.em.b, self.em.e
        rs = [r for r in self.em.kernel.reduces if id(r) in self.pairwise]
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

    def store(self):
        if not self.em.kernel.reduces:
            return
        b, index = self.em.b, self.em.linear(1)
        for r in self.em.kernel.reduces:
            (ptr, dt, _), *rest = self.acc[id(r)]
            if r.payload is not None:
                value = b.load(rest[0][0], typ=compute_type(r.out_dtype))
            elif rest:
                value = b.trunc(b.load(rest[0][0], typ=I64), compute_type(r.out_dtype)) \
                    if r.out_dtype.itemsize < 8 else b.load(rest[0][0], typ=I64)
            else:
                value = self.em.e.round16(r.out_dtype, b.load(ptr, typ=compute_type(dt)))
            self.em.e.store(r.out_dtype, value, self.em.element(r.slot, r.out_dtype, index))


    def init_results(self):
        """Leading reductions: every element of each result starts at its identity."""
        k, e = self.em.kernel, self.em.e
        kept = int(np.prod([d for i, d in enumerate(k.shape) if i not in k.axes], dtype=np.int64))
        loop = self.em.open_loop(ir.Constant(I64, 0), ir.Constant(I64, kept))
        for r in k.reduces:
            e.store(r.out_dtype, e.const(r.out_dtype, _identity(r.prim, r.out_dtype)),
                    self.em.element(r.slot, r.out_dtype, loop[1]))
        self.em.close_loop(*loop)


    def scan(self, op, x):
        """A scan op's next value (``x`` its element here), kept in its accumulator."""
        b, e = self.em.b, self.em.e
        (ptr, dt, _), = self.acc[id(op)]
        v = RULES[_COMBINE[op.prim]](e, dt, b.load(ptr, typ=compute_type(dt)), x)
        if dt == dtypes.bfloat16:     # runs in float32, each output rounded (interpreter)
            b.store(v, ptr)
            return e.round16(dt, v)
        v = e.round16(dt, v)          # float16: NumPy's accumulate rounds every step
        b.store(v, ptr)
        return v

    def accumulate(self, value, counter):
        """Fold this point's element into every reduction (``value(ref, dtype)`` reads the
        body's values); returns the next free counter (arg reductions take one each)."""
        em = self.em
        b, e = em.b, em.e
        for r in em.kernel.reduces:
            x = value(r.ref, r.in_dtype)
            if em.leading:
                dt, ptr = r.out_dtype, em.element(r.slot, r.out_dtype, em.linear(1))
                e.store(dt, RULES[_COMBINE[r.prim]](e, dt, e.load(dt, ptr), x), ptr)
            elif r.axis is None and r.payload is None:
                (ptr, dt, _), = self.acc[id(r)]
                acc = b.load(ptr, typ=compute_type(dt))
                if dtype_kind(dt) == "c" and r.prim is P.reduce_sum:   # reassociated, as float sums
                    combined = complex_add(e, dt, acc, x, flags=("reassoc",))
                else:
                    combined = RULES[_COMBINE[r.prim]](e, dt, acc, x)
                # a product stays in NumPy's order: regrouped, inf * tiny * tiny is nan
                # instead of inf, and a long product of numbers near 1 underflows early
                if dtype_kind(dt) == "f" and r.prim is P.reduce_sum and not r.ordered:
                    combined.flags.append("reassoc")
                b.store(combined, ptr)
            elif r.payload is not None:
                self.arg_step(r, x, value(r.payload, r.out_dtype))
            else:
                self.arg_step(r, x, em.linear(counter))
                counter += 1
        return counter

    def arg_step(self, r, x, index):
        """argmax/argmin: take x when it beats the best so far (NaN beats everything and
        the first NaN stays), so ties keep the first index (or payload), as NumPy does."""
        b, e = self.em.b, self.em.e
        (vptr, dt, _), (iptr, _, _), *_ = self.acc[id(r)]
        best = b.load(vptr, typ=compute_type(dt))
        if dtype_kind(dt) == "f":
            beats = b.fcmp_ordered(">" if r.prim is P.argmax else "<", x, best)
            take = b.and_(b.not_(e.isnan(best)), b.or_(e.isnan(x), beats))
        elif dtype_kind(dt) == "b":
            take = b.and_(x, b.not_(best)) if r.prim is P.argmax else b.and_(best, b.not_(x))
        else:
            cmp = b.icmp_signed if dtype_kind(dt) == "i" else b.icmp_unsigned
            take = cmp(">" if r.prim is P.argmax else "<", x, best)
        if r.payload is not None:
            held = self.acc[id(r)][2][0]
            take = b.or_(take, b.not_(b.load(held, typ=compute_type(_BOOL))))
            b.store(e.const(_BOOL, True), held)
        b.store(b.select(take, x, best), vptr)
        b.store(b.select(take, index, b.load(iptr, typ=index.type)), iptr)
