"""``scipy.linalg.sqrtm``: the principal square root of a matrix by the Schur method (the
``sqrtm`` primitive), its derivative the Sylvester equation ``X dX + dX X = dA`` (the
``sylvester`` primitive)."""

from __future__ import annotations

import numpy as np

from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..numpy.internal import aval, is_tracer, to_result
from ..numpy.internal import linalg_float as _float
from ..numpy.internal import linalg_stacked as _stacked
from ..transforms.custom import stop_gradient


def _negative_eigenvalue(a):
    """Per matrix: whether a real ``a`` has an eigenvalue on the negative real axis (real
    Schur form with a negative 1x1 block: SciPy's test for a complex root). A test, not a
    value: no derivative flows through it (eig's jvp would compute the eigenvectors)."""
    w = P.eig.bind(stop_gradient(a), compute_v=False)[0]
    return fnp.any((fnp.imag(w) == 0) & (fnp.real(w) < 0), axis=-1)


def sqrtm(A, disp=None, blocksize=None):
    """``scipy.linalg.sqrtm``: the principal square root ``X`` of ``(..., M, M)`` matrices
    (``X @ X = A``, the eigenvalues of ``X`` in the right half plane).

    SciPy's method: the complex Schur form ``A = Z T Z^H``, the square root ``R`` of the
    triangular ``T`` (its diagonal the principal roots, the rest by blocks, each a
    triangular Sylvester equation), then ``X = Z R Z^H``; so defective matrices (Jordan
    blocks) have their root too. A singular ``A`` may have none: as SciPy, the result
    then holds infinities, NaN or huge values. The derivative solves the Sylvester
    equation ``X dX + dX X = dA``: finite for repeated eigenvalues (the identity),
    infinite for a singular ``A``; every transform applies (jvp, vjp, grad to any order,
    vmap, jit).

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
    x = P.sqrtm.bind(a)
    if dtype.kind == "c":
        return to_result(x)
    negative = _negative_eigenvalue(a)
    if not is_tracer(negative) and np.any(negative):
        return to_result(x)
    return to_result(fnp.where(negative[..., None, None], np.array(np.nan, dtype),
                               fnp.real(x)))
