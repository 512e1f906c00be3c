"""Reductions and scans: ``sum``, ``mean``, ``var``, ``max``, ``argmax``, ``all``, ``cumsum``...

Result dtypes are NumPy's own: each function asks NumPy for the dtype its
counterpart gives on a one-element array of the input dtype (cached), so bool
and small integers accumulate in int64, ``mean`` of integers is float64,
``mean`` of float16 accumulates in float32, ``var`` of complex is real. A
result dtype outside the supported set (``sum`` of uint8 is uint64) raises
``TypeError`` naming a ``dtype=`` that works.

``where=`` and ``out=`` are not supported (``NotImplementedError``).
"""

from __future__ import annotations

import builtins
import functools
import math
import warnings

import numpy as np

from functorch_core._internal import autocast
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind

from ._core import (
    aval,
    broadcast_to_shape,
    cast,
    constant,
    implements,
    normalize_axes,
    normalize_axis,
    to_result,
)
from ._creation import array_operand
from ._elementwise import _to_bool

__all__ = ["sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax",
           "argmin", "all", "any", "cumsum", "cumprod", "UFUNC_REDUCTIONS"]

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def _given(v) -> bool:
    return v is not None and v is not np._NoValue


def _flag(v) -> bool:
    return False if v is np._NoValue else builtins.bool(v)


@functools.cache
def _numpy_dtype(fn, src, dtype, name):
    """The dtype ``fn`` gives on ``src`` input with ``dtype=dtype``; supported or TypeError."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out = np.asarray(fn(np.ones(1, src), dtype=dtype)).dtype
    if out not in dtypes.SUPPORTED:
        raise TypeError(
            f"{name}: NumPy gives {out} for {name} of {src}"
            + ("" if dtype is None else f" with dtype={dtype}")
            + ", which is not a supported dtype; pass dtype= with a supported one "
            "(np.int64, np.float64...) to choose the accumulator")
    return out


def _result_dtype(fn, name, src, dtype):
    return _numpy_dtype(fn, np.dtype(src), None if dtype is None else np.dtype(dtype), name)


def _prepare(name, a, axis, out, where, *, ufunc_like=True):
    """The operand and the sorted reduced axes; rejects ``out=``/``where=``."""
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    if where is not True and where is not np._NoValue:
        raise NotImplementedError(f"{name}(..., where=...) is not supported yet; mask the "
                                  "input with fnp.where(mask, x, neutral) instead")
    x = array_operand(a)
    ndim = aval(x).ndim
    if ndim == 0 and ufunc_like and axis is not None:
        normalize_axes(axis, 1)         # ufunc reductions take axis 0 / -1 on a 0-d array
        return x, ()
    return x, normalize_axes(axis, ndim)


def _count(x, axes) -> int:
    return math.prod(aval(x).shape[i] for i in axes)


def _reduced_shape(x, axes):
    return tuple(d for i, d in enumerate(aval(x).shape) if i not in axes)


def _keep(y, axes, shape):
    """Broadcast a reduced ``y`` back over the ``axes`` of ``shape``."""
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return P.broadcast_in_dim.bind(y, shape=tuple(shape), broadcast_dimensions=kept)


def _finish(y, axes, keepdims):
    if _flag(keepdims) and axes:
        y = P.expand_dims.bind(y, dimensions=axes)
    if isinstance(y, np.ndarray) and not y.flags.writeable:
        y = y.copy()                    # an eager broadcast constant
    return to_result(y, scalar=True)


_WIDER = {np.dtype(np.float16): np.dtype(np.float32), dtypes.bfloat16: np.dtype(np.float32),
          np.dtype(np.float32): _F64,
          np.dtype(np.complex64): np.dtype(np.complex128)}


def _divide(s, n):
    """``s / n`` cast back to the dtype of ``s``, as NumPy's mean/var divide.

    NumPy divides by an intp (or a float, with a fractional ddof): in float64 for
    small float dtypes. Dividing in the narrowest dtype that holds ``n`` exactly
    rounds the same (a correctly rounded quotient of exact operands).
    """
    dt = aval(s).dtype
    work = dt if dtype_kind(dt) in "fc" else _F64
    while work in _WIDER and work.type(n) != n:
        work = _WIDER[work]
    return cast(P.div.bind(cast(s, work), constant(n, work)), dt)


def _sqrt(x):
    dt = aval(x).dtype
    if dtype_kind(dt) in "fc":
        return P.sqrt.bind(x)
    return cast(P.sqrt.bind(cast(x, _F64)), dt)


# --- sum and prod ------------------------------------------------------------------

def _accumulate(name, fn, prim, combine, a, axis, dtype, out, keepdims, initial, where):
    x, axes = _prepare(name, a, axis, out, where)
    dt = _result_dtype(fn, name, aval(x).dtype, dtype)
    x = cast(x, dt)
    if _given(initial) and prim is P.reduce_prod and dt.kind == "c" and axes \
            and builtins.all(aval(x).shape[i] for i in axes):
        x = _fold_initial(x, axes, combine, constant(np.asarray(initial, dtype=dt), dt))
        return _finish(prim.bind(x, axes=axes), axes, keepdims)
    y = prim.bind(x, axes=axes)
    if _given(initial):
        y = combine.bind(y, constant(np.asarray(initial, dtype=dt), dt))
    return _finish(y, axes, keepdims)


def _fold_initial(x, axes, combine, init):
    """``x`` with ``init`` combined into the first element of every reduced line, as
    NumPy starts its accumulation: with complex infinities the order of a product decides
    the result ((1+1j)*(inf j) is -inf+inf j, yet (that)*(1+0j) is nan+nan j)."""
    shape = aval(x).shape
    first = tuple(1 if i in axes else n for i, n in enumerate(shape))
    head = P.slice.bind(x, start_indices=(0,) * len(shape), limit_indices=first,
                        strides=(1,) * len(shape))
    head = combine.bind(P.broadcast_in_dim.bind(init, shape=first, broadcast_dimensions=()),
                        head)
    zero = constant(0, np.dtype(np.int64))
    return P.dynamic_update_slice.bind(x, head, *[zero] * len(shape))


@implements(np.sum)
@autocast.float32_op
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.sum``: the sum over ``axis`` (None: all; int or tuple, negative allowed).

    bool and integers narrower than 64 bits accumulate in int64; ``dtype`` picks
    the accumulator; ``initial`` is added to every result.
    """
    return _accumulate("sum", np.sum, P.reduce_sum, P.add, a, axis, dtype, out, keepdims,
                       initial, where)


