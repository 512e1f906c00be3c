"""Scalar lowering of elementwise primitives to LLVM IR, NumPy-exact.

Values are held in a *compute type*: bool as ``i1``, integers as ``iN`` (signedness
comes from the dtype, not the type), float16 and float32 as ``float``, float64 as
``double``. A float16 value lives in a ``float`` that is always rounded to half
precision, which is how NumPy computes float16 (in float, rounded after each op).
Complex values are ``{float, float}`` / ``{double, double}`` pairs (complex_ops.py).

``RULES`` maps a primitive to ``rule(e, dt, *args, **params)``: ``e`` is the
:class:`Emitter`, ``dt`` the dtype of the (first value) operand, ``args`` compute
values; it returns the compute value of the result. ``unsupported(eqn)`` says why
an equation cannot lower natively (the reason goes into the fallback table).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Primitive
from functorch_core.ir.dtypes import bfloat16 as BF16
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.numerics import reduced_precision
from functorch_core.ir.tables import Table
from llvmlite import binding as llvm
from llvmlite import ir

from . import bessel as B
from . import complex_ops as C
from . import erf as E
from . import gamma as G
from . import mathfuncs as M
from . import scipy_calls
from . import special_grads as SG
from . import zeta as Z
from .narrowing import (
    bf16_bits,
    bf16_to_f32,
    exact_bf16_bits,
    f64_to_bf16,
    f64_to_f16,
    round_bf16,
)

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
_INT_TYPES = {1: I8, 2: I16, 4: I32, 8: I64}


def compute_type(dt: np.dtype):
    if dtype_kind(dt) == "c":
        return C.pair_type(dt)
    if dtype_kind(dt) == "b":
        return I1
    if dtype_kind(dt) in "iu":
        return _INT_TYPES[dt.itemsize]
    return F64 if dt.itemsize == 8 else F32


def storage_type(dt: np.dtype):
    if dtype_kind(dt) == "c":
        return C.pair_type(dt)
    if dtype_kind(dt) == "b":
        return I8
    if dt == BF16:              # its bits: loads widen and stores round with integer ops
        return I16
    if dtype_kind(dt) == "f":
        return {2: F16, 4: F32, 8: F64}[dt.itemsize]
    return _INT_TYPES[dt.itemsize]


class Emitter:
    """An IRBuilder plus the module-level declarations the scalar rules need."""

    def __init__(self, builder: ir.IRBuilder):
        self.b = builder
        self.module = builder.module
        self.libm_used: set[str] = set()
        # id -> value of the float values known to hold a bfloat16 (or a NaN): loads,
        # roundings, constants; their store needs no rounding (see :meth:`exact_bf16`)
        self._bf16_exact: dict[int, object] = {}

    def exact_bf16(self, value) -> bool:
        """Whether ``value`` is known to hold a bfloat16 value (or a NaN) exactly."""
        return self._bf16_exact.get(id(value)) is value

    def mark_bf16(self, value):
        """``value``, recorded as holding a bfloat16 value (or a NaN) exactly."""
        self._bf16_exact[id(value)] = value
        return value

    def const(self, dt, value):
        if dtype_kind(dt) == "c":
            return C.const(dt, value)
        ty = compute_type(dt)
        if dtype_kind(dt) == "b":
            return ir.Constant(ty, int(bool(value)))
        if dtype_kind(dt) in "iu":
            return ir.Constant(ty, int(value) & ((1 << ty.width) - 1))
        c = ir.Constant(ty, float(value))
        v = float(value)
        if dt == BF16 and (v != v or float(BF16.type(v)) == v):
            self.mark_bf16(c)
        return c

    def _declare(self, name, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    def intrinsic(self, name, *args):
        ty = args[0].type
        suffix = {"float": "f32", "double": "f64"}[str(ty)]
        return self.b.call(self._declare(f"llvm.{name}.{suffix}", ty, [a.type for a in args]),
                           args)

    def libm(self, name, *args):
        ty = args[0].type
        sym = name + ("f" if ty == F32 else "")
        self.libm_used.add(sym)
        return self.b.call(self._declare(sym, ty, [ty] * len(args)), args)

    def round16(self, dt, value):
        """Round a float compute value to float16 (bfloat16) precision when dt is float16
        (bfloat16)."""
        if dt == BF16:
            return self.mark_bf16(round_bf16(self.b, value))
        if dt.itemsize != 2 or dtype_kind(dt) != "f":
            return value
        return self.b.fpext(self.b.fptrunc(value, F16), F32)

    def load(self, dt, ptr):
        if dtype_kind(dt) == "c":
            return C.load(self, dt, ptr)
        v = self.b.load(ptr, typ=storage_type(dt))
        if dtype_kind(dt) == "b":
            return self.b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
        if dt == BF16:
            return self.mark_bf16(bf16_to_f32(self.b, v))
        if dtype_kind(dt) == "f" and dt.itemsize == 2:
            return self.b.fpext(v, F32)
        return v

    def store(self, dt, value, ptr):
        if dtype_kind(dt) == "c":
            return C.store(self, dt, value, ptr)
        if dtype_kind(dt) == "b":
            value = self.b.zext(value, I8)
        elif dt == BF16:
            value = (exact_bf16_bits if self.exact_bf16(value) else bf16_bits)(self.b, value)
        elif dtype_kind(dt) == "f" and dt.itemsize == 2:
            value = self.b.fptrunc(value, F16)
        self.b.store(value, ptr)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)


# --- unary -----------------------------------------------------------------

def _neg(e, dt, x):
    return e.b.fneg(x) if dtype_kind(dt) == "f" else e.b.sub(ir.Constant(x.type, 0), x)


def _sign(e, dt, x):
    b = e.b
    if dtype_kind(dt) == "f":
        one, zero = ir.Constant(x.type, 1.0), ir.Constant(x.type, 0.0)
        s = b.select(b.fcmp_ordered(">", x, zero), one,
                     b.select(b.fcmp_ordered("<", x, zero), b.fneg(one), zero))
        return b.select(e.isnan(x), x, s)
    zero = ir.Constant(x.type, 0)
    if dtype_kind(dt) == "u":
        return b.zext(b.icmp_unsigned("!=", x, zero), x.type)
    return b.sub(b.zext(b.icmp_signed(">", x, zero), x.type),
                 b.zext(b.icmp_signed("<", x, zero), x.type))


def _abs(e, dt, x):
    if dtype_kind(dt) == "f":
        return e.intrinsic("fabs", x)
    if dtype_kind(dt) != "i":
        return x
    neg = e.b.icmp_signed("<", x, ir.Constant(x.type, 0))
    return e.b.select(neg, e.b.sub(ir.Constant(x.type, 0), x), x)


def _is_finite(e, dt, x):
    return e.b.fcmp_ordered("<", e.intrinsic("fabs", x), ir.Constant(x.type, float("inf")))


def _not(e, dt, x):
    return e.b.xor(x, ir.Constant(x.type, -1 if dtype_kind(dt) != "b" else 1))


def _cbrt(e, dt, x):
    r = e.libm("cbrt", x)
    if x.type != F64:
        return r
    # glibc's cbrt is up to 3-4 ulp off; one Newton step with an fma residual brings it within 1 ulp
    # (NumPy's AVX-512 loop is that close). 0, inf and NaN give a NaN step and keep libm's answer.
    b = e.b
    r2 = b.fmul(r, r)
    residual = e.intrinsic("fma", r2, r, b.fneg(x))
    step = b.fdiv(residual, b.fmul(ir.Constant(F64, 3.0), r2))
    finite = b.fcmp_ordered("<", e.intrinsic("fabs", step), ir.Constant(F64, float("inf")))
    return b.select(finite, b.fsub(r, step), r)


def _intrinsic(name):
    return lambda e, dt, x: e.intrinsic(name, x)


def _inline(kernel):
    return lambda e, dt, x: kernel(e, x)


def _libm(name):
    return lambda e, dt, *xs: e.libm(name, *xs)


# a primitive whose spec names a libm function calls it unless a rule below does better
_LIBM = {p: _libm(p.spec.libm) for p in P.ALL.values() if p.spec.libm}

# --- binary ----------------------------------------------------------------


def _by_kind(boolean, integer, floating):
    def rule(e, dt, x, y):
        fn = boolean if dtype_kind(dt) == "b" else floating if dtype_kind(dt) == "f" else integer
        return getattr(e.b, fn)(x, y)
    return rule


def _floor_div(e, dt, x, y):
    b = e.b
    if dtype_kind(dt) == "f":
        return _float_divmod(e, x, y)[0]
    zero = ir.Constant(x.type, 0)
    if dtype_kind(dt) == "u":
        return _unsigned_by_nonzero(b, b.udiv, x, y)
    _, q, _, adjust = _floored_sdivrem(e, x, y)
    q = b.select(adjust, b.sub(q, ir.Constant(x.type, 1)), q)
    minus_one = ir.Constant(x.type, -1)
    return b.select(b.icmp_signed("==", y, zero), zero,
                    b.select(b.icmp_signed("==", y, minus_one), b.sub(zero, x), q))


def _safe_sdivrem(e, x, y):
    """sdiv/srem with a divisor that can never trap (0 and -1 are replaced by 1)."""
    b = e.b
    bad = b.or_(b.icmp_signed("==", y, ir.Constant(y.type, 0)),
                b.icmp_signed("==", y, ir.Constant(y.type, -1)))
    d = b.select(bad, ir.Constant(y.type, 1), y)
    return d, b.sdiv(x, d), b.srem(x, d)


def _floored_sdivrem(e, x, y):
    """``_safe_sdivrem`` and whether the truncated result needs the floor's adjustment
    (a nonzero remainder whose sign differs from the divisor's)."""
    b, zero = e.b, ir.Constant(x.type, 0)
    d, q, r = _safe_sdivrem(e, x, y)
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, d), zero))
    return d, q, r, adjust


