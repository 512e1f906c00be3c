"""Questions about arrays that NumPy answers from their type: ``ndim``, ``shape``, ``size``,
``result_type``, ``iscomplexobj``; and the elementwise ``iscomplex``/``isreal``.

On tracers these are Python values known while tracing (``np.ndim(x)`` is an int), so
code that branches on them (``np.r_``, ``np.iscomplexobj(x)``) traces.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import TracerError
from functorch_core.ir.dtypes import dtype_kind

from ._core import aval, constant, implements, is_tracer, normalize_axis, operand, to_result
from ._elementwise import equal, imag, not_equal

__all__ = ["ndim", "shape", "size", "result_type", "iscomplexobj", "isrealobj", "iscomplex",
           "isreal", "real_if_close", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from"]


@implements(np.ndim)
def ndim(a):
    """The number of dimensions of ``a`` (a Python int, also for a tracer).

    Args:
        a: an array, tracer, scalar or nested list.

    Example::

        >>> fnp.ndim([[1, 2]])
        2
    """
    return len(shape(a))


@implements(np.shape)
def shape(a):
    """The shape of ``a`` as a tuple of Python ints (also for a tracer).

    Args:
        a: an array, tracer, scalar or nested list.

    Example::

        >>> fnp.shape(np.zeros((2, 3)))
        (2, 3)
    """
    return tuple(aval(operand(a)).shape)


@implements(np.size)
def size(a, axis=None):
    """The number of elements of ``a`` (along ``axis`` if given), a Python int.

    Args:
        a: an array, tracer, scalar or nested list.
        axis (int, default ``None``): count along this axis only.

    Example::

        >>> fnp.size(np.zeros((2, 3)), axis=1)
        3
    """
    s = shape(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    return s[normalize_axis(axis, len(s))]


def _type_stand_in(x):
    """What NumPy's type rules see in place of ``x``: a tracer of a Python scalar is a
    Python scalar of its kind (weak, NEP 50), any other tracer its dtype."""
    a = aval(x)
    if a.weak_type:
        return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[dtype_kind(a.dtype)]
    return a.dtype


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    """``numpy.result_type``: the dtype NumPy's promotion gives (NEP 50), for tracers too.

    Args:
        *arrays_and_dtypes: arrays, tracers, scalars and dtypes.

    Example::

        >>> fnp.result_type(np.float32, 1.0)
        dtype('float32')
    """
    return np.result_type(*(_type_stand_in(x) if is_tracer(x) else x
                            for x in arrays_and_dtypes))


@implements(np.iscomplexobj)
def iscomplexobj(x):
    """Whether ``x`` has a complex dtype (a Python bool, from the type alone).

    Args:
        x: an array, tracer, scalar or nested list.

    Example::

        >>> fnp.iscomplexobj(1j)
        True
    """
    if is_tracer(x):
        return aval(x).dtype.kind == "c"
    return np.iscomplexobj(x)


@implements(np.isrealobj)
def isrealobj(x):
    """Whether ``x`` does not have a complex dtype (the negation of :func:`iscomplexobj`).

    Args:
        x: an array, tracer, scalar or nested list.

    Example::

        >>> fnp.isrealobj(np.ones(2))
        True
    """
    return not iscomplexobj(x)


def _imag_test(name, x, test):
    x = operand(x)
    if aval(x).dtype.kind == "c":
        return (not_equal if test == "ne" else equal)(imag(x), 0)
    return to_result(constant(test == "eq", np.bool_, aval(x).shape), scalar=True)


@implements(np.iscomplex)
def iscomplex(x):
    """Elementwise: whether the imaginary part is nonzero (all False for real input).

    Args:
        x: an array, tracer or scalar.

    Example::

        >>> fnp.iscomplex(np.array([1 + 1j, 2]))
        array([ True, False])
    """
    return _imag_test("iscomplex", x, "ne")


@implements(np.isreal)
def isreal(x):
    """Elementwise: whether the imaginary part is zero (all True for real input).

    Args:
        x: an array, tracer or scalar.

    Example::

        >>> fnp.isreal(np.array([1 + 1j, 2]))
        array([False,  True])
    """
    return _imag_test("isreal", x, "eq")


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """``numpy.real_if_close``: the real part if every imaginary part is within ``tol``
    machine epsilons of 0, else ``a`` unchanged.

    Real input is returned as it is. On a traced complex array it raises: the result's
    dtype would depend on the values; use ``fnp.real`` (or keep the complex array).

    Args:
        a: an array or tracer.
        tol (float, default ``100``): in machine epsilons of the dtype (or absolute if < 1).

    Example::

        >>> fnp.real_if_close(np.array([2.1 + 4e-14j]))
        array([2.1])
    """
    x = operand(a)
    if aval(x).dtype.kind != "c":
        return to_result(x)
    if is_tracer(x):
        raise TracerError(
            f"real_if_close: a traced complex array ({aval(x)}) cannot be tested: the "
            "result's dtype (real or complex) depends on the values. Use fnp.real(a) when "
            "the imaginary parts are known to be negligible, or keep the complex array")
    return np.real_if_close(x, tol)


def tril_indices(n, k=0, m=None):
    """``numpy.tril_indices``: the (row, column) indices of the lower triangle of an
    ``n`` x ``m`` array, as constant int64 arrays (the sizes are static).

    Args:
        n (int): the number of rows.
        k (int, default ``0``): the diagonal offset.
        m (int, default ``None``): the number of columns (``n``).

    Example::

        >>> fnp.tril_indices(2)
        (array([0, 1, 1]), array([0, 0, 1]))
    """
    return np.tril_indices(n, k, m)


def triu_indices(n, k=0, m=None):
    """``numpy.triu_indices``: the (row, column) indices of the upper triangle, as
    :func:`tril_indices` (same arguments).

    Example::

        >>> fnp.triu_indices(2)
        (array([0, 0, 1]), array([0, 1, 1]))
    """
    return np.triu_indices(n, k, m)


def _from(name, arr):
    s = shape(arr)
    if len(s) != 2:
        raise ValueError(f"{name}: input array must be 2-d, got shape {s}")
    return s


@implements(np.tril_indices_from)
def tril_indices_from(arr, k=0):
    """:func:`tril_indices` for the shape of the 2-d ``arr`` (a tracer too; only its shape
    is used). ``k`` (default ``0``) is the diagonal offset."""
    n, m = _from("tril_indices_from", arr)
    return np.tril_indices(n, k, m)


@implements(np.triu_indices_from)
def triu_indices_from(arr, k=0):
    """:func:`triu_indices` for the shape of the 2-d ``arr`` (only its shape is used)."""
    n, m = _from("triu_indices_from", arr)
    return np.triu_indices(n, k, m)
