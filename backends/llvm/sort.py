"""Emit the LLVM function of a :class:`~backends.llvm.plan.Sort` step.

Every row (one index of the dimensions other than the sorted one) is sorted on its own:
a permutation of row positions is ordered by a stable bottom-up merge sort (insertion
sort for runs of ``RUN``), then every operand is gathered through it. The first key is
cached beside the permutation as a ``u64`` whose unsigned order is the key's order, so
the merges stream through memory; later keys are compared through the permutation only
on ties. Every value is handled as raw bits (an integer of its width), so float16 needs
no F16C and non-key operands of any dtype, complex included, are just moved.

Float order is NumPy's: NaN after everything (all NaNs equal, so stability keeps their
order), -0.0 equal to 0.0. The function takes ``(ptr per slot..., i64 lo, i64 hi)`` and
sorts rows [lo, hi) with the scratch part ``lo // rows_per_part`` (four i64 rows of the
sorted length: permutation, its merge buffer, cached keys, their merge buffer), so
threads that take parts of ``rows_per_part`` rows never share scratch.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from .ops import I1, I64
from .plan import Sort

RUN = 16        # rows are insertion-sorted in runs of this many before merging
_PTR = ir.PointerType()
_BIAS = 1 << 63


def _c(v):
    return ir.Constant(I64, v)


def _bits_type(dt: np.dtype):
    return ir.IntType(8 * dt.itemsize)


def _load(b, ptr, dt, index):
    """The bits of element ``index`` of ``ptr`` (dtype ``dt``) as an integer."""
    t = _bits_type(dt)
    return b.load(b.gep(ptr, [index], inbounds=True, source_etype=t), typ=t,
                  align=dt.alignment)


def _store(b, ptr, dt, index, value):
    t = _bits_type(dt)
    b.store(value, b.gep(ptr, [index], inbounds=True, source_etype=t), align=dt.alignment)


def order_key(b, bits, dt: np.dtype):
    """A u64 whose unsigned order is NumPy's sort order of ``dt`` values with these bits."""
    width = 8 * dt.itemsize
    if dt.kind in "bu":
        return bits if width == 64 else b.zext(bits, I64)
    if dt.kind == "f":
        t = bits.type
        mantissa = np.finfo(dt).nmant
        magnitude = b.and_(bits, ir.Constant(t, (1 << (width - 1)) - 1))
        nan = b.icmp_unsigned(">", magnitude, ir.Constant(t, ((1 << (width - 1 - mantissa)) - 1)
                                                          << mantissa))
        negative = b.icmp_signed("<", bits, ir.Constant(t, 0))
        signed = b.select(negative, b.sub(ir.Constant(t, 0), magnitude), magnitude)
        bits = b.select(nan, ir.Constant(t, (1 << (width - 1)) - 1), signed)   # -0.0 -> 0
    wide = bits if width == 64 else b.sext(bits, I64)
    return b.xor(wide, _c(_BIAS))


class _Loop:
    """``for (i = start; i < end; i += step)`` with the builder left in the body;
    ``close()`` ends the body and leaves the builder after the loop."""

    def __init__(self, b, start, end, step=1):
        self.b, self.pre = b, b.block
        fn = b.function
        self.head, body, self.done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(I64)
        self.i.add_incoming(start, self.pre)
        self.step = step if isinstance(step, ir.Value) else _c(step)
        b.cbranch(b.icmp_signed("<", self.i, end), body, self.done)
        b.position_at_end(body)

    def close(self):
        self.i.add_incoming(self.b.add(self.i, self.step), self.b.block)
        self.b.branch(self.head)
        self.b.position_at_end(self.done)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


