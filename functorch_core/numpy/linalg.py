"""``numpy.linalg`` over the linear-algebra primitives: ``fnp.linalg.solve``, or
``np.linalg.solve`` on a tracer.

Matrix functions work on the last two axes and batch over the others, as NumPy does;
results have NumPy's dtypes (float32 stays single precision, integers become float64).
Differences from NumPy, all forced by a graph having static dtypes and shapes: ``eig``
and ``eigvals`` always return complex arrays (NumPy returns real ones when every
eigenvalue of a real matrix is real), and ``lstsq`` returns the residuals whenever
``m > n`` (NumPy returns an empty array when the rank is below ``n``).
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple

import numpy as np

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from ._core import aval, cast, implements, normalize_axis, to_result
from ._creation import array_operand
from ._methods import _fnp  # the whole namespace, read at call time

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "eig", "eigvals", "norm", "matrix_norm", "vector_norm", "cond",
           "matrix_rank", "pinv", "lstsq", "matrix_power", "multi_dot", "tensorsolve",
           "tensorinv", "cross", "outer", "trace", "diagonal", "matmul", "vecdot",
           "matrix_transpose", "tensordot", "LinAlgError"]

LinAlgError = np.linalg.LinAlgError
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _float(name, a):
    """``a`` as an operand of an inexact dtype NumPy's linalg computes in."""
    x = array_operand(a)
    dt = aval(x).dtype
    if dt in dtypes.NARROW_FLOATS:
        raise TypeError(f"linalg.{name}: array type {dt} is unsupported in linalg (as in "
                        f"NumPy); convert it with x.astype(np.float32)")
    if dt.kind in "biu":
        return cast(x, np.float64)
    return x


def _stacked(name, x, square=True):
    shape = aval(x).shape
    if len(shape) < 2:
        raise LinAlgError(f"linalg.{name}: {len(shape)}-dimensional array given. Array must "
                          "be at least two-dimensional")
    if square and shape[-1] != shape[-2]:
        raise LinAlgError(f"linalg.{name}: Last 2 dimensions of the array must be square, "
                          f"got shape {shape}")
    return shape


def _common(*xs):
    dt = np.result_type(*(aval(x).dtype for x in xs))
    return [cast(x, dt) for x in xs]


def _mT(x):
    nd = len(aval(x).shape)
    return P.transpose.bind(x, permutation=(*range(nd - 2), nd - 1, nd - 2))


def _mH(x):
    return _mT(P.conj.bind(x) if aval(x).dtype.kind == "c" else x)


def _hermitian_from(x, lower):
    """The Hermitian matrix NumPy's routines read from one triangle of ``x``."""
    fnp = _fnp()
    strict = fnp.tril(x, -1) if lower else fnp.triu(x, 1)
    n = aval(x).shape[-1]
    diag = x * fnp.eye(n, dtype=aval(x).dtype)
    if aval(x).dtype.kind == "c":       # LAPACK reads the real part of the diagonal only
        diag = cast(fnp.real(diag), aval(x).dtype)
    return P.add.bind(P.add.bind(strict, _mH(strict)), diag)


def _broadcast_lead(a, b, a_core, b_core):
    """a and b broadcast to common leading axes (their last a_core/b_core axes kept)."""
    fnp = _fnp()
    sa, sb = aval(a).shape, aval(b).shape
    lead = np.broadcast_shapes(sa[:len(sa) - a_core], sb[:len(sb) - b_core])
    return (fnp.broadcast_to(a, lead + sa[len(sa) - a_core:]),
            fnp.broadcast_to(b, lead + sb[len(sb) - b_core:]))


# --- solves, inverses, determinants ----------------------------------------------------


@implements(np.linalg.solve)
def solve(a, b):
    """``numpy.linalg.solve``: ``x`` with ``a @ x == b``; a 1-D ``b`` is one vector, else
    a stack of matrices broadcast against ``a``.

    Args:
        a: ``(..., M, M)`` matrices.
        b: a ``(M,)`` vector or ``(..., M, K)`` matrices.

    Raises:
        LinAlgError: ``a`` is singular (also from compiled code) or not square.

    Example::

        >>> fnp.linalg.solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0]))
        array([1. , 0.5])
    """
    a, b = _common(_float("solve", a), _float("solve", b))
    sa = _stacked("solve", a)
    vector = len(aval(b).shape) == 1
    if vector:
        b = P.reshape.bind(b, new_sizes=aval(b).shape + (1,))
    sb = aval(b).shape
    if len(sb) < 2 or sb[-2] != sa[-1]:
        raise ValueError(f"linalg.solve: a of shape {sa} and b of shape "
                         f"{sb[:-1] if vector else sb} do not match (b's rows must be {sa[-1]})")
    a, b = _broadcast_lead(a, b, 2, 2)
    x = P.solve.bind(a, b)
    if vector:
        x = P.reshape.bind(x, new_sizes=aval(x).shape[:-1])
    return to_result(x)


