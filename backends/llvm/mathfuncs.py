"""exp, exp2, expm1, tanh, logistic, log and log1p of float and double as inline LLVM IR.

Each is straight-line arithmetic (range reduction, a polynomial by ``llvm.fma``, 2^k built from
exponent bits, selects for the special cases), so the loop vectorizer turns a loop over them
into ``<16 x float>`` / ``<8 x double>`` code; a call into libm would keep the loop scalar.
float16 values arrive here as float (ops.py rounds the result). The coefficients come from
``tools/fit_coefficients.py`` (Chebyshev interpolation in 60-digit decimal arithmetic).

Accuracy (dense sweeps in tests/backends/llvm/test_mathfuncs.py): within 1 ulp of the exact
value, inf, NaN, -0.0, overflow to inf and gradual underflow through the subnormals as
NumPy gives them.
"""

from __future__ import annotations

from functorch_core.ir.numerics import LN2_F32, LN2_F64, LOG_F32, LOG_F64
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
TANH_ONE = {F32: 9.5, F64: 19.5}        # tanh rounds to 1 above these (2 e^-2x < ulp(1) / 2)
LOG2E = 1.4426950408889634
# ln 2 = HI + LO, HI with trailing zero bits so k * HI is exact for every k in range
# (log's tables are shared with the API layer: functorch_core.ir.numerics)
LN2 = {F32: LN2_F32, F64: LN2_F64}
# exp's argument is clamped to [lo, hi]: below lo the result rounds to +0, above hi to inf
EXP_CLAMP = {F32: (-104.0, 89.0), F64: (-746.0, 710.0)}
# ln 2 rounded to the type, and the rest
LN2_ROUNDED = {F32: (0.6931471824645996, -1.904654299957768e-09),
               F64: (0.6931471805599453, 2.3190468138462996e-17)}
EXP2_CLAMP = {F32: (-151.0, 129.0), F64: (-1076.0, 1025.0)}
# below these expm1 rounds to -1; up to 2^EXPM1_EXACT_K, 2^k - 1 is exact
EXPM1_CLAMP_LO = {F32: -30.0, F64: -40.0}
EXPM1_EXACT_K = {F32: 23, F64: 52}
# (integer type, mantissa bits, exponent bias) of each float type
_BITS = {F32: (I32, 23, 127), F64: (I64, 52, 1023)}
_SQRT_HALF_BITS = {F32: 0x3F3504F3, F64: 0x3FE6A09E667F3BCD}
_SMALLEST_NORMAL = {F32: 2.0 ** -126, F64: 2.0 ** -1022}


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


def _reduce(e, x, lo, hi):
    """(k, r, c): x clamped to [lo, hi] (NaN to lo) is k ln2 + r + c, k integral, |r| <= ln2/2,
    c the rounding error of r (r itself is within half an ulp)."""
    b, ty = e.b, x.type
    xc = b.select(b.fcmp_ordered(">=", x, _c(ty, lo)), x, _c(ty, lo))
    xc = b.select(b.fcmp_ordered("<=", xc, _c(ty, hi)), xc, _c(ty, hi))
    k = e.intrinsic("roundeven", b.fmul(xc, _c(ty, LOG2E)))
    ln2_hi, ln2_lo = LN2[ty]
    minus_k = b.fneg(k)
    r_hi = _fma(e, minus_k, _c(ty, ln2_hi), xc)          # exact
    r = _fma(e, minus_k, _c(ty, ln2_lo), r_hi)
    return k, r, _fma(e, minus_k, _c(ty, ln2_lo), b.fsub(r_hi, r))


def _exp_reduced(e, r, c):
    """(hi, lo) with e^(r + c) = hi + lo for |r| <= ln2/2, hi = 1 + r rounded: lo carries r's
    bits lost in hi, r^2 q(r) and c (1 + r), so the sum rounds once."""
    b, ty = e.b, r.type
    one = _c(ty, 1.0)
    hi = b.fadd(one, r)
    lo = _fma(e, c, hi, b.fadd(b.fsub(one, hi), r))            # (1 - hi) + r is exact
    return hi, _fma(e, b.fmul(r, r), _horner(e, r, EXP_F64 if ty == F64 else EXP_F32), lo)


