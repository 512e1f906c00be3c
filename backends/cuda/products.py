"""``dot_general`` on the device: one ``xp.matmul`` over views of the operands.

Each operand is seen as a batch of matrices, batch dimensions leading: lhs as
``(batch, m, k)``, rhs as ``(batch, k, n)``. When an operand's dimensions are already
grouped (batch, free, contracted) or (batch, contracted, free), that is a reshape and at
most a swap of the last two axes of its C-contiguous buffer: a view, which CuPy hands to
cuBLAS as a transpose flag (a C-contiguous matrix read as its transpose is F-contiguous),
not a copy. Other layouts (free and contracted dimensions interleaved, batch dimensions
not leading) need one transposed copy, as NumPy's own matmul would.

Dtypes: float32/float64/complex through matmul in the dtype (cuBLAS gemm on a GPU);
float16 computes in float32 (the operands widened on the device, the product rounded
once to float16, as the CPU backend and NumPy's float16 matmul loop do; cuBLAS would
accumulate in float32 too with ``CUBLAS_COMPUTE_32F``); integers in their dtype,
wrapping as NumPy does (CuPy's matmul covers integers without cuBLAS); bool as the
logical or of ands (an int64 product compared with zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# what this module multiplies; the name of the call equations that carry the dtypes the
# shared partition would otherwise turn into a loop-nest kernel (see runtime)
DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.complex64,
                                     np.complex128, np.int8, np.int16, np.int32, np.int64,
                                     np.uint8, np.uint16, np.uint32, np.uint64, np.bool_))
GEMM_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                          np.complex128))
DEVICE_CALL = "dot_general through the array module's matmul"


@dataclass(frozen=True)
class Layout:
    """How one product's operands are viewed: sizes, and per operand either a swap of
    the last two axes of the reshaped buffer (``*_swap``) or a permutation to copy
    through (``*_perm``, None when the buffer is already in order)."""

    batch_shape: tuple
    m: int
    n: int
    k: int
    out_shape: tuple
    lhs_swap: bool
    rhs_swap: bool
    lhs_perm: tuple | None
    rhs_perm: tuple | None


def _size(dims, shape):
    return int(np.prod([shape[i] for i in dims], dtype=np.int64))


def _ordered(*groups):
    flat = [d for g in groups for d in g]
    return flat == list(range(len(flat)))


def layout(lhs_shape, rhs_shape, dimension_numbers) -> Layout:
    """The views ``matmul`` takes of operands of these shapes (C-contiguous buffers)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(len(lhs_shape)) if i not in lc and i not in lb]
    rfree = [i for i in range(len(rhs_shape)) if i not in rc and i not in rb]
    lhs_swap = not _ordered(lb, lfree, lc) and _ordered(lb, lc, lfree)
    rhs_swap = not _ordered(rb, rc, rfree) and _ordered(rb, rfree, rc)
    lhs_perm = None if _ordered(lb, lfree, lc) or lhs_swap else (*lb, *lfree, *lc)
    rhs_perm = None if _ordered(rb, rc, rfree) or rhs_swap else (*rb, *rc, *rfree)
    batch_shape = tuple(lhs_shape[i] for i in lb)
    out_shape = batch_shape + tuple(lhs_shape[i] for i in lfree) + \
        tuple(rhs_shape[i] for i in rfree)
    return Layout(batch_shape, _size(lfree, lhs_shape), _size(rfree, rhs_shape),
                  _size(lc, lhs_shape), out_shape, lhs_swap, rhs_swap, lhs_perm, rhs_perm)


def _operand(xp, x, batch, rows, cols, swap, perm):
    """``x`` as a ``batch + (rows, cols)`` view (a copy only through ``perm``)."""
    if perm is not None:
        x = xp.transpose(x, perm)
    if swap:
        return x.reshape(batch + (cols, rows)).swapaxes(-1, -2)
    return x.reshape(batch + (rows, cols))


def matmul(xp, lhs, rhs, dimension_numbers, lay: Layout | None = None):
    """``dot_general(lhs, rhs, dimension_numbers)`` with the array module ``xp``
    (CuPy on a GPU, NumPy in the simulator), as a C-contiguous array."""
    lay = lay or layout(lhs.shape, rhs.shape, dimension_numbers)
    dt = lhs.dtype
    a = _operand(xp, lhs, lay.batch_shape, lay.m, lay.k, lay.lhs_swap, lay.lhs_perm)
    b = _operand(xp, rhs, lay.batch_shape, lay.k, lay.n, lay.rhs_swap, lay.rhs_perm)
    if dt == np.float16:
        out = xp.matmul(a.astype(np.float32), b.astype(np.float32)).astype(dt)
    elif dt == np.bool_:
        out = xp.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
    else:
        out = xp.matmul(a, b)
    return xp.ascontiguousarray(out).reshape(lay.out_shape)
