"""NumPy functions that JAX's ``jax.numpy`` has too, written over the rest of the layer:
``isin``, ``lexsort``, ``fill_diagonal``, ``polyadd``, ``polysub``, ``polyder``,
``polyint``, ``choose``, ``unravel_index``, ``ravel_multi_index``, ``sort_complex``,
``ix_``, ``apply_over_axes``, ``block``, ``packbits`` and ``unpackbits``. Each follows
NumPy's algorithm step for step, so dtypes and values are NumPy's.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import TracerError

from ._core import aval, implements, is_tracer, to_result
from ._creation import array_operand
from ._methods import _fnp  # the whole namespace, read at call time

__all__ = ["isin", "lexsort", "fill_diagonal", "polyadd", "polysub", "polyder", "polyint",
           "choose", "unravel_index", "sort_complex", "ix_", "apply_over_axes", "block",
           "packbits", "unpackbits", "ravel_multi_index"]


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each entry of ``element`` is one of ``test_elements``: ``numpy.isin``.

    One broadcast comparison against the flattened ``test_elements`` (NaN matches nothing,
    as in NumPy).

    Args:
        element (array_like): the entries to look up; the result has its shape.
        test_elements (array_like): the values to look for (flattened).
        assume_unique (bool, default ``False``): NumPy's speed hint; no effect here.
        invert (bool, default ``False``): whether each entry is *not* among them.
        kind (str, default ``None``): NumPy's algorithm choice; ``None``, ``'sort'`` and
            ``'table'`` give the same answer here.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.isin([1, 2, 3], [3, 1])
        array([ True, False,  True])
    """
    if kind not in (None, "sort", "table"):
        raise ValueError(f"isin: kind must be None, 'sort' or 'table', got {kind!r}")
    fnp = _fnp()
    x, tests = array_operand(element), fnp.ravel(array_operand(test_elements))
    found = fnp.any(fnp.equal(x[..., None], tests), axis=-1)
    return to_result(fnp.logical_not(found) if invert else found)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    """The indices that sort by several keys, the last one primary: ``numpy.lexsort``.

    A chain of stable argsorts, from the first (least significant) key to the last.

    Args:
        keys (sequence of array_like, or an array): the keys, of one shape (the rows of a
            2-d array are the keys).
        axis (int, default ``-1``): the axis to sort along.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.lexsort([[1, 1, 0], [2, 1, 2]])
        array([1, 2, 0])
    """
    fnp = _fnp()
    keys = [array_operand(k) for k in (keys if isinstance(keys, list | tuple) else
                                       fnp.unstack(array_operand(keys)))]
    if not keys:
        raise TypeError("lexsort: need a sequence of keys with len > 0")
    shapes = {aval(k).shape for k in keys}
    if len(shapes) != 1:
        raise ValueError(f"lexsort: all keys need to be the same shape, got {sorted(shapes)}")
    order = fnp.argsort(keys[0], axis=axis, stable=True)
    for key in keys[1:]:
        step = fnp.argsort(fnp.take_along_axis(key, order, axis=axis), axis=axis, stable=True)
        order = fnp.take_along_axis(order, step, axis=axis)
    return to_result(order)


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    """Write ``val`` on the main diagonal of ``a``, in place: ``numpy.fill_diagonal``.

    The positions are NumPy's (every ``(m + 1)``-th flat entry of an ``n x m`` matrix,
    continuing below a tall one's square part only when ``wrap``); ``val`` repeats along
    them.

    Args:
        a (array): at least 2-d; more dimensions need equal sizes.
        val (scalar or array_like): the values, flattened and repeated.
        wrap (bool, default ``False``): for a tall 2-d ``a``, continue every ``n + 1`` rows.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> a = fnp.zeros((2, 2))
        >>> fnp.fill_diagonal(a, 5.0)
        >>> a.tolist()
        [[5.0, 0.0], [0.0, 5.0]]
    """
    if not is_tracer(a) and not is_tracer(val):
        return np.fill_diagonal(a, val, wrap)
    shape = aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, "
                         f"got shape {shape}")
    step = shape[1] + 1 if len(shape) == 2 else 1 + int(np.cumprod(shape[:-1]).sum())
    end = shape[1] * shape[1] if len(shape) == 2 and not wrap else None
    positions = np.arange(int(np.prod(shape)))[:end:step]
    fnp = _fnp()
    values = fnp.resize(fnp.ravel(array_operand(val)), positions.size)
    fnp.setitem(a, np.unravel_index(positions, shape), values, call="fill_diagonal(a, val)")


