"""Shared machinery of the NumPy layer: operands, promotion, casting, broadcasting.

Every function of ``functorch_core.numpy`` accepts NumPy arrays, Python and
NumPy scalars, nested lists and tracers. Outside any trace it computes
eagerly (the interpreter's implementations) and returns what NumPy returns;
inside a trace it records primitives.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import AbstractArray, Lit, Tracer, TracerError, dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import on_device
from functorch_core.ir.source import user_code, user_source

_PY_SCALARS = (bool, int, float, complex)

# NumPy function -> our implementation, for __array_function__ dispatch.
HANDLED_FUNCTIONS: dict = {}


def implements(*np_functions):
    """Register the decorated function as the traced version of ``np_functions``."""
    def register(fn):
        for f in np_functions:
            HANDLED_FUNCTIONS[f] = fn
        return fn
    return register


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


def check_concrete_shape(shape, call):
    """Refuse a shape (an int or a sequence of them) holding a traced value, naming ``call``
    (``'zeros(shape)'``) and pointing to static arguments."""
    entries = shape if isinstance(shape, tuple | list) else (shape,)
    for i, d in enumerate(entries):
        if isinstance(d, Tracer):
            where = f" (entry {i})" if isinstance(shape, tuple | list) else ""
            raise TracerError(
                f"{call}: the shape {shape!r} holds a traced value{where} ({d.aval}) at "
                f"{user_source()}{user_code()}; an array's shape must be known while "
                "tracing. Under jit, mark the argument it comes from static "
                "(jit(f, static_argnums=...) or static_argnames=...), or take it from an "
                "input's shape (x.shape[0] is a Python int while tracing)")


def is_python_scalar(x) -> bool:
    return isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic)


def operand(x):
    """A value the primitives accept: a Tracer, an ndarray (NumPy's, or a GPU array,
    kept where it is), or a Python scalar."""
    if isinstance(x, Tracer | np.ndarray) or is_python_scalar(x) or on_device(x):
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    if isinstance(x, list | tuple):
        if any(isinstance(e, Tracer) for e in _walk(x)):
            from ._shape import stack
            return stack([operand(e) for e in x])
        return np.asarray(x)
    if isinstance(x, Lit):
        return x
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"cannot use a {type(x).__name__} as an array")
    return arr


def _walk(x):
    for e in x:
        if isinstance(e, list | tuple):
            yield from _walk(e)
        else:
            yield e


def aval(x) -> AbstractArray:
    if isinstance(x, Tracer | Lit):
        return x.aval
    if is_python_scalar(x):
        return AbstractArray((), dtypes.python_scalar_dtype(x), weak_type=True)
    if on_device(x):
        return AbstractArray(tuple(x.shape), np.dtype(x.dtype))
    return AbstractArray(np.shape(x), np.asarray(x).dtype)


def shape(x) -> tuple[int, ...]:
    return aval(operand(x)).shape


def dtype_of(x) -> np.dtype:
    return aval(operand(x)).dtype


def ndim(x) -> int:
    return len(shape(x))


def weak_marker(x):
    a = aval(x)
    return dtypes.weak_marker(a.dtype, a.weak_type)


def result_type(*xs) -> np.dtype:
    """NumPy 2 / NEP 50 result dtype of the operands (scalars are weak)."""
    return dtypes.result_type(*((aval(x).dtype, aval(x).weak_type) for x in xs))[0]


def all_weak(xs) -> bool:
    return all(aval(x).weak_type for x in xs)


def cast(x, dtype, weak=False):
    """``x`` converted to ``dtype`` (a no-op when it already has it)."""
    dtype = np.dtype(dtype)
    if is_python_scalar(x):
        return Lit(np.asarray(x, dtype=dtype), AbstractArray((), dtype, weak_type=weak))
    if isinstance(x, Lit):
        if x.aval.dtype == dtype:
            return x
        return Lit(x.value.astype(dtype), AbstractArray(x.aval.shape, dtype, weak))
    if aval(x).dtype == dtype:
        return x
    if isinstance(x, np.ndarray):
        with np.errstate(all="ignore"):
            if x.dtype.kind == "c" and dtype.kind == "b":
                return x != 0
            return np.real(x).astype(dtype) if x.dtype.kind == "c" and dtype.kind != "c" \
                else x.astype(dtype)
    if weak and aval(x).weak_type:
        return P.convert.bind(x, new_dtype=dtype, weak_type=True)
    return P.convert.bind(x, new_dtype=dtype)


def broadcast_to_shape(x, shape):
    """Broadcast ``x`` to ``shape`` with NumPy's rules (rank-0 stays rank-0)."""
    shape = tuple(shape)
    xs = aval(x).shape
    if xs == shape or (not xs and not isinstance(x, np.ndarray)):
        return x
    if len(xs) > len(shape) or any(a not in (1, b) for a, b in zip(xs[::-1], shape[::-1],
                                                                     strict=False)):
        raise ValueError(f"operands could not be broadcast together: shape {xs} to {shape}")
    lead = len(shape) - len(xs)
    keep = [i for i, d in enumerate(xs) if d == shape[lead + i]]
    if len(keep) != len(xs):
        x = P.reshape.bind(x, new_sizes=tuple(xs[i] for i in keep))
    return P.broadcast_in_dim.bind(x, shape=shape, broadcast_dimensions=tuple(lead + i
                                                                              for i in keep))


def broadcast_shapes(name, *xs):
    try:
        return tuple(np.broadcast_shapes(*(aval(x).shape for x in xs)))
    except ValueError:
        raise ValueError(f"{name}: operands could not be broadcast together with shapes "
                         + " ".join(str(aval(x).shape) for x in xs)) from None


def broadcast_all(name, *xs):
    out = broadcast_shapes(name, *xs)
    return [broadcast_to_shape(x, out) for x in xs]


def normalize_axis(axis, ndim, name="axis"):
    import operator
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(axis).__name__}") from None
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim


def checked_axis(x, axis):
    """``(x, axis)`` for functions NumPy runs through ``PyArray_CheckAxis``.

    Those (repeat, take, argsort...) take a 0-d array with ``axis`` 0 or -1 as a
    1-element 1-d array: ``np.repeat(np.array(1.5), 2, axis=0)`` is ``[1.5, 1.5]``.
    """
    if aval(x).ndim == 0:
        normalize_axis(axis, 1)
        return P.reshape.bind(x, new_sizes=(1,)), 0
    return x, normalize_axis(axis, aval(x).ndim)


def normalize_axes(axis, ndim):
    """None -> all axes; int or tuple -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, tuple | list) else tuple(axis)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def constant(value, dtype, shape=()):
    """A constant of ``shape`` holding ``value``, for use as an operand."""
    lit = Lit(np.asarray(value, dtype=dtype))
    if not shape:
        return lit
    return P.broadcast_in_dim.bind(lit, shape=tuple(shape), broadcast_dimensions=())


def complex_from_parts(re, im, dtype):
    """``re + im * 1j`` in the complex ``dtype``, from two real operands."""
    part = np.finfo(dtype).dtype
    return P.complex.bind(cast(re, part), cast(im, part))


def to_result(x, scalar=False):
    """What a public function hands back: a tracer, or NumPy's own kind of value.

    Outside traces a Lit becomes an ndarray, and with ``scalar=True`` a 0-d
    result becomes a NumPy scalar, as ufuncs and reductions return.
    """
    if isinstance(x, Lit):
        x = x.value.copy()
    if scalar and isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    return x
