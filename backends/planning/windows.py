"""Planning rules for windowed reductions (pooling) and their gradients
(``select_and_gather_add``, ``select_and_scatter_add``): kernels over (output, tap)
reading strided windows of a padded, dilated source. Each rule takes the
:class:`~.partition.Partitioner` and one equation."""

from __future__ import annotations

import math

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from .plan import (
    Kernel,
    Op,
    Reduce,
    Scatter,
    View,
    c_strides,
)

# a windowed reduction is this reduction over each window
WINDOW_REDUCE = {P.reduce_window_sum: P.reduce_sum, P.reduce_window_max: P.reduce_max,
                 P.reduce_window_min: P.reduce_min}


def window_reduction(planner, eqn):
    """reduce_window_*: a reduction kernel over (output, window) of a strided view of
    the operand (padded and dilated first, into its own buffer, when asked)."""
    (x,), out, p = eqn.inputs, eqn.outputs[0], eqn.params
    dt, nd = x.aval.dtype, x.aval.ndim
    fill = 0 if eqn.prim is P.reduce_window_sum else \
        dtypes.extreme_identity(dt, "max" if eqn.prim is P.reduce_window_max else "min")
    k = Kernel(out.aval.shape + tuple(p["window_dimensions"]),
               axes=tuple(range(nd, 2 * nd)), reverse=False)
    r = k.read(_windows(_window_source(planner, x, fill, p), p, out.aval.shape))
    slot = planner.new_slot(out.aval.shape, dt)
    k.reduces.append(Reduce(WINDOW_REDUCE[eqn.prim], r, slot, dt, dt))
    planner.seal(k)
    planner.loc[id(out)] = planner._buffer_view(slot, out.aval.shape, dt)


def _window_source(planner, x, fill, p) -> View:
    """``x`` padded with ``fill`` and base-dilated as the window parameters ``p`` ask
    (into its own buffer only then)."""
    if not any(lo or hi for lo, hi in p["padding"]) and \
            not any(b > 1 for b in p["base_dilation"]):
        return planner.external_view(x)
    v, dt, nd = planner.external_view(x), x.aval.dtype, x.aval.ndim
    config = tuple((lo, hi, b - 1) for (lo, hi), b in
                   zip(p["padding"], p["base_dilation"], strict=True))
    shape = tuple(lo + hi + 1 + (d - 1) * (it + 1) for d, (lo, hi, it) in
                  zip(x.aval.shape, config, strict=True))
    k = Kernel(shape)
    k.dyn_reads.append(View(v.slot, shape, v.dtype, v.offset, (0,) * nd))
    params = {"config": config, "in_shape": v.shape, "strides": v.strides}
    k.ops.append(Op(P.pad, (("dyn", 0), ("const", np.asarray(fill, dt)[()])), params,
                    dt, dt))
    slot = planner.new_slot(shape, dt)
    k.stores.append((("op", 0), slot, dt))
    planner.seal(k)
    return planner._buffer_view(slot, shape, dt)


def _windows(v: View, p, out_shape) -> View:
    """``v`` (padded) seen over the space (output position, window tap)."""
    space = tuple(out_shape) + tuple(p["window_dimensions"])
    strides = tuple(st * s for st, s in zip(v.strides, p["window_strides"], strict=True)) \
        + tuple(st * w for st, w in zip(v.strides, p["window_dilation"], strict=True))
    return View(v.slot, space, v.dtype, v.offset, strides)


def _flat_tap(k: Kernel, dims, window, dt):
    """Ops of ``k`` computing the C-order flat index of the loop position over ``dims``
    (sizes ``window``) in integer dtype ``dt``; returns its ref."""
    ref = None
    for d, size in zip(dims, window, strict=True):
        k.ops.append(Op(P.iota, (), {"dimension": d, "dtype": dt, "shape": k.shape},
                        dt, dt))
        tap = ("op", len(k.ops) - 1)
        if ref is not None:
            k.ops.append(Op(P.mul, (ref, ("const", dt.type(size))), {}, dt, dt))
            k.ops.append(Op(P.add, (("op", len(k.ops) - 1), tap), {}, dt, dt))
            tap = ("op", len(k.ops) - 1)
        ref = tap
    return ref if ref is not None else ("const", dt.type(0))