def exp(e, x):
    """e^x for a float or double value ``x``."""
    b, ty = e.b, x.type
    k, r, c = _reduce(e, x, *EXP_CLAMP[ty])
    hi, lo = _exp_reduced(e, r, c)
    return b.select(e.isnan(x), x, _scale(e, b.fadd(hi, lo), k))


def exp2(e, x):
    """2^x = 2^k e^(r ln2) for k = round(x), r = x - k exact, r ln2 split in two (exact
    powers of two for integral x)."""
    b, ty = e.b, x.type
    lo, hi = EXP2_CLAMP[ty]
    xc = b.select(b.fcmp_ordered(">=", x, _c(ty, lo)), x, _c(ty, lo))
    xc = b.select(b.fcmp_ordered("<=", xc, _c(ty, hi)), xc, _c(ty, hi))
    k = e.intrinsic("roundeven", xc)
    r = b.fsub(xc, k)
    ln2, ln2_tail = LN2_ROUNDED[ty]
    rl = b.fmul(r, _c(ty, ln2))
    c = _fma(e, r, _c(ty, ln2_tail), _fma(e, r, _c(ty, ln2), b.fneg(rl)))
    hi_, lo_ = _exp_reduced(e, rl, c)
    return b.select(e.isnan(x), x, _scale(e, b.fadd(hi_, lo_), k))


def expm1(e, x):
    """e^x - 1 = 2^k (hi + lo) - 1: (2^k hi - 1) + 2^k lo for 0 <= k <= EXPM1_EXACT_K (the
    first sum exact), (2^k - 1) + 2^k (hi - 1 + lo) below 0, 2^k (hi + (lo - 2^-k)) above."""
    b, ty = e.b, x.type
    ity, mant, bias = _BITS[ty]
    one = _c(ty, 1.0)
    k, r, c = _reduce(e, x, EXPM1_CLAMP_LO[ty], EXP_CLAMP[ty][1])
    hi, lo = _exp_reduced(e, r, c)
    far = b.fcmp_ordered(">", k, _c(ty, EXPM1_EXACT_K[ty]))
    ki = b.fptosi(b.select(far, _c(ty, 0.0), k), ity)
    p2 = b.bitcast(b.shl(b.add(ki, _c(ity, bias)), _c(ity, mant)), ty)
    near = _fma(e, p2, lo, b.fsub(b.fmul(p2, hi), one))
    below = _fma(e, p2, b.fadd(b.fsub(hi, one), lo), b.fsub(p2, one))
    result = b.select(b.fcmp_ordered("<", k, _c(ty, 0.0)), below, near)
    lo_far = b.fsub(lo, _scale(e, one, b.fneg(k)))                     # - 2^-k, exact
    result = b.select(far, _scale(e, b.fadd(hi, lo_far), k), result)
    result = b.select(b.fcmp_ordered("==", x, _c(ty, 0.0)), x, result)     # keeps -0.0
    return b.select(e.isnan(x), x, result)


def _two_over_one_plus(e, big):
    """2 / (1 + big) for big >= 1, the sum's rounding error and the quotient's remainder
    folded back in: about half an ulp instead of one and a half."""
    b, ty = e.b, big.type
    one, two = _c(ty, 1.0), _c(ty, 2.0)
    d = b.fadd(big, one)
    d_lo = b.fsub(one, b.fsub(d, big))            # d + d_lo = big + 1 exactly (Fast2Sum)
    q = b.fdiv(two, d)
    remainder = b.fsub(_fma(e, b.fneg(q), d, two), b.fmul(q, d_lo))
    return _fma(e, remainder, b.fmul(q, _c(ty, 0.5)), q)


def tanh(e, x):
    """tanh x: x + x^3 g(x^2) for |x| < TANH_SMALL, else 1 - 2 / (e^2|x| + 1) (1 from
    TANH_ONE on), signed as x."""
    b, ty = e.b, x.type
    a = e.intrinsic("fabs", x)
    big = b.fsub(_c(ty, 1.0), _two_over_one_plus(e, exp(e, b.fadd(a, a))))
    s = b.fmul(a, a)
    small = _fma(e, b.fmul(a, s), _horner(e, s, TANH_F64 if ty == F64 else TANH_F32), a)
    t = b.select(b.fcmp_ordered("<", a, _c(ty, TANH_SMALL)), small, big)
    t = b.select(b.fcmp_ordered(">", a, _c(ty, TANH_ONE[ty])), _c(ty, 1.0), t)
    return e.intrinsic("copysign", t, x)


