"""Max, average and adaptive pooling in 1-D and 2-D with PyTorch's arguments.

Windows without indices are ``lax.reduce_window`` reductions; ``return_indices=True``
gathers each window (concrete index tables) and takes its first maximum, as PyTorch does.
"""

from __future__ import annotations

import numpy as np

import functorch_core.numpy as fnp
from functorch_core import lax
from functorch_core.ir.dtypes import dtype_kind

from ..module import shape_of

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d"]


def _tuple(value, n):
    return (int(value),) * n if isinstance(value, int | np.integer) else tuple(value)


def check_rank(name, input, n):
    """The shape of ``input``, an ``n``-D pooling's ``(C, *dims)`` or ``(N, C, *dims)``
    input; a ValueError naming the call ``name`` otherwise (a string, or a function
    returning it, called only for the error: the modules name themselves)."""
    shape = tuple(shape_of(input))
    if len(shape) not in (n + 1, n + 2):
        dims = "L" if n == 1 else "H, W"
        raise ValueError(f"{name() if callable(name) else name}: expected a {n + 1}-D "
                         f"(C, {dims}) or {n + 2}-D (N, C, {dims}) input, got shape {shape}")
    return shape


def _geometry(name, shape, n, kernel_size, stride, padding, dilation, ceil_mode):
    """Per pooled axis: (kernel, stride, pad, dilation, output size)."""
    k = _tuple(kernel_size, n)
    s = k if stride is None or stride == () or stride == [] else _tuple(stride, n)
    p, d = _tuple(padding, n), _tuple(dilation, n)
    if not len(k) == len(s) == len(p) == len(d) == n:
        raise ValueError(f"{name}: kernel_size {kernel_size}, stride {stride}, padding "
                         f"{padding} and dilation {dilation} must each have 1 or {n} values")
    geo = []
    for i in range(n):
        size = shape[len(shape) - n + i]
        if k[i] < 1 or s[i] < 1 or d[i] < 1:
            raise ValueError(f"{name}: kernel_size {k}, stride {s} and dilation {d} must be "
                             "positive")
        if p[i] < 0 or p[i] > k[i] // 2:
            raise ValueError(f"{name}: pad should be at most half of effective kernel size, "
                             f"but got pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
        span = size + 2 * p[i] - d[i] * (k[i] - 1) - 1
        out = (-(-span // s[i]) if ceil_mode else span // s[i]) + 1
        if ceil_mode and (out - 1) * s[i] >= size + p[i]:
            out -= 1            # the last window must start inside the input or left pad
        if out < 1:
            raise ValueError(f"{name}: given input of shape {shape}, the calculated output "
                             f"size along dimension {len(shape) - n + i} is {out}: too small "
                             f"(kernel_size={k}, stride={s}, padding={p}, dilation={d})")
        geo.append((k[i], s[i], p[i], d[i], out, size))
    return geo


def _window_table(starts_ends_steps, size):
    """(out, K) input positions per window, ``-1`` outside ``[0, size)``."""
    width = max(len(range(a, b, c)) for a, b, c in starts_ends_steps)
    table = np.full((len(starts_ends_steps), width), -1, np.int64)
    for o, (a, b, c) in enumerate(starts_ends_steps):
        pos = np.arange(a, b, c)
        table[o, :len(pos)] = np.where((pos >= 0) & (pos < size), pos, -1)
    return table


def _argmax_windows(input, tables, sizes):
    """Per window: the first maximum and its flat index in the pooled plane."""
    n = len(tables)
    shape = tuple(shape_of(input))
    lead = shape[:len(shape) - n]
    flat = np.zeros(tuple(t.shape[0] for t in tables)
                    + tuple(t.shape[1] for t in tables), np.int64)
    valid = np.ones(flat.shape, bool)
    stride = 1
    for i in reversed(range(n)):
        t = tables[i]
        view = [1] * (2 * n)
        view[i], view[n + i] = t.shape[0], t.shape[1]
        tv = t.reshape(view)
        flat = flat + np.where(tv < 0, 0, tv) * stride
        valid = valid & (tv >= 0)
        stride *= sizes[i]
    outs = flat.shape[:n]
    width = int(np.prod(flat.shape[n:]))
    table = np.where(valid, flat, -1).reshape(outs + (width,))
    total = int(np.prod(sizes))
    x = fnp.reshape(input, lead + (total,))
    dt = fnp.asarray(input).dtype
    fill = -np.inf if dtype_kind(dt) in "fc" else np.iinfo(dt).min
    x = fnp.concatenate([x, fnp.full(lead + (1,), fill, dtype=dt)], axis=-1)
    patches = fnp.take(x, np.where(table < 0, total, table).reshape(-1), axis=-1)
    patches = fnp.reshape(patches, lead + outs + (width,))
    am = fnp.argmax(patches, axis=-1)
    values = fnp.take_along_axis(patches, fnp.expand_dims(am, -1), axis=-1)[..., 0]
    offsets = (np.arange(int(np.prod(outs)), dtype=np.int64) * width).reshape(outs)
    indices = fnp.take(table.reshape(-1), am + offsets)
    return values, indices.astype(np.int64)


def _max_pool(name, n, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    shape = check_rank(name, input, n)
    geo = _geometry(name, shape, n, kernel_size, stride, padding, dilation, ceil_mode)
    if return_indices:
        tables = [_window_table([(o * s - p, o * s - p + d * (k - 1) + 1, d)
                                 for o in range(out)], size)
                  for k, s, p, d, out, size in geo]
        return _argmax_windows(input, tables, [g[5] for g in geo])
    lead = len(shape) - n
    pads = [(p, max((out - 1) * s + d * (k - 1) + 1 - size - p, p))
            for k, s, p, d, out, size in geo]
    out = lax.reduce_window(input, -np.inf, "max", (1,) * lead + tuple(g[0] for g in geo),
                            (1,) * lead + tuple(g[1] for g in geo), [(0, 0)] * lead + pads,
                            window_dilation=(1,) * lead + tuple(g[3] for g in geo))
    return _crop(out, geo)


def _crop(out, geo):
    """Drop windows past PyTorch's output size (padding by ``max(needed, pad)``)."""
    n = len(geo)
    if all(shape_of(out)[len(shape_of(out)) - n + i] == g[4] for i, g in enumerate(geo)):
        return out
    return out[(Ellipsis,) + tuple(slice(0, g[4]) for g in geo)]


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over the last axis of ``(N, C, L)`` or ``(C, L)``.

    Args:
        input (array): ``(N, C, L)`` or ``(C, L)``.
        kernel_size (int): the window.
        stride (int, optional): the step. Default ``kernel_size``.
        padding (int): implicit ``-inf`` padding on both sides (at most half the
            window). Default ``0``.
        dilation (int): the spacing of a window's elements. Default ``1``.
        ceil_mode (bool): round the output length up (windows may overhang the right
            padding but must start inside the input or the left padding). Default False.
        return_indices (bool): also return each maximum's position along ``L`` (the
            first maximum of a window, as PyTorch). Default ``False``.

    Example::

        >>> max_pool1d(np.array([[1.0, 3.0, 2.0, 5.0, 4.0]]), 2, ceil_mode=True)
        array([[3., 5., 4.]])
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over the last two axes of ``(N, C, H, W)`` or ``(C, H, W)``
    (arguments as :func:`max_pool1d`, ints or pairs; indices are flat ``h * W + w``).

    Example::

        >>> max_pool2d(np.arange(16.0).reshape(1, 4, 4), 2)[0]
        array([[ 5.,  7.],
               [13., 15.]])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _avg_pool(name, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    shape = check_rank(name, input, n)
    geo = _geometry(name, shape, n, kernel_size, stride, padding, 1, ceil_mode)
    lead = len(shape) - n
    x = input
    if dtype_kind(fnp.asarray(input).dtype) not in "fc":
        raise TypeError(f"{name}: expected a floating-point input, got dtype "
                        f"{fnp.asarray(input).dtype}")
    pads = [(p, max((out - 1) * s + k - size - p, p)) for k, s, p, _, out, size in geo]
    total = lax.reduce_window(x, 0, "add", (1,) * lead + tuple(g[0] for g in geo),
                              (1,) * lead + tuple(g[1] for g in geo), [(0, 0)] * lead + pads)
    total = _crop(total, geo)
    if divisor_override:
        return total / divisor_override
    divisor = np.ones((), np.float64)
    for k, s, p, _, out, size in geo:
        start = np.arange(out) * s - p
        end = np.minimum(start + k, size + p)
        count = end - start if count_include_pad else \
            np.minimum(end, size) - np.maximum(start, 0)
        divisor = np.multiply.outer(divisor, count)
    return total / divisor.astype(fnp.asarray(input).dtype)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over the last axis of ``(N, C, L)`` or ``(C, L)``.

    Args:
        input (array): ``(N, C, L)`` or ``(C, L)``.
        kernel_size (int): the window.
        stride (int, optional): the step. Default ``kernel_size``.
        padding (int): implicit zero padding on both sides (at most half the window).
            Default ``0``.
        ceil_mode (bool): round the output length up. Default ``False``.
        count_include_pad (bool): count the zero padding in the divisor (the part of a
            ``ceil_mode`` window beyond the padding never counts). Default ``True``.

    Example::

        >>> avg_pool1d(np.array([[1.0, 3.0, 2.0]]), 2, ceil_mode=True)
        array([[2., 2.]])
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over the last two axes of ``(N, C, H, W)`` or ``(C, H, W)``
    (arguments as :func:`avg_pool1d`, ints or pairs).

    Args:
        divisor_override (int, optional): divide every window's sum by this instead.

    Example::

        >>> avg_pool2d(np.ones((1, 3, 3)), 2, padding=1)[0]
        array([[0.25, 0.5 ],
               [0.5 , 1.  ]])
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_sizes(name, shape, n, output_size):
    sizes = (output_size,) * n if isinstance(output_size, int | np.integer) \
        else tuple(output_size)
    if len(sizes) != n:
        raise ValueError(f"{name}: output_size {output_size} must have {n} elements")
    return tuple(shape[len(shape) - n + i] if o is None else int(o)
                 for i, o in enumerate(sizes))


def _adaptive_max(name, n, input, output_size, return_indices):
    shape = check_rank(name, input, n)
    sizes = _adaptive_sizes(name, shape, n, output_size)
    spatial = shape[len(shape) - n:]
    if not return_indices:
        return lax.adaptive_max_pool(input, sizes)
    tables = [_window_table([((i * L) // o, -(-((i + 1) * L) // o), 1) for i in range(o)], L)
              for L, o in zip(spatial, sizes, strict=True)]
    return _argmax_windows(input, tables, list(spatial))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling of the last axis to ``output_size`` windows
    ``[floor(i L / out), ceil((i + 1) L / out))``, as PyTorch's.

    Args:
        input (array): ``(N, C, L)`` or ``(C, L)``.
        output_size (int): the output length.
        return_indices (bool): also return each maximum's position. Default ``False``.

    Example::

        >>> adaptive_max_pool1d(np.arange(5.0)[None], 3)
        array([[1., 3., 4.]])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling of the last two axes to ``output_size`` (int or pair; ``None`` keeps
    an axis), with the windows of :func:`adaptive_max_pool1d` (indices flat ``h * W + w``).
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of the last axis of ``(N, C, L)`` or ``(C, L)`` to ``output_size``
    windows ``[floor(i L / out), ceil((i + 1) L / out))``.

    Example::

        >>> adaptive_avg_pool1d(np.arange(5.0)[None], 3)
        array([[0.5, 2. , 3.5]])
    """
    shape = check_rank("adaptive_avg_pool1d", input, 1)
    return lax.adaptive_avg_pool(input, _adaptive_sizes("adaptive_avg_pool1d", shape, 1,
                                                        output_size))


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of the last two axes to ``output_size`` (int or pair; ``None``
    keeps that axis' size), with PyTorch's windows."""
    shape = check_rank("adaptive_avg_pool2d", input, 2)
    return lax.adaptive_avg_pool(input, _adaptive_sizes("adaptive_avg_pool2d", shape, 2,
                                                        output_size))
