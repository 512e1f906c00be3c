"""conv_general_dilated as native code in a shared library (``aot.py``).

One internal function per conv step, ``int conv(const T *lhs, const T *rhs, T *out)``: it
takes one scratch buffer with ``malloc`` (returning 3 when it cannot), packs the kernel
once as ``(groups, out features per group, in features per group * taps)`` rows, and then
for each image and feature group packs the input's columns ``(in features per group *
taps, output positions)`` (padding, strides and both dilations applied while packing: a
position outside the input reads 0) and calls ?gemm once: ``out = kernel @ columns``.
With a channel-first, C-contiguous result (``ospec`` the identity) ?gemm writes straight
into the output; otherwise into a block that is then scattered by the output's strides.

Any layout of the three operands (``dimension_numbers``), any number of spatial
dimensions, ``feature_group_count``; float32 and float64. ``batch_group_count > 1`` (only
kernel gradients have it) and other dtypes are refused by :func:`refusal`.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from . import irloop

I8, I32, I64, PTR = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType()


def _strides(shape):
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


class Geometry:
    """The sizes and element strides of one conv step (C-contiguous operands)."""

    def __init__(self, lhs_shape, rhs_shape, out_shape, dtype, params):
        self.dtype = np.dtype(dtype)
        lspec, rspec, ospec = params["dimension_numbers"]
        ls, rs, os_ = _strides(lhs_shape), _strides(rhs_shape), _strides(out_shape)
        self.n, self.c = lhs_shape[lspec[0]], lhs_shape[lspec[1]]
        self.o = rhs_shape[rspec[0]]
        self.groups = params["feature_group_count"]
        self.cg, self.og = self.c // self.groups, self.o // self.groups
        self.kernel = [rhs_shape[a] for a in rspec[2:]]
        self.sizes = [lhs_shape[a] for a in lspec[2:]]
        self.outs = [out_shape[a] for a in ospec[2:]]
        self.taps, self.positions = math.prod(self.kernel), math.prod(self.outs)
        self.k = self.cg * self.taps
        self.lstride = (ls[lspec[0]], ls[lspec[1]], [ls[a] for a in lspec[2:]])
        self.rstride = (rs[rspec[0]], rs[rspec[1]], [rs[a] for a in rspec[2:]])
        self.ostride = (os_[ospec[0]], os_[ospec[1]], [os_[a] for a in ospec[2:]])
        self.window_strides = list(params["window_strides"])
        self.pad_lo = [lo for lo, _ in params["padding"]]
        self.ldil, self.rdil = list(params["lhs_dilation"]), list(params["rhs_dilation"])
        self.direct = tuple(ospec) == tuple(range(len(out_shape)))
        self.batch_groups = params["batch_group_count"]

    def scratch_elements(self):
        block = 0 if self.direct else self.og * self.positions
        return self.groups * self.og * self.k + self.k * self.positions + block


def refusal(dtype, params) -> str | None:
    """Why a conv of ``dtype`` with ``params`` cannot be native library code, or None."""
    if np.dtype(dtype).char not in "fd":
        return (f"conv_general_dilated on {np.dtype(dtype).name} (the library's native "
                "convolution is float32 or float64)")
    if params["batch_group_count"] != 1:
        return ("conv_general_dilated with batch_group_count > 1 (a kernel gradient; the "
                "library's native convolution is the forward kind)")
    return None


def _const(v):
    return ir.Constant(I64, v)


def _dot(b, terms, start=0):
    """``start + sum(i * stride)`` over (i64 value, int stride) pairs."""
    acc = _const(start)
    for i, s in terms:
        if s:
            acc = b.add(acc, b.mul(i, _const(s)))
    return acc


def emit_conv(module, fname, geo: Geometry, gemm) -> ir.Function:
    """The internal ``i32 fname(ptr lhs, ptr rhs, ptr out)`` for ``geo``, calling ``gemm``
    (the library's ?gemm wrapper for the dtype: 13 pointer arguments, Fortran order)."""
    elt = ir.FloatType() if geo.dtype.char == "f" else ir.DoubleType()
    zero = ir.Constant(elt, 0.0)
    fn = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, PTR]), fname)
    fn.linkage = "internal"
    lhs, rhs, out = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    malloc = irloop.declare(module, "malloc", PTR, [I64])
    free = irloop.declare(module, "free", ir.VoidType(), [PTR])

    def at(base, index):
        return b.gep(base, [index], source_etype=elt)

    n_trans = irloop.cell(b, I8, ord("N"))
    one, nought = irloop.cell(b, elt, 1.0), irloop.cell(b, elt, 0.0)
    m, n, k = (irloop.cell(b, I64, v) for v in (geo.positions, geo.og, geo.k))
    lda, ldb, ldc = (irloop.cell(b, I64, max(v, 1)) for v in (geo.positions, geo.k, geo.positions))
    if min(geo.n, geo.o, geo.positions) == 0:
        b.ret(ir.Constant(I32, 0))
        return fn
    if geo.k == 0:      # no in features: every output is an empty sum
        irloop.nest(b, [geo.n * geo.o * geo.positions], lambda i: b.store(zero, at(out, i)))
        b.ret(ir.Constant(I32, 0))
        return fn
    raw = b.call(malloc, [_const(max(geo.scratch_elements(), 1) * geo.dtype.itemsize)])
    with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)), likely=False):
        b.ret(ir.Constant(I32, 3))
    packed = raw
    columns = at(raw, _const(geo.groups * geo.og * geo.k))
    block = at(columns, _const(geo.k * geo.positions))

    # the kernel as (group, out feature, in feature * taps + tap) rows
    ro, ri, rsp = geo.rstride
    tap_strides = _strides(geo.kernel)

    def pack_kernel(g, o, c, *t):
        feature = b.add(b.mul(g, _const(geo.og)), o)
        src = _dot(b, [(feature, ro), (c, ri), *zip(t, rsp, strict=True)])
        row = _dot(b, [(g, geo.og * geo.k), (o, geo.k), (c, geo.taps),
                       *zip(t, tap_strides, strict=True)])
        b.store(b.load(at(rhs, src), typ=elt), at(packed, row))
    irloop.nest(b, [geo.groups, geo.og, geo.cg, *geo.kernel], pack_kernel)

    lb, lc, lsp = geo.lstride
    ob, oc, osp = geo.ostride
    pos_strides = _strides(geo.outs)

    def image_group(img, g):
        base = _dot(b, [(img, lb), (b.mul(g, _const(geo.cg)), lc)])

        def pack_column(c, *rest):
            t, p = rest[:len(geo.kernel)], rest[len(geo.kernel):]
            ok, src = ir.Constant(ir.IntType(1), 1), b.add(base, b.mul(c, _const(lc)))
            for d, (ti, pi) in enumerate(zip(t, p, strict=True)):
                q = b.sub(b.add(b.mul(pi, _const(geo.window_strides[d])),
                                b.mul(ti, _const(geo.rdil[d]))), _const(geo.pad_lo[d]))
                extent = (geo.sizes[d] - 1) * geo.ldil[d] + 1
                ok = b.and_(ok, b.and_(b.icmp_signed(">=", q, _const(0)),
                                       b.icmp_signed("<", q, _const(extent))))
                if geo.ldil[d] > 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(q, _const(geo.ldil[d])),
                                                  _const(0)))
                    q = b.sdiv(q, _const(geo.ldil[d]))
                src = b.add(src, b.mul(q, _const(lsp[d])))
            safe = b.select(ok, src, base)
            v = b.select(ok, b.load(at(lhs, safe), typ=elt), zero)
            row = _dot(b, [(c, geo.taps), *zip(t, tap_strides, strict=True)])
            col = _dot(b, list(zip(p, pos_strides, strict=True)))
            b.store(v, at(columns, b.add(b.mul(row, _const(geo.positions)), col)))
        irloop.nest(b, [geo.cg, *geo.kernel, *geo.outs], pack_column)

        first = b.mul(g, _const(geo.og))
        if geo.direct:
            dst = at(out, b.add(b.mul(img, _const(geo.o * geo.positions)),
                                b.mul(first, _const(geo.positions))))
        else:
            dst = block
        weights = at(packed, b.mul(g, _const(geo.og * geo.k)))
        # row-major (og, P) = (og, K) @ (K, P) is column-major (P, og) = (P, K) @ (K, og)
        b.call(gemm, [n_trans, n_trans, m, n, k, one, columns, lda, weights, ldb, nought,
                      dst, ldc])
        if not geo.direct:
            def scatter(o, *p):
                feature = b.add(first, o)
                dst_i = _dot(b, [(img, ob), (feature, oc), *zip(p, osp, strict=True)])
                src_i = _dot(b, [(o, geo.positions), *zip(p, pos_strides, strict=True)])
                b.store(b.load(at(block, src_i), typ=elt), at(out, dst_i))
            irloop.nest(b, [geo.og, *geo.outs], scatter)
    irloop.nest(b, [geo.n, geo.groups], image_group)
    b.call(free, [raw])
    b.ret(ir.Constant(I32, 0))
    return fn
