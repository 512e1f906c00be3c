"""lax's products and rounding: ``dot_general``, ``dot``, ``reduce_precision`` and
``Precision``.

Each records one primitive (``dot_general`` or ``reduce_precision``, plus layout ops), so it
differentiates, batches and lowers like every other. A float32 product's ``precision`` is
recorded in the primitive; ``None`` reads the float32 matmul precision in force
(``fc.get_float32_matmul_precision()``) when the product is traced.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.source import user_source

from .._internal import matmul_precision
from .._internal.matmul_precision import Precision
from ..numpy.internal import array_operand, aval, to_result
from .conv import operands

__all__ = ["Precision", "dot_general", "dot", "reduce_precision"]


def _axes(name, arg, axes, ndim, shape):
    try:
        axes = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"{name}: {arg} {axes!r} should be a sequence of ints (operand "
                        f"shape {shape})") from None
    if any(not -ndim <= a < ndim for a in axes) or len(set(a % max(ndim, 1) for a in axes)) \
            != len(axes):
        raise ValueError(f"{name}: {arg} {axes} are not distinct axes of an operand of shape "
                         f"{shape} (at {user_source()})")
    return tuple(a % ndim for a in axes)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """General tensor contraction, as ``jax.lax.dot_general``.

    Args:
        lhs (array): the left operand.
        rhs (array): the right operand.
        dimension_numbers (pair of pairs): ``((lhs_contracting, rhs_contracting),
            (lhs_batch, rhs_batch))``, each a sequence of axis numbers.
        precision (default ``None``): for float32 operands ``lax.Precision.HIGHEST`` /
            ``'highest'`` / ``'float32'`` (float32 products), ``HIGH`` / ``'high'`` /
            ``'bfloat16_3x'`` (the three-term bfloat16 split: near float32 accuracy) or
            ``'medium'`` / ``'bfloat16'`` (operands rounded to bfloat16, float32
            accumulation); ``None`` or ``DEFAULT``: the float32 matmul precision in force,
            read when traced. Other dtypes are never reduced.
        preferred_element_type (dtype, default ``None``): compute and return in this
            dtype (operands are converted to it).

    Returns:
        array: batch dimensions, then ``lhs``'s free ones, then ``rhs``'s.

    Example::

        >>> x, y = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
        >>> dot_general(x, y, (((2,), (1,)), ((0,), (0,))), precision="high").shape
        (2, 3, 5)
    """
    name = "dot_general"
    lhs, rhs = operands(name, lhs, rhs, preferred_element_type)
    ls, rs = aval(lhs).shape, aval(rhs).shape
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise ValueError(f"{name}: dimension_numbers {dimension_numbers!r} should be "
                         "((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))") \
            from None
    lc, lb = (_axes(name, what, a, len(ls), ls) for what, a in
              (("lhs contracting dimensions", lc), ("lhs batch dimensions", lb)))
    rc, rb = (_axes(name, what, a, len(rs), rs) for what, a in
              (("rhs contracting dimensions", rc), ("rhs batch dimensions", rb)))
    if len(lc) != len(rc) or len(lb) != len(rb) or set(lc) & set(lb) or set(rc) & set(rb):
        raise ValueError(f"{name}: dimension_numbers {dimension_numbers!r} do not pair up "
                         f"for shapes {ls} and {rs} (at {user_source()})")
    for a, b in zip(lc + lb, rc + rb, strict=True):
        if ls[a] != rs[b]:
            raise ValueError(f"{name}: lhs {ls} dimension {a} ({ls[a]}) and rhs {rs} "
                             f"dimension {b} ({rs[b]}) should match (at {user_source()})")
    out = P.dot_general.bind(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)),
                             **matmul_precision.param(name, precision, aval(lhs).dtype))
    return to_result(out)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products, as ``jax.lax.dot``: ``lhs`` of rank 1 or 2 contracted on
    its last axis with ``rhs``'s first.

    Args:
        lhs (array): a vector ``(k,)`` or matrix ``(m, k)``.
        rhs (array): a vector ``(k,)`` or matrix ``(k, n)``.
        precision (default ``None``): as in :func:`dot_general`.
        preferred_element_type (dtype, default ``None``): the computation dtype.

    Example::

        >>> dot(np.ones((2, 3), np.float32), np.ones(3, np.float32),
        ...     precision=Precision.HIGHEST)
        array([3., 3.], dtype=float32)
    """
    ls, rs = aval(array_operand(lhs)).shape, aval(array_operand(rhs)).shape
    if len(ls) not in (1, 2) or len(rs) not in (1, 2) or ls[-1] != rs[0]:
        raise TypeError(f"dot: incompatible shapes for dot: got {ls} and {rs}; lhs should be "
                        f"rank 1 or 2 with its last dimension equal to rhs's first "
                        f"(at {user_source()})")
    return dot_general(lhs, rhs, (((len(ls) - 1,), (0,)), ((), ())), precision=precision,
                       preferred_element_type=preferred_element_type)


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """Round to the nearest value with ``exponent_bits`` exponent and ``mantissa_bits``
    mantissa bits, keeping the dtype (``jax.lax.reduce_precision``, XLA's semantics).

    Ties round to even; values beyond the reduced range become signed infinities, values at
    or below its smallest normal exponent signed zeros (XLA flushes the reduced format's
    subnormals: with the dtype's own exponent width nothing is flushed); NaN stays NaN.
    ``(8, 7)`` on float32 is bfloat16 rounding, ``(5, 10)`` float16's (normal range).

    Args:
        operand (array): a floating-point array (float16, float32 or float64).
        exponent_bits (int): at least 1.
        mantissa_bits (int): at least 0.

    Returns:
        array: ``operand``'s shape and dtype.

    Example::

        >>> reduce_precision(np.float32([1.00390625, 3.14159265]), 8, 7)
        array([1.      , 3.140625], dtype=float32)
    """
    x = array_operand(operand)
    if dtype_kind(aval(x).dtype) != "f":
        raise TypeError(f"reduce_precision: operand of dtype {aval(x).dtype} (shape "
                        f"{aval(x).shape}) is not floating point (at {user_source()})")
    for arg, v, least in (("exponent_bits", exponent_bits, 1),
                          ("mantissa_bits", mantissa_bits, 0)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < least:
            raise ValueError(f"reduce_precision: {arg} must be an int >= {least}, got {v!r} "
                             f"(at {user_source()})")
    return to_result(P.reduce_precision.bind(x, exponent_bits=int(exponent_bits),
                                             mantissa_bits=int(mantissa_bits)))
