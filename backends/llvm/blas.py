"""dot_general through the BLAS NumPy itself loaded when it is the OpenBLAS its wheels
bundle (64-bit ints: ``scipy_?gemm_64_``), else through SciPy's (?gemm function pointers
from its capsules: sgemm, dgemm, cgemm, zgemm; 32-bit ints). NumPy's is already loaded
and started, where loading SciPy's costs tens of milliseconds of the first jit call that
has a product, and starts a second pool of BLAS threads.

Each batch is one gemm call on the row-major problem C = A B, passed to the
column-major BLAS as C^T = B^T A^T. An operand stored as (batch, m, k) / (batch, k, n),
or as its transpose, is passed as it is (:func:`gemm_layout`, BLAS's transpose flags);
any other layout is first copied into one of those with NumPy.

OpenBLAS's thread count is the runtime's to set, per gemm call from its size: a call
below ONE_THREAD_MACS multiply-adds (and from OPENBLAS_THREADS_MACS, below which OpenBLAS
stays on one thread by itself) runs with OpenBLAS held at one thread (:func:`one_thread_each`)
whatever the load, from a Python step, a native graph entry (entries.py), a loop
(loops.py) or a conv (conv.py) alike: on a busy machine OpenBLAS's own threads wait on
each other at barriers inside every call (an MLP step, 784-256-10, batch 64: 40-49 ms on
its two threads, 1.3 ms on one; benchmarks/blas_under_load.py), and the one-minute load
average that :func:`busy` reads lags a new load by up to a minute. The setting is
process-wide: while one of our calls holds it, the user's NumPy products on other threads
also run on one OpenBLAS thread; afterwards the count is the user's again.

A big product (SPLIT_MACS multiply-adds) splits over the runtime's threads with OpenBLAS
held at one thread each (:func:`split_parts`): OpenBLAS's own threads meet at barriers
inside every call, and on a busy machine a preempted one stalls them all (under load,
benchmarks/gemm_threads.py: 8 x 512^3 f32 381 -> 49 ms, 1024^3 f32 78 -> 48 ms). The parts are
batches or row blocks of the result, whose elements OpenBLAS sums as in the whole
product, or, for a product of few rows, column blocks fixed by its shape; threads take
parts in turn, so one the OS has not scheduled holds none back.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import importlib.machinery
import importlib.util
import itertools
import math
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from .. import openblas
from ..openblas import ONE_THREAD_MACS, OPENBLAS_THREADS_MACS
from . import irloop, par_gemm
from .par_gemm import COLUMN_ALIGN, COLUMN_PARTS

_GEMM_NAMES = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm",
               np.dtype(np.complex64): "cgemm", np.dtype(np.complex128): "zgemm"}
_PART = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
         np.dtype(np.complex64): ctypes.c_float, np.dtype(np.complex128): ctypes.c_double}
_cache: dict = {}
_numpy_lib = openblas.NUMPY_LIB     # [NumPy's OpenBLAS as a CDLL, or None] once looked for


def _scalar(dtype, value):
    """A BLAS alpha/beta for ``dtype`` (complex: a (re, im) pair)."""
    part = _PART[dtype]
    return (part * 2)(value, 0.0) if dtype.kind == "c" else part(value)


def _capsule_pointer(capsule) -> int:
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))


def _cython_blas():
    """scipy.linalg.cython_blas, without importing the scipy.linalg package when it is not
    imported yet (that costs ~150 ms of a process's first jit call; the extension alone
    ~15 ms). The extension is loaded from its file and left out of sys.modules, so a later
    ``import scipy.linalg.cython_blas`` runs the package as usual and gets this same module
    from CPython's extension cache. Any surprise falls back to the plain import."""
    name = "scipy.linalg.cython_blas"
    if name in sys.modules or "scipy.linalg" in sys.modules:
        return importlib.import_module(name)
    try:
        folder = os.path.join(os.path.dirname(importlib.util.find_spec("scipy").origin), "linalg")
        path = next(os.path.join(folder, f"cython_blas{suffix}")
                    for suffix in importlib.machinery.EXTENSION_SUFFIXES
                    if os.path.exists(os.path.join(folder, f"cython_blas{suffix}")))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules.pop(name, None)
        if not all(n in module.__pyx_capi__ for n in _GEMM_NAMES.values()):
            raise ImportError(f"{path} lacks ?gemm")
        return module
    except Exception:
        sys.modules.pop(name, None)
        return importlib.import_module(name)


_numpy_openblas = openblas.find_numpy_lib


