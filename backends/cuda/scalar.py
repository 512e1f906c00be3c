"""Scalar expressions of the elementwise primitives in generated kernel source, per dtype,
with the interpreter's (NumPy's) semantics.

A value lives in its *compute dtype*: float16 computes in float32 (loaded from and stored
to float16, rounded to half precision after each operation, as NumPy's half loops do);
every other dtype computes in itself. Generated text refers to names that ``bind`` puts
into a kernel's namespace: ``T_<dtype>`` casts (numba types on the device, wrapping NumPy
casts in the simulator), ``F_<fn>_<f32|f64>`` math functions (libdevice through
``math``/``numba.cuda.libdevice`` on the device, NumPy/SciPy in the simulator) and the
``H_*`` helpers below (one source, compiled for the device or run as Python).
"""

from __future__ import annotations

import cmath
import math

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

# bfloat16 has no kernel rendering yet: its equations run on the host (``runtime.device_gap``)
DTYPES = tuple(d for d in dtypes.SUPPORTED if d != dtypes.bfloat16)
F16, F32, F64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))

# float functions: F_<name>_<f32|f64>, the CUDA math name of the primitive's spec (libdevice
# or numba's math.* on the device, the spec's reference in the simulator); logistic is ours
_FLOAT_FN = {p: p.spec.cuda for p in P.ALL.values() if p.spec.cuda} | {P.logistic: "logistic"}
# libdevice functions (f64 name; the f32 one adds "f"); numba's math.* has the others
_LIBDEVICE = {"cbrt", "floor", "ceil", "rint", "exp2"}
# the helpers' own functions: (name, simulator's NumPy function)
_HELPER_FN = {"fabs": "abs", "fmod": "fmod"}
_MATH = ({n for n in _FLOAT_FN.values() if n not in _LIBDEVICE | {"tgamma", "logistic"}}
         | set(_HELPER_FN))
# which operand kinds each primitive renders for (the rest run on the host)
_KINDS = {
    **{p: "f" for p in _FLOAT_FN},
    P.neg: "iuf", P.sign: "iuf", P.abs: "biuf", P.is_finite: "f", P.not_: "biu",
    P.add: "biuf", P.mul: "biuf", P.sub: "iuf", P.max: "biuf", P.min: "biuf",
    P.div: "f", P.floor_div: "iuf", P.rem: "iuf", P.and_: "biu", P.or_: "biu",
    P.xor: "biu", P.eq: "biuf", P.ne: "biuf", P.lt: "biuf", P.le: "biuf", P.gt: "biuf",
    P.ge: "biuf", P.select: "biufc", P.convert: "biufc", P.iota: "iufc",
    P.real: "c", P.imag: "c", P.conj: "c", P.complex: "f",
}
# complex: partwise and NumPy's algorithms (div, abs); exp, log, sqrt and the inverse
# trigonometric functions through cmath on the device (numba's, which may differ from
# NumPy's C99 ones where a part is inf or nan). numba-cuda's complex sin/cos/tan, their
# hyperbolic versions and acosh compile only with a GPU present (they ask the driver for
# its compute capability), so the PTX check cannot cover them: they stay on the host.
_CMATH = {p: _FLOAT_FN[p] for p in (P.exp, P.log, P.sqrt, P.asin, P.acos, P.atan, P.asinh,
                                    P.atanh)}
for _p in (P.add, P.sub, P.mul, P.div, P.neg, P.abs, P.eq, P.ne, P.is_finite, *_CMATH):
    _KINDS[_p] += "c"
PRIMITIVES = frozenset(_KINDS)
_COMPARE = {P.eq: "==", P.ne: "!=", P.lt: "<", P.le: "<=", P.gt: ">", P.ge: ">="}
_BITS = {P.and_: "&", P.or_: "|", P.xor: "^"}


def compute_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    return F32 if dt == F16 else dt


def cast(dt) -> str:
    """The name of the cast to ``dt``'s compute dtype."""
    return "T_" + compute_dtype(dt).name


def fsuffix(dt) -> str:
    return "f64" if compute_dtype(dt) == F64 else "f32"


