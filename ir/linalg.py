"""Dense linear algebra over the trailing two axes; every leading axis is a batch axis.

- ``solve(a, b)``: ``a^-1 b`` for a ``(..., n, n)`` and b ``(..., n, k)`` (linear in b).
- ``triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal)``:
  ``op(a)^-1 b`` (or ``b op(a)^-1``), reading only the ``lower``/upper triangle of a.
- ``det(a)``, ``slogdet(a) -> (sign, logabsdet)``.
- ``slogdet_inv_t(a) -> (sign, logabsdet, inv_t)``: slogdet's values and ``inv(a)^T`` from
  the same LU factors, the coefficient of their derivatives (``d log det = tr(a^-1 da)
  = sum(inv_t * da)``); a singular matrix is an error (it has no inverse).
- ``cholesky(a, upper=False)``: the lower factor ``L`` (``a = L L^H``), reading the lower
  triangle; ``upper=True``: the upper factor ``U`` (``a = U^H U``), reading the upper one.
- ``lu(a) -> (lu, pivots, permutation)``: ``a[..., permutation, :] = L @ U`` with L unit
  lower (below the diagonal of ``lu``) and U upper; LAPACK's 0-based row swaps ``pivots``.
- ``lu_pivots_to_permutation(pivots, permutation_size)``: the row order the swaps make.
- ``qr(a, full_matrices) -> (q, r)``; ``svd(a, full_matrices, compute_uv) -> (s, u, vh)``
  or ``(s,)``; ``eigh(a, lower) -> (w, v)`` reading one triangle (w ascending);
  ``eig(a, compute_v) -> (w, v)`` or ``(w,)``, complex.
- ``sqrtm(a)``: the principal square root (the Schur method: defective matrices too),
  complex; a real ``a``'s eigenvalues on the negative real axis have root ``+i sqrt|w|``
  (SciPy's real Schur form). ``sylvester(a, b, c)``: the complex ``y`` with
  ``a y + y b = c``.

Operands of two-operand primitives have equal leading axes (the API broadcasts).
"""

from __future__ import annotations

import numpy as np

from .catalogue import complex_of
from .catalogue import fail as _fail
from .catalogue import kinds_check as _kinds_check
from .catalogue import real_of as _real_of
from .catalogue import register as _register
from .core import AbstractArray


