"""Emit the LLVM function of a :class:`~backends.planning.plan.Sort` step.

Every row (one index of the dimensions other than the sorted one) is sorted on its own:
a permutation of row positions is ordered by a stable bottom-up merge sort (insertion
sort for runs of ``RUN``), then every operand is gathered through it. The first key is
cached beside the permutation as an unsigned integer (32 or 64 bits) whose order is the
key's order, so the merges stream through memory; later keys are compared through the
permutation only on ties. Positions are i32 for rows shorter than 2**31. Every value is
handled as raw bits (an integer of its width), so float16 needs no F16C and non-key
operands of any dtype, complex included, are just moved.

Float order is NumPy's: NaN after everything (all NaNs equal, so stability keeps their
order), -0.0 equal to 0.0. The function takes ``(ptr per slot..., i64 lo, i64 hi)`` and
sorts rows [lo, hi) with the scratch part ``lo // rows_per_part`` (four rows of the
sorted length, 8 bytes an element: permutation, its merge buffer, cached keys, their
merge buffer), so threads that take parts of ``rows_per_part`` rows never share scratch.
"""

from __future__ import annotations

import math

import numpy as np
from functorch_core.ir.dtypes import dtype_kind
from llvmlite import ir

from ..planning.plan import Sort
from .ops import I1, I64

RUN = 16        # rows are insertion-sorted in runs of this many before merging
_PTR = ir.PointerType()


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


def key_type(dt: np.dtype):
    """The type of a cached first key: i32 for dtypes of up to 4 bytes, else i64."""
    return ir.IntType(32 if dt.itemsize <= 4 else 64)