def blas_int_bits() -> int:
    """The width of the BLAS's integer arguments: 64 for NumPy's OpenBLAS, 32 for SciPy's."""
    if not _numpy_lib:
        _numpy_lib.append(_numpy_openblas())
    return 64 if _numpy_lib[0] is not None else 32


def gemm_address(dtype, routine="gemm") -> int:
    """The address of ?gemm (or ``routine``, ``"gemv"``) for ``dtype`` (Fortran ABI: every
    argument by pointer, integers of :func:`blas_int_bits`)."""
    name = _GEMM_NAMES[np.dtype(dtype)].replace("gemm", routine)
    if blas_int_bits() == 64:
        return ctypes.cast(getattr(_numpy_lib[0], f"scipy_{name}_64_"), ctypes.c_void_p).value
    return _capsule_pointer(_cython_blas().__pyx_capi__[name])


def gemm(dtype, routine="gemm"):
    """The ctypes-callable ?gemm (or ?gemv: ``routine="gemv"``) for ``dtype``."""
    dtype = np.dtype(dtype)
    if (dtype, routine) not in _cache:
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (13 if routine == "gemm" else 11)))
        _cache[dtype, routine] = proto(gemm_address(dtype, routine))
    return _cache[dtype, routine]


@dataclass(frozen=True)
class GemmLayout:
    """A dot_general as ``batch`` row-major products (m, k) x (k, n) on the operands'
    own memory: ``trans_lhs`` says the lhs is stored (k, m), ``trans_rhs`` that the rhs
    is stored (n, k); ``lda``/``ldb`` are their row lengths."""

    batch: int
    m: int
    n: int
    k: int
    trans_lhs: bool
    trans_rhs: bool

    @property
    def lda(self):
        return max(self.m if self.trans_lhs else self.k, 1)

    @property
    def ldb(self):
        return max(self.k if self.trans_rhs else self.n, 1)


@dataclass(frozen=True)
class GemvForm:
    """A product with one row or one column (``m == 1`` or ``n == 1``) as one ?gemv per
    batch: ``y = op(A) x`` with A the column-major ``rows x cols`` matrix of leading
    dimension ``ld`` stored in operand ``matrix`` (``"lhs"``/``"rhs"``), ``op`` the
    transpose when ``trans``; the other operand is the vector, the result the output.
    OpenBLAS's ?gemm is 1.6-10x slower on these shapes than its ?gemv (an x @ W.T of
    9216 x 128 float32: 1040 vs 106 us on one thread), which NumPy calls for them."""

    trans: bool
    rows: int
    cols: int
    ld: int
    matrix: str


def gemv_form(lay: GemmLayout) -> GemvForm | None:
    """The :class:`GemvForm` of a product of ``lay`` with one row or column and k > 1, or
    None (k = 1 is an outer product, an empty product has no call)."""
    if min(lay.m, lay.n) != 1 or lay.k <= 1:
        return None
    if lay.m == 1:      # out[n] = a[k] B
        return (GemvForm(True, lay.k, lay.n, lay.ldb, "rhs") if lay.trans_rhs
                else GemvForm(False, lay.n, lay.k, lay.ldb, "rhs"))
    return (GemvForm(False, lay.m, lay.k, lay.lda, "lhs") if lay.trans_lhs    # out[m] = A b
            else GemvForm(True, lay.k, lay.m, lay.lda, "lhs"))



