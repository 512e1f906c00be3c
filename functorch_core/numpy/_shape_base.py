"""The shape functions indexing builds on (``broadcast_to``, ``ravel`` and the checks of
shape and order arguments); ``_shape`` re-exports them with the rest of the shape API."""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import TracerError, mark_read_only
from functorch_core.ir import primitives as P
from functorch_core.transforms.functionalize import is_c_contiguous

from ._core import aval, check_concrete_shape, implements, is_tracer, operand


def _check_order(name, order):
    if order != "C":
        raise NotImplementedError(f"{name}(order={order!r}) is not supported; only order='C'")


def _ints(seq, what):
    try:
        return tuple(operator.index(s) for s in seq)
    except TracerError:
        raise
    except TypeError:
        raise TypeError(f"{what} must be integers, got {seq!r}") from None


def _as_shape(shape, call="reshape(shape)"):
    check_concrete_shape(shape, call)
    return _ints(shape, "shape entries") if np.iterable(shape) else _ints((shape,), "shape")


@implements(np.ravel)
def ravel(a, order="C"):
    """``numpy.ravel``: a 1-D view. Only order='C'."""
    _check_order("ravel", order)
    a = operand(a)
    out = P.reshape.bind(a, new_sizes=(aval(a).size,))
    if is_tracer(a) and not is_c_contiguous(a):   # NumPy's ravel copies then, reshape may not
        out = P.convert.bind(out, new_dtype=aval(out).dtype)
    return out


def broadcast_view(array, shape):
    """``array`` broadcast to ``shape`` (NumPy's rules), as a value the caller may write
    into: what ``broadcast_to`` gives, without its read-only mark."""
    x = operand(array)
    shape = _as_shape(shape, "broadcast_to(shape)")
    xs = aval(x).shape
    if any(d < 0 for d in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    lead = len(shape) - len(xs)
    if lead < 0:
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    if any(d not in (1, shape[lead + i]) for i, d in enumerate(xs)):
        raise ValueError("operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {xs} and requested shape {shape}")
    return P.broadcast_in_dim.bind(x, shape=shape,
                                   broadcast_dimensions=tuple(range(lead, len(shape))))


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    """``numpy.broadcast_to``: a read-only view of ``array`` with ``shape``.

    Args:
        array: the array (or array-like) to broadcast.
        shape: the target shape (an int or a tuple of ints).
        subok: accepted for NumPy's signature (no subclasses here). Default: False.

    As in NumPy, the result is read-only: a write into it (or a view of it) inside a
    traced function raises ValueError naming the call.

    Example::

        >>> fnp.broadcast_to(np.arange(3.0), (2, 3))
        array([[0., 1., 2.],
               [0., 1., 2.]])
    """
    return mark_read_only(broadcast_view(array, shape), "numpy.broadcast_to")
