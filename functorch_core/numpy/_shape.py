"""Shape manipulation: reshape, transpose, broadcast, join, split, tile, roll, pad.

The functions NumPy answers with a view (reshape, ravel, transpose, swapaxes,
moveaxis, squeeze, expand_dims, flip, broadcast_to, atleast_*) apply exactly
one layout primitive (``reshape``, ``transpose``, ``squeeze``,
``expand_dims``, ``rev``, ``broadcast_in_dim``), which functionalize reads as
a view of the operand. The functions that return a new array in NumPy end in
a primitive that makes one (``concatenate``, ``pad``, ``gather``) or in
``copy``.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from ._core import (
    aval,
    cast,
    checked_axis,
    implements,
    is_tracer,
    normalize_axis,
    operand,
    result_type,
    to_result,
)
from ._indexing import _index_array, getitem, take
from ._methods import _fnp
from ._shape_base import _as_shape, _check_order, _ints, broadcast_to, broadcast_view, ravel
from ._writes import assign_cast

__all__ = [
    "reshape", "ravel", "flatten", "transpose", "permute_dims", "swapaxes", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "broadcast_arrays", "concatenate", "concat",
    "stack", "hstack", "vstack", "split", "array_split", "tile", "repeat", "flip", "roll", "pad",
    "atleast_1d", "atleast_2d",
]


def _copy(x):
    """A new array equal to ``x`` (``fnp.copy``), so writes to it never reach ``x``."""
    return _fnp().copy(x)


def _resolve_shape(size, shape):
    """``shape`` with its one unknown (negative) entry filled in, as ``ndarray.reshape``."""
    unknown = [i for i, d in enumerate(shape) if d < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = int(np.prod([d for d in shape if d >= 0], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            shown = ", ".join("newaxis" if d < 0 else str(d) for d in shape)
            raise ValueError(f"cannot reshape array of size {size} into shape ({shown})")
        shape = tuple(size // known if d < 0 else d for d in shape)
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


@implements(np.reshape)
def reshape(a, /, shape, order="C", *, copy=None):
    """``numpy.reshape``: a view with a new shape (one entry may be -1). Only order='C'."""
    _check_order("reshape", order)
    a = operand(a)
    av = aval(a)
    out = P.reshape.bind(a, new_sizes=_resolve_shape(av.size, _as_shape(shape)))
    return _copy(out) if copy else out


def flatten(a, order="C"):
    """``ndarray.flatten``: a 1-D copy. Only order='C'."""
    _check_order("flatten", order)
    return _copy(ravel(a))


def _permutation(axes, ndim):
    if axes is None:
        return tuple(range(ndim))[::-1]
    axes = tuple(axes) if np.iterable(axes) else (axes,)
    if len(axes) != ndim:
        raise ValueError("axes don't match array")
    perm = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(perm)) != ndim:
        raise ValueError("repeated axis in transpose")
    return perm


@implements(np.transpose, np.permute_dims)
def transpose(a, axes=None):
    """``numpy.transpose``: a view with permuted axes (reversed when ``axes`` is None)."""
    a = operand(a)
    return P.transpose.bind(a, permutation=_permutation(axes, aval(a).ndim))


permute_dims = transpose


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    """``numpy.swapaxes``: a view with two axes interchanged."""
    a = operand(a)
    nd = aval(a).ndim
    i, j = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    perm = list(range(nd))
    perm[i], perm[j] = j, i
    return P.transpose.bind(a, permutation=tuple(perm))


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    """``numpy.moveaxis``: a view with axes moved to new positions."""
    a = operand(a)
    nd = aval(a).ndim
    src = normalize_axis_tuple(source, nd, "source")
    dst = normalize_axis_tuple(destination, nd, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return P.transpose.bind(a, permutation=tuple(order))


@implements(np.expand_dims)
def expand_dims(a, axis):
    """``numpy.expand_dims``: a view with length-1 axes inserted (``axis`` int or tuple)."""
    a = operand(a)
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    dims = normalize_axis_tuple(axes, aval(a).ndim + len(axes))
    return P.expand_dims.bind(a, dimensions=tuple(sorted(dims)))


@implements(np.squeeze)
def squeeze(a, axis=None):
    """``numpy.squeeze``: a view without the given (or all) length-1 axes."""
    a = operand(a)
    shp = aval(a).shape
    if axis is None:
        dims = tuple(i for i, d in enumerate(shp) if d == 1)
    elif not shp and not isinstance(axis, tuple | list):
        normalize_axis(axis, 1)      # NumPy lets a 0-d array squeeze its "axis" 0 or -1
        dims = ()
    else:
        dims = tuple(sorted(normalize_axis_tuple(axis, len(shp))))
        if any(shp[d] != 1 for d in dims):
            raise ValueError("cannot select an axis to squeeze out which has size not equal "
                             "to one")
    return P.squeeze.bind(a, dimensions=dims)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    """``numpy.broadcast_arrays``: a tuple of views broadcast to one shape."""
    ops = [operand(a) for a in args]
    shape = np.broadcast_shapes(*(aval(o).shape for o in ops))
    return tuple(broadcast_view(o, shape) for o in ops)


def _join_dtype(name, ops, dtype, casting):
    if dtype is None:
        return result_type(*ops)
    dt = dtypes.canonical(dtype)
    for o in ops:
        src = aval(o).dtype
        if not np.can_cast(src, dt, casting):
            raise TypeError(f"Cannot cast array data from {src!r} to {dt!r} according to "
                            f"the rule {casting!r}")
    return dt


def _cast_all(ops, dt):
    return [cast(o, dt, weak=aval(o).weak_type) for o in ops]


@implements(np.concatenate, np.concat)
def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``numpy.concatenate``: join along ``axis`` (flattening first when None)."""
    if out is not None:
        raise NotImplementedError("concatenate(..., out=...) is not supported")
    ops = [operand(a) for a in arrays]
    if not ops:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        ops, axis = [ravel(o) for o in ops], 0
    shapes = [aval(o).shape for o in ops]
    nd = len(shapes[0])
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, nd)
    for i, s in enumerate(shapes):
        if len(s) != nd:
            raise ValueError("all the input arrays must have same number of dimensions, but "
                             f"the array at index 0 has {nd} dimension(s) and the array at "
                             f"index {i} has {len(s)} dimension(s)")
        for d in range(nd):
            if d != ax and s[d] != shapes[0][d]:
                raise ValueError("all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, but along dimension {d}, the array "
                                 f"at index 0 has size {shapes[0][d]} and the array at index "
                                 f"{i} has size {s[d]}")
    dt = _join_dtype("concatenate", ops, dtype, casting)
    return P.concatenate.bind(*_cast_all(ops, dt), dimension=ax)


