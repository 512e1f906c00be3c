"""Control flow on the cpu backend: loops stay loops, each body compiled once.

A ``cond``/``while``/``scan`` equation becomes a :class:`~.plan.Loop` step. Its bodies
are simplified and compiled to their own executables (cached like any graph).

When every body of a loop runs as one native graph entry (fused kernels and gemms),
the whole loop is native (:class:`~.plan.NativeLoop`): one native function iterates,
points the body's argument arrays at the carry (two sets of buffers that swap roles
each step) and at ``xs[t]``/``ys[t]`` by index arithmetic, evaluates the predicate and
calls the body's entry, with no Python between steps. Otherwise (a body with an
interpreter fallback, a kernel big enough for threads, a convolution, a nested loop, or
a cond with a product or a loop in a branch) the step runs the loop in Python, calling
the body's executable once per iteration on C-contiguous arrays (its trusted entry: no
per-call argument checks). Bodies are first rewritten (``loop_rewrites.py``).

A loop whose body multiplies matrices runs OpenBLAS on the calling thread
(``blas.one_thread_each``) when its biggest gemm call is below ``blas.ONE_THREAD_MACS``,
and for any size on a machine busier than its cores: OpenBLAS's threads meet at a barrier
inside every call, and a preempted one stalls every step (the LSTM of
``benchmarks/control_flow.py``, 32 x 256 x 1024 per step, at a load of 9 on 2 cores:
forward loop 3.1 s on two threads, 0.28 s on one). The load average that ``busy`` reads
lags the load by up to a minute, so the size decides for products of that size (on a
quiet machine two OpenBLAS threads had made the whole LSTM step 78 ms against 98 ms).
"""

from __future__ import annotations

import contextlib

import numpy as np
from functorch_core.ir import passes
from functorch_core.ir import primitives as P

from ..planning.plan import Blas, NativeLoop
from .blas import busy, call_macs, one_thread_always, one_thread_each
from .entries import graph_entry_supported, loop_entry
from .loop_rewrites import conds_as_selects, hoist_products
from .steps import fetch, ref_shape


def _compiled(compile_graph, graph, loop_body=True):
    """``graph`` simplified (a loop body: conds as selects) and compiled by
    ``compile_graph`` (the runtime's, passed down: it compiles this loop's graph too)."""
    graph = passes.simplify(graph)
    if loop_body:
        selected = conds_as_selects(graph)
        graph = graph if selected is graph else passes.simplify(selected)
    return compile_graph(graph, loop_body)


def _contiguous(args, avals):
    # np.asarray, not np.ascontiguousarray: that one turns 0-d arrays into shape (1,)
    return [np.asarray(a, dtype=av.dtype, order="C") for a, av in zip(args, avals, strict=True)]


def _fresh(arrays):
    return [np.array(a, copy=True) for a in arrays]


def _nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def runs_natively(exe) -> bool:
    """Whether a body can run inside a native loop: its steps are one graph entry, or
    it has none (its results are its inputs or constants)."""
    return graph_entry_supported() and (exe.entry_address is not None or not exe.plan.steps)


def _gemm_macs(exe) -> int:
    """The multiply-adds of the biggest gemm call in ``exe``'s steps (0: none)."""
    return max((call_macs(ref_shape(s.lhs), ref_shape(s.rhs), s.dimension_numbers)
                for s in exe.plan.steps if isinstance(s, Blas)), default=0)


def _blas_threads(macs: int):
    """OpenBLAS on one thread for a loop whose biggest gemm call has ``macs``
    multiply-adds (0: none) where a product of that size runs on one thread whatever
    the load (``blas.one_thread_always``), and for any gemm while the machine is busy (a
    one-minute load average above its cores); else as it is."""
    if macs and (one_thread_always(macs) or busy()):
        return one_thread_each()
    return contextlib.nullcontext()


