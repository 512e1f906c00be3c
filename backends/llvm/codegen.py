"""Emit one LLVM function per kernel: a loop nest that reads each input once per point,
computes the fused chain, writes each stored member once and accumulates reductions.

The function takes one ``noalias`` pointer per slot it touches (in ``slots`` order).
Loops run over the kept dimensions first and the reduced ones innermost, so a
reduction keeps its accumulator in a register (a scan, likewise, carries it along its
axis); adjacent dimensions that every access walks contiguously are coalesced into one
loop, which is what lets LLVM vectorize a plain elementwise kernel as one flat loop.
A float sum runs its reduced loops in blocks (vectorized within a block) and adds the
block sums pairwise, in an order fixed by the shape alone (``accumulators.py``).
"""

from __future__ import annotations

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from llvmlite import ir

from ..planning.partition import SCANS
from ..planning.plan import Kernel, c_strides
from . import irloop
from .accumulators import Accumulators, acc_dtype
from .ops import I64, RULES, Emitter, convert, storage_type

_PTR = ir.PointerType()
# innermost reduced loops of this many points compile without unrolling (unrolling_hurts)
SHORT_INNER_REDUCTION = (32, 256)
BF16 = dtypes.bfloat16
# ops whose float32 result on bfloat16 operands is a bfloat16 value (or a NaN): no rounding
EXACT_ON_BF16 = frozenset({P.max, P.min, P.neg, P.abs, P.copysign, P.select, P.sign,
                           P.floor, P.ceil})
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
           or dtype_kind(r.out_dtype) not in "fiu" or acc_dtype(r.prim, r.in_dtype) != r.out_dtype
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


def kernel_slots(k: Kernel) -> list:
    """The slots ``k`` touches, in the order its function takes them."""
    return sorted({r.slot for r in k.reads + k.dyn_reads} | {s for _, s, _ in k.stores}
                  | {r.slot for r in k.reduces} | {sc.slot for sc in k.scatters})


# every field of Kernel that kernel_key reads (a new field must be added there)
KEY_FIELDS = frozenset({"shape", "axes", "reverse", "reads", "dyn_reads", "ops", "stores",
                        "reduces", "sealed", "stored", "scatters"})


def kernel_key(k: Kernel, slots=None):
    """A hashable key that is equal for two kernels exactly when :func:`emit_kernel` emits
    the same function for both (up to its name): everything the emitter reads, with each
    slot replaced by its position in :func:`kernel_slots` (the argument it becomes) and
    constants keyed by dtype and bytes (-0.0 is not 0.0). An unrolled Python loop makes
    thousands of such twins; they share one compiled function."""
    rank = {s: i for i, s in enumerate(kernel_slots(k) if slots is None else slots)}

    def views(vs):
        return tuple((rank[v.slot], v.shape, v.dtype, v.offset, v.strides) for v in vs)
    return (
        k.shape, k.axes, k.reverse, k.sealed, views(k.reads), views(k.dyn_reads),
        tuple((op.prim, _canon(op.args), _canon(op.params), op.dtype, op.arg_dtype)
              for op in k.ops),
        tuple((_canon(ref), rank[slot], dt) for ref, slot, dt in k.stores),
        tuple((r.prim, _canon(r.ref), rank[r.slot], r.out_dtype, r.in_dtype, r.axis, r.ordered,
               _canon(r.payload)) for r in k.reduces),
        tuple((_canon(ref), rank.get(slot, ("slot", slot))) for ref, slot in k.stored.items()),
        tuple((sc.add, _canon(sc.ref), rank[sc.slot], sc.dtype, _canon(sc.index_refs),
               _canon(sc.index_dtypes), _canon(sc.bounds), _canon(sc.index_strides),
               _canon(sc.strides)) for sc in k.scatters))