@implements(np.prod)
@autocast.float32_op
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.prod``: the product over ``axis``; dtypes as :func:`sum`."""
    return _accumulate("prod", np.prod, P.reduce_prod, P.mul, a, axis, dtype, out, keepdims,
                       initial, where)


# --- max and min -------------------------------------------------------------------

def _extremum(name, ufunc_name, prim, combine, a, axis, out, keepdims, initial, where):
    x, axes = _prepare(name, a, axis, out, where)
    dt = aval(x).dtype
    init = np.asarray(initial, dtype=dt) if _given(initial) else None
    if _count(x, axes) == 0:
        if init is None:
            raise ValueError(f"{name}: zero-size array to reduction operation {ufunc_name} "
                             f"which has no identity (shape {aval(x).shape}, axis {axis}); "
                             "pass initial=")
        return _finish(constant(init, dt, _reduced_shape(x, axes)), axes, keepdims)
    y = prim.bind(x, axes=axes)
    if init is not None:
        y = combine.bind(y, constant(init, dt))
    return _finish(y, axes, keepdims)


@implements(np.max, np.amax)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.max``: the largest value over ``axis`` (NaN propagates).

    Raises ``ValueError`` on an empty reduction unless ``initial`` is given.
    """
    return _extremum("max", "maximum", P.reduce_max, P.max, a, axis, out, keepdims, initial,
                     where)


