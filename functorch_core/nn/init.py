"""``nn.init``: PyTorch's in-place initialisers, drawing from the global generator."""

from __future__ import annotations

import math

import numpy as np

from functorch_core import random
from functorch_core.ir.dtypes import dtype_kind

__all__ = ["calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_",
           "normal_", "ones_", "orthogonal_", "trunc_normal_", "uniform_", "xavier_normal_",
           "xavier_uniform_", "zeros_"]


def _fill(name, tensor, values):
    if not isinstance(tensor, np.ndarray):
        raise TypeError(f"nn.init.{name}: expected a NumPy array (a Parameter), got "
                        f"{type(tensor).__name__}")
    tensor[...] = np.asarray(values)
    return tensor


def _float(tensor):
    return tensor.dtype if dtype_kind(tensor.dtype) == "f" else np.dtype(np.float64)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table: 1 for linear, conv and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu with
    ``param`` the slope (default 0.01), 3/4 for selu)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, bool) or not isinstance(param, int | float):
            raise ValueError(f"calculate_gain: negative_slope {param} not a valid number")
        else:
            slope = param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity}")


def _fans(name, tensor):
    if tensor.ndim < 2:
        raise ValueError(f"nn.init.{name}: fan in and fan out can not be computed for an array "
                         f"with fewer than 2 dimensions (shape {tensor.shape})")
    receptive = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def uniform_(tensor, a=0.0, b=1.0):
    """Fill ``tensor`` with draws from ``U(a, b)``; returns it."""
    return _fill("uniform_", tensor, random.uniform(random.next_key(), tensor.shape,
                                                     _float(tensor), a, b))


def normal_(tensor, mean=0.0, std=1.0):
    """Fill ``tensor`` with draws from ``N(mean, std**2)``; returns it."""
    z = random.normal(random.next_key(), tensor.shape, _float(tensor))
    return _fill("normal_", tensor, np.asarray(z) * std + mean)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Fill with ``N(mean, std**2)`` truncated to ``[a, b]`` (absolute bounds)."""
    z = random.truncated_normal(random.next_key(), (a - mean) / std, (b - mean) / std,
                                tensor.shape, _float(tensor))
    return _fill("trunc_normal_", tensor, np.asarray(z) * std + mean)


def constant_(tensor, val):
    """Fill with ``val``."""
    return _fill("constant_", tensor, val)


def zeros_(tensor):
    """Fill with zeros."""
    return _fill("zeros_", tensor, 0)


def ones_(tensor):
    """Fill with ones."""
    return _fill("ones_", tensor, 1)


def eye_(tensor):
    """Fill a 2-D ``tensor`` with the identity."""
    if tensor.ndim != 2:
        raise ValueError(f"nn.init.eye_: only 2-D arrays are supported, got shape "
                         f"{tensor.shape}")
    return _fill("eye_", tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor, gain=1.0):
    """``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans("xavier_uniform_", tensor)
    a = gain * math.sqrt(2.0 / (fan_in + fan_out)) * math.sqrt(3.0)
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans("xavier_normal_", tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(name, tensor, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"nn.init.{name}: mode {mode!r} not supported, please use one of "
                         "'fan_in', 'fan_out'")
    fan_in, fan_out = _fans(name, tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """``U(-bound, bound)`` with ``bound = gain * sqrt(3 / fan)`` (He et al.)."""
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """``N(0, std**2)`` with ``std = gain / sqrt(fan)`` (He et al.)."""
    return normal_(tensor, 0.0, _kaiming_std("kaiming_normal_", tensor, a, mode,
                                               nonlinearity))


def orthogonal_(tensor, gain=1):
    """Fill with a (semi-)orthogonal matrix times ``gain`` (Saxe et al. 2013), as PyTorch:
    the QR factorisation of a standard-normal ``(rows, cols)`` draw (transposed first when
    ``rows < cols``), each column of ``Q`` multiplied by the sign of ``R``'s diagonal so that
    the result is Haar-distributed. Dimensions after the first are flattened into ``cols``.

    Args:
        tensor (array): at least 2-D; filled in place and returned.
        gain (float): scale factor. Default ``1``.

    Example::

        >>> w = init.orthogonal_(np.empty((4, 3)))
        >>> np.allclose(w.T @ w, np.eye(3))
        True
    """
    if not isinstance(tensor, np.ndarray) or tensor.ndim < 2:
        raise ValueError(f"nn.init.orthogonal_: only arrays with 2 or more dimensions are "
                         f"supported, got shape {np.shape(tensor)}")
    if tensor.size == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = np.asarray(random.normal(random.next_key(), (rows, cols), np.float64))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill("orthogonal_", tensor, (gain * q).reshape(tensor.shape))
