"""Kernel emission: a fused ``plan.Kernel`` -> numba-cuda kernel source -> compiled kernel.

This is the only module that knows the kernel language. ``render(kernel, slot_dtypes)``
returns :class:`Source` objects (Python text for ``numba.cuda.jit`` plus the argument
dtypes and the launch shape); ``compile_source`` turns one into a launchable kernel,
cached by the source text and the target (compute capability, or ``"sim"``). Another
kernel language would replace this module and keep the runtime.

Every kernel takes flat 1-D arrays only; shapes, offsets and strides are constants in the
text, so elementwise chains broadcast by index arithmetic; ``scalar`` renders each
operation per dtype. A reduction kernel runs one block per (kept output point, part of the
reduced points), or one warp per row when a row is at most ROW_POINTS trailing points:
each lane accumulates a strided share, then a fixed tree combines the lanes (shared
memory, then warp shuffles for the last 32; deterministic). When a few outputs each reduce
many points, the parts write partials and a second kernel combines them in part order
(deterministic, no atomics).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from dataclasses import dataclass

import numpy as np
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from ..planning.plan import c_strides
from . import scalar

BLOCK = 128             # threads per block (a power of two: the tree halves it)
SIM_BLOCK = 16          # the simulator runs one Python thread per GPU thread
MAX_BLOCKS = 1024
PART_POINTS = 8192      # a reduction splits into parts of about this many points ...
MAX_PARTS = 64          # ... into at most this many, when it has few outputs

ROW_POINTS = 4096       # a reduction of at most this many trailing points: a warp per row
WARP = 32
SIM_ROW_LANES = 4       # the simulator's "warp" for row-wise kernels (no shuffles there)

# the primitives rendered on float operands (UNARY/BINARY), those only on floats
# (FLOAT_ONLY); scalar.gap says which kinds every primitive renders for
UNARY = {p: p.name for p in P.ALL.values()
         if p.family == "unary" and scalar.gap(p, np.float32) is None}
BINARY = {p: p.name for p in P.ALL.values()
          if p.family == "binary" and scalar.gap(p, np.float32) is None}
FLOAT_ONLY = {p for p in (*UNARY, *BINARY) if scalar.gap(p, np.int32) is not None}
COMBINE = {P.reduce_sum: "({0} + {1})", P.reduce_prod: "({0} * {1})",
           P.reduce_max: "F_max({0}, {1})", P.reduce_min: "F_min({0}, {1})"}
ARG_REDUCTIONS = (P.argmax, P.argmin)
DTYPES = scalar.DTYPES


@dataclass(frozen=True)
class Source:
    """One kernel: ``text`` defines ``kernel(*args)``; ``arg_slots`` names the slot each
    argument is (a negative number -k is scratch buffer k-1); launch as
    ``kernel[blocks, threads]``."""

    text: str
    arg_slots: tuple
    arg_dtypes: tuple
    blocks: int
    threads: int
    scratch: tuple = ()     # (k, length, dtype): scratch buffer k (argument slot -k-1)


def _tname(dt):
    return scalar.cast(dt)


def _const(value, dt):
    return scalar.const(value, dt)


class _Writer:
    def __init__(self):
        self.lines = []

    def __call__(self, depth, text):
        self.lines.append("    " * depth + text)


def unravel(w, depth, flat, names, sizes):
    """Lines (written with ``w``) setting ``names[j]`` from the C-order index ``flat`` over
    ``sizes``."""
    if not names:
        return
    w(depth, f"q = {flat}")
    for name, size in zip(reversed(names[1:]), reversed(sizes[1:]), strict=True):
        w(depth, f"{name} = q % {size}")
        w(depth, f"q = q // {size}")
    w(depth, f"{names[0]} = q")


def _unravel(w, depth, flat, dims, shape):
    """Lines setting ``i<d>`` for ``d`` in ``dims`` from the C-order index ``flat``."""
    unravel(w, depth, flat, [f"i{d}" for d in dims], [shape[d] for d in dims])


def _index(offset, strides, shape):
    terms = [str(offset)] if offset else []
    terms += [f"i{d} * {s}" if s != 1 else f"i{d}" for d, (s, n) in
              enumerate(zip(strides, shape, strict=True)) if s and n != 1]
    return " + ".join(terms) or "0"


class _Body:
    """Arguments and the per-point statements (reads, ops, stores) of one kernel."""

    def __init__(self, kernel):
        self.k = kernel
        self.slots, self.dtypes = [], []

    def arg(self, slot, dtype):
        self.slots.append(slot)
        self.dtypes.append(np.dtype(dtype))
        return f"a{len(self.slots) - 1}"

    def ref(self, r, dt=None):
        if r[0] == "read":
            return f"r{r[1]}"
        if r[0] == "op":
            return f"v{r[1]}"
        own = r[1].dtype if isinstance(r[1], np.generic) else None
        return _const(r[1], own or (np.asarray(r[1]).dtype if dt is None else dt))

    def emit_point(self, w, depth):
        k = self.k
        for i, v in enumerate(k.reads):
            name = self.arg(v.slot, v.dtype)
            load = f"{name}[{_index(v.offset, v.strides, k.shape)}]"
            w(depth, f"r{i} = {_tname(v.dtype)}({load})" if v.dtype == scalar.F16 else
              f"r{i} = {load}")
        for j, op in enumerate(k.ops):
            w(depth, f"v{j} = {self.op(op)}")
        full = _index(0, c_strides(k.shape), k.shape)
        for ref, slot, dt in k.stores:
            value = self.ref(ref, dt)
            w(depth, f"{self.arg(slot, dt)}[{full}] = " +
              (f"T_float16({value})" if dt == scalar.F16 else value))

    def op(self, op):
        args = [self.ref(a, op.arg_dtype) for a in op.args]
        return scalar.op_text(op.prim, op.arg_dtype, op.dtype, args, op.params)


def render(kernel, simulated=False) -> list[Source]:
    """The kernels (one, or a reduction's two passes) that compute ``kernel``."""
    block = SIM_BLOCK if simulated else BLOCK
    if kernel.reduces:
        return _render_reduction(kernel, block, simulated)
    body, w = _Body(kernel), _Writer()
    n = math.prod(kernel.shape)
    w(1, f"for t in range(cuda.grid(1), {n}, cuda.gridsize(1)):")
    _unravel(w, 2, "t", tuple(range(len(kernel.shape))), kernel.shape)
    body.emit_point(w, 2)
    return [_source(body, w, min(-(-n // block), MAX_BLOCKS), block)]


def _source(body, w, blocks, threads, slots=None, arg_dtypes=None):
    slots = tuple(body.slots if slots is None else slots)
    names = ", ".join(f"a{i}" for i in range(len(slots)))
    text = "\n".join([f"def kernel({names}):", *w.lines]) + "\n"
    return Source(text, slots, tuple(body.dtypes if arg_dtypes is None else arg_dtypes),
                  max(blocks, 1), threads)


# -- reductions -----------------------------------------------------------------------
#
# A row is one kept output point (or a part of its reduced points); W lanes reduce a row,
# R rows share a block. Each lane accumulates a strided share of the row, then the lanes
# combine in a fixed tree: in shared memory down to 32 lanes, then warp shuffles on the
# device; in shared memory down to one lane in the simulator (it has no shuffles). Rows of
# at most ROW_POINTS trailing points take one warp each (no shared memory, no barrier).

_INDEX = np.dtype(np.int64)
_NO_INDEX = np.iinfo(np.int64).max
_FULL_MASK = "0xffffffff"


def _acc_dtype(red):
    """The accumulator dtype: 32/64-bit (what warp shuffles move), float16 in float32,
    bool as 0/1, narrow integers widened (sums and products wrap to the same low bits)."""
    dt = scalar.compute_dtype(red.in_dtype)
    if dt.kind == "b" or (dt.kind in "iu" and dt.itemsize < 4) or dt == np.int32:
        return np.dtype(np.int32)
    if dt.kind == "u":
        return np.dtype(np.int64)
    return dt


def reduction_gap(prim, dtype) -> str | None:
    """Why a reduction of ``dtype`` operands has no kernel rendering (None: it has)."""
    if np.dtype(dtype).kind == "c" and prim not in (P.reduce_sum, P.reduce_prod):
        return f"{prim.name} of complex operands is not rendered"
    return None


def _identity(red):
    acc = _acc_dtype(red)
    prim = red.prim
    if np.dtype(red.in_dtype).kind == "b" and prim not in ARG_REDUCTIONS:
        return int(prim in (P.reduce_prod, P.reduce_min))     # and: 1, or: 0
    if prim is P.reduce_sum:
        return 0
    if prim is P.reduce_prod:
        return 1
    top = prim in (P.reduce_min, P.argmin)
    return dtypes.extreme_identity(acc, "min" if top else "max")


def _combine(red, acc, other):
    """Lines folding ``other`` (value, index) into ``acc`` (assignable names)."""
    (av, ai), (bv, bi) = acc, other
    if red.prim in ARG_REDUCTIONS:
        op = ">" if red.prim is P.argmax else "<"
        a_nan, b_nan = f"({av} != {av})", f"({bv} != {bv})"
        take = (f"({b_nan} and (not {a_nan} or {bi} < {ai})) or (not {a_nan} and "
                f"({bv} {op} {av} or ({bv} == {av} and {bi} < {ai})))")
        return [f"if {take}:", f"    {av} = {bv}", f"    {ai} = {bi}"]
    prim = red.prim
    if np.dtype(red.in_dtype).kind == "b":
        expr = f"({av} {'&' if prim in (P.reduce_prod, P.reduce_min) else '|'} {bv})"
    else:
        expr = COMBINE[prim].format(av, bv)
    return [f"{av} = {_tname(_acc_dtype(red))}({expr})"]


def _final(red, acc, index):
    """The stored result of a row's accumulator."""
    out = np.dtype(red.out_dtype)
    if red.prim in ARG_REDUCTIONS:
        return f"{_tname(out)}({index})"
    if out.kind == "b":
        return f"({acc} != 0)"
    return f"T_float16({acc})" if out == scalar.F16 else f"{_tname(out)}({acc})"


def _emit_lines(w, depth, lines):
    for line in lines:
        w(depth, line)


def _each_reduction(w, depth, reds, value, index):
    """Per reduction ``i``: the line ``value(i, red)``, then, for an arg-reduction, the line
    ``index(i)`` of its index."""
    for i, red in enumerate(reds):
        w(depth, value(i, red))
        if red.prim in ARG_REDUCTIONS:
            w(depth, index(i))


def _render_reduction(k, block, simulated):
    shape, axes = k.shape, tuple(k.axes)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    n_out, m = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in axes)
    parts = min(MAX_PARTS, max(1, m // PART_POINTS)) if n_out < MAX_PARTS else 1
    chunk = -(-m // parts)
    trailing = axes == tuple(range(len(shape) - len(axes), len(shape)))
    if trailing and m <= ROW_POINTS and parts == 1:
        lanes = SIM_ROW_LANES if simulated else WARP
    else:
        lanes = block
    rows = block // lanes
    use_shared = simulated or lanes > WARP
    total = n_out * parts
    groups = -(-total // rows)
    reds = k.reduces
    body, w = _Body(k), _Writer()
    if use_shared:
        _each_reduction(w, 1, reds,
                        lambda i, red: f"sh{i} = cuda.shared.array({block}, "
                                       f"D_{_acc_dtype(red).name})",
                        lambda i: f"shi{i} = cuda.shared.array({block}, D_{_INDEX.name})")
    w(1, "tid = cuda.threadIdx.x")
    w(1, f"lane = tid % {lanes}")
    w(1, f"for g in range(cuda.blockIdx.x, {groups}, cuda.gridDim.x):")
    w(2, f"b = g * {rows} + tid // {lanes}")
    w(2, f"o = b // {parts}")
    w(2, f"p = b % {parts}")
    _each_reduction(w, 2, reds,
                    lambda i, red: f"acc{i} = {_const(_identity(red), _acc_dtype(red))}",
                    lambda i: f"idx{i} = {_const(_NO_INDEX, _INDEX)}")
    w(2, f"if b < {total}:")
    _unravel(w, 3, "o", kept, shape)
    w(3, f"for j in range(p * {chunk} + lane, min(p * {chunk} + {chunk}, {m}), {lanes}):")
    _unravel(w, 4, "j", axes, shape)
    body.emit_point(w, 4)
    for i, red in enumerate(reds):
        index = f"T_int64(i{red.axis})" if red.prim in ARG_REDUCTIONS else "0"
        w(4, f"x{i} = {_tname(_acc_dtype(red))}({body.ref(red.ref)})")
        _emit_lines(w, 4, _combine(red, (f"acc{i}", f"idx{i}"), (f"x{i}", index)))
    if use_shared:
        _each_reduction(w, 2, reds, lambda i, red: f"sh{i}[tid] = acc{i}",
                        lambda i: f"shi{i}[tid] = idx{i}")
        w(2, "cuda.syncthreads()")
        w(2, f"s = {lanes // 2}")
        w(2, f"while s >= {1 if simulated else WARP}:")
        w(3, "if lane < s:")
        for i, red in enumerate(reds):
            _emit_lines(w, 4, _combine(red, (f"sh{i}[tid]", f"shi{i}[tid]"),
                                       (f"sh{i}[tid + s]", f"shi{i}[tid + s]")))
        w(3, "cuda.syncthreads()")
        w(3, "s = s // 2")
        _each_reduction(w, 2, reds, lambda i, red: f"acc{i} = sh{i}[tid]",
                        lambda i: f"idx{i} = shi{i}[tid]")
    if not simulated:
        for off in (16, 8, 4, 2, 1):
            for i, red in enumerate(reds):
                if _acc_dtype(red).kind == "c":     # shuffles move 32/64-bit words
                    w(2, f"y{i} = {_tname(_acc_dtype(red))}(complex("
                         f"cuda.shfl_down_sync({_FULL_MASK}, acc{i}.real, {off}), "
                         f"cuda.shfl_down_sync({_FULL_MASK}, acc{i}.imag, {off})))")
                else:
                    w(2, f"y{i} = cuda.shfl_down_sync({_FULL_MASK}, acc{i}, {off})")
                if red.prim in ARG_REDUCTIONS:
                    w(2, f"z{i} = cuda.shfl_down_sync({_FULL_MASK}, idx{i}, {off})")
                _emit_lines(w, 2, _combine(red, (f"acc{i}", f"idx{i}"), (f"y{i}", f"z{i}")))
    w(2, f"if lane == 0 and b < {total}:")
    scratch, sources = [], []
    for i, red in enumerate(reds):
        if parts == 1:
            w(3, f"{body.arg(red.slot, red.out_dtype)}[o] = {_final(red, f'acc{i}', f'idx{i}')}")
            continue
        vals = (len(scratch), total, _acc_dtype(red))
        w(3, f"{body.arg(-(vals[0] + 1), vals[2])}[b] = acc{i}")
        scratch.append(vals)
        idx = None
        if red.prim in ARG_REDUCTIONS:
            idx = (len(scratch), total, _INDEX)
            w(3, f"{body.arg(-(idx[0] + 1), _INDEX)}[b] = idx{i}")
            scratch.append(idx)
        sources.append(_second_pass(red, vals, idx, n_out, parts, block))
    if use_shared:
        w(2, "cuda.syncthreads()")
    first = _source(body, w, min(groups, MAX_BLOCKS), block)
    return [dataclasses.replace(first, scratch=tuple(scratch)), *sources]


def _second_pass(red, vals, idx, n_out, parts, block):
    """Combine a reduction's parts, in part order, one thread per output."""
    w, arg = _Writer(), red.prim in ARG_REDUCTIONS
    w(1, f"for o in range(cuda.grid(1), {n_out}, cuda.gridsize(1)):")
    w(2, f"acc = a0[o * {parts}]")
    w(2, f"idx = a1[o * {parts}]" if arg else "idx = 0")
    w(2, f"for q in range(1, {parts}):")
    w(3, f"x = a0[o * {parts} + q]")
    w(3, f"z = a1[o * {parts} + q]" if arg else "z = 0")
    _emit_lines(w, 3, _combine(red, ("acc", "idx"), ("x", "z")))
    out = 2 if arg else 1
    w(2, f"a{out}[o] = {_final(red, 'acc', 'idx')}")
    slots = (-(vals[0] + 1), *((-(idx[0] + 1),) if arg else ()), red.slot)
    dts = (vals[2], *((_INDEX,) if arg else ()), np.dtype(red.out_dtype))
    return _source(None, w, -(-n_out // block), block, slots, dts)


# -- compiling ----------------------------------------------------------------------

_COMPILED: dict = {}


@functools.cache
def _names(simulated):
    from numba import cuda
    ns = {"cuda": cuda, "F_errstate": np.errstate}
    scalar.bind(ns, simulated)
    return ns


def namespace(simulated):
    """The names generated source refers to, bound for the device or the simulator (a
    fresh dict over shared bindings, so device functions compile once per process)."""
    return dict(_names(simulated))


# the simulator runs a kernel as Python: NumPy scalars wrap silently, as on the device
_QUIET = """
def quiet_kernel(*args):
    with F_errstate(all="ignore"):
        kernel(*args)
"""


def target(simulated):
    if simulated:
        return "sim"
    from numba import cuda
    return cuda.get_current_device().compute_capability


def compile_source(src: Source, simulated: bool):
    """``src`` as a launchable kernel, compiled once per (source text, target)."""
    key = (hashlib.sha256(src.text.encode()).hexdigest(), target(simulated))
    fn = _COMPILED.get(key)
    if fn is None:
        from numba import cuda
        ns = namespace(simulated)
        exec(compile(src.text, f"<fc-cuda-kernel {key[0][:12]}>", "exec"), ns)
        if simulated:
            exec(_QUIET, ns)
        fn = _COMPILED[key] = cuda.jit(ns["quiet_kernel" if simulated else "kernel"])
    return fn


def clear():
    _COMPILED.clear()