@implements(np.min, np.amin)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.min``: the smallest value over ``axis``; see :func:`max`."""
    return _extremum("min", "minimum", P.reduce_min, P.min, a, axis, out, keepdims, initial,
                     where)


amax, amin = max, min


# --- mean, var, std ----------------------------------------------------------------

def _mean_acc(src, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    if src.kind in "biu":
        return _F64
    return dtypes.compute_dtype(src)


@implements(np.mean)
@autocast.float32_op
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """``numpy.mean``: the average over ``axis``.

    Integers and bool give float64; float16 and bfloat16 accumulate in float32 and
    return their own dtype; ``dtype`` sets both the accumulator and the result.
    """
    x, axes = _prepare("mean", a, axis, out, where, ufunc_like=False)
    src = aval(x).dtype
    out_dt = _result_dtype(np.mean, "mean", src, dtype)
    acc = dtypes.canonical(_mean_acc(src, dtype))
    y = _divide(P.reduce_sum.bind(cast(x, acc), axes=axes), _count(x, axes))
    return _finish(cast(y, out_dt), axes, keepdims)


def _variance(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction, root=False):
    """var (or, with ``root``, std) over ``axis``.

    std of one element with ``ddof=0`` is ``|x - mean|`` itself: built as ``abs``, not as
    ``sqrt`` of a square, so its derivative is 0 (no ``0/0``) where it is identically 0.
    """
    if _given(correction):
        if ddof != 0:
            raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
        ddof = correction
    x, axes = _prepare(name, a, axis, out, where, ufunc_like=False)
    src = aval(x).dtype
    out_dt = _result_dtype(np.var, name, src, dtype)
    acc = np.dtype(dtype) if dtype is not None else (_F64 if src.kind in "biu" else None)
    n = _count(x, axes)
    shape = aval(x).shape
    if _given(mean):
        m = array_operand(mean)
    else:
        sum_dt = _result_dtype(np.sum, name, src, acc)
        m = _keep(_divide(P.reduce_sum.bind(cast(x, sum_dt), axes=axes), n), axes, shape)
    d_dt = np.result_type(src, aval(m).dtype)
    d = P.sub.bind(cast(x, d_dt), broadcast_to_shape(cast(m, d_dt), shape))
    if root and n == 1 and ddof == 0:
        return cast(P.reduce_sum.bind(P.abs.bind(d), axes=axes), out_dt), axes
    if d_dt.kind == "c":
        re, im = P.real.bind(d), P.imag.bind(d)
        sq = P.add.bind(P.mul.bind(re, re), P.mul.bind(im, im))
    else:
        sq = P.mul.bind(d, d)
    s_dt = _result_dtype(np.sum, name, aval(sq).dtype, acc)
    s = P.reduce_sum.bind(cast(sq, s_dt), axes=axes)
    y = cast(_divide(s, builtins.max(n - ddof, 0)), out_dt)
    return (_sqrt(y) if root else y), axes


@implements(np.var)
@autocast.float32_op
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    """``numpy.var``: the mean squared deviation over ``axis``, divided by ``n - ddof``.

    Complex input gives a real result; integers and bool compute in float64.
    ``mean`` (a precomputed mean, keepdims-shaped) and ``correction`` (= ddof) as NumPy 2.
    """
    y, axes = _variance("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return _finish(y, axes, keepdims)


@implements(np.std)
@autocast.float32_op
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    """``numpy.std``: the square root of :func:`var`."""
    y, axes = _variance("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction,
                        root=True)
    return _finish(y, axes, keepdims)


# --- argmax, argmin -----------------------------------------------------------------

def _complex_arg_target(x, ax, reduce, fill):
    """A bool array whose first True along ``ax`` is NumPy's complex argmax/argmin.

    NumPy orders complex numbers lexicographically and lets the first NaN win.
    """
    shape = aval(x).shape
    re, im = P.real.bind(x), P.imag.bind(x)
    rdt = aval(re).dtype
    nan = P.or_.bind(P.ne.bind(re, re), P.ne.bind(im, im))
    best_re = _keep(reduce.bind(re, axes=(ax,)), (ax,), shape)
    cand = P.eq.bind(re, best_re)
    masked = P.select.bind(cand, im, constant(fill, rdt))
    best_im = _keep(reduce.bind(masked, axes=(ax,)), (ax,), shape)
    target = P.and_.bind(cand, P.eq.bind(im, best_im))
    any_nan = _keep(P.reduce_max.bind(nan, axes=(ax,)), (ax,), shape)
    return P.select.bind(any_nan, nan, target)


def _arg(name, prim, reduce, fill, a, axis, out, keepdims):
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    x = array_operand(a)
    shape = aval(x).shape
    ndim = len(shape)
    if axis is None or ndim == 0:
        if axis is not None:
            normalize_axis(axis, 1)
        x = P.reshape.bind(x, new_sizes=(aval(x).size,))
        ax = 0
    else:
        ax = normalize_axis(axis, ndim)
    if aval(x).shape[ax] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence "
                         f"(shape {shape}, axis {axis})")
    if aval(x).dtype.kind == "c":
        x, prim = _complex_arg_target(x, ax, reduce, fill), P.argmax
    y = prim.bind(x, axis=ax, index_dtype=_I64)
    if _flag(keepdims):
        y = P.reshape.bind(y, new_sizes=(1,) * ndim) if axis is None or ndim == 0 \
            else P.expand_dims.bind(y, dimensions=(ax,))
    return to_result(y, scalar=True)


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    """``numpy.argmax``: the int64 index of the first maximum (of the flattened array if
    ``axis`` is None); NaN counts as the maximum; complex compares lexicographically."""
    return _arg("argmax", P.argmax, P.reduce_max, -np.inf, a, axis, out, keepdims)


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    """``numpy.argmin``: the int64 index of the first minimum; see :func:`argmax`."""
    return _arg("argmin", P.argmin, P.reduce_min, np.inf, a, axis, out, keepdims)


# --- all, any -----------------------------------------------------------------------

def _logical(name, prim, empty, a, axis, out, keepdims, where):
    x, axes = _prepare(name, a, axis, out, where)
    if _count(x, axes) == 0:
        y = constant(empty, np.bool_, _reduced_shape(x, axes))
    else:
        y = prim.bind(_to_bool(x), axes=axes)
    return _finish(y, axes, keepdims)


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """``numpy.all``: whether every element over ``axis`` is nonzero (True when empty)."""
    return _logical("all", P.reduce_min, True, a, axis, out, keepdims, where)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """``numpy.any``: whether some element over ``axis`` is nonzero (False when empty)."""
    return _logical("any", P.reduce_max, False, a, axis, out, keepdims, where)


# --- cumsum, cumprod ----------------------------------------------------------------

def _scan(name, fn, prim, a, axis, dtype, out):
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    x = array_operand(a)
    if axis is None or aval(x).ndim == 0:
        if axis is not None:
            normalize_axis(axis, 1)
        x = P.reshape.bind(x, new_sizes=(aval(x).size,))
        ax = 0
    else:
        ax = normalize_axis(axis, aval(x).ndim)
    dt = _result_dtype(fn, name, aval(x).dtype, dtype)
    return to_result(prim.bind(cast(x, dt), axis=ax, reverse=False))


@implements(np.cumsum)
@autocast.float32_op
def cumsum(a, axis=None, dtype=None, out=None):
    """``numpy.cumsum``: running sums along ``axis`` (None: of the flattened array);
    dtypes as :func:`sum`."""
    return _scan("cumsum", np.cumsum, P.cumsum, a, axis, dtype, out)


@implements(np.cumprod)
@autocast.float32_op
def cumprod(a, axis=None, dtype=None, out=None):
    """``numpy.cumprod``: running products along ``axis``; dtypes as :func:`prod`."""
    return _scan("cumprod", np.cumprod, P.cumprod, a, axis, dtype, out)


# --- ufunc.reduce ---------------------------------------------------------------------

def _ufunc_reduce(fn, ufunc, extra=()):
    """``ufunc.reduce(array, axis=0, dtype=None, out=None, keepdims=False, ...)`` via ``fn``."""
    def reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
               where=True):
        kwargs = {"initial": initial} if "initial" in extra else {}
        if "dtype" in extra:
            kwargs["dtype"] = dtype
        elif dtype is not None:
            array = cast(array_operand(array), dtypes.canonical(dtype))
        if "initial" not in extra and _given(initial):
            raise NotImplementedError(f"numpy.{ufunc.__name__}.reduce(..., initial=...) is "
                                      "not supported")
        return fn(array, axis=axis, out=out, keepdims=keepdims, where=where, **kwargs)
    reduce.__name__ = f"{ufunc.__name__}_reduce"
    return reduce


UFUNC_REDUCTIONS = {
    np.add: _ufunc_reduce(sum, np.add, ("dtype", "initial")),
    np.multiply: _ufunc_reduce(prod, np.multiply, ("dtype", "initial")),
    np.maximum: _ufunc_reduce(max, np.maximum, ("initial",)),
    np.minimum: _ufunc_reduce(min, np.minimum, ("initial",)),
    np.logical_and: _ufunc_reduce(all, np.logical_and),
    np.logical_or: _ufunc_reduce(any, np.logical_or),
}
