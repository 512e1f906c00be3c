"""``scipy.linalg.sqrtm``: the principal square root of a matrix, through its
eigendecomposition, with the Sylvester-equation derivative as a custom jvp rule."""

from __future__ import annotations

import numpy as np

from ir import primitives as P

from .. import numpy as fnp
from ..numpy._core import aval, cast, is_tracer, to_result
from ..numpy.linalg import _float, _mT, _stacked
from ..transforms.custom import custom_jvp


def _eig_sqrt(a):
    """``(V, s)`` with ``a = V diag(s^2) V^-1``, ``s`` the principal roots of the
    eigenvalues (real part >= 0; ``+i sqrt|w|`` on the negative real axis)."""
    w, v = P.eig.bind(a, compute_v=True)
    return v, fnp.sqrt(w)


def _similar(v, vm):
    """``V m V^-1`` from ``vm = V m`` (a solve with ``V^T``, no inverse)."""
    return _mT(fnp.linalg.solve(_mT(v), _mT(vm)))


@custom_jvp
def _sqrtm(a):
    v, s = _eig_sqrt(a)
    return _similar(v, v * s[..., None, :])


@_sqrtm.defjvp
def _sqrtm_jvp(primals, tangents):
    """``X dX + dX X = dA`` in the eigenbasis: ``(V^-1 dX V)_ij = (V^-1 dA V)_ij /
    (s_i + s_j)``."""
    (a,), (da,) = primals, tangents
    v, s = _eig_sqrt(a)
    inner = fnp.linalg.solve(v, cast(da, aval(v).dtype) @ v)
    return _sqrtm(a), _similar(v, v @ (inner / (s[..., :, None] + s[..., None, :])))


def _negative_eigenvalue(a):
    """Per matrix: whether a real ``a`` has an eigenvalue on the negative real axis (real
    Schur form with a negative 1x1 block: SciPy's test for a complex root)."""
    w = P.eig.bind(a, compute_v=False)[0]
    return fnp.any((fnp.imag(w) == 0) & (fnp.real(w) < 0), axis=-1)


def _checked(x, a):
    """``x``, NaN for each matrix whose square misses ``a`` by more than sqrt(eps) relative
    (Frobenius): an eigendecomposition that cannot represent a defective ``a``."""
    dtype = aval(x).dtype
    miss = fnp.sum(fnp.abs(x @ x - cast(a, dtype)) ** 2, axis=(-2, -1))
    size = fnp.sum(fnp.abs(cast(a, dtype)) ** 2, axis=(-2, -1))
    bad = ~(miss <= np.finfo(dtype).eps * size)
    return fnp.where(bad[..., None, None], np.array(np.nan, dtype), x)


def sqrtm(A, disp=None, blocksize=None):
    """``scipy.linalg.sqrtm``: the principal square root ``X`` of ``(..., M, M)`` matrices
    (``X @ X = A``, the eigenvalues of ``X`` in the right half plane).

    Computed from the eigendecomposition ``A = V diag(w) V^-1`` as
    ``V diag(sqrt(w)) V^-1`` (SciPy uses the Schur form: the values agree to rounding for
    diagonalizable matrices; a defective one, such as a Jordan block, which eigenvectors
    cannot represent, gives NaN here: each result whose square misses ``A`` by more than
    ``sqrt(eps) |A|`` in the Frobenius norm is replaced by NaN). The derivative solves
    the Sylvester equation ``X dX + dX X = dA`` in the eigenbasis: finite for repeated
    eigenvalues (the identity), infinite for a singular ``A``; every transform applies
    (jvp, vjp, grad to any order, vmap, jit).

    Real input with an eigenvalue on the negative real axis has a complex root: called on
    concrete arrays the result is then complex (SciPy's rule); under a trace the dtype must
    be known before the values, so real input gives a real result, NaN for those matrices
    (pass a complex ``A`` for the complex root).

    Args:
        A: ``(..., M, M)`` matrices; integers are taken as float64.
        disp (default ``None``): accepted for SciPy compatibility and ignored.
        blocksize (default ``None``): accepted for SciPy compatibility and ignored.

    Example::

        >>> sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))
        array([[2., 0.],
               [0., 3.]])
    """
    a = _float("sqrtm", A)
    _stacked("sqrtm", a)
    dtype = aval(a).dtype
    if dtype.kind == "c":
        return to_result(_checked(_sqrtm(a), a))
    c = np.result_type(dtype, np.complex64)
    negative = _negative_eigenvalue(a)
    if not is_tracer(negative) and np.any(negative):
        return to_result(_checked(_sqrtm(cast(a, c)), a))
    x = _checked(fnp.real(_sqrtm(cast(a, c))), a)
    return to_result(fnp.where(negative[..., None, None], np.array(np.nan, dtype), x))
