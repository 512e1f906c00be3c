"""Elementwise functions (NumPy's ufuncs and a few friends), built from primitives.

Each public function resolves its dtypes exactly as the NumPy ufunc of the same
name does (``ufunc.resolve_dtypes``, NEP 50 included), casts and broadcasts
its operands, then applies a small builder of primitives.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind

from ._core import (
    all_weak,
    aval,
    broadcast_all,
    cast,
    complex_from_parts,
    constant,
    implements,
    is_tracer,
    operand,
    result_type,
    to_result,
    weak_marker,
)
from ._shifts import left_shift_build, right_shift_build
from ._ufunc_builds import (
    bitwise_count_build,
    fmod_build,
    gcd_build,
    heaviside_build,
    lcm_build,
    modf_fraction_build,
    modf_whole_build,
    signbit_build,
)
from ._writes import ufunc_out

__all__: list[str] = []


def _resolve(name, ufunc, ops, dtype):
    if dtype is not None:
        dt = np.dtype(dtype)
        return ufunc.resolve_dtypes((None,) * ufunc.nin + (None,) * ufunc.nout,
                                    signature=(dt,) * ufunc.nin + (None,) * ufunc.nout)
    try:
        resolved = ufunc.resolve_dtypes(tuple(weak_marker(o) for o in ops)
                                        + (None,) * ufunc.nout)
        if any(d.kind == "O" for d in resolved):
            # NumPy compares two Python ints as objects (any size); a traced Python int
            # fits int64, where NumPy's arrays of them compare
            resolved = ufunc.resolve_dtypes(tuple(aval(o).dtype for o in ops)
                                            + (None,) * ufunc.nout)
        return resolved
    except TypeError:
        _refuse_unsupported(name, ops)
        types = ", ".join(str(aval(o).dtype) for o in ops)
        raise TypeError(f"{name}: no implementation for operand dtypes ({types}); "
                        f"NumPy's {ufunc.__name__} rejects them too") from None


def _refuse_unsupported(name, ops):
    """An operand of a dtype the type system lacks (uint16, longdouble...), named."""
    for i, o in enumerate(ops):
        if isinstance(o, np.ndarray) and o.dtype not in dtypes.SUPPORTED:
            try:
                dtypes.canonical(o.dtype)
            except TypeError:
                raise TypeError(dtypes.unsupported_message(
                    o.dtype, f"{name}: operand {i} (shape {o.shape})")) from None


def apply_ufunc(name, ufunc, build, args, dtype=None):
    ops = [operand(a) for a in args]
    resolved = _resolve(name, ufunc, ops, dtype)
    in_dts, out_dt = resolved[:ufunc.nin], resolved[ufunc.nin]
    # Python scalars combined (``0.5 * step``, ``step ** 0.5``) give a Python scalar, weak
    # under NEP 50, so converting them for the operation keeps them weak
    weak = len(ops) > 1 and all_weak(ops)
    casted = [cast(o, dt, weak=aval(o).weak_type and (weak or not is_tracer(o)))
              for o, dt in zip(ops, in_dts, strict=True)]
    result = build(*broadcast_all(name, *casted))
    if any(result is o for o in ops) and is_tracer(result):
        # a ufunc returns a new array: a later in-place write must not reach the input
        result = P.convert.bind(result, new_dtype=aval(result).dtype)
    return to_result(cast(result, out_dt), scalar=True)


def _public(name, ufunc, build, *aliases):
    def fn(*args, out=None, dtype=None):
        if len(args) != ufunc.nin:
            raise TypeError(f"{name}() takes {ufunc.nin} positional arguments, got {len(args)}")
        if out is not None:
            return ufunc_out(name, out, apply_ufunc(name, ufunc, build, args, dtype))
        result = apply_ufunc(name, ufunc, build, args, dtype)
        if is_tracer(result) and aval(result).weak_type:
            # np.multiply(0.5, 2) is a float64 scalar: strong, unlike 0.5 * 2
            result = P.convert.bind(result, new_dtype=aval(result).dtype)
        return result

    def operator(*args):
        return apply_ufunc(name, ufunc, build, args)
    fn.__name__ = fn.__qualname__ = name
    fn.operator = operator
    fn.__doc__ = f"Elementwise ``numpy.{ufunc.__name__}``, traceable; same dtypes and values."
    implements(ufunc)(fn)
    for n in (name, *aliases):
        globals()[n] = fn
        __all__.append(n)
    UFUNCS[ufunc] = fn
    return fn


UFUNCS: dict = {}


def _prim(prim):
    return lambda *xs: prim.bind(*xs)


def _float_only(prim):
    """Rounding ops: identity on integers and bools, as NumPy 2 does; complex by parts."""
    def build(x):
        kind = dtype_kind(aval(x).dtype)
        if kind == "c":
            return complex_from_parts(prim.bind(P.real.bind(x)), prim.bind(P.imag.bind(x)),
                                      aval(x).dtype)
        return prim.bind(x) if kind == "f" else x
    return build


def _isnan(x):
    if dtype_kind(aval(x).dtype) not in "fc":
        return constant(False, np.bool_, aval(x).shape)
    return P.ne.bind(x, x)


def _isinf(x):
    dt = aval(x).dtype
    if dt.kind == "c":
        return P.or_.bind(_isinf(P.real.bind(x)), _isinf(P.imag.bind(x)))
    if dtype_kind(dt) != "f":
        return constant(False, np.bool_, aval(x).shape)
    return P.eq.bind(P.abs.bind(x), constant(np.inf, dt))


def _isfinite(x):
    if dtype_kind(aval(x).dtype) not in "fc":
        return constant(True, np.bool_, aval(x).shape)
    return P.is_finite.bind(x)


def _conj(x):
    return P.conj.bind(x) if aval(x).dtype.kind == "c" else x


def _scaled(prim, factor):
    return lambda x: P.mul.bind(prim.bind(x), constant(factor, aval(x).dtype))


def _square(x):
    return P.mul.bind(x, x)


def _reciprocal(x):
    dt = aval(x).dtype
    if dtype_kind(dt) in "fc":
        return P.div.bind(constant(1, dt), x)
    # NumPy's integer reciprocal truncates: only 1 and -1 survive.
    one = P.eq.bind(P.abs.bind(x), constant(1, dt))
    return P.select.bind(one, x, constant(0, dt))


def _trunc(x):
    if dtype_kind(aval(x).dtype) != "f":
        return x
    neg = P.lt.bind(x, constant(0, aval(x).dtype))
    return P.select.bind(neg, P.ceil.bind(x), P.floor.bind(x))


def _not(x):
    return P.not_.bind(_to_bool(x))


def _to_bool(x):
    dt = aval(x).dtype
    return x if dt == np.bool_ else P.ne.bind(x, constant(0, dt))


def _logical(prim):
    return lambda x, y: prim.bind(_to_bool(x), _to_bool(y))


def _fmax_fmin(prim):
    def build(x, y):
        if dtype_kind(aval(x).dtype) not in "fc":
            return prim.bind(x, y)
        return P.select.bind(_isnan(y), x, P.select.bind(_isnan(x), y, prim.bind(x, y)))
    return build


def _hypot(x, y):
    """``s * sqrt((x/s)**2 + (y/s)**2)`` with ``s = max(|x|, |y|)``: no overflow, and for
    every fixed ``s > 0`` the expression is ``sqrt(x**2 + y**2)``, so its derivative in
    ``s`` is identically zero and the tie rule of ``max`` (where ``|x| == |y|``) cannot
    reach any derivative. The origin gives 0 with derivative 0 (no NaN from sqrt at 0)."""
    dt = aval(x).dtype
    big = P.max.bind(P.abs.bind(x), P.abs.bind(y))
    zero = P.eq.bind(big, constant(0, dt))
    one = constant(1, dt)
    s = P.select.bind(zero, one, big)
    rx, ry = P.div.bind(x, s), P.div.bind(y, s)
    total = P.select.bind(zero, one, P.add.bind(P.mul.bind(rx, rx), P.mul.bind(ry, ry)))
    scaled = P.select.bind(zero, constant(0, dt), P.mul.bind(s, P.sqrt.bind(total)))
    inf = P.or_.bind(_isinf(x), _isinf(y))
    return P.select.bind(inf, constant(np.inf, dt), scaled)


def _logaddexp(exp, expm1, log1p_scale, shift):
    """``m + log(e**(x-m) + e**(y-m))`` (base e or 2) with ``m = max(x, y)``: for every
    fixed ``m`` this is the function itself, so its derivative in ``m`` is identically
    zero and every derivative is the softmax weights' (1/2 each on a tie, second
    derivative 1/4 there), never the tie rule of ``max``. ``e**(t) - 1`` of the larger
    operand is ``expm1(0) = 0``, keeping log1p's accuracy for far-apart operands.
    Infinite (and NaN) operands take ``max + log1p(e**-|x-y|)``, as NumPy's values."""
    def build(x, y):
        dt = aval(x).dtype
        hi = P.max.bind(x, y)
        finite = P.is_finite.bind(hi)
        zero = constant(0, dt)
        # the finite branch computes on finite numbers only, so that its (unselected)
        # derivatives are finite where the other branch is taken
        xs, ys = P.select.bind(finite, x, zero), P.select.bind(finite, y, zero)
        m = P.max.bind(xs, ys)
        a, b = P.sub.bind(xs, m), P.sub.bind(ys, m)
        x_top = P.ge.bind(xs, ys)
        inner = P.select.bind(x_top, P.add.bind(expm1(a, dt), exp(b, dt)),
                              P.add.bind(exp(a, dt), expm1(b, dt)))
        smooth = P.add.bind(m, log1p_scale(inner, dt))
        hi_s = P.select.bind(finite, zero, hi)
        xi, yi = P.select.bind(finite, zero, x), P.select.bind(finite, zero, y)
        tail = log1p_scale(exp(P.neg.bind(P.abs.bind(P.sub.bind(xi, yi))), dt), dt)
        # equal infinities, where x - y is NaN
        same = P.eq.bind(xi, yi)
        edge = P.select.bind(same, P.add.bind(xi, constant(shift, dt)), P.add.bind(hi_s, tail))
        return P.select.bind(finite, smooth, edge)
    return build


