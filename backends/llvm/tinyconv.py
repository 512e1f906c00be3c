"""Small convolutions as one native loop nest: no gemm, no packing in Python.

For a conv of few multiply-adds (``TINY_MAX_MACS``) the gemm modes of ``conv.py`` spend
their time in NumPy calls around the gemm (a zero grid, transposes, a strided packing
copy, the output's transposed copy), not in the gemm. Here the whole conv is one native
function with every shape, stride and layout a constant:

1. when there is padding or input dilation, the input is copied into a zero-padded,
   dilated ``(N, C, *grid)`` scratch on the native stack (at most ``TINY_MAX_SCRATCH``
   bytes: a bigger one takes the gemm modes, so no allocation can fail here);
2. each output row is accumulated in a small local array, along whichever is longer of
   the output's last spatial dimension (*outputs* order: the forward conv, the input
   gradient) and the kernel's last spatial dimension (*kernel* order: the kernel gradient,
   whose "kernel" is the cotangent image; its lanes are summed in order at the end).

The loop order, hence the rounding, is fixed by the shapes alone (no threads, no
blocking that depends on the machine). Feature groups and batch groups pick the input
feature and image per output feature; any dimension_numbers are strides of the operands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from functorch_core.ir import dtypes
from llvmlite import ir

from .narrowing import bf16_bits, bf16_to_f32

# the most multiply-adds of a conv run here. benchmarks/tinyconv.py (one process, OpenBLAS
# at one thread): native / gemm modes 0.07 (cnn_digits' forward, 0.59M MACs), 0.16 (its
# kernel gradient), 0.3-0.5 at 2.4-9.4M, 0.4-0.6 at 14-19M, 0.6-1.0 at 38M; the gemm modes
# split over threads from conv.SPLIT_MACS (1 << 24), this loop nest never does
TINY_MAX_MACS = 1 << 24
# the longest accumulator row (elements, on the native stack)
TINY_MAX_ROW = 1024
# the biggest padded input copy (bytes, on the native stack; a Python thread's stack is
# 8 MiB on Linux): cnn_digits' forward conv needs 25.6 kB
TINY_MAX_SCRATCH = 1 << 18

_I64 = ir.IntType(64)
_PTR = ir.PointerType()
# bfloat16 computes in float: its input widens into the scratch copy, its result rounds once
_TYPES = {np.dtype(np.float32): ir.FloatType(), np.dtype(np.float64): ir.DoubleType(),
          dtypes.bfloat16: ir.FloatType()}
_I16 = ir.IntType(16)


def _c_strides(shape):
    return [math.prod(shape[j + 1:]) for j in range(len(shape))]


@dataclass(frozen=True)
class TinyConv:
    """One conv_general_dilated of fixed shapes for :func:`emit`; ``slots`` are the lhs,
    rhs and output slots of the plan step it replaces."""

    slots: tuple
    lhs_shape: tuple
    rhs_shape: tuple
    out_shape: tuple
    dtype: np.dtype
    window_strides: tuple
    padding: tuple
    lhs_dilation: tuple
    rhs_dilation: tuple
    dimension_numbers: tuple
    feature_group_count: int
    batch_group_count: int

    @property
    def spatial(self):
        lspec, rspec, ospec = self.dimension_numbers
        sizes = [self.lhs_shape[a] for a in lspec[2:]]
        kernel = [self.rhs_shape[a] for a in rspec[2:]]
        out = [self.out_shape[a] for a in ospec[2:]]
        return sizes, kernel, out

    @property
    def grid(self):
        sizes, _, _ = self.spatial
        return [0 if d == 0 else (d - 1) * ld + 1 + lo + hi for d, ld, (lo, hi) in
                zip(sizes, self.lhs_dilation, self.padding, strict=True)]

    @property
    def padded(self):
        """Whether the input goes through the padded, dilated scratch copy."""
        return any(p != (0, 0) for p in self.padding) or any(
            d != 1 for d in self.lhs_dilation) or self.dtype == dtypes.bfloat16

    @property
    def scratch_bytes(self):
        """The size of the padded, dilated input copy (0 without one)."""
        if not self.padded:
            return 0
        lspec = self.dimension_numbers[0]
        return self.lhs_shape[lspec[0]] * self.lhs_shape[lspec[1]] * math.prod(self.grid) * \
            dtypes.compute_dtype(self.dtype).itemsize

    @property
    def macs(self):
        _, rspec, ospec = self.dimension_numbers
        _, kernel, out = self.spatial
        return (self.out_shape[ospec[0]] * self.out_shape[ospec[1]]
                * self.rhs_shape[rspec[1]] * math.prod(kernel) * math.prod(out))

    @property
    def kernel_order(self):
        """Accumulate along the kernel's last dimension (else along the output's)."""
        _, kernel, out = self.spatial
        return kernel[-1] > out[-1]


def plan(step, out_shape, dtype) -> TinyConv | None:
    """A :class:`TinyConv` for the plan's Conv ``step`` when it runs here (small, float32
    or float64, slot operands, at least one spatial dimension, nothing empty), else None."""
    dtype = np.dtype(dtype)
    if dtype not in _TYPES or step.lhs[0] != "slot" or step.rhs[0] != "slot":
        return None
    p = step.params
    conv = TinyConv((step.lhs[1], step.rhs[1], step.out), tuple(step.lhs[2]),
                    tuple(step.rhs[2]), tuple(out_shape), dtype,
                    tuple(p["window_strides"]), tuple(tuple(x) for x in p["padding"]),
                    tuple(p["lhs_dilation"]), tuple(p["rhs_dilation"]),
                    tuple(tuple(s) for s in p["dimension_numbers"]),
                    p["feature_group_count"], p["batch_group_count"])
    sizes, kernel, out = conv.spatial
    if not sizes or 0 in conv.lhs_shape or 0 in conv.rhs_shape or 0 in conv.out_shape:
        return None
    row = kernel[-1] if conv.kernel_order else out[-1]
    if conv.macs > TINY_MAX_MACS or row > TINY_MAX_ROW or conv.scratch_bytes > TINY_MAX_SCRATCH:
        return None
    return conv


class _Emitter:
    def __init__(self, module, name, conv: TinyConv):
        self.conv = conv
        self.ft = _TYPES[conv.dtype]
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR] * 3 + [_I64, _I64]),
                         name)
        for a in fn.args[:3]:
            a.add_attribute("noalias")
        self.lhs, self.rhs, self.out = fn.args[:3]
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)

    def const(self, v):
        return ir.Constant(_I64, v)

    def loops(self, counts, body, index=()):
        """Nested loops over ``counts`` (positive Python ints) around ``body(indices)``."""
        if not counts:
            body(list(index))
            return
        b = self.b
        pre = b.block
        head, done = b.append_basic_block("head"), b.append_basic_block("done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(_I64)
        i.add_incoming(self.const(0), pre)
        self.loops(counts[1:], body, (*index, i))
        nxt = b.add(i, self.const(1))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, self.const(counts[0])), head, done)
        b.position_at_end(done)

    def offset(self, terms):
        """sum(index * stride) over ``terms`` ((index, stride), index an i64 value or a
        Python int)."""
        b, total = self.b, self.const(0)
        for index, stride in terms:
            if stride == 0:
                continue
            if isinstance(index, int):
                total = b.add(total, self.const(index * stride))
            else:
                total = b.add(total, b.mul(index, self.const(stride)))
        return total

    def at(self, base, offset):
        return self.b.gep(base, [offset], source_etype=self.ft)

    def read(self, base, offset):
        """An operand's element (a bf16 one widened)."""
        b = self.b
        if self.conv.dtype != dtypes.bfloat16:
            return b.load(self.at(base, offset), typ=self.ft)
        return bf16_to_f32(b, b.load(b.gep(base, [offset], source_etype=_I16), typ=_I16))

    def write(self, value, offset):
        """A result element (a bf16 one rounded once)."""
        b = self.b
        if self.conv.dtype != dtypes.bfloat16:
            return b.store(value, self.at(self.out, offset))
        return b.store(bf16_bits(b, value), b.gep(self.out, [offset], source_etype=_I16))

    def emit(self):
        c = self.conv
        b = self.b
        lspec, rspec, ospec = c.dimension_numbers
        sizes, kernel, out_sp = c.spatial
        ls, rs, os_ = (_c_strides(s) for s in (c.lhs_shape, c.rhs_shape, c.out_shape))
        n_in, ch = c.lhs_shape[lspec[0]], c.lhs_shape[lspec[1]]
        n_out, o_n = c.out_shape[ospec[0]], c.out_shape[ospec[1]]
        i_n = c.rhs_shape[rspec[1]]
        G, B = c.feature_group_count, c.batch_group_count
        per_block = o_n // (G * B)
        row = kernel[-1] if c.kernel_order else out_sp[-1]
        acc = b.alloca(self.ft, size=self.const(row))
        # the source of the windows: (pointer, image stride, feature stride, spatial strides)
        if c.padded:
            grid = c.grid
            gstr = _c_strides([n_in, ch, *grid])
            count = n_in * ch * math.prod(grid)
            src = b.alloca(self.ft, size=self.const(count))      # still in the entry block
            zero = ir.Constant(self.ft, 0.0)
            self.loops([count], lambda ix: b.store(zero, self.at(src, ix[0])))
            firsts, lasts = [], []
            for d, ld, (lo, _), g in zip(sizes, c.lhs_dilation, c.padding, grid, strict=True):
                firsts.append(max(0, -(lo // ld)))
                lasts.append(min(d, (g - lo + ld - 1) // ld))
            if all(hi > lo for lo, hi in zip(firsts, lasts, strict=True)):
                def copy(ix):
                    n, f, *js = ix
                    js = [b.add(j, self.const(first)) for j, first in zip(js, firsts, strict=True)]
                    read = self.offset([(n, ls[lspec[0]]), (f, ls[lspec[1]])]
                                       + [(j, ls[a]) for j, a in zip(js, lspec[2:], strict=True)])
                    write = self.offset(
                        [(n, gstr[0]), (f, gstr[1])]
                        + [(lo, g) for (lo, _), g in zip(c.padding, gstr[2:], strict=True)]
                        + [(j, ld * g) for j, ld, g in zip(js, c.lhs_dilation, gstr[2:],
                                                            strict=True)])
                    b.store(self.read(self.lhs, read), self.at(src, write))
                self.loops([n_in, ch, *(hi - lo for lo, hi in zip(firsts, lasts, strict=True))],
                           copy)
            s_n, s_c, s_sp = gstr[0], gstr[1], gstr[2:]
        else:
            src, s_n, s_c = self.lhs, ls[lspec[0]], ls[lspec[1]]
            s_sp = [ls[a] for a in lspec[2:]]
        r_o, r_i, r_sp = rs[rspec[0]], rs[rspec[1]], [rs[a] for a in rspec[2:]]
        o_st, o_sp = (os_[ospec[0]], os_[ospec[1]]), [os_[a] for a in ospec[2:]]
        strides, rdil = c.window_strides, c.rhs_dilation
        zero = ir.Constant(self.ft, 0.0)

        def output(ix):
            n, o, *ps = ix
            blk = b.udiv(o, self.const(per_block))
            image = b.add(n, b.mul(blk, self.const(n_out))) if B > 1 else n
            self.loops([row], lambda q: b.store(zero, self.at(acc, q[0])))
            # the output row is (n, o, *ps) in outputs order, (n, o, *ps, p_last) in kernel
            # order; the contraction loops over in features and the taps left
            taps = kernel if not c.kernel_order else kernel[:-1]

            def tap(jx):
                i, *ks = jx
                feature = b.add(i, b.mul(blk, self.const(i_n))) if G > 1 else i
                w = self.offset([(o, r_o), (i, r_i)]
                                + [(k, s) for k, s in zip(ks, r_sp, strict=False)])
                pos = [b.add(b.mul(p, self.const(st)), b.mul(k, self.const(rd)))
                       for p, k, st, rd in zip(ps, ks, strides, rdil, strict=False)]
                if c.kernel_order:
                    pos.append(b.mul(ps[-1], self.const(strides[-1])))
                    step_src, step_w = rdil[-1] * s_sp[-1], r_sp[-1]
                else:
                    pos.append(b.mul(ks[-1], self.const(rdil[-1])))
                    step_src, step_w = strides[-1] * s_sp[-1], 0
                    wv = self.read(self.rhs, w)
                base = self.offset([(image, s_n), (feature, s_c)]
                                   + [(p, s) for p, s in zip(pos, s_sp, strict=True)])

                def lane(q):
                    q = q[0]
                    x = b.load(self.at(src, b.add(base, b.mul(q, self.const(step_src)))),
                               typ=self.ft)
                    if c.kernel_order:
                        wq = self.read(self.rhs, b.add(w, b.mul(q, self.const(step_w))))
                    else:
                        wq = wv
                    cell = self.at(acc, q)
                    b.store(b.fadd(b.load(cell, typ=self.ft), b.fmul(x, wq)), cell)
                self.loops([row], lane)
            self.loops([i_n, *taps], tap)
            where = [(n, o_st[0]), (o, o_st[1])] + [(p, s) for p, s in
                                                   zip(ps, o_sp, strict=False)]
            if c.kernel_order:
                total = b.load(self.at(acc, self.const(0)), typ=self.ft)
                for q in range(1, row):
                    total = b.fadd(total, b.load(self.at(acc, self.const(q)), typ=self.ft))
                self.write(total, self.offset(where))
            else:
                base = self.offset(where)
                self.loops([row], lambda q: self.write(
                    b.load(self.at(acc, q[0]), typ=self.ft),
                    b.add(base, b.mul(q[0], self.const(o_sp[-1])))))

        self.loops([n_out, o_n, *(out_sp if c.kernel_order else out_sp[:-1])], output)
        b.ret_void()


def emit(module: ir.Module, name: str, conv: TinyConv):
    """Add function ``name(lhs, rhs, out, lo, hi)`` (data pointers; lo and hi unused) for
    ``conv`` to ``module``; returns its slots and None (it never splits)."""
    _Emitter(module, name, conv).emit()
    return conv.slots, None