def select_and_gather(planner, eqn):
    """select_and_gather_add: one kernel over (output, window) of the padded operand and
    tangent, an argmax/argmin that keeps the tangent at the first max/min (NaN first)."""
    (t, x), out, p = eqn.inputs, eqn.outputs[0], eqn.params
    nd, shape = x.aval.ndim, out.aval.shape
    sel = P.argmax if p["select"] == "max" else P.argmin
    k = Kernel(shape + tuple(p["window_dimensions"]), axes=tuple(range(nd, 2 * nd)),
               reverse=False)
    fill = dtypes.extreme_identity(x.aval.dtype, p["select"])
    rx = k.read(_windows(_window_source(planner, x, fill, p), p, shape))
    rt = k.read(_windows(_window_source(planner, t, 0, p), p, shape))
    slot = planner.new_slot(shape, out.aval.dtype)
    k.reduces.append(Reduce(sel, rx, slot, out.aval.dtype, x.aval.dtype, payload=rt))
    planner.seal(k)
    planner.loc[id(out)] = planner._buffer_view(slot, shape, out.aval.dtype)


def select_and_scatter(planner, eqn):
    """select_and_scatter_add: the flat in-window index of each window's first max/min
    (one argmax kernel), then, serially over (output, tap), each window's cotangent (or
    0) added where each tap lands in a zeroed padded buffer: windows in reverse C order
    when they overlap (so each position adds in the interpreter's tap order), stored
    without the zeroing pass when the windows tile the buffer. The result is a strided
    view of that buffer."""
    (ct, x), out, p = eqn.inputs, eqn.outputs[0], eqn.params
    nd, shape, window = x.aval.ndim, ct.aval.shape, tuple(p["window_dimensions"])
    dt, i32 = out.aval.dtype, np.dtype(np.int32)
    sel = P.argmax if p["select"] == "max" else P.argmin
    k = Kernel(shape + window, axes=tuple(range(nd, 2 * nd)), reverse=False)
    fill = dtypes.extreme_identity(x.aval.dtype, p["select"])
    rx = k.read(_windows(_window_source(planner, x, fill, p), p, shape))
    chosen = planner.new_slot(shape, i32)
    k.reduces.append(Reduce(sel, rx, chosen, i32, x.aval.dtype,
                            payload=_flat_tap(k, range(nd, 2 * nd), window, i32)))
    planner.seal(k)
    sizes = tuple(1 + (d - 1) * bd + lo + hi for d, bd, (lo, hi) in
                  zip(x.aval.shape, p["base_dilation"], p["padding"], strict=True))
    cs, zero = c_strides(sizes), ("const", np.asarray(0, dt)[()])
    once = all(w == 1 or o == 1 or s >= (w - 1) * wd + 1 for w, o, s, wd in
               zip(window, shape, p["window_strides"], p["window_dilation"], strict=True))
    tiled = once and math.prod(shape) * math.prod(window) == math.prod(sizes)
    acc = planner.new_slot(sizes, dt)
    if not tiled:
        z = Kernel(sizes)
        z.stores.append((zero, acc, dt))
        planner.seal(z)
    # overlapping windows: a position takes its cotangents in increasing tap order
    # (the interpreter's), which is decreasing window order, so windows go backwards
    back = not once
    space = shape + window
    k = Kernel(space, axes=(), reverse=False)

    def over_space(out_strides, tap_strides=(0,) * nd):
        """Strides over (output, tap), and the offset where the outputs run backwards."""
        if not back:
            return 0, tuple(out_strides) + tuple(tap_strides)
        return (sum((o - 1) * st for o, st in zip(shape, out_strides, strict=True)),
                tuple(-st for st in out_strides) + tuple(tap_strides))
    v = planner.external_view(ct)
    at, st = over_space(c_strides(shape))
    rk = k.read(View(chosen, space, i32, at, st))
    at, st = over_space(v.strides)
    rc = k.read(View(v.slot, space, v.dtype, v.offset + at, st))
    tap = _flat_tap(k, range(nd, 2 * nd), window, i32)
    k.ops.append(Op(P.eq, (rk, tap), {}, np.dtype(bool), i32))
    k.ops.append(Op(P.select, (("op", len(k.ops) - 1), rc, zero), {}, dt, dt))
    if tiled:       # 0 + value, as the interpreter's zeros + value (-0.0 becomes 0.0)
        k.ops.append(Op(P.add, (zero, ("op", len(k.ops) - 1)), {}, dt, dt))
    at, st = over_space(
        tuple(c * s for c, s in zip(cs, p["window_strides"], strict=True)),
        tuple(c * wd for c, wd in zip(cs, p["window_dilation"], strict=True)))
    i64 = np.dtype(np.int64)
    # the static offset of the backward walk, as a constant index (clipped to itself)
    k.scatters.append(Scatter(not tiled, ("op", len(k.ops) - 1), acc, dt,
                              (("const", np.int64(at)),), (i64,), (at,), (1,), st))
    planner.seal(k)
    planner.loc[id(out)] = View(acc, x.aval.shape, dt,
                                sum(lo * c for (lo, _), c in zip(p["padding"], cs, strict=True)),
                                tuple(bd * c for bd, c in
                                      zip(p["base_dilation"], cs, strict=True)))
