"""Correctly rounded narrowing of a double to half precision, shared by the scalar rules
(``ops.py``) and the SciPy calls' float16 results (``scipy_calls.py``)."""

from __future__ import annotations

from llvmlite import ir

_F16, _F32, _F64, _I32 = ir.HalfType(), ir.FloatType(), ir.DoubleType(), ir.IntType(32)


def f64_to_f16(e, x):
    """Correctly rounded double -> half: round to odd into float, then to half (the result
    is that half as a float). ``e``: an ``ops.Emitter``."""
    b = e.b
    t = b.fptrunc(x, _F32)
    back = b.fpext(t, _F64)
    inexact = b.fcmp_ordered("!=", back, x)
    too_big = b.fcmp_ordered(">", e.intrinsic("fabs", back), e.intrinsic("fabs", x))
    bits = b.bitcast(t, _I32)
    bits = b.select(b.and_(inexact, too_big), b.sub(bits, ir.Constant(_I32, 1)), bits)
    bits = b.select(inexact, b.or_(bits, ir.Constant(_I32, 1)), bits)
    return b.fpext(b.fptrunc(b.bitcast(bits, _F32), _F16), _F32)
