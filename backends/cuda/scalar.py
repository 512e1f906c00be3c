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

import math

import numpy as np

from ir import dtypes
from ir import primitives as P

DTYPES = tuple(d for d in dtypes.SUPPORTED if d.kind != "c")
F16, F32, F64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))

# float functions of one argument: (device: module attribute, simulator: NumPy/SciPy name)
_FLOAT_UNARY = {
    P.exp: "exp", P.exp2: "exp2", P.expm1: "expm1", P.log: "log", P.log1p: "log1p",
    P.sqrt: "sqrt", P.cbrt: "cbrt", P.sin: "sin", P.cos: "cos", P.tan: "tan",
    P.asin: "asin", P.acos: "acos", P.atan: "atan", P.sinh: "sinh", P.cosh: "cosh",
    P.tanh: "tanh", P.asinh: "asinh", P.acosh: "acosh", P.atanh: "atanh",
    P.floor: "floor", P.ceil: "ceil", P.round: "rint", P.erf: "erf", P.erfc: "erfc",
    P.lgamma: "lgamma", P.tgamma: "tgamma", P.logistic: "logistic",
}
# libdevice functions (f64 name; the f32 one adds "f"); the rest are numba's math.*
_LIBDEVICE = {"cbrt", "floor", "ceil", "rint", "exp2"}
_MATH = {"exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "asin", "acos",
         "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
         "lgamma", "fabs", "fmod", "atan2", "copysign", "pow", "isfinite"}
_SIM = {"exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log1p": "log1p",
        "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin", "cos": "cos", "tan": "tan",
        "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh",
        "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh",
        "atanh": "arctanh", "floor": "floor", "ceil": "ceil", "rint": "rint",
        "fabs": "abs", "fmod": "fmod", "atan2": "arctan2", "copysign": "copysign",
        "pow": "power", "isfinite": "isfinite"}
_SIM_SPECIAL = {"erf": "erf", "erfc": "erfc", "lgamma": "gammaln", "tgamma": "gamma"}
_FLOAT_BINARY = {P.pow: "pow", P.atan2: "atan2", P.copysign: "copysign"}

# which operand kinds each primitive renders for (the rest run on the host)
_KINDS = {
    **{p: "f" for p in _FLOAT_UNARY}, **{p: "f" for p in _FLOAT_BINARY},
    P.neg: "iuf", P.sign: "iuf", P.abs: "biuf", P.is_finite: "f", P.not_: "biu",
    P.add: "biuf", P.mul: "biuf", P.sub: "iuf", P.max: "biuf", P.min: "biuf",
    P.div: "f", P.floor_div: "iuf", P.rem: "iuf", P.and_: "biu", P.or_: "biu",
    P.xor: "biu", P.eq: "biuf", P.ne: "biuf", P.lt: "biuf", P.le: "biuf", P.gt: "biuf",
    P.ge: "biuf", P.select: "biuf", P.convert: "biuf", P.iota: "iuf",
}
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
    if dt.kind == "f":
        v = float(np.asarray(value, dt))
        text = "NAN" if math.isnan(v) else ("INF" if v == math.inf else
                                             "(-INF)" if v == -math.inf else repr(v))
        return f"{cast(dt)}({text})"
    return f"{cast(dt)}({int(value)})"


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
        return f"R16({text})" if prim is P.convert and dt.kind == "f" else \
            f"R16({cast(out)}({text}))"
    return f"{cast(out)}({text})"


def _expr(prim, dt, out, args, params):
    kind, T = dt.kind, cast(dt)
    if prim is P.iota:
        return f"i{params['dimension']}"
    if prim is P.select:
        return f"({args[1]} if {args[0]} else {args[2]})"
    if prim is P.convert:
        return _convert(dt, out, args[0])
    if prim in _COMPARE:
        return f"({args[0]} {_COMPARE[prim]} {args[1]})"
    if prim in _BITS or (kind == "b" and prim in (P.add, P.mul, P.max, P.min)):
        sym = _BITS.get(prim) or ("|" if prim in (P.add, P.max) else "&")
        return f"({args[0]} {sym} {args[1]})"
    if prim in _FLOAT_UNARY:
        return f"F_{_FLOAT_UNARY[prim]}_{fsuffix(dt)}({args[0]})"
    if prim in _FLOAT_BINARY:
        return f"F_{_FLOAT_BINARY[prim]}_{fsuffix(dt)}({args[0]}, {args[1]})"
    x = args[0]
    if prim is P.neg:
        return f"(-{x})"
    if prim is P.not_:
        return f"(not {x})" if kind == "b" else f"(~{x})"
    if prim is P.abs:
        if kind == "f":
            return f"F_fabs_{fsuffix(dt)}({x})"
        return x if kind in "bu" else f"(-{x} if {x} < {T}(0) else {x})"
    if prim is P.sign:
        s = f"({T}(1) if {x} > {T}(0) else ({T}(-1) if {x} < {T}(0) else {T}(0)))"
        return f"({x} if {x} != {x} else {s})" if kind == "f" else s
    if prim is P.is_finite:
        return f"F_isfinite_{fsuffix(dt)}({x})"
    y = args[1] if len(args) > 1 else None
    if prim in (P.add, P.sub, P.mul):
        return f"({x} {dict(((P.add, '+'), (P.sub, '-'), (P.mul, '*')))[prim]} {y})"
    if prim in (P.max, P.min):      # NumPy keeps y on ties (+-0.0), x for float16
        return f"F_{prim.name}{'h' if dt == F16 else ''}({x}, {y})"
    if prim is P.div:
        return f"({x} / {y})"
    if prim in (P.floor_div, P.rem):
        name = "floordiv" if prim is P.floor_div else "rem"
        return f"H_{name}_{compute_dtype(dt).name}({x}, {y})"
    raise NotImplementedError(f"cuda emit: no rendering for {prim.name} on {dt}")


def _convert(src, dst, x):
    # float -> int as NumPy on x86: a truncating conversion to int32 or int64 (NaN and out
    # of range give the lowest value), then wrapped; float16 -> uint32 through int64
    half, src, dst = src == F16, compute_dtype(src), np.dtype(dst)
    if dst.kind == "b":
        return f"({x} != {const(0, src)})"
    if src.kind == "b":
        return f"({const(1, dst)} if {x} else {const(0, dst)})"
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
    import scipy.special
    for suffix, dt in (("f32", np.float32), ("f64", np.float64)):
        for name, np_name in _SIM.items():
            ns[f"F_{name}_{suffix}"] = _typed(getattr(np, np_name), dt)
        for name, sp_name in _SIM_SPECIAL.items():
            ns[f"F_{name}_{suffix}"] = _typed(getattr(scipy.special, sp_name), dt)
        ns[f"F_logistic_{suffix}"] = _typed(scipy.special.expit, dt)
    ns.update(F_max=np.maximum, F_min=np.minimum, F_maxh=_maxh, F_minh=_minh,
              R16=lambda x: np.float32(np.float16(x)))


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
    from numba import cuda
    ns.update(F_max=_device_minmax(True), F_min=_device_minmax(False), R16=_device_r16(),
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