def _matrix(name, a, square=True):
    if a.ndim < 2:
        _fail(f"{name}: the operand must have at least two dimensions, got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        _fail(f"{name}: the last two dimensions must be square, got shape {a.shape}")
    _kinds_check(name, [a], "fc")


def _same(name, a, b):
    if a.dtype != b.dtype:
        raise TypeError(f"{name}: operand dtypes {a.dtype} and {b.dtype} differ")
    if a.shape[:-2] != b.shape[:-2]:
        _fail(f"{name}: batch dimensions of shapes {a.shape} and {b.shape} differ")


def _solve_rule(a, b):
    _matrix("solve", a)
    _matrix("solve", b, square=False)
    _same("solve", a, b)
    if b.shape[-2] != a.shape[-1]:
        _fail(f"solve: a of shape {a.shape} and b of shape {b.shape} do not match")
    return [b.strong()]


def _triangular_solve_rule(a, b, *, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal):
    _matrix("triangular_solve", a)
    _matrix("triangular_solve", b, square=False)
    _same("triangular_solve", a, b)
    m = b.shape[-2] if left_side else b.shape[-1]
    if m != a.shape[-1]:
        _fail(f"triangular_solve: a of shape {a.shape} and b of shape {b.shape} do not match "
              f"(left_side={left_side})")
    return [b.strong()]


def _det_rule(a):
    _matrix("det", a)
    return [AbstractArray(a.shape[:-2], a.dtype)]


def _slogdet_rule(a):
    _matrix("slogdet", a)
    return [AbstractArray(a.shape[:-2], a.dtype), AbstractArray(a.shape[:-2], _real_of(a.dtype))]


def _slogdet_inv_t_rule(a):
    _matrix("slogdet_inv_t", a)
    return [*_slogdet_rule(a), a.strong()]


def _cholesky_rule(a, *, upper=False):
    _matrix("cholesky", a)
    return [a.strong()]


def _lu_rule(a):
    _matrix("lu", a)
    ints = AbstractArray(a.shape[:-1], np.dtype(np.int32))
    return [a.strong(), ints, ints]


def _pivots_rule(pivots, *, permutation_size):
    if pivots.ndim < 1 or pivots.dtype != np.int32:
        _fail(f"lu_pivots_to_permutation: pivots must be int32 with at least one axis, got "
              f"{pivots}")
    if pivots.shape[-1] > permutation_size:
        _fail(f"lu_pivots_to_permutation: {pivots.shape[-1]} pivots for a permutation of "
              f"size {permutation_size}")
    return [AbstractArray(pivots.shape[:-1] + (permutation_size,), np.dtype(np.int32))]


def _qr_rule(a, *, full_matrices):
    _matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    lead = a.shape[:-2]
    return [AbstractArray(lead + (m, k), a.dtype), AbstractArray(lead + (k, n), a.dtype)]


def _svd_rule(a, *, full_matrices, compute_uv):
    _matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k, lead = min(m, n), a.shape[:-2]
    s = AbstractArray(lead + (k,), _real_of(a.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, AbstractArray(lead + (m, ku), a.dtype), AbstractArray(lead + (kv, n), a.dtype)]


def _eigh_rule(a, *, lower):
    _matrix("eigh", a)
    return [AbstractArray(a.shape[:-1], _real_of(a.dtype)), a.strong()]


def _eig_rule(a, *, compute_v):
    _matrix("eig", a)
    c = complex_of(a.dtype)
    w = AbstractArray(a.shape[:-1], c)
    return [w, AbstractArray(a.shape, c)] if compute_v else [w]


def _sqrtm_rule(a):
    _matrix("sqrtm", a)
    return [AbstractArray(a.shape, complex_of(a.dtype))]


def _sylvester_rule(a, b, c):
    for x in (a, b):
        _matrix("sylvester", x)
        _same("sylvester", x, c)
    _matrix("sylvester", c, square=False)
    _kinds_check("sylvester", [c], "c")
    if c.shape[-2:] != (a.shape[-1], b.shape[-1]):
        _fail(f"sylvester: a of shape {a.shape}, b of shape {b.shape} and c of shape "
              f"{c.shape} do not match")
    return [c.strong()]


solve = _register("solve", _solve_rule, "linalg")
triangular_solve = _register("triangular_solve", _triangular_solve_rule, "linalg")
det = _register("det", _det_rule, "linalg")
slogdet = _register("slogdet", _slogdet_rule, "linalg", multiple_results=True)
slogdet_inv_t = _register("slogdet_inv_t", _slogdet_inv_t_rule, "linalg", multiple_results=True)
cholesky = _register("cholesky", _cholesky_rule, "linalg")
lu = _register("lu", _lu_rule, "linalg", multiple_results=True)
lu_pivots_to_permutation = _register("lu_pivots_to_permutation", _pivots_rule, "linalg")
qr = _register("qr", _qr_rule, "linalg", multiple_results=True)
svd = _register("svd", _svd_rule, "linalg", multiple_results=True)
eigh = _register("eigh", _eigh_rule, "linalg", multiple_results=True)
eig = _register("eig", _eig_rule, "linalg", multiple_results=True)
sqrtm = _register("sqrtm", _sqrtm_rule, "linalg")
sylvester = _register("sylvester", _sylvester_rule, "linalg")
LINALG = [solve, triangular_solve, det, slogdet, cholesky, lu, lu_pivots_to_permutation, qr,
          svd, eigh, eig, slogdet_inv_t, sqrtm, sylvester]
