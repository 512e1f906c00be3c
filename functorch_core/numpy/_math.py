"""NumPy's mathematical functions built from the traced ones: ``angle``, ``sinc``,
``nan_to_num``, ``isclose``/``allclose``, ``diff``, ``kron``, ``cross``, ``select``,
``polyval``, ``interp``, ``searchsorted``, ``digitize``, ``bincount``.

Values and dtypes follow NumPy's own definitions of these functions; derivatives and
batching come from the functions they are built from.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from functorch_core.ir import TracerError
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind

from . import _elementwise as E
from ._core import (
    aval,
    complex_from_parts,
    implements,
    is_tracer,
    normalize_axis,
    operand,
    to_result,
)
from ._creation import arange, array_operand, asarray, zeros_like
from ._indexing import take
from ._info import result_type
from ._reductions import all as all_
from ._reductions import sum as sum_
from ._shape import (
    broadcast_arrays,
    broadcast_view,
    concatenate,
    expand_dims,
    moveaxis,
    reshape,
    stack,
)

__all__ = ["angle", "sinc", "nan_to_num", "isclose", "allclose", "diff", "kron", "cross",
           "select", "polyval", "interp", "searchsorted", "digitize", "bincount", "i0"]


def _is_py_number(x):
    return isinstance(x, int | float | complex) and not isinstance(x, np.generic)


@implements(np.angle)
def angle(z, deg=False):
    """The counterclockwise angle of ``z`` from the positive real axis, as ``numpy.angle``.

    Args:
        z: an array (real input has angle 0 or pi).
        deg (bool, default ``False``): degrees instead of radians.

    Example::

        >>> fnp.angle(1j)
        1.5707963267948966
    """
    x = operand(z)
    if aval(x).dtype.kind == "c":
        a = E.arctan2(E.imag(x), E.real(x))
    else:
        a = E.arctan2(0, x)
    return E.multiply(a, 180 / math.pi) if deg else a


def _sinc_series(y):
    # sin(y)/y = 1 - y^2/6 + y^4/120 - y^6/5040 + y^8/362880, exact to rounding for
    # |y| < 1e-2 (the next term is below 1e-27), and right in every derivative at 0
    y2 = E.multiply(y, y)
    out = 1 / 362880
    for c in (-1 / 5040, 1 / 120, -1 / 6, 1.0):
        out = E.add(E.multiply(out, y2), c)
    return out


@implements(np.sinc)
def sinc(x):
    """The normalized sinc function ``sin(pi x) / (pi x)`` (1 at 0), as ``numpy.sinc``.

    Near 0 it is evaluated by its Taylor series, so every derivative is right there
    (``sinc''(0) = -pi**2/3``).

    Args:
        x: an array.

    Example::

        >>> fnp.sinc(0.5)
        0.6366197723675814
    """
    x = array_operand(x)
    if dtype_kind(aval(x).dtype) not in "fc":
        x = E.multiply(x, 1.0)
    y = E.multiply(x, math.pi)
    small = E.less(E.absolute(y), 1e-2)
    safe = E.where(small, 1.0, y)
    return to_result(E.where(small, _sinc_series(E.where(small, y, 0.0)),
                             E.divide(E.sin(safe), safe)), scalar=True)


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (the largest
    finite values of the dtype by default), in both parts of complex input.

    Args:
        x: an array (integers and bools are returned unchanged).
        copy (bool, default ``True``): ignored; the result is always a new array.
        nan (float, default ``0.0``), posinf, neginf (float, default ``None``).

    Example::

        >>> fnp.nan_to_num(np.array([np.nan, np.inf, 1.0]))
        array([0.00000000e+000, 1.79769313e+308, 1.00000000e+000])
    """
    a = array_operand(x)
    dt = aval(a).dtype
    if dtype_kind(dt) not in "fc":
        return to_result(a) if is_tracer(a) else np.array(a)

    def fix(part):
        info = np.finfo(aval(operand(part)).dtype)
        hi = info.max if posinf is None else posinf
        lo = info.min if neginf is None else neginf
        part = E.where(E.isnan(part), np.asarray(nan, info.dtype), part)
        part = E.where(E.equal(part, np.inf), np.asarray(hi, info.dtype), part)
        return E.where(E.equal(part, -np.inf), np.asarray(lo, info.dtype), part)
    if dt.kind == "c":
        return to_result(complex_from_parts(operand(fix(E.real(a))), operand(fix(E.imag(a))),
                                            dt))
    return to_result(fix(a))


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (or equal), as ``numpy.isclose``.

    Args:
        a, b: arrays.
        rtol (float, default ``1e-05``), atol (float, default ``1e-08``): tolerances.
        equal_nan (bool, default ``False``): whether NaN equals NaN.

    Example::

        >>> fnp.isclose(np.array([1.0, 1.1]), 1.0)
        array([ True, False])
    """
    x, y = (v if _is_py_number(v) else array_operand(v) for v in (a, b))
    if _is_py_number(y):
        y = float(y) if isinstance(y, int) else y
    else:
        y = asarray(y, dtype=np.result_type(aval(operand(y)).dtype, 1.0))
    with np.errstate(invalid="ignore"):
        close = E.less_equal(E.absolute(E.subtract(x, y)),
                             E.add(atol, E.multiply(rtol, E.absolute(y))))
        result = E.logical_or(E.logical_and(close, E.isfinite(y)), E.equal(x, y))
        if equal_nan:
            result = E.logical_or(result, E.logical_and(E.isnan(x), E.isnan(y)))
    return to_result(operand(result), scalar=True)


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether :func:`isclose` holds everywhere: a Python bool eagerly, a traced bool
    under a transform (branch on it with ``fc.lax.cond``).

    Example::

        >>> fnp.allclose([1.0, 2.0], [1.0, 2.0 + 1e-9])
        True
    """
    res = all_(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    return res if is_tracer(res) else bool(res)


def _diff_edge(x, v, axis):
    v = operand(v)
    if aval(v).ndim == 0:
        shape = list(aval(x).shape)
        shape[axis] = 1
        v = broadcast_view(v, tuple(shape))
    return v


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """The ``n``-th discrete difference along ``axis``, as ``numpy.diff`` (bool input
    gives ``!=`` of neighbours).

    Args:
        a: an array, at least 1-d.
        n (int, default ``1``): how many times to difference.
        axis (int, default ``-1``): the axis.
        prepend, append (default none): values joined to ``a`` along ``axis`` first
            (scalars are broadcast to one slice).

    Example::

        >>> fnp.diff(np.array([1, 4, 9, 16]), n=2)
        array([2, 2])
    """
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    x = array_operand(a)
    nd = aval(x).ndim
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, nd)
    if n == 0:
        return to_result(x)
    parts = []
    if prepend is not np._NoValue:
        parts.append(_diff_edge(x, prepend, axis))
    parts.append(x)
    if append is not np._NoValue:
        parts.append(_diff_edge(x, append, axis))
    if len(parts) > 1:
        x = operand(concatenate(parts, axis))
    hi = (slice(None),) * axis + (slice(1, None),)
    lo = (slice(None),) * axis + (slice(None, -1),)
    op = E.not_equal if aval(x).dtype == np.bool_ else E.subtract
    for _ in range(n):
        x = operand(op(x[hi], x[lo]))
    return to_result(x)