def _unsigned_by_nonzero(b, op, x, y):
    """``op(x, y)`` for unsigned ints, 0 where ``y == 0`` (the division never traps)."""
    zero = ir.Constant(x.type, 0)
    safe = b.select(b.icmp_unsigned("==", y, zero), ir.Constant(x.type, 1), y)
    return b.select(b.icmp_unsigned("==", y, zero), zero, op(x, safe))


def _rem(e, dt, x, y):
    b = e.b
    if dtype_kind(dt) == "f":
        return _float_divmod(e, x, y)[1]
    if dtype_kind(dt) == "u":
        return _unsigned_by_nonzero(b, b.urem, x, y)
    d, _, r, adjust = _floored_sdivrem(e, x, y)
    return b.select(adjust, b.add(r, d), r)


def _float_divmod(e, a, b_):
    """NumPy's float floor_divide and remainder (Python's divmod convention)."""
    b = e.b
    ty = a.type
    zero, one, half = (ir.Constant(ty, v) for v in (0.0, 1.0, 0.5))
    mod = b.frem(a, b_)
    div = b.fdiv(b.fsub(a, mod), b_)
    mod_nz = b.fcmp_unordered("!=", mod, zero)
    flip = b.and_(mod_nz, b.xor(b.fcmp_ordered("<", b_, zero), b.fcmp_ordered("<", mod, zero)))
    mod = b.select(flip, b.fadd(mod, b_), mod)
    div = b.select(flip, b.fsub(div, one), div)
    mod = b.select(mod_nz, mod, e.intrinsic("copysign", zero, b_))
    fl = e.intrinsic("floor", div)
    fl = b.select(b.fcmp_ordered(">", b.fsub(div, fl), half), b.fadd(fl, one), fl)
    quotient = b.fdiv(a, b_)
    fl = b.select(b.fcmp_unordered("!=", div, zero), fl,
                  e.intrinsic("copysign", zero, quotient))
    by_zero = b.fcmp_ordered("==", b_, zero)
    return b.select(by_zero, quotient, fl), b.select(by_zero, b.frem(a, b_), mod)


