"""``cond``, ``while`` and ``scan`` as native code in a shared library (``aot.py``).

Each body (a branch, a condition, a loop body) is an internal function of the library,
``int body(const void *const *inputs, void *const *outputs)``, emitted from its own plan
like the entry; a loop step calls it from a native loop:

- ``scan``: the carry lives in two buffers that swap roles each step (the body reads one
  and writes the other); ``xs[t]`` and ``ys[t]`` are pointers into the stacked operands
  and results (``t`` counts down when ``reverse``);
- ``while``: the condition writes a bool, then the body runs, at most ``max_steps`` times
  when that is set;
- ``cond``: the branch the (clamped) index picks runs on the operands, writing the results.

A body's non-zero return code (out of memory, an index out of bounds) ends the loop and is
the entry's return code. Nothing checks for Ctrl-C here: there is no Python to tell.
"""

from __future__ import annotations

from functorch_core.ir import passes
from llvmlite import ir

from ..planning import buffers
from ..planning.plan import Loop
from . import irloop
from .lowering import partition

I1, I8, I32, I64, PTR = (ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64),
                         ir.PointerType())


def graphs_of(eqn):
    """The graphs a control-flow equation runs."""
    p = eqn.params
    if eqn.prim.name == "cond":
        return list(p["branches"])
    if eqn.prim.name == "while":
        return [p["cond_graph"], p["body_graph"]]
    return [p["body"]]


class Bodies:
    """The plans of every loop body under ``plan``, partitioned once and checked with
    ``check`` (aot's refusals) as they are found."""

    def __init__(self, plan, check):
        self.top, self.check, self._plans = plan, check, {}
        check(plan)
        self._walk(plan)

    def _walk(self, plan):
        for step in plan.steps:
            if isinstance(step, Loop):
                for g in graphs_of(step.eqn):
                    if id(g) not in self._plans:
                        body = partition(passes.simplify(g))
                        self.check(body)
                        self._plans[id(g)] = (g, body)     # the graph kept: ids stay unique
                        self._walk(body)

    def plans(self):
        return [self.top] + [p for _, p in self._plans.values()]

    def plan_of(self, graph):
        return self._plans[id(graph)][1]


def _const(v, ty=I64):
    return ir.Constant(ty, v)


def _at(b, base, offset):
    return b.gep(base, [offset], source_etype=I8)


def _table(b, n):
    """An array of ``n`` pointers on the stack (a function's inputs or outputs table)."""
    return b.alloca(PTR, size=_const(max(n, 1)))


def _put(b, table, i, value):
    b.store(value, b.gep(table, [_const(i)], source_etype=PTR))


def _sizes(avals):
    return [buffers.nbytes(tuple(a.shape), a.dtype) for a in avals]


