"""Convolution in PyTorch's ``NC...`` / ``OI...`` layouts over ``lax``."""

from __future__ import annotations

import numpy as np

from functorch_core import lax
from functorch_core._internal import autocast

from ..module import shape_of

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


def ntuple(value, n):
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
    return [(p, p) for p in ntuple(padding, n)]


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
    stride, dilation = ntuple(stride, n), ntuple(dilation, n)
    pads = _conv_pads(name, padding, wshape[2:], dilation, stride, n)
    out = lax.conv_general_dilated(input, weight, stride, pads, rhs_dilation=dilation,
                                   feature_group_count=groups)
    if bias is not None:        # under autocast the bias is cast too, as PyTorch's
        out = out + autocast.lowered(bias)[0].reshape((-1,) + (1,) * n)
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


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of ``(N, C_in, D, H, W)`` with ``(C_out, C_in/groups, KD, KH, KW)``
    (arguments as :func:`conv2d`, with triples).

    Example::

        >>> conv3d(np.ones((1, 2, 4, 4, 4)), np.ones((3, 2, 3, 3, 3))).shape
        (1, 3, 2, 2, 2)
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def transpose_output_padding(name, n, in_spatial, output_size, kernel, stride, padding,
                             dilation):
    """PyTorch's ``output_padding`` that makes a transposed convolution ``output_size``."""
    sizes = tuple(int(o) for o in output_size)
    if len(sizes) == n + 2:
        sizes = sizes[2:]
    if len(sizes) != n:
        raise ValueError(f"{name}: output_size must have {n} or {n + 2} elements (got "
                         f"{len(sizes)}: {tuple(output_size)})")
    pads = []
    for d in range(n):
        smallest = ((in_spatial[d] - 1) * stride[d] - 2 * padding[d]
                    + dilation[d] * (kernel[d] - 1) + 1)
        if not smallest <= sizes[d] < smallest + stride[d]:
            raise ValueError(f"{name}: requested an output size of {tuple(sizes)}, but valid "
                             f"sizes of dimension {d} range from {smallest} to "
                             f"{smallest + stride[d] - 1} (for an input of spatial size "
                             f"{tuple(in_spatial)})")
        pads.append(sizes[d] - smallest)
    return tuple(pads)


def _conv_transpose(name, n, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    ishape, wshape = tuple(shape_of(input)), tuple(shape_of(weight))
    if len(ishape) != n + 2 or len(wshape) != n + 2:
        raise ValueError(f"{name}: expected a {n + 2}-D input (N, C_in, ...) and weight "
                         f"(C_in, C_out / groups, ...), got input of shape {ishape} and "
                         f"weight of shape {wshape}")
    if ishape[1] != wshape[0] or wshape[0] % groups:
        raise ValueError(f"{name}: input of shape {ishape} has {ishape[1]} channels, but "
                         f"weight of shape {wshape} with groups={groups} expects "
                         f"{wshape[0]} (divisible by groups)")
    if isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int or a tuple, got {padding!r}")
    stride, dilation = ntuple(stride, n), ntuple(dilation, n)
    padding, output_padding = ntuple(padding, n), ntuple(output_padding, n)
    for d in range(n):
        if output_padding[d] >= max(stride[d], dilation[d]):
            raise ValueError(f"{name}: output_padding {output_padding} must be smaller than "
                             f"either stride {stride} or dilation {dilation}")
    c_in, c_out_g, kernel = wshape[0], wshape[1], wshape[2:]
    # the gradient of a convolution: kernel flipped, in/out swapped per group, input
    # dilated by the stride
    w = weight.reshape((groups, c_in // groups, c_out_g) + kernel)
    w = w.transpose((0, 2, 1) + tuple(range(3, n + 3)))
    w = w.reshape((groups * c_out_g, c_in // groups) + kernel)
    w = w[(slice(None), slice(None)) + (slice(None, None, -1),) * n]
    pads = [(dilation[d] * (kernel[d] - 1) - padding[d],
             dilation[d] * (kernel[d] - 1) - padding[d] + output_padding[d]) for d in range(n)]
    out = lax.conv_general_dilated(input, w, (1,) * n, pads, lhs_dilation=stride,
                                   rhs_dilation=dilation, feature_group_count=groups)
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * n)
    return out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution of ``(N, C_in, L)`` with ``(C_in, C_out/groups, K)``.

    The output length is ``(L - 1) * stride - 2 * padding + dilation * (K - 1) +
    output_padding + 1``; arguments as ``torch.nn.functional.conv_transpose1d``
    (``padding`` removes that much from both ends of the full output).

    Example::

        >>> conv_transpose1d(np.ones((1, 1, 3)), np.ones((1, 2, 2)), stride=2).shape
        (1, 2, 6)
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution of ``(N, C_in, H, W)`` with ``(C_in, C_out/groups, KH, KW)``.

    Args:
        input (array): ``(N, C_in, H, W)``.
        weight (array): ``(C_in, C_out / groups, KH, KW)``.
        bias (array, optional): ``(C_out,)``.
        stride (int or pair): the upsampling factor. Default ``1``.
        padding (int or pair): removed from both ends of each output dimension.
            Default ``0``.
        output_padding (int or pair): added to one end (smaller than stride or
            dilation). Default ``0``.
        groups (int): default ``1``.
        dilation (int or pair): default ``1``.

    Example::

        >>> conv_transpose2d(np.ones((1, 2, 3, 3)), np.ones((2, 4, 3, 3)), stride=2,
        ...                  padding=1, output_padding=1).shape
        (1, 4, 6, 6)
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-D transposed convolution of ``(N, C_in, D, H, W)`` with
    ``(C_in, C_out/groups, KD, KH, KW)`` (arguments as :func:`conv_transpose2d`)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
