"""Structural kernels: one equation each (gather, scatter, pads, windows, scans, threefry,
the im2col half of a convolution), rendered as numba-cuda source text like ``emit``'s.

``lower(eqn, xp, simulated)`` returns a :class:`Step`: ``step(args) -> outputs`` over device
arrays, and ``step.sources``, the :class:`emit.Source` objects it launches (compiled by
``emit.compile_source``, so cached and seen by the PTX check). Shapes, strides and window
geometry are constants in the text; dynamic indices and dtype-dependent fill values are
read from device arrays (a fill is a one-element array of the operand's dtype), so the
text names nothing but ``cuda`` and builtins and works for every dtype numba-cuda has.

Every kernel takes flat 1-D arrays and walks its points with a grid-stride loop. Results
match the interpreter: clamped indices, last-write-wins ``scatter`` (an atomic max picks
the last update per destination), sequential scans, first-maximum window selection and
``argmax``/``argmin`` (a NaN counts as the maximum, as in NumPy).
``scatter_add`` adds with atomics, or (deterministic mode, and dtypes without atomics) sorts
the updates by destination and adds each destination's updates in update order, which
is NumPy's ``np.add.at`` order: the same bits every run. Kernels that do arithmetic on
float16 compute in float32 (``WIDENED``), as the issue asks, so their float16 results
can differ from NumPy's step-by-step float16 rounding in the last place.
"""

from __future__ import annotations

import math

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Eqn, Var

from .. import determinism
from ..planning.plan import c_strides
from . import emit

ATOMIC_ADD = tuple(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64,
                                         np.float32, np.float64))
SCANS = {P.cumsum: "acc + v", P.cumprod: "acc * v",
         P.cummax: "acc if (acc != acc or acc > v) else v",
         P.cummin: "acc if (acc != acc or acc < v) else v"}
WINDOWS = {P.reduce_window_sum: "acc + v",
           P.reduce_window_max: "acc if (acc != acc or acc > v) else v",
           P.reduce_window_min: "acc if (acc != acc or acc < v) else v"}
_MASK = "0xFFFFFFFF"


class Step:
    """``step(args) -> outputs`` for one equation, with the kernel sources it launches."""

    def __init__(self, run, sources):
        self.run, self.sources = run, list(sources)

    def __call__(self, args):
        return self.run(args)


