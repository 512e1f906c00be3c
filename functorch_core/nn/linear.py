"""``Linear``, ``Bilinear``, ``Identity``, ``Flatten``, ``Unflatten``."""

from __future__ import annotations

import numpy as np

import functorch_core.numpy as fnp

from . import functional as F
from ._init_draw import fan_in_bound, uniform_parameter
from .module import Module, shape_of

__all__ = ["Bilinear", "Flatten", "Identity", "Linear", "Unflatten"]


class Identity(Module):
    """Returns its input (extra constructor arguments are ignored, as in PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``.

    Args:
        in_features (int): size of each input's last axis.
        out_features (int): size of each output's last axis.
        bias (bool): whether to add a learned bias. Default ``True``.
        device: accepted and ignored.
        dtype: parameter dtype. Default ``float32``.

    ``weight`` ``(out_features, in_features)`` and ``bias`` ``(out_features,)`` are drawn
    from ``U(-1/sqrt(in_features), 1/sqrt(in_features))`` with the global generator.

    Example::

        >>> Linear(3, 4)(np.ones((2, 3), np.float32)).shape
        (2, 4)
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        bound = fan_in_bound(self.in_features)
        self.weight = uniform_parameter((self.out_features, self.in_features), bound, dtype)
        if bias:
            self.bias = uniform_parameter((self.out_features,), bound, dtype)
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        if len(shape_of(input)) < 1 or shape_of(input)[-1] != self.in_features:
            raise ValueError(f"{self._get_name()}(in_features={self.in_features}): input of "
                             f"shape {tuple(shape_of(input))} has last dimension "
                             f"{shape_of(input)[-1] if len(shape_of(input)) else None}, expected "
                             f"{self.in_features}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1 @ weight @ x2 + bias`` per output feature, as ``torch.nn.Bilinear``.

    Args:
        in1_features (int), in2_features (int): the two inputs' last-axis sizes.
        out_features (int): the output's last-axis size.
        bias (bool): learn a bias. Default ``True``.
        dtype: default float32.

    ``weight`` ``(out, in1, in2)`` and ``bias`` ``(out,)`` are drawn from
    ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``.

    Example::

        >>> Bilinear(3, 4, 5)(np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)).shape
        (2, 5)
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        bound = fan_in_bound(self.in1_features)
        self.weight = uniform_parameter((self.out_features, self.in1_features,
                                         self.in2_features), bound, dtype)
        if bias:
            self.bias = uniform_parameter((self.out_features,), bound, dtype)
        else:
            self.register_parameter("bias", None)

    def forward(self, input1, input2):
        s1, s2 = tuple(shape_of(input1)), tuple(shape_of(input2))
        if not s1 or not s2 or s1[-1] != self.in1_features or s2[-1] != self.in2_features \
                or s1[:-1] != s2[:-1]:
            raise ValueError(f"{self._get_name()}(in1_features={self.in1_features}, "
                             f"in2_features={self.in2_features}): got input1 of shape {s1} "
                             f"and input2 of shape {s2}")
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flatten axes ``start_dim`` to ``end_dim`` into one (default: all but the batch axis)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        shape = tuple(shape_of(input))
        nd = max(len(shape), 1)
        s, e = self.start_dim % nd, self.end_dim % nd
        if s > e:
            raise ValueError(f"Flatten: start_dim {self.start_dim} comes after end_dim "
                             f"{self.end_dim} for input of shape {shape}")
        return fnp.reshape(input, shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:])

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand axis ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        shape = tuple(shape_of(input))
        d = self.dim % len(shape)
        if int(np.prod(self.unflattened_size)) != shape[d] and -1 not in self.unflattened_size:
            raise ValueError(f"Unflatten: unflattened_size {self.unflattened_size} does not "
                             f"multiply to dimension {self.dim} of input shape {shape}")
        return fnp.reshape(input, shape[:d] + self.unflattened_size + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
