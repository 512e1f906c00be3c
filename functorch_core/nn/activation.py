"""Activation modules (each calls its ``nn.functional`` namesake)."""

from __future__ import annotations

import numpy as np

from . import functional as F
from .module import Module, Parameter

__all__ = ["ELU", "GELU", "Hardswish", "Hardtanh", "LeakyReLU", "LogSoftmax", "Mish", "PReLU",
           "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softmax", "Softplus", "Tanh"]


class _Simple(Module):
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_Simple):
    """``max(x, 0)``."""
    _fn = staticmethod(F.relu)


class ReLU6(_Simple):
    """``min(max(x, 0), 6)``."""
    _fn = staticmethod(F.relu6)


class SELU(_Simple):
    """Scaled ELU."""
    _fn = staticmethod(F.selu)


class SiLU(_Simple):
    """``x * sigmoid(x)``."""
    _fn = staticmethod(F.silu)


class Mish(_Simple):
    """``x * tanh(softplus(x))``."""
    _fn = staticmethod(F.mish)


class Hardswish(_Simple):
    """``x * relu6(x + 3) / 6``."""
    _fn = staticmethod(F.hardswish)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """Logistic sigmoid."""

    def forward(self, input):
        return F.sigmoid(input)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """``x * Phi(x)``; ``approximate='tanh'`` for PyTorch's tanh form. Default ``'none'``."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """Clip to ``[min_val, max_val]``."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) cannot be greater than max_val "
                             f"({max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Softmax(Module):
    """Softmax over ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax over ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` where positive, ``weight * x`` elsewhere, with a learned slope, as
    ``torch.nn.PReLU``.

    Args:
        num_parameters (int): ``1`` (one slope) or the channel count ``C`` (axis 1 of
            the input). Default ``1``.
        init (float): the slopes' initial value. Default ``0.25``.
        dtype: default float32.

    Example::

        >>> PReLU()(np.array([-2.0, 3.0], np.float32))
        array([-0.5,  3. ], dtype=float32)
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(num_parameters, init,
                                        np.float32 if dtype is None else dtype))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"
