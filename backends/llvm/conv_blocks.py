"""The feature-last block forms of conv.py's :class:`~.conv.Conv`: *taps* (rows of
packed taps, one gemm per block and group) and *outputs* (rows of output positions against
the kernel embedded in a zero grid, accumulated over blocks of the contraction)."""

from __future__ import annotations

import math

import numpy as np

# the packed block of rows (elements) that one gemm consumes
PACK_ELEMENTS = 1 << 23


def taps(conv, lhs, rhs):
    s_last = conv.strides[-1] if conv.strides else 1
    gs_real = [math.prod(conv.grid[j + 1:]) for j in range(len(conv.grid))]
    tail = sum((k - 1) * d * g for k, d, g in zip(conv.kernel, conv.rdil, gs_real,
                                                  strict=True))
    tail += (conv.grid[-1] + s_last + 1 if conv.grid else 1) * 2
    buf, grid = conv.grid_input(lhs, s_last, 1, tail)
    gstr = [math.prod(grid[j + 1:]) for j in range(len(grid))]
    per = math.prod(grid)
    G, B, C, O, I = conv.G, conv.B, conv.c, conv.o, conv.i  # noqa: E741
    taps = math.prod(conv.kernel)
    depth = taps * I                        # the contraction of one group
    og = O // G
    # the kernel as (G, *taps, I, O // G): one (depth, O // G) matrix per group
    w = np.transpose(rhs, conv.rspec).reshape(G, og, I, *conv.kernel)
    w = np.ascontiguousarray(np.moveaxis(np.moveaxis(w, 1, -1), 1, -2))
    rows = conv.n * per // s_last
    y = np.empty((rows, O), conv.dtype)
    item = conv.dtype.itemsize
    # packed rows: (rows, G, *taps, I), a strided view of the grid, copied a block at
    # a time (each block then feeds one gemm per group with the whole contraction)
    tap_strides = [d * g * C * item for d, g in zip(conv.rdil, gstr, strict=True)]
    chunk = max(1, min(rows, PACK_ELEMENTS // max(G * depth, 1)))
    packed = np.empty((chunk, G * depth), conv.dtype)
    wp, yp, pp = w.ctypes.data, y.ctypes.data, packed.ctypes.data
    blocks = G if G > 1 else B
    cols = O // blocks
    rows_b = rows // B
    for g_rows in range(B):
        for r0 in range(g_rows * rows_b, (g_rows + 1) * rows_b, chunk):
            m = min(chunk, (g_rows + 1) * rows_b - r0)
            view = np.lib.stride_tricks.as_strided(
                buf[r0 * s_last * C:], (m, G, *conv.kernel, I),
                (s_last * C * item, I * item, *tap_strides, item), writeable=False)
            np.copyto(packed[:m].reshape(view.shape), view)
            for g in range(G):
                col = g * og if G > 1 else g_rows * cols
                conv.matmul(m, cols, depth, pp + g * depth * item, G * depth,
                           wp + (g * depth * og + (col if G == 1 else 0)) * item,
                           og, False, yp + (r0 * O + col) * item, O)
    y = y.reshape(conv.n, *grid[:-1], grid[-1] // s_last, O)
    index = (slice(None), *(slice(0, (n - 1) * s + 1, s) for n, s in
                            zip(conv.out_sp[:-1], conv.strides[:-1], strict=True)),
             slice(0, conv.out_sp[-1]), slice(None))
    y = y[index]                                          # N, *out, O
    if B > 1:
        nb = conv.n // B
        y = y.reshape(B, nb, *conv.out_sp, B, O // B)
        y = np.stack([y[g, ..., g, :] for g in range(B)], axis=-2)
        y = y.reshape(nb, *conv.out_sp, O)
    return np.moveaxis(y, -1, 1)


def outputs(conv, lhs, rhs):
    G, B, O, I = conv.G, conv.B, conv.o, conv.i  # noqa: E741
    gs_real = [math.prod(conv.grid[j + 1:]) for j in range(len(conv.grid))]
    tail = sum((p - 1) * s * g for p, s, g in zip(conv.out_sp, conv.strides, gs_real,
                                                  strict=True)) + 2
    buf, grid = conv.grid_input(lhs, 1, G, tail)
    per = math.prod(grid)
    # the kernel embedded in a zero grid: (G, *grid, I, O // G)
    og = O // G
    kg = np.zeros((G, *grid, I, og), conv.dtype)
    w = np.transpose(rhs, conv.rspec).reshape(G, og, I, *conv.kernel)
    index = (slice(None), *(slice(0, (k - 1) * d + 1, d) for k, d in
                            zip(conv.kernel, conv.rdil, strict=True)))
    kg[index] = np.moveaxis(np.moveaxis(w, 1, -1), 1, -2)
    gstr = [math.prod(grid[j + 1:]) for j in range(len(grid))]
    nb = conv.n // B
    rows_n = conv.n if G > 1 else nb            # images per gemm
    outs = math.prod(conv.out_sp)
    z = np.empty((outs, rows_n, O), conv.dtype)
    item = conv.dtype.itemsize
    kp, zp = kg.ctypes.data, z.ctypes.data
    length = per * I
    blocks = G if G > 1 else B
    cols = O // blocks
    # packed rows (output position, image) x a block of the contraction (grid, I): a
    # strided view of the grid, one gemm per block, accumulated
    kc = max(1, min(length, PACK_ELEMENTS // max(outs * rows_n, 1)))
    packed = np.empty(outs * rows_n * kc, conv.dtype)
    pp = packed.ctypes.data
    pos_strides = [s * g * I * item for s, g in zip(conv.strides, gstr, strict=True)]
    image_stride = G * length * item
    for g in range(blocks):
        start = g * length if G > 1 else g * nb * length
        for k0 in range(0, length, kc):
            k = min(kc, length - k0)
            view = np.lib.stride_tricks.as_strided(
                buf[start + k0:], (*conv.out_sp, rows_n, k),
                (*pos_strides, image_stride, item), writeable=False)
            np.copyto(packed[:outs * rows_n * k].reshape(view.shape), view)
            if G > 1:
                b_ptr, ldb = kp + (g * length + k0) * og * item, og
            else:
                b_ptr, ldb = kp + (k0 * O + g * cols) * item, O
            conv.matmul(outs * rows_n, cols, k, pp, k, b_ptr, ldb, k0 > 0,
                       zp + g * cols * item, O)
    z = z.reshape(*conv.out_sp, rows_n, O)
    return np.moveaxis(np.moveaxis(z, -2, 0), -1, 1)