def _minmax(is_max):
    def rule(e, dt, x, y):
        b = e.b
        if dtype_kind(dt) == "b":
            return b.or_(x, y) if is_max else b.and_(x, y)
        if dtype_kind(dt) == "f":
            better = b.fcmp_ordered(">" if is_max else "<", x, y)
            return b.select(b.or_(e.isnan(x), better), x, y)
        cmp = b.icmp_signed if dtype_kind(dt) == "i" else b.icmp_unsigned
        return b.select(cmp(">" if is_max else "<", x, y), x, y)
    return rule


def _compare(op, float_op):
    def rule(e, dt, x, y):
        if dtype_kind(dt) == "f":
            unordered = float_op.startswith("u")
            return (e.b.fcmp_unordered if unordered else e.b.fcmp_ordered)(op, x, y)
        cmp = e.b.icmp_signed if dtype_kind(dt) == "i" else e.b.icmp_unsigned
        return cmp(op, x, y)
    return rule


def _select(e, dt, pred, on_true, on_false):
    return e.b.select(pred, on_true, on_false)


# --- convert ----------------------------------------------------------------

def convert(e, src, dst, x):
    """NumPy ``astype``; float->int follows x86 NumPy (never poison)."""
    b = e.b
    to = compute_type(dst)
    if src == dst:
        return x
    if "c" in (dtype_kind(src), dtype_kind(dst)):
        return C.convert(e, src, dst, x, convert)
    if dtype_kind(dst) == "b":
        if dtype_kind(src) == "f":
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if dtype_kind(src) in "bu" or dtype_kind(src) == "i":
        if dst == BF16 and src.itemsize >= 4:
            return _int_to_bf16(e, src, x)
        if dtype_kind(dst) == "f":
            conv = b.uitofp if dtype_kind(src) in "bu" else b.sitofp
            return e.round16(dst, conv(x, to))
        if to.width == x.type.width:
            return x
        if to.width < x.type.width:
            return b.trunc(x, to)
        return (b.zext if dtype_kind(src) in "bu" else b.sext)(x, to)
    if dtype_kind(dst) == "f":        # float -> float
        if src.itemsize == 8 and dst.itemsize == 2:
            return (f64_to_bf16 if dst == BF16 else f64_to_f16)(e, x)
        if to == x.type:
            return e.round16(dst, x)
        return b.fpext(x, to) if to == F64 else b.fptrunc(x, to)
    if src == BF16:
        return _bf16_to_int(e, dst, x)
    # to uint32 through int64, as NumPy does on x86: 3e9 is in range
    wide = I64 if dst.itemsize == 8 or (dtype_kind(dst) == "u" and dst.itemsize == 4) else I32
    bound = float(2 ** (wide.width - 1))
    in_range = b.and_(b.fcmp_ordered(">=", x, ir.Constant(x.type, -bound)),
                      b.fcmp_ordered("<", x, ir.Constant(x.type, bound)))
    safe = b.select(in_range, x, ir.Constant(x.type, 0.0))
    r = b.select(in_range, b.fptosi(safe, wide), ir.Constant(wide, -(1 << (wide.width - 1))))
    return r if wide == to else b.trunc(r, to)


