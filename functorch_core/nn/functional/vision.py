"""``pad`` and ``interpolate`` with PyTorch's arguments, as gathers with concrete indices."""

from __future__ import annotations

import math

import numpy as np

import functorch_core.numpy as fnp

from ..module import shape_of

__all__ = ["interpolate", "pad", "upsample"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _source_index(name, mode, n, lo, hi, axis, shape):
    """Input positions feeding the output positions ``-lo .. n + hi - 1`` of one axis."""
    pos = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise ValueError(f"{name}: padding ({lo}, {hi}) of dimension {axis} should be "
                             f"less than that dimension's size {n} for mode 'reflect' "
                             f"(input of shape {shape})")
        period = 2 * (n - 1) if n > 1 else 1
        pos = np.abs(pos) % period
        return np.where(pos >= n, period - pos, pos)
    if mode == "replicate":
        if n == 0:
            raise ValueError(f"{name}: mode 'replicate' cannot pad the empty dimension "
                             f"{axis} of input of shape {shape}")
        return np.clip(pos, 0, n - 1)
    if lo > n or hi > n:
        raise ValueError(f"{name}: padding ({lo}, {hi}) of dimension {axis} must not exceed "
                         f"that dimension's size {n} for mode 'circular' (input of shape "
                         f"{shape})")
    return pos % n


def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative amounts, crop) the trailing dimensions of ``input``.

    Args:
        input (array): the input.
        pad (tuple of int): ``(left, right)`` pairs, the last dimension first:
            ``(l_last, r_last, l_2nd_last, r_2nd_last, ...)``; negative values crop.
        mode (str): ``'constant'`` (fill with ``value``), ``'reflect'`` (mirror without
            repeating the edge), ``'replicate'`` (repeat the edge) or ``'circular'``
            (wrap around). Default ``'constant'``.
        value (float, optional): the fill for ``'constant'``. Default ``0``.

    The non-constant modes pad the last 1, 2 or 3 dimensions of a batched or unbatched
    input (2-D/3-D, 3-D/4-D, 4-D/5-D), as in PyTorch.

    Example::

        >>> pad(np.arange(3.0)[None], (1, 2), mode='reflect')
        array([[1., 0., 1., 2., 1., 0.]])
    """
    shape = tuple(shape_of(input))
    pads = tuple(int(p) for p in pad)
    if len(pads) % 2 or len(pads) // 2 > len(shape):
        raise ValueError(f"pad: padding length {len(pads)} must be even and at most twice "
                         f"the input's rank; input of shape {shape}, pad={tuple(pad)}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: mode {mode!r} is not one of {_PAD_MODES}")
    m = len(pads) // 2
    if mode != "constant":
        if value is not None and value != 0:
            raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument")
        if m > 3 or len(shape) not in (m + 1, m + 2):
            raise NotImplementedError(f"pad: mode {mode!r} pads the last 1 to 3 dimensions of "
                                      f"a {m + 1}-D or {m + 2}-D input, got input of shape "
                                      f"{shape} with pad={pads}")
    out = input
    for i in range(m):
        axis = len(shape) - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = shape[axis]
        if n + lo + hi < 0:
            raise ValueError(f"pad: padding {(lo, hi)} of dimension {axis} leaves a negative "
                             f"size for input of shape {shape}")
        if lo == hi == 0:
            continue
        if mode in ("constant", "circular"):    # circular wraps the cropped array
            crop = [slice(None)] * len(shape)
            crop[axis] = slice(max(-lo, 0), n - max(-hi, 0))
            out = out[tuple(crop)]
            n, lo, hi = n - max(-lo, 0) - max(-hi, 0), max(lo, 0), max(hi, 0)
        if mode == "constant":
            widths = [(0, 0)] * len(shape)
            widths[axis] = (lo, hi)
            out = fnp.pad(out, widths, constant_values=0 if value is None else value)
        else:
            out = fnp.take(out, _source_index("pad", mode, n, lo, hi, axis, shape),
                           axis=axis)
    return out


_INTERP_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5}


def _output_sizes(name, spatial, size, scale_factor):
    k = len(spatial)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{name}: only one of size or scale_factor should be defined")
    if size is not None:
        sizes = (size,) * k if isinstance(size, int | np.integer) else tuple(size)
        if len(sizes) != k:
            raise ValueError(f"{name}: size {size} must have {k} elements for an input with "
                             f"{k} spatial dimensions {tuple(spatial)}")
        return tuple(int(s) for s in sizes), (None,) * k
    scales = (scale_factor,) * k if isinstance(scale_factor, int | float) \
        else tuple(scale_factor)
    if len(scales) != k:
        raise ValueError(f"{name}: scale_factor {scale_factor} must have {k} elements for an "
                         f"input with {k} spatial dimensions {tuple(spatial)}")
    return tuple(math.floor(n * float(s)) for n, s in zip(spatial, scales, strict=True)), \
        tuple(float(s) for s in scales)


def _ratio(n_in, n_out, scale, align_corners):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _nearest_source(mode, n_in, n_out, scale, dtype):
    """PyTorch's nearest source indices, in its arithmetic: the scale and the product in
    the input's precision (float32 below float64), then floored as a float32."""
    off = 0.5 if mode == "nearest-exact" else 0.0
    dst = np.arange(n_out)
    if dtype == np.float64:
        r = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
        src = ((dst + off) * r).astype(np.float32)
    else:
        f32 = np.float32
        r = f32(1.0 / scale) if scale is not None and scale > 0 else f32(n_in) / f32(n_out)
        src = (dst + off).astype(f32) * r
    return np.minimum(np.floor(src).astype(np.int64), n_in - 1)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dimensions of ``(N, C, *spatial)``, as
    ``torch.nn.functional.interpolate``.

    Args:
        input (array): ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        size (int or tuple, optional): the output's spatial size.
        scale_factor (float or tuple, optional): multiplier of the spatial size (the
            output size is ``floor(n * scale)``; the source coordinates use ``1 / scale``
            unless ``recompute_scale_factor=True``). Give exactly one of ``size`` and
            ``scale_factor``.
        mode (str): ``'nearest'``, ``'nearest-exact'``, ``'linear'`` (3-D),
            ``'bilinear'`` (4-D) or ``'trilinear'`` (5-D). Default ``'nearest'``.
        align_corners (bool, optional): for the linear modes, map the corner pixels'
            centres onto each other. Default ``False``.
        recompute_scale_factor (bool, optional): compute the source coordinates from
            the output size instead of ``scale_factor``.
        antialias (bool): only ``False``.

    Example::

        >>> interpolate(np.arange(4.0).reshape(1, 1, 2, 2), scale_factor=2)[0, 0, 0]
        array([0., 0., 1., 1.])
    """
    name = "interpolate"
    shape = tuple(shape_of(input))
    if antialias:
        raise NotImplementedError(f"{name}: antialias=True is not supported")
    if len(shape) < 3:
        raise ValueError(f"{name}: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got "
                         f"shape {shape}")
    if mode in ("nearest", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(f"{name}: align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | bicubic | trilinear")
    elif mode in _INTERP_RANK:
        if len(shape) != _INTERP_RANK[mode]:
            raise ValueError(f"{name}: got {len(shape)}D input of shape {shape}, but {mode} "
                             f"mode needs {_INTERP_RANK[mode]}D input")
    else:
        raise NotImplementedError(f"{name}: mode {mode!r} is not supported (nearest, "
                                  "nearest-exact, linear, bilinear, trilinear)")
    spatial = shape[2:]
    sizes, scales = _output_sizes(name, spatial, size, scale_factor)
    if recompute_scale_factor:
        scales = (None,) * len(spatial)
    out = input
    for i, (n_in, n_out, scale) in enumerate(zip(spatial, sizes, scales, strict=True)):
        axis = 2 + i
        if mode.startswith("nearest"):
            src = _nearest_source(mode, n_in, n_out, scale, fnp.asarray(input).dtype)
            out = fnp.take(out, src, axis=axis)
            continue
        if n_in == n_out:       # PyTorch copies an axis whose size is kept, whatever the scale
            continue
        r = _ratio(n_in, n_out, scale, bool(align_corners))
        dst = np.arange(n_out, dtype=np.float64)
        src = dst * r if align_corners else np.maximum((dst + 0.5) * r - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = (src - i0).reshape((-1,) + (1,) * (len(shape) - 1 - axis))
        lam = lam.astype(np.result_type(fnp.asarray(input).dtype, np.float32))
        out = fnp.take(out, i0, axis=axis) * (1 - lam) + fnp.take(out, i1, axis=axis) * lam
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """:func:`interpolate` under its older name (``torch.nn.functional.upsample``)."""
    return interpolate(input, size, scale_factor, mode, align_corners)