@implements(np.linalg.inv)
def inv(a):
    """``numpy.linalg.inv``: the inverse of each ``(..., M, M)`` matrix (``LinAlgError`` if
    one is singular)."""
    fnp = _fnp()
    a = _float("inv", a)
    shape = _stacked("inv", a)
    eye = fnp.broadcast_to(fnp.eye(shape[-1], dtype=aval(a).dtype), shape)
    return to_result(P.solve.bind(a, eye))


@implements(np.linalg.det)
def det(a):
    """``numpy.linalg.det``: the determinant of each ``(..., M, M)`` matrix."""
    a = _float("det", a)
    _stacked("det", a)
    return to_result(P.det.bind(a), scalar=True)


@implements(np.linalg.slogdet)
def slogdet(a):
    """``numpy.linalg.slogdet``: ``SlogdetResult(sign, logabsdet)``, the determinant as
    ``sign * exp(logabsdet)`` without overflow (sign 0 and logabsdet -inf if singular)."""
    a = _float("slogdet", a)
    _stacked("slogdet", a)
    sign, logabsdet = P.slogdet.bind(a)
    return SlogdetResult(to_result(sign, scalar=True), to_result(logabsdet, scalar=True))


@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    """``numpy.linalg.tensorsolve``: ``x`` with ``tensordot(a, x, x.ndim) == b``."""
    fnp = _fnp()
    a, b = _common(_float("tensorsolve", a), _float("tensorsolve", b))
    if axes is not None:
        nd = len(aval(a).shape)
        axes = [normalize_axis(k, nd) for k in axes]
        rest = [k for k in range(nd) if k not in axes]
        a = P.transpose.bind(a, permutation=(*rest, *axes))
    sa, sb = aval(a).shape, aval(b).shape
    x_shape = sa[len(sb):]
    rows, cols = math.prod(sb), math.prod(x_shape)
    if rows != cols:
        raise LinAlgError(f"linalg.tensorsolve: a of shape {sa} and b of shape {sb} do not "
                          "make a square problem")
    x = solve(fnp.reshape(a, (rows, cols)), fnp.reshape(b, (rows,)))
    return to_result(fnp.reshape(x, x_shape))


@implements(np.linalg.tensorinv)
def tensorinv(a, ind=2):
    """``numpy.linalg.tensorinv``: the inverse of ``a`` as a map from its first ``ind`` axes
    to the rest."""
    fnp = _fnp()
    a = _float("tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive integer, got {ind}")
    shape = aval(a).shape
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise LinAlgError(f"linalg.tensorinv: the first {ind} axes of shape {shape} do not "
                          "hold as many elements as the others")
    return to_result(fnp.reshape(inv(fnp.reshape(a, (rows, cols))), shape[ind:] + shape[:ind]))


# --- factorizations ---------------------------------------------------------------------


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    """``numpy.linalg.cholesky``: ``L`` with ``a = L @ L^H`` (``upper=True``: ``U = L^H``),
    reading only the lower (upper) triangle; ``LinAlgError`` if not positive definite."""
    a = _float("cholesky", a)
    _stacked("cholesky", a)
    return to_result(P.cholesky.bind(a, upper=bool(upper)))


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    """``numpy.linalg.qr``: ``QRResult(Q, R)`` for ``mode`` ``'reduced'`` or ``'complete'``;
    ``'r'`` returns ``R`` alone. (``'raw'`` is not supported.)"""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: unrecognized mode {mode!r}" + (
            " ('raw' is not supported)" if mode == "raw" else ""))
    a = _float("qr", a)
    _stacked("qr", a, square=False)
    q, r = P.qr.bind(a, full_matrices=mode == "complete")
    return to_result(r) if mode == "r" else QRResult(to_result(q), to_result(r))


