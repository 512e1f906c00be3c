"""exp, tanh and logistic of float and double as inline LLVM IR, no libm calls.

Each is straight-line arithmetic (range reduction, a polynomial by ``llvm.fma``, 2^k built from
exponent bits, selects for the special cases), so the loop vectorizer turns a loop over them
into ``<16 x float>`` / ``<8 x double>`` code; a call into libm would keep the loop scalar.
float16 values arrive here as float (ops.py rounds the result). The coefficients come from
``fit_coefficients.py`` (Chebyshev interpolation in 60-digit decimal arithmetic).

Accuracy (dense sweeps in tests/test_mathfuncs.py): within 1 ulp of the exact value, inf, NaN,
-0.0, overflow to inf and gradual underflow through the subnormals as NumPy gives them.
"""

from __future__ import annotations

from llvmlite import ir

F32, F64 = ir.FloatType(), ir.DoubleType()
I32, I64 = ir.IntType(32), ir.IntType(64)

# e^r = 1 + r + r^2 q(r) on |r| <= ln2/2; q's coefficients, lowest degree first.
EXP_F32 = (0.5, 0.1666657702559799, 0.041666554662050534, 0.008363173074513711,
           0.001392617611993558)
EXP_F64 = (0.5, 0.1666666666666667, 0.04166666666666667, 0.008333333333326141,
           0.0013888888888883752, 0.00019841269874800493, 2.4801587325533363e-05,
           2.7557255425746435e-06, 2.7557273661348637e-07, 2.510520637395701e-08,
           2.0914679376583935e-09)
# tanh(x) = x + x^3 g(x^2) on |x| < TANH_SMALL; g's coefficients, lowest degree first.
TANH_F32 = (-0.3333333317214036, 0.1333330355691574, -0.053959259577204544,
            0.02176891865102821, -0.008343945515839153, 0.002292744816178142)
TANH_F64 = (-0.3333333333333333, 0.13333333333333042, -0.05396825396789699,
            0.021869488519008305, -0.008863235103240878, 0.0035921217511549622,
            -0.0014557754120478055, 0.0005896606577757043, -0.0002375906496055562,
            9.257116129556769e-05, -3.12011014257974e-05, 6.485163482793113e-06)
TANH_SMALL = 0.625

LOG2E = 1.4426950408889634
# ln 2 = HI + LO, HI with trailing zero bits so k * HI is exact for every k in range
LN2 = {F32: (0.693145751953125, 1.428606765330187e-06),
       F64: (0.6931471803691238, 1.9082149292705877e-10)}
# exp's argument is clamped to [lo, hi]: below lo the result rounds to +0, above hi to inf
EXP_CLAMP = {F32: (-104.0, 89.0), F64: (-746.0, 710.0)}
# (integer type, mantissa bits, exponent bias) of each float type
_BITS = {F32: (I32, 23, 127), F64: (I64, 52, 1023)}


def _c(ty, value):
    return ir.Constant(ty, value)


def _fma(e, a, b, c):
    return e.intrinsic("fma", a, b, c)


def _horner(e, t, coeffs):
    p = _c(t.type, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = _fma(e, p, t, _c(t.type, c))
    return p


def _scale(e, p, k):
    """p * 2^k for an integral float k in [-1076, 1024], as two exact powers of two so both
    the overflow to inf and a subnormal result round once, as a correctly scaled product."""
    b = e.b
    ity, mant, bias = _BITS[p.type]
    ki = b.fptosi(k, ity)
    k1 = b.ashr(ki, _c(ity, 1))
    for half in (k1, b.sub(ki, k1)):
        p = b.fmul(p, b.bitcast(b.shl(b.add(half, _c(ity, bias)), _c(ity, mant)), p.type))
    return p


def exp(e, x):
    """e^x for a float or double value ``x``."""
    b, ty = e.b, x.type
    lo, hi = EXP_CLAMP[ty]
    xc = b.select(b.fcmp_ordered(">=", x, _c(ty, lo)), x, _c(ty, lo))     # NaN -> lo
    xc = b.select(b.fcmp_ordered("<=", xc, _c(ty, hi)), xc, _c(ty, hi))
    k = e.intrinsic("roundeven", b.fmul(xc, _c(ty, LOG2E)))
    ln2_hi, ln2_lo = LN2[ty]
    minus_k = b.fneg(k)
    r = _fma(e, minus_k, _c(ty, ln2_hi), xc)
    r = _fma(e, minus_k, _c(ty, ln2_lo), r)
    q = _horner(e, r, EXP_F64 if ty == F64 else EXP_F32)
    p = b.fadd(_c(ty, 1.0), _fma(e, b.fmul(r, r), q, r))
    return b.select(e.isnan(x), x, _scale(e, p, k))


def tanh(e, x):
    """tanh x: x + x^3 g(x^2) for |x| < TANH_SMALL, else 1 - 2 / (e^2|x| + 1), signed as x."""
    b, ty = e.b, x.type
    a = e.intrinsic("fabs", x)
    big = b.fsub(_c(ty, 1.0),
                 b.fdiv(_c(ty, 2.0), b.fadd(exp(e, b.fadd(a, a)), _c(ty, 1.0))))
    s = b.fmul(a, a)
    small = _fma(e, b.fmul(a, s), _horner(e, s, TANH_F64 if ty == F64 else TANH_F32), a)
    t = b.select(b.fcmp_ordered("<", a, _c(ty, TANH_SMALL)), small, big)
    return e.intrinsic("copysign", t, x)


def logistic(e, x):
    """1 / (1 + e^-x), in x's own precision as SciPy's expit computes it (so float32 gives 0
    once e^-x overflows float32)."""
    b, ty = e.b, x.type
    one = _c(ty, 1.0)
    return b.fdiv(one, b.fadd(one, exp(e, b.fneg(x))))