def _int_to_bf16(e, src, x):
    """An integer of 4 or 8 bytes to bfloat16 in one rounding, as ml_dtypes converts it: to
    double (exact, but for a magnitude above 2**53 rounded to odd first), then to bf16."""
    b = e.b
    unsigned = dtype_kind(src) in "bu"
    if src.itemsize == 4:
        return f64_to_bf16(e, (b.uitofp if unsigned else b.sitofp)(x, F64))
    zero = ir.Constant(I64, 0)
    negative = b.icmp_signed("<", x, zero) if not unsigned else ir.Constant(I1, 0)
    m = b.select(negative, b.sub(zero, x), x)         # |x| as unsigned (2**63 too)
    lz = b.call(e._declare("llvm.ctlz.i64", I64, [I64, I1]), [m, ir.Constant(I1, 0)])
    drop = b.select(b.icmp_unsigned("<", lz, ir.Constant(I64, 11)),
                    b.sub(ir.Constant(I64, 11), lz), zero)    # bits beyond double's 53
    mask = b.sub(b.shl(ir.Constant(I64, 1), drop), ir.Constant(I64, 1))
    sticky = b.icmp_unsigned("!=", b.and_(m, mask), zero)
    odd = b.or_(b.and_(m, b.not_(mask)), b.select(sticky, b.add(mask, ir.Constant(I64, 1)),
                                                  zero))
    r = f64_to_bf16(e, b.uitofp(odd, F64))
    return b.select(negative, b.fneg(r), r)