def _hermitian_svd(a, compute_uv):
    """The SVD of Hermitian matrices from their eigendecomposition (NumPy's method)."""
    fnp = _fnp()
    w, v = P.eigh.bind(a, lower=True)
    order = fnp.flip(fnp.argsort(fnp.abs(w), axis=-1), axis=-1)
    s = fnp.take_along_axis(fnp.abs(w), order, axis=-1)
    if not compute_uv:
        return s
    sign = fnp.take_along_axis(fnp.sign(w), order, axis=-1)
    u = fnp.take_along_axis(v, fnp.expand_dims(order, -2), axis=-1)
    vh = _mH(u * cast(fnp.expand_dims(sign, -2), aval(u).dtype))
    return s, u, vh


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``numpy.linalg.svd``: ``SVDResult(U, S, Vh)`` with ``a = U @ diag(S) @ Vh``, singular
    values descending; ``compute_uv=False`` returns ``S``. Derivatives of ``U``/``Vh`` need
    ``full_matrices=False`` for a non-square ``a``."""
    a = _float("svd", a)
    _stacked("svd", a, square=hermitian)
    if hermitian:
        out = _hermitian_svd(a, compute_uv)
    else:
        out = P.svd.bind(a, full_matrices=full_matrices, compute_uv=compute_uv)
        out = out[0] if not compute_uv else out
    if not compute_uv:
        return to_result(out)
    s, u, vh = out
    return SVDResult(to_result(u), to_result(s), to_result(vh))


@implements(np.linalg.svdvals)
def svdvals(x, /):
    """``numpy.linalg.svdvals``: the singular values, descending."""
    return svd(x, compute_uv=False)


def _uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.{name}: UPLO argument must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "L"


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):
    """``numpy.linalg.eigh``: ``EighResult(eigenvalues, eigenvectors)`` of Hermitian matrices
    (eigenvalues ascending), reading the ``UPLO`` triangle."""
    a = _float("eigh", a)
    _stacked("eigh", a)
    lower = _uplo("eigh", UPLO)
    w, v = P.eigh.bind(a, lower=lower)     # the primitive reads that triangle itself
    return EighResult(to_result(w), to_result(v))


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):
    """``numpy.linalg.eigvalsh``: the eigenvalues of Hermitian matrices, ascending."""
    return eigh(a, UPLO).eigenvalues


@implements(np.linalg.eig)
def eig(a):
    """``numpy.linalg.eig``: ``EigResult(eigenvalues, eigenvectors)``, always complex (see
    the module notes); eigenvectors have unit norm."""
    a = _float("eig", a)
    _stacked("eig", a)
    w, v = P.eig.bind(a, compute_v=True)
    return EigResult(to_result(w), to_result(v))


@implements(np.linalg.eigvals)
def eigvals(a):
    """``numpy.linalg.eigvals``: the eigenvalues, always complex."""
    a = _float("eigvals", a)
    _stacked("eigvals", a)
    return to_result(P.eig.bind(a, compute_v=False)[0])


# --- norms, condition numbers, ranks ------------------------------------------------------


def _vector_norm(x, axes, ord, keepdims):
    fnp = _fnp()
    abs_x = fnp.abs(x)
    if ord == np.inf:
        return fnp.max(abs_x, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return fnp.min(abs_x, axis=axes, keepdims=keepdims)
    if ord == 0:
        return fnp.sum(cast(P.ne.bind(abs_x, cast(0, aval(abs_x).dtype)), aval(abs_x).dtype),
                       axis=axes, keepdims=keepdims)
    if ord == 1:
        return fnp.sum(abs_x, axis=axes, keepdims=keepdims)
    if ord is None or ord == 2:
        sq = P.mul.bind(x, x) if aval(x).dtype.kind != "c" else \
            P.add.bind(P.mul.bind(P.real.bind(x), P.real.bind(x)),
                       P.mul.bind(P.imag.bind(x), P.imag.bind(x)))
        return fnp.sqrt(fnp.sum(sq, axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"linalg.norm: Invalid norm order '{ord}' for vectors")
    p = float(ord)
    return fnp.power(fnp.sum(fnp.power(abs_x, p), axis=axes, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x, row, col, ord, keepdims):
    fnp = _fnp()
    if ord in (None, "fro"):
        out = _vector_norm(x, (row, col), 2, keepdims)
    elif ord in ("nuc", 2, -2):
        moved = fnp.moveaxis(x, (row, col), (-2, -1))
        s = svd(moved, compute_uv=False)
        out = {"nuc": fnp.sum, 2: fnp.max, -2: fnp.min}[ord](s, axis=-1)
        if keepdims:
            out = fnp.expand_dims(out, tuple(sorted((row, col))))
    elif ord in (1, -1, np.inf, -np.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = fnp.sum(fnp.abs(x), axis=inner, keepdims=True)
        pick = fnp.max if ord in (1, np.inf) else fnp.min
        out = pick(sums, axis=outer, keepdims=True)
        if not keepdims:
            out = fnp.squeeze(out, axis=tuple(sorted((row, col))))
    else:
        raise ValueError(f"linalg.norm: Invalid norm order {ord!r} for matrices")
    return out


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """``numpy.linalg.norm``: vector norms over one axis, matrix norms over two (``'fro'``,
    ``'nuc'``, ``±1``, ``±2``, ``±inf``), the 2-norm of everything by default.

    Example::

        >>> fnp.linalg.norm(np.array([3.0, 4.0]))
        np.float64(5.0)
    """
    x = _float("norm", x)
    nd = len(aval(x).shape)
    if axis is None:
        if ord is None:
            fnp = _fnp()
            out = _vector_norm(fnp.ravel(x), 0, 2, False)
            if keepdims:
                out = fnp.reshape(out, (1,) * nd)
            return to_result(out, scalar=True)
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ValueError("linalg.norm: improper number of dimensions to norm "
                             f"(shape {aval(x).shape} with ord={ord!r} and axis=None)")
    elif isinstance(axis, int | np.integer):
        axis = (axis,)
    axis = tuple(normalize_axis(a, nd) for a in axis)
    if len(axis) == 1:
        return to_result(_vector_norm(x, axis[0], ord, keepdims), scalar=True)
    if len(axis) == 2:
        if axis[0] == axis[1]:
            raise ValueError("linalg.norm: duplicate axes given")
        return to_result(_matrix_norm(x, axis[0], axis[1], ord, keepdims), scalar=True)
    raise ValueError(f"linalg.norm: improper number of dimensions to norm (axis={axis})")


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """``numpy.linalg.matrix_norm``: :func:`norm` over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """``numpy.linalg.vector_norm``: a vector norm over ``axis`` (all axes by default, or a
    tuple of axes taken together)."""
    fnp = _fnp()
    x = _float("vector_norm", x)
    shape = aval(x).shape
    if axis is None:
        out = _vector_norm(fnp.ravel(x), 0, ord, False)
        return to_result(fnp.reshape(out, (1,) * len(shape)) if keepdims else out, scalar=True)
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    axes = tuple(normalize_axis(a, len(shape)) for a in axes)
    if len(axes) == 1:
        return to_result(_vector_norm(x, axes[0], ord, keepdims), scalar=True)
    rest = [k for k in range(len(shape)) if k not in axes]
    moved = fnp.reshape(fnp.transpose(x, (*rest, *axes)),
                        tuple(shape[k] for k in rest) + (-1,))
    out = _vector_norm(moved, len(rest), ord, False)
    if keepdims:
        out = fnp.reshape(out, tuple(1 if k in axes else shape[k] for k in range(len(shape))))
    return to_result(out, scalar=True)