def order_key(b, bits, dt: np.dtype):
    """An unsigned integer (of :func:`key_type`) whose order is NumPy's sort order of
    ``dt`` values with these bits."""
    width, kt = 8 * dt.itemsize, key_type(dt)
    if dtype_kind(dt) in "bu":
        return bits if width == kt.width else b.zext(bits, kt)
    if dtype_kind(dt) == "f":
        t = bits.type
        mantissa = np.finfo(dt).nmant
        magnitude = b.and_(bits, ir.Constant(t, (1 << (width - 1)) - 1))
        nan = b.icmp_unsigned(">", magnitude, ir.Constant(t, ((1 << (width - 1 - mantissa)) - 1)
                                                          << mantissa))
        negative = b.icmp_signed("<", bits, ir.Constant(t, 0))
        signed = b.select(negative, b.sub(ir.Constant(t, 0), magnitude), magnitude)
        bits = b.select(nan, ir.Constant(t, (1 << (width - 1)) - 1), signed)   # -0.0 -> 0
    wide = bits if width == kt.width else b.sext(bits, kt)
    return b.xor(wide, ir.Constant(kt, 1 << (kt.width - 1)))


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
        # cached keys and positions as narrow as they can be: less memory to stream
        self.kt = key_type(s.dtypes[0])
        self.it = ir.IntType(32 if self.n < 2**31 else 64)
        self.less = self._emit_less(module, name + "_less")

    def get(self, b, ptr, t, index):
        return b.load(b.gep(ptr, [index], inbounds=True, source_etype=t), typ=t)

    def put(self, b, ptr, t, index, value):
        b.store(value, b.gep(ptr, [index], inbounds=True, source_etype=t))

    def address(self, b, base, position):
        """Where a row position (of the index type) is in an operand."""
        return b.add(base, b.mul(b.zext(position, I64) if self.it != I64 else position,
                                 _c(self.inner)))

    def _emit_less(self, module, name):
        """``less(ptr key..., i64 base, ka, a, kb, b)``: whether position ``a`` (cached
        first key ``ka``) sorts before ``b``; later keys decide ties, in order."""
        s = self.step
        later = [(s.inputs[k], s.dtypes[k]) for k in range(1, s.num_keys)]
        kt, it = self.kt, self.it
        fn = ir.Function(module, ir.FunctionType(I1, [_PTR] * len(later) + [I64, kt, it, kt, it]),
                         name)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        *keys, base, ka, a, kb, pb = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        yes, no = fn.append_basic_block("yes"), fn.append_basic_block("no")
        for block, value in ((yes, 1), (no, 0)):
            ir.IRBuilder(block).ret(ir.Constant(I1, value))
        for j in range(1 + len(later)):
            x, y = ka, kb
            if j:
                ptr, dt = keys[j - 1], later[j - 1][1]
                x, y = (order_key(b, _load(b, ptr, dt, self.address(b, base, p)), dt)
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
        self.put(b, perm, self.it, init.i, b.trunc(init.i, self.it) if self.it != I64 else init.i)
        value = _load(b, key0, dt0, b.add(base, b.mul(init.i, stride)))
        self.put(b, keys, self.kt, init.i, order_key(b, value, dt0))
        init.close()
        self.insertion_sort(b, base, perm, keys)
        for name, ptr in zip(("src", "srck", "dst", "dstk"), (perm, keys, tmp, tmpk),
                             strict=True):
            b.store(ptr, self.bufs[name])
        self.merge_passes(b, base)
        src = b.load(self.bufs["src"], typ=_PTR)
        for x, out, dt in zip(s.inputs, s.outputs, s.dtypes, strict=True):
            g = _Loop(b, _c(0), _c(n))
            p = self.get(b, src, self.it, g.i)
            v = _load(b, self.arg[x], dt, self.address(b, base, p))
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
        p, k = self.get(b, perm, self.it, outer.i), self.get(b, keys, self.kt, outer.i)
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
        pp, pk = self.get(b, perm, self.it, prev), self.get(b, keys, self.kt, prev)
        b.cbranch(self.is_less(b, base, k, p, pk, pp), shift, place)
        b.position_at_end(shift)
        self.put(b, perm, self.it, jv, pp)
        self.put(b, keys, self.kt, jv, pk)
        b.store(prev, j)
        b.branch(test)
        b.position_at_end(place)
        jv = b.load(j, typ=I64)
        self.put(b, perm, self.it, jv, p)
        self.put(b, keys, self.kt, jv, k)
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
        """dst[start:end] = the stable merge of src[start:mid] and src[mid:end] (a plain
        copy when the halves are already in order)."""
        src, srck, dst, dstk = bufs
        fn, i, j, it, kt = self.fn, self.cells["i"], self.cells["j"], self.it, self.kt
        b.store(start, i)
        b.store(mid, j)
        check, head, body, tail = (fn.append_basic_block(x) for x in
                                   ("check", "head", "step", "tail"))
        b.cbranch(b.icmp_signed("<", mid, end), check, tail)
        b.position_at_end(check)
        last = b.sub(mid, _c(1))
        first_right = (self.get(b, srck, kt, mid), self.get(b, src, it, mid))
        last_left = (self.get(b, srck, kt, last), self.get(b, src, it, last))
        ordered = b.not_(self.is_less(b, base, *first_right, *last_left))
        b.cbranch(ordered, tail, head)
        b.position_at_end(head)
        iv, jv = b.load(i, typ=I64), b.load(j, typ=I64)
        both = b.and_(b.icmp_signed("<", iv, mid), b.icmp_signed("<", jv, end))
        b.cbranch(both, body, tail)
        b.position_at_end(body)
        pl, kl = self.get(b, src, it, iv), self.get(b, srck, kt, iv)
        pr, kr = self.get(b, src, it, jv), self.get(b, srck, kt, jv)
        right = self.is_less(b, base, kr, pr, kl, pl)
        at = b.sub(b.add(iv, jv), mid)
        self.put(b, dst, it, at, b.select(right, pr, pl))
        self.put(b, dstk, kt, at, b.select(right, kr, kl))
        b.store(b.add(iv, b.zext(b.not_(right), I64)), i)
        b.store(b.add(jv, b.zext(right, I64)), j)
        b.branch(head)
        b.position_at_end(tail)
        iv, jv = b.load(i, typ=I64), b.load(j, typ=I64)
        # what is left of one half lands right after the merged part
        for lo, hi, shift in ((iv, mid, b.sub(jv, mid)), (jv, end, _c(0))):
            rest = _Loop(b, lo, hi)
            to = b.add(rest.i, shift)
            self.put(b, dst, it, to, self.get(b, src, it, rest.i))
            self.put(b, dstk, kt, to, self.get(b, srck, kt, rest.i))
            rest.close()


def emit_sort(module: ir.Module, name: str, step: Sort):
    """Add function ``name`` for ``step`` to ``module``: (the slots it takes, in order,
    and its row count, the range [lo, hi) splits)."""
    return _SortEmitter(module, name, step).emit()
