"""Convolution and pooling in PyTorch's ``NC...`` / ``OI...`` layouts over ``lax``."""

from __future__ import annotations

import numpy as np

from functorch_core import lax

from ..module import shape_of

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "conv1d", "conv2d", "max_pool2d"]


def _tuple(value, n):
    return (int(value),) * n if isinstance(value, int | np.integer) else tuple(value)


def _conv_pads(name, padding, kernel, dilation, stride, n):
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions (stride={stride})")
            pads = []
            for k, d in zip(kernel, dilation, strict=True):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return pads
        raise ValueError(f"{name}: invalid padding string {padding!r}, should be one of "
                         "{'valid', 'same'}")
    return [(p, p) for p in _tuple(padding, n)]


def _conv(name, n, input, weight, bias, stride, padding, dilation, groups):
    ishape, wshape = tuple(shape_of(input)), tuple(shape_of(weight))
    if len(ishape) != n + 2 or len(wshape) != n + 2:
        raise ValueError(f"{name}: expected a {n + 2}-D input (N, C_in, ...) and weight "
                         f"(C_out, C_in / groups, ...), got input of shape {ishape} and "
                         f"weight of shape {wshape}")
    if ishape[1] != wshape[1] * groups:
        raise ValueError(f"{name}: input of shape {ishape} has {ishape[1]} channels, but "
                         f"weight of shape {wshape} with groups={groups} expects "
                         f"{wshape[1] * groups}")
    stride, dilation = _tuple(stride, n), _tuple(dilation, n)
    pads = _conv_pads(name, padding, wshape[2:], dilation, stride, n)
    out = lax.conv_general_dilated(input, weight, stride, pads, rhs_dilation=dilation,
                                   feature_group_count=groups)
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * n)
    return out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of ``(N, C_in, L)`` with ``(C_out, C_in/groups, K)``.

    Arguments as ``torch.nn.functional.conv1d``; ``padding`` is an int, a tuple,
    ``'valid'`` or ``'same'``.
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of ``(N, C_in, H, W)`` with ``(C_out, C_in/groups, KH, KW)``.

    Args:
        input (array): ``(N, C_in, H, W)``.
        weight (array): ``(C_out, C_in / groups, KH, KW)``.
        bias (array, optional): ``(C_out,)``.
        stride (int or pair): default ``1``.
        padding (int, pair, ``'valid'`` or ``'same'``): zero padding. Default ``0``.
        dilation (int or pair): default ``1``.
        groups (int): default ``1``.

    Example::

        >>> conv2d(np.ones((1, 2, 5, 5)), np.ones((4, 2, 3, 3)), padding='same').shape
        (1, 4, 5, 5)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _pool_check(name, input, ceil_mode, dilation=1):
    if len(shape_of(input)) not in (3, 4):
        raise ValueError(f"{name}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got "
                         f"shape {tuple(shape_of(input))}")
    if ceil_mode:
        raise NotImplementedError(f"{name}: ceil_mode=True is not supported")
    if _tuple(dilation, 2) != (1, 1):
        raise NotImplementedError(f"{name}: dilation other than 1 is not supported")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over the last two axes (``stride`` defaults to ``kernel_size``;
    ``padding`` never wins the max). ``dilation != 1``, ``ceil_mode`` and
    ``return_indices`` are not supported."""
    _pool_check("max_pool2d", input, ceil_mode, dilation)
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    k = _tuple(kernel_size, 2)
    s = k if stride is None or stride == () else _tuple(stride, 2)
    return lax.max_pool(input, k, s, [(p, p) for p in _tuple(padding, 2)])


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over the last two axes, as ``torch.nn.functional.avg_pool2d``
    (``ceil_mode`` not supported)."""
    _pool_check("avg_pool2d", input, ceil_mode)
    k = _tuple(kernel_size, 2)
    s = k if stride is None or stride == () else _tuple(stride, 2)
    pads = [(p, p) for p in _tuple(padding, 2)]
    if divisor_override is not None:
        total = lax.avg_pool(input, k, s, pads, count_include_pad=True) * (k[0] * k[1])
        return total / divisor_override
    return lax.avg_pool(input, k, s, pads, count_include_pad=count_include_pad)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of the last two axes to ``output_size`` (int or pair; ``None``
    keeps that axis' size), with PyTorch's windows."""
    if len(shape_of(input)) not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: expected a 3-D or 4-D input, got shape "
                         f"{tuple(shape_of(input))}")
    size = _tuple(output_size, 2) if not isinstance(output_size, int) else (output_size,) * 2
    size = tuple(shape_of(input)[-2 + i] if o is None else o for i, o in enumerate(size))
    return lax.adaptive_avg_pool(input, size)