class _Carry:
    """Two buffers per carry (sets A and B) in one malloc'd block; ``free`` gives it back."""

    def __init__(self, b, sizes, extra=0):
        self.b, self.sizes = b, sizes
        offsets, total = [], 0
        for n in sizes * 2:
            offsets.append(total)
            total += -(-n // 64) * 64
        module = b.module
        malloc = irloop.declare(module, "malloc", PTR, [I64])
        self._free = irloop.declare(module, "free", ir.VoidType(), [PTR])
        self.memcpy = irloop.declare(module, "memcpy", PTR, [PTR, PTR, I64])
        self.raw = b.call(malloc, [_const(max(total + extra, 1))])
        self.ok = b.icmp_unsigned("!=", self.raw, ir.Constant(PTR, None))
        self.a = [_at(b, self.raw, _const(o)) for o in offsets[:len(sizes)]]
        self.b_ = [_at(b, self.raw, _const(o)) for o in offsets[len(sizes):]]
        self.extra = _at(b, self.raw, _const(total))

    def pick(self, even):
        """(read, write) pointers per carry for an iteration of parity ``even`` (an i1)."""
        b = self.b
        return ([b.select(even, x, y) for x, y in zip(self.a, self.b_, strict=True)],
                [b.select(even, y, x) for x, y in zip(self.a, self.b_, strict=True)])

    def copy(self, dst, src):
        for d, s, n in zip(dst, src, self.sizes, strict=True):
            if n:
                self.b.call(self.memcpy, [d, s, _const(n)])

    def free(self):
        self.b.call(self._free, [self.raw])


def _call(b, fn, ins, outs, carry, fail):
    """``rc = fn(ins, outs)``; a non-zero ``rc`` frees the carry and goes to ``fail``."""
    rc = b.call(fn, [b.bitcast(ins, PTR), b.bitcast(outs, PTR)])
    with b.if_then(b.icmp_signed("!=", rc, _const(0, I32)), likely=False):
        if carry is not None:
            carry.free()
        fail(rc)


def emit_loop(b, emitter, step, ins, outs, fail):
    """Run the control-flow ``step`` at ``b``: ``ins``/``outs`` are the data pointers of its
    inputs and outputs; ``emitter.function(graph)`` gives a body's function; ``fail(rc)``
    emits the enclosing function's return of the error code ``rc`` (a body's, or 3 when
    the carry buffers cannot be allocated)."""
    kind = step.eqn.prim.name
    run = {"cond": _cond, "scan": _scan, "while": _while}[kind]
    run(b, emitter, step.eqn.params, ins, outs, fail)


def _cond(b, emitter, p, ins, outs, fail):
    branches = list(p["branches"])
    index = b.load(ins[0], typ=I32)
    last = _const(len(branches) - 1, I32)
    index = b.select(b.icmp_signed("<", index, _const(0, I32)), _const(0, I32), index)
    index = b.select(b.icmp_signed(">", index, last), last, index)
    in_t, out_t = _table(b, len(ins) - 1), _table(b, len(outs))
    for i, x in enumerate(ins[1:]):
        _put(b, in_t, i, x)
    for i, y in enumerate(outs):
        _put(b, out_t, i, y)
    for k, g in enumerate(branches):
        fn = emitter.function(g)
        with b.if_then(b.icmp_signed("==", index, _const(k, I32))):
            _call(b, fn, in_t, out_t, None, fail)


def _scan(b, emitter, p, ins, outs, fail):
    nc, nk, length = p["n_consts"], p["n_carry"], p["length"]
    body = p["body"]
    fn = emitter.function(body)
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    final, ys = outs[:nk], outs[nk:]
    x_bytes, y_bytes = _sizes(body.in_avals[nc + nk:]), _sizes(body.out_avals[nk:])
    carry = _Carry(b, _sizes(body.in_avals[nc:nc + nk]))
    with b.if_then(b.not_(carry.ok), likely=False):
        fail(_const(3, I32))
    carry.copy(carry.a, init)
    in_t, out_t = _table(b, len(ins)), _table(b, len(outs))
    for i, c in enumerate(consts):
        _put(b, in_t, i, c)
    head, i, done = irloop.open_loop(b, _const(0), _const(length))
    t = b.sub(_const(length - 1), i) if p["reverse"] else i
    read, write = carry.pick(b.icmp_signed("==", b.and_(i, _const(1)), _const(0)))
    for k in range(nk):
        _put(b, in_t, nc + k, read[k])
        _put(b, out_t, k, write[k])
    for j, (x, n) in enumerate(zip(xs, x_bytes, strict=True)):
        _put(b, in_t, nc + nk + j, _at(b, x, b.mul(t, _const(n))))
    for j, (y, n) in enumerate(zip(ys, y_bytes, strict=True)):
        _put(b, out_t, nk + j, _at(b, y, b.mul(t, _const(n))))
    _call(b, fn, in_t, out_t, carry, fail)
    irloop.close_loop(b, head, i, done, _const(1))
    carry.copy(final, carry.a if length % 2 == 0 else carry.b_)
    carry.free()


def _while(b, emitter, p, ins, outs, fail):
    ncc, nbc, max_steps = p["n_cond_consts"], p["n_body_consts"], p["max_steps"]
    cond_fn, body_fn = emitter.function(p["cond_graph"]), emitter.function(p["body_graph"])
    cc, bc, init = ins[:ncc], ins[ncc:ncc + nbc], ins[ncc + nbc:]
    nk = len(init)
    carry = _Carry(b, _sizes(p["body_graph"].out_avals), extra=1)
    with b.if_then(b.not_(carry.ok), likely=False):
        fail(_const(3, I32))
    carry.copy(carry.a, init)
    cin, cout = _table(b, ncc + nk), _table(b, 1)
    bin_, bout = _table(b, nbc + nk), _table(b, nk)
    for i, c in enumerate(cc):
        _put(b, cin, i, c)
    for i, c in enumerate(bc):
        _put(b, bin_, i, c)
    _put(b, cout, 0, carry.extra)
    steps = b.alloca(I64)
    b.store(_const(0), steps)
    head, body, done = (b.append_basic_block(n) for n in ("while_head", "while_body",
                                                           "while_done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.load(steps, typ=I64)
    read, write = carry.pick(b.icmp_signed("==", b.and_(i, _const(1)), _const(0)))
    for k in range(nk):
        _put(b, cin, ncc + k, read[k])
        _put(b, bin_, nbc + k, read[k])
        _put(b, bout, k, write[k])
    _call(b, cond_fn, cin, cout, carry, fail)
    go = b.icmp_unsigned("!=", b.load(carry.extra, typ=I8), _const(0, I8))
    if max_steps is not None:
        go = b.and_(go, b.icmp_signed("<", i, _const(max_steps)))
    b.cbranch(go, body, done)
    b.position_at_end(body)
    _call(b, body_fn, bin_, bout, carry, fail)
    b.store(b.add(i, _const(1)), steps)
    b.branch(head)
    b.position_at_end(done)
    even = b.icmp_signed("==", b.and_(b.load(steps, typ=I64), _const(1)), _const(0))
    carry.copy(outs, carry.pick(even)[0])
    carry.free()
