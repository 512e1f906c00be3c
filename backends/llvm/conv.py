"""conv_general_dilated as gemm calls on blocks of packed rows of the padded input.

The input is copied once into a zero-padded, dilated, feature-last grid
``(batch, *grid, features)``. A convolution is a sum over kernel taps and output
positions, and one of the two is usually small; the step contracts over the smaller:

- *taps* (a small kernel: the forward pass, the input gradient): every grid position
  (``stride`` apart along the last dimension) is a row; a block of rows is packed as
  (row, tap, feature) straight from a strided view of the grid, then one gemm per block
  (and group) with the ``(taps * in features, out features)`` kernel. Rows that are not
  output positions are computed and dropped (a ~(padded/out)^(spatial dims) overhead).
- *outputs* (few output positions, a big kernel: the kernel gradient): each (output
  position, image) is a row of the whole grid times the features, contracted in blocks
  against the kernel embedded in a zero grid of the same geometry. (A contraction against
  zeros turns an ``inf`` outside a window into ``NaN``; finite inputs match.)

Two per-image forms of the same contractions replace them when the images are big
(``IMAGES_MIN_OUTPUTS`` output positions, or kernel positions, or more, and
``IMAGES_MIN_MACS`` multiply-adds per image or in feature); the padded grid
is then channel-first and filled one image (or in feature) at a time by each thread:

- *images* (instead of taps): each image's columns (taps * in features, output
  positions) are packed from a strided view of its grid (cache-sized,
  ``COLUMN_ELEMENTS``) for one gemm with the ``(out features, taps * in features)``
  kernel straight into the (batch, out features, *out) result: no rows dropped, no
  transposed copy of the output.
- *features* (instead of outputs): per in feature, the kernel slice (out features,
  kernel positions), read in place, times the packed (lhs batch x output positions,
  kernel positions) rows, accumulated per thread.

Both split their images / in features over the runtime's threads with OpenBLAS held at
one thread each (blas.one_thread_each): OpenBLAS's own two threads stall at their
barriers on this busy host. benchmarks/conv.py, one process: forward 49-66 -> 14.5 ms,
forward+backward 91-192 -> 29.6 ms (JAX jit 20.7 / 52.7 ms, torch 19.3 / 36.6 ms).

This module plans (:class:`Conv` picks the mode and holds the grid, gemm and thread-split
helpers); ``conv_blocks.py`` emits *taps* and *outputs*, ``conv_images.py`` *images* and
*features*. Feature groups and batch groups are column/row blocks of the same gemm calls.
Blocks hold ``PACK_ELEMENTS`` (conv_blocks.py) elements; smaller blocks (more, smaller gemm
calls) measured slower on the benchmark shapes (benchmarks/conv.py). Integer and float16
convolutions run in the interpreter (partition.lowering_gap).
"""

from __future__ import annotations

import ctypes
import itertools
import math
from contextlib import nullcontext

import numpy as np

from .. import determinism
from . import blas
from .blas import _scalar, gemm
from .conv_blocks import outputs, taps
from .conv_images import features, images

# "images": the fewest output positions per image for which a gemm per image beats the
# "taps" blocks
IMAGES_MIN_OUTPUTS = 64
# ... and the fewest multiply-adds per image (per in feature) for which the per-image gemm
# outweighs its Python round (a strided view and a ctypes call, some microseconds): below
# it one gemm per block of all images is faster (cnn_digits' 1->16 3x3 conv on 64 8x8
# images: its training step 1.40 -> 0.62 ms)
IMAGES_MIN_MACS = 1 << 16
# "images" splits the images over ``parallel``'s threads from this many multiply-adds
SPLIT_MACS = 1 << 24
# the parts of a split conv in deterministic mode, however many threads run them
DETERMINISTIC_PARTS = 4