def gemm_layout(lhs_shape, rhs_shape, dimension_numbers) -> GemmLayout | None:
    """How C-contiguous operands of these shapes feed gemm without a copy (None: they
    need one: batch dimensions not leading, or free and contracted dimensions interleaved)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(len(lhs_shape)) if i not in lc and i not in lb]
    rfree = [i for i in range(len(rhs_shape)) if i not in rc and i not in rb]

    def ordered(*groups):
        return [d for g in groups for d in g] == list(range(sum(len(g) for g in groups)))
    trans_lhs = not ordered(lb, lfree, lc)
    if trans_lhs and not ordered(lb, lc, lfree):
        return None
    trans_rhs = not ordered(rb, rc, rfree)
    if trans_rhs and not ordered(rb, rfree, rc):
        return None

    def size(dims, shape):
        return int(np.prod([shape[i] for i in dims], dtype=np.int64))
    return GemmLayout(size(lb, lhs_shape), size(lfree, lhs_shape), size(rfree, rhs_shape),
                      size(lc, lhs_shape), trans_lhs, trans_rhs)


class DotGeneral:
    """A compiled dot_general for fixed shapes: ``run(lhs, rhs) -> out``. ``parallel``
    (a function returning an executor) and ``workers`` (threads, the caller's included)
    let a big product split (:func:`split_parts`); without them it runs on the caller."""

    def __init__(self, lhs_shape, rhs_shape, dtype, dimension_numbers, *, parallel=None,
                 workers=1):
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
        self.fn = gemm(self.dtype)
        if blas_int_bits() == 32 and max(self.m, self.n, self.k) >= 2 ** 31:
            raise ValueError("dot_general: a matrix dimension does not fit BLAS's 32-bit int")
        # operands already in a gemm layout go as they are; others are copied into one
        self.layout = gemm_layout(lhs_shape, rhs_shape, dimension_numbers)
        lay = self.layout or GemmLayout(self.batch, self.m, self.n, self.k, False, False)
        c_int = ctypes.c_int64 if blas_int_bits() == 64 else ctypes.c_int
        self._args = [ctypes.c_char(b"T" if lay.trans_rhs else b"N"),
                      ctypes.c_char(b"T" if lay.trans_lhs else b"N"), c_int(self.n),
                      c_int(self.m), c_int(self.k), _scalar(self.dtype, 1.0), c_int(lay.ldb),
                      c_int(lay.lda), _scalar(self.dtype, 0.0), c_int(max(self.n, 1))]
        self._refs = [ctypes.addressof(a) for a in self._args]
        self.parallel, self._lay = parallel, lay
        self.workers = workers if parallel is not None else 1
        self.parts = split_parts(lay, self.workers, self.dtype)
        self._col_split = self.parts[0].cols is not None
        self._par = None
        if self._col_split and self.workers > 1:
            self._par = par_gemm.caller(blas_int_bits())
            self._par_gemm = gemm_address(self.dtype)
            self._par_steps = ((self.k if lay.trans_rhs else 1) * self.dtype.itemsize,
                               self.dtype.itemsize)
        self._row_split = len(self.parts) > 1 and self.parts[0].batch_hi == self.batch \
            and not self._col_split
        self._macs = self.batch * self.m * self.n * self.k
        # one gemm call's multiply-adds decide OpenBLAS's thread count (one_thread_always)
        self._hold = one_thread_always(self.m * self.n * self.k)
        self._ask_busy = parallel is not None and (
            len(self.parts) > 1 or self.m * self.n * self.k >= ONE_THREAD_MACS)
        self._matmul = self.layout is None and self.batch > 1 and self._macs <= MATMUL_MAX_MACS \
            and min(self.m, self.n, self.k) > 1
        self._gemv = None if self._col_split else gemv_form(lay)
        if self._gemv is not None:
            g = self._gemv
            self._gemv_fn = gemm(self.dtype, "gemv")
            self._gemv_args = [ctypes.c_char(b"T" if g.trans else b"N"), c_int(g.rows),
                               c_int(g.cols), self._args[5], c_int(g.ld), c_int(1),
                               self._args[8]]
            self._gemv_refs = [ctypes.addressof(a) for a in self._gemv_args]

    def __call__(self, lhs, rhs, out=None):
        """The product; into ``out`` (C-contiguous, of the result's shape) when given."""
        if out is None:
            out = np.empty(self.out_shape, self.dtype)
        if self.m == 0 or self.n == 0 or self.batch == 0:
            return out
        if self.k == 0:
            out[...] = 0
            return out
        if self._matmul:
            # a batch of small products on operands out of gemm layout (vmap's batch dim
            # not leading): NumPy's matmul takes the strided views to the same ?gemm per
            # batch, without the copies and one ctypes call per batch (a 10-model
            # ensemble's second layer, 10 x 64x128 @ 128x10: 72 -> 24 us)
            with one_thread_each() if self._hold else _NOTHING:
                np.matmul(np.transpose(lhs, self.lperm).reshape(self.batch, self.m, self.k),
                          np.transpose(rhs, self.rperm).reshape(self.batch, self.k, self.n),
                          out=out.reshape(self.batch, self.m, self.n))
            return out
        if self.layout is not None:
            a = np.ascontiguousarray(lhs).reshape(self.batch, -1)
            b = np.ascontiguousarray(rhs).reshape(self.batch, -1)
        else:
            a = np.ascontiguousarray(np.transpose(lhs, self.lperm)).reshape(self.batch, -1)
            b = np.ascontiguousarray(np.transpose(rhs, self.rperm)).reshape(self.batch, -1)
        if self.k == 1 and self.dtype.kind == "f":
            # an outer product (per-sample weight gradients): one multiply per element, the
            # same value ?gemm gives, without its k = 1 path (64 x 128 x 9216 f32: 51 ms vs
            # 71 ms on one OpenBLAS thread, 887 ms on two on this busy host)
            np.multiply(a[:, :, None], b[:, None, :], out=out.reshape(self.batch, self.m,
                                                                      self.n))
            return out
        c = out.reshape(self.batch, -1)
        # a product below ONE_THREAD_MACS never runs on OpenBLAS's own threads: it splits
        # over the runtime's (from SPLIT_MACS) or runs on this thread alone. While the
        # machine is busy, a product that does not split (too small, too few rows) or is
        # below BUSY_SPLIT_MACS runs on this thread alone, as loops do: a thread it hands
        # a part to may wait out a time slice (64x128 @ 128x9216 f32 under load: 46 ms on
        # OpenBLAS's 2 threads, 1.7 ms on one)
        busy_now = self._ask_busy and busy()
        alone = busy_now and self._macs < BUSY_SPLIT_MACS
        if self._col_split:     # column blocks whatever the load: their bits are the shape's
            if alone or self._par is None:
                self._split(a, b, c, workers=1 if alone else self.workers)
                return out
            ta, tb, n, m, k, alpha, ldb, lda, beta, ldc = self._refs
            with one_thread_each():
                self._par(self._par_gemm, ta, tb, n, m, k, alpha, b.ctypes.data,
                          ldb, a.ctypes.data, lda, beta, c.ctypes.data, ldc, self.n,
                          *self._par_steps)
            return out
        if self.splits(busy_now):
            self._split(a, b, c)
            return out
        if self._gemv is not None:
            with one_thread_each():
                self._gemv_batches(a.ctypes.data, b.ctypes.data, c.ctypes.data, 0, self.batch)
            return out
        ta, tb, n, m, k, alpha, ldb, lda, beta, ldc = self._refs
        with one_thread_each() if busy_now or self._hold else _NOTHING:
            for i in range(self.batch):
                self.fn(ta, tb, n, m, k, alpha, b[i].ctypes.data, ldb, a[i].ctypes.data, lda,
                        beta, c[i].ctypes.data, ldc)
        return out

    def _gemv_batches(self, a, b, c, lo, hi):
        """Batches [lo, hi) of a :class:`GemvForm` product (a, b, c: the operands' and the
        result's addresses), one ?gemv each, on OpenBLAS's calling thread (the caller holds
        it at one thread: every split then rounds alike)."""
        trans, rows, cols, alpha, ld, inc, beta = self._gemv_refs
        item = self.dtype.itemsize
        sa, sb, sc = (x * item for x in (self.m * self.k, self.k * self.n, self.m * self.n))
        matrix_is_rhs = self._gemv.matrix == "rhs"
        for i in range(lo, hi):
            mat, vec = (b + i * sb, a + i * sa) if matrix_is_rhs else (a + i * sa, b + i * sb)
            self._gemv_fn(trans, rows, cols, alpha, mat, ld, vec, inc, beta, c + i * sc, inc)

    def splits(self, busy_now: bool) -> bool:
        """Whether a call while the machine reads as busy (``busy_now``) computes the product
        as ``self.parts`` over the runtime's threads, not as one gemm call per batch: row
        blocks only while busy (or held at one thread anyway), batch and column blocks always,
        but for a product too small to split while busy."""
        alone = busy_now and self._macs < BUSY_SPLIT_MACS
        return len(self.parts) > 1 and not alone and (
            busy_now or ROW_SPLIT_WHEN_QUIET or not self._row_split or self._hold)

    def _split(self, a, b, c, workers=None):
        """The product as ``self.parts``, OpenBLAS held at one thread each, taken in turn
        (:func:`run_in_turn`) by this thread and ``workers - 1`` (default
        ``self.workers - 1``) of the pool's."""
        workers = self.workers if workers is None else workers
        pointers = (a.ctypes.data, b.ctypes.data, c.ctypes.data)
        with one_thread_each():
            run_in_turn([functools.partial(self._part, part, *pointers) for part in self.parts],
                        self.parallel, workers)

    def _part(self, part: GemmPart, a, b, c):
        if self._gemv is not None:      # split_parts splits it by batches only
            return self._gemv_batches(a, b, c, part.batch_lo, part.batch_hi)
        ta, tb, n, _, k, alpha, ldb, lda, beta, ldc = self._refs
        m, item = ctypes.addressof(part.rows), self.dtype.itemsize
        sa, sb, sc = (x * item for x in (self.m * self.k, self.k * self.n, self.m * self.n))
        # the block's first row: of the lhs (a column where it is stored (k, m)), the result
        a += part.row_lo * (1 if self._lay.trans_lhs else self.k) * item
        c += part.row_lo * self.n * item
        if part.cols is not None:
            # the block's first column: of the rhs (a row where it is stored (n, k)), the
            # result; the result's rows keep their full length (ldc)
            n = ctypes.addressof(part.cols)
            b += part.col_lo * (self.k if self._lay.trans_rhs else 1) * item
            c += part.col_lo * item
        for i in range(part.batch_lo, part.batch_hi):
            self.fn(ta, tb, n, m, k, alpha, b + i * sb, ldb, a + i * sa, lda, beta, c + i * sc,
                    ldc)


def run_in_turn(calls, parallel, workers):
    """Call each of ``calls`` once: this thread and up to ``workers - 1`` threads of
    ``parallel()`` (an executor) take them in turn, so a thread the OS has not scheduled
    yet takes none and a busy machine delays the whole by at most one call. The first
    error is raised again here, after every call has run."""
    if workers <= 1 or len(calls) <= 1:
        for call in calls:
            call()
        return
    lock, done = threading.Lock(), threading.Event()
    state = {"next": 0, "left": len(calls), "error": None}

    def take():
        while True:
            with lock:
                i = state["next"]
                if i == len(calls):
                    return
                state["next"] = i + 1
            try:
                calls[i]()
            except BaseException as e:      # raised again by the caller
                state["error"] = e
            with lock:
                state["left"] -= 1
                if state["left"] == 0:
                    done.set()
    for _ in range(min(workers, len(calls)) - 1):
        parallel().submit(take)
    take()
    done.wait()
    if state["error"] is not None:
        raise state["error"]


# a batched product out of gemm layout up to this many multiply-adds goes through NumPy's
# matmul (OpenBLAS runs products this small on the caller's thread)
MATMUL_MAX_MACS = 1 << 21
# a product splits over the runtime's threads from this many multiply-adds (below it the
# hand-over costs more than it saves: 256^3 f32, quiet: 0.15 ms on OpenBLAS's 2 threads,
# 0.28 ms on one, 0.38 ms split)
SPLIT_MACS = 1 << 25
# OPENBLAS_THREADS_MACS (2^19, backends/openblas.py): OpenBLAS itself runs a gemm call of
# fewer multiply-adds on the calling thread (its interface gives each thread at least
# 4 x 65536; measured: its workers take no CPU time below 2^19, some from 2^19): holding
# it at one thread would change nothing.
# ONE_THREAD_MACS (2^28, backends/openblas.py): a gemm call below it runs with OpenBLAS
# held at one thread whatever the load. benchmarks/blas_under_load.py --sweep, float32,
# 2 cores on a host at a load of ~7, medians of two runs (ms, OpenBLAS's 2 threads / one
# thread): under two more busy loops its threads wait on each other at their barriers (128x784x256:
# 0.8-92 / 1.3; 512^3: 68-84 / 26-30; 256x1024x1024: 78 / 50-68), and quiet they gain at
# most 1.5x below 2^28 (128x784x256: 0.8 / 1.2) and lose as often (512^3: 34 / 13-14);
# from 2^29 they win (1024x1024x512: quiet 31-38 / 40-60, loaded 71-77 / 100-103).
# Products this big split over the runtime's own threads (SPLIT_MACS) where they can.
# While the machine is busy, a product from ONE_THREAD_MACS that does not split, and a
# split one below BUSY_SPLIT_MACS, runs on one OpenBLAS thread
BUSY_SPLIT_MACS = 1 << 28
# row blocks re-pack the right-hand operand per block: on a quiet machine OpenBLAS's own
# threads are faster for them (an LSTM's weight gradients, 3200x256 @ 256x1024 f32, whole
# step: 110 ms split vs 86 ms), so while quiet only batch blocks split
ROW_SPLIT_WHEN_QUIET = False
# a split product has up to this many parts per thread (a preempted thread holds back one)
PARTS_PER_WORKER = 2
# a product of fewer than COLUMN_SPLIT_ROWS rows and at least SPLIT_MACS multiply-adds is
# always computed as COLUMN_PARTS blocks of its columns (cut at multiples of COLUMN_ALIGN),
# whatever the thread count or load, so its bits depend on its shape alone (they differ
# from one whole gemm's: sgemm's Haswell kernels round column blocks differently). Few
# rows cannot split by rows, and the blocks pack only the small lhs again (a 10-model
# ensemble's 64x784 @ 784x1280 f32: 1.03 ms whole on one thread, 0.57 ms on two)
COLUMN_SPLIT_ROWS = 2 * 48
# row blocks of a split product start at multiples of this many rows: a multiple of
# every OpenBLAS kernel's panel width (Haswell's: 12 rows for sgemm, 2 for dgemm, 6 for
# cgemm and zgemm), so each block packs the same panels as the whole product
SPLIT_ALIGN = 48
# a row block has more multiply-adds than this: OpenBLAS's SkylakeX kernels compute a
# product of at most 100^3 by a small-matrix kernel that sums the whole k loop in registers,
# where the packed kernel stores between k panels (sgemm, 103x243 @ 243x40: a block of 48
# rows rounded 18% of its elements differently from the whole product). Blocks are sized
# for twice this: rounding the cuts to SPLIT_ALIGN rows can halve one
ROW_BLOCK_MIN_MACS = 1 << 20


@dataclass(frozen=True)
class GemmPart:
    """One thread's share of a split product: batches [batch_lo, batch_hi) of rows
    [row_lo, row_lo + rows.value) of the result (``rows``: a ctypes BLAS int), and of its
    columns [col_lo, col_lo + cols.value) when ``cols`` is set (else all of them)."""

    batch_lo: int
    batch_hi: int
    row_lo: int
    rows: object
    col_lo: int = 0
    cols: object = None


def split_parts(lay: GemmLayout, workers: int, dtype) -> list[GemmPart]:
    """How a product of ``lay`` splits over ``workers`` threads: by batches when there are
    enough, else by blocks of the result's rows (SPLIT_ALIGN apart, each of more than
    ROW_BLOCK_MIN_MACS multiply-adds); one part (no split) below SPLIT_MACS multiply-adds.
    Each element is then summed in the same order as by one unsplit gemm on one OpenBLAS
    thread: the k loop is never split, and row blocks are used
    only when :func:`row_blocks_round_alike` says so for ``dtype`` (column blocks change
    sgemm's bits on Haswell kernels; tests/backends/llvm/test_llvm_gemm_threads.py). The
    exception is a product of few rows (:func:`column_blocks`): column blocks fixed by its
    shape, whatever ``workers``."""
    c_int = ctypes.c_int64 if blas_int_bits() == 64 else ctypes.c_int
    whole = [GemmPart(0, lay.batch, 0, c_int(lay.m))]
    if column_blocks(lay):
        return [GemmPart(0, 1, 0, c_int(lay.m), lo, c_int(hi - lo))
                for lo, hi in itertools.pairwise(column_cuts(lay.n)) if hi > lo]
    if workers <= 1 or lay.batch * lay.m * lay.n * lay.k < SPLIT_MACS or \
            min(lay.m, lay.n, lay.k) == 0:
        return whole
    if lay.batch >= workers:
        parts_n = min(PARTS_PER_WORKER * workers, lay.batch)
        bounds = [lay.batch * p // parts_n for p in range(parts_n + 1)]
        return [GemmPart(lo, hi, 0, c_int(lay.m)) for lo, hi in itertools.pairwise(bounds)]
    if gemv_form(lay) is not None:      # ?gemv's rows in blocks need not round alike
        return whole
    parts_n = min(PARTS_PER_WORKER * workers, lay.m // SPLIT_ALIGN,
                  lay.m * lay.n * lay.k // (2 * ROW_BLOCK_MIN_MACS))
    if parts_n <= 1 or not row_blocks_round_alike(dtype):
        return whole
    cuts = sorted({SPLIT_ALIGN * round(lay.m * p / (parts_n * SPLIT_ALIGN))
                   for p in range(1, parts_n)} - {0, lay.m})
    bounds = [0, *cuts, lay.m]
    return [GemmPart(0, lay.batch, lo, c_int(hi - lo)) for lo, hi in itertools.pairwise(bounds)]


def column_cuts(n: int) -> list[int]:
    """Where a product of ``n`` columns is cut into its COLUMN_PARTS column blocks (the
    first column of each, then ``n``): floor(n p / COLUMN_PARTS) rounded down to a multiple
    of COLUMN_ALIGN; par_gemm's native code computes the same cuts."""
    return [0, *(COLUMN_ALIGN * (n * p // (COLUMN_PARTS * COLUMN_ALIGN))
                 for p in range(1, COLUMN_PARTS)), n]


def column_blocks(lay: GemmLayout) -> bool:
    """Whether a product of ``lay`` is computed as column blocks (COLUMN_SPLIT_ROWS): a
    function of the shape alone, never of the thread count or the load."""
    return lay.batch == 1 and 0 < lay.m < COLUMN_SPLIT_ROWS and min(lay.k, lay.n) > 0 and \
        lay.n >= 2 * COLUMN_ALIGN and lay.m * lay.n * lay.k >= SPLIT_MACS and \
        gemv_form(lay) is None      # one row: one ?gemv, faster than any split ?gemm


def one_thread_always(macs) -> bool:
    """Whether a gemm call of ``macs`` multiply-adds runs with OpenBLAS held at one thread
    whatever the load: from OPENBLAS_THREADS_MACS (below it OpenBLAS stays on the caller's
    thread by itself) up to ONE_THREAD_MACS."""
    return OPENBLAS_THREADS_MACS <= macs < ONE_THREAD_MACS


def call_macs(lhs_shape, rhs_shape, dimension_numbers) -> int:
    """The multiply-adds of one gemm call of a dot_general (one batch: m n k)."""
    (_, rc), (lb, rb) = dimension_numbers
    lhs = math.prod(d for i, d in enumerate(lhs_shape) if i not in lb)     # m k
    rfree = math.prod(d for i, d in enumerate(rhs_shape) if i not in rc and i not in rb)
    return lhs * rfree


def busy() -> bool:
    """Whether the machine is busier than its cores (a one-minute load average above them),
    where OpenBLAS's own threads stall at their barriers."""
    try:
        return os.getloadavg()[0] >= (os.cpu_count() or 1) + 1
    except (AttributeError, OSError):     # no load average on this platform
        return False


_alike: dict = {}


def row_blocks_round_alike(dtype) -> bool:
    """Whether this BLAS gives a product's row blocks (SPLIT_ALIGN apart) the same bits as
    the whole product, both on one thread: checked once per dtype on a product whose k
    loop spans several of OpenBLAS's panels and whose blocks have ROW_BLOCK_MIN_MACS."""
    dtype = np.dtype(dtype)
    if dtype not in _alike:
        rng = np.random.default_rng(0)
        m, k, n = 3 * SPLIT_ALIGN + 7, 1031, 77     # blocks of 48, 48 and 55 rows
        a, b = (rng.standard_normal(s).astype(dtype) for s in ((m, k), (k, n)))
        if dtype.kind == "c":
            a, b = a + 1j * a[::-1], b + 1j * b[::-1]
        dot = DotGeneral((m, k), (k, n), dtype, (((1,), (0,)), ((), ())))
        with one_thread_each():
            whole = dot(a, b)
            blocks = [DotGeneral((hi - lo, k), (k, n), dtype, (((1,), (0,)), ((), ())))(
                a[lo:hi], b) for lo, hi in itertools.pairwise([0, SPLIT_ALIGN, 2 * SPLIT_ALIGN, m])]
        _alike[dtype] = bool(np.array_equal(np.concatenate(blocks), whole))
    return _alike[dtype]


_SAFE = str.maketrans({c: "_" for c in " []x,.-"})


@dataclass(frozen=True)
class GemmCall:
    """A dot_general inside a native graph entry: ?gemm (``symbol``) on slots ``lhs`` and
    ``rhs`` into slot ``out``, every operand in its own memory as ``layout`` says; ?gemv
    (``gemv_symbol``) instead for a :func:`gemv_form` layout, as :class:`DotGeneral`."""

    symbol: str
    dtype: np.dtype
    lhs: int
    rhs: int
    out: int
    layout: GemmLayout
    gemv_symbol: str


def emit_gemm(b: ir.IRBuilder, call: GemmCall, data):
    """Call ?gemm (?gemv for a :func:`gemv_form` layout) once per batch at ``b``;
    ``data(slot)`` is the slot's data pointer."""
    i32, i64, ptr = ir.IntType(blas_int_bits()), ir.IntType(64), ir.PointerType()
    part = ir.FloatType() if _PART[call.dtype] is ctypes.c_float else ir.DoubleType()
    scalar = ir.ArrayType(part, 2) if call.dtype.kind == "c" else part
    module, lay = b.module, call.layout
    fn = module.globals.get(call.symbol) or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [ptr] * 13), call.symbol)

    def cell(ty, value):
        """A constant global holding ``value`` (one per type and value in the module):
        ?gemm reads its scalars through pointers and never writes them."""
        name = f"fc_gemm_{ty}_{value}".translate(_SAFE)
        p = module.globals.get(name)
        if p is None:
            p = ir.GlobalVariable(module, ty, name)
            p.initializer = ir.Constant(ty, value)
            p.global_constant, p.linkage = True, "internal"
        return p
    ta, tb = (cell(ir.IntType(8), ord("T" if t else "N")) for t in (lay.trans_rhs, lay.trans_lhs))
    n, m, k = cell(i32, lay.n), cell(i32, lay.m), cell(i32, lay.k)
    ldb, lda, ldc = cell(i32, lay.ldb), cell(i32, lay.lda), cell(i32, max(lay.n, 1))
    alpha, beta = ((cell(scalar, [v, 0.0]) if call.dtype.kind == "c" else cell(scalar, v))
                   for v in (1.0, 0.0))
    lhs, rhs, out = data(call.lhs), data(call.rhs), data(call.out)
    form = gemv_form(lay)
    if form is not None:
        gemv = module.globals.get(call.gemv_symbol) or ir.Function(
            module, ir.FunctionType(ir.VoidType(), [ptr] * 11), call.gemv_symbol)
        trans, one = cell(ir.IntType(8), ord("T" if form.trans else "N")), cell(i32, 1)
        rows, cols, ld = cell(i32, form.rows), cell(i32, form.cols), cell(i32, form.ld)

        def product(lhs, rhs, out):
            mat, vec = (rhs, lhs) if form.matrix == "rhs" else (lhs, rhs)
            b.call(gemv, [trans, rows, cols, alpha, mat, ld, vec, one, beta, out, one])
    else:
        def product(lhs, rhs, out):
            b.call(fn, [ta, tb, n, m, k, alpha, rhs, ldb, lhs, lda, beta, out, ldc])
    if lay.batch == 1:
        product(lhs, rhs, out)
        return
    head, i, done = irloop.open_loop(b, ir.Constant(i64, 0), ir.Constant(i64, lay.batch),
                                     ("gemm_head", "gemm_body", "gemm_done"))

    def at(base, per_batch):
        return b.gep(base, [b.mul(i, ir.Constant(i64, per_batch))], source_etype=scalar)
    product(at(lhs, lay.m * lay.k), at(rhs, lay.k * lay.n), at(out, lay.m * lay.n))
    irloop.close_loop(b, head, i, done, ir.Constant(i64, 1))


_threads = openblas.THREADS
_NOTHING = contextlib.nullcontext()
_OneThread, _one_thread = openblas.OneThread, openblas.one_thread


def one_thread_each():
    """A context within which NumPy's OpenBLAS runs each call on the calling thread, for
    callers that run the work on their own threads or on this one alone: OpenBLAS's own
    threads meet at barriers inside every gemm, and on a busy machine a preempted one
    stalls the rest (a 74k x 288 x 64 sgemm: 41 ms on its 2 threads, 15 ms as two halves
    on two of ours, 1 thread each; 128 x 784 x 256: 26-64 ms on its 2 threads, 1.3 ms on
    one).

    The setting is the library's (process-wide, as ``openblas_set_num_threads`` is):
    nested and concurrent blocks share one count, and the last to leave puts the thread
    count back as it was before the first entered (unless someone else changed it in the
    meantime: then theirs stays). While a block is open, NumPy products that other threads
    of the process run also get one OpenBLAS thread (slower at worst, never wrong).
    A no-op for SciPy's BLAS."""
    lib = _numpy_lib[0] if _numpy_lib else None
    if lib is None:
        return _NOTHING
    context = _contexts.get(id(lib))
    if context is None:
        context = _contexts[id(lib)] = _OneThread(lib)
    return context


_contexts: dict = {}


def hold_one_thread(hold: bool) -> bool:
    """Keep NumPy's OpenBLAS at one thread (process-wide, NumPy's own products included)
    while ``hold`` is the last value given, for deterministic mode: a product split over
    OpenBLAS's threads may round differently from one thread's. False when the BLAS in
    use is not NumPy's OpenBLAS (SciPy's: its thread count is not held)."""
    blas_int_bits()
    lib = _numpy_lib[0]
    if lib is None:
        return False
    with _threads["hold"]:
        if hold != _threads["held"]:
            _threads["held"] = hold
            _one_thread(lib, 1 if hold else -1)
    return True
