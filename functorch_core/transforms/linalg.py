"""Rules of the linear-algebra primitives (``ir/linalg.py``) for jvp, transpose and vmap.

The jvp rules are the matrix identities (for ``X = f(A)`` with tangent ``dA``):

- solve: ``dX = A^-1 (dB - dA X)``; det: ``d det = det tr(A^-1 dA)``; slogdet: the
  real part of ``tr(A^-1 dA)`` (and its imaginary part rotates the sign). Both take
  ``tr(A^-1 dA) = sum(W * dA)`` with ``W = A^-T`` from ``slogdet_inv_t``, which shares
  one LU between the values and W (its own: ``dW = -W dA^T W``): in reverse mode the
  coefficient of an elementwise product, where ``solve(A, dA)`` transposed into a second
  LU, a solve against the identity and a transposed copy.
- cholesky (A Hermitian, read from its lower triangle, as is dA): ``dL = L Phi(L^-1 dA
  L^-H)``, Phi the lower triangle with the diagonal halved; the upper factor (read from
  the upper triangle) ``U = L^H`` for the lower factor L of ``A^H``: ``dU = dL^H``.
- eigh (A Hermitian, read from one triangle, as is dA): ``dw = Re diag(V^H dA V)``,
  ``dV = V (F * V^H dA V)`` with ``F_ij = 1/(w_j - w_i)``.
- svd (thin): ``dS = U^H dA V`` gives ``ds = Re diag(dS)``; ``dU``/``dV`` by the
  ``1/(s_j^2 - s_i^2)`` formulas plus the projections off the range for non-square A.
- lu (``P A = L U``): with ``X = L^-1 P dA U^-1``, ``dL = L tril(X, -1)``, ``dU = triu(X) U``.
- qr (m >= n): with ``C = Q^H dA R^-1``, ``dQ = Q (W - C) + dA R^-1``, ``dR = (C - W) R``
  where W is the skew-Hermitian part of ``tril(C, -1)`` (plus ``i Im diag C``).
- eig: ``dw = diag(V^-1 dA V)``, ``dV = V C`` with ``C_ij = (V^-1 dA V)_ij / (w_j - w_i)``
  off the diagonal and ``C_kk`` chosen so that ``v_k^H dv_k = 0`` (unit-norm vectors).
- sqrtm: ``X dX + dX X = dA``, a ``sylvester``; sylvester (``A Y + Y B = C``): ``dY``
  solves ``A dY + dY B = dC - dA Y - Y dB``.

Repeated eigen- or singular values give infinite or NaN derivatives of the vectors, as
in JAX and PyTorch. ``solve`` and ``triangular_solve`` are linear in ``b``, ``sylvester``
in ``c``; their transposes solve with the transposed matrices (the pairing is
``Re(sum(a * b))``).
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import Lit, Primitive
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import Table

from .batching import BatchRule, _axis_size, batch_at, moveaxis
from .jvp import JvpRule, Zero, instantiate, is_zero, tangent_aval, zero_rule
from .jvp import const as _c
from .transpose import TransposeRule, is_linear

JVP_RULES: Table[Primitive, JvpRule] = Table("linalg.py: jvp")
TRANSPOSE_RULES: Table[Primitive, TransposeRule] = Table("linalg.py: transpose")
BATCH_RULES: Table[Primitive, BatchRule] = Table("linalg.py: batching")

# --- helpers over the trailing two axes ---------------------------------------------


def _nd(x):
    return x.aval.ndim


def _is_complex(x):
    return x.aval.dtype.kind == "c"


def _mm(a, b):
    nd = _nd(a)
    batch = tuple(range(nd - 2))
    return P.dot_general.bind(a, b, dimension_numbers=(((nd - 1,), (nd - 2,)), (batch, batch)))


def _T(x):
    nd = _nd(x)
    return P.transpose.bind(x, permutation=(*range(nd - 2), nd - 1, nd - 2))


def _conj(x):
    return P.conj.bind(x) if _is_complex(x) else x


def _H(x):
    return _T(_conj(x))


def _const_matrix(m, like):
    """The (n, m) NumPy matrix ``m`` broadcast over ``like``'s leading axes."""
    nd = _nd(like)
    shape = like.aval.shape[:-2] + m.shape
    return P.broadcast_in_dim.bind(Lit(np.asarray(m, like.aval.dtype)), shape=shape,
                                   broadcast_dimensions=(nd - 2, nd - 1))


def _masked(x, m):
    return P.mul.bind(x, _const_matrix(m, x))