class _Kernel(emit._Writer):
    """Text of one kernel over ``n`` points: ``kernel(a0, a1, ...)``, arrays flat."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def unravel(self, depth, flat, names, shape):
        """Lines setting ``names[d]`` from the C-order index ``flat`` over ``shape``."""
        emit.unravel(self, depth, flat, names, shape)

    def source(self, arg_dtypes, simulated):
        block = emit.SIM_BLOCK if simulated else emit.BLOCK
        names = ", ".join(f"a{i}" for i in range(len(arg_dtypes)))
        text = "\n".join([f"def kernel({names}):", *self.lines]) + "\n"
        return emit.Source(text, tuple(range(len(arg_dtypes))),
                           tuple(np.dtype(d) for d in arg_dtypes),
                           max(1, min(-(-self.n // block), emit.MAX_BLOCKS)), block)


def _grid(n):
    k = _Kernel(n)
    k(1, f"for t in range(cuda.grid(1), {n}, cuda.gridsize(1)):")
    return k


def _flat(names, shape):
    """The C-order flat index of the index variables ``names`` over ``shape``."""
    terms = [f"{v} * {s}" if s != 1 else v for v, s, n in
             zip(names, c_strides(shape), shape, strict=True) if n != 1]
    return " + ".join(terms) or "0"


def _launcher(sources, simulated):
    fns = [emit.compile_source(s, simulated) for s in sources]

    def launch(i, *arrays):
        src = sources[i]
        fns[i][src.blocks, src.threads](*(a.reshape(-1) for a in arrays))
    return launch


def _into_fresh(src, out, xp, sim, points, operands):
    """A Step launching kernel ``src`` once on a fresh result of ``out``'s shape and dtype,
    then ``operands(args)`` (nothing is launched when ``points`` is 0 or False)."""
    launch = _launcher([src], sim)

    def run(args):
        res = xp.empty(out.shape, out.dtype)
        if points:
            launch(0, res, *operands(args))
        return [res]
    return Step(run, [src])


def _dev(xp, a):
    return xp.ascontiguousarray(xp.asarray(a))


def _fill(xp, value, dt):
    return xp.asarray(np.full(1, value, dt))


def lower(eqn, xp, simulated) -> Step:
    """The device step of ``eqn`` (one of ``RENDERED``)."""
    f16 = np.dtype(np.float16)
    if eqn.prim in WIDENED and any(v.aval.dtype == f16 for v in (*eqn.inputs, *eqn.outputs)):
        return _widened(eqn, xp, simulated)
    return RENDERED[eqn.prim](eqn, xp, simulated)


def _widened(eqn, xp, sim):
    """``eqn`` computed in float32 over float16 operands (numba-cuda's half arithmetic
    calls cuda_fp16 functions that compile_ptx leaves unresolved): cast in, cast back."""
    f16, f32 = np.dtype(np.float16), np.dtype(np.float32)

    def wide(v):
        return Var(v.aval.update(dtype=f32) if v.aval.dtype == f16 else v.aval)
    inner = Eqn(eqn.prim, tuple(map(wide, eqn.inputs)), tuple(map(wide, eqn.outputs)),
                eqn.params, eqn.source)
    step = RENDERED[eqn.prim](inner, xp, sim)

    def run(args):
        outs = step([xp.asarray(a).astype(f32) if a.dtype == f16 else a for a in args])
        return [o.astype(v.aval.dtype) for o, v in zip(outs, eqn.outputs, strict=True)]
    return Step(run, step.sources)


# -- gather and scatter -------------------------------------------------------------

def _destination(k, x_shape, idx_shape, axes, point):
    """Lines setting ``dest``, the flat index into ``x`` of gather point ``point`` (the
    names of the batch dimensions then the non-indexed axes), indices clamped; the index
    array is argument ``a{point_arg}``."""
    nb = len(idx_shape) - 1
    batch = _flat(point[:nb], idx_shape[:-1]) if nb else "0"
    rest = iter(point[nb:])
    terms = []
    for ax, (d, s) in enumerate(zip(x_shape, c_strides(x_shape), strict=True)):
        if ax in axes:
            j = f"j{ax}"
            k(2, f"{j} = min(max(int(IDX[({batch}) * {len(axes)} + {axes.index(ax)}]), 0), "
                 f"{d - 1})")
        else:
            j = next(rest)
        terms.append(f"{j} * {s}" if s != 1 else j)
    k(2, f"dest = {' + '.join(terms) or '0'}")


def _gather_kernel(x_shape, idx_shape, axes, n, body, idx_name):
    """A grid over the gather points with ``dest`` set, then ``body``'s lines."""
    k = _grid(n)
    nb = len(idx_shape) - 1
    rest = [d for i, d in enumerate(x_shape) if i not in axes]
    point = [f"b{i}" for i in range(nb)] + [f"r{i}" for i in range(len(rest))]
    k.unravel(2, "t", point, (*idx_shape[:-1], *rest))
    start = len(k.lines)
    _destination(k, x_shape, idx_shape, axes, point)
    k.lines[start:] = [line.replace("IDX", idx_name) for line in k.lines[start:]]
    for line in body:
        k(2, line)
    return k


def _gather(eqn, xp, sim):
    x, idx = (v.aval for v in eqn.inputs)
    out = eqn.outputs[0].aval
    n = math.prod(out.shape)
    k = _gather_kernel(x.shape, idx.shape, tuple(eqn.params["axes"]), n,
                       ["a0[t] = a1[dest]"], "a2")
    src = k.source((out.dtype, x.dtype, idx.dtype), sim)
    return _into_fresh(src, out, xp, sim, n, lambda args: (_dev(xp, args[0]), _dev(xp, args[1])))


