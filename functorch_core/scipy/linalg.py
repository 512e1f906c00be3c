"""A subset of ``scipy.linalg``, traceable and differentiable: triangular, Cholesky and LU
solves, ``lu`` (rectangular too), ``solve_sylvester``, ``solve_continuous_lyapunov``,
``solve_banded``, ``expm`` (its derivative is the Fréchet derivative), ``block_diag`` and
``eigh`` (standard and generalized, ``subset_by_index``; ``subset_by_value`` on concrete
arrays) and ``sqrtm``.
Arguments SciPy uses for memory or input checking (``overwrite_*``, ``check_finite``) are
accepted and ignored.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..lax import cond, scan
from ..numpy.internal import array_operand, aval, cast, is_tracer, to_result
from ..numpy.internal import conj_transpose as _mH
from ..numpy.internal import hermitian_from as _hermitian_from
from ..numpy.internal import linalg_float as _float
from ..numpy.internal import linalg_stacked as _stacked
from ._matrix_equations import solve_banded, solve_continuous_lyapunov, solve_sylvester
from ._sqrtm import sqrtm

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "lu",
           "expm", "sqrtm", "block_diag", "eigh", "cholesky", "solve", "inv", "det",
           "solve_sylvester", "solve_continuous_lyapunov", "solve_banded"]

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def _as_matrix(b):
    """b as (..., n, k) and whether it was a vector."""
    if len(aval(b).shape) == 1:
        return P.reshape.bind(b, new_sizes=aval(b).shape + (1,)), True
    return b, False


def _tri(a, b, lower, trans, unit_diagonal, name):
    a, b = _float(name, a), _float(name, b)
    dt = np.result_type(aval(a).dtype, aval(b).dtype)
    a, b = cast(a, dt), cast(b, dt)
    _stacked(name, a)
    if trans not in _TRANS:
        raise ValueError(f"{name}: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    transpose_a, conjugate_a = _TRANS[trans]
    b2, vector = _as_matrix(b)
    if aval(b2).shape[-2] != aval(a).shape[-1]:
        raise ValueError(f"{name}: shapes of a {aval(a).shape} and b {aval(b).shape} are "
                         "incompatible")
    x = P.triangular_solve.bind(a, b2, left_side=True, lower=bool(lower),
                                transpose_a=transpose_a, conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
    return P.reshape.bind(x, new_sizes=aval(b).shape) if vector else x


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``scipy.linalg.solve_triangular``: ``x`` with ``op(a) x = b``, reading one triangle.

    Args:
        a: an ``(M, M)`` triangular matrix.
        b: ``(M,)`` or ``(M, K)``.
        trans (default ``0``): ``0``/``'N'``, ``1``/``'T'`` or ``2``/``'C'`` for ``a``,
            ``a^T`` or ``a^H``.
        lower (bool, default ``False``): read the lower triangle.
        unit_diagonal (bool, default ``False``): take the diagonal as ones.

    Example::

        >>> solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]),
        ...                  lower=True)
        array([1., 2.])
    """
    return to_result(_tri(a, b, lower, trans, unit_diagonal, "solve_triangular"))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: the upper factor (``lower=True``: the lower one)."""
    return fnp.linalg.cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cho_factor``: ``(c, lower)`` for :func:`cho_solve`; ``c`` holds the factor
    in one triangle and zeros in the other (SciPy leaves arbitrary values there)."""
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: ``x`` with ``a x = b`` from ``cho_factor(a)``."""
    c, lower = c_and_lower
    y = _tri(c, b, lower, 0 if lower else 2, False, "cho_solve")
    return to_result(_tri(c, y, lower, 2 if lower else 0, False, "cho_solve"))


def lu_factor(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.lu_factor``: ``(lu, piv)``, LAPACK's packed factors and 0-based row
    swaps (int32)."""
    a = _float("lu_factor", a)
    _stacked("lu_factor", a)
    lu_, piv, _ = P.lu.bind(a)
    return to_result(lu_), to_result(piv)