def _diag(x):
    """The diagonal of square matrices: (..., n, n) -> (..., n)."""
    n = x.aval.shape[-1]
    return P.reduce_sum.bind(_masked(x, np.eye(n)), axes=(_nd(x) - 1,))


def _rows(v, n):
    """v (..., k) as (..., n, k): every row is v (element (i, j) = v_j)."""
    nd = _nd(v)
    return P.broadcast_in_dim.bind(v, shape=v.aval.shape[:-1] + (n, v.aval.shape[-1]),
                                   broadcast_dimensions=(*range(nd - 1), nd))


def _cols(v, n):
    """v (..., k) as (..., k, n): every column is v (element (i, j) = v_i)."""
    nd = _nd(v)
    return P.broadcast_in_dim.bind(v, shape=v.aval.shape + (n,),
                                   broadcast_dimensions=tuple(range(nd)))


def _as(x, dtype):
    return x if x.aval.dtype == dtype else P.convert.bind(x, new_dtype=np.dtype(dtype))


def _reciprocal_gaps(w, like_dtype):
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it, of dtype ``like_dtype``."""
    n = w.aval.shape[-1]
    gaps = P.sub.bind(_rows(w, n), _cols(w, n))
    eye = _const_matrix(np.eye(n), gaps)
    f = P.sub.bind(P.div.bind(_c(1, gaps), P.add.bind(gaps, eye)), eye)
    return _as(f, like_dtype)


# --- jvp rules ------------------------------------------------------------------------


def _solve_jvp(primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    x = P.solve.bind(a, b)
    if is_zero(ta) and is_zero(tb):
        return x, Zero(tangent_aval(x.aval))
    rhs = instantiate(tb)
    if not is_zero(ta):
        rhs = P.sub.bind(rhs, _mm(ta, x))
    return x, P.solve.bind(a, rhs)


def _op(x, transpose_a, conjugate_a):
    x = _conj(x) if conjugate_a else x
    return _T(x) if transpose_a else x


def _triangle(x, lower, unit_diagonal):
    n = x.aval.shape[-1]
    k = -1 if unit_diagonal else 0
    m = np.tri(n, n, k) if lower else np.tri(n, n, k).T
    return _masked(x, m)


def _triangular_solve_jvp(primals, tangents, **params):
    (a, b), (ta, tb) = primals, tangents
    x = P.triangular_solve.bind(a, b, **params)
    if is_zero(ta) and is_zero(tb):
        return x, Zero(tangent_aval(x.aval))
    rhs = instantiate(tb)
    if not is_zero(ta):
        op_ta = _op(_triangle(ta, params["lower"], params["unit_diagonal"]),
                    params["transpose_a"], params["conjugate_a"])
        rhs = P.sub.bind(rhs, _mm(op_ta, x) if params["left_side"] else _mm(x, op_ta))
    return x, P.triangular_solve.bind(a, rhs, **params)


def _trace_of_inverse_times(w, ta):
    """``tr(A^-1 dA)`` as ``sum(W * dA)`` over the last two axes, ``W = A^-T``."""
    nd = _nd(w)
    return P.reduce_sum.bind(P.mul.bind(w, ta), axes=(nd - 2, nd - 1))


def _slogdet_tangents(sign, logabsdet, t):
    """The tangents of (sign, logabsdet) given ``t = tr(A^-1 dA)``."""
    if not _is_complex(sign):
        return [Zero(tangent_aval(sign.aval)), t]
    turn = P.complex.bind(_c(0, logabsdet), P.imag.bind(t))
    return [P.mul.bind(sign, turn), P.real.bind(t)]


def _det_jvp(primals, tangents):
    (a,), (ta,) = primals, tangents
    sign, logabsdet, w = P.slogdet_inv_t.bind(a)
    y = P.mul.bind(sign, _as(P.exp.bind(logabsdet), sign.aval.dtype))
    return y, P.mul.bind(y, _trace_of_inverse_times(w, ta))


def _slogdet_jvp(primals, tangents):
    (a,), (ta,) = primals, tangents
    sign, logabsdet, w = P.slogdet_inv_t.bind(a)
    t = _trace_of_inverse_times(w, ta)
    return [sign, logabsdet], _slogdet_tangents(sign, logabsdet, t)


def _slogdet_inv_t_jvp(primals, tangents):
    (a,), (ta,) = primals, tangents
    sign, logabsdet, w = P.slogdet_inv_t.bind(a)
    t = _trace_of_inverse_times(w, ta)
    dw = P.neg.bind(_mm(_mm(w, _T(ta)), w))
    return [sign, logabsdet, w], [*_slogdet_tangents(sign, logabsdet, t), dw]


def _cholesky_jvp(primals, tangents, *, upper=False):
    (a,), (ta,) = primals, tangents
    if upper:       # U = L^H, where L is the lower factor of a^H (its lower triangle)
        u = P.cholesky.bind(a, upper=True)
        _, dl = _cholesky_jvp_lower(_H(u), _H(ta))
        return u, _H(dl)
    return _cholesky_jvp_lower(P.cholesky.bind(a, upper=False), ta)


def _read_triangle(ta, lower):
    """The Hermitian tangent of a primitive that reads one triangle of its operand and the
    real part of its diagonal: the tangent's same triangle, mirrored."""
    n = ta.aval.shape[-1]
    tri = np.tri(n) if lower else np.tri(n).T
    half = _masked(ta, tri - 0.5 * np.eye(n))
    return P.add.bind(half, _H(half))


