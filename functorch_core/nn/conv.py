"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` (PyTorch's arguments, padding modes,
groups, dilation, ``padding='same'``)."""

from __future__ import annotations

import numpy as np

from . import functional as F
from ._init_draw import fan_in_bound, uniform_parameter
from .functional.conv import ntuple, transpose_output_padding
from .module import Module, shape_of

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")



def _weight_and_bias(module, shape, out_channels, bias, dtype):
    """PyTorch's default init: U(-b, b) with b = 1/sqrt(fan_in), the fan-in taken from
    ``weight.shape[1:]`` (for a transposed conv: out_channels / groups times the kernel)."""
    bound = fan_in_bound(int(np.prod(shape[1:])))
    module.weight = uniform_parameter(shape, bound, dtype)
    if bias:
        module.bias = uniform_parameter((out_channels,), bound, dtype)
    else:
        module.register_parameter("bias", None)


def _checked_shape(module, input):
    """The input's shape; raises unless the input is
    ``(N, C, *spatial)`` or ``(C, *spatial)`` with the module's ``in_channels``."""
    shape = tuple(shape_of(input))
    n, name = module._n, module._get_name()
    if len(shape) not in (n + 1, n + 2) or shape[-n - 1] != module.in_channels:
        raise ValueError(f"{name}(in_channels={module.in_channels}): expected input of "
                         f"shape (N, {module.in_channels}, {', '.join('*' * n)}) or "
                         f"({module.in_channels}, ...), got {shape}")
    return shape


def _conv_repr(m, *options):
    """PyTorch's ``extra_repr`` of a convolution: channels, kernel size and stride, then
    ``name=value`` for each ``(name, value, default)`` of ``options`` off its default."""
    return (f"{m.in_channels}, {m.out_channels}, kernel_size={m.kernel_size}, "
            f"stride={m.stride}" + "".join(f", {name}={value}" for name, value, default
                                            in options if value != default))