def _exp(t, dt):
    return P.exp.bind(t)


def _expm1(t, dt):
    return P.expm1.bind(t)


def _log1p(t, dt):
    return P.log1p.bind(t)


def _exp2(t, dt):
    return P.exp2.bind(t)


def _expm1_base2(t, dt):
    return P.expm1.bind(P.mul.bind(t, constant(math.log(2), dt)))


def _log2_1p(t, dt):
    return P.mul.bind(P.log1p.bind(t), constant(1 / math.log(2), dt))


_public("negative", np.negative, _prim(P.neg))
_public("positive", np.positive, lambda x: x)
_public("absolute", np.absolute, _prim(P.abs), "abs")
_public("sign", np.sign, _prim(P.sign))
_public("exp", np.exp, _prim(P.exp))
_public("exp2", np.exp2, _prim(P.exp2))
_public("expm1", np.expm1, _prim(P.expm1))
_public("log", np.log, _prim(P.log))
_public("log2", np.log2, _scaled(P.log, 1 / math.log(2)))
_public("log10", np.log10, _scaled(P.log, 1 / math.log(10)))
_public("log1p", np.log1p, _prim(P.log1p))
_public("sqrt", np.sqrt, _prim(P.sqrt))
_public("cbrt", np.cbrt, _prim(P.cbrt))
_public("square", np.square, _square)
_public("reciprocal", np.reciprocal, _reciprocal)
_public("sin", np.sin, _prim(P.sin))
_public("cos", np.cos, _prim(P.cos))
_public("tan", np.tan, _prim(P.tan))
_public("arcsin", np.arcsin, _prim(P.asin))
_public("arccos", np.arccos, _prim(P.acos))
_public("arctan", np.arctan, _prim(P.atan))
_public("sinh", np.sinh, _prim(P.sinh))
_public("cosh", np.cosh, _prim(P.cosh))
_public("tanh", np.tanh, _prim(P.tanh))
_public("arcsinh", np.arcsinh, _prim(P.asinh))
_public("arccosh", np.arccosh, _prim(P.acosh))
_public("arctanh", np.arctanh, _prim(P.atanh))
_public("deg2rad", np.deg2rad, lambda x: P.mul.bind(x, constant(math.pi / 180, aval(x).dtype)),
        "radians")