class _Layout:
    """The argument list of a native loop: first the arrays of a call (``fixed``: entry
    table, step count, carry sets A and B, xs, ys), then each body's buffer list (an
    arena of its executable) with the literals it returns."""

    def __init__(self, n_fixed):
        self.template = [None] * n_fixed
        self.proxies, self.pointers, self.copies, self.consts = [], [], [], []
        self.fresh, self.arenas = [], []

    def body(self, exe, inputs, outputs):
        """Place ``exe``'s buffers; ``inputs[i]`` is None (operand i is a constant of the
        loop, given per call) or where input slot i points, ``(kind, k, stride)``;
        ``outputs[j]`` is where result j goes (None: the results stay in the body's own
        buffers). Returns the span of the entry's arguments, or None when it has nothing
        to run."""
        first = len(self.template)
        self.template.extend(exe.new_arena())
        self.arenas.append((first, len(self.template), exe))
        slots = exe.plan.slots
        for slot, where in enumerate(inputs):
            if where is None:
                self.consts.append(first + slot)
            else:
                self._proxy(first + slot, where, slots[slot])
        proxied = set()
        for (copy, ref), where in zip(exe.outputs, outputs or [], strict=outputs is not None):
            if not copy:
                proxied.add(ref[1])
                self._proxy(first + ref[1], where, slots[ref[1]])
            elif ref[0] == "lit":
                self.template.append(np.array(ref[1], copy=True))
                self.copies.append((*where, len(self.template) - 1, self.template[-1].nbytes))
            else:
                self.copies.append((*where, first + ref[1], _nbytes(*slots[ref[1]])))
        self.fresh += [(first + s, shape, dtype) for s, shape, dtype in exe.fresh
                       if s not in proxied]
        return (first, len(slots)) if exe.plan.steps else None

    def _proxy(self, index, where, slot):
        self.pointers.append((index, *where))
        self.proxies.append((index, where, slot[0]))


class _NativeLoopRunner:
    """A compiled :class:`NativeLoop` and the layout of its arguments."""

    TABLE, STEPS = 0, 1

    def __init__(self, layout, bodies, **fields):
        layout.template[self.TABLE] = np.array(
            [e.entry_address or 0 for e in bodies] + [0] * (2 - len(bodies)), np.int64)
        self.layout, self.bodies = layout, bodies     # bodies: their code stays alive
        self.gemm_macs = max(_gemm_macs(e) for e in bodies)
        self.loop = NativeLoop(n_args=len(layout.template), table=self.TABLE,
                               pointers=tuple(layout.pointers), copies=tuple(layout.copies),
                               **fields)
        self.fn, self._keep = loop_entry(self.loop)

    def __call__(self, fixed, consts, a_set, b_set):
        """Run the loop: ``fixed`` {index: array}, ``consts`` the loop's constant operands
        in the order the bodies take them; returns the step count."""
        lay = self.layout
        args = lay.template.copy()
        steps = np.zeros((), np.int64)
        args[self.STEPS] = steps
        for k, a in fixed.items():
            args[k] = a
        for first, end, exe in lay.arenas:      # each call its own (threads)
            args[first:end] = exe.new_arena()
        for k, a in zip(lay.consts, consts, strict=True):
            args[k] = a
        for k, shape, dtype in lay.fresh:
            args[k] = np.empty(shape, dtype)
        for index, (kind, k, _), shape in lay.proxies:
            # a view of its first target: only its data pointer moves from then on
            target = a_set[k] if kind == "in" else b_set[k] if kind == "out" else args[k][0, ...]
            args[index] = target.reshape(shape)
        with _blas_threads(self.gemm_macs):
            self.fn(*args)
        return int(steps)


