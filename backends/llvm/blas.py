"""dot_general through SciPy's BLAS (sgemm/dgemm function pointers from its capsules).

Operands are brought to (batch, m, k) and (batch, k, n) C-contiguous layouts with
NumPy transposes/copies (no copy when they already are); each batch is one gemm call
on the row-major problem, passed to the column-major BLAS as C^T = B^T A^T.
"""

from __future__ import annotations

import ctypes

import numpy as np

_GEMM_NAMES = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm"}
_SCALAR = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}
_cache: dict = {}


def _capsule_pointer(capsule) -> int:
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))


def gemm(dtype):
    """The ctypes-callable ?gemm for ``dtype`` (Fortran ABI: every argument by pointer)."""
    dtype = np.dtype(dtype)
    if dtype not in _cache:
        from scipy.linalg import cython_blas
        addr = _capsule_pointer(cython_blas.__pyx_capi__[_GEMM_NAMES[dtype]])
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))
        _cache[dtype] = proto(addr)
    return _cache[dtype]


class DotGeneral:
    """A compiled dot_general for fixed shapes: ``run(lhs, rhs) -> out``."""

    def __init__(self, lhs_shape, rhs_shape, dtype, dimension_numbers):
        (lc, rc), (lb, rb) = dimension_numbers
        lfree = [i for i in range(len(lhs_shape)) if i not in lc and i not in lb]
        rfree = [i for i in range(len(rhs_shape)) if i not in rc and i not in rb]
        self.lperm = list(lb) + lfree + list(lc)
        self.rperm = list(rb) + list(rc) + rfree

        def size(dims, shape):
            return int(np.prod([shape[i] for i in dims], dtype=np.int64))
        self.batch = size(lb, lhs_shape)
        self.m, self.n = size(lfree, lhs_shape), size(rfree, rhs_shape)
        self.k = size(lc, lhs_shape)
        self.out_shape = tuple(lhs_shape[i] for i in lb) + tuple(lhs_shape[i] for i in lfree) \
            + tuple(rhs_shape[i] for i in rfree)
        self.dtype = np.dtype(dtype)
        if max(self.m, self.n, self.k) >= 2 ** 31:
            raise ValueError("dot_general: a matrix dimension does not fit BLAS's 32-bit int")
        self.fn = gemm(self.dtype)
        c_int, scalar = ctypes.c_int, _SCALAR[self.dtype]
        self._args = [ctypes.c_char(b"N"), ctypes.c_char(b"N"), c_int(self.n), c_int(self.m),
                      c_int(self.k), scalar(1.0), c_int(max(self.n, 1)), c_int(max(self.k, 1)),
                      scalar(0.0), c_int(max(self.n, 1))]
        self._refs = [ctypes.addressof(a) for a in self._args]

    def __call__(self, lhs, rhs, out=None):
        """The product; into ``out`` (C-contiguous, of the result's shape) when given."""
        if out is None:
            out = np.empty(self.out_shape, self.dtype)
        if self.m == 0 or self.n == 0 or self.batch == 0:
            return out
        if self.k == 0:
            out[...] = 0
            return out
        a = np.ascontiguousarray(np.transpose(lhs, self.lperm)).reshape(self.batch, -1)
        b = np.ascontiguousarray(np.transpose(rhs, self.rperm)).reshape(self.batch, -1)
        c = out.reshape(self.batch, -1)
        ta, tb, n, m, k, alpha, ldb, lda, beta, ldc = self._refs
        for i in range(self.batch):
            self.fn(ta, tb, n, m, k, alpha, b[i].ctypes.data, ldb, a[i].ctypes.data, lda,
                    beta, c[i].ctypes.data, ldc)
        return out