def _padded_pair(a1, a2):
    fnp = _fnp()
    a1, a2 = fnp.atleast_1d(array_operand(a1)), fnp.atleast_1d(array_operand(a2))
    diff = aval(a2).shape[0] - aval(a1).shape[0]
    if diff > 0:
        a1 = fnp.concatenate((fnp.zeros(diff, aval(a1).dtype), a1))
    elif diff < 0:
        a2 = fnp.concatenate((fnp.zeros(-diff, aval(a2).dtype), a2))
    return a1, a2


@implements(np.polyadd)
def polyadd(a1, a2):
    """The sum of two polynomials' coefficients (highest power first): ``numpy.polyadd``.

    Args:
        a1, a2 (array_like): 1-d coefficients; the shorter is padded with leading zeros.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.polyadd([1, 2], [9, 5, 4])
        array([9, 6, 6])
    """
    a1, a2 = _padded_pair(a1, a2)
    return to_result(_fnp().add(a1, a2))


@implements(np.polysub)
def polysub(a1, a2):
    """The difference of two polynomials' coefficients: ``numpy.polysub`` (arguments as
    :func:`polyadd`). Example: ``fnp.polysub([2, 10, -2], [3, 10, -4])`` is
    ``array([-1,  0,  2])``."""
    a1, a2 = _padded_pair(a1, a2)
    return to_result(_fnp().subtract(a1, a2))


@implements(np.polyder)
def polyder(p, m=1):
    """The coefficients of the ``m``-th derivative of a polynomial: ``numpy.polyder``.

    Args:
        p (array_like): 1-d coefficients, highest power first.
        m (int, default ``1``): the order of the derivative.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.polyder([1.0, 1.0, 1.0, 1.0], 2)
        array([6., 2.])
    """
    m = operator.index(m)
    if m < 0:
        raise ValueError(f"polyder: order of derivative must be positive, got m={m}")
    fnp = _fnp()
    p = array_operand(p)
    for _ in range(m):
        n = aval(p).shape[0] - 1
        p = fnp.multiply(p[:-1], fnp.arange(n, 0, -1))
    return to_result(p)


@implements(np.polyint)
def polyint(p, m=1, k=None):
    """The coefficients of an ``m``-th antiderivative of a polynomial: ``numpy.polyint``.

    Args:
        p (array_like): 1-d coefficients, highest power first.
        m (int, default ``1``): the order of the antiderivative.
        k (scalar or array_like, default ``None``): the integration constants, the first
            for the innermost integral (None: zeros; one value: that value each time).

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.polyint([3.0, 2.0, 1.0])
        array([1., 1., 1., 0.])
    """
    m = operator.index(m)
    if m < 0:
        raise ValueError(f"polyint: order of integral must be positive (see polyder), got m={m}")
    fnp = _fnp()
    k = fnp.zeros(m, float) if k is None else fnp.atleast_1d(array_operand(k))
    if aval(k).shape[0] == 1 and m > 1:
        k = k[0] * fnp.ones(m, float)
    if aval(k).shape[0] < m:
        raise ValueError(f"polyint: k must be a scalar or a rank-1 array of length 1 or >m, "
                         f"got shape {aval(k).shape} for m={m}")
    p = array_operand(p)
    for i in range(m):
        n = aval(p).shape[0]
        p = fnp.concatenate((fnp.true_divide(p, fnp.arange(n, 0, -1)), k[i:i + 1]))
    return to_result(p)


