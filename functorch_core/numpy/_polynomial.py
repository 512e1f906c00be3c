"""Polynomials: ``vander`` and the least-squares fit ``polyfit`` (``polyval`` lives with
the other evaluation helpers in ``_math``)."""

from __future__ import annotations

import operator
import warnings

import numpy as np

from . import _elementwise as E
from ._core import aval, implements, is_tracer, operand, to_result
from ._creation import array_operand, asarray, ones
from ._linalg import matmul, outer
from ._reductions import cumprod
from ._reductions import sum as sum_
from ._shape import broadcast_view, concatenate, expand_dims
from .linalg import inv, lstsq

__all__ = ["vander", "polyfit"]


@implements(np.vander)
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-d ``x``: column ``j`` holds ``x ** (N - 1 - j)``
    (``x ** j`` when ``increasing``), built by repeated multiplication as in
    ``numpy.vander`` (integer and bool input gives int64).

    Args:
        x: a 1-d array.
        N (int, default ``len(x)``): the number of columns.
        increasing (bool, default ``False``): powers increase from left to right.

    Example::

        >>> fnp.vander(np.array([1, 2, 3]), 3)
        array([[1, 1, 1],
               [4, 2, 1],
               [9, 3, 1]])
    """
    xv = array_operand(x)
    if aval(xv).ndim != 1:
        raise ValueError(f"vander: x must be a one-dimensional array or sequence, got shape "
                         f"{aval(xv).shape}")
    m = aval(xv).shape[0]
    n = m if N is None else operator.index(N)
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    dt = np.promote_types(aval(xv).dtype, np.int64)
    xv = asarray(xv, dtype=dt)
    if n == 0:
        return to_result(operand(ones((m, 0), dt)))
    cols = concatenate([ones((m, 1), dt), broadcast_view(expand_dims(xv, 1), (m, n - 1))], axis=1)
    v = cumprod(cols, axis=1)
    return to_result(operand(v if increasing else v[:, ::-1]))


def _floats(v):
    """``asarray(v) + 0.0``, as NumPy's polyfit: integers become float64."""
    return E.add(array_operand(v), 0.0)


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial fit of degree ``deg`` to the points ``(x, y)``, as
    ``numpy.polyfit``: coefficients highest power first, through the SVD of the
    column-scaled Vandermonde matrix (:func:`functorch_core.numpy.linalg.lstsq`).

    Args:
        x: the 1-d sample points (static length).
        y: the values, 1-d or 2-d (one fit per column).
        deg (int): the degree (static).
        rcond (float, default ``len(x) * eps``): singular values below ``rcond`` times the
            largest are dropped.
        full (bool, default ``False``): also return ``(residuals, rank, singular_values,
            rcond)`` (the residuals are given whenever ``len(x) > deg + 1``).
        w (array, default ``None``): weights multiplying ``y - p(x)`` before squaring.
        cov (bool or ``'unscaled'``, default ``False``): also return the coefficients'
            covariance matrix (scaled by the residual variance unless ``'unscaled'``).

    Example::

        >>> np.round(fnp.polyfit(np.array([0.0, 1.0, 2.0, 3.0]),
        ...                      np.array([1.0, 3.0, 7.0, 13.0]), 2), 6)
        array([1., 1., 1.])
    """
    order = operator.index(deg) + 1
    xv, yv = _floats(x), _floats(y)
    if order < 1:
        raise ValueError("expected deg >= 0")
    if aval(xv).ndim != 1:
        raise TypeError(f"polyfit: expected 1D vector for x, got shape {aval(xv).shape}")
    if aval(xv).shape[0] == 0:
        raise TypeError("polyfit: expected non-empty vector for x")
    if not 1 <= aval(yv).ndim <= 2:
        raise TypeError(f"polyfit: expected 1D or 2D array for y, got shape {aval(yv).shape}")
    if aval(xv).shape[0] != aval(yv).shape[0]:
        raise TypeError(f"polyfit: expected x and y to have same length, got shapes "
                        f"{aval(xv).shape} and {aval(yv).shape}")
    n = aval(xv).shape[0]
    if rcond is None:
        rcond = n * np.finfo(aval(xv).dtype).eps
    lhs, rhs = vander(xv, order), yv
    if w is not None:
        wv = _floats(w)
        if aval(wv).ndim != 1:
            raise TypeError(f"polyfit: expected a 1-d array for weights, got shape "
                            f"{aval(wv).shape}")
        if aval(wv).shape[0] != n:
            raise TypeError(f"polyfit: expected w and y to have the same length, got shapes "
                            f"{aval(wv).shape} and {aval(yv).shape}")
        # NumPy scales in place: lhs and rhs keep their dtypes
        lhs = asarray(E.multiply(lhs, expand_dims(wv, 1)), dtype=aval(operand(lhs)).dtype)
        rhs = asarray(E.multiply(rhs, expand_dims(wv, 1) if aval(yv).ndim == 2 else wv),
                      dtype=aval(yv).dtype)
    scale = E.sqrt(sum_(E.multiply(lhs, lhs), axis=0))
    lhs = E.true_divide(lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = E.true_divide(c, expand_dims(scale, 1) if aval(operand(c)).ndim == 2 else scale)
    if not full and not is_tracer(rank) and rank != order:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    if full:
        return to_result(operand(c)), resids, rank, s, rcond
    if not cov:
        return to_result(operand(c))
    base = E.true_divide(inv(matmul(lhs.T, lhs)), outer(scale, scale))
    if cov == "unscaled":
        fac = 1
    else:
        if n <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = E.true_divide(resids, n - order)
    if aval(yv).ndim == 1:
        return to_result(operand(c)), to_result(operand(E.multiply(base, fac)))
    return to_result(operand(c)), to_result(operand(
        E.multiply(expand_dims(base, 2), expand_dims(expand_dims(fac, 0), 0))))