@implements(np.linalg.cond)
def cond(x, p=None):
    """``numpy.linalg.cond``: the condition number in norm ``p`` (default 2, from singular
    values); ``inf`` for a singular matrix."""
    fnp = _fnp()
    x = _float("cond", x)
    _stacked("cond", x, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        r = norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    nan = fnp.logical_and(fnp.isnan(r), fnp.logical_not(fnp.any(fnp.isnan(x), axis=(-2, -1))))
    return to_result(fnp.where(nan, np.inf, r), scalar=True)


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """``numpy.linalg.matrix_rank``: the number of singular values above ``tol`` (default
    ``S.max() * max(M, N) * eps``, or ``S.max() * rtol``)."""
    fnp = _fnp()
    if rtol is not None and tol is not None:
        raise ValueError("linalg.matrix_rank: `tol` and `rtol` can't be both set.")
    A = _float("matrix_rank", A)
    shape = aval(A).shape
    if len(shape) < 2:
        return to_result(fnp.any(P.ne.bind(A, cast(0, aval(A).dtype))).astype(np.int64),
                         scalar=True)
    s = svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(shape[-2:]) * np.finfo(aval(s).dtype).eps
        tol = fnp.max(s, axis=-1, keepdims=True) * fnp.expand_dims(fnp.asarray(rtol), -1)
    else:
        tol = fnp.expand_dims(fnp.asarray(tol), -1)
    return to_result(fnp.sum(s > tol, axis=-1), scalar=True)


_NO_VALUE = object()


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    """``numpy.linalg.pinv``: the Moore-Penrose pseudo-inverse from the SVD, singular values
    below ``rcond * max(S)`` dropped (NumPy's defaults for ``rcond``/``rtol``).
    Differentiable where the rank is full."""
    fnp = _fnp()
    a = _float("pinv", a)
    shape = _stacked("pinv", a, square=hermitian)
    if rcond is None:
        rcond = 1e-15 if rtol is _NO_VALUE else \
            max(shape[-2:]) * np.finfo(aval(a).dtype).eps if rtol is None else rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("linalg.pinv: `rtol` and `rcond` can't be both set.")
    u, s, vh = svd(fnp.conj(a), full_matrices=False, hermitian=hermitian)
    cutoff = fnp.expand_dims(fnp.asarray(rcond), -1) * fnp.max(s, axis=-1, keepdims=True)
    large = s > cutoff
    s_inv = fnp.where(large, 1 / fnp.where(large, s, 1), 0).astype(aval(s).dtype)
    return to_result(fnp.matmul(fnp.swapaxes(vh, -1, -2),
                                fnp.expand_dims(s_inv, -1).astype(aval(u).dtype)
                                * fnp.swapaxes(u, -1, -2)))


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """``numpy.linalg.lstsq``: ``(x, residuals, rank, s)`` minimising ``|b - a x|`` through the
    SVD (singular values below ``rcond * max(s)`` dropped; default ``eps * max(M, N)``).
    ``residuals`` are returned whenever ``M > N`` (see the module notes)."""
    fnp = _fnp()
    a, b = _common(_float("lstsq", a), _float("lstsq", b))
    sa, sb = aval(a).shape, aval(b).shape
    if len(sa) != 2 or len(sb) not in (1, 2):
        raise LinAlgError(f"linalg.lstsq: a must be 2-d and b 1-d or 2-d, got shapes {sa} "
                          f"and {sb}")
    m, n = sa
    if sb[0] != m:
        raise LinAlgError(f"linalg.lstsq: Incompatible dimensions: a {sa}, b {sb}")
    if rcond is None:
        rcond = np.finfo(aval(a).dtype).eps * max(m, n)
    u, s, vh = svd(a, full_matrices=False)
    large = s > rcond * fnp.max(s)
    s_inv = fnp.where(large, 1 / fnp.where(large, s, 1), 0).astype(aval(a).dtype)
    uh_b = fnp.matmul(fnp.conj(fnp.swapaxes(u, 0, 1)), b)
    scaled = uh_b * (s_inv if len(sb) == 1 else fnp.expand_dims(s_inv, -1))
    x = fnp.matmul(fnp.conj(fnp.swapaxes(vh, 0, 1)), scaled)
    rank = fnp.sum(large).astype(np.int32)
    if m > n:
        r = b - fnp.matmul(a, x)
        resid = fnp.sum(fnp.abs(r) ** 2, axis=0)
        resid = fnp.reshape(resid, (1,)) if len(sb) == 1 else resid
    else:
        resid = fnp.zeros((0,), np.finfo(aval(a).dtype).dtype)
    return to_result(x), to_result(resid), to_result(rank, scalar=True), to_result(s)


# --- products ---------------------------------------------------------------------------


@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """``numpy.linalg.matrix_power``: ``a`` to the integer power ``n`` by repeated squaring
    (``n < 0`` inverts first; ``n == 0`` gives identities)."""
    fnp = _fnp()
    x = array_operand(a)
    shape = _stacked("matrix_power", x)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("linalg.matrix_power: exponent must be an integer") from None
    if n == 0:
        return to_result(fnp.broadcast_to(fnp.eye(shape[-1], dtype=aval(x).dtype), shape))
    if n < 0:
        x, n = inv(x), -n
    result, power = None, x
    while n:
        if n & 1:
            result = power if result is None else fnp.matmul(result, power)
        n >>= 1
        if n:
            power = fnp.matmul(power, power)
    return to_result(result)


def _chain_order(dims):
    """The cheapest parenthesisation of a matrix chain with ``dims`` (n + 1 sizes)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    """``numpy.linalg.multi_dot``: the product of a chain of matrices in the order with the
    fewest scalar multiplications (the first and last may be 1-D)."""
    fnp = _fnp()
    if out is not None:
        raise NotImplementedError("linalg.multi_dot(..., out=...) is not supported")
    xs = [array_operand(x) for x in arrays]
    if len(xs) < 2:
        raise ValueError("linalg.multi_dot: expecting at least two arrays.")
    if len(xs) == 2:
        return to_result(fnp.dot(xs[0], xs[1]))
    first_1d, last_1d = len(aval(xs[0]).shape) == 1, len(aval(xs[-1]).shape) == 1
    if first_1d:
        xs[0] = fnp.expand_dims(xs[0], 0)
    if last_1d:
        xs[-1] = fnp.expand_dims(xs[-1], -1)
    for k, x in enumerate(xs):
        if len(aval(x).shape) != 2:
            raise ValueError(f"linalg.multi_dot: array {k} has shape {aval(x).shape}; the "
                             "inner arrays must be 2-d")
    split = _chain_order([aval(xs[0]).shape[0]] + [aval(x).shape[1] for x in xs])

    def product(i, j):
        if i == j:
            return xs[i]
        k = split[i][j]
        return fnp.dot(product(i, k), product(k + 1, j))

    result = product(0, len(xs) - 1)
    if first_1d:
        result = fnp.squeeze(result, 0)
    if last_1d:
        result = fnp.squeeze(result, -1)
    return to_result(result, scalar=True)


@implements(np.linalg.cross)
def cross(x1, x2, /, *, axis=-1):
    """``numpy.linalg.cross``: the cross product of (arrays of) 3-element vectors."""
    fnp = _fnp()
    a, b = array_operand(x1), array_operand(x2)
    sa, sb = aval(a).shape, aval(b).shape
    if not sa or not sb or sa[axis] != 3 or sb[axis] != 3:
        raise ValueError(f"linalg.cross: both input arrays must be (arrays of) 3-dimensional "
                         f"vectors, but they have shapes {sa} and {sb} along axis {axis}")
    a, b = fnp.moveaxis(a, axis, -1), fnp.moveaxis(b, axis, -1)
    a0, a1, a2 = (a[..., k] for k in range(3))
    b0, b1, b2 = (b[..., k] for k in range(3))
    out = fnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return to_result(fnp.moveaxis(out, -1, axis))


@implements(np.linalg.outer)
def outer(x1, x2, /):
    """``numpy.linalg.outer``: the outer product of two 1-D arrays."""
    fnp = _fnp()
    a, b = array_operand(x1), array_operand(x2)
    if len(aval(a).shape) != 1 or len(aval(b).shape) != 1:
        raise ValueError(f"linalg.outer: input arrays must be one-dimensional, got shapes "
                         f"{aval(a).shape} and {aval(b).shape}")
    return to_result(fnp.outer(a, b))


@implements(np.linalg.trace)
def trace(x, /, *, offset=0, dtype=None):
    """``numpy.linalg.trace``: the sum along the diagonals of the last two axes."""
    return _fnp().trace(x, offset, -2, -1, dtype)


@implements(np.linalg.diagonal)
def diagonal(x, /, *, offset=0):
    """``numpy.linalg.diagonal``: the diagonals of the last two axes."""
    return _fnp().diagonal(x, offset, -2, -1)


@implements(np.linalg.matmul)
def matmul(x1, x2, /):
    """``numpy.linalg.matmul``: ``numpy.matmul``."""
    return _fnp().matmul(x1, x2)


@implements(np.linalg.vecdot)
def vecdot(x1, x2, /, *, axis=-1):
    """``numpy.linalg.vecdot``: :func:`functorch_core.numpy.vecdot` (NumPy's result dtypes:
    an ``int8`` product is ``int8``, a bool one ``bool``)."""
    return _fnp().vecdot(x1, x2, axis=axis)


@implements(np.linalg.matrix_transpose)
def matrix_transpose(x, /):
    """``numpy.linalg.matrix_transpose``: the last two axes swapped."""
    x = array_operand(x)
    if len(aval(x).shape) < 2:
        raise ValueError(f"linalg.matrix_transpose: input array must be at least 2-dimensional, "
                         f"got shape {aval(x).shape}")
    return to_result(_mT(x))


@implements(np.linalg.tensordot)
def tensordot(x1, x2, /, *, axes=2):
    """``numpy.linalg.tensordot``: ``numpy.tensordot``."""
    return _fnp().tensordot(x1, x2, axes)
