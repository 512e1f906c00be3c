"""The shape and dtype checks the families' rules share."""

from __future__ import annotations

import numpy as np

from ..catalogue import fail


def elementwise_shape(name, avals):
    shapes = {a.shape for a in avals if a.ndim}
    if len(shapes) > 1:
        fail(f"{name}: operand shapes {' and '.join(str(a.shape) for a in avals)} differ "
             "(elementwise primitives take equal shapes or rank-0 operands)")
    return shapes.pop() if shapes else ()


def same_dtype(name, avals):
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(f"{name}: operand dtypes {', '.join(str(a.dtype) for a in avals)} "
                        "differ; convert them first")
    return avals[0].dtype


def check_axes(name, axes, ndim, unique=True):
    for a in axes:
        if not 0 <= a < ndim:
            fail(f"{name}: axis {a} out of range for rank {ndim}")
    if unique and len(set(axes)) != len(axes):
        fail(f"{name}: repeated axis in {axes}")


def check_precision(name, dtype, precision):
    """A product's ``precision`` param: ``"high"`` or ``"medium"`` on float32 operands
    (absent: ``"highest"``, plain float32)."""
    if precision not in ("high", "medium") or dtype != np.float32:
        fail(f"{name}: precision {precision!r} should be 'high' or 'medium' on float32 "
              f"operands (absent for 'highest'), not on {dtype}")