def _scatter(eqn, xp, sim):
    x, idx, upd = (v.aval for v in eqn.inputs)
    axes, n = tuple(eqn.params["axes"]), math.prod(upd.shape)
    add = eqn.prim is P.scatter_add
    i64 = np.dtype(np.int64)
    srcs = {}
    if add and np.dtype(x.dtype) in ATOMIC_ADD:
        srcs["atomic"] = _gather_kernel(x.shape, idx.shape, axes, n, [
            "cuda.atomic.add(a0, dest, a2[t])"], "a1").source((x.dtype, idx.dtype, upd.dtype), sim)
    if add:
        srcs["dest"] = _gather_kernel(x.shape, idx.shape, axes, n, [
            f"a0[t] = dest * {max(n, 1)} + t"], "a1").source((i64, idx.dtype), sim)
        srcs["sorted"] = _sorted_add(n, sim, x.dtype, upd.dtype)
    else:
        srcs["last"] = _gather_kernel(x.shape, idx.shape, axes, n, [
            "cuda.atomic.max(a0, dest, t)"], "a1").source((i64, idx.dtype), sim)
        srcs["write"] = _gather_kernel(x.shape, idx.shape, axes, n, [
            "if a0[dest] == t:", "    a2[dest] = a3[t]"], "a1").source(
            (i64, idx.dtype, x.dtype, upd.dtype), sim)
    names = list(srcs)
    launch = _launcher(list(srcs.values()), sim)

    def run(args):
        out = xp.array(args[0], copy=True, order="C")
        if n == 0 or math.prod(x.shape) == 0:
            return [out]
        idx_a, upd_a = _dev(xp, args[1]), _dev(xp, args[2])
        if not add:
            winner = xp.full(out.shape, -1, i64)
            launch(names.index("last"), winner, idx_a)
            launch(names.index("write"), winner, idx_a, out, upd_a)
        elif "atomic" in srcs and not determinism.state["enabled"]:
            launch(names.index("atomic"), out, idx_a, upd_a)
        else:
            keys = xp.empty(n, i64)
            launch(names.index("dest"), keys, idx_a)
            launch(names.index("sorted"), xp.sort(keys), out, upd_a)
        return [out]
    return Step(run, list(srcs.values()))


def _sorted_add(n, sim, x_dt, u_dt):
    """Per run of equal destinations in the sorted keys (dest * n + update index): the
    destination plus its updates, added in update order by one thread."""
    k = _grid(n)
    k(2, f"d = a0[t] // {n}")
    k(2, f"if t == 0 or a0[t - 1] // {n} != d:")
    k(3, "acc = a1[d]")
    k(3, "q = t")
    k(3, f"while q < {n} and a0[q] // {n} == d:")
    k(4, f"acc = acc + a2[a0[q] % {n}]")
    k(4, "q += 1")
    k(3, "a1[d] = acc")
    return k.source((np.int64, x_dt, u_dt), sim)


# -- dynamic slices, pad, concatenate -----------------------------------------------

def _starts(k, x_shape, sizes, first_arg):
    for d, (dim, size) in enumerate(zip(x_shape, sizes, strict=True)):
        k(2, f"s{d} = min(max(int(a{first_arg + d}[0]), 0), {dim - size})")


def _window(x_shape, window_shape, first_arg):
    """A grid kernel over the ``window_shape`` points of a window of ``x_shape`` whose
    clamped start indices are arguments ``first_arg``...; and the flat index, in ``x``, of
    point ``t``."""
    k = _grid(math.prod(window_shape))
    _starts(k, x_shape, window_shape, first_arg)
    rank = len(x_shape)
    k.unravel(2, "t", [f"i{d}" for d in range(rank)], window_shape)
    return k, _flat([f"(s{d} + i{d})" for d in range(rank)], x_shape)


