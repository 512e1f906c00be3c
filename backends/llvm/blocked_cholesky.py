"""A big Cholesky factorization as blocks, the work of each step split over the runtime's
threads with NumPy's OpenBLAS held at one thread each.

The matrix is C-order and one triangle is read. Read as Fortran's, that memory is the
other triangle of the Hermitian matrix's transpose (its conjugate), whose factor in that
triangle, read back as C's, is the factor asked for: so the factorization runs in place,
with no transposed copies. The lower factor L (``a = L L^H``) is Fortran's upper one,
right-looking: for each block row of :data:`BLOCK` rows, ?potrf('U') factors the diagonal
block, ?trsm solves the panel right of it (``U12 = U11^-H A12``) and the trailing upper
triangle is updated (``A22 -= U12^H U12``: ?gemm above each diagonal block, ?syrk/?herk
on it, so the diagonal blocks' other triangle costs nothing). The upper factor
(``a = U^H U``) is the mirror image, on Fortran's lower triangle, by block columns.

The panel and the trailing update are cut into blocks of :data:`COLS` columns (rows) that
threads take in turn, each computed whole by single-threaded calls: every element's value
depends on the shape and these two constants only, never on how many threads ran or which
took what (OpenBLAS's own threaded ?potrf rounds differently from its one-thread one, and
its threads stall at barriers on a busy machine). A thread the OS has not scheduled takes
no part, so a busy machine delays a step by one part.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import blas

# the block rows' height (?potrf of a diagonal block and the panel's ?trsm run on it)
BLOCK = 256
# the parts (Fortran's columns; rows for the upper factor) of the panel and of the
# trailing update: one ?trsm, or one ?gemm and one ?syrk, each
COLS = 256
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

    def real(self, v):
        cell = ctypes.c_double(v)
        self.keep.append(cell)
        return ctypes.addressof(cell)


def _blocks(lo, hi):
    return [(j, min(j + COLS, hi)) for j in range(lo, hi, COLS)]


def factor(c, pool, workers, upper=False) -> int:
    """Factor the C-order matrix ``c`` (shape (n, n)) in place, its lower triangle becoming
    L (``upper``: its upper triangle becoming U, ``a = U^H U``): LAPACK's info (0, or the
    1-based order of the leading minor that is not positive definite). Only that triangle
    is read and written."""
    n, dtype = c.shape[0], c.dtype
    p = _PREFIX[dtype]
    potrf, trsm = _fn(p + "potrf", 5, 1), _fn(p + "trsm", 11, 4)
    gemm = _fn(p + "gemm", 13, 2)
    rank_k = _fn(p + ("herk" if dtype.kind == "c" else "syrk"), 10, 2)
    item, base = dtype.itemsize, c.ctypes.data
    args = _Args(dtype)
    ld, conj, notrans, nonunit = args.int(n), args.char("C"), args.char("N"), args.char("N")
    # Fortran's triangle: C's other one
    uplo, side = (args.char("L"), args.char("R")) if upper else (args.char("U"), args.char("L"))
    one, minus_one = args.scalar(1.0), args.scalar(-1.0)
    # ?herk's alpha and beta are real
    real_one, real_minus_one = args.real(1.0), args.real(-1.0)
    info = ctypes.c_int64(0)

    def at(row, col):
        """Fortran's (row, col) of the lower factor's form (upper triangle); its mirror
        image (col, row) for the upper factor's. C's (col, row) is Fortran's (row, col)."""
        if upper:
            row, col = col, row
        return base + (col * n + row) * item

    def dims(rows, cols):       # a block's shape in the lower factor's form, mirrored
        return (args.int(cols), args.int(rows)) if upper else (args.int(rows), args.int(cols))

    def panel(k, kb, j0, j1):
        """U12 = U11^-H A12 on columns [j0, j1) (L21 = A21 L11^-H on rows [j0, j1))."""
        def run():
            trsm(side, uplo, conj, nonunit, *dims(kb, j1 - j0), one, at(k, k), ld, at(k, j0),
                 ld, 1, 1, 1, 1)
        return run

    def update(k, kb, j0, j1):
        """The trailing triangle's columns (rows) [j0, j1): ``A[i0:j0, j] -= U12[:, i0:j0]^H
        U12[:, j]`` off the diagonal block, a rank-kb update on it (the mirror image: the
        two operands of the product swapped)."""
        i0 = k + kb
        left, right = (conj, at(k, i0)), (notrans, at(k, j0))
        if upper:
            left, right = right, left

        def run():
            if j0 > i0:
                gemm(left[0], right[0], *dims(j0 - i0, j1 - j0), args.int(kb), minus_one,
                     left[1], ld, right[1], ld, one, at(i0, j0), ld, 1, 1)
            rank_k(uplo, notrans if upper else conj, args.int(j1 - j0), args.int(kb),
                   real_minus_one, at(k, j0), ld, real_one, at(j0, j0), ld, 1, 1)
        return run

    with blas.one_thread_each():
        for k in range(0, n, BLOCK):
            kb = min(BLOCK, n - k)
            potrf(uplo, args.int(kb), at(k, k), ld, ctypes.addressof(info), 1)
            if info.value:
                return k + info.value
            if k + kb == n:
                break
            parts = _blocks(k + kb, n)
            blas.run_in_turn([panel(k, kb, j0, j1) for j0, j1 in parts], pool, workers)
            # the longest columns (rows) first: the last part taken is a short one
            blas.run_in_turn([update(k, kb, j0, j1) for j0, j1 in reversed(parts)], pool,
                             workers)
    return 0
