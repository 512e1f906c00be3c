"""``group_norm`` and ``instance_norm`` with PyTorch's arguments and running-stat rules."""

from __future__ import annotations

import numpy as np

import functorch_core.numpy as fnp
from functorch_core._internal import autocast
from functorch_core.transforms import stop_gradient

from ..module import shape_of
from .linear import _write_stat

__all__ = ["group_norm", "instance_norm"]


def _affine(out, weight, bias, nd):
    shape = (1, -1) + (1,) * (nd - 2)
    if weight is not None:
        out = out * fnp.reshape(weight, shape)
    return out if bias is None else out + fnp.reshape(bias, shape)


@autocast.float32_op
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each sample over groups of ``C / num_groups`` channels (and all spatial
    positions; biased variance), then a per-channel affine.

    Args:
        input (array): ``(N, C, *)``.
        num_groups (int): the number of channel groups (must divide ``C``).
        weight, bias (array, optional): ``(C,)`` scale and shift.
        eps (float): added to the variance. Default ``1e-5``.

    Example::

        >>> group_norm(np.arange(8.0).reshape(1, 4, 2), 2).round(2)[0, :2]
        array([[-1.34, -0.45],
               [ 0.45,  1.34]])
    """
    shape = tuple(shape_of(input))
    if len(shape) < 2 or shape[1] % num_groups:
        raise ValueError(f"group_norm: expected an input (N, C, *) with C divisible by "
                         f"num_groups, but got input of shape {shape} and "
                         f"num_groups={num_groups}")
    x = fnp.reshape(input, (shape[0], num_groups, -1))
    mean = fnp.mean(x, axis=-1, keepdims=True)
    var = fnp.mean(fnp.square(x - mean), axis=-1, keepdims=True)
    out = fnp.reshape((x - mean) / fnp.sqrt(var + eps), shape)
    return _affine(out, weight, bias, len(shape))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each sample's channels over their spatial positions, as
    ``torch.nn.functional.instance_norm``.

    Args:
        input (array): ``(N, C, *spatial)``.
        running_mean, running_var (array, optional): ``(C,)`` buffers. With
            ``use_input_stats`` they are updated in place with the batch average of the
            per-instance mean and unbiased variance (``momentum``); without, they are the
            statistics used.
        weight, bias (array, optional): ``(C,)`` scale and shift.
        use_input_stats (bool): normalise with each instance's own statistics.
            Default ``True``.
        momentum (float): the running-stat factor. Default ``0.1``.
        eps (float): added to the variance. Default ``1e-5``.
    """
    shape = tuple(shape_of(input))
    if len(shape) < 3:
        raise ValueError(f"instance_norm: expected an input (N, C, *spatial) with at least "
                         f"one spatial dimension, got shape {shape}")
    nd, c = len(shape), shape[1]
    for what, arr in (("running_mean", running_mean), ("running_var", running_var),
                      ("weight", weight), ("bias", bias)):
        if arr is not None and tuple(shape_of(arr)) != (c,):
            raise ValueError(f"instance_norm: {what} of shape {tuple(shape_of(arr))} does "
                             f"not match the {c} channels of input of shape {shape}")
    axes = tuple(range(2, nd))
    if use_input_stats:
        n = int(np.prod(shape[2:]))
        if n <= 1:
            raise ValueError(f"instance_norm: expected more than 1 spatial element when "
                             f"training, got input of shape {shape}")
        mean = fnp.mean(input, axis=axes, keepdims=True)
        var = fnp.mean(fnp.square(input - mean), axis=axes, keepdims=True)
        if running_mean is not None:
            batch_mean = fnp.mean(fnp.reshape(mean, shape[:2]), axis=0)
            _write_stat("running_mean", running_mean,
                        stop_gradient((1 - momentum) * running_mean + momentum * batch_mean),
                        "instance_norm")
        if running_var is not None:
            batch_var = fnp.mean(fnp.reshape(var, shape[:2]), axis=0) * (n / (n - 1))
            _write_stat("running_var", running_var,
                        stop_gradient((1 - momentum) * running_var + momentum * batch_var),
                        "instance_norm")
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        bshape = (1, c) + (1,) * (nd - 2)
        mean = fnp.reshape(stop_gradient(running_mean), bshape)
        var = fnp.reshape(stop_gradient(running_var), bshape)
    return _affine((input - mean) / fnp.sqrt(var + eps), weight, bias, nd)
