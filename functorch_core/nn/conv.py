"""``Conv1d``, ``Conv2d`` (zero padding; ``padding='same'``, groups, dilation)."""

from __future__ import annotations

import numpy as np

from . import functional as F
from ._init_draw import fan_in_bound, uniform_parameter
from .functional.conv import _tuple
from .module import Module, shape_of

__all__ = ["Conv1d", "Conv2d"]


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
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode={padding_mode!r} is not "
                                      "supported (only 'zeros')")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: invalid padding string {padding!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.padding_mode = _tuple(dilation, n), padding_mode
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError(f"{name}: padding='same' is not supported for strided "
                             "convolutions")
        fan_in = in_channels // groups * int(np.prod(self.kernel_size))
        bound = fan_in_bound(fan_in)
        self.weight = uniform_parameter((out_channels, in_channels // groups)
                                        + self.kernel_size, bound, dtype)
        if bias:
            self.bias = uniform_parameter((out_channels,), bound, dtype)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        shape = tuple(shape_of(input))
        n, name = self._n, self._get_name()
        if len(shape) not in (n + 1, n + 2) or shape[-n - 1] != self.in_channels:
            raise ValueError(f"{name}(in_channels={self.in_channels}): expected input of "
                             f"shape (N, {self.in_channels}, {', '.join('*' * n)}) or "
                             f"({self.in_channels}, ...), got {shape}")
        x = input if len(shape) == n + 2 else input[None]
        fn = F.conv1d if n == 1 else F.conv2d
        out = fn(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                 self.groups)
        return out if len(shape) == n + 2 else out[0]

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) \
                else f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)``, as ``torch.nn.Conv1d``.

    Args:
        in_channels, out_channels (int): channel counts.
        kernel_size, stride (int or tuple), padding (int, tuple, ``'valid'``, ``'same'``),
        dilation (int or tuple), groups (int), bias (bool): as PyTorch's (defaults 1, 0, 1,
        1, ``True``). ``padding_mode`` only ``'zeros'``. ``dtype`` defaults to float32.

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