concat = concatenate


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``numpy.stack``: join equal-shaped arrays along a new axis."""
    if out is not None:
        raise NotImplementedError("stack(..., out=...) is not supported")
    ops = [operand(a) for a in arrays]
    if not ops:
        raise ValueError("need at least one array to stack")
    if len({aval(o).shape for o in ops}) > 1:
        raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, aval(ops[0]).ndim + 1)
    dt = _join_dtype("stack", ops, dtype, casting)
    parts = [P.expand_dims.bind(o, dimensions=(ax,)) for o in _cast_all(ops, dt)]
    return P.concatenate.bind(*parts, dimension=ax)


def _atleast_1d(x):
    return P.reshape.bind(x, new_sizes=(1,)) if aval(x).ndim == 0 else x


def _atleast_2d(x):
    nd = aval(x).ndim
    if nd == 0:
        return P.reshape.bind(x, new_sizes=(1, 1))
    return P.expand_dims.bind(x, dimensions=(0,)) if nd == 1 else x


def _each(fn, arys):
    res = [fn(operand(a)) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


@implements(np.atleast_1d)
def atleast_1d(*arys):
    """``numpy.atleast_1d``: one array, or a tuple of them for several arguments."""
    return _each(_atleast_1d, arys)


@implements(np.atleast_2d)
def atleast_2d(*arys):
    """``numpy.atleast_2d``: one array, or a tuple of them for several arguments."""
    return _each(_atleast_2d, arys)


@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """``numpy.hstack``: concatenate along axis 1 (axis 0 for 1-D arrays)."""
    arrs = [_atleast_1d(operand(a)) for a in tup]
    axis = 0 if arrs and aval(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """``numpy.vstack``: concatenate along axis 0 after ``atleast_2d``."""
    return concatenate([_atleast_2d(operand(a)) for a in tup], 0, dtype=dtype, casting=casting)


def _slice_axis(x, axis, start, stop):
    return getitem(x, (slice(None),) * axis + (slice(start, stop),))


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """``numpy.array_split``: a list of views; sections may be unequal."""
    x = operand(ary)
    ax = normalize_axis(axis, aval(x).ndim)
    n = aval(x).shape[ax]
    if np.iterable(indices_or_sections):
        points = [0, *indices_or_sections, n]
    else:
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = np.cumsum(sizes).tolist()
    return [_slice_axis(x, ax, points[i], points[i + 1]) for i in range(len(points) - 1)]


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    """``numpy.split``: a list of views; an int must divide the axis evenly."""
    if not np.iterable(indices_or_sections):
        x = operand(ary)
        n = aval(x).shape[normalize_axis(axis, aval(x).ndim)]
        if n % operator.index(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


@implements(np.tile)
def tile(A, reps):
    """``numpy.tile``: a new array repeating ``A`` ``reps`` times along each axis."""
    x = operand(A)
    reps = _ints(reps if np.iterable(reps) else (reps,), "reps")
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    shp = aval(x).shape
    nd = max(len(shp), len(reps))
    shp = (1,) * (nd - len(shp)) + shp
    reps = (1,) * (nd - len(reps)) + reps
    if shp != aval(x).shape:
        x = P.reshape.bind(x, new_sizes=shp)
    if all(r == 1 for r in reps):
        return _copy(x)
    inter = tuple(d for pair in zip(reps, shp, strict=True) for d in pair)
    x = P.broadcast_in_dim.bind(x, shape=inter, broadcast_dimensions=tuple(range(1, 2 * nd, 2)))
    return P.reshape.bind(x, new_sizes=tuple(r * s for r, s in zip(reps, shp, strict=True)))


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    """``numpy.repeat``: a new array; ``repeats`` is an int or a concrete array."""
    if is_tracer(repeats):
        raise TypeError("repeat: the repeats must be concrete (the result's shape depends on "
                        "them); pass them as a static argument")
    x = operand(a)
    if axis is None:
        x, axis = ravel(x), 0
    x, ax = checked_axis(x, axis)
    index = np.repeat(np.arange(aval(x).shape[ax]), _index_array(repeats))
    return take(x, index, axis=ax)


@implements(np.flip)
def flip(m, axis=None):
    """``numpy.flip``: a view with the order of elements reversed along the given axes."""
    x = operand(m)
    nd = aval(x).ndim
    dims = tuple(range(nd)) if axis is None else tuple(sorted(normalize_axis_tuple(axis, nd)))
    return to_result(P.rev.bind(x, dimensions=dims), scalar=True)


@implements(np.roll)
def roll(a, shift, axis=None):
    """``numpy.roll``: a new array with elements shifted cyclically along the given axes."""
    x = operand(a)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), aval(x).shape)
    shp = aval(x).shape
    axes = normalize_axis_tuple(axis, len(shp), allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(len(shp)), 0)
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    rolled = False
    for ax, sh in shifts.items():
        n = shp[ax]
        s = sh % n if n else 0
        if s:
            x = P.concatenate.bind(_slice_axis(x, ax, n - s, n), _slice_axis(x, ax, 0, n - s),
                                   dimension=ax)
            rolled = True
    return x if rolled else _copy(x)


def _as_pairs(x, ndim, as_index=False):
    """``np.pad``'s reading of ``pad_width``/``constant_values``: ``ndim`` (before, after) pairs."""
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3 and x.size == 1:
        x = x.ravel()
        pairs = ((x[0], x[0]),) * ndim
    elif x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        x = x.ravel()
        pairs = ((x[0], x[1]),) * ndim
    else:
        pairs = np.broadcast_to(x, (ndim, 2)).tolist()
    if as_index and any(v < 0 for pair in pairs for v in pair):
        raise ValueError("index can't contain negative values")
    return [tuple(p) for p in pairs]