@implements(np.kron)
def kron(a, b):
    """The Kronecker product: blocks ``a[i, j] * b``, as ``numpy.kron`` (any ranks).

    Example::

        >>> fnp.kron(np.eye(2), np.array([[1, 2]]))
        array([[1., 2., 0., 0.],
               [0., 0., 1., 2.]])
    """
    x, y = array_operand(a), array_operand(b)
    sa, sb = aval(x).shape, aval(y).shape
    if not sa or not sb:
        return E.multiply(x, y)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + tuple(sa), (1,) * (nd - len(sb)) + tuple(sb)
    xa = reshape(x, tuple(d for s in sa for d in (s, 1)))
    yb = reshape(y, tuple(d for s in sb for d in (1, s)))
    return reshape(E.multiply(xa, yb), tuple(p * q for p, q in zip(sa, sb, strict=True)))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of vectors of 3 (or 2) components, as ``numpy.cross``.

    Args:
        a, b: arrays whose ``axisa``/``axisb`` axis has 2 or 3 components; the others
            broadcast.
        axisa, axisb (int, default ``-1``): the component axes of ``a`` and ``b``.
        axisc (int, default ``-1``): the component axis of the result (3-d products).
        axis (int, default ``None``): sets all three.

    Two 2-component vectors give the scalar z-component, as NumPy's (deprecated) 2-d
    cross product does.

    Example::

        >>> fnp.cross(np.array([1.0, 0, 0]), np.array([0.0, 1, 0]))
        array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = array_operand(a), array_operand(b)
    x = moveaxis(x, normalize_axis(axisa, aval(x).ndim), -1)
    y = moveaxis(y, normalize_axis(axisb, aval(operand(y)).ndim), -1)
    na, nb = aval(operand(x)).shape[-1], aval(operand(y)).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product (dimension "
                         f"must be 2 or 3), got {na} and {nb}")
    a0, a1, *a2 = (x[..., i] for i in range(na))
    b0, b1, *b2 = (y[..., i] for i in range(nb))
    z = E.subtract(E.multiply(a0, b1), E.multiply(a1, b0))
    if na == 2 and nb == 2:
        return z
    if na == 3 and nb == 3:
        cx = E.subtract(E.multiply(a1, b2[0]), E.multiply(a2[0], b1))
        cy = E.subtract(E.multiply(a2[0], b0), E.multiply(a0, b2[0]))
    elif na == 2:       # a's third component is 0
        cx, cy = E.multiply(a1, b2[0]), E.negative(E.multiply(a0, b2[0]))
    else:               # b's third component is 0
        cx, cy = E.negative(E.multiply(a2[0], b1)), E.multiply(a2[0], b0)
    out = stack(broadcast_arrays(cx, cy, z), axis=-1)
    return moveaxis(out, -1, normalize_axis(axisc, aval(operand(out)).ndim))


