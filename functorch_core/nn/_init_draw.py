"""Draws for default initialisation from the global generator (PyTorch's distributions)."""

from __future__ import annotations

import math

import numpy as np

from functorch_core import random

from .module import Parameter


def uniform_parameter(shape, bound, dtype):
    """A Parameter drawn from ``U(-bound, bound)`` with the next global key."""
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    x = random.uniform(random.next_key(), tuple(shape), dtype=dtype, minval=-bound,
                       maxval=bound)
    return Parameter(np.asarray(x, dtype=dtype))


def normal_parameter(shape, dtype):
    """A Parameter drawn from ``N(0, 1)`` with the next global key."""
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    return Parameter(np.asarray(random.normal(random.next_key(), tuple(shape), dtype=dtype),
                                dtype=dtype))


def fan_in_bound(fan_in):
    """PyTorch's default bound for Linear/Conv weights and biases: ``1 / sqrt(fan_in)``
    (``kaiming_uniform_(a=sqrt(5))`` reduces to it)."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