def _window_source(eqn, other, window_shape, line, sim):
    """A grid kernel over a ``window_shape`` window of ``eqn``'s first input whose start
    indices are its last inputs: argument 0 is the output, 1 the ``other`` array, and the
    body ``line`` (formatted with ``at``, the flat index in the first input of point ``t``)."""
    x = eqn.inputs[0].aval
    k, at = _window(x.shape, window_shape, 2)
    k(2, line.format(at=at))
    starts = eqn.inputs[len(eqn.inputs) - len(x.shape):]
    dtypes = (eqn.outputs[0].aval.dtype, other.dtype, *(v.aval.dtype for v in starts))
    return k.source(dtypes, sim)


def _dynamic_slice(eqn, xp, sim):
    x, out = eqn.inputs[0].aval, eqn.outputs[0].aval
    n = math.prod(out.shape)
    src = _window_source(eqn, x, out.shape, "a0[t] = a1[{at}]", sim)
    return _into_fresh(src, out, xp, sim, n, lambda args: [_dev(xp, a) for a in args])


def _dynamic_update_slice(eqn, xp, sim):
    upd = eqn.inputs[1].aval
    n = math.prod(upd.shape)
    src = _window_source(eqn, upd, upd.shape, "a0[{at}] = a1[t]", sim)
    launch = _launcher([src], sim)

    def run(args):
        out = xp.array(args[0], copy=True, order="C")
        if n:
            launch(0, out, *(_dev(xp, a) for a in args[1:]))
        return [out]
    return Step(run, [src])


def _pad(eqn, xp, sim):
    x, out = eqn.inputs[0].aval, eqn.outputs[0].aval
    n = math.prod(out.shape)
    k = _grid(n)
    names = [f"i{d}" for d in range(len(out.shape))]
    k.unravel(2, "t", names, out.shape)
    conds, src_idx = [], []
    for d, (dim, (lo, _, it)) in enumerate(zip(x.shape, eqn.params["padding_config"],
                                               strict=True)):
        k(2, f"p{d} = i{d} - ({lo})")
        conds.append(f"p{d} >= 0 and p{d} % {it + 1} == 0 and p{d} // {it + 1} < {dim}")
        src_idx.append(f"(p{d} // {it + 1})")
    if conds:
        k(2, f"if {' and '.join(conds)}:")
        k(3, f"a0[t] = a1[{_flat(src_idx, x.shape)}]")
        k(2, "else:")
        k(3, "a0[t] = a2[0]")
    else:
        k(2, "a0[t] = a1[0]")
    src = k.source((out.dtype, x.dtype, out.dtype), sim)
    return _into_fresh(src, out, xp, sim, n, lambda args: (
        _dev(xp, args[0]), _dev(xp, args[1]).astype(out.dtype)))


def _concatenate(eqn, xp, sim):
    out, dim = eqn.outputs[0].aval, eqn.params["dimension"]
    n = math.prod(out.shape)
    k = _grid(n)
    names = [f"i{d}" for d in range(len(out.shape))]
    k.unravel(2, "t", names, out.shape)
    offset, first = 0, True
    for j, v in enumerate(eqn.inputs):
        size = v.aval.shape[dim]
        if size == 0:
            continue
        at = [f"(i{d} - {offset})" if d == dim else f"i{d}" for d in range(len(out.shape))]
        k(2, f"{'if' if first else 'elif'} i{dim} < {offset + size}:")
        k(3, f"a0[t] = a{j + 1}[{_flat(at, v.aval.shape)}]")
        offset, first = offset + size, False
    src = k.source((out.dtype, *(v.aval.dtype for v in eqn.inputs)), sim)
    return _into_fresh(src, out, xp, sim, n, lambda args: [_dev(xp, a) for a in args])


# -- scans, threefry, pivots -------------------------------------------------------