def _cholesky_jvp_lower(low, ta):
    n = low.aval.shape[-1]
    ta = _read_triangle(ta, True)
    left = P.triangular_solve.bind(low, ta, left_side=True, lower=True, transpose_a=False,
                                   conjugate_a=False, unit_diagonal=False)
    inner = P.triangular_solve.bind(low, left, left_side=False, lower=True, transpose_a=True,
                                    conjugate_a=True, unit_diagonal=False)
    phi = _masked(inner, np.tri(n) - 0.5 * np.eye(n))
    return low, _mm(low, phi)


def _eigh_jvp(primals, tangents, *, lower):
    (a,), (ta,) = primals, tangents
    w, v = P.eigh.bind(a, lower=lower)
    av = _mm(_read_triangle(ta, lower), v)
    # diag(V^H dA V) as column sums of conj(V) * (dA V): the eigenvalues' tangent (and in
    # reverse mode their cotangent) takes one product, not two with a diagonal matrix
    tw = P.reduce_sum.bind(P.mul.bind(_conj(v), av), axes=(_nd(v) - 2,))
    tw = P.real.bind(tw) if _is_complex(tw) else tw
    inner = _mm(_H(v), av)
    tv = _mm(v, P.mul.bind(_reciprocal_gaps(w, v.aval.dtype), inner))
    return [w, v], [tw, tv]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (ta,) = primals, tangents
    m, n = a.aval.shape[-2:]
    if full_matrices and compute_uv and m != n:
        raise NotImplementedError(
            f"svd: the derivative of u and vh with full_matrices=True is not implemented "
            f"for a non-square matrix (shape {a.aval.shape}); use full_matrices=False")
    s, u, vh = P.svd.bind(a, full_matrices=False, compute_uv=True)
    v = _H(vh)
    ds_mat = _mm(_mm(_H(u), ta), v)
    ds = _diag(ds_mat)
    ds = P.real.bind(ds) if _is_complex(ds) else ds
    if not compute_uv:
        return [s], [ds]
    k = min(m, n)
    dt = a.aval.dtype
    sc = _as(s, dt)
    s_rows, s_cols = _rows(sc, k), _cols(sc, k)       # (i, j) -> s_j and s_i
    sq = P.mul.bind(s, s)
    f = _reciprocal_gaps(sq, dt)
    ds_s = P.mul.bind(ds_mat, s_rows)                   # dS diag(s)
    s_ds = P.mul.bind(s_cols, ds_mat)                   # diag(s) dS
    zero_s = P.convert.bind(P.eq.bind(s, _c(0, s)), new_dtype=s.aval.dtype)
    s_inv = _as(P.sub.bind(P.div.bind(_c(1, s), P.add.bind(s, zero_s)), zero_s), dt)
    du_inner = P.mul.bind(f, P.add.bind(ds_s, _H(ds_s)))
    if _is_complex(a):     # the imaginary part of the diagonal (zero for real matrices)
        skew = P.mul.bind(_c(0.5, ds_mat), P.sub.bind(ds_mat, _H(ds_mat)))
        du_inner = P.add.bind(du_inner, _masked(P.mul.bind(skew, _rows(s_inv, k)), np.eye(k)))
    du = _mm(u, du_inner)
    dv = _mm(v, P.mul.bind(f, P.add.bind(s_ds, _H(s_ds))))
    if m > n:
        dav = _mm(ta, v)
        du = P.add.bind(du, P.mul.bind(P.sub.bind(dav, _mm(u, _mm(_H(u), dav))),
                                       _rows(s_inv, m)))
    if n > m:
        dau = _mm(_H(ta), u)
        dv = P.add.bind(dv, P.mul.bind(P.sub.bind(dau, _mm(v, _mm(vh, dau))), _rows(s_inv, n)))
    if full_matrices:       # square: the thin factors are the full ones
        s, u, vh = P.svd.bind(a, full_matrices=True, compute_uv=True)
    return [s, u, vh], [ds, du, _H(dv)]


