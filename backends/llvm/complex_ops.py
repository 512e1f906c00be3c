"""Scalar lowering of complex64/complex128, bit-for-bit what NumPy computes on this CPU.

A complex compute value is an LLVM struct ``{float, float}`` / ``{double, double}``
(real, imaginary); storage is the same pair, NumPy's interleaved layout. The rules
follow NumPy's loops as measured against NumPy itself (tests/backends/llvm/test_llvm_complex.py):

- ``mul`` on a CPU where NumPy dispatches its FMA3 loops computes
  ``re = fma(ar, br, -(ai*bi))`` and ``im = fma(ar, bi, ai*br)``; elsewhere the
  plain formula. No other instruction carries contraction flags.
- ``div`` is Smith's algorithm in NumPy's arrangement (a zero divisor divides each
  part by ``|br|``, giving NumPy's inf/nan pattern).
- ``abs`` is NumPy's SIMD hypot: infinities win over NaNs, then
  ``big * sqrt(fma(r, r, 1))`` with ``r = small / big`` (0 when big is 0 or small inf).
- ``sign`` divides by libm's ``hypot``/``hypotf`` (NumPy's npy_hypot), not by ``abs``.
- ``sqrt``, ``exp``, ``log`` and the trigonometric/hyperbolic functions call libm's
  ``csqrt``/``csqrtf`` etc., as NumPy does (x86-64 calling convention).

``COMPLEX_RULES`` has the same ``rule(e, dt, *args)`` signature as ``ops.RULES``, ``dt``
being the complex operand dtype (the float operand dtype for ``complex``).
"""

from __future__ import annotations

import functools

import numpy as np
from functorch_core.ir import primitives as P
from llvmlite import binding as llvm
from llvmlite import ir

F32, F64 = ir.FloatType(), ir.DoubleType()


def part_dtype(dt: np.dtype) -> np.dtype:
    """The real dtype of each part of complex ``dt``."""
    return np.dtype(np.float32 if dt.itemsize == 8 else np.float64)


def pair_type(dt: np.dtype) -> ir.LiteralStructType:
    part = F32 if dt.itemsize == 8 else F64
    return ir.LiteralStructType([part, part])