def _integer_operand(name, what, x):
    x = array_operand(x)
    if aval(x).dtype.kind not in "biu":
        raise TypeError(f"{name}: {what} (shape {aval(x).shape}) must hold integers, got "
                        f"{aval(x).dtype}")
    return x


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    """Entries picked from ``choices`` by the index array ``a``: ``numpy.choose``.

    ``a`` and the choices broadcast together; the result has the choices' common dtype.

    Args:
        a (array_like of ints): which choice each entry takes.
        choices (sequence of array_like, or an array): the choices (an array's first axis).
        out: NumPy's; not supported.
        mode (str, default ``'raise'``): an entry outside ``[0, n)``: ``'raise'`` is
            NumPy's ValueError for a concrete ``a``; for a traced one, the IndexError of the
            bounds check when the function runs (unless ``config.check_bounds`` is off).
            ``'wrap'``: modulo ``n``; ``'clip'``: clamped into ``[0, n)``.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.choose([0, 1, 0], [[1, 2, 3], [10, 20, 30]])
        array([ 1, 20,  3])
    """
    if out is not None:
        raise NotImplementedError("choose(..., out=...) is not supported; use the result")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    fnp = _fnp()
    idx = _integer_operand("choose", "the index array a", a)
    options = list(fnp.unstack(array_operand(choices)) if is_tracer(choices) or
                   isinstance(choices, np.ndarray) else choices)
    n = len(options)
    if mode == "raise" and not is_tracer(idx) and np.any((idx < 0) | (idx >= n)):
        raise ValueError(f"choose: invalid entry in choice array (entries of a must be in "
                         f"[0, {n}) for {n} choices)")
    idx, *options = fnp.broadcast_arrays(idx, *options)
    if mode == "wrap":
        idx = fnp.remainder(idx, n)
    elif mode == "clip":
        idx = fnp.clip(idx, 0, n - 1)
    else:
        idx = fnp.where(fnp.less(idx, 0), n, idx)    # a negative entry fails the bounds check
    picked = fnp.take_along_axis(fnp.stack(options), fnp.expand_dims(idx, 0), axis=0)
    return to_result(picked[0])


@implements(np.unravel_index)
def unravel_index(indices, shape, order="C"):
    """The coordinates of flat ``indices`` in an array of ``shape``: ``numpy.unravel_index``.

    Concrete indices go to NumPy (its ValueError for one out of range). Traced ones, as in
    JAX: a negative index counts from the end, then indices are clamped into range.

    Args:
        indices (array_like of ints): flat positions.
        shape (int or tuple of ints): the array's shape.
        order (str, default ``'C'``): ``'C'`` (row-major) or ``'F'`` (column-major).

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.unravel_index([5, 1], (2, 3))
        (array([1, 0]), array([2, 1]))
    """
    if not is_tracer(indices):
        return np.unravel_index(indices, shape, order)
    dims = tuple(shape) if isinstance(shape, list | tuple) else (operator.index(shape),)
    if order not in ("C", "F"):
        raise ValueError(f"unravel_index: order must be 'C' or 'F', got {order!r}")
    fnp = _fnp()
    idx = _integer_operand("unravel_index", "indices", indices)
    size = int(np.prod(dims))
    rest = fnp.astype(idx, np.intp)
    rest = fnp.clip(fnp.where(fnp.less(rest, 0), rest + size, rest), 0, max(size - 1, 0))
    coords = []
    for d in (reversed(dims) if order == "C" else dims):
        coords.append(fnp.remainder(rest, d))
        rest = fnp.floor_divide(rest, d)
    return tuple(to_result(c) for c in (coords[::-1] if order == "C" else coords))


@implements(np.sort_complex)
def sort_complex(a):
    """``a`` sorted along its last axis as complex numbers (real part first, then
    imaginary): ``numpy.sort_complex``. int8/int16/uint8/uint16 give complex64, other
    real dtypes complex128.

    Args:
        a (array_like): the values.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.sort_complex([3, 1, 2])
        array([1.+0.j, 2.+0.j, 3.+0.j])
    """
    fnp = _fnp()
    b = fnp.sort(array_operand(a))
    dt = aval(b).dtype
    if dt.kind == "c":
        return to_result(b)
    return to_result(fnp.astype(b, np.complex64 if dt.char in "bhBH" else np.complex128))


@implements(np.ix_)
def ix_(*args):
    """Open-mesh index arrays: the ``k``-th of ``n`` 1-d sequences reshaped to ``(1, ..., N,
    ..., 1)`` with ``N`` on axis ``k``: ``numpy.ix_``. A traced boolean sequence is refused
    (its True entries' count is the result's length).

    Args:
        *args (1-d array_like): integer (or concrete boolean) sequences.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> [a.shape for a in fnp.ix_([0, 1], [2, 3, 4])]
        [(2, 1), (1, 3)]
    """
    if not any(is_tracer(a) for a in args):
        return np.ix_(*args)
    fnp = _fnp()
    out = []
    for k, arg in enumerate(args):
        x = array_operand(arg)
        if aval(x).ndim != 1:
            raise ValueError(f"ix_: argument {k} has shape {aval(x).shape}; cross indices must "
                             "be 1-dimensional")
        if aval(x).dtype.kind == "b":
            if is_tracer(x):
                raise TracerError(f"ix_: argument {k} is a traced boolean array ({aval(x)}); "
                                  "the index's length is its number of True entries, which "
                                  "is not known while tracing")
            x = np.nonzero(x)[0]
        if not aval(x).shape[0]:
            x = fnp.astype(x, np.intp)
        shape = (1,) * k + aval(x).shape + (1,) * (len(args) - k - 1)
        out.append(to_result(fnp.reshape(x, shape)))
    return tuple(out)