def _scan(eqn, xp, sim):
    x = eqn.inputs[0].aval
    axis, reverse = eqn.params["axis"], eqn.params["reverse"]
    length, stride = x.shape[axis], c_strides(x.shape)[axis]
    lines = math.prod(x.shape) // length if length else 0
    k = _grid(lines)
    kept = [d for d in range(len(x.shape)) if d != axis]
    names = [f"i{d}" for d in kept]
    k.unravel(2, "t", names, [x.shape[d] for d in kept])
    base = " + ".join([f"i{d} * {c_strides(x.shape)[d]}" for d in kept]) or "0"
    k(2, f"base = {base}")
    order = f"range({length - 2}, -1, -1)" if reverse else f"range(1, {length})"
    start = length - 1 if reverse else 0
    k(2, f"acc = a1[base + {start * stride}]")
    k(2, f"a0[base + {start * stride}] = acc")
    k(2, f"for j in {order}:")
    k(3, f"v = a1[base + j * {stride}]")
    k(3, f"acc = {SCANS[eqn.prim]}")
    k(3, f"a0[base + j * {stride}] = acc")
    src = k.source((x.dtype, x.dtype), sim)
    launch = _launcher([src], sim)

    def run(args):
        res = xp.empty(x.shape, x.dtype)
        if lines:
            launch(0, res, _dev(xp, args[0]))
        return [res]
    return Step(run, [src])


def _arg_reduce(eqn, xp, sim):
    """One thread per line: the first maximum (minimum) along ``axis``; a NaN wins."""
    x, out = eqn.inputs[0].aval, eqn.outputs[0].aval
    axis = eqn.params["axis"]
    length, stride = x.shape[axis], c_strides(x.shape)[axis]
    lines = math.prod(out.shape)
    k = _grid(lines)
    kept = [d for d in range(len(x.shape)) if d != axis]
    k.unravel(2, "t", [f"i{d}" for d in kept], [x.shape[d] for d in kept])
    k(2, f"base = {' + '.join(f'i{d} * {c_strides(x.shape)[d]}' for d in kept) or '0'}")
    better = ">" if eqn.prim is P.argmax else "<"
    k(2, "best = a1[base]")
    k(2, "sel = 0")
    k(2, f"for j in range(1, {length}):")
    k(3, f"v = a1[base + j * {stride}]")
    k(3, f"if best == best and (v != v or v {better} best):")
    k(4, "best = v")
    k(4, "sel = j")
    k(2, "a0[t] = sel")
    src = k.source((out.dtype, x.dtype), sim)
    return _into_fresh(src, out, xp, sim, lines and length, lambda args: [_dev(xp, args[0])])


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry(eqn, xp, sim):
    out = eqn.outputs[0].aval
    n = math.prod(out.shape)
    k = _grid(n)
    for i, v in enumerate(eqn.inputs):     # equal shapes, or rank 0 (one element)
        k(2, f"{('k0', 'k1', 'x0', 'x1')[i]} = int(a{i + 2}[{'t' if v.aval.shape else '0'}])")
    k(2, f"k2 = k0 ^ k1 ^ {0x1BD11BDA}")
    keys = ("k0", "k1", "k2")
    k(2, f"x0 = (x0 + k0) & {_MASK}")
    k(2, f"x1 = (x1 + k1) & {_MASK}")
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            k(2, f"x0 = (x0 + x1) & {_MASK}")
            k(2, f"x1 = (((x1 << {r}) & {_MASK}) | (x1 >> {32 - r})) ^ x0")
        k(2, f"x0 = (x0 + {keys[(i + 1) % 3]}) & {_MASK}")
        k(2, f"x1 = (x1 + {keys[(i + 2) % 3]} + {i + 1}) & {_MASK}")
    k(2, "a0[t] = x0")
    k(2, "a1[t] = x1")
    u32 = np.dtype(np.uint32)
    src = k.source((u32,) * 6, sim)
    launch = _launcher([src], sim)

    def run(args):
        y0, y1 = xp.empty(out.shape, u32), xp.empty(out.shape, u32)
        if n:
            launch(0, y0, y1, *(_dev(xp, a) for a in args))
        return [y0, y1]
    return Step(run, [src])


