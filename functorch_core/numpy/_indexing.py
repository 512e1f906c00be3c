"""Indexing: ``x[index]``, ``x[index] = value``, in-place operators, take, nonzero.

Reading splits an index as NumPy does. Its basic part (slices of any step,
integers, None, Ellipsis) becomes views: one ``slice``, one ``rev`` for the
negative steps, ``squeeze`` for the integers and ``expand_dims`` for the new
axes. Integer arrays (and concrete boolean masks, through ``np.nonzero``)
become one ``gather``, followed by a ``transpose`` where NumPy puts the
broadcast index dimensions in the middle. Concrete indices are checked and
wrapped here; traced ones are wrapped with ``select`` and clamped by ``gather``.

Writing records the mutation primitive ``setitem`` with the indexer that
``ir.indexing.normalize`` returns; functionalize rewrites it into pure updates.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from functorch_core.config import config
from functorch_core.ir import Tracer, TracerError
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.indexing import (
    advanced_layout,
    broadcast_shapes,
    check_index,
    indexed_shape,
    normalize,
)
from functorch_core.ir.source import user_code, user_source

from ._core import (
    _walk,
    aval,
    cast,
    checked_axis,
    constant,
    implements,
    is_tracer,
    normalize_axis,
    operand,
    to_result,
)
from ._masked import READ_HINT, MaskedValues, masked_write, traced_mask
from ._methods import _fnp
from ._shape_base import broadcast_view, ravel
from ._writes import (
    UFuncOutputCastingError,
    _concrete_target_error,
    assign_cast,
    ufunc_out,  # ``x op= y`` is ``op(x, y, out=x)``
)

__all__ = ["getitem", "setitem", "inplace_update", "take", "take_along_axis", "put_along_axis",
           "UFuncOutputCastingError"]


_MASK_HINT = READ_HINT


# --- reading an index --------------------------------------------------------

def _is_index_array(e) -> bool:
    return isinstance(e, Tracer | np.ndarray)


def _index_array(e):
    """A list, array or tracer used as an index, as an array (``[]`` is an empty int array)."""
    e = operand(e)
    if is_tracer(e):
        return e
    e = np.asarray(e)
    return e.astype(np.intp) if e.size == 0 and dtype_kind(e.dtype) == "f" else e


def _entry(e):
    if e is None or e is Ellipsis or isinstance(e, slice):
        return e
    if isinstance(e, bool | np.bool_):
        raise NotImplementedError("a scalar boolean index (x[True], x[False]) is not supported")
    if isinstance(e, list | tuple | np.ndarray | Tracer):
        e = _index_array(e)
    if is_tracer(e) and e.dtype == np.bool_:
        raise TracerError(f"Indexing with a traced boolean mask: {_MASK_HINT}.")
    if isinstance(e, np.ndarray) and e.ndim == 0:
        if e.dtype == np.bool_:
            raise NotImplementedError("a 0-d boolean index is not supported")
        if e.dtype.kind in "iu":
            return int(e)           # NumPy reads a 0-d integer array as an integer
    return e


def _is_mask(e) -> bool:
    return isinstance(e, np.ndarray) and e.dtype == np.bool_


def _expand_masks(shape, entries):
    """Replace each concrete boolean mask by the integer arrays of its ``np.nonzero``."""
    if not any(_is_mask(e) for e in entries):
        return entries
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(e.ndim if _is_mask(e) else 0 if e is None or e is Ellipsis else 1
                   for e in entries)
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{consumed} were indexed")
    out, axis = [], 0
    for e in entries:
        if _is_mask(e):
            for j, m in enumerate(e.shape):
                if m != shape[axis + j]:
                    raise IndexError(f"boolean index did not match indexed array along axis "
                                     f"{axis + j}; size of axis is {shape[axis + j]} but size "
                                     f"of corresponding boolean axis is {m}")
            out.extend(np.nonzero(e))
            axis += e.ndim
            continue
        if e is Ellipsis:
            axis += len(shape) - consumed
        elif e is not None:
            axis += 1
        out.append(e)
    return tuple(out)


def _entry_axes(indexer):
    """The axis of the indexed array that each entry consumes (None for a new axis)."""
    axes, axis = [], 0
    for e in indexer:
        axes.append(None if e[0] == "newaxis" else axis)
        axis += e[0] != "newaxis"
    return axes


def _checked(a, n, axis, call):
    """Index array ``a`` into an axis of size ``n``: int64, negatives wrapped, bounds checked
    (a traced ``a`` when the graph runs, unless ``config.check_bounds`` is off: then an
    out-of-bounds index is clamped into range by ``gather``)."""
    if not is_tracer(a):
        return check_index(a, n, axis)
    if config.check_bounds:
        return P.check_index.bind(a, size=n, axis=axis,
                                  where=f"{call} at {user_source()}{user_code()}")
    signed = a.dtype.kind == "i"
    a = cast(a, np.int64)
    if not signed:
        return a
    wrapped = P.add.bind(a, constant(n, np.int64))
    return P.select.bind(P.lt.bind(a, constant(0, np.int64)), wrapped, a)


class Parsed(NamedTuple):
    """A user index, read: the normalized indexer, its index arrays (int64, wrapped) and
    what the indexer cannot say: whether the index had an Ellipsis (then a 0-d result is an
    array, not a scalar) and whether NumPy puts the broadcast index dimensions first."""

    indexer: tuple
    arrays: list
    has_ellipsis: bool
    front: bool


def parse(shape, index, call="x[index]") -> Parsed:
    """Read a user index into an array of ``shape``; ``call`` names the user's call in the
    error of a traced out-of-bounds index."""
    entries = tuple(_entry(e) for e in (index if isinstance(index, tuple) else (index,)))
    entries = _expand_masks(shape, entries)
    indexer, arrays = normalize(shape, entries, _is_index_array)
    axes = _entry_axes(indexer)
    for e, ax in zip(indexer, axes, strict=True):
        if e[0] == "array":
            arrays[e[1]] = _checked(arrays[e[1]], shape[ax], ax, call)
    # NumPy's placement rule reads the index as written: an Ellipsis between two advanced
    # entries separates them even where it stands for no axis, which the indexer drops.
    adv = [i for i, e in enumerate(entries)
           if not (e is None or e is Ellipsis or isinstance(e, slice))]
    front = bool(arrays) and adv != list(range(adv[0], adv[-1] + 1))
    return Parsed(indexer, arrays, any(e is Ellipsis for e in entries), front)


def parse_index(shape, index, call="x[index]"):
    """``(indexer, index arrays, has_ellipsis)`` of a user index into an array of ``shape``."""
    return parse(shape, index, call)[:3]


def _front_layout(indexer, target, front):
    """Where NumPy puts the index dimensions first but the indexer keeps them in place (an
    Ellipsis of no axes between advanced entries): NumPy's indexed shape and the permutation
    from it to the indexer's. ``(target, None)`` otherwise."""
    adv, indexer_front = advanced_layout(indexer)
    before = sum(e[0] in ("slice", "newaxis") for e in indexer[:adv[0]]) if adv else 0
    if not front or indexer_front or not before:
        return target, None
    nb = len(target) - sum(e[0] in ("slice", "newaxis") for e in indexer)
    perm = _index_dims_in_place(nb, before, len(target))
    return tuple(target[p] for p in np.argsort(perm)), perm