def logistic(e, x):
    """1 / (1 + e^-x), in x's own precision as SciPy's expit computes it (so float32 gives 0
    once e^-x overflows float32)."""
    b, ty = e.b, x.type
    one = _c(ty, 1.0)
    return b.fdiv(one, b.fadd(one, exp(e, b.fneg(x))))


def _log_parts(e, x):
    """(k, f) with x = 2^k (1 + f) and 1 + f in [sqrt(1/2), sqrt(2)), k as a float, for a
    finite x > 0 (subnormals scaled up first); other lanes get values the caller discards."""
    b, ty = e.b, x.type
    ity, mant, _ = _BITS[ty]
    tiny = b.fcmp_ordered("<", x, _c(ty, _SMALLEST_NORMAL[ty]))
    bits = b.bitcast(b.select(tiny, b.fmul(x, _c(ty, 2.0 ** mant)), x), ity)
    k = b.ashr(b.sub(bits, _c(ity, _SQRT_HALF_BITS[ty])), _c(ity, mant))
    m = b.bitcast(b.sub(bits, b.shl(k, _c(ity, mant))), ty)
    kf = b.fsub(b.sitofp(k, ty), b.select(tiny, _c(ty, float(mant)), _c(ty, 0.0)))
    return kf, b.fsub(m, _c(ty, 1.0))


def _log_reduced(e, kf, f, tail):
    """k ln2 + log(1 + f) + tail, the small terms summed before the exact k * ln2_hi."""
    b, ty = e.b, f.type
    hfsq = b.fmul(_c(ty, 0.5), b.fmul(f, f))
    s = b.fdiv(f, b.fadd(_c(ty, 2.0), f))
    z = b.fmul(s, s)
    r = b.fmul(z, _horner(e, z, LOG_F64 if ty == F64 else LOG_F32))
    ln2_hi, ln2_lo = LN2[ty]
    low = _fma(e, kf, _c(ty, ln2_lo), tail)
    rest = b.fsub(b.fsub(hfsq, _fma(e, s, b.fadd(hfsq, r), low)), f)
    return b.fsub(b.fmul(kf, _c(ty, ln2_hi)), rest)


def _log_specials(e, x, r, at_zero, pole):
    """r, except: NaN below ``pole``, -inf at it, inf at inf, x itself at NaN and at +-0 when
    ``at_zero`` (log1p keeps the zero's sign)."""
    b, ty = e.b, x.type
    r = b.select(b.fcmp_ordered("==", x, _c(ty, float("inf"))), x, r)
    if at_zero:
        r = b.select(b.fcmp_ordered("==", x, _c(ty, 0.0)), x, r)
    r = b.select(b.fcmp_ordered("==", x, _c(ty, pole)), _c(ty, float("-inf")), r)
    r = b.select(b.fcmp_ordered("<", x, _c(ty, pole)), _c(ty, float("nan")), r)
    return b.select(e.isnan(x), x, r)


def log(e, x):
    """Natural log: x = 2^k (1 + f), k ln2 + log(1 + f) by the odd series in f / (2 + f)."""
    kf, f = _log_parts(e, x)
    return _log_specials(e, x, _log_reduced(e, kf, f, _c(x.type, 0.0)), False, 0.0)


def log1p(e, x):
    """log(1 + x): log(u) for u = 1 + x rounded, plus (1 + x - u) / u for the rounding
    (computed exactly: x - (u - 1) below 1, 1 - (u - x) from 1 on)."""
    b, ty = e.b, x.type
    one = _c(ty, 1.0)
    u = b.fadd(one, x)
    lost = b.select(b.fcmp_ordered("<", x, one), b.fsub(x, b.fsub(u, one)),
                    b.fsub(one, b.fsub(u, x)))
    kf, f = _log_parts(e, u)
    return _log_specials(e, x, _log_reduced(e, kf, f, b.fdiv(lost, u)), True, -1.0)
