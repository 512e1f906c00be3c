"""Correctly rounded narrowing to half precision and to bfloat16, shared by the scalar rules
(``ops.py``), the SciPy calls' narrow results (``scipy_calls.py``) and the bf16 products.

bfloat16 is the top half of a float32: widening is exact (``bits << 16``); narrowing a float
rounds to nearest even on the integer bits, as ml_dtypes does (every NaN becomes the quiet
``0x7fc0`` with its sign kept, subnormals are kept, overflow gives inf). A double narrows to
bfloat16 in one rounding, as ml_dtypes' ``astype`` does: round to odd into float first."""

from __future__ import annotations

from llvmlite import ir

_F16, _F32, _F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
_I16, _I32 = ir.IntType(16), ir.IntType(32)


def _round_to_odd_f32(e, x):
    """double -> float rounded to odd (the float's bits): exact enough for a second correct
    rounding to any format of at most 22 significand bits."""
    b = e.b
    t = b.fptrunc(x, _F32)
    back = b.fpext(t, _F64)
    inexact = b.fcmp_ordered("!=", back, x)
    too_big = b.fcmp_ordered(">", e.intrinsic("fabs", back), e.intrinsic("fabs", x))
    bits = b.bitcast(t, _I32)
    bits = b.select(b.and_(inexact, too_big), b.sub(bits, ir.Constant(_I32, 1)), bits)
    return b.select(inexact, b.or_(bits, ir.Constant(_I32, 1)), bits)


def f64_to_f16(e, x):
    """Correctly rounded double -> half: round to odd into float, then to half (the result
    is that half as a float). ``e``: an ``ops.Emitter``."""
    b = e.b
    bits = _round_to_odd_f32(e, x)
    return b.fpext(b.fptrunc(b.bitcast(bits, _F32), _F16), _F32)


def bf16_bits(b, x):
    """The bfloat16 (an i16) nearest a float ``x`` (ties to even; NaN: ``0x7fc0``, signed)."""
    return _bf16_of_f32_bits(b, b.bitcast(x, _I32))


def _c(v):
    return ir.Constant(_I32, v)


def _bf16_of_f32_bits(b, bits):
    """bfloat16 bits (i16) of float bits (i32)."""
    lsb = b.and_(b.lshr(bits, _c(16)), _c(1))
    return _nan_quieted(b, bits, b.lshr(b.add(bits, b.add(_c(0x7FFF), lsb)), _c(16)))


def _nan_quieted(b, bits, top):
    """``top`` (i32 holding bf16 bits) as an i16, or the quiet ``0x7fc0`` with its sign when
    the float bits ``bits`` are a NaN."""
    nan = b.icmp_unsigned(">", b.and_(bits, _c(0x7FFFFFFF)), _c(0x7F800000))
    quiet = b.or_(b.and_(b.lshr(bits, _c(16)), _c(0x8000)), _c(0x7FC0))
    return b.trunc(b.select(nan, quiet, top), _I16)


def exact_bf16_bits(b, x):
    """:func:`bf16_bits` of a float known to hold a bfloat16 value or a NaN (a load, a
    :func:`round_bf16`): its top half, NaN quieted as there (no rounding to do: the low
    half of a non-NaN is zero, so the rounding add never carries)."""
    bits = b.bitcast(x, _I32)
    return _nan_quieted(b, bits, b.lshr(bits, _c(16)))


def bf16_to_f32(b, bits16):
    """The float a bfloat16's bits (i16) stand for, exactly."""
    return b.bitcast(b.shl(b.zext(bits16, _I32), ir.Constant(_I32, 16)), _F32)


def round_bf16(b, x):
    """A float rounded to bfloat16 precision, as a float (a NaN stays the NaN it is: its
    bf16 store makes it ``0x7fc0``). Half the instructions of a round trip through
    :func:`bf16_bits`: each elementwise op of a bf16 kernel ends with one."""
    bits = b.bitcast(x, _I32)
    lsb = b.and_(b.lshr(bits, _c(16)), _c(1))
    rounded = b.and_(b.add(bits, b.add(_c(0x7FFF), lsb)), _c(-0x10000))
    return b.select(b.fcmp_unordered("uno", x, x), x, b.bitcast(rounded, _F32))


def f64_to_bf16(e, x):
    """Correctly rounded double -> bfloat16 (one rounding, as ml_dtypes), as a float."""
    return bf16_to_f32(e.b, _bf16_of_f32_bits(e.b, _round_to_odd_f32(e, x)))