def _index_dims_in_place(nb, before, ndim):
    """The permutation that moves ``nb`` leading index dimensions behind the next ``before``."""
    return (*range(nb, nb + before), *range(nb), *range(nb + before, ndim))


# --- x[index] ----------------------------------------------------------------

def _slice_params(start, stop, step):
    """(start, limit, stride, reversed) of the positive-stride slice that, reversed when
    asked, gives the elements of ``range(start, stop, step)``."""
    n = len(range(start, stop, step))
    if n == 0:
        return 0, 0, 1, False
    if step > 0:
        return start, start + (n - 1) * step + 1, step, False
    return start + (n - 1) * step, start + 1, -step, n > 1


def _basic(x, indexer, keep_ints):
    """Apply the slices (and, unless ``keep_ints``, the integers): slice, rev, squeeze."""
    shp = aval(x).shape
    starts, limits, strides, rev, drop = [], [], [], [], []
    for e, ax in zip(indexer, _entry_axes(indexer), strict=True):
        if ax is None:
            continue
        s, lim, st, flip = 0, shp[ax], 1, False
        if e[0] == "slice":
            s, lim, st, flip = _slice_params(*e[1:])
        elif e[0] == "int" and not keep_ints:
            s, lim = e[1], e[1] + 1
            drop.append(ax)
        starts.append(s)
        limits.append(lim)
        strides.append(st)
        if flip:
            rev.append(ax)
    if (starts, limits, strides) != ([0] * len(shp), list(shp), [1] * len(shp)):
        x = P.slice.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                         strides=tuple(strides))
    if rev:
        x = P.rev.bind(x, dimensions=tuple(rev))
    if drop:
        x = P.squeeze.bind(x, dimensions=tuple(drop))
    return x


