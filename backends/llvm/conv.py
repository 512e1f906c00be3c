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

Feature groups and batch groups are column/row blocks of the same gemm calls. Blocks hold
``PACK_ELEMENTS`` elements; smaller blocks (more, smaller gemm calls) measured slower on
the benchmark shapes (benchmarks/conv.py). Integer and float16 convolutions run in the
interpreter (partition.lowering_gap).
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

# the packed block of rows (elements) that one gemm consumes
PACK_ELEMENTS = 1 << 23
# "images": the most elements of one image's packed columns per gemm, and the fewest
# output positions per image for which a gemm per image beats the "taps" blocks
COLUMN_ELEMENTS = 1 << 20
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
    """A compiled conv for fixed shapes and parameters: ``run(lhs, rhs) -> out``.
    ``parallel`` (a function returning an executor) and ``workers`` let the "images" mode
    split the images over threads."""

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
            return self._images(lhs, rhs, out)
        if self.mode == "features":
            return self._features(lhs, rhs, out)
        res = self._taps(lhs, rhs) if self.mode == "taps" else self._outputs(lhs, rhs)
        # res: (N_out, O, *out spatial) -> the out spec's layout
        np.copyto(out, np.transpose(res, np.argsort(self.ospec)))
        return out

    # -- the padded, dilated, feature-last input ----------------------------------
    def _grid_input(self, lhs, last_multiple, groups, tail):
        """lhs as a flat zero buffer holding (N, groups, *grid, C // groups), the last grid
        extent rounded up to a multiple of ``last_multiple``, then ``tail`` zeros."""
        grid = list(self.grid)
        if grid:
            grid[-1] = -(-grid[-1] // last_multiple) * last_multiple
        per, cg = math.prod(grid), self.c // groups
        buf = np.zeros(self.n * groups * per * cg + tail * cg, self.dtype)
        view = buf[:self.n * groups * per * cg].reshape(self.n, groups, *grid, cg)
        dst, src = [slice(None)] * 2, [slice(None)] * 3
        for d, ld, (lo, _), g in zip(self.sizes, self.ldil, self.padding, self.grid,
                                     strict=True):
            # element j lands at lo + j * ld; negative padding crops
            first, last = max(0, -(lo // ld)), min(d, (g - lo + ld - 1) // ld)
            if last <= first:
                return buf, grid
            dst.append(slice(lo + first * ld, lo + (last - 1) * ld + 1, ld))
            src.append(slice(first, last))
        x = np.transpose(lhs, self.lspec).reshape(self.n, groups, cg, *self.sizes)
        view[tuple(dst)] = np.moveaxis(x[tuple(src)], 2, -1)
        return buf, grid

    def _call(self, m, nn, k, a, lda, b, ldb, beta, c, ldc, b_rows=False):
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

    def _taps(self, lhs, rhs):
        s_last = self.strides[-1] if self.strides else 1
        gs_real = [math.prod(self.grid[j + 1:]) for j in range(len(self.grid))]
        tail = sum((k - 1) * d * g for k, d, g in zip(self.kernel, self.rdil, gs_real,
                                                      strict=True))
        tail += (self.grid[-1] + s_last + 1 if self.grid else 1) * 2
        buf, grid = self._grid_input(lhs, s_last, 1, tail)
        gstr = [math.prod(grid[j + 1:]) for j in range(len(grid))]
        per = math.prod(grid)
        G, B, C, O, I = self.G, self.B, self.c, self.o, self.i  # noqa: E741
        taps = math.prod(self.kernel)
        depth = taps * I                        # the contraction of one group
        og = O // G
        # the kernel as (G, *taps, I, O // G): one (depth, O // G) matrix per group
        w = np.transpose(rhs, self.rspec).reshape(G, og, I, *self.kernel)
        w = np.ascontiguousarray(np.moveaxis(np.moveaxis(w, 1, -1), 1, -2))
        rows = self.n * per // s_last
        y = np.empty((rows, O), self.dtype)
        item = self.dtype.itemsize
        # packed rows: (rows, G, *taps, I), a strided view of the grid, copied a block at
        # a time (each block then feeds one gemm per group with the whole contraction)
        tap_strides = [d * g * C * item for d, g in zip(self.rdil, gstr, strict=True)]
        chunk = max(1, min(rows, PACK_ELEMENTS // max(G * depth, 1)))
        packed = np.empty((chunk, G * depth), self.dtype)
        wp, yp, pp = w.ctypes.data, y.ctypes.data, packed.ctypes.data
        blocks = G if G > 1 else B
        cols = O // blocks
        rows_b = rows // B
        for g_rows in range(B):
            for r0 in range(g_rows * rows_b, (g_rows + 1) * rows_b, chunk):
                m = min(chunk, (g_rows + 1) * rows_b - r0)
                view = np.lib.stride_tricks.as_strided(
                    buf[r0 * s_last * C:], (m, G, *self.kernel, I),
                    (s_last * C * item, I * item, *tap_strides, item), writeable=False)
                np.copyto(packed[:m].reshape(view.shape), view)
                for g in range(G):
                    col = g * og if G > 1 else g_rows * cols
                    self._call(m, cols, depth, pp + g * depth * item, G * depth,
                               wp + (g * depth * og + (col if G == 1 else 0)) * item,
                               og, False, yp + (r0 * O + col) * item, O)
        y = y.reshape(self.n, *grid[:-1], grid[-1] // s_last, O)
        index = (slice(None), *(slice(0, (n - 1) * s + 1, s) for n, s in
                                zip(self.out_sp[:-1], self.strides[:-1], strict=True)),
                 slice(0, self.out_sp[-1]), slice(None))
        y = y[index]                                          # N, *out, O
        if B > 1:
            nb = self.n // B
            y = y.reshape(B, nb, *self.out_sp, B, O // B)
            y = np.stack([y[g, ..., g, :] for g in range(B)], axis=-2)
            y = y.reshape(nb, *self.out_sp, O)
        return np.moveaxis(y, -1, 1)

    def _outputs(self, lhs, rhs):
        G, B, O, I = self.G, self.B, self.o, self.i  # noqa: E741
        gs_real = [math.prod(self.grid[j + 1:]) for j in range(len(self.grid))]
        tail = sum((p - 1) * s * g for p, s, g in zip(self.out_sp, self.strides, gs_real,
                                                      strict=True)) + 2
        buf, grid = self._grid_input(lhs, 1, G, tail)
        per = math.prod(grid)
        # the kernel embedded in a zero grid: (G, *grid, I, O // G)
        og = O // G
        kg = np.zeros((G, *grid, I, og), self.dtype)
        w = np.transpose(rhs, self.rspec).reshape(G, og, I, *self.kernel)
        index = (slice(None), *(slice(0, (k - 1) * d + 1, d) for k, d in
                                zip(self.kernel, self.rdil, strict=True)))
        kg[index] = np.moveaxis(np.moveaxis(w, 1, -1), 1, -2)
        gstr = [math.prod(grid[j + 1:]) for j in range(len(grid))]
        nb = self.n // B
        rows_n = self.n if G > 1 else nb            # images per gemm
        outs = math.prod(self.out_sp)
        z = np.empty((outs, rows_n, O), self.dtype)
        item = self.dtype.itemsize
        kp, zp = kg.ctypes.data, z.ctypes.data
        length = per * I
        blocks = G if G > 1 else B
        cols = O // blocks
        # packed rows (output position, image) x a block of the contraction (grid, I): a
        # strided view of the grid, one gemm per block, accumulated
        kc = max(1, min(length, PACK_ELEMENTS // max(outs * rows_n, 1)))
        packed = np.empty(outs * rows_n * kc, self.dtype)
        pp = packed.ctypes.data
        pos_strides = [s * g * I * item for s, g in zip(self.strides, gstr, strict=True)]
        image_stride = G * length * item
        for g in range(blocks):
            start = g * length if G > 1 else g * nb * length
            for k0 in range(0, length, kc):
                k = min(kc, length - k0)
                view = np.lib.stride_tricks.as_strided(
                    buf[start + k0:], (*self.out_sp, rows_n, k),
                    (*pos_strides, image_stride, item), writeable=False)
                np.copyto(packed[:outs * rows_n * k].reshape(view.shape), view)
                if G > 1:
                    b_ptr, ldb = kp + (g * length + k0) * og * item, og
                else:
                    b_ptr, ldb = kp + (k0 * O + g * cols) * item, O
                self._call(outs * rows_n, cols, k, pp, k, b_ptr, ldb, k0 > 0,
                           zp + g * cols * item, O)
        z = z.reshape(*self.out_sp, rows_n, O)
        return np.moveaxis(np.moveaxis(z, -2, 0), -1, 1)

    def _interior(self):
        """Where the input lands in the padded, dilated grid: (grid slices, input slices)
        per spatial dimension, or None when none of it does (negative padding)."""
        dst, src = [], []
        for d, ld, (lo, _), g in zip(self.sizes, self.ldil, self.padding, self.grid,
                                     strict=True):
            first, last = max(0, -(lo // ld)), min(d, (g - lo + ld - 1) // ld)
            if last <= first:
                return None
            dst.append(slice(lo + first * ld, lo + (last - 1) * ld + 1, ld))
            src.append(slice(first, last))
        return tuple(dst), tuple(src)

    def _images(self, lhs, rhs, out):
        """One gemm per image (and group) and block of output rows, straight into the
        (N_out, O, *out spatial) result: the kernel (O // blocks, I * taps) times the
        image's packed columns (I * taps, positions), a strided view of its channel-first
        padded grid (any stride and dilation)."""
        G, B, O, I = self.G, self.B, self.o, self.i  # noqa: E741
        grid, item = self.grid, self.dtype.itemsize
        per = math.prod(grid)
        x, where = np.transpose(lhs, self.lspec), self._interior()
        w = np.ascontiguousarray(np.transpose(rhs, self.rspec))     # (O, I, *kernel)
        depth = I * math.prod(self.kernel)
        direct = list(self.ospec) == sorted(self.ospec) and out.flags.c_contiguous
        res = out if direct else np.empty((self.n // B, O, *self.out_sp), self.dtype)
        gstr = [math.prod(grid[j + 1:]) * item for j in range(len(grid))]
        rest, outs = math.prod(self.out_sp[1:]), math.prod(self.out_sp)
        rows = max(1, min(self.out_sp[0], COLUMN_ELEMENTS // max(depth * rest, 1)))
        m = O // (G * B)
        nb = self.n // B
        wp, rp = w.ctypes.data, res.ctypes.data
        shape_k = (I, *self.kernel)
        strides_k = (per * item, *(d * g for d, g in zip(self.rdil, gstr, strict=True)))
        strides_p = tuple(s * g for s, g in zip(self.strides, gstr, strict=True))

        def images(lo, hi):
            cols = np.empty(depth * rows * rest, self.dtype)
            local = np.zeros((I, *grid), self.dtype)       # the padding stays zero
            image, cp = local.reshape(-1), cols.ctypes.data
            for n in range(lo, hi):
                b, j = divmod(n, nb)
                for g in range(G):
                    block = g if G > 1 else b
                    if where is not None:
                        local[(slice(None), *where[0])] = x[(n, slice(g * I, (g + 1) * I),
                                                             *where[1])]
                    for r0 in range(0, self.out_sp[0], rows):
                        r = min(rows, self.out_sp[0] - r0)
                        view = np.lib.stride_tricks.as_strided(
                            image[r0 * self.strides[0] * gstr[0] // item:],
                            (*shape_k, r, *self.out_sp[1:]), (*strides_k, *strides_p),
                            writeable=False)
                        np.copyto(cols[:depth * r * rest].reshape(view.shape), view)
                        self._call(m, r * rest, depth, wp + block * m * depth * item, depth,
                                   cp, r * rest, False,
                                   rp + ((j * O + block * m) * outs + r0 * rest) * item, outs)

        self._split(images, self.n, self.n * O * depth * outs // B)
        if not direct:
            np.copyto(out, np.transpose(res, np.argsort(self.ospec)))
        return out

    def _split(self, work, parts, macs):
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

    def _features(self, lhs, rhs, out):
        """A gemm per (group, in feature) and block of kernel rows, accumulated: the kernel
        slice (O // blocks, kernel positions) times packed columns (kernel positions, lhs
        batch x output positions), packed as rows (lhs batch x output positions, kernel
        positions: runs along the kernel's last dimension) from the channel-first grid of
        each in feature (filled per thread); the kernel is read in place when its spatial
        dimensions are contiguous (the cotangent, for a kernel gradient)."""
        G, B, O, I = self.G, self.B, self.o, self.i  # noqa: E741
        grid, item = self.grid, self.dtype.itemsize
        per, ks = math.prod(grid), math.prod(self.kernel)
        x, where = np.transpose(lhs, self.lspec), self._interior()
        w = np.transpose(rhs, self.rspec)                             # (O, I, *kernel)
        inner = [math.prod(self.kernel[j + 1:]) * item for j in range(len(self.kernel))]
        if (list(w.strides[2:]) != inner or min(w.strides[:2]) < ks * item
                or w.strides[0] % item or w.strides[1] % item):
            w = np.ascontiguousarray(w)
        so, si = w.strides[0], w.strides[1]
        m, nb = O // (G * B), self.n // B
        outs, rest = math.prod(self.out_sp), math.prod(self.kernel[1:])
        width = nb * outs
        rows = max(1, min(self.kernel[0], COLUMN_ELEMENTS // max(rest * width, 1)))
        gstr = [math.prod(grid[j + 1:]) * item for j in range(len(grid))]
        shape_q = (nb, *self.out_sp)
        strides_q = (per * item, *(s * g for s, g in zip(self.strides, gstr, strict=True)))
        strides_k = tuple(d * g for d, g in zip(self.rdil, gstr, strict=True))
        wp = w.ctypes.data

        def features(lo, hi):
            acc = np.zeros((O, width), self.dtype)
            cols = np.empty(rows * rest * width, self.dtype)
            local = np.zeros((nb, *grid), self.dtype)      # the padding stays zero
            flat, ap, cp = local.reshape(-1), acc.ctypes.data, cols.ctypes.data
            for t in range(lo, hi):
                block, i = divmod(t, I)
                g, b = (block, 0) if G > 1 else (0, block)
                if where is not None:
                    local[(slice(None), *where[0])] = x[(slice(b * nb, (b + 1) * nb),
                                                         g * I + i, *where[1])]
                start = 0
                for k0 in range(0, self.kernel[0], rows):
                    r = min(rows, self.kernel[0] - k0)
                    view = np.lib.stride_tricks.as_strided(
                        flat[start + k0 * strides_k[0] // item:],
                        (*shape_q, r, *self.kernel[1:]), (*strides_q, *strides_k),
                        writeable=False)
                    np.copyto(cols[:r * rest * width].reshape(view.shape), view)
                    self._call(m, width, r * rest, wp + block * m * so + i * si
                               + k0 * rest * item, so // item, cp, r * rest, True,
                               ap + block * m * width * item, width, b_rows=True)
            return acc

        accs = self._split(features, G * B * I, O // (G * B) * self.n * I * ks * outs)
        acc = accs[0] if len(accs) == 1 else np.sum(accs, axis=0)
        res = np.moveaxis(acc.reshape(O, nb, *self.out_sp), 0, 1)    # (nb, O, *out)
        np.copyto(out, np.transpose(res, np.argsort(self.ospec)))
        return out