@implements(np.select)
def select(condlist, choicelist, default=0):
    """The element of the first ``choicelist`` entry whose condition holds, else
    ``default``, as ``numpy.select``.

    Args:
        condlist (sequence of bool arrays): the conditions.
        choicelist (sequence of arrays): one choice per condition.
        default (scalar or array, default ``0``): where no condition holds.

    Example::

        >>> x = np.arange(4)
        >>> fnp.select([x < 1, x > 2], [x, x * 10], -1)
        array([ 0, -1, -1, 30])
    """
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    choices = [array_operand(c) for c in choicelist]
    try:
        # a Python scalar default is weak (NEP 50), as in NumPy's select
        dt = result_type(result_type(*choices), default if _is_py_number(default)
                         else array_operand(default))
    except TypeError as err:
        raise TypeError(f"select: choicelist and default have no common dtype: {err}") \
            from None
    choices.append(array_operand(default))
    conds = [array_operand(c) for c in condlist]
    for i, c in enumerate(conds):
        if aval(c).dtype != np.bool_:
            raise TypeError(f"select: invalid entry {i} in condlist: should be boolean "
                            f"ndarray, got {aval(c).dtype}")
    result = asarray(choices[-1], dtype=dt)
    for c, v in zip(conds[::-1], choices[-2::-1], strict=True):
        result = E.where(c, asarray(v, dtype=dt), result)
    shape = np.broadcast_shapes(*(aval(o).shape for o in conds + choices))
    out = broadcast_view(result, shape)
    return out.copy() if isinstance(out, np.ndarray) else out


