"""NumPy functions that read only an array's shape or dtype, for traced arrays too:
``can_cast``, ``common_type``, ``min_scalar_type`` (of a non-0-d array), ``einsum_path`` and
``diag_indices_from``. Each answers with NumPy's own value (a dtype, a type, a path,
index arrays), computed while tracing.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import TracerError

from ._core import aval, implements, is_tracer

__all__ = ["can_cast", "common_type", "min_scalar_type", "einsum_path", "diag_indices_from"]


def _stand_in(x):
    """A zero-memory NumPy array of ``x``'s shape and dtype, for functions that read no
    values."""
    a = aval(x)
    return np.broadcast_to(np.zeros((), a.dtype), a.shape)


@implements(np.can_cast)
def can_cast(from_, to, casting="safe"):
    """``numpy.can_cast``: whether ``from_``'s dtype casts to ``to`` under ``casting``.

    Args:
        from_ (dtype or array): a traced array stands for its dtype.
        to (dtype): the target dtype.
        casting (str, default ``'safe'``): ``'no'``, ``'equiv'``, ``'safe'``,
            ``'same_kind'`` or ``'unsafe'``.

    Example::

        >>> import numpy as np, functorch_core.numpy as fnp
        >>> fnp.can_cast(np.float32, np.int32)
        False
    """
    return np.can_cast(aval(from_).dtype if is_tracer(from_) else from_, to, casting)


@implements(np.common_type)
def common_type(*arrays):
    """``numpy.common_type``: the inexact scalar type common to the arrays' dtypes.

    Args:
        *arrays (array): traced or concrete; only their dtypes are read.

    Example::

        >>> import numpy as np, functorch_core.numpy as fnp
        >>> fnp.common_type(np.ones(2, np.float32), np.ones(2, np.int8))
        <class 'numpy.float64'>
    """
    return np.common_type(*(_stand_in(a) if is_tracer(a) else a for a in arrays))


@implements(np.min_scalar_type)
def min_scalar_type(a):
    """``numpy.min_scalar_type``: for an array of at least one dimension, its dtype.

    Args:
        a (array or scalar): a traced 0-d array is refused: NumPy's answer for it
            depends on its value.

    Example::

        >>> import numpy as np, functorch_core.numpy as fnp
        >>> fnp.min_scalar_type(np.ones(3, np.int16))
        dtype('int16')
    """
    if not is_tracer(a):
        return np.min_scalar_type(a)
    if not aval(a).ndim:
        raise TracerError(f"min_scalar_type: the argument is a traced 0-d array ({aval(a)}); "
                          "NumPy's answer for it depends on its value. Pass its dtype, or "
                          "call it on a concrete value")
    return aval(a).dtype


@implements(np.einsum_path)
def einsum_path(subscripts, *operands, optimize="greedy", einsum_call=False):
    """``numpy.einsum_path``: NumPy's contraction order and its report, from the operands'
    shapes (a traced operand's values are not needed).

    Args:
        subscripts (str): the einsum subscripts.
        *operands (array): traced or concrete.
        optimize (str, bool or list, default ``'greedy'``): NumPy's.
        einsum_call (bool, default ``False``): NumPy's.

    Example::

        >>> import numpy as np, functorch_core.numpy as fnp
        >>> fnp.einsum_path("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)))[0]
        ['einsum_path', (0, 1)]
    """
    stand_ins = [_stand_in(o) if is_tracer(o) else o for o in operands]
    return np.einsum_path(subscripts, *stand_ins, optimize=optimize, einsum_call=einsum_call)


@implements(np.diag_indices_from)
def diag_indices_from(arr):
    """``numpy.diag_indices_from``: the indices of the main diagonal of ``arr``, an array
    of at least 2 equal dimensions (a traced one too: only its shape is read).

    Args:
        arr (array): the array.

    Example::

        >>> import numpy as np, functorch_core.numpy as fnp
        >>> fnp.diag_indices_from(np.ones((2, 2)))
        (array([0, 1]), array([0, 1]))
    """
    shape = aval(arr).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: input array must be at least 2-d with all "
                         f"dimensions equal, got shape {shape}")
    return np.diag_indices(shape[0], len(shape))