@implements(np.apply_over_axes)
def apply_over_axes(func, a, axes):
    """``func(a, axis)`` over each of ``axes`` in turn, keeping the dimensions:
    ``numpy.apply_over_axes``.

    Args:
        func (callable): ``func(array, axis)``, returning an array of the same number of
            dimensions or of one fewer (the axis is then put back with size one).
        a (array_like): the array.
        axes (int or sequence of ints): the axes.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.apply_over_axes(fnp.sum, fnp.ones((2, 3, 4)), [0, 2]).shape
        (1, 3, 1)
    """
    fnp = _fnp()
    val = array_operand(a)
    n = aval(val).ndim
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = operator.index(axis) + (n if axis < 0 else 0)
        res = array_operand(func(val, axis))
        if aval(res).ndim != aval(val).ndim:
            res = fnp.expand_dims(res, axis)
        if aval(res).ndim != aval(val).ndim:
            raise ValueError(f"apply_over_axes: the function returns shape {aval(res).shape} "
                             f"for an array of shape {aval(val).shape} and axis {axis}; it "
                             "must keep or drop that axis")
        val = res
    return to_result(val)


def _block_depth(x, where):
    if isinstance(x, tuple):
        raise TypeError(f"block: {where} is a tuple; only lists arrange blocks (np.block does "
                        "not convert tuples to arrays)")
    if not isinstance(x, list):
        return 0, aval(array_operand(x)).ndim
    if not x:
        raise ValueError(f"block: {where} is an empty list")
    found = [_block_depth(e, f"{where}[{i}]") for i, e in enumerate(x)]
    if len({depth for depth, _ in found}) != 1:
        raise ValueError(f"block: list depths are mismatched under {where}: "
                         f"{[depth for depth, _ in found]}")
    return found[0][0] + 1, max(nd for _, nd in found)


def _assemble(fnp, x, depth, list_ndim, ndim):
    if not isinstance(x, list):
        x = array_operand(x)
        return fnp.reshape(x, (1,) * (ndim - aval(x).ndim) + aval(x).shape)
    parts = [_assemble(fnp, e, depth + 1, list_ndim, ndim) for e in x]
    return fnp.concatenate(parts, axis=-(list_ndim - depth))


@implements(np.block)
def block(arrays):
    """An array assembled from nested lists of blocks: ``numpy.block``. The innermost lists
    join along the last axis, the next ones along the one before, ...; each block first
    gets leading axes of size one up to the result's dimensions.

    Args:
        arrays (nested list of array_like): the blocks (lists only, equally deep).

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.block([[fnp.ones((2, 2)), fnp.zeros((2, 1))], [fnp.zeros((1, 3))]]).shape
        (3, 3)
    """
    list_ndim, array_ndim = _block_depth(arrays, "arrays")
    fnp = _fnp()
    result = _assemble(fnp, arrays, 0, list_ndim, max(list_ndim, array_ndim))
    return to_result(fnp.copy(result) if list_ndim == 0 else result)


def _bit_weights(bitorder, name):
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    weights = 1 << np.arange(8, dtype=np.int32)
    return weights[::-1].copy() if bitorder == "big" else weights


def _along_last(fnp, x, axis):
    """``x`` (flattened when ``axis`` is None) with ``axis`` moved last, and that axis."""
    if axis is None:
        return fnp.ravel(x), 0
    axis = operator.index(axis)
    return fnp.moveaxis(x, axis, -1), axis


