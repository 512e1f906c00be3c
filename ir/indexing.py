"""NumPy indexing expressions in a normalized, hashable form.

An index such as ``x[1:, None, idx, ..., 3]`` becomes a tuple of entries,
one per item after expanding the Ellipsis and padding with full slices:

- ``("slice", start, stop, step)`` -- concrete, as ``slice.indices`` gives them
- ``("int", i)``                    -- a concrete, non-negative integer
- ``("newaxis",)``
- ``("array", k)``                  -- the k-th integer index array operand
"""

from __future__ import annotations

import builtins
import operator

import numpy as np


def broadcast_shapes(*shapes, what="index arrays"):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError(f"shape mismatch: {what} could not be broadcast together with shapes "
                         + " ".join(str(tuple(s)) for s in shapes)) from None


def out_of_bounds(index, axis, size, where="") -> IndexError:
    """NumPy's error for ``index`` into axis ``axis`` of ``size``, then ``where`` (the
    user's call and line) when it is known."""
    msg = f"index {index} is out of bounds for axis {axis} with size {size}"
    return IndexError(f"{msg}, in {where}" if where else msg)


def check_index(a, size, axis, where=""):
    """NumPy's reading of the integer index array ``a`` into an axis of ``size``: int64 with
    the negatives counted from the end; the first index (C order) outside
    ``[-size, size)`` raises :func:`out_of_bounds`."""
    a = np.asarray(a)
    bad = (a < -size) | (a >= size)
    if bad.any():
        raise out_of_bounds(a.flat[int(np.flatnonzero(bad)[0])], axis, size, where)
    a = a.astype(np.int64)
    return np.where(a < 0, a + size, a)


def normalize(shape, index, is_array):
    """Normalize a user index against ``shape``.

    ``is_array(entry)`` says whether an entry is an index array (its
    ``.shape`` and ``.dtype`` are read). Returns ``(indexer, arrays)``.
    """
    if not isinstance(index, tuple):
        index = (index,)
    n_ellipsis = builtins.sum(1 for e in index if e is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = builtins.sum(0 if (e is None or e is Ellipsis) else 1 for e in index)
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {consumed} were indexed")
    entries, arrays, axis = [], [], 0
    for e in index:
        if e is Ellipsis:
            for _ in range(len(shape) - consumed):
                entries.append(("slice", 0, shape[axis], 1))
                axis += 1
        elif e is None:
            entries.append(("newaxis",))
        elif isinstance(e, builtins.slice):
            entries.append(("slice", *e.indices(shape[axis])))
            axis += 1
        elif is_array(e):
            if e.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type, "
                                 f"got {e.dtype}")
            entries.append(("array", len(arrays)))
            arrays.append(e)
            axis += 1
        else:
            try:
                i = operator.index(e)
            except TypeError:
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                                 f"(`None`) and integer or boolean arrays are valid indices, "
                                 f"got {type(e).__name__}") from None
            n = shape[axis]
            if not -n <= i < n:
                raise out_of_bounds(i, axis, n)
            entries.append(("int", i % n))
            axis += 1
    entries.extend(("slice", 0, shape[a], 1) for a in range(axis, len(shape)))
    return tuple(entries), arrays


def slice_length(start, stop, step):
    return len(range(start, stop, step))


def advanced_layout(indexer):
    """(positions of advanced entries, whether they go first in the result)."""
    has_array = any(e[0] == "array" for e in indexer)
    if not has_array:
        return [], False
    pos = [i for i, e in enumerate(indexer) if e[0] in ("array", "int")]
    contiguous = pos == list(range(pos[0], pos[-1] + 1))
    return pos, not contiguous


def indexed_shape(shape, indexer, array_shapes):
    """The shape of ``x[index]`` for an ``x`` of ``shape``."""
    adv, front = advanced_layout(indexer)
    bshape = broadcast_shapes(*(array_shapes[e[1]] for e in indexer if e[0] == "array")) \
        if adv else ()
    out, axis = [], 0
    for i, e in enumerate(indexer):
        if adv and i == adv[0] and not front:
            out.extend(bshape)
        kind = e[0]
        if kind == "slice":
            out.append(slice_length(*e[1:]))
        elif kind == "newaxis":
            out.append(1)
        axis += kind != "newaxis"
    if front:
        out = list(bshape) + out
    return tuple(out)


def to_numpy_index(indexer, arrays):
    """Turn a normalized indexer back into a NumPy index tuple."""
    out = []
    for e in indexer:
        kind = e[0]
        if kind == "slice":
            start, stop, step = e[1:]
            if not len(range(start, stop, step)):
                out.append(slice(0, 0))      # (-1, -1, -1) is empty, not "all, reversed"
            else:
                out.append(slice(start, None if stop < 0 else stop, step))
        elif kind == "int":
            out.append(e[1])
        elif kind == "newaxis":
            out.append(None)
        else:
            out.append(np.asarray(arrays[e[1]]))
    return tuple(out)