def _stack_indices(parts, bshape):
    """The gather indices: ``parts`` broadcast to ``bshape`` and stacked on a last axis."""
    if not any(is_tracer(p) for p in parts):
        return np.stack([np.broadcast_to(p, bshape) for p in parts], axis=-1)
    cols = []
    for p in parts:
        if is_tracer(p):
            p = p if p.shape == bshape else broadcast_view(p, bshape)
            cols.append(P.expand_dims.bind(p, dimensions=(len(bshape),)))
        else:
            cols.append(np.broadcast_to(p, bshape)[..., None])
    return cols[0] if len(cols) == 1 else P.concatenate.bind(*cols, dimension=len(bshape))


def _advanced(y, indexer, arrays, front):
    """Gather the integer and array entries of ``y`` (one axis per non-newaxis entry); the
    index dimensions go first if ``front``, else where the first advanced entry stands."""
    axes, parts = [], []
    for e, ax in zip(indexer, _entry_axes(indexer), strict=True):
        if e[0] in ("int", "array"):
            axes.append(ax)
            parts.append(np.int64(e[1]) if e[0] == "int" else arrays[e[1]])
    bshape = broadcast_shapes(*(aval(p).shape for p in parts), what="indexing arrays")
    out = P.gather.bind(y, _stack_indices(parts, bshape), axes=tuple(axes))
    before = axes[0]      # the sliced axes of y before the first advanced one
    if not front and before:
        perm = _index_dims_in_place(len(bshape), before, aval(out).ndim)
        out = P.transpose.bind(out, permutation=perm)
    return out, len(bshape)


def _new_axes(indexer, nb, front):
    """Where the new axes of ``indexer`` land in the result."""
    adv, _ = advanced_layout(indexer)
    first = adv[0] if adv and not front else None
    pos, dims = (nb if front else 0), []
    for i, e in enumerate(indexer):
        if i == first:
            pos += nb
        if e[0] == "newaxis":
            dims.append(pos)
        pos += e[0] in ("slice", "newaxis")
    return tuple(dims)


def read_index(x, parsed: Parsed):
    """``x[index]`` for a parsed index: views for the basic part, a gather for the rest."""
    indexer, arrays = parsed.indexer, parsed.arrays
    out = _basic(x, indexer, keep_ints=bool(arrays))
    nb = 0
    if arrays:
        out, nb = _advanced(out, indexer, arrays, parsed.front)
    dims = _new_axes(indexer, nb, parsed.front)
    return P.expand_dims.bind(out, dimensions=dims) if dims else out


def getitem(x, index, call="x[index]"):
    """``x[index]`` with NumPy's semantics; the tracer's ``__getitem__``.

    Basic indices (slices of any step, integers, None, Ellipsis) give views;
    integer arrays (lists, ndarrays, tracers) gather, with NumPy's placement
    of the broadcast index dimensions. A traced boolean mask (alone, over the
    leading axes) gives :class:`MaskedValues`, which only arithmetic and a write
    back (``x[mask] += v``) accept; other boolean masks must be concrete.
    Out-of-bounds indices raise IndexError as in NumPy: concrete ones here,
    traced ones when the graph runs, naming ``call`` and the user's line
    (clamped into range instead when ``config.check_bounds`` is False).
    """
    x = operand(x)
    if not is_tracer(x) and not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if traced_mask(x, index) is not None:       # a read here, or the first half of a write
        return MaskedValues(x, traced_mask(x, index))
    parsed = parse(aval(x).shape, index, call)
    out = read_index(x, parsed)
    if is_tracer(out) and not out.ndim and not parsed.has_ellipsis and not parsed.arrays:
        out = P.convert.bind(out, new_dtype=out.dtype)   # NumPy gives a scalar: a copy
    return to_result(out, scalar=not parsed.has_ellipsis)


# --- writing -----------------------------------------------------------------

def _assignable(src, dst) -> bool:
    """Whether a value of shape ``src`` broadcasts into ``dst`` (extra leading 1s allowed)."""
    src = tuple(src)
    while len(src) > len(dst) and src[0] == 1:
        src = src[1:]
    return len(src) <= len(dst) and all(s in (1, d) for s, d in
                                        zip(src[::-1], dst[::-1], strict=False))