@functools.cache
def numpy_uses_fma() -> bool:
    """Whether NumPy's complex multiply/abs loops run their FMA3 versions here."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
        return bool(feats.get("FMA3") and feats.get("AVX2"))
    except ImportError:                         # pragma: no cover - other NumPy layouts
        host = llvm.get_host_cpu_features()
        return bool(host.get("fma", False) and host.get("avx2", False))


def const(dt, value):
    ty = pair_type(dt)
    z = complex(value)
    return ir.Constant(ty, [ir.Constant(ty.elements[0], z.real),
                            ir.Constant(ty.elements[1], z.imag)])


def parts(e, z):
    return e.b.extract_value(z, 0), e.b.extract_value(z, 1)


def pack(e, re, im):
    ty = ir.LiteralStructType([re.type, re.type])
    return e.b.insert_value(e.b.insert_value(ir.Constant(ty, ir.Undefined), re, 0), im, 1)


def load(e, dt, ptr):
    part = pair_type(dt).elements[0]
    re = e.b.load(ptr, typ=part)
    im = e.b.load(e.b.gep(ptr, [ir.Constant(ir.IntType(64), 1)], inbounds=True,
                          source_etype=part), typ=part)
    return pack(e, re, im)


def store(e, dt, z, ptr):
    part = pair_type(dt).elements[0]
    re, im = parts(e, z)
    e.b.store(re, ptr)
    e.b.store(im, e.b.gep(ptr, [ir.Constant(ir.IntType(64), 1)], inbounds=True,
                          source_etype=part))


def _fma(e, x, y, z):
    return e.intrinsic("fma", x, y, z)


# --- rules ----------------------------------------------------------------------

def _partwise(method):
    def rule(e, dt, x, y, flags=()):
        (xr, xi), (yr, yi) = parts(e, x), parts(e, y)
        op = getattr(e.b, method)
        return pack(e, op(xr, yr, flags=flags), op(xi, yi, flags=flags))
    return rule


add = _partwise("fadd")
_sub = _partwise("fsub")


def _neg(e, dt, x):
    re, im = parts(e, x)
    return pack(e, e.b.fneg(re), e.b.fneg(im))


def _conj(e, dt, x):
    re, im = parts(e, x)
    return pack(e, re, e.b.fneg(im))


def _mul(e, dt, x, y):
    b = e.b
    (ar, ai), (br, bi) = parts(e, x), parts(e, y)
    if numpy_uses_fma():
        re = _fma(e, ar, br, b.fneg(b.fmul(ai, bi)))
        im = _fma(e, ar, bi, b.fmul(ai, br))
    else:
        re = b.fsub(b.fmul(ar, br), b.fmul(ai, bi))
        im = b.fadd(b.fmul(ar, bi), b.fmul(ai, br))
    return pack(e, re, im)


def _div(e, dt, x, y):
    b = e.b
    (ar, ai), (br, bi) = parts(e, x), parts(e, y)
    one, zero = ir.Constant(ar.type, 1.0), ir.Constant(ar.type, 0.0)
    abs_r, abs_i = e.intrinsic("fabs", br), e.intrinsic("fabs", bi)
    # |br| >= |bi| (false with a NaN): the ratio bi/br
    rat = b.fdiv(bi, br)
    scl = b.fdiv(one, b.fadd(br, b.fmul(bi, rat)))
    re1 = b.fmul(b.fadd(ar, b.fmul(ai, rat)), scl)
    im1 = b.fmul(b.fsub(ai, b.fmul(ar, rat)), scl)
    both_zero = b.and_(b.fcmp_ordered("==", abs_r, zero), b.fcmp_ordered("==", abs_i, zero))
    re1 = b.select(both_zero, b.fdiv(ar, abs_r), re1)
    im1 = b.select(both_zero, b.fdiv(ai, abs_r), im1)
    # otherwise the ratio br/bi
    rat2 = b.fdiv(br, bi)
    scl2 = b.fdiv(one, b.fadd(bi, b.fmul(br, rat2)))
    re2 = b.fmul(b.fadd(b.fmul(ar, rat2), ai), scl2)
    im2 = b.fmul(b.fsub(b.fmul(ai, rat2), ar), scl2)
    first = b.fcmp_ordered(">=", abs_r, abs_i)
    return pack(e, b.select(first, re1, re2), b.select(first, im1, im2))


def _abs(e, dt, x):
    b = e.b
    re, im = (e.intrinsic("fabs", p) for p in parts(e, x))
    ty = re.type
    inf, nan = ir.Constant(ty, float("inf")), ir.Constant(ty, float("nan"))
    zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)
    re_inf, im_inf = b.fcmp_ordered("==", re, inf), b.fcmp_ordered("==", im, inf)
    im = b.select(re_inf, inf, im)
    re = b.select(im_inf, inf, re)
    re_nan, im_nan = e.isnan(re), e.isnan(im)
    im = b.select(re_nan, nan, im)
    re = b.select(im_nan, nan, re)
    re_bigger = b.fcmp_ordered(">", re, im)
    big, small = b.select(re_bigger, re, im), b.select(re_bigger, im, re)
    no_div = b.or_(b.fcmp_ordered("==", big, zero), b.fcmp_ordered("==", small, inf))
    ratio = b.select(no_div, zero, b.fdiv(small, b.select(no_div, one, big)))
    if numpy_uses_fma():
        s = _fma(e, ratio, ratio, one)
    else:
        s = b.fadd(b.fmul(ratio, ratio), one)
    return b.fmul(e.intrinsic("sqrt", s), big)


def _sign(e, dt, x):
    """NumPy's complex sign: z / hypot(z) through libm's hypot of the part type, with
    NaN -> nan+nanj, an infinite modulus -> the unit along the infinite (or overflowing)
    part (nan+nanj when both are infinite), 0 -> 0."""
    b = e.b
    re, im = parts(e, x)
    ty = re.type
    zero, one, nan = (ir.Constant(ty, v) for v in (0.0, 1.0, float("nan")))
    inf = ir.Constant(ty, float("inf"))
    h = e.libm("hypot", re, im)

    def unit(v):
        return b.select(b.fcmp_ordered(">", v, zero), one, b.fneg(one))
    re_inf = b.fcmp_ordered("==", e.intrinsic("fabs", re), inf)
    im_inf = b.fcmp_ordered("==", e.intrinsic("fabs", im), inf)
    inf_re = b.select(re_inf, b.select(im_inf, nan, unit(re)), zero)
    inf_im = b.select(re_inf, b.select(im_inf, nan, zero), unit(im))
    out_re, out_im = b.fdiv(re, h), b.fdiv(im, h)
    is_zero = b.fcmp_ordered("==", h, zero)
    out_re, out_im = b.select(is_zero, zero, out_re), b.select(is_zero, zero, out_im)
    is_inf = b.fcmp_ordered("==", h, inf)
    out_re, out_im = b.select(is_inf, inf_re, out_re), b.select(is_inf, inf_im, out_im)
    is_nan = e.isnan(h)
    return pack(e, b.select(is_nan, nan, out_re), b.select(is_nan, nan, out_im))


# NumPy's complex loops call these C99 functions of the platform libm (npy_csqrt ...)
LIBM_COMPLEX = {p: p.spec.clibm for p in P.ALL.values() if p.spec.clibm}


@functools.cache
def host_is_x86_64() -> bool:
    """The C ABI of ``double _Complex`` / ``float _Complex`` spelled below is x86-64's."""
    return llvm.get_process_triple().startswith("x86_64")


