"""``LayerNorm``, ``BatchNorm1d/2d``, ``GroupNorm``, ``InstanceNorm1d/2d``."""

from __future__ import annotations

import warnings

import numpy as np

from . import functional as F
from .module import Module, Parameter, shape_of

__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "LayerNorm"]


def _affine_parameters(module, shape, dtype, weight, bias):
    """The learned scale (``weight``, ones) and shift (``bias``, zeros) of ``shape``; each
    one that is off is registered as ``None``."""
    if weight:
        module.weight = Parameter(np.ones(shape, dtype))
    else:
        module.register_parameter("weight", None)
    if bias:
        module.bias = Parameter(np.zeros(shape, dtype))
    else:
        module.register_parameter("bias", None)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` axes, then affine.

    Args:
        normalized_shape (int or tuple): the trailing shape normalised over.
        eps (float): added to the variance. Default ``1e-5``.
        elementwise_affine (bool): learn ``weight`` (ones) and ``bias`` (zeros). Default True.
        bias (bool): learn ``bias`` when affine. Default ``True``.
        dtype: default float32.
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        dtype = np.float32 if dtype is None else dtype
        _affine_parameters(self, shape, dtype, elementwise_affine, elementwise_affine and bias)

    def forward(self, input):
        shape = tuple(shape_of(input))
        if shape[len(shape) - len(self.normalized_shape):] != self.normalized_shape:
            raise ValueError(f"{self._get_name()}(normalized_shape={self.normalized_shape}): "
                             f"input of shape {shape} does not end with it")
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _NormBase(Module):
    """The affine parameters and running-stat buffers of BatchNorm and InstanceNorm."""

    def __init__(self, num_features, eps, momentum, affine, track_running_stats, dtype):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = np.float32 if dtype is None else dtype
        _affine_parameters(self, num_features, dtype, affine, affine)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.zeros((), np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)


class _BatchNorm(_NormBase):
    _ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def forward(self, input):
        shape = tuple(shape_of(input))
        if len(shape) not in self._ranks or shape[1] != self.num_features:
            raise ValueError(f"{self._get_name()}(num_features={self.num_features}): expected "
                             f"a {' or '.join(f'{r}-D' for r in self._ranks)} input with "
                             f"{self.num_features} channels on axis 1, got shape {shape}")
        momentum = 0.0 if self.momentum is None else self.momentum
        update = self.training and self.track_running_stats
        if update:
            self.num_batches_tracked[...] = self.num_batches_tracked + 1
            if self.momentum is None:          # cumulative moving average
                momentum = 1.0 / self.num_batches_tracked
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean if update or not use_batch else None,
                            self.running_var if update or not use_batch else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)``, as ``torch.nn.BatchNorm1d``.

    Args:
        num_features (int): ``C``.
        eps (float): default ``1e-5``.
        momentum (float or None): running-stat factor; ``None`` is the cumulative average.
            Default ``0.1``.
        affine (bool): learn ``weight``/``bias``. Default ``True``.
        track_running_stats (bool): keep ``running_mean``/``running_var`` buffers
            (updated by in-place writes in training mode, used in eval mode). Default True.
    """
    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)`` (arguments as :class:`BatchNorm1d`)."""
    _ranks = (4,)


class GroupNorm(Module):
    """Normalise each sample over groups of channels, as ``torch.nn.GroupNorm``.

    Args:
        num_groups (int): the number of groups (must divide ``num_channels``).
        num_channels (int): ``C`` of the ``(N, C, *)`` input.
        eps (float): added to the variance. Default ``1e-5``.
        affine (bool): learn a per-channel ``weight`` (ones) and ``bias`` (zeros).
            Default ``True``.
        dtype: default float32.

    Example::

        >>> GroupNorm(2, 4)(np.ones((3, 4, 5), np.float32)).shape
        (3, 4, 5)
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.affine = affine
        dtype = np.float32 if dtype is None else dtype
        _affine_parameters(self, num_channels, dtype, affine, affine)

    def forward(self, input):
        shape = tuple(shape_of(input))
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise ValueError(f"{self._get_name()}(num_groups={self.num_groups}, num_channels="
                             f"{self.num_channels}): expected an input (N, "
                             f"{self.num_channels}, *), got shape {shape}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(_NormBase):
    _spatial = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def forward(self, input):
        shape, k, name = tuple(shape_of(input)), self._spatial, self._get_name()
        if len(shape) not in (k + 1, k + 2):
            raise ValueError(f"{name}(num_features={self.num_features}): expected a "
                             f"{k + 1}-D (C, *) or {k + 2}-D (N, C, *) input, got shape {shape}")
        c = shape[len(shape) - k - 1]
        if c != self.num_features:
            msg = (f"{name}(num_features={self.num_features}): input of shape {shape} has "
                   f"{c} channels")
            if self.affine or self.track_running_stats:
                raise ValueError(msg)
            warnings.warn(msg + "; num_features is not used because affine=False",
                          stacklevel=2)
        x = input if len(shape) == k + 2 else input[None]
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out if len(shape) == k + 2 else out[0]

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Normalise each sample's channels over ``L``, for ``(N, C, L)`` or ``(C, L)``, as
    ``torch.nn.InstanceNorm1d``.

    Args:
        num_features (int): ``C``.
        eps (float): added to the variance. Default ``1e-5``.
        momentum (float or None): running-stat factor (``None`` acts as ``0``, as in
            PyTorch). Default ``0.1``.
        affine (bool): learn ``weight`` (ones) and ``bias`` (zeros). Default ``False``.
        track_running_stats (bool): keep ``running_mean``/``running_var`` buffers,
            updated in training mode with the batch average of the instance statistics
            and used in eval mode. Default ``False``.
        dtype: default float32.
    """
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over ``(N, C, H, W)`` or ``(C, H, W)`` (arguments as
    :class:`InstanceNorm1d`).

    Example::

        >>> InstanceNorm2d(3, affine=True)(np.ones((2, 3, 4, 4), np.float32)).shape
        (2, 3, 4, 4)
    """
    _spatial = 2
