"""Finite differences and integration: ``gradient``, ``trapezoid``, ``ediff1d``,
``unwrap``, following NumPy's formulas and result dtypes."""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir.dtypes import dtype_kind

from . import _elementwise as E
from ._core import aval, implements, is_tracer, normalize_axes, normalize_axis, operand, to_result
from ._creation import array_operand, asarray
from ._math import diff
from ._reductions import cumsum
from ._reductions import sum as sum_
from ._shape import concatenate, reshape
from ._shape_base import ravel

__all__ = ["gradient", "trapezoid", "ediff1d", "unwrap"]


def _along(axis, nd, s):
    return (slice(None),) * axis + (s,) + (slice(None),) * (nd - axis - 1)


def _spacings(name, varargs, f_shape, axes):
    """One spacing per axis: a Python/NumPy scalar (uniform) or the 1-d differences of
    the coordinates (float64 for integer coordinates)."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and aval(operand(varargs[0])).ndim == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError(f"{name}: invalid number of arguments: {len(varargs)} spacings for "
                        f"{len(axes)} axes")
    out = []
    for ax, h in zip(axes, varargs, strict=True):
        hv = array_operand(h)
        if aval(hv).ndim == 0:
            out.append(h)
            continue
        if aval(hv).ndim != 1:
            raise ValueError(f"{name}: distances must be either scalars or 1d, got shape "
                             f"{aval(hv).shape}")
        if aval(hv).shape[0] != f_shape[ax]:
            raise ValueError(f"{name}: when 1d, distances must match the length of the "
                             f"corresponding dimension: {aval(hv).shape[0]} coordinates for "
                             f"axis {ax} of length {f_shape[ax]}")
        if aval(hv).dtype.kind in "iu":
            hv = asarray(hv, dtype=np.float64)
        if is_tracer(hv):
            dx = operand(diff(hv))
        else:
            dx = np.diff(np.asarray(hv))
            if np.all(dx == dx[0]):
                dx = dx[0]    # NumPy's uniform fast path (same rounding)
        out.append(dx)
    return out


def _shaped(c, axis, nd):
    return reshape(c, tuple(-1 if i == axis else 1 for i in range(nd)))


def _interior(f, dx, axis, nd):
    at = lambda s: f[_along(axis, nd, s)]  # noqa: E731
    if aval(operand(dx)).ndim == 0:
        return E.true_divide(E.subtract(at(slice(2, None)), at(slice(None, -2))),
                             E.multiply(2.0, dx))
    dx1, dx2 = dx[:-1], dx[1:]
    a = E.true_divide(E.negative(dx2), E.multiply(dx1, E.add(dx1, dx2)))
    b = E.true_divide(E.subtract(dx2, dx1), E.multiply(dx1, dx2))
    c = E.true_divide(dx1, E.multiply(dx2, E.add(dx1, dx2)))
    return E.add(E.add(E.multiply(_shaped(a, axis, nd), at(slice(None, -2))),
                       E.multiply(_shaped(b, axis, nd), at(slice(1, -1)))),
                 E.multiply(_shaped(c, axis, nd), at(slice(2, None))))


def _three(f, axis, nd, idx, coefs):
    out = None
    for i, c in zip(idx, coefs, strict=True):
        term = E.multiply(c, f[_along(axis, nd, slice(i, i + 1 if i != -1 else None))])
        out = term if out is None else E.add(out, term)
    return out


def _edges(f, dx, axis, nd, edge_order):
    at = lambda i: f[_along(axis, nd, slice(i, i + 1 if i != -1 else None))]  # noqa: E731
    uniform = aval(operand(dx)).ndim == 0
    if edge_order == 1:
        d0, dn = (dx, dx) if uniform else (dx[0], dx[-1])
        return (E.true_divide(E.subtract(at(1), at(0)), d0),
                E.true_divide(E.subtract(at(-1), at(-2)), dn))
    if uniform:
        first = [E.true_divide(c, dx) for c in (-1.5, 2.0, -0.5)]
        last = [E.true_divide(c, dx) for c in (0.5, -2.0, 1.5)]
    else:
        d1, d2 = dx[0], dx[1]
        first = [E.true_divide(E.negative(E.add(E.multiply(2.0, d1), d2)),
                               E.multiply(d1, E.add(d1, d2))),
                 E.true_divide(E.add(d1, d2), E.multiply(d1, d2)),
                 E.true_divide(E.negative(d1), E.multiply(d2, E.add(d1, d2)))]
        d1, d2 = dx[-2], dx[-1]
        last = [E.true_divide(d2, E.multiply(d1, E.add(d1, d2))),
                E.true_divide(E.negative(E.add(d2, d1)), E.multiply(d1, d2)),
                E.true_divide(E.add(E.multiply(2.0, d2), d1), E.multiply(d2, E.add(d1, d2)))]
    return (_three(f, axis, nd, (0, 1, 2), first), _three(f, axis, nd, (-3, -2, -1), last))


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """The gradient of the sampled ``f`` by central differences inside and one-sided
    differences at the ends, as ``numpy.gradient`` (second-order accurate inside).

    Args:
        f: an array of samples.
        *varargs: the spacing: none (1 along every axis), one scalar for all axes, or one
            scalar or 1-d coordinate array per axis.
        axis (int, tuple or None, default ``None``): the axes differentiated.
        edge_order (int, default ``1``): 1 or 2, the accuracy order at the ends.

    Returns:
        One array per axis (a single array when there is one axis), of ``f``'s dtype
        (float64 for integer or bool ``f``).

    Example::

        >>> fnp.gradient(np.array([1.0, 2.0, 4.0, 7.0]))
        array([1. , 1.5, 2.5, 3. ])
    """
    fv = array_operand(f)
    shape, nd = aval(fv).shape, aval(fv).ndim
    axes = normalize_axes(axis, nd) if axis is None else tuple(
        normalize_axis(a, nd) for a in (axis if isinstance(axis, tuple | list) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError("gradient: repeated axis")
    edge_order = operator.index(edge_order)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: 'edge_order' must be 1 or 2, got {edge_order}")
    dxs = _spacings("gradient", varargs, shape, axes)
    otype = aval(fv).dtype
    if dtype_kind(otype) not in "fc":
        if otype.kind in "iu":
            fv = asarray(fv, dtype=np.float64)
        otype = np.dtype(np.float64)
    outs = []
    for ax, dx in zip(axes, dxs, strict=True):
        if shape[ax] < edge_order + 1:
            raise ValueError("gradient: shape of array too small to calculate a numerical "
                             f"gradient, at least (edge_order + 1) = {edge_order + 1} elements "
                             f"are required along axis {ax} (shape {shape})")
        dx = operand(dx)
        lo, hi = _edges(fv, dx, ax, nd, edge_order)
        parts = [lo, _interior(fv, dx, ax, nd), hi]
        outs.append(to_result(operand(concatenate([asarray(p, dtype=otype) for p in parts],
                                                  axis=ax))))
    return outs[0] if len(outs) == 1 else tuple(outs)


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of the samples ``y`` along ``axis`` by the trapezoidal rule, as
    ``numpy.trapezoid``.

    Args:
        y: the samples.
        x (array, default ``None``): the sample points (1-d along ``axis``, or shaped as
            ``y``); ``None`` uses the uniform spacing ``dx``.
        dx (scalar, default ``1.0``): the spacing when ``x`` is None.
        axis (int, default ``-1``): the axis integrated over.

    Example::

        >>> float(fnp.trapezoid(np.array([1.0, 2.0, 3.0]), x=np.array([0.0, 1.0, 3.0])))
        6.5
    """
    yv = array_operand(y)
    nd = aval(yv).ndim
    ax = normalize_axis(axis, nd)
    if x is None:
        d = dx
    else:
        xv = array_operand(x)
        if aval(xv).ndim == 1:
            d = diff(xv)
            d = reshape(d, tuple(aval(operand(d)).shape[0] if i == ax else 1
                                 for i in range(nd)))
        else:
            d = diff(xv, axis=axis)
    pair = E.add(yv[_along(ax, nd, slice(1, None))], yv[_along(ax, nd, slice(None, -1))])
    return to_result(operand(sum_(E.true_divide(E.multiply(d, pair), 2.0), axis=ax)),
                     scalar=True)


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    """The differences between consecutive elements of the flattened ``ary``, with
    ``to_begin`` and ``to_end`` joined on, as ``numpy.ediff1d`` (in ``ary``'s dtype).

    Args:
        ary: an array (flattened).
        to_end (array, default ``None``): values appended (cast to ``ary``'s dtype).
        to_begin (array, default ``None``): values prepended.

    Example::

        >>> fnp.ediff1d(np.array([1, 2, 4, 7]), to_begin=-99)
        array([-99,   1,   2,   3])
    """
    a = ravel(array_operand(ary))
    dt = aval(operand(a)).dtype
    d = E.subtract(a[1:], a[:-1])
    if to_begin is None and to_end is None:
        return to_result(operand(d))
    parts = []
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None:
            continue
        e = array_operand(extra)
        if not np.can_cast(aval(e).dtype, dt, casting="same_kind"):
            raise TypeError(f"ediff1d: dtype of `{name}` ({aval(e).dtype}) must be "
                            f"compatible with input `ary` ({dt}) under the `same_kind` rule.")
        parts.append((name, ravel(asarray(e, dtype=dt))))
    begin = [p for n, p in parts if n == "to_begin"]
    end = [p for n, p in parts if n == "to_end"]
    return to_result(operand(concatenate([*begin, asarray(d, dtype=dt), *end])))


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """Unwrap the phase ``p`` along ``axis``: jumps between neighbours larger than
    ``max(discont, period / 2)`` are replaced by their ``period`` complement, as
    ``numpy.unwrap``.

    Args:
        p: the input array.
        discont (float, default ``period / 2``): the largest jump kept.
        axis (int, default ``-1``): the axis unwrapped.
        period (float, default ``2 * pi``): the period of the wrapping.

    Example::

        >>> fnp.unwrap(np.array([0.0, 3.0, 6.5, 0.2]))
        array([0.        , 3.        , 0.21681469, 0.2       ])
    """
    pv = array_operand(p)
    nd = aval(pv).ndim
    ax = normalize_axis(axis, nd)
    dd = operand(diff(pv, axis=ax))
    if discont is None:
        discont = period / 2
    dtype = np.result_type(aval(dd).dtype, period)
    if dtype.kind in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    ddmod = E.add(E.remainder(E.subtract(dd, -high), period), -high)
    if ambiguous:
        ddmod = E.where(E.logical_and(E.equal(ddmod, -high), E.greater(dd, 0)),
                        asarray(np.asarray(high).astype(dtype)), ddmod)
    correct = E.subtract(ddmod, dd)
    correct = E.where(E.less(E.absolute(dd), discont), asarray(np.zeros((), dtype)), correct)
    head = asarray(pv[_along(ax, nd, slice(0, 1))], dtype=dtype)
    tail = E.add(pv[_along(ax, nd, slice(1, None))], cumsum(correct, axis=ax))
    return to_result(operand(concatenate([head, asarray(tail, dtype=dtype)], axis=ax)))

