"""The partitioner's records of where a value lives while kernels are open: a member
of an open kernel, a constant fill not materialized yet, a gather's index column, a
reduction's result slot."""

from __future__ import annotations

import numpy as np


class Member:
    """A value computed inside the open kernel ``kernel`` (``ref`` names it there)."""

    __slots__ = ("kernel", "ref")

    def __init__(self, kernel, ref):
        self.kernel, self.ref = kernel, ref


class Splat:
    """A constant-filled array that is not materialized unless a non-kernel step needs it."""

    __slots__ = ("dtype", "shape", "value")

    def __init__(self, value, shape, dtype):
        self.value, self.shape, self.dtype = np.asarray(value, dtype)[()], tuple(shape), dtype


class ColumnAtom:
    """A column of gather indices, addressed as a view over the gather's output shape."""

    __slots__ = ("aval", "key")

    def __init__(self, key, aval):
        self.key, self.aval = key, aval


class Reduced:
    """A reduction of ``kernel`` whose result lands in ``slot`` when it is sealed."""

    __slots__ = ("kernel", "slot")

    def __init__(self, kernel, slot):
        self.kernel, self.slot = kernel, slot