def _permutation_matrix(perm, dtype):
    """One-hot rows: ``P[..., i, j] = (perm[..., i] == j)``, so ``P @ x == x[..., perm, :]``."""
    n, nd = perm.aval.shape[-1], _nd(perm)
    rows = P.broadcast_in_dim.bind(perm, shape=perm.aval.shape + (n,),
                                   broadcast_dimensions=tuple(range(nd)))
    cols = P.iota.bind(dtype=np.dtype(np.int32), shape=perm.aval.shape + (n,), dimension=nd)
    return P.convert.bind(P.eq.bind(rows, cols), new_dtype=np.dtype(dtype))


def _lu_jvp(primals, tangents):
    (a,), (ta,) = primals, tangents
    lu, pivots, perm = P.lu.bind(a)
    n = a.aval.shape[-1]
    low = P.add.bind(_masked(lu, np.tri(n, n, -1)), _const_matrix(np.eye(n), lu))
    up = _masked(lu, np.triu(np.ones((n, n))))
    permuted = _mm(_permutation_matrix(perm, a.aval.dtype), ta)
    left = P.triangular_solve.bind(low, permuted, left_side=True, lower=True,
                                   transpose_a=False, conjugate_a=False, unit_diagonal=True)
    x = P.triangular_solve.bind(up, left, left_side=False, lower=False, transpose_a=False,
                                conjugate_a=False, unit_diagonal=False)
    dlu = P.add.bind(_mm(low, _masked(x, np.tri(n, n, -1))),
                     _mm(_masked(x, np.triu(np.ones((n, n)))), up))
    return [lu, pivots, perm], [dlu, Zero(tangent_aval(pivots.aval)),
                                Zero(tangent_aval(perm.aval))]


def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (ta,) = primals, tangents
    m, n = a.aval.shape[-2:]
    if m < n or (full_matrices and m != n):
        raise NotImplementedError(
            f"qr: the derivative is implemented for m >= n with the reduced factors, not for "
            f"shape {a.aval.shape} with full_matrices={full_matrices}")
    q, r = P.qr.bind(a, full_matrices=full_matrices)
    da_rinv = P.triangular_solve.bind(r, ta, left_side=False, lower=False, transpose_a=False,
                                      conjugate_a=False, unit_diagonal=False)
    c = _mm(_H(q), da_rinv)
    low = _masked(c, np.tri(n, n, -1))
    w = P.sub.bind(low, _H(low))
    if _is_complex(a):
        imag_diag = P.complex.bind(_c(0, P.real.bind(c)), P.imag.bind(c))
        w = P.add.bind(w, _masked(imag_diag, np.eye(n)))
    dq = P.add.bind(_mm(q, P.sub.bind(w, c)), da_rinv)
    dr = _mm(P.sub.bind(c, w), r)
    return [q, r], [dq, dr]


def _eig_jvp(primals, tangents, *, compute_v):
    (a,), (ta,) = primals, tangents
    w, v = P.eig.bind(a, compute_v=True)
    inner = P.solve.bind(v, _mm(_as(ta, v.aval.dtype), v))      # V^-1 dA V
    dw = _diag(inner)
    if not compute_v:
        return [w], [dw]
    off = _mm(v, P.mul.bind(_reciprocal_gaps(w, v.aval.dtype), inner))
    # C_kk = -v_k^H (the off-diagonal part of dv_k): v_k^H dv_k = 0 keeps |v_k| = 1
    n = a.aval.shape[-1]
    ckk = P.neg.bind(P.reduce_sum.bind(P.mul.bind(_conj(v), off), axes=(_nd(v) - 2,)))
    dv = P.add.bind(off, P.mul.bind(v, _rows(ckk, n)))
    return [w, v], [dw, dv]


def _sqrtm_jvp(primals, tangents):
    (a,), (ta,) = primals, tangents
    x = P.sqrtm.bind(a)
    return x, P.sylvester.bind(x, x, _as(instantiate(ta), x.aval.dtype))


