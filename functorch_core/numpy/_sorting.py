"""Sorting: ``sort`` and ``argsort`` on the ``sort`` primitive (stable, NaN last)."""

from __future__ import annotations

import numpy as np

from functorch_core.ir import primitives as P

from ._core import aval, checked_axis, implements, normalize_axis, operand
from ._shape import ravel

__all__ = ["sort", "argsort"]


def _operand_axis(name, a, axis, order, zero_d=False):
    if order is not None:
        raise NotImplementedError(f"{name}(..., order=...) (structured arrays) is not supported")
    x = operand(a)
    if axis is None:
        x, axis = ravel(x), 0
    if zero_d:          # argsort takes a 0-d array as 1-d, sort does not (as NumPy)
        return checked_axis(x, axis)
    return x, normalize_axis(axis, aval(x).ndim)


def _keys(x):
    """Sort keys: the value, or (real, imag) for complex values, as NumPy orders them."""
    if aval(x).dtype.kind == "c":
        return [P.real.bind(x), P.imag.bind(x)]
    return [x]


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.sort``: a sorted copy along ``axis`` (flattened when None).

    Always stable (``kind`` is ignored); NaNs sort last.
    """
    x, ax = _operand_axis("sort", a, axis, order)
    keys = _keys(x)
    operands = keys if len(keys) == 1 else [*keys, x]
    return P.sort.bind(*operands, dimension=ax, num_keys=len(keys))[-1]


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.argsort``: int64 indices that sort ``a`` along ``axis`` (flattened when None).

    Always stable (``kind`` is ignored): equal elements keep their order, as
    NumPy's ``kind='stable'``; NaNs sort last.
    """
    x, ax = _operand_axis("argsort", a, axis, order, zero_d=True)
    iota = P.iota.bind(dtype=np.dtype(np.int64), shape=aval(x).shape, dimension=ax)
    keys = _keys(x)
    return P.sort.bind(*keys, iota, dimension=ax, num_keys=len(keys))[-1]