def _libm_complex(name):
    """A call to libm's ``name`` (double) or ``name``f (float) in the x86-64 SysV ABI:
    a complex double travels as two doubles, a complex float packed in one vector."""
    def rule(e, dt, x):
        b = e.b
        re, im = parts(e, x)
        if dt.itemsize == 16:
            fn = e._declare(name, pair_type(dt), [F64, F64])
            return b.call(fn, [re, im])
        v2, i32 = ir.VectorType(F32, 2), ir.IntType(32)
        fn = e._declare(name + "f", v2, [v2])
        packed = b.insert_element(b.insert_element(ir.Constant(v2, ir.Undefined), re,
                                                   ir.Constant(i32, 0)), im, ir.Constant(i32, 1))
        r = b.call(fn, [packed])
        return pack(e, b.extract_element(r, ir.Constant(i32, 0)),
                    b.extract_element(r, ir.Constant(i32, 1)))
    return rule


def _minmax(is_max):
    """NumPy's complex maximum/minimum: x when it is ordered after (before) y, the real
    parts first (a NaN imaginary part makes a real-part win void), or when x has a NaN
    part; otherwise y. Ties keep x."""
    def rule(e, dt, x, y):
        b = e.b
        (xr, xi), (yr, yi) = parts(e, x), parts(e, y)
        strict, loose = (">", ">=") if is_max else ("<", "<=")
        no_nan_im = b.not_(b.or_(e.isnan(xi), e.isnan(yi)))
        wins = b.or_(b.and_(b.fcmp_ordered(strict, xr, yr), no_nan_im),
                     b.and_(b.fcmp_ordered("==", xr, yr), b.fcmp_ordered(loose, xi, yi)))
        take_x = b.or_(wins, b.or_(e.isnan(xr), e.isnan(xi)))
        return b.select(take_x, x, y)
    return rule


def _is_finite(e, dt, x):
    b = e.b
    inf = ir.Constant(pair_type(dt).elements[0], float("inf"))
    re, im = (e.intrinsic("fabs", p) for p in parts(e, x))
    return b.and_(b.fcmp_ordered("<", re, inf), b.fcmp_ordered("<", im, inf))


def _eq(e, dt, x, y):
    (xr, xi), (yr, yi) = parts(e, x), parts(e, y)
    return e.b.and_(e.b.fcmp_ordered("==", xr, yr), e.b.fcmp_ordered("==", xi, yi))


def _ne(e, dt, x, y):
    (xr, xi), (yr, yi) = parts(e, x), parts(e, y)
    return e.b.or_(e.b.fcmp_unordered("!=", xr, yr), e.b.fcmp_unordered("!=", xi, yi))


COMPLEX_RULES = {
    P.add: add, P.sub: _sub, P.neg: _neg, P.conj: _conj, P.mul: _mul, P.div: _div,
    P.abs: _abs, P.sign: _sign, P.is_finite: _is_finite, P.max: _minmax(True),
    P.min: _minmax(False), P.eq: _eq, P.ne: _ne,
    P.real: lambda e, dt, x: e.b.extract_value(x, 0),
    P.imag: lambda e, dt, x: e.b.extract_value(x, 1),
    **{p: _libm_complex(name) for p, name in LIBM_COMPLEX.items()},
}

# Why the other complex equations stay in the interpreter.
COMPLEX_GAPS = {
    P.pow: "complex pow: NumPy special-cases small integer exponents; not lowered natively",
    P.cumprod: "complex cumprod: NumPy's accumulate starts from the first element, and "
               "(1+0j)*z is not z when a part is inf or nan",
}
_TRANSCENDENTAL_GAP = ("complex exp2/expm1/log1p/logistic: NumPy composes them itself "
                       "(not one libm call); not lowered natively")
ABI_GAP = ("complex libm and SciPy calls (csqrt, cexp, ..., the Faddeeva functions) are only "
           "spelled for the x86-64 C ABI")


def complex_gap(eqn) -> str | None:
    """Why an equation with a complex operand or result cannot lower (None: it can)."""
    prim = eqn.prim
    if prim in COMPLEX_GAPS:
        return COMPLEX_GAPS[prim]
    if prim in LIBM_COMPLEX and not host_is_x86_64():
        return ABI_GAP
    if prim.family == "unary" and prim not in COMPLEX_RULES:
        return _TRANSCENDENTAL_GAP
    if prim.family == "binary" and prim not in COMPLEX_RULES and prim is not P.complex:
        return f"complex {prim.name} is not lowered natively"
    return None


def convert(e, src, dst, x, real_convert):
    """NumPy ``astype`` where ``src`` or ``dst`` is complex, as the interpreter's convert:
    complex -> bool is ``z != 0``, complex -> other real dtypes take the real part."""
    b = e.b
    if src.kind == "c":
        re, im = parts(e, x)
        if dst.kind == "b":
            zero = ir.Constant(re.type, 0.0)
            return b.or_(b.fcmp_unordered("!=", re, zero), b.fcmp_unordered("!=", im, zero))
        if dst.kind == "c":
            s, d = part_dtype(src), part_dtype(dst)
            return pack(e, real_convert(e, s, d, re), real_convert(e, s, d, im))
        return real_convert(e, part_dtype(src), dst, re)
    d = part_dtype(dst)
    re = real_convert(e, src, d, x)
    return pack(e, re, ir.Constant(re.type, 0.0))
