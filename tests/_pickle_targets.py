"""Module-level functions for the pickling tests (pickle stores functions by reference)."""

import numpy as np

from functorch_core import jit


def square(x):
    return x * x


@jit
def decorated(x):
    return np.tanh(x) * 2


@jit(static_argnames="n")
def powered(x, n):
    return x ** n
