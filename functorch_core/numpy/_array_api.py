"""NumPy 2's array-API additions and a few small functions, over the rest of the layer:
``vecdot``/``matvec``/``vecmat`` (generalized ufuncs), ``matrix_transpose``, ``unstack``,
``cumulative_sum``/``cumulative_prod``, ``count_nonzero``, ``array_equal``/``array_equiv``,
``isposinf``/``isneginf``, ``dstack`` and ``diagflat``.

Each returns NumPy's dtypes and values; comparisons that NumPy answers with a Python bool
(``array_equal``) give a 0-d bool array under a trace.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir.dtypes import dtype_kind

from ._core import aval, constant, implements, normalize_axis, to_result
from ._creation import array_operand
from ._methods import _fnp  # the whole namespace, read at call time

__all__ = ["vecdot", "matvec", "vecmat", "matrix_transpose", "unstack", "cumulative_sum",
           "cumulative_prod", "count_nonzero", "array_equal", "array_equiv", "isposinf",
           "isneginf", "dstack", "diagflat"]


def _refuse_gufunc_options(name, kwargs):
    if kwargs:
        raise NotImplementedError(f"{name}(..., {', '.join(sorted(kwargs))}=...) is not "
                                  "supported on traced arrays; call it without them")


def _at_least(name, x, ndim, which):
    if len(aval(x).shape) < ndim:
        raise ValueError(f"{name}: {which} has shape {aval(x).shape}; it needs at least "
                         f"{ndim} dimension{'s' if ndim > 1 else ''}")


def _core_sizes_match(name, n1, n2, s1, s2):
    if n1 != n2:
        raise ValueError(f"{name}: the core dimensions of x1 (shape {s1}) and x2 (shape {s2}) "
                         f"differ: {n1} and {n2}")


def _conj(x):
    """The conjugate of complex values; others unchanged (NumPy's conjugate turns bool into
    int8, which vecdot does not)."""
    return _fnp().conj(x) if aval(x).dtype.kind == "c" else x


def vecdot(x1, x2, /, *, axis=-1, **kwargs):
    """Vector dot products along ``axis``, the first operand conjugated: ``numpy.vecdot``.

    The other axes broadcast; integer and bool operands keep NumPy's result dtype (an
    ``int8`` product is ``int8``, a bool one ``bool``).

    Args:
        x1, x2 (array_like): at least 1-d, with equal sizes along ``axis``.
        axis (int, default ``-1``): the axis of the vectors in both operands.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.vecdot([1j, 2.0], [1.0, 3.0])
        np.complex128(6-1j)
    """
    name = "vecdot"
    _refuse_gufunc_options(name, kwargs)
    fnp = _fnp()
    a, b = array_operand(x1), array_operand(x2)
    _at_least(name, a, 1, "x1")
    _at_least(name, b, 1, "x2")
    s1, s2 = aval(a).shape, aval(b).shape
    a = fnp.moveaxis(a, normalize_axis(axis, len(s1)), -1)
    b = fnp.moveaxis(b, normalize_axis(axis, len(s2)), -1)
    _core_sizes_match(name, aval(a).shape[-1], aval(b).shape[-1], s1, s2)
    out = fnp.matmul(_conj(a)[..., None, :], b[..., :, None])[..., 0, 0]
    return to_result(out, scalar=True)


def _matrix_operands(name, x1, x2, kwargs, ndims, core_axes):
    """The operands of matvec or vecmat, checked: at least ``ndims`` dimensions, equal
    sizes along ``core_axes`` (the summed axis of each)."""
    _refuse_gufunc_options(name, kwargs)
    a, b = array_operand(x1), array_operand(x2)
    _at_least(name, a, ndims[0], "x1")
    _at_least(name, b, ndims[1], "x2")
    _core_sizes_match(name, aval(a).shape[core_axes[0]], aval(b).shape[core_axes[1]],
                      aval(a).shape, aval(b).shape)
    return a, b


def matvec(x1, x2, /, **kwargs):
    """Matrix-vector products over the last axes: ``numpy.matvec`` (no conjugation).

    Args:
        x1 (array_like): matrices, shape ``(..., m, n)``.
        x2 (array_like): vectors, shape ``(..., n)``; the leading axes broadcast.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0])
        array([3., 7.])
    """
    a, b = _matrix_operands("matvec", x1, x2, kwargs, (2, 1), (-1, -1))
    return to_result(_fnp().matmul(a, b[..., :, None])[..., 0])


def vecmat(x1, x2, /, **kwargs):
    """Vector-matrix products, the vector conjugated: ``numpy.vecmat``.

    Args:
        x1 (array_like): vectors, shape ``(..., n)``.
        x2 (array_like): matrices, shape ``(..., n, m)``; the leading axes broadcast.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.vecmat([1.0, 1.0], [[1.0, 2.0], [3.0, 4.0]])
        array([4., 6.])
    """
    a, b = _matrix_operands("vecmat", x1, x2, kwargs, (1, 2), (-1, -2))
    return to_result(_fnp().matmul(_conj(a)[..., None, :], b)[..., 0, :])


@implements(np.matrix_transpose)
def matrix_transpose(x, /):
    """The last two axes swapped: ``numpy.matrix_transpose``.

    Args:
        x (array_like): at least 2-d.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.matrix_transpose(fnp.ones((2, 3, 4))).shape
        (2, 4, 3)
    """
    x = array_operand(x)
    _at_least("matrix_transpose", x, 2, "x")
    return to_result(_fnp().swapaxes(x, -1, -2))


@implements(np.unstack)
def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple: ``numpy.unstack``.

    Args:
        x (array_like): at least 1-d.
        axis (int, default ``0``): the axis to split along (it disappears).

    Example::

        >>> import functorch_core.numpy as fnp
        >>> [a.tolist() for a in fnp.unstack(fnp.eye(2))]
        [[1.0, 0.0], [0.0, 1.0]]
    """
    x = array_operand(x)
    if not aval(x).ndim:
        raise ValueError("unstack: input array must be at least 1-d, got shape ()")
    moved = _fnp().moveaxis(x, normalize_axis(axis, aval(x).ndim), 0)
    return tuple(to_result(moved[i]) for i in range(aval(moved).shape[0]))


