"""Kernel emission: a fused ``plan.Kernel`` -> numba-cuda kernel source -> compiled kernel.

This is the only module that knows the kernel language. ``render(kernel, slot_dtypes)``
returns :class:`Source` objects (Python text for ``numba.cuda.jit`` plus the argument
dtypes and the launch shape); ``compile_source`` turns one into a launchable kernel,
cached by the source text and the target (compute capability, or ``"sim"``). Another
kernel language would replace this module and keep the runtime.

Every kernel takes flat 1-D arrays only; shapes, offsets and strides are constants in the
text, so elementwise chains broadcast by index arithmetic. A reduction kernel runs one
block per (kept output point, part of the reduced points): each thread accumulates a
strided share, then a shared-memory tree combines the block (fixed order: deterministic).
When a few outputs each reduce many points, the parts write partials and a second kernel
combines them in part order (deterministic, no atomics).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from dataclasses import dataclass

import numpy as np

from ir import dtypes
from ir import primitives as P

from ..planning.plan import c_strides

BLOCK = 128             # threads per block (a power of two: the tree halves it)
SIM_BLOCK = 16          # the simulator runs one Python thread per GPU thread
MAX_BLOCKS = 1024
PART_POINTS = 8192      # a reduction splits into parts of about this many points ...
MAX_PARTS = 64          # ... into at most this many, when it has few outputs

# elementwise ops: the expression over argument names; F_* are math functions
# (math.* on the device, NaN/inf-safe NumPy in the simulator)
UNARY = {P.neg: "(-{0})", P.abs: "F_abs({0})", P.exp: "F_exp({0})", P.log: "F_log({0})",
         P.log1p: "F_log1p({0})", P.expm1: "F_expm1({0})", P.sqrt: "F_sqrt({0})",
         P.sin: "F_sin({0})", P.cos: "F_cos({0})", P.tan: "F_tan({0})",
         P.tanh: "F_tanh({0})", P.logistic: "F_logistic({0})"}
BINARY = {P.add: "({0} + {1})", P.sub: "({0} - {1})", P.mul: "({0} * {1})",
          P.div: "F_div({0}, {1})", P.max: "F_max({0}, {1})", P.min: "F_min({0}, {1})",
          P.pow: "F_pow({0}, {1})",
          P.eq: "({0} == {1})", P.ne: "({0} != {1})", P.lt: "({0} < {1})",
          P.le: "({0} <= {1})", P.gt: "({0} > {1})", P.ge: "({0} >= {1})"}
FLOAT_ONLY = {P.exp, P.log, P.log1p, P.expm1, P.sqrt, P.sin, P.cos, P.tan, P.tanh,
              P.logistic, P.div, P.pow}
COMBINE = {P.reduce_sum: "({0} + {1})", P.reduce_prod: "({0} * {1})",
           P.reduce_max: "F_max({0}, {1})", P.reduce_min: "F_min({0}, {1})"}
DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))


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
    return "T_" + np.dtype(dt).name


def _const(value, dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return repr(bool(value))
    if dt.kind == "f":
        v = float(value)
        text = "NAN" if math.isnan(v) else ("INF" if v == math.inf else
                                             "(-INF)" if v == -math.inf else repr(v))
        return f"{_tname(dt)}({text})"
    return f"{_tname(dt)}({int(value)})"


class _Writer:
    def __init__(self):
        self.lines = []

    def __call__(self, depth, text):
        self.lines.append("    " * depth + text)


def _unravel(w, depth, flat, dims, shape):
    """Lines setting ``i<d>`` for ``d`` in ``dims`` from the C-order index ``flat``."""
    if not dims:
        return
    w(depth, f"q = {flat}")
    for d in reversed(dims[1:]):
        w(depth, f"i{d} = q % {shape[d]}")
        w(depth, f"q = q // {shape[d]}")
    w(depth, f"i{dims[0]} = q")


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
        return _const(r[1], np.asarray(r[1]).dtype if dt is None else dt)

    def emit_point(self, w, depth):
        k = self.k
        for i, v in enumerate(k.reads):
            name = self.arg(v.slot, v.dtype)
            w(depth, f"r{i} = {name}[{_index(v.offset, v.strides, k.shape)}]")
        for j, op in enumerate(k.ops):
            w(depth, f"v{j} = {self.op(op)}")
        full = _index(0, c_strides(k.shape), k.shape)
        for ref, slot, dt in k.stores:
            w(depth, f"{self.arg(slot, dt)}[{full}] = {self.ref(ref, dt)}")

    def op(self, op):
        prim, dt = op.prim, np.dtype(op.dtype)
        if prim is P.iota:
            return f"{_tname(dt)}(i{op.params['dimension']})"
        args = [self.ref(a, op.arg_dtype) for a in op.args]
        if prim is P.select:
            text = f"({args[1]} if {args[0]} else {args[2]})"
        elif prim is P.convert:
            text = args[0]
        elif prim in UNARY:
            text = UNARY[prim].format(*args)
        elif prim in BINARY:
            text = BINARY[prim].format(*args)
        else:
            raise NotImplementedError(f"cuda emit: no rendering for {prim.name}")
        return text if dt.kind == "b" else f"{_tname(dt)}({text})"


def render(kernel, simulated=False) -> list[Source]:
    """The kernels (one, or a reduction's two passes) that compute ``kernel``."""
    block = SIM_BLOCK if simulated else BLOCK
    if kernel.reduces:
        return _render_reduction(kernel, block)
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


def _render_reduction(k, block):
    shape, axes = k.shape, tuple(k.axes)
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    n_out, m = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in axes)
    parts = min(MAX_PARTS, max(1, m // PART_POINTS)) if n_out < MAX_PARTS else 1
    chunk = -(-m // parts)
    body, w = _Body(k), _Writer()
    for i, red in enumerate(k.reduces):
        w(1, f"sh{i} = cuda.shared.array({block}, D_{np.dtype(red.out_dtype).name})")
    w(1, "tid = cuda.threadIdx.x")
    w(1, f"for b in range(cuda.blockIdx.x, {n_out * parts}, cuda.gridDim.x):")
    w(2, f"o = b // {parts}")
    w(2, f"p = b % {parts}")
    _unravel(w, 2, "o", kept, shape)
    for i, red in enumerate(k.reduces):
        w(2, f"acc{i} = {_const(_identity(red), red.out_dtype)}")
    w(2, f"for j in range(p * {chunk} + tid, min(p * {chunk} + {chunk}, {m}), {block}):")
    _unravel(w, 3, "j", axes, shape)
    body.emit_point(w, 3)
    for i, red in enumerate(k.reduces):
        t = _tname(red.out_dtype)
        w(3, f"acc{i} = {t}({COMBINE[red.prim].format(f'acc{i}', f'{t}({body.ref(red.ref)})')})")
    for i, _ in enumerate(k.reduces):
        w(2, f"sh{i}[tid] = acc{i}")
    w(2, "cuda.syncthreads()")
    w(2, f"s = {block // 2}")
    w(2, "while s > 0:")
    w(3, "if tid < s:")
    for i, red in enumerate(k.reduces):
        t = _tname(red.out_dtype)
        w(4, f"sh{i}[tid] = {t}({COMBINE[red.prim].format(f'sh{i}[tid]', f'sh{i}[tid + s]')})")
    w(3, "cuda.syncthreads()")
    w(3, "s = s // 2")
    w(2, "if tid == 0:")
    for i, red in enumerate(k.reduces):
        dest = body.arg(red.slot, red.out_dtype) if parts == 1 else \
            body.arg(-(i + 1), red.out_dtype)
        w(3, f"{dest}[{'o' if parts == 1 else 'b'}] = sh{i}[0]")
    w(2, "cuda.syncthreads()")
    first = _source(body, w, min(n_out * parts, MAX_BLOCKS), block)
    if parts > 1:
        first = dataclasses.replace(first, scratch=tuple(
            (i, n_out * parts, np.dtype(red.out_dtype)) for i, red in enumerate(k.reduces)))
    sources = [first]
    if parts > 1:
        for i, red in enumerate(k.reduces):
            sources.append(_second_pass(red, i, n_out, parts, block))
    return sources


def _second_pass(red, i, n_out, parts, block):
    t, w = _tname(red.out_dtype), _Writer()
    w(1, f"for o in range(cuda.grid(1), {n_out}, cuda.gridsize(1)):")
    w(2, f"acc = a0[o * {parts}]")
    w(2, f"for q in range(1, {parts}):")
    w(3, f"acc = {t}({COMBINE[red.prim].format('acc', f'a0[o * {parts} + q]')})")
    w(2, "a1[o] = acc")
    dt = np.dtype(red.out_dtype)
    return _source(None, w, -(-n_out // block), block, (-(i + 1), red.slot), (dt, dt))


def _identity(red):
    if red.prim is P.reduce_sum:
        return 0
    if red.prim is P.reduce_prod:
        return 1
    return dtypes.extreme_identity(red.out_dtype, "max" if red.prim is P.reduce_max else "min")


# -- compiling ----------------------------------------------------------------------

_COMPILED: dict = {}


@functools.cache
def _names(simulated):
    return _bind(simulated)


def namespace(simulated):
    """The names generated source refers to, bound for the device or the simulator (a
    fresh dict over shared bindings, so device functions compile once per process)."""
    return dict(_names(simulated))


def _bind(simulated):
    import numba
    from numba import cuda
    ns = {"cuda": cuda, "INF": math.inf, "NAN": math.nan}
    for dt in DTYPES:
        ns["D_" + dt.name] = numba.from_dtype(dt)
        ns[_tname(dt)] = dt.type if simulated else numba.from_dtype(dt)
    if simulated:
        ns.update({f"F_{n}": _quiet(getattr(np, u)) for n, u in
                   (("abs", "abs"), ("exp", "exp"), ("log", "log"), ("log1p", "log1p"),
                    ("expm1", "expm1"), ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"),
                    ("tan", "tan"), ("tanh", "tanh"),
                    ("div", "true_divide"), ("max", "maximum"), ("min", "minimum"),
                    ("pow", "power"))})
        ns["F_logistic"] = _quiet(lambda x: 1 / (1 + np.exp(-x)))
    else:
        ns.update({f"F_{n}": getattr(math, n) for n in
                   ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
                    "pow")})
        ns.update(F_abs=abs, F_div=_device_div(), F_max=_device_minmax(True),
                  F_min=_device_minmax(False), F_logistic=_device_logistic())
    return ns


def _quiet(f):
    def g(*args):
        with np.errstate(all="ignore"):
            return f(*args)
    return g


def _device_div():
    from numba import cuda

    @cuda.jit(device=True, inline="always")
    def div(x, y):
        return x / y
    return div


def _device_minmax(is_max):
    from numba import cuda
    if is_max:
        @cuda.jit(device=True, inline="always")
        def f(x, y):
            return x if (x != x or x > y) else y
    else:
        @cuda.jit(device=True, inline="always")
        def f(x, y):
            return x if (x != x or x < y) else y
    return f


def _device_logistic():
    from numba import cuda

    @cuda.jit(device=True, inline="always")
    def f(x):
        return 1 / (1 + math.exp(-x))
    return f


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
        fn = _COMPILED[key] = cuda.jit(ns["kernel"])
    return fn


def clear():
    _COMPILED.clear()