@implements(np.polyval)
def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by
    Horner's rule, as ``numpy.polyval``.

    Example::

        >>> fnp.polyval([3, 0, 1], 5)
        76
    """
    p, x = array_operand(p), array_operand(x)
    y = zeros_like(x)
    for i in range(aval(p).shape[0] if aval(p).ndim else 1):
        y = E.add(E.multiply(y, x), p[i] if aval(p).ndim else p)
    return y


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x``, as
    ``numpy.interp`` (float64, or complex128 for complex ``fp``).

    Differentiable in ``x``, ``xp`` and ``fp`` (at a knot, ``x`` takes the slope of the
    segment to its right).

    Args:
        x: where to evaluate.
        xp (1-d array): increasing x-coordinates of the points.
        fp (1-d array): their values, as long as ``xp``.
        left, right (default ``fp[0]``, ``fp[-1]``): the values below ``xp[0]`` and above
            ``xp[-1]``.
        period: not supported (``NotImplementedError``).

    Example::

        >>> fnp.interp(2.5, [1, 2, 3], [3, 2, 0])
        1.0
    """
    if period is not None:
        raise NotImplementedError("interp(..., period=...) is not supported on traced arrays")
    xps = asarray(xp, dtype=np.float64)
    fps = array_operand(fp)
    out_dt = np.complex128 if aval(fps).dtype.kind == "c" else np.float64
    fps = asarray(fps, dtype=out_dt)
    xv = asarray(x, dtype=np.float64)
    if aval(operand(xps)).ndim != 1 or aval(operand(fps)).ndim != 1:
        raise ValueError("interp: xp and fp must be 1-d sequences")
    n = aval(operand(xps)).shape[0]
    if n == 0:
        raise ValueError("interp: array of sample points is empty")
    if aval(operand(fps)).shape[0] != n:
        raise ValueError(f"interp: fp and xp are not of the same length ({n} and "
                         f"{aval(operand(fps)).shape[0]})")
    lo = fps[0] if left is None else asarray(left, dtype=out_dt)
    hi = fps[-1] if right is None else asarray(right, dtype=out_dt)
    if n == 1:
        inner = E.add(E.multiply(xv, 0), fps[0])
    else:
        j = E.clip(E.subtract(searchsorted(xps, xv, side="right"), 1), 0, n - 2)
        x0, x1 = take(xps, j), take(xps, E.add(j, 1))
        f0, f1 = take(fps, j), take(fps, E.add(j, 1))
        slope = E.divide(E.subtract(f1, f0), E.subtract(x1, x0))
        from_left = E.add(E.multiply(slope, E.subtract(xv, x0)), f0)
        from_right = E.add(E.multiply(slope, E.subtract(xv, x1)), f1)
        inner = E.where(E.isnan(from_left), from_right, from_left)
        inner = E.where(E.logical_and(E.isnan(inner), E.equal(f0, f1)), f0, inner)
        inner = E.where(E.equal(xv, x0), f0, inner)
        inner = E.where(E.equal(xv, xps[-1]), fps[-1], inner)
    out = E.where(E.less(xv, xps[0]), lo, E.where(E.greater(xv, xps[-1]), hi, inner))
    out = E.where(E.isnan(xv), np.asarray(np.nan, out_dt), out)
    return to_result(operand(out), scalar=True)