def _pad_widths(pad_width, ndim):
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for ax, w in pad_width.items():
            seq[ax] = (w, w) if isinstance(w, int) else tuple(w)
        pad_width = seq
    if np.asarray(pad_width).dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    return [(int(lo), int(hi)) for lo, hi in _as_pairs(pad_width, ndim, as_index=True)]


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """``numpy.pad`` with ``mode='constant'``: a new, padded array.

    ``constant_values`` is a scalar (concrete or traced) or concrete per-axis
    (before, after) pairs; where two axes' pads meet, the later axis's value
    wins, as in NumPy.
    """
    if mode != "constant":
        raise NotImplementedError(f"pad(mode={mode!r}) is not supported; only mode='constant'")
    unsupported = set(kwargs) - {"constant_values"}
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode 'constant': {unsupported}")
    x = operand(array)
    av = aval(x)
    widths = _pad_widths(pad_width, av.ndim)
    values = kwargs.get("constant_values", 0)
    if is_tracer(values):
        if values.ndim:
            raise NotImplementedError("pad: traced constant_values must be a scalar")
        return P.pad.bind(x, assign_cast(values, av.dtype),
                          padding_config=tuple((lo, hi, 0) for lo, hi in widths))
    pairs = [tuple(assign_cast(v, av.dtype) for v in pair)
             for pair in _as_pairs(values, av.ndim)]
    # (axis, side, value) of every side that is really padded, in NumPy's order.
    sides = [(ax, side, pairs[ax][side]) for ax in range(av.ndim) for side in (0, 1)
             if widths[ax][side]]
    if len({v.tobytes() for _, _, v in sides}) <= 1:
        value = sides[0][2] if sides else assign_cast(0, av.dtype)
        return P.pad.bind(x, value, padding_config=tuple((lo, hi, 0) for lo, hi in widths))
    for ax, side, value in sides:
        config = [(0, 0, 0)] * av.ndim
        config[ax] = (widths[ax][0], 0, 0) if side == 0 else (0, widths[ax][1], 0)
        x = P.pad.bind(x, value, padding_config=tuple(config))
    return x