def _pivots_source(piv_shape, piv_dtype, size, sim):
    m, rows = piv_shape[-1], math.prod(piv_shape[:-1])
    k = _grid(rows)
    k(2, f"for j in range({size}):")
    k(3, f"a0[t * {size} + j] = j")
    k(2, f"for j in range({m}):")
    k(3, f"p = t * {size} + int(a1[t * {m} + j])")
    k(3, f"s = a0[t * {size} + j]")
    k(3, f"a0[t * {size} + j] = a0[p]")
    k(3, "a0[p] = s")
    return k.source((np.int32, piv_dtype), sim)


def permutation(xp, sim, piv, size):
    """The int32 permutations that LAPACK-style row swaps ``piv`` (..., m) apply to
    ``range(size)``: one thread per row walks its swaps in order."""
    src = _pivots_source(piv.shape, piv.dtype, size, sim)
    res = xp.empty(piv.shape[:-1] + (size,), np.int32)
    if res.size and piv.shape[-1]:
        _launcher([src], sim)(0, res, _dev(xp, piv))
    elif res.size:
        res[...] = xp.arange(size, dtype=np.int32)
    return res, src


def _pivots(eqn, xp, sim):
    piv, out = eqn.inputs[0].aval, eqn.outputs[0].aval
    src = _pivots_source(piv.shape, piv.dtype, out.shape[-1], sim)

    def run(args):
        return [permutation(xp, sim, args[0], out.shape[-1])[0]]
    return Step(run, [src])


# -- windows ------------------------------------------------------------------------

def _taps(k, depth, out_names, window, in_shape):
    """Inside a loop over flat taps ``w``: lines setting ``ok`` (the tap reads a real
    element, not padding or a dilation hole) and ``src`` (its flat index)."""
    wd = window["window_dimensions"]
    taps = [f"w{d}" for d in range(len(wd))]
    k.unravel(depth, "w", taps, wd)
    conds, idx = [], []
    for d, (o, w) in enumerate(zip(out_names, taps, strict=True)):
        lo = window["padding"][d][0]
        bd = window["base_dilation"][d]
        k(depth, f"p{d} = {o} * {window['window_strides'][d]} + {w} * "
                 f"{window['window_dilation'][d]} - ({lo})")
        conds.append(f"p{d} >= 0 and p{d} % {bd} == 0 and p{d} // {bd} < {in_shape[d]}")
        idx.append(f"(p{d} // {bd})")
    k(depth, f"ok = {' and '.join(conds) or 'True'}")
    k(depth, f"src = {_flat(idx, in_shape) if idx else '0'}")


def _window_params(eqn):
    return {key: eqn.params[key] for key in ("window_dimensions", "window_strides", "padding",
                                               "base_dilation", "window_dilation")}


def _reduce_window(eqn, xp, sim):
    x, out = eqn.inputs[0].aval, eqn.outputs[0].aval
    window = _window_params(eqn)
    n, taps = math.prod(out.shape), math.prod(window["window_dimensions"])
    k = _grid(n)
    names = [f"o{d}" for d in range(len(out.shape))]
    k.unravel(2, "t", names, out.shape)
    k(2, "acc = a2[0]")
    k(2, f"for w in range({taps}):")
    _taps(k, 3, names, window, x.shape)
    k(3, "v = a1[src] if ok else a2[0]")
    k(3, f"acc = {WINDOWS[eqn.prim]}")
    k(2, "a0[t] = acc")
    src = k.source((out.dtype, x.dtype, x.dtype), sim)
    fill = 0 if eqn.prim is P.reduce_window_sum else dtypes.extreme_identity(
        x.dtype, "max" if eqn.prim is P.reduce_window_max else "min")
    return _into_fresh(src, out, xp, sim, n,
                       lambda args: (_dev(xp, args[0]), _fill(xp, fill, x.dtype)))


