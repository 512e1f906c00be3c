"""Creation, layout and indexing: iota, reshapes and transposes, pads and slices,
gather and scatter.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes
from ..catalogue import fail as _fail
from ..catalogue import register as _register
from ..core import AbstractArray
from .checks import check_axes, same_dtype

__all__ = [
    "iota", "broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "rev",
    "concatenate", "pad", "slice", "dynamic_slice", "dynamic_update_slice", "gather",
    "scatter_add", "scatter", "check_index"
]


# --- creation and layout ---------------------------------------------------

def _iota_rule(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        _fail(f"iota: dimension {dimension} out of range for shape {shape}")
    return [AbstractArray(shape, dtype)]


iota = _register("iota", _iota_rule, "creation")


def _broadcast_in_dim_rule(x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    if len(bd) != x.ndim or list(bd) != sorted(set(bd)):
        _fail(f"broadcast_in_dim: broadcast_dimensions {bd} do not fit operand shape {x.shape}")
    check_axes("broadcast_in_dim", bd, len(shape))
    for d, od in zip(x.shape, bd, strict=True):
        if d not in (1, shape[od]):
            _fail(f"broadcast_in_dim: cannot broadcast shape {x.shape} to {shape}")
    return [x.update(shape=shape)]


broadcast_in_dim = _register("broadcast_in_dim", _broadcast_in_dim_rule, "layout")


def _reshape_rule(x, *, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        _fail(f"reshape: cannot reshape array of shape {x.shape} into shape {new_sizes}")
    return [x.update(shape=new_sizes)]


reshape = _register("reshape", _reshape_rule, "layout")


def _transpose_rule(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        _fail(f"transpose: permutation {permutation} does not fit shape {x.shape}")
    return [x.update(shape=tuple(x.shape[p] for p in permutation))]


transpose = _register("transpose", _transpose_rule, "layout")


def _squeeze_rule(x, *, dimensions):
    check_axes("squeeze", dimensions, x.ndim)
    if any(x.shape[d] != 1 for d in dimensions):
        _fail(f"squeeze: dimensions {dimensions} of shape {x.shape} are not all 1")
    return [x.update(shape=tuple(s for i, s in enumerate(x.shape) if i not in dimensions))]


squeeze = _register("squeeze", _squeeze_rule, "layout")


def _expand_dims_rule(x, *, dimensions):
    ndim = x.ndim + len(dimensions)
    check_axes("expand_dims", dimensions, ndim)
    it = iter(x.shape)
    return [x.update(shape=tuple(1 if i in dimensions else next(it) for i in range(ndim)))]


expand_dims = _register("expand_dims", _expand_dims_rule, "layout")


def _rev_rule(x, *, dimensions):
    check_axes("rev", dimensions, x.ndim)
    return [x]


rev = _register("rev", _rev_rule, "layout")


def _concatenate_rule(*xs, dimension):
    if not xs:
        _fail("concatenate: needs at least one operand")
    dt = same_dtype("concatenate", xs)
    ndim = xs[0].ndim
    check_axes("concatenate", (dimension,), ndim)
    for x in xs:
        others = [d for i, d in enumerate(x.shape) if i != dimension]
        if x.ndim != ndim or others != [d for i, d in enumerate(xs[0].shape) if i != dimension]:
            _fail("concatenate: shapes " + ", ".join(str(x.shape) for x in xs)
                  + f" do not match outside dimension {dimension}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [AbstractArray(shape, dt, all(x.weak_type for x in xs))]


concatenate = _register("concatenate", _concatenate_rule, "layout")


def _pad_rule(x, padding_value, *, padding_config):
    same_dtype("pad", [x, padding_value])
    if padding_value.ndim:
        _fail("pad: padding value must be a scalar")
    if len(padding_config) != x.ndim:
        _fail(f"pad: padding_config {padding_config} does not fit shape {x.shape}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config, strict=True):
        if interior < 0:
            _fail("pad: interior padding must be >= 0")
        n = lo + hi + d + builtins.max(d - 1, 0) * interior
        if n < 0:
            _fail(f"pad: padding_config {padding_config} gives a negative size for shape {x.shape}")
        shape.append(n)
    return [x.update(shape=shape)]


pad = _register("pad", _pad_rule, "layout")


def _slice_rule(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        _fail(f"slice: indices do not fit shape {x.shape}")
    shape = []
    for d, s, e, st in zip(x.shape, start_indices, limit_indices, strides, strict=True):
        if not (0 <= s <= e <= d) or st < 1:
            _fail(f"slice: start {start_indices}, limit {limit_indices}, strides {strides} "
                  f"out of range for shape {x.shape}")
        shape.append((e - s + st - 1) // st)
    return [x.update(shape=shape)]


slice = _register("slice", _slice_rule, "layout")


def _check_scalar_ints(name, idx, ndim):
    if len(idx) != ndim:
        _fail(f"{name}: needs {ndim} start indices, got {len(idx)}")
    for i in idx:
        if i.ndim or not dtypes.is_integer(i.dtype):
            _fail(f"{name}: start indices must be integer scalars, got {i}")


def _dynamic_slice_rule(x, *idx, slice_sizes):
    _check_scalar_ints("dynamic_slice", idx, x.ndim)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in
                                         zip(slice_sizes, x.shape, strict=True)):
        _fail(f"dynamic_slice: slice_sizes {slice_sizes} do not fit shape {x.shape}")
    return [x.update(shape=slice_sizes)]


dynamic_slice = _register("dynamic_slice", _dynamic_slice_rule, "layout")


def _dynamic_update_slice_rule(x, update, *idx):
    same_dtype("dynamic_update_slice", [x, update])
    _check_scalar_ints("dynamic_update_slice", idx, x.ndim)
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape, strict=True)):
        _fail(f"dynamic_update_slice: update shape {update.shape} does not fit in {x.shape}")
    return [x.strong()]


dynamic_update_slice = _register("dynamic_update_slice", _dynamic_update_slice_rule, "layout")


def _gather_out_shape(name, x, indices, axes):
    if not dtypes.is_integer(indices.dtype):
        raise TypeError(f"{name}: indices must be integers, got {indices.dtype}")
    check_axes(name, axes, x.ndim)
    if indices.ndim < 1 or indices.shape[-1] != len(axes):
        _fail(f"{name}: indices of shape {indices.shape} must end in a dimension of "
              f"size {len(axes)} (one column per indexed axis {axes})")
    rest = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return indices.shape[:-1] + rest


def _gather_rule(x, indices, *, axes):
    """out[b..., r...] = x[with indices[b..., k] on axis axes[k], r... on the other axes]."""
    return [x.update(shape=_gather_out_shape("gather", x, indices, axes))]


gather = _register("gather", _gather_rule, "indexing")


def _scatter_rule(name):
    def rule(x, indices, updates, *, axes):
        same_dtype(name, [x, updates])
        shape = _gather_out_shape(name, x, indices, axes)
        if updates.shape != shape:
            _fail(f"{name}: updates of shape {updates.shape} should have shape {shape}")
        return [x.strong()]
    return rule


scatter_add = _register("scatter_add", _scatter_rule("scatter_add"), "indexing")
scatter = _register("scatter", _scatter_rule("scatter"), "indexing")   # last write wins


def _check_index_rule(a, *, size, axis, where):
    """The NumPy index ``a`` into an axis of ``size``, as int64 in ``[0, size)``."""
    if not dtypes.is_integer(a.dtype):
        raise TypeError(f"check_index: indices must be integers, got {a.dtype}")
    if size < 0 or axis < 0:
        _fail(f"check_index: size {size} and axis {axis} must be >= 0")
    return [AbstractArray(a.shape, np.dtype(np.int64))]


# check_index(a, size, axis, where) -> a + size where a < 0: NumPy's reading of index a into
# axis ``axis`` of ``size``. An index outside [-size, size) raises IndexError with NumPy's
# message and ``where`` (the user's call and line) when the graph runs.
check_index = _register("check_index", _check_index_rule, "indexing")
