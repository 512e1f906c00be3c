"""View rules: layout primitives as affine re-indexings of a :class:`View` (no copies).

Each rule is ``rule(view, out_shape, params) -> view``.
"""

from __future__ import annotations

from functorch_core.ir import primitives as P

from .plan import View, c_strides


def _broadcast(v, shape, params):
    strides = [0] * len(shape)
    for k, d in enumerate(params["broadcast_dimensions"]):
        if v.shape[k] == shape[d]:
            strides[d] = v.strides[k]
    return View(v.slot, tuple(shape), v.dtype, v.offset, tuple(strides))


def _transpose(v, shape, params):
    return View(v.slot, tuple(shape), v.dtype, v.offset,
                tuple(v.strides[p] for p in params["permutation"]))


def _reshape(v, shape, params):
    return View(v.slot, tuple(shape), v.dtype, v.offset, c_strides(shape))


def _squeeze(v, shape, params):
    return View(v.slot, tuple(shape), v.dtype, v.offset,
                tuple(s for i, s in enumerate(v.strides) if i not in params["dimensions"]))


def _expand_dims(v, shape, params):
    it = iter(v.strides)
    strides = tuple(0 if i in params["dimensions"] else next(it) for i in range(len(shape)))
    return View(v.slot, tuple(shape), v.dtype, v.offset, strides)


def _rev(v, shape, params):
    offset, strides = v.offset, list(v.strides)
    for d in params["dimensions"]:
        if v.shape[d] > 0:
            offset += (v.shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    return View(v.slot, tuple(shape), v.dtype, offset, tuple(strides))


def _slice(v, shape, params):
    if 0 in shape:
        return View(v.slot, tuple(shape), v.dtype, 0, (0,) * len(shape))
    offset = v.offset + sum(s * st for s, st in zip(params["start_indices"], v.strides,
                                                     strict=True))
    return View(v.slot, tuple(shape), v.dtype, offset,
                tuple(st * k for st, k in zip(v.strides, params["strides"], strict=True)))


VIEW_RULES = {P.broadcast_in_dim: _broadcast, P.transpose: _transpose, P.reshape: _reshape,
              P.squeeze: _squeeze, P.expand_dims: _expand_dims, P.rev: _rev, P.slice: _slice}