def _cumulative(name, scan, identity, x, axis, dtype, out, include_initial):
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    fnp = _fnp()
    x = array_operand(x)
    if not aval(x).ndim:
        x = fnp.reshape(x, (1,))
    if axis is None:
        if aval(x).ndim > 1:
            raise ValueError(f"{name}: axis must be given for an array of shape "
                             f"{aval(x).shape} (more than one dimension)")
        axis = 0
    axis = normalize_axis(axis, aval(x).ndim)
    result = scan(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(aval(result).shape)
        shape[axis] = 1
        first = constant(identity, aval(result).dtype, tuple(shape))
        result = fnp.concatenate([first, result], axis=axis)
    return to_result(result)


def _cumulative_function(name, scan, what, identity, example):
    """``numpy.cumulative_sum`` or ``numpy.cumulative_prod`` over ``fnp.<scan>``."""
    def fn(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        return _cumulative(name, getattr(_fnp(), scan), identity, x, axis, dtype, out,
                           include_initial)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Running {what}s along ``axis``: ``numpy.{name}``.

    Args:
        x (array_like): the array (a 0-d one counts as 1-d).
        axis (int, default ``None``): required unless ``x`` is 1-d.
        dtype (dtype, default ``None``): the accumulator's, as :func:`{scan}`'s.
        out: NumPy's; not supported.
        include_initial (bool, default ``False``): start with the {what} of nothing
            ({identity}).

    Example::

        >>> import functorch_core.numpy as fnp
{example}
    """
    return implements(getattr(np, name))(fn)


cumulative_sum = _cumulative_function(
    "cumulative_sum", "cumsum", "sum", 0,
    "        >>> fnp.cumulative_sum([1, 2, 3], include_initial=True)\n"
    "        array([0, 1, 3, 6])")
cumulative_prod = _cumulative_function(
    "cumulative_prod", "cumprod", "product", 1,
    "        >>> fnp.cumulative_prod([1.0, 2.0, 3.0])\n"
    "        array([1., 2., 6.])")


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """The number of non-zero entries (along ``axis``): ``numpy.count_nonzero``.

    Args:
        a (array_like): the array.
        axis (int or tuple of ints, default ``None``): None counts over every entry.
        keepdims (bool, default ``False``): keep the counted axes with size one.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> int(fnp.count_nonzero([[0, 1], [2, 0]]))
        2
    """
    fnp = _fnp()
    a = array_operand(a)
    counts = fnp.sum(fnp.not_equal(a, 0), axis=axis, dtype=np.intp, keepdims=keepdims)
    return to_result(counts, scalar=True)


def _nan_pairs(fnp, a, b):
    if dtype_kind(aval(a).dtype) not in "fc" and dtype_kind(aval(b).dtype) not in "fc":
        return None
    return fnp.logical_and(fnp.isnan(a), fnp.isnan(b))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """Whether ``a1`` and ``a2`` have one shape and equal entries: ``numpy.array_equal``.

    Shapes are static, so a shape mismatch gives ``False`` at once; otherwise the answer is
    a 0-d bool array under a trace (a Python bool cannot hold a traced answer).

    Args:
        a1, a2 (array_like): the arrays.
        equal_nan (bool, default ``False``): count NaN (in the same places) as equal.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> bool(fnp.array_equal([1.0, float("nan")], [1.0, float("nan")], equal_nan=True))
        True
    """
    fnp = _fnp()
    a, b = array_operand(a1), array_operand(a2)
    if aval(a).shape != aval(b).shape:
        return False
    same = fnp.equal(a, b)
    both_nan = _nan_pairs(fnp, a, b) if equal_nan else None
    if both_nan is not None:
        same = fnp.logical_or(same, both_nan)
    return _python_bool(fnp.all(same))


def _python_bool(x):
    return bool(x) if isinstance(x, np.generic | np.ndarray) else x


@implements(np.array_equiv)
def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere:
    ``numpy.array_equiv`` (``False`` at once when the shapes do not broadcast).

    Args:
        a1, a2 (array_like): the arrays.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> bool(fnp.array_equiv([1, 2], [[1, 2], [1, 2]]))
        True
    """
    fnp = _fnp()
    a, b = array_operand(a1), array_operand(a2)
    try:
        np.broadcast_shapes(aval(a).shape, aval(b).shape)
    except ValueError:
        return False
    return _python_bool(fnp.all(fnp.equal(a, b)))


def _signed_inf(name, x, sign, out):
    if out is not None:
        raise NotImplementedError(f"{name}(..., out=...) is not supported; use the result")
    x = array_operand(x)
    dt = aval(x).dtype
    if dt.kind == "c":
        raise TypeError(f"{name}: this operation is not supported for complex values (shape "
                        f"{aval(x).shape}) because it would be ambiguous")
    fnp = _fnp()
    if dtype_kind(dt) != "f":
        return to_result(fnp.zeros(aval(x).shape, np.bool_))
    return to_result(fnp.equal(x, sign * np.inf))


@implements(np.isposinf)
def isposinf(x, out=None):
    """Where ``x`` is positive infinity: ``numpy.isposinf`` (complex input refused).

    Args:
        x (array_like): real values.
        out: NumPy's; not supported.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.isposinf([1.0, float("inf"), -float("inf")])
        array([False,  True, False])
    """
    return _signed_inf("isposinf", x, 1, out)


@implements(np.isneginf)
def isneginf(x, out=None):
    """Where ``x`` is negative infinity: ``numpy.isneginf``, with the arguments of
    :func:`isposinf`. Example: ``fnp.isneginf([1.0, -float("inf")])`` is
    ``array([False,  True])``."""
    return _signed_inf("isneginf", x, -1, out)


@implements(np.dstack)
def dstack(tup):
    """Arrays stacked along the third axis, after ``atleast_3d``: ``numpy.dstack``.

    Args:
        tup (sequence of array_like): the arrays.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.dstack([fnp.ones((2, 3)), fnp.zeros((2, 3))]).shape
        (2, 3, 2)
    """
    fnp = _fnp()
    arrays = fnp.atleast_3d(*tup)
    if not isinstance(arrays, list | tuple):
        arrays = [arrays]
    return fnp.concatenate(list(arrays), axis=2)


@implements(np.diagflat)
def diagflat(v, k=0):
    """A 2-d array with the flattened ``v`` on its ``k``-th diagonal: ``numpy.diagflat``.

    Args:
        v (array_like): the diagonal's entries (flattened).
        k (int, default ``0``): the diagonal (positive above the main one).

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.diagflat([[1, 2]], k=1).tolist()
        [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    fnp = _fnp()
    return fnp.diag(fnp.ravel(array_operand(v)), k)
