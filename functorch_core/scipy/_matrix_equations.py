"""``scipy.linalg``'s linear matrix equations and banded solves, reduced to one dense
``linalg.solve`` each: their derivatives are that solve's implicit-function rules."""

from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..numpy.internal import aval, cast, to_result
from ..numpy.internal import linalg_float as _float

__all__ = ["solve_sylvester", "solve_continuous_lyapunov", "solve_banded"]


def _square(name, arg, x):
    shape = aval(x).shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name}: {arg} must be a square matrix, got shape {shape}")
    return shape[0]


def _sylvester(name, a, b, q):
    a, b, q = _float(name, a), _float(name, b), _float(name, q)
    m, n = _square(name, "a", a), _square(name, "b", b)
    if aval(q).shape != (m, n):
        raise ValueError(f"{name}: q must have shape {(m, n)} for a {aval(a).shape} and b "
                         f"{aval(b).shape}, got {aval(q).shape}")
    dt = np.result_type(aval(a).dtype, aval(b).dtype, aval(q).dtype)
    a, b, q = cast(a, dt), cast(b, dt), cast(q, dt)
    # (A X + X B) flattened row-major is (A kron I_n + I_m kron B^T) vec(X)
    left = a[:, None, :, None] * fnp.eye(n, dtype=dt)[None, :, None, :]
    right = fnp.eye(m, dtype=dt)[:, None, :, None] * fnp.transpose(b)[None, :, None, :]
    k = fnp.reshape(left + right, (m * n, m * n))
    return to_result(fnp.reshape(fnp.linalg.solve(k, fnp.reshape(q, (m * n,))), (m, n)))


def solve_sylvester(a, b, q):
    """``scipy.linalg.solve_sylvester``: ``X`` with ``A X + X B = Q``.

    Solved as the ``MN x MN`` linear system ``(A kron I + I kron B^T) vec(X) = vec(Q)`` by
    one LU solve (cost ``O((MN)^3)``: meant for small ``M N``; SciPy uses Bartels-Stewart
    on Schur forms, ``O(M^3 + N^3)``). Differentiable in ``a``, ``b`` and ``q`` (the solve's
    implicit-function derivative), ``jit``- and ``vmap``-able.

    Args:
        a: an ``(M, M)`` matrix.
        b: an ``(N, N)`` matrix.
        q: the ``(M, N)`` right-hand side.

    Example::

        >>> solve_sylvester(np.eye(2), 2 * np.eye(2), 3 * np.eye(2))
        array([[1., 0.],
               [0., 1.]])
    """
    return _sylvester("solve_sylvester", a, b, q)


def solve_continuous_lyapunov(a, q):
    """``scipy.linalg.solve_continuous_lyapunov``: ``X`` with ``A X + X A^H = Q``, as
    :func:`solve_sylvester` with ``B = A^H`` (the same dense solve).

    Args:
        a: an ``(M, M)`` matrix.
        q: the ``(M, M)`` right-hand side.

    Example::

        >>> solve_continuous_lyapunov(np.eye(2), 2 * np.eye(2))
        array([[1., 0.],
               [0., 1.]])
    """
    name = "solve_continuous_lyapunov"
    a = _float(name, a)
    _square(name, "a", a)
    ah = fnp.conj(fnp.transpose(a)) if aval(a).dtype.kind == "c" else fnp.transpose(a)
    return _sylvester(name, a, ah, q)


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``scipy.linalg.solve_banded``: ``x`` with ``A x = b`` for a banded ``A`` stored by
    diagonals, ``A[i, j] = ab[u + i - j, j]``.

    The band is expanded to the dense ``(M, M)`` matrix and solved with partial pivoting
    (LAPACK's ``gbsv`` pivots the same way; the cost is the dense ``O(M^3)``, not the band's
    ``O(M (l + u)^2)``). Differentiable in ``ab`` and ``b``. A singular matrix gives
    non-finite values here rather than SciPy's ``LinAlgError`` (traced code cannot raise on
    values). ``overwrite_*`` and ``check_finite`` are accepted and ignored.

    Args:
        l_and_u: ``(l, u)``, the numbers of nonzero lower and upper diagonals.
        ab: the ``(l + u + 1, M)`` band storage.
        b: the right-hand side, ``(M,)`` or ``(M, K)``.

    Example::

        >>> ab = np.array([[0.0, 1.0, 1.0], [2.0, 2.0, 2.0], [1.0, 1.0, 0.0]])
        >>> solve_banded((1, 1), ab, np.array([3.0, 4.0, 3.0]))
        array([1., 1., 1.])
    """
    name = "solve_banded"
    try:
        low, up = (int(v) for v in l_and_u)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: l_and_u must be a pair of ints (l, u), got "
                         f"{l_and_u!r}") from None
    if low < 0 or up < 0:
        raise ValueError(f"{name}: l and u must be non-negative, got {(low, up)}")
    ab, b = _float(name, ab), _float(name, b)
    if aval(ab).ndim != 2:
        raise ValueError(f"{name}: ab must be 2-D, got shape {aval(ab).shape}")
    rows, m = aval(ab).shape
    if rows != low + up + 1:
        raise ValueError(f"{name}: invalid values for the number of lower and upper "
                         f"diagonals: l+u+1 ({low + up + 1}) does not equal ab.shape[0] "
                         f"({rows})")
    if aval(b).ndim not in (1, 2) or aval(b).shape[0] != m:
        raise ValueError(f"{name}: shapes of ab {aval(ab).shape} and b {aval(b).shape} are "
                         "not compatible")
    dt = np.result_type(aval(ab).dtype, aval(b).dtype)
    ab, b = cast(ab, dt), cast(b, dt)
    i, j = np.indices((m, m))
    band = up + i - j
    inside = (band >= 0) & (band <= low + up)
    flat = np.where(inside, band, 0) * m + j
    dense = fnp.where(inside, fnp.take(fnp.reshape(ab, (-1,)), flat), fnp.zeros((), dt))
    return to_result(fnp.linalg.solve(dense, b))
