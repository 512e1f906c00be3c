"""``left_shift`` and ``right_shift`` with NumPy's answers for every count.

NumPy defines a shift by a count outside ``[0, bits)`` (negative, or at least the width
of the dtype): ``x << n`` is 0 and ``x >> n`` is the sign fill (-1 for a negative signed
``x``, else 0). Within range a left shift is a wrapping multiplication by ``2**n`` and a
right shift a floor division by it (arithmetic for signed dtypes, logical for unsigned),
``2**n`` built from the bits of ``n`` by wrapping multiplications: no new primitive.
"""

from __future__ import annotations

from functorch_core.ir import primitives as P

from ._core import aval, constant


def _bits(x) -> int:
    return aval(x).dtype.itemsize * 8


def _pow2(n, dt, shape):
    """``2**(n mod bits)`` in ``dt``, wrapping (``2**63`` is int64's minimum, as ``1 << 63``)."""
    bits = dt.itemsize * 8
    n = P.and_.bind(n, constant(bits - 1, dt, shape))
    out = constant(1, dt, shape)
    for k in range(bits.bit_length() - 1):
        on = P.ne.bind(P.and_.bind(n, constant(1 << k, dt, shape)), constant(0, dt, shape))
        factor = constant(1 << (1 << k), dt, shape)    # at most 2**(bits/2): fits in dt
        out = P.select.bind(on, P.mul.bind(out, factor), out)
    return out


def _in_range(n, dt, shape, top):
    """``0 <= n < top``."""
    below = P.lt.bind(n, constant(top, dt, shape))
    if dt.kind == "u":
        return below
    return P.and_.bind(P.ge.bind(n, constant(0, dt, shape)), below)


def left_shift_build(x, n):
    dt, shape = aval(x).dtype, aval(x).shape
    shifted = P.mul.bind(x, _pow2(n, dt, shape))
    return P.select.bind(_in_range(n, dt, shape, _bits(x)), shifted, constant(0, dt, shape))


def right_shift_build(x, n):
    dt, shape = aval(x).dtype, aval(x).shape
    bits = _bits(x)
    if dt.kind == "u":
        shifted = P.floor_div.bind(x, _pow2(n, dt, shape))
        return P.select.bind(_in_range(n, dt, shape, bits), shifted, constant(0, dt, shape))
    # signed: 2**(bits-1) is negative, so a count of bits - 1 takes the sign fill too
    shifted = P.floor_div.bind(x, P.max.bind(_pow2(n, dt, shape), constant(1, dt, shape)))
    fill = P.select.bind(P.lt.bind(x, constant(0, dt, shape)), constant(-1, dt, shape),
                         constant(0, dt, shape))
    return P.select.bind(_in_range(n, dt, shape, bits - 1), shifted, fill)
