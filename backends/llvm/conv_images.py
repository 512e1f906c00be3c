"""The per-image forms of conv.py's :class:`~.conv.Conv`: *images* (one gemm per image
and group into the result) and *features* (one gemm per in feature, accumulated), on a
channel-first padded grid each thread fills one image (or in feature) at a time."""

from __future__ import annotations

import math

import numpy as np

# the most elements of one image's (or in feature's) packed columns per gemm
COLUMN_ELEMENTS = 1 << 20


def images(conv, lhs, rhs, out):
    """One gemm per image (and group) and block of output rows, straight into the
    (N_out, O, *out spatial) result: the kernel (O // blocks, I * taps) times the
    image's packed columns (I * taps, positions), a strided view of its channel-first
    padded grid (any stride and dilation)."""
    G, B, O, I = conv.G, conv.B, conv.o, conv.i  # noqa: E741
    grid, item = conv.grid, conv.dtype.itemsize
    per = math.prod(grid)
    x, where = np.transpose(lhs, conv.lspec), conv.interior()
    w = np.ascontiguousarray(np.transpose(rhs, conv.rspec))     # (O, I, *kernel)
    depth = I * math.prod(conv.kernel)
    direct = list(conv.ospec) == sorted(conv.ospec) and out.flags.c_contiguous
    res = out if direct else np.empty((conv.n // B, O, *conv.out_sp), conv.dtype)
    gstr = [math.prod(grid[j + 1:]) * item for j in range(len(grid))]
    rest, outs = math.prod(conv.out_sp[1:]), math.prod(conv.out_sp)
    rows = max(1, min(conv.out_sp[0], COLUMN_ELEMENTS // max(depth * rest, 1)))
    m = O // (G * B)
    nb = conv.n // B
    wp, rp = w.ctypes.data, res.ctypes.data
    shape_k = (I, *conv.kernel)
    strides_k = (per * item, *(d * g for d, g in zip(conv.rdil, gstr, strict=True)))
    strides_p = tuple(s * g for s, g in zip(conv.strides, gstr, strict=True))

    def run(lo, hi):
        cols = np.empty(depth * rows * rest, conv.dtype)
        local = np.zeros((I, *grid), conv.dtype)       # the padding stays zero
        image, cp = local.reshape(-1), cols.ctypes.data
        for n in range(lo, hi):
            b, j = divmod(n, nb)
            for g in range(G):
                block = g if G > 1 else b
                if where is not None:
                    local[(slice(None), *where[0])] = x[(n, slice(g * I, (g + 1) * I),
                                                         *where[1])]
                for r0 in range(0, conv.out_sp[0], rows):
                    r = min(rows, conv.out_sp[0] - r0)
                    view = np.lib.stride_tricks.as_strided(
                        image[r0 * conv.strides[0] * gstr[0] // item:],
                        (*shape_k, r, *conv.out_sp[1:]), (*strides_k, *strides_p),
                        writeable=False)
                    np.copyto(cols[:depth * r * rest].reshape(view.shape), view)
                    conv.matmul(m, r * rest, depth, wp + block * m * depth * item, depth,
                               cp, r * rest, False,
                               rp + ((j * O + block * m) * outs + r0 * rest) * item, outs)

    conv.split(run, conv.n, conv.n * O * depth * outs // B)
    if not direct:
        np.copyto(out, np.transpose(res, np.argsort(conv.ospec)))
    return out


def features(conv, lhs, rhs, out):
    """A gemm per (group, in feature) and block of kernel rows, accumulated: the kernel
    slice (O // blocks, kernel positions) times packed columns (kernel positions, lhs
    batch x output positions), packed as rows (lhs batch x output positions, kernel
    positions: runs along the kernel's last dimension) from the channel-first grid of
    each in feature (filled per thread); the kernel is read in place when its spatial
    dimensions are contiguous (the cotangent, for a kernel gradient)."""
    G, B, O, I = conv.G, conv.B, conv.o, conv.i  # noqa: E741
    grid, item = conv.grid, conv.dtype.itemsize
    per, ks = math.prod(grid), math.prod(conv.kernel)
    x, where = np.transpose(lhs, conv.lspec), conv.interior()
    w = np.transpose(rhs, conv.rspec)                             # (O, I, *kernel)
    inner = [math.prod(conv.kernel[j + 1:]) * item for j in range(len(conv.kernel))]
    if (list(w.strides[2:]) != inner or min(w.strides[:2]) < ks * item
            or w.strides[0] % item or w.strides[1] % item):
        w = np.ascontiguousarray(w)
    so, si = w.strides[0], w.strides[1]
    m, nb = O // (G * B), conv.n // B
    outs, rest = math.prod(conv.out_sp), math.prod(conv.kernel[1:])
    width = nb * outs
    rows = max(1, min(conv.kernel[0], COLUMN_ELEMENTS // max(rest * width, 1)))
    gstr = [math.prod(grid[j + 1:]) * item for j in range(len(grid))]
    shape_q = (nb, *conv.out_sp)
    strides_q = (per * item, *(s * g for s, g in zip(conv.strides, gstr, strict=True)))
    strides_k = tuple(d * g for d, g in zip(conv.rdil, gstr, strict=True))
    wp = w.ctypes.data

    def run(lo, hi):
        acc = np.zeros((O, width), conv.dtype)
        cols = np.empty(rows * rest * width, conv.dtype)
        local = np.zeros((nb, *grid), conv.dtype)      # the padding stays zero
        flat, ap, cp = local.reshape(-1), acc.ctypes.data, cols.ctypes.data
        for t in range(lo, hi):
            block, i = divmod(t, I)
            g, b = (block, 0) if G > 1 else (0, block)
            if where is not None:
                local[(slice(None), *where[0])] = x[(slice(b * nb, (b + 1) * nb),
                                                     g * I + i, *where[1])]
            start = 0
            for k0 in range(0, conv.kernel[0], rows):
                r = min(rows, conv.kernel[0] - k0)
                view = np.lib.stride_tricks.as_strided(
                    flat[start + k0 * strides_k[0] // item:],
                    (*shape_q, r, *conv.kernel[1:]), (*strides_q, *strides_k),
                    writeable=False)
                np.copyto(cols[:r * rest * width].reshape(view.shape), view)
                conv.matmul(m, width, r * rest, wp + block * m * so + i * si
                           + k0 * rest * item, so // item, cp, r * rest, True,
                           ap + block * m * width * item, width, b_rows=True)
        return acc

    accs = conv.split(run, G * B * I, O // (G * B) * conv.n * I * ks * outs)
    acc = accs[0] if len(accs) == 1 else np.sum(accs, axis=0)
    res = np.moveaxis(acc.reshape(O, nb, *conv.out_sp), 0, 1)    # (nb, O, *out)
    np.copyto(out, np.transpose(res, np.argsort(conv.ospec)))
    return out
