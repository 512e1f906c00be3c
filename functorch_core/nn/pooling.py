"""Max, average and adaptive pooling modules in 1-D and 2-D (PyTorch's arguments)."""

from __future__ import annotations

from . import functional as F
from .functional.pooling import check_rank
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d"]


def _check_rank(module, input, n):
    check_rank(lambda: f"{module._get_name()}({module.extra_repr()})", input, n)


class _MaxPoolNd(Module):
    _fn = None
    _n = 0

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        _check_rank(self, input, self._n)
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over ``(N, C, L)`` or ``(C, L)``, as ``torch.nn.MaxPool1d``.

    Args:
        kernel_size (int): the window.
        stride (int, optional): the step. Default ``kernel_size``.
        padding (int): ``-inf`` padding on both sides. Default ``0``.
        dilation (int): spacing of a window's elements. Default ``1``.
        return_indices (bool): also return the maxima's positions. Default ``False``.
        ceil_mode (bool): round the output length up. Default ``False``.

    Example::

        >>> MaxPool1d(2, return_indices=True)(np.array([[1.0, 3.0, 5.0, 2.0]]))
        (array([[3., 5.]]), array([[1, 2]]))
    """
    _fn = staticmethod(F.max_pool1d)
    _n = 1


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over ``(N, C, H, W)`` or ``(C, H, W)``, as ``torch.nn.MaxPool2d``
    (arguments as :class:`MaxPool1d`, ints or pairs; indices flat ``h * W + w``)."""
    _fn = staticmethod(F.max_pool2d)
    _n = 2


class AvgPool1d(Module):
    """1-D average pooling over ``(N, C, L)`` or ``(C, L)``, as ``torch.nn.AvgPool1d``.

    Args:
        kernel_size (int): the window.
        stride (int, optional): the step. Default ``kernel_size``.
        padding (int): zero padding on both sides. Default ``0``.
        ceil_mode (bool): round the output length up. Default ``False``.
        count_include_pad (bool): count the padding in the divisor. Default ``True``.

    Example::

        >>> AvgPool1d(2)(np.array([[1.0, 3.0, 5.0, 2.0]]))
        array([[2. , 3.5]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        _check_rank(self, input, 1)
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """2-D average pooling over ``(N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.AvgPool2d`` (arguments as :class:`AvgPool1d`, ints or pairs, and
    ``divisor_override``: divide every window's sum by it)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        _check_rank(self, input, 2)
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(Module):
    _fn = None
    _n = 0

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        _check_rank(self, input, self._n)
        return type(self)._fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling of ``(N, C, L)`` or ``(C, L)`` to ``output_size`` (int), with
    PyTorch's windows ``[floor(i L / out), ceil((i + 1) L / out))``."""
    _fn = staticmethod(F.adaptive_avg_pool1d)
    _n = 1


class AdaptiveAvgPool2d(_Adaptive):
    """Average pooling to ``output_size`` (int or pair; ``None`` keeps an axis)."""
    _fn = staticmethod(F.adaptive_avg_pool2d)
    _n = 2


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        _check_rank(self, input, self._n)
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` to ``output_size`` windows, as
    ``torch.nn.AdaptiveMaxPool1d``.

    Args:
        output_size (int): the output length.
        return_indices (bool): also return the maxima's positions. Default ``False``.
    """
    _fn = staticmethod(F.adaptive_max_pool1d)
    _n = 1


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size`` (int or pair;
    ``None`` keeps an axis), as ``torch.nn.AdaptiveMaxPool2d`` (``return_indices`` as
    :class:`AdaptiveMaxPool1d`, flat ``h * W + w``)."""
    _fn = staticmethod(F.adaptive_max_pool2d)
    _n = 2