def _canon(x):
    """``x`` as a hashable value whose equality is exact: types kept (True is not 1, a
    float32 constant not a float64 one), floats and arrays by their bits."""
    if isinstance(x, tuple | list):
        return (type(x).__name__, *map(_canon, x))
    if isinstance(x, dict):
        return ("dict", *((_canon(key), _canon(v)) for key, v in x.items()))
    if isinstance(x, np.ndarray):
        return ("array", x.dtype, x.shape, x.tobytes())
    if isinstance(x, np.generic):
        return ("scalar", x.dtype, x.tobytes())
    if isinstance(x, float | complex):
        return (type(x).__name__, repr(x))
    if x is None or isinstance(x, bool | int | str | np.dtype):
        return (type(x).__name__, x)
    try:
        hash(x)
    except TypeError:
        return ("object", id(x))       # equal only to itself
    return ("hashable", type(x), x)


class _KernelEmitter:
    """Builds one kernel function; see :func:`emit_kernel`."""

    def __init__(self, module, name, kernel: Kernel):
        self.kernel = k = kernel
        self.slots = kernel_slots(k)
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
        self.red = Accumulators(self)
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

    def open_loop(self, start, end, step=1):
        return (*irloop.open_loop(self.b, start, end, ("head", "body", "exit")), step)

    def close_loop(self, header, i, done, step):
        irloop.close_loop(self.b, header, i, done, ir.Constant(I64, step))

    def emit(self):
        if self.leading:
            self.red.init_results()
        b, stack = self.b, []
        for level, (size, _) in enumerate(self.loops):
            if level == self.n_kept and not self.leading:
                self.red.init()
            split = level == 0 and self.splittable
            start = self.fn.args[-2] if split else ir.Constant(I64, 0)
            end = self.fn.args[-1] if split else ir.Constant(I64, size)
            if level == self.red.block_level:
                # blocks of `chunk` iterations: each sums into a fresh accumulator
                block = self.open_loop(start, end, self.red.chunk)
                stack.append(("block", block))
                self.red.init_block()
                stop = b.add(block[1], ir.Constant(I64, self.red.chunk))
                start = block[1]
                end = b.select(b.icmp_signed("<", stop, end), stop, end)
            loop = self.open_loop(start, end)
            stack.append(("loop", loop))
            self.indices.append(loop[1])
        inner_reduces = self.n_kept < len(self.loops) and not self.leading
        if not inner_reduces and not self.leading:
            self.red.init()
        self.body()
        if not inner_reduces and not self.leading:
            self.red.store()
        while stack:
            kind, loop = stack.pop()
            self.close_loop(*loop)
            if kind == "loop":
                self.indices.pop()
                if stack and stack[-1][0] == "block":
                    self.red.push_block()
                    continue
            if len(self.indices) == self.n_kept and inner_reduces:
                self.red.fold_blocks()
                self.red.store()
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
                v = self.red.scan(op, value(op.args[0], op.dtype))
            else:
                args = [value(r, dt) for r, dt in zip(op.args, _arg_dtypes(op), strict=True)]
                if op.prim is P.convert:
                    v = convert(e, op.arg_dtype, op.dtype, args[0])
                elif op.dtype == BF16 and op.prim in EXACT_ON_BF16 and all(
                        e.exact_bf16(a) for a, dt in zip(args, _arg_dtypes(op), strict=True)
                        if dt == BF16):
                    # its result is one of its operands' values or an integer of at most
                    # their magnitude + 1: a bfloat16, which rounding would leave as it is
                    v = e.mark_bf16(RULES[op.prim](e, op.arg_dtype, *args, **op.params))
                else:
                    v = e.round16(op.dtype, RULES[op.prim](e, op.arg_dtype, *args, **op.params))
            values.append(v)

        for j, sc in enumerate(k.scatters):
            self.scatter(j, sc, value)
        full = self.linear(0)
        for ref, slot, dt in k.stores:
            e.store(dt, value(ref, dt), self.element(slot, dt, full))
        self.red.accumulate(value, counter)

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



def emit_kernel(module: ir.Module, name: str, kernel: Kernel):
    """Add function ``name`` for ``kernel`` to ``module``.

    Returns the slots it takes, in order, and the trip count of its outermost loop when
    that loop may be split into [lo, hi) ranges run in parallel (None otherwise; then it
    ignores lo and hi)."""
    return _KernelEmitter(module, name, kernel).emit()


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
        wide = idx if idx.type == I64 else (b.zext if dtype_kind(dt) in "bu" else b.sext)(idx, I64)
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