def _scan_native(p, xs_avals, exe):
    nc, nk, length = p["n_consts"], p["n_carry"], p["length"]
    y_avals = p["body"].out_avals[nk:]
    nx, ny = len(xs_avals), len(y_avals)
    carry_at = [(2 + k, 2 + nk + k) for k in range(nk)]
    xs_at = range(2 + 2 * nk, 2 + 2 * nk + nx)
    ys_at = range(2 + 2 * nk + nx, 2 + 2 * nk + nx + ny)
    lay = _Layout(2 + 2 * nk + nx + ny)
    inputs = [None] * nc + [("in", k, 0) for k in range(nk)] + [
        ("x", at, _nbytes(av.shape[1:], av.dtype)) for at, av in zip(xs_at, xs_avals, strict=True)]
    outputs = [("out", k, 0) for k in range(nk)] + [
        ("x", at, _nbytes(av.shape, av.dtype)) for at, av in zip(ys_at, y_avals, strict=True)]
    span = lay.body(exe, inputs, outputs)
    loop = _NativeLoopRunner(lay, [exe], body=span, cond=None, cond_result=None,
                             carry=tuple(carry_at), length=length, reverse=p["reverse"],
                             steps=None)

    def run(consts, carry, xs, ys):
        a_set = _fresh(carry)
        b_set = [np.empty_like(c) for c in carry]
        fixed = dict(zip(xs_at, xs, strict=True)) | dict(zip(ys_at, ys, strict=True))
        fixed |= {at: arr for (a, b), x, y in zip(carry_at, a_set, b_set, strict=True)
                  for at, arr in ((a, x), (b, y))}
        loop(fixed, consts, a_set, b_set)
        return a_set if length % 2 == 0 else b_set
    return run


def _scan(eqn, compile_graph):
    p = eqn.params
    nc, nk, length, reverse = p["n_consts"], p["n_carry"], p["length"], p["reverse"]
    in_avals = [a.aval for a in eqn.inputs]
    graph, products = hoist_products(passes.simplify(p["body"]), nc, nk, length, in_avals) \
        if length else (p["body"], None)
    exe = _compiled(compile_graph, graph)
    body, gemm_macs = exe.trusted, _gemm_macs(exe)
    y_avals = p["body"].out_avals[nk:]
    order = range(length - 1, -1, -1) if reverse else range(length)

    def looped(consts, carry, xs, ys):
        with _blas_threads(gemm_macs):
            return stepped(consts, carry, xs, ys)

    def stepped(consts, carry, xs, ys):
        for i in order:
            outs = body(consts + carry + [x[i, ...] for x in xs])   # 0-d arrays, not scalars
            carry = outs[:nk]
            for y, o in zip(ys, outs[nk:], strict=True):
                y[i] = o
        return carry

    loop = looped
    if length and runs_natively(exe):
        xs_avals = [v.aval.update(shape=(length,) + v.aval.shape) for v in graph.inputs[nc + nk:]]
        loop = _scan_native(dict(p, body=graph), xs_avals, exe)

    spare: list = []     # the hoisted products' buffers between calls (no page faults)

    def run(*args, ys_into=None):
        args = _contiguous(args, in_avals)
        consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
        held = None
        if products is not None:
            held = _take(spare)
            with one_thread_each() if busy() else contextlib.nullcontext():
                held = products(args, held)     # each product also holds its own
            xs = xs + held
        ys = [np.empty((length,) + av.shape, av.dtype) if into is None else into
              for av, into in zip(y_avals, ys_into or [None] * len(y_avals), strict=True)]
        if not length:
            return _fresh(carry) + ys
        out = loop(consts, carry, xs, ys) + ys
        if held is not None:
            spare.append(held)
        return out
    run.native = loop is not looped
    run.ys_into = True
    return run


def _take(spare):
    try:
        return spare.pop()
    except IndexError:      # none yet, or every one in use by another thread's call
        return None