def _selection(k, depth, names, window, x_shape, select):
    """Lines setting ``sel``: the flat tap of the window's first maximum (minimum) of x
    (padding reads the extreme identity, a NaN wins), x is a1 and the fill a2[0]."""
    better = ">" if select == "max" else "<"
    k(depth, "sel = 0")
    k(depth, "best = a2[0]")
    k(depth, f"for w in range({math.prod(window['window_dimensions'])}):")
    _taps(k, depth + 1, names, window, x_shape)
    k(depth + 1, "v = a1[src] if ok else a2[0]")
    k(depth + 1, f"if w == 0 or (best == best and (v != v or v {better} best)):")
    k(depth + 2, "best = v")
    k(depth + 2, "sel = w")


def _select_and_gather(eqn, xp, sim):
    t, x = (v.aval for v in eqn.inputs)
    out = eqn.outputs[0].aval
    window = _window_params(eqn)
    n = math.prod(out.shape)
    k = _grid(n)
    names = [f"o{d}" for d in range(len(out.shape))]
    k.unravel(2, "t", names, out.shape)
    _selection(k, 2, names, window, x.shape, eqn.params["select"])
    k(2, "w = sel")
    _taps(k, 2, names, window, x.shape)
    k(2, "a0[t] = a3[src] if ok else a4[0]")
    src = k.source((out.dtype, x.dtype, x.dtype, t.dtype, t.dtype), sim)
    fill = dtypes.extreme_identity(x.dtype, eqn.params["select"])
    return _into_fresh(src, out, xp, sim, n, lambda args: (
        _dev(xp, args[1]), _fill(xp, fill, x.dtype), _dev(xp, args[0]), _fill(xp, 0, t.dtype)))


def _select_and_scatter(eqn, xp, sim):
    ct, x = (v.aval for v in eqn.inputs)
    window = _window_params(eqn)
    n_win, n = math.prod(ct.shape), math.prod(x.shape)
    k1 = _grid(n_win)
    names = [f"o{d}" for d in range(len(ct.shape))]
    k1.unravel(2, "t", names, ct.shape)
    _selection(k1, 2, names, window, x.shape, eqn.params["select"])
    k1(2, "a0[t] = sel")
    i64 = np.dtype(np.int64)
    first = k1.source((i64, x.dtype, x.dtype), sim)
    # per x element, in tap order: the windows whose selected tap lands on it
    k2 = _grid(n)
    pos = [f"i{d}" for d in range(len(x.shape))]
    k2.unravel(2, "t", pos, x.shape)
    k2(2, "acc = a3[0]")
    wd = window["window_dimensions"]
    k2(2, f"for w in range({math.prod(wd)}):")
    k2.unravel(3, "w", [f"w{d}" for d in range(len(wd))], wd)
    conds = []
    for d in range(len(x.shape)):
        lo, s = window["padding"][d][0], window["window_strides"][d]
        k2(3, f"q{d} = i{d} * {window['base_dilation'][d]} + ({lo}) - w{d} * "
              f"{window['window_dilation'][d]}")
        conds.append(f"q{d} >= 0 and q{d} % {s} == 0 and q{d} // {s} < {ct.shape[d]}")
    k2(3, f"if {' and '.join(conds) or 'True'}:")
    o = _flat([f"(q{d} // {window['window_strides'][d]})" for d in range(len(x.shape))],
              ct.shape) if x.shape else "0"
    k2(4, f"o = {o}")
    k2(4, "if a1[o] == w:")
    k2(5, "acc = acc + a2[o]")
    k2(2, "a0[t] = acc")
    second = k2.source((ct.dtype, i64, ct.dtype, ct.dtype), sim)
    launch = _launcher([first, second], sim)
    fill = dtypes.extreme_identity(x.dtype, eqn.params["select"])

    def run(args):
        res = xp.zeros(x.shape, ct.dtype)
        if n and n_win:
            sel = xp.empty(ct.shape, i64)
            launch(0, sel, _dev(xp, args[1]), _fill(xp, fill, x.dtype))
            launch(1, res, sel, _dev(xp, args[0]), _fill(xp, 0, ct.dtype))
        return [res]
    return Step(run, [first, second])


# -- convolution: im2col on the device, the product through xp.matmul ----------------