def _sylvester_jvp(primals, tangents):
    (a, b, c), (ta, tb, tc) = primals, tangents
    y = P.sylvester.bind(a, b, c)
    if all(is_zero(t) for t in tangents):
        return y, Zero(tangent_aval(y.aval))
    rhs = None if is_zero(tc) else tc
    for t, term in ((ta, lambda t: _mm(t, y)), (tb, lambda t: _mm(y, t))):
        if not is_zero(t):
            rhs = P.neg.bind(term(t)) if rhs is None else P.sub.bind(rhs, term(t))
    return y, P.sylvester.bind(a, b, rhs)


for _p, _rule in (
    (P.sqrtm, _sqrtm_jvp), (P.sylvester, _sylvester_jvp), (P.solve, _solve_jvp),
    (P.triangular_solve, _triangular_solve_jvp), (P.det, _det_jvp), (P.slogdet, _slogdet_jvp),
    (P.cholesky, _cholesky_jvp), (P.eigh, _eigh_jvp), (P.svd, _svd_jvp), (P.qr, _qr_jvp),
    (P.eig, _eig_jvp), (P.lu, _lu_jvp), (P.slogdet_inv_t, _slogdet_inv_t_jvp),
):
    JVP_RULES.register(_p, _rule)
JVP_RULES.register(P.lu_pivots_to_permutation, zero_rule(P.lu_pivots_to_permutation))


# --- transposes: linear in b ------------------------------------------------------------


def _solve_t(ct, a, b):
    if is_linear(a):
        raise NotImplementedError("solve is not linear in its matrix a")
    return [None, P.solve.bind(_T(a), ct)]


def _triangular_solve_t(ct, a, b, *, transpose_a, **params):
    if is_linear(a):
        raise NotImplementedError("triangular_solve is not linear in its matrix a")
    return [None, P.triangular_solve.bind(a, ct, transpose_a=not transpose_a, **params)]


def _sylvester_t(ct, a, b, c):
    if is_linear(a) or is_linear(b):
        raise NotImplementedError("sylvester is not linear in its matrices a and b")
    return [None, None, P.sylvester.bind(_T(a), _T(b), ct)]


TRANSPOSE_RULES.register(P.solve, _solve_t)
TRANSPOSE_RULES.register(P.sylvester, _sylvester_t)
TRANSPOSE_RULES.register(P.triangular_solve, _triangular_solve_t)


# --- batching: the batch axis joins the leading axes ---------------------------------------


def _front(x, d):
    """The batch axis among the leading axes (moved to the front if it was in the last
    two); returns the array and where its batch axis is."""
    return (x, d) if d < _nd(x) - 2 else (moveaxis(x, d, 0), 0)


def _unary_batch(prim):
    def rule(args, dims, **params):
        x, d = _front(args[0], dims[0])
        out = prim.bind(x, **params)
        outs = out if prim.multiple_results else [out]
        return outs, [d] * len(outs)
    return rule


def _solve_like_batch(prim):
    def rule(args, dims, **params):
        (a, b), (da, db) = args, dims
        left = params.get("left_side", True)
        if da is None and left:
            # one matrix, many right-hand sides: the batch joins b's columns
            b = moveaxis(b, db, _nd(b) - 1)             # (..., n, k, batch)
            shape = b.aval.shape
            wide = P.reshape.bind(b, new_sizes=shape[:-2] + (shape[-2] * shape[-1],))
            out = prim.bind(a, wide, **params)
            return [P.reshape.bind(out, new_sizes=shape)], [_nd(b) - 1]
        size = _axis_size(args, dims)
        a, b = batch_at(a, da, size, 0), batch_at(b, db, size, 0)
        return [prim.bind(a, b, **params)], [0]
    return rule


for _p in (P.det, P.slogdet, P.cholesky, P.qr, P.svd, P.eigh, P.eig, P.lu, P.slogdet_inv_t,
           P.sqrtm):
    BATCH_RULES.register(_p, _unary_batch(_p))


def _sylvester_batch(args, dims):
    size = _axis_size(args, dims)
    return [P.sylvester.bind(*(batch_at(x, d, size, 0) for x, d in
                               zip(args, dims, strict=True)))], [0]


BATCH_RULES.register(P.sylvester, _sylvester_batch)


def _pivots_batch(args, dims, *, permutation_size):
    (x,), (d,) = args, dims
    if d == _nd(x) - 1:
        x, d = moveaxis(x, d, 0), 0
    return [P.lu_pivots_to_permutation.bind(x, permutation_size=permutation_size)], [d]


BATCH_RULES.register(P.lu_pivots_to_permutation, _pivots_batch)
BATCH_RULES.register(P.solve, _solve_like_batch(P.solve))
BATCH_RULES.register(P.triangular_solve, _solve_like_batch(P.triangular_solve))