def setitem(x, index, value, call="x[index] = value"):
    """``x[index] = value``; the tracer's ``__setitem__``.

    On a tracer it records ``setitem(x, value, *index_arrays, indexer=...)``
    with ``value`` cast to ``x.dtype`` as NumPy's assignment casts; on a
    concrete array it assigns eagerly. ``value`` must broadcast to the
    indexed shape. With a traced boolean mask (alone, over the leading axes) it
    records ``x = where(mask, value, x)`` (see ``_masked``).
    """
    if not is_tracer(x):
        if any(is_tracer(e) for e in _walk([index, value])):
            raise _concrete_target_error("x[index] = value", x)
        x[index] = value
        return
    mask = traced_mask(x, index)
    if mask is not None:
        return masked_write(x, mask, value)
    indexer, arrays, has_ellipsis, front = parse(x.shape, index, call)
    target = indexed_shape(x.shape, indexer, [aval(a).shape for a in arrays])
    numpy_target, perm = _front_layout(indexer, target, front)
    value = assign_cast(value, x.dtype)
    vshape = aval(value).shape
    if vshape and not has_ellipsis and all(e[0] == "int" for e in indexer):
        # NumPy writes one element here, and refuses anything but a scalar or a 0-d array
        raise ValueError("setting an array element with a sequence.")
    if not _assignable(vshape, numpy_target):
        raise ValueError(f"could not broadcast input array from shape {vshape} "
                         f"into shape {numpy_target}")
    if len(vshape) > len(target):     # drop the leading 1s NumPy ignores
        value = P.reshape.bind(value, new_sizes=vshape[len(vshape) - len(target):])
    if perm is not None:              # lay the value out as the indexer reads it
        value = P.transpose.bind(broadcast_view(value, numpy_target), permutation=perm)
    P.setitem.bind(x, value, *arrays, indexer=indexer)


def inplace_update(x, fn_name, other):
    """``x <op>= other`` (``fn_name`` names the fnp function): compute, check, write back.

    The result must cast to ``x.dtype`` under NumPy's 'same_kind' rule
    (``x_int += 1.5`` raises :class:`UFuncOutputCastingError`, a TypeError)
    and keep ``x``'s shape; on a tracer the write is a ``setitem`` of the
    whole array.
    """
    result = getattr(_fnp(), fn_name)(x, other)
    name = getattr(getattr(np, fn_name, None), "__name__", fn_name)
    return ufunc_out(name, x, result)


# --- take, take_along_axis, nonzero ------------------------------------------

_TAKE_MODES = ("raise", "wrap", "clip", "fill")


def _moded(idx, n, mode, name, wrap_negative):
    """``idx`` into an axis of size ``n`` under ``mode``: (the index to read with, the mask
    of the in-bounds indices for mode 'fill', else None). 'raise' leaves the check to the
    read; 'wrap' takes ``idx`` modulo ``n``; 'clip' clamps into ``[0, n)`` (after counting
    negatives from the end when ``wrap_negative``); 'fill' reads 0 where out of bounds."""
    if mode not in _TAKE_MODES:
        raise ValueError(f"{name}: mode must be one of {', '.join(map(repr, _TAKE_MODES))}, "
                         f"got {mode!r}")
    if mode == "raise":
        return idx, None
    if n == 0:
        raise IndexError(f"{name}: cannot do a non-empty take from an empty axis "
                         f"(mode={mode!r})")
    fnp = _fnp()
    idx = cast(idx, np.int64)
    if mode == "wrap":
        return fnp.mod(idx, n), None
    if mode == "clip":
        if wrap_negative:
            idx = fnp.where(idx < 0, idx + n, idx)
        return fnp.clip(idx, 0, n - 1), None
    valid = (idx >= -n) & (idx < n)
    return fnp.where(valid, idx, 0), valid


def _default_fill(dt):
    """JAX's fill for mode='fill': NaN, the most negative signed or the largest unsigned
    integer, True."""
    if dtype_kind(dt) in "fc":
        return np.nan
    if dt.kind in "iu":
        return np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max
    return True


