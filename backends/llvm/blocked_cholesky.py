"""A big Cholesky factorization as blocks, the work of each step split over the runtime's
threads with NumPy's OpenBLAS held at one thread each.

Right-looking, on a Fortran-order matrix's lower triangle: for each block column of
:data:`BLOCK` columns, ?potrf factors the diagonal block, ?trsm solves the panel below it
(``L21 = A21 L11^-H``) and ?gemm updates the trailing lower triangle
(``A22 -= L21 L21^H``). The panel and the trailing update are cut into row blocks of
:data:`ROWS` rows that threads take in turn, each computed whole by one single-threaded
call: every element's value depends on the shape and these two constants only, never on
how many threads ran or which took what (OpenBLAS's own threaded ?potrf rounds differently
from its one-thread one, and its threads stall at barriers on a busy machine). A thread
the OS has not scheduled takes no part, so a busy machine delays a step by one part.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import blas

# the block columns' width (?potrf of a diagonal block and the panel's ?trsm run on it)
BLOCK = 256
# row blocks of the panel and of the trailing update: one ?trsm or ?gemm call each
ROWS = 256
_PREFIX = {np.dtype(np.float64): "d", np.dtype(np.complex128): "z"}
_fns: dict = {}


def available(dtype) -> bool:
    """Whether the blocked factorization runs for matrices of ``dtype`` (the wide dtype
    NumPy computes in): NumPy's OpenBLAS is the library in use (its thread count is the
    one held)."""
    return np.dtype(dtype) in _PREFIX and blas.blas_int_bits() == 64 and \
        blas._numpy_lib[0] is not None


def _fn(name, n_ptr, n_hidden):
    if name not in _fns:
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_ptr),
                                 *([ctypes.c_size_t] * n_hidden))
        _fns[name] = proto(ctypes.cast(getattr(blas._numpy_lib[0], f"scipy_{name}_64_"),
                                       ctypes.c_void_p).value)
    return _fns[name]


class _Args:
    """ctypes cells for BLAS's by-reference arguments, kept alive with the call."""

    def __init__(self, dtype):
        self.dtype, self.keep = dtype, []

    def int(self, v):
        cell = ctypes.c_int64(v)
        self.keep.append(cell)
        return ctypes.addressof(cell)

    def char(self, c):
        cell = ctypes.c_char(c.encode())
        self.keep.append(cell)
        return ctypes.addressof(cell)

    def scalar(self, v):
        cell = blas._scalar(self.dtype, v)
        self.keep.append(cell)
        return ctypes.addressof(cell)


def _row_blocks(lo, hi):
    return [(r, min(r + ROWS, hi)) for r in range(lo, hi, ROWS)]


def factor(f, pool, workers) -> int:
    """Factor the Fortran-order matrix ``f`` (C-contiguous memory of shape (n, n) read as
    column-major) in place, its lower triangle becoming L: LAPACK's info (0, or the
    1-based order of the leading minor that is not positive definite). The strict upper
    triangle (Fortran's) is overwritten with scratch values."""
    n, dtype = f.shape[0], f.dtype
    p = _PREFIX[dtype]
    potrf, trsm, gemm = _fn(p + "potrf", 5, 1), _fn(p + "trsm", 11, 4), _fn(p + "gemm", 13, 2)
    item, base = dtype.itemsize, f.ctypes.data
    args = _Args(dtype)
    ld, lower, right, conj, notrans, nonunit = (args.int(n), args.char("L"), args.char("R"),
                                                args.char("C"), args.char("N"), args.char("N"))
    one, minus_one = args.scalar(1.0), args.scalar(-1.0)
    info = ctypes.c_int64(0)

    def at(row, col):
        return base + (col * n + row) * item

    def panel(k, kb, r0, r1):
        def run():
            trsm(right, lower, conj, nonunit, args.int(r1 - r0), args.int(kb), one, at(k, k),
                 ld, at(r0, k), ld, 1, 1, 1, 1)
        return run

    def update(k, kb, r0, r1):
        c0 = k + kb       # columns [c0, r1): the rows' share of the lower triangle

        def run():
            gemm(notrans, conj, args.int(r1 - r0), args.int(r1 - c0), args.int(kb), minus_one,
                 at(r0, k), ld, at(c0, k), ld, one, at(r0, c0), ld, 1, 1)
        return run

    with blas.one_thread_each():
        for k in range(0, n, BLOCK):
            kb = min(BLOCK, n - k)
            potrf(lower, args.int(kb), at(k, k), ld, ctypes.addressof(info), 1)
            if info.value:
                return k + info.value
            if k + kb == n:
                break
            rows = _row_blocks(k + kb, n)
            blas.run_in_turn([panel(k, kb, r0, r1) for r0, r1 in rows], pool, workers)
            # the longest rows (most columns) first: the last part taken is a short one
            blas.run_in_turn([update(k, kb, r0, r1) for r0, r1 in reversed(rows)], pool,
                                 workers)
    return 0
