"""bfloat16 dot_general: float32 accumulation, one rounding to bf16.

NumPy's bundled OpenBLAS exports no ``sbgemm``, so the product is a kernel of our own on
AVX-512 BF16's ``vdpbf16ps`` (``llvm.x86.avx512bf16.dpbf16ps.512``: 16 float lanes, each
adding the products of a pair of bf16 values): the lhs, padded to whole row blocks and an
even depth, is read in place; each call packs its panels of ``NR`` rhs columns, in which the
two rows of a depth pair interleave (``(k/2, NR, 2)``, the layout the instruction takes).
A register tile of ``MR`` rows x ``NR`` columns (``MR * NV`` zmm accumulators) runs over
the whole depth; each result is rounded once from float32 to bf16 (nearest even, NaN
quiet, as ml_dtypes). Panels split over the runtime's threads (the call releases the GIL).

``vdpbf16ps`` treats subnormal inputs as zero and flushes subnormal results to zero, and
rounds each of its adds to nearest even. Operands holding a subnormal (|x| < 2**-126, found
by one pass over their bits) take the widening path, so the product is within float32
accumulation error of the exact one before its final rounding, but for partial sums below
2**-126, which flush to zero (an absolute error under k * 2**-126).

Without the instructions (or with ``FUNCTORCH_CORE_BF16_GEMM=widen``, or
:data:`force_widen` set), operands widen exactly to float32 and go through the float32
BLAS path; the float32 result is rounded once to bf16.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import os
import threading

import numpy as np
from functorch_core.ir import dtypes
from llvmlite import binding as llvm

from . import bf16_cast, engine
from .blas import DotGeneral, run_in_turn

MR, NV = 4, 4           # register tile: 4 rows x 64 columns, 16 zmm accumulators
NR = 16 * NV
SYMBOL = "fc_bf16_gemm"
SPLIT_MACS = 1 << 22    # below this a product runs on the calling thread
force_widen = False     # tests: take the widening path on any CPU
_lock = threading.Lock()
_BF16, _F32 = dtypes.bfloat16, np.dtype(np.float32)


def host_has_bf16() -> bool:
    """Whether this CPU has AVX-512 BF16 (and AVX-512F), as LLVM reads the host."""
    f = llvm.get_host_cpu_features()
    return bool(f.get("avx512bf16", False) and f.get("avx512f", False))


def native() -> bool:
    """Whether bf16 products take the ``vdpbf16ps`` kernel here (else: widened)."""
    return not force_widen and os.environ.get("FUNCTORCH_CORE_BF16_GEMM") != "widen" \
        and host_has_bf16()


def path() -> str:
    """The instruction path bf16 products take on this host (for reports and profiles)."""
    return "vdpbf16ps (AVX-512 BF16)" if native() else "widened to float32 (sgemm)"


def _round_store(lines, acc, ptr, t):
    """IR: ``acc`` (<16 x float>) rounded to bf16 (nearest even, NaN 0x7fc0 signed), stored."""
    ops = [f"%x{t} = bitcast <16 x float> {acc} to <16 x i32>",
           f"%h{t} = lshr <16 x i32> %x{t}, splat (i32 16)",
           f"%lsb{t} = and <16 x i32> %h{t}, splat (i32 1)",
           f"%bias{t} = add <16 x i32> %lsb{t}, splat (i32 32767)",
           f"%sum{t} = add <16 x i32> %x{t}, %bias{t}",
           f"%rnd{t} = lshr <16 x i32> %sum{t}, splat (i32 16)",
           f"%mag{t} = and <16 x i32> %x{t}, splat (i32 2147483647)",
           f"%nan{t} = icmp ugt <16 x i32> %mag{t}, splat (i32 2139095040)",
           f"%sgn{t} = and <16 x i32> %h{t}, splat (i32 32768)",
           f"%q{t} = or <16 x i32> %sgn{t}, splat (i32 32704)",
           f"%sel{t} = select <16 x i1> %nan{t}, <16 x i32> %q{t}, <16 x i32> %rnd{t}",
           f"%o{t} = trunc <16 x i32> %sel{t} to <16 x i16>",
           f"store <16 x i16> %o{t}, ptr {ptr}, align 2"]
    lines += ["  " + op for op in ops]


def _pack_ir() -> list[str]:
    """IR: the panel ``%pn``'s columns of B (k x ldb bf16, rows in pairs) into its place in
    Bp (``(k_pairs, NR)`` words of two bf16: row 2p low, row 2p + 1 high), zeros beyond k
    and n; whole pairs of whole panels as vectors."""
    inter = ", ".join(f"i32 {j}, i32 {j + NR}" for j in range(NR))
    return [
        f"  %pend = add i64 %ccol, {NR}", "  %full = icmp ule i64 %pend, %n",
        "  br label %pack", "pack:",
        "  %pp = phi i64 [ 0, %panel ], [ %pp.next, %pack.next ]",
        "  %pr0 = shl i64 %pp, 1", "  %pr1 = add i64 %pr0, 1",
        "  %has1 = icmp ult i64 %pr1, %k", "  %fast = and i1 %full, %has1",
        f"  %dst.0 = mul i64 %pp, {NR}", "  %dst = add i64 %dst.0, %bpanel",
        "  %dstp = getelementptr i32, ptr %Bp, i64 %dst",
        "  %s0.0 = mul i64 %pr0, %n", "  %s0 = add i64 %s0.0, %ccol",
        "  br i1 %fast, label %pack.fast, label %pack.slow", "pack.fast:",
        "  %s1 = add i64 %s0, %n",
        "  %p0 = getelementptr i16, ptr %B, i64 %s0", "  %p1 = getelementptr i16, ptr %B, i64 %s1",
        f"  %v0 = load <{NR} x i16>, ptr %p0, align 2",
        f"  %v1 = load <{NR} x i16>, ptr %p1, align 2",
        f"  %vi = shufflevector <{NR} x i16> %v0, <{NR} x i16> %v1, <{2 * NR} x i32> <{inter}>",
        f"  store <{2 * NR} x i16> %vi, ptr %dstp, align 4", "  br label %pack.next",
        "pack.slow:", "  br label %slow", "slow:",
        "  %c = phi i64 [ 0, %pack.slow ], [ %c.next, %slow ]",
        "  %col = add i64 %ccol, %c", "  %inb = icmp ult i64 %col, %n",
        "  %in1 = and i1 %inb, %has1",
        "  %i0.0 = add i64 %s0, %c", "  %i0 = select i1 %inb, i64 %i0.0, i64 0",
        "  %i1.0 = add i64 %i0.0, %n", "  %i1 = select i1 %in1, i64 %i1.0, i64 0",
        "  %q0 = getelementptr i16, ptr %B, i64 %i0", "  %q1 = getelementptr i16, ptr %B, i64 %i1",
        "  %e0 = load i16, ptr %q0, align 2", "  %e1 = load i16, ptr %q1, align 2",
        "  %w0.0 = zext i16 %e0 to i32", "  %w1.0 = zext i16 %e1 to i32",
        "  %w0 = select i1 %inb, i32 %w0.0, i32 0", "  %w1 = select i1 %in1, i32 %w1.0, i32 0",
        "  %w1s = shl i32 %w1, 16", "  %w = or i32 %w0, %w1s",
        "  %wp = getelementptr i32, ptr %dstp, i64 %c", "  store i32 %w, ptr %wp, align 4",
        "  %c.next = add i64 %c, 1", f"  %c.more = icmp ult i64 %c.next, {NR}",
        "  br i1 %c.more, label %slow, label %pack.next", "pack.next:",
        "  %pp.next = add i64 %pp, 1", "  %pp.more = icmp ult i64 %pp.next, %kp",
        "  br i1 %pp.more, label %pack, label %rows.start", "rows.start:", "  br label %rows"]


def kernel_ir() -> str:
    """The kernel's IR text (llvmlite.ir has no bfloat type): ``fc_bf16_gemm(A, B, Bp, C,
    row_blocks, k, n, panel_lo, panel_hi)`` packs B's (k x n bf16) column panels
    [panel_lo, panel_hi) into Bp (their places in ``(panels, k_pairs, NR)`` words) and
    computes them for every row block; A is (row_blocks * MR, 2 * k_pairs) bf16, C
    (row_blocks * MR, panels * NR) bf16."""
    dp = "@llvm.x86.avx512bf16.dpbf16ps.512"
    lines = [f"declare <16 x float> {dp}(<16 x float>, <32 x bfloat>, <32 x bfloat>)",
             f"define void @{SYMBOL}(ptr noalias %A, ptr noalias %B, ptr noalias %Bp, "
             "ptr noalias %C, i64 %mblocks, i64 %k, i64 %n, i64 %lo, i64 %hi) #0 {",
             "entry:", "  %k1 = add i64 %k, 1", "  %kp = lshr i64 %k1, 1",
             f"  %np.0 = add i64 %n, {NR - 1}", f"  %np.1 = udiv i64 %np.0, {NR}",
             f"  %ldc = mul i64 %np.1, {NR}", "  %lda2 = add i64 %kp, 0",
             "  br label %panel", "panel:",
             "  %pn = phi i64 [ %lo, %entry ], [ %pn.next, %panel.end ]",
             "  %bpanel.w = mul i64 %pn, %kp", f"  %bpanel = mul i64 %bpanel.w, {NR}",
             f"  %ccol = mul i64 %pn, {NR}", *_pack_ir(), "rows:",
             "  %rb = phi i64 [ 0, %rows.start ], [ %rb.next, %rows.end ]",
             f"  %row0 = mul i64 %rb, {MR}"]
    for i in range(MR):
        lines += [f"  %r{i} = add i64 %row0, {i}", f"  %abase{i} = mul i64 %r{i}, %lda2"]
    lines += ["  br label %kl", "kl:", "  %p = phi i64 [ 0, %rows ], [ %p.next, %kl ]"]
    lines += [f"  %acc{i}_{v} = phi <16 x float> [ zeroinitializer, %rows ], "
              f"[ %nacc{i}_{v}, %kl ]" for i in range(MR) for v in range(NV)]
    lines += [f"  %bo0 = mul i64 %p, {NR}", "  %bo = add i64 %bo0, %bpanel"]
    for v in range(NV):
        lines += [f"  %bo{v}.i = add i64 %bo, {16 * v}",
                  f"  %bp{v} = getelementptr i32, ptr %Bp, i64 %bo{v}.i",
                  f"  %bw{v} = load <16 x i32>, ptr %bp{v}, align 4",
                  f"  %bv{v} = bitcast <16 x i32> %bw{v} to <32 x bfloat>"]
    for i in range(MR):
        lines += [f"  %ai{i} = add i64 %abase{i}, %p",
                  f"  %ap{i} = getelementptr i32, ptr %A, i64 %ai{i}",
                  f"  %aw{i} = load i32, ptr %ap{i}, align 4",
                  f"  %ains{i} = insertelement <16 x i32> poison, i32 %aw{i}, i64 0",
                  f"  %asp{i} = shufflevector <16 x i32> %ains{i}, <16 x i32> poison, "
                  "<16 x i32> zeroinitializer",
                  f"  %av{i} = bitcast <16 x i32> %asp{i} to <32 x bfloat>"]
        lines += [f"  %nacc{i}_{v} = call <16 x float> {dp}(<16 x float> %acc{i}_{v}, "
                  f"<32 x bfloat> %av{i}, <32 x bfloat> %bv{v})" for v in range(NV)]
    lines += ["  %p.next = add i64 %p, 1", "  %k.more = icmp ult i64 %p.next, %kp",
              "  br i1 %k.more, label %kl, label %store", "store:"]
    for i in range(MR):
        lines += [f"  %crow{i}.0 = mul i64 %r{i}, %ldc", f"  %crow{i} = add i64 %crow{i}.0, %ccol"]
        for v in range(NV):
            lines += [f"  %ci{i}_{v} = add i64 %crow{i}, {16 * v}",
                      f"  %cp{i}_{v} = getelementptr i16, ptr %C, i64 %ci{i}_{v}"]
            _round_store(lines, f"%nacc{i}_{v}", f"%cp{i}_{v}", f"{i}_{v}")
    lines += ["  br label %rows.end", "rows.end:", "  %rb.next = add i64 %rb, 1",
              "  %rb.more = icmp ult i64 %rb.next, %mblocks",
              "  br i1 %rb.more, label %rows, label %panel.end", "panel.end:",
              "  %pn.next = add i64 %pn, 1", "  %pn.more = icmp ult i64 %pn.next, %hi",
              "  br i1 %pn.more, label %panel, label %exit", "exit:", "  ret void", "}",
              "attributes #0 = { nounwind }"]
    return "\n".join(lines) + "\n"


@functools.cache
def _kernel():
    """The compiled kernel as a ctypes function (compiled once per process)."""
    with _lock:
        nat = engine.compile_ir(kernel_ir(), [SYMBOL], "full", "bf16_gemm")
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, *[ctypes.c_int64] * 5)(
        nat.addresses[SYMBOL])
    return nat, fn


def _subnormal(x) -> bool:
    """Whether bf16 array ``x`` holds a subnormal (exponent bits 0, mantissa bits not)."""
    magnitude = np.bitwise_and(np.ascontiguousarray(x).view(np.uint16), 0x7FFF)
    return bool(np.any(magnitude - np.uint16(1) < np.uint16(0x7F)))


class Bf16DotGeneral:
    """A compiled bf16 x bf16 -> bf16 dot_general for fixed shapes (as
    :class:`~.blas.DotGeneral`): ``run(lhs, rhs, out=None) -> out``."""

    def __init__(self, lhs_shape, rhs_shape, dimension_numbers, *, parallel=None, workers=1):
        (lc, rc), (lb, rb) = dimension_numbers
        lfree = [i for i in range(len(lhs_shape)) if i not in lc and i not in lb]
        rfree = [i for i in range(len(rhs_shape)) if i not in rc and i not in rb]
        self.lperm, self.rperm = list(lb) + lfree + list(lc), list(rb) + list(rc) + rfree

        def size(dims, shape):
            return math.prod(shape[i] for i in dims)
        self.batch, self.k = size(lb, lhs_shape), size(lc, lhs_shape)
        self.m, self.n = size(lfree, lhs_shape), size(rfree, rhs_shape)
        self.out_shape = tuple(lhs_shape[i] for i in (*lb, *lfree)) + \
            tuple(rhs_shape[i] for i in rfree)
        self.parallel, self.workers = parallel, workers if parallel is not None else 1
        self.native = native()
        self.wide = DotGeneral(lhs_shape, rhs_shape, _F32, dimension_numbers,
                               parallel=parallel, workers=workers)
        self.k_pairs = (self.k + 1) // 2
        self.rows = -(-self.m // MR) * MR
        self.panels = -(-self.n // NR)

    def __call__(self, lhs, rhs, out=None):
        if out is None:
            out = np.empty(self.out_shape, _BF16)
        if self.m == 0 or self.n == 0 or self.batch == 0:
            return out
        if self.k == 0:
            out[...] = 0
            return out
        if not self.native or _subnormal(lhs) or _subnormal(rhs):
            # exact widening, float32 products (subnormals kept), one rounding
            return bf16_cast.narrow(self.wide(bf16_cast.widen(lhs), bf16_cast.widen(rhs)), out)
        a = np.transpose(lhs, self.lperm).reshape(self.batch, self.m, self.k)
        if self.rows != self.m or self.k % 2 or not a.flags.c_contiguous:
            padded = np.zeros((self.batch, self.rows, 2 * self.k_pairs), _BF16)
            padded[:, :self.m, :self.k] = a
            a = padded
        b = np.ascontiguousarray(np.transpose(rhs, self.rperm)).reshape(self.batch, -1)
        packed = np.empty((self.batch, self.panels * self.k_pairs * NR), np.uint32)
        cols = self.panels * NR
        direct = self.rows == self.m and cols == self.n and out.flags.c_contiguous
        c = out.reshape(self.batch, self.m, self.n) if direct else \
            np.empty((self.batch, self.rows, cols), _BF16)
        fn = _kernel()[1]
        chunks = 1 if self.batch * self.m * self.n * self.k < SPLIT_MACS or self.workers < 2 \
            else min(self.panels, 4 * self.workers)
        cuts = [self.panels * i // chunks for i in range(chunks + 1)]
        calls = [functools.partial(fn, a[i].ctypes.data, b[i].ctypes.data,
                                   packed[i].ctypes.data, c[i].ctypes.data, self.rows // MR,
                                   self.k, self.n, lo, hi)
                 for i in range(self.batch) for lo, hi in itertools.pairwise(cuts) if hi > lo]
        run_in_turn(calls, self.parallel, self.workers)
        if not direct:
            out.reshape(self.batch, self.m, self.n)[...] = c[:, :self.m, :self.n]
        return out