_public("rad2deg", np.rad2deg, lambda x: P.mul.bind(x, constant(180 / math.pi, aval(x).dtype)),
        "degrees")
# NumPy's radians/degrees are ufuncs of their own, not deg2rad/rad2deg under other names
UFUNCS[np.radians], UFUNCS[np.degrees] = UFUNCS[np.deg2rad], UFUNCS[np.rad2deg]
_public("fabs", np.fabs, _prim(P.abs))
_public("floor", np.floor, _float_only(P.floor))
_public("ceil", np.ceil, _float_only(P.ceil))
_public("trunc", np.trunc, _trunc, "fix")
implements(np.fix)(UFUNCS[np.trunc])   # np.fix is a function over ceil and floor
_public("rint", np.rint, _float_only(P.round))
_public("isnan", np.isnan, _isnan)
_public("isinf", np.isinf, _isinf)
_public("isfinite", np.isfinite, _isfinite)
_public("logical_not", np.logical_not, _not)
_public("invert", np.invert, _prim(P.not_), "bitwise_not", "bitwise_invert")
_public("conjugate", np.conjugate, _conj, "conj")

_public("add", np.add, _prim(P.add))
_public("subtract", np.subtract, _prim(P.sub))
_public("multiply", np.multiply, _prim(P.mul))
_public("true_divide", np.true_divide, _prim(P.div), "divide")
_public("floor_divide", np.floor_divide, _prim(P.floor_div))
_public("remainder", np.remainder, _prim(P.rem), "mod")
_public("power", np.power, _prim(P.pow), "pow")
_public("maximum", np.maximum, _prim(P.max))
_public("minimum", np.minimum, _prim(P.min))
_public("fmax", np.fmax, _fmax_fmin(P.max))
_public("fmin", np.fmin, _fmax_fmin(P.min))
_public("arctan2", np.arctan2, _prim(P.atan2), "atan2")
_public("hypot", np.hypot, _hypot)
_public("logaddexp", np.logaddexp, _logaddexp(_exp, _expm1, _log1p, math.log(2)))
_public("logaddexp2", np.logaddexp2, _logaddexp(_exp2, _expm1_base2, _log2_1p, 1.0))
_public("copysign", np.copysign, _prim(P.copysign))
_public("equal", np.equal, _prim(P.eq))
_public("not_equal", np.not_equal, _prim(P.ne))
_public("less", np.less, _prim(P.lt))
_public("less_equal", np.less_equal, _prim(P.le))
_public("greater", np.greater, _prim(P.gt))
_public("greater_equal", np.greater_equal, _prim(P.ge))
_public("logical_and", np.logical_and, _logical(P.and_))
_public("logical_or", np.logical_or, _logical(P.or_))
_public("logical_xor", np.logical_xor, _logical(P.xor))
_public("bitwise_and", np.bitwise_and, _prim(P.and_))
_public("bitwise_or", np.bitwise_or, _prim(P.or_))
_public("bitwise_xor", np.bitwise_xor, _prim(P.xor))
_public("left_shift", np.left_shift, left_shift_build, "bitwise_left_shift")
_public("right_shift", np.right_shift, right_shift_build, "bitwise_right_shift")
_public("fmod", np.fmod, fmod_build)
_public("heaviside", np.heaviside, heaviside_build)
_public("float_power", np.float_power, _prim(P.pow))
_public("signbit", np.signbit, signbit_build)
_public("gcd", np.gcd, gcd_build)
_public("lcm", np.lcm, lcm_build)
_public("bitwise_count", np.bitwise_count, bitwise_count_build)


