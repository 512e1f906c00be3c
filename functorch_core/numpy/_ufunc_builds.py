"""Primitive builders of ``fmod``, ``heaviside``, ``signbit``, ``modf``'s two parts, ``gcd``
``lcm`` and ``bitwise_count``.

Each takes operands already cast to the dtypes NumPy's ufunc resolves and broadcast to one
shape (``_elementwise.apply_ufunc`` does that), and emits primitives only.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind

from ._core import aval, constant


def fmod_build(x, y):
    """C's ``fmod``: the remainder of the truncated quotient, with the sign of ``x``.

    Floats: ``copysign(remainder(|x|, |y|), x)``, exact, since the floored remainder of two
    non-negative operands is the truncated one (zero, NaN and infinities come out as C's).
    Integers: the floored remainder moved back by ``y`` where its sign differs from
    ``x``'s (exact; a zero divisor gives 0, as NumPy's)."""
    dt = aval(x).dtype
    if dtype_kind(dt) == "f":
        return P.copysign.bind(P.rem.bind(P.abs.bind(x), P.abs.bind(y)), x)
    r = P.rem.bind(x, y)
    if dt.kind != "i":
        return r
    zero = constant(0, dt)
    flipped = P.ne.bind(P.lt.bind(r, zero), P.lt.bind(x, zero))
    return P.select.bind(P.and_.bind(P.ne.bind(r, zero), flipped), P.sub.bind(r, y), r)


def heaviside_build(x, h0):
    """0 below zero, 1 above, ``h0`` at zero and NaN at NaN, as ``numpy.heaviside``."""
    dt = aval(x).dtype
    zero = constant(0, dt)
    at_zero = P.select.bind(P.eq.bind(x, zero), h0, constant(np.nan, dt, aval(x).shape))
    above = P.select.bind(P.gt.bind(x, zero), constant(1, dt, aval(x).shape), at_zero)
    return P.select.bind(P.lt.bind(x, zero), constant(0, dt, aval(x).shape), above)


def signbit_build(x):
    """Whether the sign bit is set (``-0.0`` and a negative NaN included)."""
    dt = aval(x).dtype
    return P.lt.bind(P.copysign.bind(constant(1, dt, aval(x).shape), x), constant(0, dt))


def _trunc(x):
    return P.select.bind(P.lt.bind(x, constant(0, aval(x).dtype)), P.ceil.bind(x),
                         P.floor.bind(x))


def modf_whole_build(x):
    """The integral part of ``modf``: ``trunc(x)``."""
    return _trunc(x)


def modf_fraction_build(x):
    """The fractional part of ``modf``, with the sign of ``x`` (``-0.0`` for ``-3.0``;
    ``+-0.0`` for infinities, NaN for NaN)."""
    dt = aval(x).dtype
    inf = P.eq.bind(P.abs.bind(x), constant(np.inf, dt))
    frac = P.select.bind(inf, constant(0, dt, aval(x).shape), P.sub.bind(x, _trunc(x)))
    return P.copysign.bind(frac, x)


# Euclid's algorithm on integers below 2**(bits - 1) takes at most this many division steps
# (the Fibonacci bound: F(n + 2) > 2**(bits - 1)), plus one for a first step of mixed signs
_EUCLID_STEPS = {1: 12, 2: 24, 4: 47, 8: 93}


def gcd_build(x, y):
    """The greatest common divisor by Euclid's algorithm, unrolled to its worst-case number
    of steps (a finished pair stays fixed). |INT_MIN| wraps to itself, as in NumPy."""
    dt = aval(x).dtype
    zero = constant(0, dt)
    a, b = P.abs.bind(x), P.abs.bind(y)
    for _ in range(_EUCLID_STEPS[dt.itemsize]):
        more = P.ne.bind(b, zero)
        r = P.rem.bind(a, P.select.bind(more, b, constant(1, dt, aval(b).shape)))
        a, b = P.select.bind(more, b, a), P.select.bind(more, r, zero)
    return P.abs.bind(a)


def lcm_build(x, y):
    """``|x| // gcd(x, y) * |y|``, wrapping as NumPy's (0 when both are 0)."""
    return P.mul.bind(P.floor_div.bind(P.abs.bind(x), gcd_build(x, y)), P.abs.bind(y))


def bitwise_count_build(x):
    """The number of 1 bits of ``|x|`` (uint8), as ``numpy.bitwise_count``: bit ``k`` is
    ``(|x| // 2**k) & 1`` (a floor division is an arithmetic shift); a signed dtype's top
    bit is set only for ``|INT_MIN|``, which wraps to itself."""
    dt = aval(x).dtype
    a = P.abs.bind(x) if dt.kind == "i" else x
    bits = dt.itemsize * 8
    total = None
    for k in range(bits):
        if dt.kind == "i" and k == bits - 1:
            bit = P.lt.bind(a, constant(0, dt))
        else:
            bit = P.and_.bind(P.floor_div.bind(a, constant(1 << k, dt)), constant(1, dt))
        bit = P.convert.bind(bit, new_dtype=np.dtype(np.uint8))
        total = bit if total is None else P.add.bind(total, bit)
    return total


__all__ = ["bitwise_count_build", "fmod_build", "gcd_build", "heaviside_build", "lcm_build",
           "modf_fraction_build", "modf_whole_build", "signbit_build"]