def _filled(out, valid, shape, fill_value):
    """``out`` where ``valid`` (broadcast to ``shape``), else ``fill_value`` cast."""
    fnp = _fnp()
    dt = aval(out).dtype
    fill = np.asarray(_default_fill(dt) if fill_value is None else fill_value).astype(dt)
    return fnp.where(fnp.reshape(valid, shape), out, fill)


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise", fill_value=None):
    """``numpy.take``: elements of ``a`` at ``indices`` along ``axis``.

    Args:
        a: the array (or array-like) to read from.
        indices: integer indices (an array, list, scalar or tracer).
        axis: the axis to take along. Default: None (the flattened ``a``).
        out: not supported (must be None). Default: None.
        mode: what an index outside ``[-n, n)`` does. ``'raise'`` (NumPy's default):
            IndexError, also under ``jit`` when the graph runs (unless
            ``config.check_bounds`` is False); ``'wrap'``: taken modulo ``n``;
            ``'clip'``: clamped into ``[0, n)`` (NumPy's: negative indices give the
            first element); ``'fill'`` (JAX's): negatives in range count from the end, any
            other index gives ``fill_value``. Default: ``'raise'``.
        fill_value: the value of the out-of-bounds elements for mode ``'fill'``. Default:
            None (JAX's: NaN for inexact dtypes, the most negative signed or the largest
            unsigned integer, True for booleans).

    Example::

        >>> fnp.take(np.arange(4.0), np.array([1, 7]), mode="fill", fill_value=-1.0)
        array([ 1., -1.])
    """
    if out is not None:
        raise NotImplementedError("take(..., out=...) is not supported")
    if fill_value is not None and mode != "fill":
        raise ValueError(f"numpy.take: fill_value is only read with mode='fill', got "
                         f"mode={mode!r}")
    x = operand(a)
    if axis is None:
        x, axis = ravel(x), 0
    x, ax = checked_axis(x, axis)
    idx = _index_array(indices)
    dt = aval(idx).dtype
    if dt == np.bool_:
        idx = cast(idx, np.int64)
    elif dt.kind not in "iu":
        raise TypeError(f"Cannot cast array data from {dt!r} to dtype('int64') according to "
                        "the rule 'safe'")
    shp = aval(x).shape
    idx, valid = _moded(idx, shp[ax], mode, "numpy.take", wrap_negative=False)
    res = getitem(x, (slice(None),) * ax + (idx,), "numpy.take")
    if valid is None:
        return res
    ishape = aval(idx).shape
    return _filled(res, valid, (1,) * ax + ishape + (1,) * (len(shp) - ax - 1), fill_value)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    """``numpy.take_along_axis``: pick along ``axis`` with ``indices``.

    Args:
        arr: the array to read from.
        indices: integer indices with ``arr``'s number of dimensions (broadcast against
            it outside ``axis``).
        axis: the axis to pick along; None for the flattened ``arr`` (then ``indices`` is
            1-d). Default: -1.
        mode: what an index outside ``[-n, n)`` does (JAX's argument; NumPy has none).
            None or ``'raise'``: IndexError as in NumPy, also under ``jit`` (unless
            ``config.check_bounds`` is False); ``'clip'``: negatives count from the end,
            then clamped into ``[0, n)``; ``'wrap'``: modulo ``n``; ``'fill'``: the
            out-of-bounds elements are ``fill_value``. Default: None.
        fill_value: the value of the out-of-bounds elements for mode ``'fill'``. Default:
            None (NaN for inexact dtypes, the most negative signed or largest unsigned
            integer, True for booleans).

    Example::

        >>> fnp.take_along_axis(np.array([[1., 2.], [3., 4.]]), np.array([[1], [5]]),
        ...                     axis=1, mode="clip")
        array([[2.],
               [4.]])
    """
    mode = "raise" if mode is None else mode
    if fill_value is not None and mode != "fill":
        raise ValueError(f"numpy.take_along_axis: fill_value is only read with mode='fill', "
                         f"got mode={mode!r}")
    x, idx = operand(arr), _index_array(indices)
    if axis is None:
        if aval(idx).ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        x, axis = ravel(x), 0
    shp = aval(x).shape
    ax = normalize_axis(axis, len(shp))
    if aval(idx).dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if aval(idx).ndim != len(shp):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    idx, valid = _moded(idx, shp[ax], mode, "numpy.take_along_axis", wrap_negative=True)
    res = getitem(x, _along_axis_index(shp, ax, idx), "numpy.take_along_axis")
    return res if valid is None else _filled(res, valid, aval(valid).shape, fill_value)


def _along_axis_index(shp, ax, idx):
    return tuple(idx if d == ax else
                 np.arange(n).reshape([-1 if k == d else 1 for k in range(len(shp))])
                 for d, n in enumerate(shp))


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    """``numpy.put_along_axis``: ``arr`` (a tracer or an ndarray) is updated in place, at
    ``indices`` along ``axis``, with ``values`` (broadcast); returns None.

    Example::

        >>> a = np.zeros((2, 3))
        >>> fnp.put_along_axis(a, np.array([[2], [0]]), 5.0, axis=1)
        >>> a
        array([[0., 0., 5.],
               [5., 0., 0.]])
    """
    idx = _index_array(indices)
    if axis is None:
        raise NotImplementedError("put_along_axis(..., axis=None) is not supported: the "
                                  "flattened view cannot be written back; reshape arr and "
                                  "pass an axis")
    shp = aval(operand(arr)).shape
    ax = normalize_axis(axis, len(shp))
    if aval(idx).dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if aval(idx).ndim != len(shp):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    setitem(arr, _along_axis_index(shp, ax, idx), values, "numpy.put_along_axis")