class _ConvNd(Module):
    _n = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode={padding_mode!r}")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: invalid padding string {padding!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = ntuple(kernel_size, n), ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else ntuple(padding, n)
        self.dilation, self.padding_mode = ntuple(dilation, n), padding_mode
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError(f"{name}: padding='same' is not supported for strided "
                             "convolutions")
        _weight_and_bias(self, (out_channels, in_channels // groups) + self.kernel_size,
                         out_channels, bias, dtype)

    def forward(self, input):
        shape, n = _checked_shape(self, input), self._n
        x = input if len(shape) == n + 2 else input[None]
        fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
        padding = self.padding
        if self.padding_mode != "zeros":    # PyTorch pads explicitly, then convolves
            x = F.pad(x, self._reversed_padding(), mode=self._pad_mode())
            padding = 0
        out = fn(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)
        return out if len(shape) == n + 2 else out[0]

    def _pad_mode(self):
        return {"reflect": "reflect", "replicate": "replicate",
                "circular": "circular"}[self.padding_mode]

    def _reversed_padding(self):
        if self.padding == "valid":
            pads = [(0, 0)] * self._n
        elif self.padding == "same":
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                    for k, d in zip(self.kernel_size, self.dilation, strict=True)]
        else:
            pads = [(p, p) for p in self.padding]
        return tuple(v for pair in reversed(pads) for v in pair)

    def extra_repr(self):
        n = self._n
        padding = repr(self.padding) if isinstance(self.padding, str) else self.padding
        return _conv_repr(self, ("padding", padding, (0,) * n),
                          ("dilation", self.dilation, (1,) * n), ("groups", self.groups, 1),
                          ("bias", self.bias is not None, True),
                          ("padding_mode", self.padding_mode, "zeros"))


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)``, as ``torch.nn.Conv1d``.

    Args:
        in_channels, out_channels (int): channel counts.
        kernel_size, stride (int or tuple), padding (int, tuple, ``'valid'``, ``'same'``),
        dilation (int or tuple), groups (int), bias (bool): as PyTorch's (defaults 1, 0, 1,
        1, ``True``).
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``;
            the non-zero modes pad the input explicitly before the convolution, as
            PyTorch's. Default ``'zeros'``.
        dtype: defaults to float32.

    ``weight`` ``(out, in / groups, k)`` and ``bias`` are drawn from
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.
    """
    _n = 1


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C_in, H, W)``, as ``torch.nn.Conv2d`` (arguments as
    :class:`Conv1d`; weight ``(out, in / groups, kh, kw)``).

    Example::

        >>> Conv2d(3, 8, 3, padding='same')(np.ones((2, 3, 5, 5), np.float32)).shape
        (2, 8, 5, 5)
    """
    _n = 2


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C_in, D, H, W)``, as ``torch.nn.Conv3d`` (arguments as
    :class:`Conv1d`; weight ``(out, in / groups, kd, kh, kw)``).

    Example::

        >>> Conv3d(2, 4, 3, padding=1, padding_mode='circular')(
        ...     np.ones((1, 2, 4, 4, 4), np.float32)).shape
        (1, 4, 4, 4, 4)
    """
    _n = 3


class _ConvTransposeNd(Module):
    _n = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}, got '
                             f"{padding_mode!r}")
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple, got {padding!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = ntuple(kernel_size, n), ntuple(stride, n)
        self.padding, self.output_padding = ntuple(padding, n), ntuple(output_padding, n)
        self.dilation, self.padding_mode = ntuple(dilation, n), padding_mode
        _weight_and_bias(self, (in_channels, out_channels // groups) + self.kernel_size,
                         out_channels, bias, dtype)

    def forward(self, input, output_size=None):
        shape, n, name = _checked_shape(self, input), self._n, self._get_name()
        output_padding = self.output_padding
        if output_size is not None:
            output_padding = transpose_output_padding(
                name, n, shape[-n:], output_size, self.kernel_size, self.stride, self.padding,
                self.dilation)
        x = input if len(shape) == n + 2 else input[None]
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        out = fn(x, self.weight, self.bias, self.stride, self.padding, output_padding,
                 self.groups, self.dilation)
        return out if len(shape) == n + 2 else out[0]

    def extra_repr(self):
        n = self._n
        return _conv_repr(self, ("padding", self.padding, (0,) * n),
                          ("dilation", self.dilation, (1,) * n),
                          ("output_padding", self.output_padding, (0,) * n),
                          ("groups", self.groups, 1), ("bias", self.bias is not None, True))


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over ``(N, C_in, L)``, as ``torch.nn.ConvTranspose1d``.

    Args:
        in_channels, out_channels (int): channel counts.
        kernel_size (int or tuple): the window.
        stride (int or tuple): the upsampling factor. Default ``1``.
        padding (int or tuple): removed from both ends of the output. Default ``0``.
        output_padding (int or tuple): added to one end. Default ``0``.
        groups (int): default ``1``.
        bias (bool): default ``True``.
        dilation (int or tuple): default ``1``.
        padding_mode (str): only ``'zeros'``, as PyTorch's.
        dtype: defaults to float32.

    ``weight`` ``(in, out / groups, k)`` and ``bias`` are drawn from
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = out / groups * prod(k)``.
    ``forward(input, output_size=None)``: ``output_size`` picks the output padding.

    Example::

        >>> ConvTranspose1d(2, 3, 3, stride=2)(np.ones((1, 2, 4), np.float32)).shape
        (1, 3, 9)
    """
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over ``(N, C_in, H, W)``, as
    ``torch.nn.ConvTranspose2d`` (arguments as :class:`ConvTranspose1d`).

    Example::

        >>> up = ConvTranspose2d(4, 2, 3, stride=2, padding=1)
        >>> up(np.ones((1, 4, 5, 5), np.float32), output_size=(10, 10)).shape
        (1, 2, 10, 10)
    """
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over ``(N, C_in, D, H, W)``, as
    ``torch.nn.ConvTranspose3d`` (arguments as :class:`ConvTranspose1d`)."""
    _n = 3
