"""Array creation and conversion: ``array``, ``zeros``, ``arange``, ``eye``, ``astype``...

With no trace these return what NumPy returns (fresh, writable ndarrays).
Inside a trace they record ``iota``/``broadcast_in_dim``/``convert``
equations, so a ``zeros((1000, 1000))`` is one small equation rather than a
giant constant. Lists holding tracers are stacked (NumPy's dtype discovery:
Python scalars count as int64/float64/complex128, never weak).
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import Lit, Tracer, TracerError, current_trace, dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.source import user_code, user_source

from ._core import (
    _walk,
    aval,
    broadcast_to_shape,
    cast,
    check_concrete_shape,
    implements,
    is_python_scalar,
    is_tracer,
    normalize_axis,
    operand,
    result_type,
    to_result,
)

__all__ = ["array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "eye", "identity", "astype", "copy"]

_I64 = np.dtype(np.int64)


# --- helpers shared with _reductions and _linalg ----------------------------

def _has_tracer(x) -> bool:
    if isinstance(x, list | tuple):
        return any(isinstance(e, Tracer) for e in _walk(x))
    return isinstance(x, Tracer)


def _tracing() -> bool:
    return current_trace() is not None


def strengthen(x):
    """``x`` as a strongly typed array operand: what ``np.asarray(x)`` would give.

    A weak value (a Python scalar, or a tracer standing for one) takes its
    default dtype for good, as it does when NumPy converts it to an array.
    """
    if is_python_scalar(x):
        return np.asarray(x)
    if isinstance(x, Lit):
        return x.value.copy()
    if aval(x).weak_type:
        return P.convert.bind(x, new_dtype=aval(x).dtype)
    return x


def array_operand(x):
    """Any array-like (nested lists of tracers included) as a strong operand."""
    if isinstance(x, list | tuple) and _has_tracer(x):
        return _stack_nested(x)
    return strengthen(operand(x))


def _fresh(y, x):
    """A new value for ``y`` if it is the tracer ``x`` itself (so a later in-place
    update of the result cannot write through to ``x``)."""
    if y is x and is_tracer(y):
        return P.convert.bind(y, new_dtype=y.dtype)
    return y


def _leaf_dtype(x):
    return x.dtype if is_tracer(x) else np.asarray(x).dtype


def _stack_nested(x, dtype=None):
    """Stack a nested list holding tracers, as ``np.array`` would stack arrays."""
    dt = np.dtype(dtype) if dtype is not None else \
        np.result_type(*(_leaf_dtype(e) for e in _walk(x)))
    dt = dtypes.canonical(dt)

    def build(node):
        if not _has_tracer(node):
            return _unsafe_const(node, dt)
        if is_tracer(node):
            return cast(strengthen(node), dt)
        parts = [build(e) for e in node]
        shapes = {aval(p).shape for p in parts}
        if len(shapes) > 1:
            raise ValueError("array: setting an array element with a sequence; the nested "
                             "sequence has an inhomogeneous shape (element shapes "
                             + ", ".join(str(s) for s in sorted(shapes)) + ")")
        parts = [P.expand_dims.bind(p, dimensions=(0,)) for p in parts]
        return parts[0] if len(parts) == 1 else P.concatenate.bind(*parts, dimension=0)
    return build(x)


def _unsafe_const(value, dt):
    """``value`` as an ndarray of ``dt`` with NumPy's unsafe casting (``cast``).

    A Python int out of the range of an integer ``dt`` raises OverflowError, as in NumPy 2.
    """
    if isinstance(value, int) and not isinstance(value, bool) and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dt}")
    return np.asarray(cast(np.asarray(value), dt))


def _shape_tuple(shape, name):
    check_concrete_shape(shape, f"{name}(shape)")
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"{name}: shape must be an int or a sequence of ints, got "
                            f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: negative dimensions are not allowed (shape {dims})")
    return dims


def _broadcast(x, shape):
    """``x`` broadcast to ``shape`` as an operand of exactly that shape."""
    shape = tuple(shape)
    if aval(x).shape == shape:
        return x
    if not aval(x).shape:
        return P.broadcast_in_dim.bind(x, shape=shape, broadcast_dimensions=())
    return broadcast_to_shape(x, shape)


def _check_ndarray(arr, name):
    if not isinstance(arr, np.ndarray):
        return arr
    if arr.dtype == object:
        raise TypeError(f"{name}: cannot make an array of Python objects")
    dtypes.canonical(arr.dtype)
    return arr


def _dtype(dtype, default=None):
    if dtype is None:
        dtype = default
    return dtypes.canonical(dtype)


# --- conversion --------------------------------------------------------------

@implements(np.array)
def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """``numpy.array``: a new array from an array-like (lists of tracers are stacked).

    ``copy`` follows NumPy: ``True`` always gives a new value, ``None`` only when
    needed, ``False`` raises ``ValueError`` where a conversion is needed.
    """
    if not _has_tracer(object):
        return _check_ndarray(np.array(object, dtype=dtype, copy=copy, order=order,
                                       ndmin=ndmin), "array")
    x = asarray(object, dtype=dtype, copy=copy)
    if aval(x).ndim < ndmin:
        x = P.reshape.bind(x, new_sizes=(1,) * (ndmin - aval(x).ndim) + aval(x).shape)
    return x


@implements(np.asarray)
def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """``numpy.asarray``: ``a`` as an array, converted to ``dtype`` if given.

    ``copy=None`` copies only when needed, ``copy=True`` always gives a new value and
    ``copy=False`` raises ``ValueError`` where a conversion is needed.
    """
    if not _has_tracer(a):
        return _check_ndarray(np.asarray(a, dtype=dtype, order=order, copy=copy), "asarray")
    x = _stack_nested(a, dtype) if isinstance(a, list | tuple) else strengthen(operand(a))
    dt = _dtype(dtype, aval(x).dtype)
    if copy is False and (dt != aval(x).dtype or x is not a):
        raise ValueError("asarray: unable to avoid a copy while creating an array as "
                         f"requested (a {aval(a).dtype if is_tracer(a) else 'sequence'} "
                         f"input converted to {dt})")
    x = cast(x, dt)
    return _fresh(x, a) if copy else x


@implements(np.astype)
def astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True, *, device=None):
    """``numpy.astype`` and ``ndarray.astype``: ``x`` converted to ``dtype``.

    ``casting`` is checked as NumPy does (``'unsafe'`` by default); complex to real
    drops the imaginary part. With ``copy=False`` an unchanged dtype returns ``x``.
    """
    x = operand(x)
    dt = _dtype(dtype)
    src = aval(x).dtype
    if not np.can_cast(src, dt, casting=casting):
        raise TypeError(f"astype: cannot cast array data from dtype('{src}') to "
                        f"dtype('{dt}') according to the rule '{casting}'")
    if not is_tracer(x):
        return np.asarray(x).astype(dt, order=order, casting=casting, copy=copy)
    if dt == src and not copy and not aval(x).weak_type:
        return x
    return P.convert.bind(x, new_dtype=dt)


@implements(np.copy)
def copy(a, order="K", subok=False):
    """``numpy.copy``: a new array with the same values (a new traced value)."""
    if not _has_tracer(a):
        return _check_ndarray(np.array(a, copy=True, order=order), "copy")
    x = array_operand(a)
    return _fresh(x, a)


# --- filled arrays --------------------------------------------------------------

def _filled(name, shape, fill, dtype):
    """An array of ``shape`` and ``dtype`` holding ``fill`` (broadcast), NumPy style."""
    if not _has_tracer(fill):
        value = _unsafe_const(fill, dtype)
        if not _tracing():
            out = np.empty(shape, dtype)
            out[...] = value
            return out
        return to_result(_broadcast(Lit(value), shape))
    v = cast(array_operand(fill), dtype)
    try:
        np.broadcast_shapes(aval(v).shape, shape)
    except ValueError:
        raise ValueError(f"{name}: could not broadcast fill value of shape {aval(v).shape} "
                         f"into shape {shape}") from None
    return to_result(_fresh(_broadcast(v, shape), fill))


@implements(np.zeros)
def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """``numpy.zeros``: an array of ``shape`` filled with 0 (default float64)."""
    return _filled("zeros", _shape_tuple(shape, "zeros"), 0, _dtype(dtype))


@implements(np.ones)
def ones(shape, dtype=None, order="C", *, device=None, like=None):
    """``numpy.ones``: an array of ``shape`` filled with 1 (default float64)."""
    return _filled("ones", _shape_tuple(shape, "ones"), 1, _dtype(dtype, np.float64))


@implements(np.empty)
def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """``numpy.empty``; returns zeros (a traced graph has no uninitialized memory)."""
    return _filled("empty", _shape_tuple(shape, "empty"), 0, _dtype(dtype))


@implements(np.full)
def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """``numpy.full``: an array of ``shape`` holding ``fill_value`` (which may be traced).

    Without ``dtype`` the result takes the dtype of ``np.array(fill_value)``.
    """
    if dtype is None:
        dtype = aval(array_operand(fill_value)).dtype if _has_tracer(fill_value) \
            else np.asarray(fill_value).dtype
    return _filled("full", _shape_tuple(shape, "full"), fill_value, _dtype(dtype))


def _like(name, a, fill, dtype, shape):
    if _has_tracer(a):
        av = aval(array_operand(a))
        a_shape, a_dtype = av.shape, av.dtype
    else:
        arr = np.asarray(a)
        a_shape, a_dtype = arr.shape, arr.dtype
    shape = a_shape if shape is None else _shape_tuple(shape, name)
    return _filled(name, shape, fill, _dtype(dtype, a_dtype))


@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.zeros_like``: zeros with the shape and dtype of ``a`` (or ``shape``/``dtype``)."""
    return _like("zeros_like", a, 0, dtype, shape)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.ones_like``: ones with the shape and dtype of ``a`` (or ``shape``/``dtype``)."""
    return _like("ones_like", a, 1, dtype, shape)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.empty_like``; returns zeros."""
    return _like("empty_like", prototype, 0, dtype, shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``numpy.full_like``: ``fill_value`` (cast unsafely) in the shape and dtype of ``a``."""
    return _like("full_like", a, fill_value, dtype, shape)


# --- ranges -----------------------------------------------------------------------

def _concrete(name, *values):
    for v in values:
        if is_tracer(v):
            raise TracerError(f"{name}: arguments that decide the length of the result must "
                              f"be concrete, got a traced {v.aval} at {user_source()}"
                              f"{user_code()}; under jit, mark the argument it comes from "
                              "static (jit(f, static_argnums=...) or static_argnames=...), or "
                              "take it from an input's shape (x.shape[0] is a Python int)")


@implements(np.arange)
def arange(start, stop=None, step=None, dtype=None, *, device=None, like=None):
    """``numpy.arange``: evenly spaced values in ``[start, stop)``.

    The length is ``ceil((stop - start) / step)``; without ``dtype`` the result is
    int64, float64 or complex128 by the kinds of the arguments, as in NumPy 2.
    """
    _concrete("arange", start, stop, step)
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    args = (start, stop, step)
    if dtype is None:
        if any(isinstance(v, complex | np.complexfloating) for v in args):
            dtype = np.complex128
        elif any(isinstance(v, float | np.floating) for v in args):
            dtype = np.float64
        else:
            dtype = np.int64
    dt = _dtype(dtype)
    if not _tracing():
        return np.arange(start, stop, step, dtype=dt)
    exact = np.arange(start, stop, step, dtype=dt)
    n = exact.size
    if dt.kind in "bc" or n < 2:
        return to_result(cast(Lit(exact), dt))
    # NumPy fills buffer[i] = start + i * delta with delta = buffer[1] - buffer[0],
    # in the dtype's arithmetic (float32 for float16); integers wrap the same way in int64.
    first, second = _unsafe_const(start, dt), _unsafe_const(start + step, dt)
    with np.errstate(all="ignore"):
        if dt.kind in "iu":
            work = _I64
            delta = (second - first).astype(work)
        else:
            work = dtypes.compute_dtype(dt)
            delta = second.astype(work) - first.astype(work)
    first = first.astype(work)
    y = P.iota.bind(dtype=work, shape=(n,), dimension=0)
    y = P.add.bind(P.mul.bind(y, _broadcast(Lit(delta), (n,))), _broadcast(Lit(first), (n,)))
    return cast(y, dt)


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             *, device=None):
    """``numpy.linspace``: ``num`` evenly spaced samples from ``start`` to ``stop``.

    ``start``/``stop`` may be traced (arrays broadcast as in NumPy; the samples run
    along ``axis``); ``num`` must be concrete. As in NumPy, a step that underflows to
    zero makes every sample ``i / div * (stop - start) + start`` instead.
    """
    _concrete("linspace", num)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    if not _tracing() and not _has_tracer((start, stop)):
        out = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep,
                          dtype=dtype, axis=axis)
        _check_ndarray(out[0] if retstep else out, "linspace")
        return out
    s, e = operand(start), operand(stop)
    dt = result_type(s, e)
    if dtype_kind(dt) not in "fc":
        dt = np.dtype(np.float64)
    out_dt = _dtype(dtype, dt)
    s, e = cast(s, dt), cast(e, dt)
    bshape = tuple(np.broadcast_shapes(aval(s).shape, aval(e).shape))
    shape = (num, *bshape)
    div = num - 1 if endpoint else num
    delta = P.sub.bind(*(_broadcast(v, bshape) for v in (e, s)))
    if div > 0:
        step = P.div.bind(delta, _broadcast(Lit(np.asarray(div, dt)), bshape))
    else:
        step = np.nan
    y = P.iota.bind(dtype=dt, shape=shape, dimension=0)
    if div > 0:
        # as NumPy: when any step underflows to zero, divide the ramp first
        stepped = P.mul.bind(y, _broadcast_lead(step, shape))
        divided = P.mul.bind(P.div.bind(y, _broadcast(Lit(np.asarray(div, dt)), shape)),
                             _broadcast_lead(delta, shape))
        zero = P.eq.bind(step, _broadcast(Lit(np.zeros((), dt)), bshape))
        if bshape:
            zero = P.reduce_max.bind(zero, axes=tuple(range(len(bshape))))
        y = P.select.bind(_broadcast(zero, shape), divided, stepped)
    else:
        y = P.mul.bind(y, _broadcast_lead(delta, shape))
    y = P.add.bind(y, _broadcast_lead(s, shape))
    if endpoint and num > 1:
        last = P.eq.bind(P.iota.bind(dtype=_I64, shape=shape, dimension=0),
                         _broadcast(Lit(np.asarray(num - 1, _I64)), shape))
        y = P.select.bind(last, _broadcast_lead(e, shape), y)
    if axis != 0:
        ax = normalize_axis(axis, len(shape))
        perm = list(range(1, len(shape)))
        perm.insert(ax, 0)
        y = P.transpose.bind(y, permutation=tuple(perm))
    if out_dt.kind in "iu" and dtype_kind(dt) == "f":
        y = P.floor.bind(y)
    y = to_result(cast(y, out_dt))
    return (y, to_result(step, scalar=True)) if retstep else y


def _broadcast_lead(x, shape):
    """Broadcast ``x`` (of shape ``shape[1:]`` or broadcastable to it) over a new leading axis."""
    x = _broadcast(x, shape[1:])
    return P.broadcast_in_dim.bind(x, shape=shape,
                                   broadcast_dimensions=tuple(range(1, len(shape))))


def _tri_mask(n, m, k, compare):
    """``compare(col - row, k)`` over an (n, m) grid, as a bool operand."""
    rows = P.iota.bind(dtype=_I64, shape=(n, m), dimension=0)
    cols = P.iota.bind(dtype=_I64, shape=(n, m), dimension=1)
    return compare.bind(P.sub.bind(cols, rows), _broadcast(Lit(np.asarray(k, _I64)), (n, m)))


@implements(np.eye)
def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    """``numpy.eye``: an (N, M) array with ones on the ``k``-th diagonal."""
    return diagonal_mask("eye", np.eye, P.eq, N, M, k, dtype)


def diagonal_mask(name, numpy_fn, compare, N, M, k, dtype):
    """An (N, M) array of ``dtype``: 1 where ``compare(col - row, k)`` (``numpy_fn``'s
    result outside traces)."""
    _concrete(name, N, M, k)
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    k = operator.index(k)
    dt = _dtype(dtype)
    if not _tracing():
        return numpy_fn(n, m, k, dtype=dt)
    return P.convert.bind(_tri_mask(n, m, k, compare), new_dtype=dt)


@implements(np.identity)
def identity(n, dtype=None, *, like=None):
    """``numpy.identity``: the (n, n) identity matrix (default float64)."""
    return eye(n, dtype=_dtype(dtype, np.float64))