class _SortEmitter:
    def __init__(self, module, name, step: Sort):
        self.step = s = step
        self.slots = sorted({*s.inputs, *s.outputs, s.scratch})
        self.fn = ir.Function(module, ir.FunctionType(
            ir.VoidType(), [_PTR] * len(self.slots) + [I64, I64]), name)
        for a in self.fn.args[:len(self.slots)]:
            a.add_attribute("noalias")
        self.arg = dict(zip(self.slots, self.fn.args, strict=False))
        self.n = s.shape[s.dimension]
        self.inner = math.prod(s.shape[s.dimension + 1:])
        self.less = self._emit_less(module, name + "_less")

    def _emit_less(self, module, name):
        """``less(ptr key..., i64 base, ka, a, kb, b)``: whether position ``a`` (cached
        first key ``ka``) sorts before ``b``; later keys decide ties, in order."""
        s = self.step
        later = [(s.inputs[k], s.dtypes[k]) for k in range(1, s.num_keys)]
        fn = ir.Function(module, ir.FunctionType(I1, [_PTR] * len(later) + [I64] * 5), name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        *keys, base, ka, a, kb, pb = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        yes, no = fn.append_basic_block("yes"), fn.append_basic_block("no")
        for block, value in ((yes, 1), (no, 0)):
            ir.IRBuilder(block).ret(ir.Constant(I1, value))
        stride = _c(self.inner)
        for j in range(1 + len(later)):
            x, y = ka, kb
            if j:
                ptr, dt = keys[j - 1], later[j - 1][1]
                x, y = (order_key(b, _load(b, ptr, dt, b.add(base, b.mul(p, stride))), dt)
                        for p in (a, pb))
            tie = fn.append_basic_block("tie")
            lt = fn.append_basic_block("not_less")
            b.cbranch(b.icmp_unsigned("<", x, y), yes, lt)
            b.position_at_end(lt)
            b.cbranch(b.icmp_unsigned(">", x, y), no, tie)
            b.position_at_end(tie)
        b.branch(no)
        return fn

    def is_less(self, b, base, ka, a, kb, pb):
        keys = [self.arg[self.step.inputs[k]] for k in range(1, self.step.num_keys)]
        return b.call(self.less, [*keys, base, ka, a, kb, pb])

    def emit(self):
        s, fn = self.step, self.fn
        lo, hi = fn.args[-2:]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.cells = {name: b.alloca(I64) for name in ("i", "j", "width")}
        self.bufs = {name: b.alloca(_PTR) for name in ("src", "srck", "dst", "dstk")}
        if self.n == 0 or s.rows == 0:
            b.ret_void()
            return self.slots, s.rows
        n = self.n
        part = b.udiv(lo, _c(s.rows_per_part))
        scratch = self.arg[s.scratch]

        def row_of(k):
            return b.gep(scratch, [b.add(b.mul(part, _c(4 * n)), _c(k * n))], inbounds=True,
                         source_etype=I64)
        perm, tmp, keys, tmpk = (row_of(k) for k in range(4))
        rows = _Loop(b, lo, hi)
        r = rows.i
        base = b.add(b.mul(b.udiv(r, _c(self.inner)), _c(n * self.inner)),
                     b.urem(r, _c(self.inner)))
        stride = _c(self.inner)
        key0, dt0 = self.arg[s.inputs[0]], s.dtypes[0]
        init = _Loop(b, _c(0), _c(n))
        b.store(init.i, b.gep(perm, [init.i], inbounds=True, source_etype=I64))
        value = _load(b, key0, dt0, b.add(base, b.mul(init.i, stride)))
        b.store(order_key(b, value, dt0), b.gep(keys, [init.i], inbounds=True, source_etype=I64))
        init.close()
        self.insertion_sort(b, base, perm, keys)
        for name, ptr in zip(("src", "srck", "dst", "dstk"), (perm, keys, tmp, tmpk),
                             strict=True):
            b.store(ptr, self.bufs[name])
        self.merge_passes(b, base)
        src = b.load(self.bufs["src"], typ=_PTR)
        for x, out, dt in zip(s.inputs, s.outputs, s.dtypes, strict=True):
            g = _Loop(b, _c(0), _c(n))
            p = b.load(b.gep(src, [g.i], inbounds=True, source_etype=I64), typ=I64)
            v = _load(b, self.arg[x], dt, b.add(base, b.mul(p, stride)))
            _store(b, self.arg[out], dt, b.add(base, b.mul(g.i, stride)), v)
            g.close()
        rows.close()
        b.ret_void()
        return self.slots, s.rows

    def insertion_sort(self, b, base, perm, keys):
        """Sort each run [start, start + RUN) of (perm, keys) in place, stably."""
        n = self.n
        runs = _Loop(b, _c(0), _c(n), RUN)
        start = runs.i
        end = _min(b, b.add(start, _c(RUN)), _c(n))
        outer = _Loop(b, b.add(start, _c(1)), end)
        p = b.load(b.gep(perm, [outer.i], inbounds=True, source_etype=I64), typ=I64)
        k = b.load(b.gep(keys, [outer.i], inbounds=True, source_etype=I64), typ=I64)
        j = self.cells["j"]
        b.store(outer.i, j)
        fn = b.function
        test, check, shift, place = (fn.append_basic_block(x) for x in
                                     ("test", "check", "shift", "place"))
        b.branch(test)
        b.position_at_end(test)
        jv = b.load(j, typ=I64)
        b.cbranch(b.icmp_signed(">", jv, start), check, place)
        b.position_at_end(check)
        prev = b.sub(jv, _c(1))
        pp = b.load(b.gep(perm, [prev], inbounds=True, source_etype=I64), typ=I64)
        pk = b.load(b.gep(keys, [prev], inbounds=True, source_etype=I64), typ=I64)
        b.cbranch(self.is_less(b, base, k, p, pk, pp), shift, place)
        b.position_at_end(shift)
        b.store(pp, b.gep(perm, [jv], inbounds=True, source_etype=I64))
        b.store(pk, b.gep(keys, [jv], inbounds=True, source_etype=I64))
        b.store(prev, j)
        b.branch(test)
        b.position_at_end(place)
        jv = b.load(j, typ=I64)
        b.store(p, b.gep(perm, [jv], inbounds=True, source_etype=I64))
        b.store(k, b.gep(keys, [jv], inbounds=True, source_etype=I64))
        outer.close()
        runs.close()

    def merge_passes(self, b, base):
        """Merge runs of ``width`` (RUN, 2 RUN, ...) from src into dst, swapping them."""
        n, fn, width = self.n, self.fn, self.cells["width"]
        b.store(_c(RUN), width)
        test, body, done = (fn.append_basic_block(x) for x in ("pass", "merge", "sorted"))
        b.branch(test)
        b.position_at_end(test)
        w = b.load(width, typ=I64)
        b.cbranch(b.icmp_signed("<", w, _c(n)), body, done)
        b.position_at_end(body)
        src, srck, dst, dstk = (b.load(self.bufs[x], typ=_PTR)
                                for x in ("src", "srck", "dst", "dstk"))
        pairs = _Loop(b, _c(0), _c(n), b.mul(w, _c(2)))
        start = pairs.i
        mid = _min(b, b.add(start, w), _c(n))
        end = _min(b, b.add(mid, w), _c(n))
        self.merge(b, base, (src, srck, dst, dstk), start, mid, end)
        pairs.close()
        for name, ptr in zip(("src", "srck", "dst", "dstk"), (dst, dstk, src, srck), strict=True):
            b.store(ptr, self.bufs[name])
        b.store(b.mul(w, _c(2)), width)
        b.branch(test)
        b.position_at_end(done)

    def merge(self, b, base, bufs, start, mid, end):
        """dst[start:end] = the stable merge of src[start:mid] and src[mid:end]."""
        src, srck, dst, dstk = bufs
        fn, i, j = self.fn, self.cells["i"], self.cells["j"]
        b.store(start, i)
        b.store(mid, j)
        out = _Loop(b, start, end)
        iv, jv = b.load(i, typ=I64), b.load(j, typ=I64)
        left = b.icmp_signed("<", iv, mid)
        right = b.icmp_signed("<", jv, end)
        only_right = b.not_(left)
        pre = b.block
        compare, move = fn.append_basic_block("compare"), fn.append_basic_block("move")
        b.cbranch(b.and_(left, right), compare, move)
        b.position_at_end(compare)
        pl = b.load(b.gep(src, [iv], inbounds=True, source_etype=I64), typ=I64)
        kl = b.load(b.gep(srck, [iv], inbounds=True, source_etype=I64), typ=I64)
        pr = b.load(b.gep(src, [jv], inbounds=True, source_etype=I64), typ=I64)
        kr = b.load(b.gep(srck, [jv], inbounds=True, source_etype=I64), typ=I64)
        take_both = self.is_less(b, base, kr, pr, kl, pl)
        compared = b.block
        b.branch(move)
        b.position_at_end(move)
        take_right = b.phi(I1)
        take_right.add_incoming(only_right, pre)
        take_right.add_incoming(take_both, compared)
        at = b.select(take_right, jv, iv)
        for s_, d_ in ((src, dst), (srck, dstk)):
            v = b.load(b.gep(s_, [at], inbounds=True, source_etype=I64), typ=I64)
            b.store(v, b.gep(d_, [out.i], inbounds=True, source_etype=I64))
        b.store(b.add(iv, b.zext(b.not_(take_right), I64)), i)
        b.store(b.add(jv, b.zext(take_right, I64)), j)
        out.close()


def emit_sort(module: ir.Module, name: str, step: Sort):
    """Add function ``name`` for ``step`` to ``module``: (the slots it takes, in order,
    and its row count, the range [lo, hi) splits)."""
    return _SortEmitter(module, name, step).emit()