def const(value, dt) -> str:
    """``value`` as a literal of ``dt``'s compute dtype."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return repr(bool(value))
    if dt.kind == "c":
        z = complex(np.asarray(value, dt))
        return f"{cast(dt)}(complex({_float(z.real)}, {_float(z.imag)}))"
    if dt.kind == "f":
        return f"{cast(dt)}({_float(np.asarray(value, dt))})"
    return f"{cast(dt)}({int(value)})"


def _float(v):
    v = float(v)
    return "NAN" if math.isnan(v) else ("INF" if v == math.inf else
                                        "(-INF)" if v == -math.inf else repr(v))


def part_dtype(dt) -> np.dtype:
    return F32 if np.dtype(dt) == np.complex64 else F64


def gap(prim, arg_dtype, out_dtype=None) -> str | None:
    """Why ``prim`` on operands of ``arg_dtype`` has no kernel rendering (None: it has)."""
    kinds = _KINDS.get(prim)
    if kinds is None:
        return f"{prim.name} has no kernel rendering yet"
    for dt in (arg_dtype, out_dtype):
        if dt is not None and np.dtype(dt) not in DTYPES:
            return f"{prim.name}: dtype {np.dtype(dt)} (kernels cover " \
                   f"{', '.join(str(d) for d in DTYPES)})"
    kind = np.dtype(arg_dtype).kind
    if kind not in kinds:
        return f"{prim.name} on {kind!r} dtypes is not rendered"
    return None


def op_text(prim, arg_dtype, out_dtype, args, params) -> str:
    """The expression (in ``out_dtype``'s compute dtype) of one elementwise operation."""
    dt, out = np.dtype(arg_dtype), np.dtype(out_dtype)
    text = _expr(prim, dt, out, args, params)
    if out.kind == "b":
        return text
    if out == F16:      # rounded once to half precision (float64 -> float16 directly)
        return f"R16({text})" if prim is P.convert and dt.kind in "fc" else \
            f"R16({cast(out)}({text}))"
    return f"{cast(out)}({text})"


def _expr(prim, dt, out, args, params):
    table = _COMPLEX if dt.kind == "c" or prim is P.complex else _REAL
    render = _ANY.get(prim) or table.get(prim)
    if render is None:
        raise NotImplementedError(f"cuda emit: no rendering for {prim.name} on {dt}")
    return render(dt, out, args, params)


# renderers: (operand dtype, result dtype, operand texts, params) -> expression text

def _fn(name):
    return lambda dt, out, a, p: f"F_{name}_{fsuffix(dt)}({', '.join(a)})"


def _infix(sym):
    return lambda dt, out, a, p: f"({a[0]} {sym} {a[1]})"


def _bool_or(sym, bool_sym):
    """``sym`` on numbers, ``bool_sym`` on bools (add is or, mul is and)."""
    return lambda dt, out, a, p: f"({a[0]} {bool_sym if dt.kind == 'b' else sym} {a[1]})"


def _minmax(name, bool_sym):
    def render(dt, out, a, p):
        if dt.kind == "b":
            return f"({a[0]} {bool_sym} {a[1]})"
        return f"F_{name}{'h' if dt == F16 else ''}({a[0]}, {a[1]})"   # ties: y, x for f16
    return render


def _lgamma(dt, out, a, p):     # -inf at -inf, as SciPy's gammaln (CUDA's lgamma: +inf)
    low = -float(np.finfo(compute_dtype(dt)).max)
    return f"(F_lgamma_{fsuffix(dt)}({a[0]}) if {a[0]} >= {low!r} else {a[0]})"


def _abs(dt, out, a, p):
    x, T = a[0], cast(dt)
    if dt.kind == "f":
        return f"F_fabs_{fsuffix(dt)}({x})"
    return x if dt.kind in "bu" else f"(-{x} if {x} < {T}(0) else {x})"


def _sign(dt, out, a, p):
    x, T = a[0], cast(dt)
    s = f"({T}(1) if {x} > {T}(0) else ({T}(-1) if {x} < {T}(0) else {T}(0)))"
    return f"({x} if {x} != {x} else {s})" if dt.kind == "f" else s


def _helper(name):
    return lambda dt, out, a, p: f"H_{name}_{compute_dtype(dt).name}({a[0]}, {a[1]})"


_ANY = {
    P.iota: lambda dt, out, a, p: f"i{p['dimension']}",
    P.select: lambda dt, out, a, p: f"({a[1]} if {a[0]} else {a[2]})",
    P.convert: lambda dt, out, a, p: _convert(dt, out, a[0]),
}
_REAL = {
    **{p: _fn(name) for p, name in _FLOAT_FN.items()},
    **{p: _infix(sym) for p, sym in (_COMPARE | _BITS).items()},
    P.add: _bool_or("+", "|"), P.mul: _bool_or("*", "&"), P.sub: _infix("-"),
    P.div: _infix("/"), P.max: _minmax("max", "|"), P.min: _minmax("min", "&"),
    P.lgamma: _lgamma, P.abs: _abs, P.sign: _sign,
    P.neg: lambda dt, out, a, p: f"(-{a[0]})",
    P.not_: lambda dt, out, a, p: f"(not {a[0]})" if dt.kind == "b" else f"(~{a[0]})",
    P.floor_div: _helper("floordiv"), P.rem: _helper("rem"),
}


def _complex_is_finite(dt, out, a, p):
    s = fsuffix(part_dtype(dt))
    return f"(F_isfinite_{s}({a[0]}.real) and F_isfinite_{s}({a[0]}.imag))"


def _cmath(name):
    return lambda dt, out, a, p: f"F_c{name}_{dt.name}({a[0]})"


_COMPLEX = {
    P.complex: lambda dt, out, a, p: f"complex({a[0]}, {a[1]})",
    P.real: lambda dt, out, a, p: f"{a[0]}.real",
    P.imag: lambda dt, out, a, p: f"{a[0]}.imag",
    P.conj: lambda dt, out, a, p: f"{a[0]}.conjugate()",
    P.is_finite: _complex_is_finite,
    P.add: _infix("+"), P.sub: _infix("-"), P.eq: _infix("=="), P.ne: _infix("!="),
    P.mul: lambda dt, out, a, p: f"F_cmul({a[0]}, {a[1]})",
    P.neg: lambda dt, out, a, p: f"(-{a[0]})",
    P.div: lambda dt, out, a, p: f"H_cdiv_{dt.name}({', '.join(a)})",
    P.abs: lambda dt, out, a, p: f"H_cabs_{dt.name}({', '.join(a)})",
    **{p: _cmath(name) for p, name in _CMATH.items()},
}


def _convert(src, dst, x):
    # float -> int as NumPy on x86: a truncating conversion to int32 or int64 (NaN and out
    # of range give the lowest value), then wrapped. uint32 from contiguous float32/64
    # offsets by 2^31 (NumPy's SIMD loop); from float16 and complex (a strided view of
    # the real parts in the interpreter) it goes through int64
    half, src, dst = src == F16, compute_dtype(src), np.dtype(dst)
    if src.kind == "c":
        if dst.kind == "b":
            zero = const(0, part_dtype(src))
            return f"({x}.real != {zero} or {x}.imag != {zero})"
        if dst.kind != "c":     # the real part, converted as a float
            if dst == np.uint32:        # NumPy's strided loop (a view of the real parts)
                return f"H_f2i64_{part_dtype(src).name}({x}.real)"
            return _convert(part_dtype(src), dst, f"{x}.real")
        return x
    if dst.kind == "b":
        return f"({x} != {const(0, src)})"
    if src.kind == "b":
        return f"({const(1, dst)} if {x} else {const(0, dst)})"
    if dst.kind == "c":
        return _convert(src, part_dtype(dst), x) if src.kind == "f" else \
            f"{cast(part_dtype(dst))}({x})"
    if src.kind == "f" and dst.kind in "iu":
        wide = "u32" if dst == np.uint32 and not half else \
            "i64" if dst.itemsize == 8 or dst == np.uint32 else "i32"
        return f"H_f2{wide}_{src.name}({x})"
    return x        # int <-> int wraps, int -> float and float -> float round: the cast


# -- helpers: one source per compute dtype, NumPy's algorithms ---------------------------

_FLOAT_HELPERS = '''
def H_floordiv_{D}(a, b):
    if b == {T}(0.0):
        return a / b
    mod = F_fmod_{S}(a, b)
    div = (a - mod) / b
    if mod != {T}(0.0):
        if (b < {T}(0.0)) != (mod < {T}(0.0)):
            div = div - {T}(1.0)
    if div != {T}(0.0):
        fl = F_floor_{S}(div)
        if div - fl > {T}(0.5):
            fl = fl + {T}(1.0)
        return fl
    return F_copysign_{S}({T}(0.0), a / b)


def H_rem_{D}(a, b):
    mod = F_fmod_{S}(a, b)
    if b == {T}(0.0):
        return mod
    if mod != {T}(0.0):
        if (b < {T}(0.0)) != (mod < {T}(0.0)):
            mod = mod + b
    else:
        mod = F_copysign_{S}({T}(0.0), b)
    return mod


def H_f2i32_{D}(x):
    if x >= {T}(-2147483648.0) and x < {T}(2147483648.0):
        return T_int32(x)
    return T_int32(-2147483648)


def H_f2i64_{D}(x):
    if x >= {T}(-9223372036854775808.0) and x < {T}(9223372036854775808.0):
        return T_int64(x)
    return T_int64(-9223372036854775808)


def H_f2u32_{D}(x):
    if x >= {T}(2147483648.0):
        return T_uint32(T_uint32(H_f2i32_{D}(x - {T}(2147483648.0))) + T_uint32(2147483648))
    return T_uint32(H_f2i32_{D}(x))
'''

_COMPLEX_HELPERS = '''
def H_cdiv_{D}(x, y):
    ar = x.real
    ai = x.imag
    br = y.real
    bi = y.imag
    abs_r = F_fabs_{S}(br)
    abs_i = F_fabs_{S}(bi)
    if abs_r >= abs_i:
        if abs_r == {P}(0.0) and abs_i == {P}(0.0):
            return {T}(complex(ar / abs_r, ai / abs_r))
        rat = bi / br
        scl = {P}(1.0) / (br + bi * rat)
        return {T}(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
    rat = br / bi
    scl = {P}(1.0) / (bi + br * rat)
    return {T}(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))


def H_cabs_{D}(x):
    re = F_fabs_{S}(x.real)
    im = F_fabs_{S}(x.imag)
    if re == INF or im == INF:
        return {P}(INF)
    if re != re or im != im:
        return {P}(NAN)
    big = re if re > im else im
    small = im if re > im else re
    if big == {P}(0.0):
        return {P}(0.0)
    ratio = small / big
    return F_sqrt_{S}(ratio * ratio + {P}(1.0)) * big
'''

_INT_HELPERS = '''
def H_floordiv_{D}(a, b):
    if b == {T}(0):
        return {T}(0)
    if {SIGNED} and b == {T}(-1):
        return {T}(-a)
    return {T}(a // b)


def H_rem_{D}(a, b):
    if b == {T}(0) or ({SIGNED} and b == {T}(-1)):
        return {T}(0)
    return {T}(a % b)
'''


def helper_source() -> str:
    parts = []
    for dt in DTYPES:
        if dt.kind == "f" and dt != F16:
            parts.append(_FLOAT_HELPERS.format(D=dt.name, T=cast(dt), S=fsuffix(dt)))
        elif dt.kind in "iu":
            parts.append(_INT_HELPERS.format(D=dt.name, T=cast(dt), SIGNED=dt.kind == "i"))
        elif dt.kind == "c":
            pd = part_dtype(dt)
            parts.append(_COMPLEX_HELPERS.format(D=dt.name, T=cast(dt), P=cast(pd),
                                                 S=fsuffix(pd)))
    return "\n".join(parts)


# -- binding the names ---------------------------------------------------------------------

def bind(ns, simulated):
    """Put the casts, math functions and helpers that generated text names into ``ns``."""
    import numba
    ns.update(INF=math.inf, NAN=math.nan)
    for dt in DTYPES:
        ns["D_" + dt.name] = numba.from_dtype(dt)
        ns["T_" + dt.name] = _sim_cast(dt) if simulated else numba.from_dtype(dt)
    (_bind_sim if simulated else _bind_device)(ns)
    exec(compile(helper_source(), "<fc-cuda-helpers>", "exec"), ns)
    if not simulated:
        from numba import cuda
        for name in [n for n in ns if n.startswith("H_")]:
            ns[name] = cuda.jit(device=True, inline="always")(ns[name])


def _sim_cast(dt):
    def to(v):
        return np.asarray(v).astype(dt)[()]
    return to


def _bind_sim(ns):
    for suffix, dt in (("f32", np.float32), ("f64", np.float64)):
        for prim, name in _FLOAT_FN.items():
            ns[f"F_{name}_{suffix}"] = _typed(prim.spec.reference, dt)
        for name, np_name in _HELPER_FN.items():
            ns[f"F_{name}_{suffix}"] = _typed(getattr(np, np_name), dt)
    for dt in (np.complex64, np.complex128):
        for prim, name in _CMATH.items():
            ns[f"F_c{name}_{np.dtype(dt).name}"] = _typed(prim.spec.reference, dt)
    # NumPy's loop (fused multiply-adds where it has them); on the device NVVM may fuse too
    ns["F_cmul"] = lambda x, y: np.multiply(np.full(1, x), np.full(1, y))[0]
    ns.update(F_max=np.maximum, F_min=np.minimum, F_maxh=_maxh, F_minh=_minh,
              R16=lambda x: np.float32(np.float16(x)))


def _mul(x, y):
    return x * y


def _maxh(x, y):
    return x if (x != x or x >= y) else y


def _minh(x, y):
    return x if (x != x or x <= y) else y


def _typed(f, dt):
    # through NumPy's array loops: its scalar paths differ at edges (power(-inf, 0.5))
    return lambda *xs: f(*(np.full(1, x, dt) for x in xs)).astype(dt)[0]


def _bind_device(ns):
    import numba
    from numba.cuda import libdevice
    for name in _MATH:
        ns[f"F_{name}_f32"] = ns[f"F_{name}_f64"] = getattr(math, name)
    ns["F_tgamma_f32"] = ns["F_tgamma_f64"] = math.gamma
    for name in _LIBDEVICE:
        ns[f"F_{name}_f64"] = getattr(libdevice, name)
        ns[f"F_{name}_f32"] = getattr(libdevice, name + "f")
    for suffix, T in (("f32", numba.float32), ("f64", numba.float64)):
        ns[f"F_logistic_{suffix}"] = _device_logistic(T)
    for dt in ("complex64", "complex128"):
        for name in _CMATH.values():
            ns[f"F_c{name}_{dt}"] = getattr(cmath, name)
    from numba import cuda
    ns.update(F_max=_device_minmax(True), F_min=_device_minmax(False), R16=_device_r16(),
              F_cmul=cuda.jit(device=True, inline="always")(_mul),
              F_maxh=cuda.jit(device=True, inline="always")(_maxh),
              F_minh=cuda.jit(device=True, inline="always")(_minh))


def _device_logistic(T):
    from numba import cuda

    @cuda.jit(device=True, inline="always")
    def f(x):
        return T(1) / (T(1) + math.exp(-x))
    return f


def _device_minmax(is_max):
    from numba import cuda
    if is_max:
        @cuda.jit(device=True, inline="always")
        def f(x, y):
            return x if (x != x or x > y) else y
    else:
        @cuda.jit(device=True, inline="always")
        def f(x, y):
            return x if (x != x or x < y) else y
    return f


def _device_r16():
    from numba import cuda, types

    @cuda.jit(device=True, inline="always")
    def r16(x):
        return types.float32(types.float16(x))
    return r16