def _while_native(eqn, cond, body):
    p = eqn.params
    ncc, nbc = p["n_cond_consts"], p["n_body_consts"]
    nk = len(p["body_graph"].out_avals)
    carry_at = [(2 + k, 2 + nk + k) for k in range(nk)]
    lay = _Layout(2 + 2 * nk)
    carried = [("in", k, 0) for k in range(nk)]
    body_span = lay.body(body, [None] * nbc + carried, [("out", k, 0) for k in range(nk)])
    # the condition's result is read where it is: its own buffer, an input or a literal
    cond_first = len(lay.template)
    (_, ref), = cond.outputs
    cond_span = lay.body(cond, [None] * ncc + carried, None)
    if ref[0] == "lit":
        lay.template.append(np.array(ref[1], dtype=bool))
        result = len(lay.template) - 1
    else:
        result = cond_first + ref[1]
    # the condition's constants come first among the loop's operands
    lay.consts = lay.consts[nbc:] + lay.consts[:nbc]
    limit = p["max_steps"]
    loop = _NativeLoopRunner(lay, [body, cond], body=body_span, cond=cond_span,
                             cond_result=result, carry=tuple(carry_at), length=limit,
                             reverse=False, steps=_NativeLoopRunner.STEPS)

    def run(cc, bc, carry):
        a_set = _fresh(carry)
        b_set = [np.empty_like(c) for c in carry]
        fixed = {at: arr for (a, b), x, y in zip(carry_at, a_set, b_set, strict=True)
                 for at, arr in ((a, x), (b, y))}
        steps = loop(fixed, cc + bc, a_set, b_set)
        return a_set if steps % 2 == 0 else b_set
    return run


def _while(eqn, compile_graph):
    p = eqn.params
    cond_exe = _compiled(compile_graph, p["cond_graph"])
    exe = _compiled(compile_graph, p["body_graph"])
    cond, body = cond_exe.trusted, exe.trusted
    ncc, nbc, max_steps = p["n_cond_consts"], p["n_body_consts"], p["max_steps"]
    in_avals = [a.aval for a in eqn.inputs]
    limit = float("inf") if max_steps is None else max_steps

    def looped(cc, bc, carry):
        steps = 0
        with _blas_threads(_gemm_macs(exe)):
            while steps < limit and cond(cc + carry)[0]:
                carry = body(bc + carry)
                steps += 1
        return list(carry) if steps else _fresh(carry)

    loop = _while_native(eqn, cond_exe, exe) if runs_natively(exe) and \
        runs_natively(cond_exe) else looped

    def run(*args):
        args = _contiguous(args, in_avals)
        return loop(args[:ncc], args[ncc:ncc + nbc], args[ncc + nbc:])
    run.native = loop is not looped
    return run


def _cond(eqn, compile_graph):
    branches = [_compiled(compile_graph, g, False).trusted for g in eqn.params["branches"]]
    in_avals = [a.aval for a in eqn.inputs[1:]]
    last = len(branches) - 1

    def run(index, *ops):
        return branches[min(max(int(index), 0), last)](_contiguous(ops, in_avals))
    run.native = False
    return run


RUNNERS = {P.scan: _scan, P.while_loop: _while, P.cond: _cond}


def loop_step(step, arena: set, compile_graph):
    """The runtime step of a :class:`~.plan.Loop`: results are fresh arrays of the runner,
    copied only into arena buffers; its bodies are compiled by ``compile_graph``.
    ``call.native`` tells whether the loop runs natively."""
    run = RUNNERS[step.eqn.prim](step.eqn, compile_graph)
    # a scan writes its stacked outputs straight into their arena buffers: fresh arrays
    # of tens of MB cost a page fault per 4 kB on every call, and a copy (an LSTM's
    # grad, h=256 T=100 b=32: 13k faults, 109 -> 87 ms of CPU time)
    n_carry = step.eqn.params["n_carry"] if getattr(run, "ys_into", False) else None
    into = [] if n_carry is None else [s if s in arena else None
                                       for s in step.outputs[n_carry:]]
    direct = set(s for s in into if s is not None)

    def call(bufs):
        ins = [fetch(r, bufs) for r in step.inputs]
        outs = run(*ins, ys_into=[None if s is None else bufs[s] for s in into]) if direct \
            else run(*ins)
        for slot, o in zip(step.outputs, outs, strict=True):
            if slot in direct:
                continue
            if slot in arena:
                np.copyto(bufs[slot], o)
            else:
                bufs[slot] = o
    call.native = run.native
    return call