def _bf16_to_int(e, dst, x):
    """bfloat16 (as a float) to an integer as ml_dtypes converts it: truncated where the
    value lies in the integer's range, 0 elsewhere (NaN, inf and every value beyond)."""
    b = e.b
    to = compute_type(dst)
    signed = dtype_kind(dst) == "i"
    bits = 8 * dst.itemsize - signed
    # a value below 0 but above -1 truncates to 0 whether in an unsigned range or not
    above = b.fcmp_ordered(">=", x, ir.Constant(F32, -float(2 ** bits))) if signed else \
        b.fcmp_ordered(">", x, ir.Constant(F32, -1.0))
    in_range = b.and_(above, b.fcmp_ordered("<", x, ir.Constant(F32, float(2 ** bits))))
    r = b.fptosi(b.select(in_range, x, ir.Constant(F32, 0.0)), I64)
    r = r if to == I64 else b.trunc(r, to)
    return b.select(in_range, r, ir.Constant(to, 0))


def _rotl32(b, x, r):
    return b.or_(b.shl(x, ir.Constant(I32, r)), b.lshr(x, ir.Constant(I32, 32 - r)))


def _threefry2x32(e, dt, k0, k1, x0, x1, word):
    """Word ``word`` of Threefry-2x32 (20 rounds); the kernel asks for both words with the
    same operands, and LLVM's CSE keeps one copy of the rounds."""
    b = e.b
    ks = (k0, k1, b.xor(b.xor(k0, k1), ir.Constant(I32, 0x1BD11BDA)))
    x0, x1 = b.add(x0, ks[0]), b.add(x1, ks[1])
    for i in range(5):
        for r in ((13, 15, 26, 6), (17, 29, 16, 24))[i % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(_rotl32(b, x1, r), x0)
        x0 = b.add(x0, ks[(i + 1) % 3])
        x1 = b.add(b.add(x1, ks[(i + 2) % 3]), ir.Constant(I32, i + 1))
    return (x0, x1)[word]


# --- the table ---------------------------------------------------------------

_CORE = {
    P.neg: _neg, P.sign: _sign, P.abs: _abs, P.floor: _intrinsic("floor"),
    P.ceil: _intrinsic("ceil"), P.round: _intrinsic("roundeven"), P.is_finite: _is_finite,
    P.sqrt: _intrinsic("sqrt"), P.logistic: _inline(M.logistic), P.tanh: _inline(M.tanh),
    P.exp: _inline(M.exp), P.exp2: _inline(M.exp2), P.expm1: _inline(M.expm1),
    P.log: _inline(M.log),
    P.log1p: _inline(M.log1p), P.cbrt: _cbrt, P.not_: _not,
    P.add: _by_kind("or_", "add", "fadd"), P.sub: _by_kind("sub", "sub", "fsub"),
    P.mul: _by_kind("and_", "mul", "fmul"), P.div: lambda e, dt, x, y: e.b.fdiv(x, y),
    P.floor_div: _floor_div, P.rem: _rem,
    P.max: _minmax(True), P.min: _minmax(False),
    P.copysign: lambda e, dt, x, y: e.intrinsic("copysign", x, y),
    P.and_: _by_kind("and_", "and_", None), P.or_: _by_kind("or_", "or_", None),
    P.xor: _by_kind("xor", "xor", None),
    P.eq: _compare("==", "oeq"), P.ne: _compare("!=", "une"), P.lt: _compare("<", "olt"),
    P.le: _compare("<=", "ole"), P.gt: _compare(">", "ogt"), P.ge: _compare(">=", "oge"),
    P.select: _select, P.complex: lambda e, dt, re, im: C.pack(e, re, im),
    P.threefry2x32: _threefry2x32,
}


def _reduce_precision(e, dt, x, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision on the bits of ``dt`` (float16: its half bits, not the float
    it computes in), with ``ir/numerics.py``'s constants, as the interpreter."""
    # bfloat16 computes in float32 holding its value exactly (the low 16 bits zero), so
    # float32's constants round it as its own 16 bits would be
    b, fi = e.b, np.finfo(np.float32 if dt == BF16 else dt)
    c = reduced_precision(fi.nexp, fi.nmant, exponent_bits, mantissa_bits)
    it = ir.IntType(c.bits)
    k = lambda v: ir.Constant(it, v)     # noqa: E731
    half = dt.itemsize == 2 and dt != BF16
    stored = b.fptrunc(x, F16) if half else x
    u = b.bitcast(stored, it)
    if c.shift:
        lsb = b.and_(b.lshr(u, k(c.shift)), k(1))
        u = b.and_(b.add(u, b.add(k(c.half - 1), lsb)), k(c.truncate))
    if c.clamp:
        field, sign = b.and_(u, k(c.exponent_mask)), b.and_(u, k(c.sign_mask))
        u = b.select(b.icmp_unsigned(">", field, k(c.max_field)),
                     b.or_(sign, k(c.exponent_mask)),
                     b.select(b.icmp_unsigned("<=", field, k(c.min_field)), sign, u))
    out = b.bitcast(u, stored.type)
    out = b.fpext(out, F32) if half else out
    return b.select(e.isnan(x), x, out) if c.keep_nan else out


def _lgamma(e, dt, x):
    """glibc's ``lgamma``, but ``-inf`` at ``-inf`` as SciPy's ``gammaln`` (glibc: ``+inf``)."""
    y = e.libm("lgamma", x)
    return e.b.select(e.b.fcmp_ordered("==", x, ir.Constant(x.type, -math.inf)), x, y)


# The rules of real (and integer) operands that are not the spec's libm function.
_OWN: Table[Primitive, Callable] = Table("llvm: real operands, own rules", [
    *_CORE.items(),
    # glibc's, within 1-2 ulp: scipy.special's (cephes) agree to a few ulp
    (P.lgamma, _lgamma),
    # inline (erf.py, bessel.py, gamma.py, zeta.py): they vectorize and fuse with the math
    # around them
    (P.erf, _inline(E.erf)), (P.erfc, _inline(E.erfc)), (P.erfcx, _inline(E.erfcx)),
    (P.bessel_i0e, _inline(B.i0e)), (P.bessel_i1e, _inline(B.i1e)),
    (P.digamma, _inline(G.digamma)),
    (P.zeta, lambda e, dt, x, q: Z.zeta(e, x, q)),
    (P.polygamma, lambda e, dt, x, order: Z.polygamma(e, x, order)),
    (P.reduce_precision, _reduce_precision),
    # calls into SciPy's compiled functions (scipy_calls.py): SciPy's values to the bit
    *scipy_calls.RULES.items(),
    # loops with data-dependent trip counts: internal functions called per element
    (P.igamma_grad_a, SG.igamma_grad_a), (P.igamma_hess_a, SG.igamma_hess_a),
    (P.betainc_grad, SG.betainc_grad),
])
# ... and the spec's libm function for every other primitive that names one
_REAL: Table[Primitive, Callable] = Table("llvm: real operands", [
    *_OWN.items(), *((p, rule) for p, rule in _LIBM.items() if p not in _OWN)])


def _real_or_complex(prim, real_rule):
    complex_rule = C.COMPLEX_RULES[prim]

    def rule(e, dt, *args, **params):
        return (complex_rule if dtype_kind(dt) == "c" else real_rule)(e, dt, *args, **params)
    return rule


def _with_complex(prim, real_rule):
    """``prim``'s rule: the real one, taking complex operands where the primitive does
    (complex_ops.py's arithmetic, or SciPy's complex erf, erfc, erfcx, spence and jv)."""
    if prim in C.COMPLEX_RULES:
        return _real_or_complex(prim, real_rule)
    return _COMPLEX_CALLS.get(prim, real_rule)


_COMPLEX_CALLS = scipy_calls.with_complex(_REAL)
RULES: Table[Primitive, Callable] = Table("llvm lowerings", [
    *((p, _with_complex(p, rule)) for p, rule in _REAL.items()),
    *((p, rule) for p, rule in C.COMPLEX_RULES.items() if p not in _REAL),
])

@functools.cache
def host_has_f16c() -> bool:
    """float16 loads/stores need F16C; without it LLVM would call runtime helpers we lack."""
    return bool(llvm.get_host_cpu_features().get("f16c", False))


def unsupported(eqn) -> str | None:
    """Why ``eqn`` cannot be lowered to a native scalar loop body (None: it can)."""
    avals = [a.aval for a in eqn.inputs] + [v.aval for v in eqn.outputs]
    if any(a.dtype.kind == "c" for a in avals):
        reason = (None if C.host_is_x86_64() else C.ABI_GAP) \
            if eqn.prim in scipy_calls.COMPLEX_CALLS else C.complex_gap(eqn)
        if reason is not None:
            return reason
    if not host_has_f16c() and any(a.dtype == np.float16 for a in avals):
        return "float16 needs the F16C instructions, which this CPU lacks"
    return None