def _conv(eqn, xp, sim):
    lhs, rhs = (v.aval for v in eqn.inputs)
    out = eqn.outputs[0].aval
    p = eqn.params
    lspec, rspec, ospec = p["dimension_numbers"]
    dtype = np.dtype(out.dtype)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    x_shape = tuple(lhs.shape[a] for a in lspec)
    w_shape = tuple(rhs.shape[a] for a in rspec)
    out_sp = tuple(out.shape[a] for a in ospec[2:])
    nsp = len(x_shape) - 2
    (n, c), (o, _), ksp = x_shape[:2], w_shape[:2], w_shape[2:]
    batch = p["batch_group_count"] > 1
    g = p["batch_group_count"] if batch else p["feature_group_count"]
    nb, cg = (n // g, c) if batch else (n, c // g)
    cols_shape = (g, nb, *out_sp, cg, *ksp)
    total = math.prod(cols_shape)
    k = _grid(total)
    osn, ksn = [f"o{d}" for d in range(nsp)], [f"k{d}" for d in range(nsp)]
    k.unravel(2, "t", ["g", "nb", *osn, "cc", *ksn], cols_shape)
    k(2, f"sample = g * {nb} + nb" if batch else "sample = nb")
    k(2, "chan = cc" if batch else f"chan = g * {cg} + cc")
    conds, idx = [], ["sample", "chan"]
    for d in range(nsp):
        lo, ld = p["padding"][d][0], p["lhs_dilation"][d]
        k(2, f"p{d} = o{d} * {p['window_strides'][d]} + k{d} * {p['rhs_dilation'][d]} - ({lo})")
        conds.append(f"p{d} >= 0 and p{d} % {ld} == 0 and p{d} // {ld} < {x_shape[2 + d]}")
        idx.append(f"(p{d} // {ld})")
    k(2, f"if {' and '.join(conds) or 'True'}:")
    k(3, f"a0[t] = a1[{_flat(idx, x_shape)}]")
    k(2, "else:")
    k(3, "a0[t] = a2[0]")
    src = k.source((work, work, work), sim)
    launch = _launcher([src], sim)
    osp, kp = math.prod(out_sp), math.prod(ksp)

    def run(args):
        x = xp.ascontiguousarray(xp.transpose(xp.asarray(args[0]), lspec).astype(work))
        w = xp.ascontiguousarray(xp.transpose(xp.asarray(args[1]), rspec).astype(work))
        cols = xp.empty(cols_shape, work)      # the kernel writes every element
        if total:
            launch(0, cols, x, _fill(xp, 0, work))
        prod = xp.matmul(cols.reshape(g, nb * osp, cg * kp),
                         w.reshape(g, o // g, cg * kp).transpose(0, 2, 1))
        res = prod.reshape(g, nb, *out_sp, o // g)
        res = res.transpose(1, 0, 2 + nsp, *range(2, 2 + nsp)).reshape(nb, o, *out_sp)
        res = xp.transpose(res, tuple(np.argsort(ospec)))
        return [xp.ascontiguousarray(res).astype(dtype, copy=False)]
    return Step(run, [src])


RENDERED = {P.gather: _gather, P.scatter: _scatter, P.scatter_add: _scatter,
            P.dynamic_slice: _dynamic_slice, P.dynamic_update_slice: _dynamic_update_slice,
            P.pad: _pad, P.concatenate: _concatenate,
            **{prim: _scan for prim in SCANS}, P.argmax: _arg_reduce, P.argmin: _arg_reduce,
            P.threefry2x32: _threefry,
            P.lu_pivots_to_permutation: _pivots,
            **{prim: _reduce_window for prim in WINDOWS},
            P.select_and_gather_add: _select_and_gather,
            P.select_and_scatter_add: _select_and_scatter,
            P.conv_general_dilated: _conv}
# float16 operands are widened to float32 for the kernels that do arithmetic on them
WIDENED = {*SCANS, *WINDOWS, P.select_and_gather_add, P.select_and_scatter_add,
           P.scatter_add, P.argmax, P.argmin}