def _sorted_less(a, v, side):
    """``a[j] < v`` (``<=`` for side='right') in NumPy's sort order (NaN last)."""
    if side == "left":
        return E.logical_or(E.less(a, v), E.logical_and(E.isnan(v), E.logical_not(E.isnan(a))))
    return E.logical_or(E.less_equal(a, v), E.isnan(v))


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """Indices where ``v`` would be inserted into the sorted 1-d ``a`` to keep it sorted,
    as ``numpy.searchsorted`` (int64; NaN sorts last).

    Traced as a count of the elements of ``a`` before each ``v``: O(len(a) * v.size).

    Args:
        a: a sorted 1-d array (or sorted by ``sorter``).
        v: the values to insert.
        side (str, default ``'left'``): ``'left'`` (first suitable index) or ``'right'``.
        sorter (int array, default ``None``): indices that sort ``a``.

    Example::

        >>> fnp.searchsorted(np.array([1, 2, 3]), 2.5)
        np.int64(2)
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right' (got {side!r})")
    arr, vals = array_operand(a), array_operand(v)
    if aval(arr).ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got shape {aval(arr).shape}")
    if aval(arr).dtype.kind == "c" or aval(vals).dtype.kind == "c":
        raise TypeError("searchsorted: complex values are not supported on traced arrays")
    if sorter is not None:
        arr = take(arr, sorter)
    dt = np.result_type(aval(arr).dtype, aval(vals).dtype)
    arr, vals = asarray(arr, dtype=dt), asarray(vals, dtype=dt)
    before = _sorted_less(reshape(arr, (aval(operand(arr)).shape[0],) + (1,) * aval(vals).ndim),
                          vals, side)
    return sum_(before, axis=0, dtype=np.int64)


@implements(np.digitize)
def digitize(x, bins, right=False):
    """The index of the bin each ``x`` falls in, as ``numpy.digitize`` (int64).

    ``bins`` must be monotonic; traced bins are taken as increasing when
    ``bins[0] <= bins[-1]`` and decreasing otherwise (concrete bins are checked).

    Args:
        x: the values.
        bins (1-d array): the bin edges.
        right (bool, default ``False``): whether the right edge is inside a bin.

    Example::

        >>> fnp.digitize(np.array([0.5, 1.5]), np.array([0.0, 1.0, 2.0]))
        array([1, 2])
    """
    xv, b = array_operand(x), array_operand(bins)
    if aval(xv).dtype.kind == "c":
        raise TypeError("x may not be complex")
    if aval(b).ndim != 1:
        raise ValueError("digitize: object too deep for desired array (bins must be 1-d)")
    side = "left" if right else "right"
    n = aval(b).shape[0]
    if not is_tracer(b):
        mono = np.diff(b)
        if not (np.all(mono >= 0) or np.all(mono <= 0)):
            raise ValueError("bins must be monotonically increasing or decreasing")
        if n and b[0] > b[-1]:
            return E.subtract(n, searchsorted(b[::-1], xv, side=side))
        return searchsorted(b, xv, side=side)
    up = searchsorted(b, xv, side=side)
    if n == 0:
        return up
    down = E.subtract(n, searchsorted(b[::-1], xv, side=side))
    return E.where(E.less_equal(b[0], b[-1]), up, down)


@implements(np.bincount)
def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or sums of ``weights``) of each non-negative integer in the 1-d ``x``.

    The result's length is ``max(x) + 1`` (at least ``minlength``): on traced ``x`` that
    is unknown while tracing, so give ``length=`` (static, as in JAX); values at or
    beyond ``length`` are dropped. Eagerly without ``length`` it is NumPy's.

    Args:
        x: a 1-d array of non-negative integers.
        weights (array, default ``None``): one weight per element (float64 result).
        minlength (int, default ``0``): the least length of the result.
        length (int, default ``None``): the exact length of the result.

    Example::

        >>> fnp.bincount(np.array([0, 1, 1, 3]), length=5)
        array([1, 2, 0, 1, 0])
    """
    xv = array_operand(x)
    if aval(xv).ndim != 1:
        raise ValueError(f"bincount: x must be 1-d, got shape {aval(xv).shape}")
    if aval(xv).dtype.kind not in "biu":
        raise TypeError(f"bincount: x must be integers, got {aval(xv).dtype}")
    if length is None:
        if is_tracer(xv) or is_tracer(weights):
            raise TracerError(
                "bincount: the result's length (max(x) + 1) depends on traced values; pass "
                "length= (a static int) to fnp.bincount, e.g. fnp.bincount(x, length=10)")
        return np.bincount(xv, None if weights is None else np.asarray(weights), minlength)
    length = operator.index(length)
    if not is_tracer(xv) and xv.size and xv.min() < 0:
        raise ValueError("bincount: x must not hold negative values")
    hits = E.equal(reshape(xv, (aval(xv).shape[0], 1)), arange(length))
    if weights is None:
        return sum_(hits, axis=0, dtype=np.int64)
    w = E.multiply(array_operand(weights), 1.0)
    w = expand_dims(w, 1)
    return sum_(E.where(hits, w, 0.0), axis=0)


@implements(np.i0)
def i0(x):
    """The modified Bessel function of the first kind of order 0, as ``numpy.i0``
    (computed in float64 from ``exp(|x|) * i0e(x)`` and rounded once; integers give
    float64, complex input is refused as in NumPy).

    Example::

        >>> fnp.i0(np.array([0.0, 1.0]))
        array([1.        , 1.26606588])
    """
    xv = array_operand(x)
    dt = aval(xv).dtype
    if dt.kind == "c":
        raise TypeError("i0 not supported for complex values")
    wide = asarray(xv, dtype=np.float64)
    y = E.multiply(P.bessel_i0e.bind(operand(wide)), E.exp(E.absolute(wide)))
    return to_result(operand(asarray(y, dtype=dt if dtype_kind(dt) == "f" else np.float64)))