def _two_outputs(name, ufunc, first, second):
    """A ufunc of two outputs (``divmod``, ``modf``) as two one-output ones."""
    def fn(*args, out=None, dtype=None):
        if len(args) != ufunc.nin:
            raise TypeError(f"{name}() takes {ufunc.nin} positional arguments, got {len(args)}")
        if out is not None:
            raise NotImplementedError(f"{name}(..., out=...) is not supported; use the results")
        return (apply_ufunc(name, ufunc, first, args, dtype),
                apply_ufunc(name, ufunc, second, args, dtype))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise ``numpy.{name}``, traceable: its two results, with NumPy's "
                  "dtypes and values.")
    implements(ufunc)(fn)
    globals()[name] = UFUNCS[ufunc] = fn
    __all__.append(name)


_two_outputs("divmod", np.divmod, _prim(P.floor_div), _prim(P.rem))
_two_outputs("modf", np.modf, modf_fraction_build, modf_whole_build)


@implements(np.real)
def real(x):
    """The real part of ``x``, as ``numpy.real``."""
    x = operand(x)
    return to_result(P.real.bind(x) if aval(x).dtype.kind == "c" else x)


@implements(np.imag)
def imag(x):
    """The imaginary part of ``x``, as ``numpy.imag`` (zeros for real input)."""
    x = operand(x)
    if aval(x).dtype.kind == "c":
        return to_result(P.imag.bind(x))
    return to_result(constant(0, aval(x).dtype, aval(x).shape))


@implements(np.where)
def where(condition, x=None, y=None):
    """Choose elementwise from ``x`` where ``condition`` holds, else from ``y``.

    The one-argument form (``nonzero``) has a data-dependent shape and is not traceable.
    """
    if x is None or y is None:
        raise TypeError("where(condition) without x and y returns indices of data-dependent "
                        "size; it is not supported under tracing. Pass x and y.")
    c, x, y = operand(condition), operand(x), operand(y)
    dt = result_type(x, y)
    weak = aval(x).weak_type and aval(y).weak_type
    c = _to_bool(c)
    c, x, y = broadcast_all("where", c, cast(x, dt, weak), cast(y, dt, weak))
    return to_result(P.select.bind(c, x, y))


@implements(np.clip)
def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    """Clip ``a`` into ``[a_min, a_max]``, as ``numpy.clip`` (either bound may be None)."""
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise TypeError(f"clip() got unexpected keyword arguments {sorted(kwargs)}")
    if out is not None:
        raise NotImplementedError("clip(..., out=...) is not supported yet")
    result = a
    if a_min is not None:
        result = UFUNCS[np.maximum](result, a_min)
    if a_max is not None:
        result = UFUNCS[np.minimum](result, a_max)
    if a_min is None and a_max is None:
        result = UFUNCS[np.positive](a)
    return result


__all__ += ["real", "imag", "where", "clip"]
