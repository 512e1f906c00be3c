"""Activations with PyTorch's names and arguments, over ``functorch_core.numpy``."""

from __future__ import annotations

import numpy as np

import functorch_core.numpy as fnp
from functorch_core._internal import autocast
from functorch_core.transforms import stop_gradient

from ..module import shape_of
from ._erf import erfc

__all__ = ["elu", "gelu", "hardswish", "hardtanh", "leaky_relu", "log_softmax", "mish", "prelu",
           "relu", "relu6", "selu", "sigmoid", "silu", "softmax", "softplus", "tanh"]

_SQRT1_2 = 0.7071067811865476
_SQRT_2_PI = 0.7978845608028654
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def relu(input, inplace=False):
    """``max(input, 0)`` (``inplace`` is accepted; the result is always a new array)."""
    return fnp.maximum(input, 0)


def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``input`` clipped to ``[min_val, max_val]``."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val "
                         f"({max_val})")
    return fnp.minimum(fnp.maximum(input, min_val), max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, ``negative_slope * input`` elsewhere."""
    return fnp.where(input > 0, input, input * negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere."""
    return fnp.where(input > 0, input, alpha * fnp.expm1(fnp.minimum(input, 0)))


def selu(input, inplace=False):
    """``scale * elu(input, alpha)`` with SELU's constants."""
    return _SELU_SCALE * elu(input, _SELU_ALPHA)


def gelu(input, approximate="none"):
    """``input * Phi(input)`` with ``Phi`` the standard normal CDF (``approximate='none'``,
    through an erf accurate to double precision), or PyTorch's tanh approximation
    (``approximate='tanh'``)."""
    if approximate == "none":
        return input * 0.5 * erfc(-input * _SQRT1_2)
    if approximate == "tanh":
        inner = _SQRT_2_PI * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + fnp.tanh(inner))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def sigmoid(input):
    """``1 / (1 + exp(-input))``, accurate in both tails."""
    e = fnp.exp(-fnp.abs(input))
    return fnp.where(input >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def tanh(input):
    """Hyperbolic tangent."""
    return fnp.tanh(input)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * input)) / beta``, linear where ``beta * input > threshold``."""
    z = input * beta
    soft = fnp.logaddexp(fnp.minimum(z, threshold), 0.0) / beta
    return fnp.where(z > threshold, input, soft)


def silu(input, inplace=False):
    """``input * sigmoid(input)``."""
    return input * sigmoid(input)


def mish(input, inplace=False):
    """``input * tanh(softplus(input))``."""
    return input * fnp.tanh(softplus(input))


def hardswish(input, inplace=False):
    """``input * relu6(input + 3) / 6``."""
    return input * relu6(input + 3.0) / 6.0


def _dim(name, input, dim):
    if dim is None:
        nd = len(shape_of(input))
        return 0 if nd in (0, 1, 3) else 1     # PyTorch's legacy implicit choice
    return dim


@autocast.float32_op
def softmax(input, dim=None, dtype=None):
    """``exp(input) / sum(exp(input), dim)``, computed stably.

    Args:
        input (array): the input.
        dim (int): the axis to normalise over (PyTorch's implicit choice when ``None``).
        dtype: cast ``input`` to this dtype first. Default ``None``.
    """
    if dtype is not None:
        input = fnp.asarray(input).astype(np.dtype(dtype))
    dim = _dim("softmax", input, dim)
    z = input - stop_gradient(fnp.max(input, axis=dim, keepdims=True))
    e = fnp.exp(z)
    return e / fnp.sum(e, axis=dim, keepdims=True)


@autocast.float32_op
def log_softmax(input, dim=None, dtype=None):
    """``input - logsumexp(input, dim)``, computed stably (arguments as :func:`softmax`)."""
    if dtype is not None:
        input = fnp.asarray(input).astype(np.dtype(dtype))
    dim = _dim("log_softmax", input, dim)
    z = input - stop_gradient(fnp.max(input, axis=dim, keepdims=True))
    return z - fnp.log(fnp.sum(fnp.exp(z), axis=dim, keepdims=True))


def prelu(input, weight):
    """``input`` where positive, ``weight * input`` elsewhere, with ``weight`` one slope
    or one per channel (axis 1; a 0-D or 1-D input has one channel, as in PyTorch).

    Args:
        input (array): the input.
        weight (array): ``(1,)`` or ``(C,)`` slopes.

    Example::

        >>> prelu(np.array([[-2.0, 3.0]]), np.array([0.25]))
        array([[-0.5,  3. ]])
    """
    shape, wshape = tuple(shape_of(input)), tuple(shape_of(weight))
    n = int(np.prod(wshape))
    channels = shape[1] if len(shape) > 1 else 1      # PyTorch's: a 1-D input has one
    if len(wshape) > 1 or (n != 1 and channels != n):
        raise ValueError(f"prelu: mismatch of parameter numbers and input channel size: "
                         f"weight of shape {wshape} has {n} parameters, input of shape "
                         f"{shape} has {channels} channels")
    if n != 1 and len(shape) > 1:
        weight = fnp.reshape(weight, (n,) + (1,) * (len(shape) - 2))
    elif n == 1:
        weight = fnp.reshape(weight, ())
    return fnp.where(input > 0, input, weight * input)
