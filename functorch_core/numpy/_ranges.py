"""Sequences built from ``linspace`` and masks: ``logspace``, ``geomspace`` (endpoints may
be traced) and ``tri``."""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import primitives as P

from . import _elementwise as E
from ._core import aval, implements, is_tracer, operand, to_result
from ._creation import _concrete, array, asarray, diagonal_mask, linspace
from ._shape import concatenate, expand_dims, moveaxis

__all__ = ["logspace", "geomspace", "tri"]


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``, as ``numpy.logspace``.

    Args:
        start, stop: the exponents of the first and last samples (may be traced arrays;
            they broadcast).
        num (int, default ``50``): the number of samples (static).
        endpoint (bool, default ``True``): include ``base ** stop``.
        base (float or array, default ``10.0``): the base.
        dtype (default ``None``): the result dtype (NumPy's promotion when None).
        axis (int, default ``0``): where the samples run when the endpoints are arrays.

    Example::

        >>> fnp.logspace(0.0, 2.0, 3)
        array([  1.,  10., 100.])
    """
    if not isinstance(base, float | int) and aval(operand(base)).ndim:
        nd = len(np.broadcast_shapes(*(aval(operand(v)).shape for v in (start, stop, base))))
        start, stop, base = (array(v, copy=None, ndmin=nd) for v in (start, stop, base))
        base = expand_dims(base, axis)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = E.power(base, y)
    return to_result(operand(out if dtype is None else asarray(out, dtype=dtype)))


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Samples evenly spaced on a log scale from ``start`` to ``stop`` (the endpoints
    exact), as ``numpy.geomspace``; negative and complex endpoints work as in NumPy.

    Args:
        start, stop: the first and last samples, nonzero (may be traced; a traced zero
            gives NaN or infinity instead of NumPy's ``ValueError``).
        num (int, default ``50``): the number of samples (static).
        endpoint (bool, default ``True``): include ``stop``.
        dtype (default ``None``): the result dtype.
        axis (int, default ``0``): where the samples run when the endpoints are arrays.

    Example::

        >>> fnp.geomspace(1.0, 1000.0, 4)
        array([   1.,   10.,  100., 1000.])
    """
    s, e = operand(start), operand(stop)
    for v in (s, e):
        if not is_tracer(v) and np.any(np.asarray(v) == 0):
            raise ValueError("Geometric sequence cannot include zero")
    _concrete("geomspace", num)
    num = operator.index(num)
    dt = np.result_type(*(np.zeros((), aval(v).dtype) for v in (s, e)), float(num),
                        np.zeros((), dtype))
    out_dt = dt if dtype is None else np.dtype(dtype)
    s, e = asarray(s, dtype=dt), asarray(e, dtype=dt)
    sign = E.sign(s)
    s, e = E.true_divide(s, sign), E.true_divide(e, sign)
    res = logspace(E.log10(s), E.log10(e), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    bshape = aval(operand(res)).shape[1:]
    if num > 0:    # the endpoints exactly, as NumPy
        parts = [expand_dims(E.add(s, np.zeros(bshape, dt)), 0)]
        last = num - 1 if num > 1 and endpoint else num
        parts.append(res[1:last])
        if last < num:
            parts.append(expand_dims(E.add(e, np.zeros(bshape, dt)), 0))
        res = concatenate(parts, axis=0)
    res = E.multiply(res, sign)
    if axis != 0:
        res = moveaxis(res, 0, axis)
    return to_result(operand(asarray(res, dtype=out_dt)))


@implements(np.tri)
def tri(N, M=None, k=0, dtype=float, *, like=None):
    """An ``(N, M)`` array with ones at and below the ``k``-th diagonal, as ``numpy.tri``.

    Example::

        >>> fnp.tri(2, 3, k=1, dtype=int)
        array([[1, 1, 0],
               [1, 1, 1]])
    """
    return diagonal_mask("tri", np.tri, P.le, N, M, k, dtype)