def _rows(x, perm):
    return fnp.take_along_axis(x, fnp.expand_dims(perm, -1), axis=-2)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``scipy.linalg.lu_solve``: ``x`` with ``op(a) x = b`` from ``lu_factor(a)`` (``trans``
    as in :func:`solve_triangular`)."""
    lu_, piv = lu_and_piv
    lu_ = _float("lu_solve", lu_)
    n = aval(lu_).shape[-1]
    perm = P.lu_pivots_to_permutation.bind(cast(array_operand(piv), np.int32),
                                           permutation_size=n)
    b = cast(_float("lu_solve", b), np.result_type(aval(lu_).dtype, aval(_float("lu_solve",
                                                                               b)).dtype))
    b2, vector = _as_matrix(b)
    if trans in (0, "N"):
        y = _tri(lu_, _rows(b2, perm), True, 0, True, "lu_solve")
        x = _tri(lu_, y, False, 0, False, "lu_solve")
    else:       # a = P^T L U, so op(a) x = b is op(U) op(L) P x = b
        z = _tri(lu_, b2, False, trans, False, "lu_solve")
        w = _tri(lu_, z, True, trans, True, "lu_solve")
        x = _rows(w, fnp.argsort(perm, axis=-1))
    return to_result(P.reshape.bind(x, new_sizes=aval(b).shape) if vector else x)


def _real_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else (
        np.dtype(np.float64) if dt.kind == "c" else dt)


def _lu_rectangular(a):
    """LU with partial pivoting of ``(..., M, N)`` matrices by ``min(M, N)`` traced
    elimination steps, choosing pivots as LAPACK's ``getrf`` (the first largest ``|x|``,
    ``|re| + |im|`` if complex): ``(packed, perm)`` with ``a[..., perm, :] = L @ U``."""
    *batch, m, n = aval(a).shape
    rows = np.arange(m)
    perm = fnp.broadcast_to(fnp.arange(m, dtype=np.int32), (*batch, m))
    for j in range(min(m, n)):
        col = a[..., j:, j]
        mag = fnp.abs(fnp.real(col)) + fnp.abs(fnp.imag(col)) if aval(a).dtype.kind == "c" \
            else fnp.abs(col)
        piv = fnp.expand_dims(fnp.argmax(mag, axis=-1) + j, -1)
        idx = fnp.where(rows == j, piv, fnp.where(rows == piv, j, rows))
        a = fnp.take_along_axis(a, fnp.expand_dims(idx, -1), axis=-2)
        perm = fnp.take_along_axis(perm, idx.astype(np.int32), axis=-1)
        if j + 1 == m:
            break
        pivot = a[..., j:j + 1, j]
        below = a[..., j + 1:, j]
        zero = pivot == 0      # a zero column: LAPACK leaves it unscaled
        low = fnp.where(zero, below, below / fnp.where(zero, fnp.ones_like(pivot), pivot))
        trailing = a[..., j + 1:, j + 1:] - low[..., :, None] * a[..., j:j + 1, j + 1:]
        lower_rows = fnp.concatenate([a[..., j + 1:, :j], low[..., None], trailing], axis=-1)
        a = fnp.concatenate([a[..., :j + 1, :], lower_rows], axis=-2)
    return a, perm


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """``scipy.linalg.lu``: ``(p, l, u)`` with ``a = p @ l @ u`` by LU with partial
    pivoting.

    Args:
        a: ``(..., M, N)`` matrices (any ``M``, ``N``); integers become float64.
        permute_l (bool, default ``False``): return ``(p @ l, u)``.
        p_indices (bool, default ``False``): return ``p`` as int32 row indices, with
            ``a = l[p] @ u``.

    Returns:
        ``p`` ``(..., M, M)`` (in ``a``'s real dtype), ``l`` ``(..., M, K)`` unit lower
        trapezoidal and ``u`` ``(..., K, N)`` upper trapezoidal, ``K = min(M, N)``. Square
        matrices use the ``lu`` primitive (LAPACK); rectangular ones ``K`` traced elimination
        steps with LAPACK's pivot choice, differentiable (away from pivot ties) as any
        composition.

    Example::

        >>> p, l, u = lu(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        >>> l.shape, u.shape
        ((3, 2), (2, 2))
    """
    a = _float("lu", a)
    shape = aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"lu: a must be at least 2-D, got shape {shape}")
    m, n = shape[-2:]
    k = min(m, n)
    dt = aval(a).dtype
    if m == n:
        packed, _, perm = P.lu.bind(a)
    else:
        packed, perm = _lu_rectangular(a)
    low = fnp.tril(packed[..., :, :k], -1) + fnp.eye(m, k, dtype=dt)
    up = fnp.triu(packed[..., :k, :])
    inverse = fnp.argsort(perm, axis=-1).astype(np.int32)
    if permute_l:
        return to_result(_rows(low, inverse)), to_result(up)
    if p_indices:
        return to_result(inverse), to_result(low), to_result(up)
    eye = fnp.eye(m, dtype=_real_dtype(dt))
    p = fnp.swapaxes(fnp.take(eye, perm, axis=0), -1, -2)
    return to_result(p), to_result(low), to_result(up)


# --- expm: scaling and squaring with the degree-13 Padé approximant (Higham 2005) -----------

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152
_MAX_SQUARINGS = 128     # a 1-norm up to ~1.8e39; beyond it the result is NaN, not wrong


def _expm(a):
    """Plain traced ops only (the squarings a scan of conds), so every transform applies:
    the derivative is the Fréchet derivative of the algorithm itself."""
    n = aval(a).shape[-1]
    eye = fnp.broadcast_to(fnp.eye(n, dtype=aval(a).dtype), aval(a).shape)
    norm = fnp.max(fnp.sum(fnp.abs(a), axis=-2), axis=-1)
    need = fnp.maximum(0, fnp.ceil(fnp.log2(fnp.maximum(norm, 1e-300) / _THETA13)))
    need = fnp.max(need)        # one count for a whole batch
    squarings = fnp.minimum(need, _MAX_SQUARINGS).astype(np.int32)
    x = a * cast(fnp.exp2(-squarings.astype(aval(norm).dtype)), aval(a).dtype)
    b = _PADE13
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2
             + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 \
        + b[0] * eye
    r = fnp.linalg.solve(v - u, v + u)

    def step(r, i):
        return cond(i < squarings, lambda m: m @ m, lambda m: m, r), None

    r, _ = scan(step, r, np.arange(_MAX_SQUARINGS, dtype=np.int32))
    return fnp.where(need > _MAX_SQUARINGS, fnp.full_like(r, np.nan), r)


def expm(A):
    """``scipy.linalg.expm``: the matrix exponential of ``(..., M, M)`` matrices, by scaling
    and squaring with the degree-13 Padé approximant. Differentiable to any order (the
    derivative is the Fréchet derivative ``L(A, E)``); a 1-norm above ~1.8e39 gives NaN.

    Example::

        >>> expm(np.zeros((2, 2)))
        array([[1., 0.],
               [0., 1.]])
    """
    a = _float("expm", A)
    _stacked("expm", a)
    return to_result(_expm(a))


def block_diag(*arrs):
    """``scipy.linalg.block_diag``: the arrays (scalars and 1-D count as one row) on the
    diagonal of a zero matrix."""
    if not arrs:
        return np.empty((1, 0))
    mats = []
    for k, x in enumerate(arrs):
        x = array_operand(x)
        nd = len(aval(x).shape)
        if nd > 2:
            raise ValueError(f"block_diag: argument {k} has shape {aval(x).shape}; arguments "
                             "must have at most 2 dimensions")
        mats.append(fnp.atleast_2d(x))
    dt = np.result_type(*(aval(m).dtype for m in mats))
    cols = sum(aval(m).shape[1] for m in mats)
    rows, at = [], 0
    for m in mats:
        _, c = aval(m).shape
        rows.append(fnp.pad(cast(m, dt), ((0, 0), (at, cols - at - c))))
        at += c
    return to_result(fnp.concatenate(rows, axis=0))


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """``scipy.linalg.eigh``: eigenvalues (ascending) and eigenvectors of a Hermitian ``a``,
    or of the generalized problem ``a v = w b v`` (``type=1``, ``b`` positive definite, vectors
    ``b``-orthonormal).

    Args:
        a: ``(..., M, M)`` Hermitian matrices (only the ``lower``/upper triangle is read).
        b (default ``None``): positive definite matrices of the generalized problem.
        lower (bool, default ``True``): read the lower triangle.
        eigvals_only (bool, default ``False``): return only the eigenvalues.
        subset_by_index (default ``None``): ``(lo, hi)`` keeps eigenvalues ``lo..hi``
            inclusive (by ascending position).
        subset_by_value (default ``None``): ``(lo, hi)`` keeps the eigenvalues in the
            half-open interval ``(lo, hi]``. How many that is depends on the values, so this
            works on concrete arrays only: under ``jit``, ``grad``, ``vmap`` (any trace) it
            raises ``TypeError``; use ``subset_by_index`` there. For a batch, every matrix
            must keep the same number of eigenvalues.
        type (default ``1``): only ``1`` (``a v = w b v``) is supported.

    Other arguments are accepted and ignored (``driver``: the standard problem uses
    ``syevd``/``heevd``).

    Example::

        >>> eigh(np.diag([1.0, 2.0, 3.0, 4.0]), subset_by_value=(1, 3), eigvals_only=True)
        array([2., 3.])
    """
    if type != 1:
        raise NotImplementedError("eigh: type=2/3 are not supported")
    if subset_by_value is not None:
        if subset_by_index is not None:
            raise ValueError("eigh: Either index or value subset can be requested.")
        if any(is_tracer(x) for x in (a, b, *subset_by_value)):
            raise TypeError("eigh: subset_by_value keeps a number of eigenvalues that depends "
                            "on their values, which a traced function cannot return (its "
                            "output shapes must be static); use subset_by_index=(lo, hi) "
                            "under jit/grad/vmap, or call eigh on concrete arrays")
        lo, hi = (float(x) for x in subset_by_value)
        if not lo < hi:
            raise ValueError(f"eigh: subset_by_value bounds must satisfy low < high, got "
                             f"low={lo}, high={hi}")
    a = _float("eigh", a)
    _stacked("eigh", a)
    if b is None:
        w, v = P.eigh.bind(a, lower=lower)
    else:
        herm = _hermitian_from(a, lower)
        bm = _float("eigh", b)
        chol = fnp.linalg.cholesky(bm, upper=not lower)
        low = chol if lower else _mH(chol)
        c = _tri(low, _mH(_tri(low, herm, True, 0, False, "eigh")), True, 0, False, "eigh")
        w, y = P.eigh.bind(c, lower=True)
        v = _tri(low, y, True, 2, False, "eigh")
    if subset_by_index is not None:
        lo, hi = (int(i) for i in subset_by_index)
        n = aval(a).shape[-1]
        if not 0 <= lo <= hi < n:
            raise ValueError(f"eigh: subset_by_index {subset_by_index!r} out of range for "
                             f"{n} eigenvalues")
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    elif subset_by_value is not None:
        w, v = _by_value(np.asarray(to_result(w)), np.asarray(to_result(v)), lo, hi)
    return to_result(w) if eigvals_only else (to_result(w), to_result(v))


def _by_value(w, v, lo, hi):
    """The eigenvalues in ``(lo, hi]`` (a run of the ascending ``w``) and their vectors."""
    keep = (w > lo) & (w <= hi)
    counts = keep.sum(axis=-1)
    if counts.size and np.any(counts != counts.flat[0]):
        raise ValueError(f"eigh: subset_by_value=({lo}, {hi}) keeps {counts.min()} to "
                         f"{counts.max()} eigenvalues across the batch of shape "
                         f"{w.shape[:-1]}; a batch must keep the same number")
    k = int(counts.flat[0]) if counts.size else 0
    start = np.argmax(keep, axis=-1)[..., None] if k else np.zeros(w.shape[:-1] + (1,), int)
    idx = start + np.arange(k)
    return (np.take_along_axis(w, idx, axis=-1),
            np.take_along_axis(v, idx[..., None, :], axis=-1))


solve = fnp.linalg.solve
inv = fnp.linalg.inv
det = fnp.linalg.det