def _blas_int():
    """The ctypes type of the BLAS's integer arguments (64-bit where blas.py binds an
    ILP64 OpenBLAS and says so through ``blas_int_bits``)."""
    bits = getattr(blas, "blas_int_bits", None)
    return ctypes.c_int64 if bits is not None and bits() == 64 else ctypes.c_int


def _dilate(d, k):
    return 0 if d == 0 else 1 + k * (d - 1)


class Conv:
    """A compiled conv for fixed shapes and parameters: ``conv(lhs, rhs) -> out``.

    The planner: it reads the geometry and picks the ``mode``; the mode's emitter
    (``conv_blocks.taps``/``outputs``, ``conv_images.images``/``features``) computes the
    conv with the padded grid, gemm call and thread split this class provides.
    ``parallel`` (a function returning an executor) and ``workers`` let the per-image
    modes split their images over threads."""

    def __init__(self, lhs_shape, rhs_shape, out_shape, dtype, *, window_strides, padding,
                 lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                 batch_group_count, parallel=None, workers=1):
        self.parallel, self.workers = parallel, workers if parallel is not None else 1
        self.dtype = dt = np.dtype(dtype)
        self.lspec, self.rspec, self.ospec = dimension_numbers
        self.out_shape = tuple(out_shape)
        n, c = (lhs_shape[a] for a in self.lspec[:2])
        o, i = (rhs_shape[a] for a in self.rspec[:2])
        self.n, self.c, self.o, self.i = n, c, o, i
        self.G, self.B = feature_group_count, batch_group_count
        self.sizes = [lhs_shape[a] for a in self.lspec[2:]]
        self.kernel = [rhs_shape[a] for a in self.rspec[2:]]
        self.out_sp = [out_shape[a] for a in self.ospec[2:]]
        self.strides, self.padding = list(window_strides), list(padding)
        self.ldil, self.rdil = list(lhs_dilation), list(rhs_dilation)
        nsp = len(self.sizes)
        self.grid = [_dilate(d, ld) + lo + hi for d, ld, (lo, hi) in
                     zip(self.sizes, self.ldil, self.padding, strict=True)]
        taps, outs = math.prod(self.kernel), math.prod(self.out_sp)
        rows = n * math.prod(self.grid) / max(self.strides[-1] if nsp else 1, 1)
        self.mode = "outputs" if outs * n * math.prod(self.grid) < taps * rows else "taps"
        if nsp == 0:
            self.mode = "taps"
        elif (self.mode == "taps" and outs >= IMAGES_MIN_OUTPUTS
              and o * outs * taps * c // self.G >= IMAGES_MIN_MACS):
            self.mode = "images"
        elif (self.mode == "outputs" and taps >= IMAGES_MIN_OUTPUTS
              and o // (self.G * self.B) * (n // self.B) * outs * taps >= IMAGES_MIN_MACS):
            self.mode = "features"
        self.fn = gemm(dt)
        self.int = _blas_int()
        self._consts = [ctypes.c_char(b"N"), _scalar(dt, 1.0), _scalar(dt, 0.0),
                        ctypes.c_char(b"T")]
        self.empty = min(n, o, *self.out_sp) == 0

    def __call__(self, lhs, rhs, out=None):
        if out is None:
            out = np.empty(self.out_shape, self.dtype)
        if self.empty:
            return out
        if self.c == 0:
            out[...] = 0
            return out
        if self.mode == "images":
            return images(self, lhs, rhs, out)
        if self.mode == "features":
            return features(self, lhs, rhs, out)
        res = taps(self, lhs, rhs) if self.mode == "taps" else outputs(self, lhs, rhs)
        # res: (N_out, O, *out spatial) -> the out spec's layout
        np.copyto(out, np.transpose(res, np.argsort(self.ospec)))
        return out

    def grid_input(self, lhs, last_multiple, groups, tail):
        """lhs as a flat zero buffer holding (N, groups, *grid, C // groups), the last grid
        extent rounded up to a multiple of ``last_multiple``, then ``tail`` zeros."""
        grid = list(self.grid)
        if grid:
            grid[-1] = -(-grid[-1] // last_multiple) * last_multiple
        per, cg = math.prod(grid), self.c // groups
        buf = np.zeros(self.n * groups * per * cg + tail * cg, self.dtype)
        view = buf[:self.n * groups * per * cg].reshape(self.n, groups, *grid, cg)
        where = self.interior()
        if where is None:
            return buf, grid
        x = np.transpose(lhs, self.lspec).reshape(self.n, groups, cg, *self.sizes)
        view[(slice(None),) * 2 + where[0]] = np.moveaxis(x[(slice(None),) * 3 + where[1]],
                                                          2, -1)
        return buf, grid

    def interior(self):
        """Where the input lands in the padded, dilated grid: (grid slices, input slices)
        per spatial dimension, or None when none of it does (negative padding)."""
        dst, src = [], []
        for d, ld, (lo, _), g in zip(self.sizes, self.ldil, self.padding, self.grid,
                                     strict=True):
            # element j lands at lo + j * ld; negative padding crops
            first, last = max(0, -(lo // ld)), min(d, (g - lo + ld - 1) // ld)
            if last <= first:
                return None
            dst.append(slice(lo + first * ld, lo + (last - 1) * ld + 1, ld))
            src.append(slice(first, last))
        return tuple(dst), tuple(src)

    def matmul(self, m, nn, k, a, lda, b, ldb, beta, c, ldc, b_rows=False):
        """Row-major C[m, nn] = A[m, k] @ B[k, nn] (+ C when ``beta``); row strides lda,
        ldb, ldc; a, b, c are addresses. ``b_rows``: B is stored as its transpose, (nn, k)
        rows of stride ldb."""
        if m <= 0 or nn <= 0:
            return
        if self.int is ctypes.c_int and max(m, nn, k, lda, ldb, ldc) >= 2 ** 31:
            raise ValueError("conv_general_dilated: a matrix dimension does not fit BLAS's "
                             "32-bit int")
        ci = self.int
        ints = [ci(nn), ci(m), ci(k), ci(ldb), ci(lda), ci(ldc)]
        nt, one, zero, tr = self._consts
        ad = ctypes.addressof
        self.fn(ad(tr if b_rows else nt), ad(nt), ad(ints[0]), ad(ints[1]), ad(ints[2]),
                ad(one), b, ad(ints[3]), a, ad(ints[4]), ad(one if beta else zero), c, ad(ints[5]))

    def split(self, work, parts, macs):
        """work(lo, hi) over [0, parts), split over the threads from SPLIT_MACS
        multiply-adds (OpenBLAS held at one thread each); the list of the parts' results.
        In deterministic mode "features" (which sums the parts' results) splits into
        DETERMINISTIC_PARTS parts whatever the thread count, so it rounds the same way
        ("images" writes each image's results whole: with OpenBLAS at one thread, any
        split gives the same bits)."""
        if determinism.state["enabled"] and self.mode == "features":
            parts_n = min(DETERMINISTIC_PARTS, parts) if macs >= SPLIT_MACS else 1
            if self.workers <= 1 and parts_n > 1:
                bounds = [parts * p // parts_n for p in range(parts_n + 1)]
                return [work(lo, hi) for lo, hi in itertools.pairwise(bounds)]
        else:
            parts_n = min(self.workers, parts) if macs >= SPLIT_MACS else 1
        if parts_n <= 1:
            # its gemm calls are at most ``macs``: on one OpenBLAS thread below
            # blas.ONE_THREAD_MACS, as a product of that size
            with blas.one_thread_each() if blas.one_thread_always(macs) else nullcontext():
                return [work(0, parts)]
        bounds = [parts * p // parts_n for p in range(parts_n + 1)]
        with blas.one_thread_each():
            futures = [self.parallel().submit(work, lo, hi)
                       for lo, hi in itertools.pairwise(bounds[1:])]
            first = work(bounds[0], bounds[1])
            return [first] + [f.result() for f in futures]
