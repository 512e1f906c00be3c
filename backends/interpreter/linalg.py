"""NumPy/SciPy implementations of the linear-algebra primitives (``ir/linalg.py``).

A failure NumPy reports as ``LinAlgError`` (a singular or non-positive-definite matrix,
no convergence) is raised again as ``LinAlgError`` naming the primitive and the shape.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Primitive
from functorch_core.ir.tables import Table

LinAlgError = np.linalg.LinAlgError


@contextlib.contextmanager
def _named(name, *arrays):
    try:
        yield
    except LinAlgError as e:
        shapes = " and ".join(str(a.shape) for a in arrays)
        raise LinAlgError(f"{name}: {e} (operand of shape {shapes})") from None


def _solve(a, b):
    with _named("solve", a, b):
        return np.linalg.solve(a, b)


def _tri_2d(a, b, lower, op, unit):
    """op(a) x = b for one matrix; op one of 'N', 'T', 'C' (conjugate transpose), 'conj'."""
    from scipy.linalg import solve_triangular
    if op == "conj":
        return np.conj(solve_triangular(a, np.conj(b), lower=lower, unit_diagonal=unit))
    return solve_triangular(a, b, trans=op, lower=lower, unit_diagonal=unit,
                            check_finite=False)


_RIGHT = {"N": "T", "T": "N", "C": "conj", "conj": "C"}   # op(a)^T as an op of a


def _triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    op = ("C" if conjugate_a else "T") if transpose_a else ("conj" if conjugate_a else "N")
    out = np.empty(b.shape, b.dtype)
    with _named("triangular_solve", a, b):
        for i in np.ndindex(a.shape[:-2]):
            if left_side:
                out[i] = _tri_2d(a[i], b[i], lower, op, unit_diagonal)
            else:       # x op(a) = b  <=>  op(a)^T x^T = b^T
                out[i] = _tri_2d(a[i], b[i].T, lower, _RIGHT[op], unit_diagonal).T
    return out


def _det(a):
    return np.linalg.det(a)


def _slogdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return [np.asarray(sign), np.asarray(logabsdet)]


def _slogdet_inv_t(a):
    with _named("slogdet_inv_t", a):
        inv = np.linalg.inv(a)
    return [*_slogdet(a), np.swapaxes(inv, -1, -2)]


def _cholesky(a, *, upper=False):
    with _named("cholesky", a):
        return np.linalg.cholesky(a, upper=upper)


def _lu(a):
    from scipy.linalg import lu_factor
    n = a.shape[-1]
    lu = np.empty(a.shape, a.dtype)
    pivots = np.empty(a.shape[:-1], np.int32)
    with np.errstate(all="ignore"):     # a singular matrix still factors (U has a zero)
        for i in np.ndindex(a.shape[:-2]):
            lu[i], pivots[i] = lu_factor(a[i], check_finite=False)
    return [lu, pivots, _permutation(pivots, n)]


def _permutation(pivots, permutation_size):
    perm = np.broadcast_to(np.arange(permutation_size, dtype=np.int32),
                           pivots.shape[:-1] + (permutation_size,)).copy()
    for i in np.ndindex(pivots.shape[:-1]):
        p = perm[i]
        for k, j in enumerate(pivots[i]):
            p[k], p[j] = p[j], p[k]
    return perm


def _qr(a, *, full_matrices):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q, r]


def _svd(a, *, full_matrices, compute_uv):
    with _named("svd", a):
        if not compute_uv:
            return [np.linalg.svd(a, compute_uv=False)]
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return [s, u, vh]


def _eigh(a, *, lower):
    with _named("eigh", a):
        w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    return [w, v]


def _eig(a, *, compute_v):
    c = P.complex_of(a.dtype)
    with _named("eig", a):
        if not compute_v:
            return [np.asarray(np.linalg.eigvals(a), c)]
        w, v = np.linalg.eig(a)
    return [np.asarray(w, c), np.asarray(v, c)]


def _sqrtm(a):
    """SciPy's Schur-method ``sqrtm`` (batched as SciPy batches; real input through the
    real Schur form), complex, without SciPy's warning on a singular or ill-conditioned
    matrix."""
    import warnings

    from scipy.linalg import sqrtm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(sqrtm(a), P.complex_of(a.dtype))


def _sylvester(a, b, c):
    from scipy.linalg import solve_sylvester
    out = np.empty(c.shape, c.dtype)
    with _named("sylvester", a, b, c):
        for i in np.ndindex(c.shape[:-2]):
            out[i] = solve_sylvester(a[i], b[i], c[i])
    return out


LINALG_IMPLS: Table[Primitive, Callable] = Table("interpreter: linalg", [
    (P.solve, _solve), (P.triangular_solve, _triangular_solve), (P.det, _det),
    (P.slogdet, _slogdet), (P.cholesky, _cholesky), (P.lu, _lu),
    (P.lu_pivots_to_permutation, _permutation), (P.qr, _qr), (P.svd, _svd), (P.eigh, _eigh),
    (P.eig, _eig), (P.slogdet_inv_t, _slogdet_inv_t), (P.sqrtm, _sqrtm),
    (P.sylvester, _sylvester),
])