@implements(np.packbits)
def packbits(a, axis=None, bitorder="big"):
    """The non-zero-ness of ``a``'s entries packed 8 to a uint8: ``numpy.packbits``.

    Args:
        a (array_like of ints or bools): the bits (any non-zero entry is a 1).
        axis (int, default ``None``): the axis to pack along; None packs the flattened
            array. A last group of fewer than 8 is padded with zeros.
        bitorder (str, default ``'big'``): ``'big'`` puts the first bit in the highest
            place, ``'little'`` in the lowest.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.packbits([1, 0, 1])
        array([160], dtype=uint8)
    """
    fnp = _fnp()
    x = array_operand(a)
    if aval(x).dtype.kind not in "biu":
        raise TypeError(f"packbits: expected an input array of integer or boolean data type, "
                        f"got {aval(x).dtype} (shape {aval(x).shape})")
    weights = _bit_weights(bitorder, "packbits")
    x, axis = _along_last(fnp, x, axis)
    lead, n = aval(x).shape[:-1], aval(x).shape[-1]
    bits = fnp.astype(fnp.not_equal(x, 0), np.int32)
    bits = fnp.pad(bits, [(0, 0)] * len(lead) + [(0, -n % 8)])
    groups = fnp.reshape(bits, (*lead, -(-n // 8), 8))
    packed = fnp.astype(fnp.sum(groups * weights, axis=-1), np.uint8)
    return to_result(fnp.moveaxis(packed, -1, axis))


@implements(np.unpackbits)
def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of a uint8 array, 8 per byte: ``numpy.unpackbits``.

    Args:
        a (array_like of uint8): the bytes.
        axis (int, default ``None``): the axis to unpack along; None unpacks the flattened
            array.
        count (int, default ``None``): how many bits to keep along the axis: the first
            ``count`` (zeros added past the end), or all but the last ``-count``.
        bitorder (str, default ``'big'``): ``'big'`` gives the highest bit first.

    Example::

        >>> import functorch_core.numpy as fnp
        >>> import numpy as np
        >>> fnp.unpackbits(np.array([5], np.uint8), count=4)
        array([0, 0, 0, 0], dtype=uint8)
    """
    fnp = _fnp()
    x = array_operand(a)
    if aval(x).dtype != np.uint8:
        raise TypeError(f"unpackbits: expected an input array of unsigned byte data type, got "
                        f"{aval(x).dtype} (shape {aval(x).shape})")
    weights = _bit_weights(bitorder, "unpackbits")
    x, axis = _along_last(fnp, x, axis)
    lead, n = aval(x).shape[:-1], aval(x).shape[-1] * 8
    bytes_ = fnp.astype(x, np.int32)[..., None]
    bits = fnp.astype(fnp.bitwise_and(fnp.floor_divide(bytes_, weights), 1), np.uint8)
    bits = fnp.reshape(bits, (*lead, n))
    if count is not None:
        count = operator.index(count)
        if count < -n:
            raise ValueError(f"unpackbits: -count larger than number of elements ({n})")
        keep = count if count >= 0 else n + count
        bits = bits[..., :keep] if keep <= n else fnp.pad(
            bits, [(0, 0)] * len(lead) + [(0, keep - n)])
    return to_result(fnp.moveaxis(bits, -1, axis))


@implements(np.ravel_multi_index)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat positions of coordinates in an array of shape ``dims``:
    ``numpy.ravel_multi_index``.

    Args:
        multi_index (tuple of array_like of ints): one coordinate array per dimension; they
            broadcast together.
        dims (tuple of ints): the array's shape.
        mode (str or tuple of str, default ``'raise'``): per dimension, ``'wrap'`` (modulo
            the size) or ``'clip'`` (clamped into range); ``'raise'`` (NumPy's ValueError
            out of range) needs the values, so traced coordinates refuse it.
        order (str, default ``'C'``): ``'C'`` (row-major) or ``'F'`` (column-major).

    Example::

        >>> import functorch_core.numpy as fnp
        >>> fnp.ravel_multi_index(([1, 0], [2, 1]), (2, 3), mode="clip")
        array([5, 1])
    """
    if not any(is_tracer(i) for i in multi_index):
        return np.ravel_multi_index(multi_index, dims, mode=mode, order=order)
    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} coordinate arrays for the "
                         f"{len(dims)} dimensions of shape {dims}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if "raise" in modes:
        raise TracerError("ravel_multi_index(mode='raise') of traced coordinates: checking "
                          "them against the shape needs their values; pass mode='wrap' or "
                          "mode='clip'")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    fnp = _fnp()
    coords = fnp.broadcast_arrays(*(fnp.astype(_integer_operand(
        "ravel_multi_index", f"coordinate array {k}", i), np.intp)
        for k, i in enumerate(multi_index)))
    strides = np.cumprod((1, *dims[::-1]))[:-1][::-1] if order == "C" else \
        np.cumprod((1, *dims))[:-1]
    flat = None
    for c, d, m, stride in zip(coords, dims, modes, strides, strict=True):
        if m not in ("wrap", "clip"):
            raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', "
                             f"got {m!r}")
        c = fnp.remainder(c, d) if m == "wrap" else fnp.clip(c, 0, d - 1)
        term = fnp.multiply(c, int(stride))
        flat = term if flat is None else fnp.add(flat, term)
    return to_result(flat)
