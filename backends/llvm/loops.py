"""Control flow on the cpu backend: loops stay loops, each body compiled once.

A ``cond``/``while``/``scan`` equation becomes a :class:`~.plan.Loop` step. Its bodies
are simplified and compiled to their own executables (cached like any graph), and
the step runs the loop in Python, calling the body's executable once per iteration
on C-contiguous arrays (its trusted entry: no per-call argument checks). The carry
is the previous iteration's result arrays, handed back in without copies.
"""

from __future__ import annotations

import numpy as np

from ir import passes
from ir import primitives as P


def _compiled(graph):
    from .runtime import compile_graph
    exe = compile_graph(passes.simplify(graph))
    return exe.trusted


def _contiguous(args, avals):
    # np.asarray, not np.ascontiguousarray: that one turns 0-d arrays into shape (1,)
    return [np.asarray(a, dtype=av.dtype, order="C") for a, av in zip(args, avals, strict=True)]


def _fresh(arrays):
    return [np.array(a, copy=True) for a in arrays]


def _direct_outputs(exe):
    """The output slots of a body whose native entry may be called on our own buffers
    (every result a distinct fresh buffer the entry writes), else None."""
    outs = exe._plain_outputs
    if exe.entry is None or outs is None or len(set(outs)) != len(outs) \
            or set(outs) != {s for s, *_ in exe.fresh}:
        return None
    return outs


def _scan(eqn):
    from .runtime import compile_graph
    p = eqn.params
    exe = compile_graph(passes.simplify(p["body"]))
    body, direct = exe.trusted, _direct_outputs(exe)
    nc, nk, length, reverse = p["n_consts"], p["n_carry"], p["length"], p["reverse"]
    y_avals = p["body"].out_avals[nk:]
    carry_avals = p["body"].out_avals[:nk]
    in_avals = [a.aval for a in eqn.inputs]
    order = range(length - 1, -1, -1) if reverse else range(length)

    def looped(consts, carry, xs, ys):
        for i in order:
            outs = body(consts + carry + [x[i, ...] for x in xs])   # 0-d arrays, not scalars
            carry = outs[:nk]
            for y, o in zip(ys, outs[nk:], strict=True):
                y[i] = o
        return carry

    def direct_loop(consts, carry, xs, ys):
        # the native entry on our own buffers: the carry ping-pongs between two sets of
        # arrays, each y is written in place (no allocation, no copy per iteration)
        bufs, entry, n = exe.new_arena(), exe.entry, exe.n_inputs
        sets = [[np.empty(a.shape, a.dtype) for a in carry_avals] for _ in range(2)]
        carry_slots, y_slots = direct[:nk], direct[nk:]
        for k, i in enumerate(order):
            out = sets[k & 1]
            bufs[:n] = consts + carry + [x[i, ...] for x in xs]
            for s, b in zip(carry_slots, out, strict=True):
                bufs[s] = b
            for s, y in zip(y_slots, ys, strict=True):
                bufs[s] = y[i, ...]
            entry(*bufs)
            carry = out
        return carry

    def run(*args):
        args = _contiguous(args, in_avals)
        consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
        ys = [np.empty((length,) + av.shape, av.dtype) for av in y_avals]
        if not length:
            return _fresh(carry) + ys
        return (direct_loop if direct is not None else looped)(consts, carry, xs, ys) + ys
    return run


def _while(eqn):
    from .runtime import compile_graph
    p = eqn.params
    cond = _compiled(p["cond_graph"])
    exe = compile_graph(passes.simplify(p["body_graph"]))
    body, direct = exe.trusted, _direct_outputs(exe)
    ncc, nbc, max_steps = p["n_cond_consts"], p["n_body_consts"], p["max_steps"]
    in_avals = [a.aval for a in eqn.inputs]
    carry_avals = p["body_graph"].out_avals
    limit = float("inf") if max_steps is None else max_steps

    def run(*args):
        args = _contiguous(args, in_avals)
        cc, bc, carry = args[:ncc], args[ncc:ncc + nbc], args[ncc + nbc:]
        steps = 0
        if direct is not None:      # the native entry on our buffers, as for scan
            bufs, entry, n = exe.new_arena(), exe.entry, exe.n_inputs
            sets = [[np.empty(a.shape, a.dtype) for a in carry_avals] for _ in range(2)]
            while steps < limit and cond(cc + carry)[0]:
                out = sets[steps & 1]
                bufs[:n] = bc + carry
                for s, b in zip(direct, out, strict=True):
                    bufs[s] = b
                entry(*bufs)
                carry = out
                steps += 1
        else:
            while steps < limit and cond(cc + carry)[0]:
                carry = body(bc + carry)
                steps += 1
        return list(carry) if steps else _fresh(carry)
    return run


def _cond(eqn):
    branches = [_compiled(g) for g in eqn.params["branches"]]
    in_avals = [a.aval for a in eqn.inputs[1:]]
    last = len(branches) - 1

    def run(index, *ops):
        return branches[min(max(int(index), 0), last)](_contiguous(ops, in_avals))
    return run


RUNNERS = {P.scan: _scan, P.while_loop: _while, P.cond: _cond}


def loop_step(step, arena: set):
    """The runtime step of a :class:`~.plan.Loop`: results are fresh arrays of the runner,
    copied only into arena buffers."""
    from .runtime import _fetch
    run = RUNNERS[step.eqn.prim](step.eqn)

    def call(bufs):
        outs = run(*[_fetch(r, bufs) for r in step.inputs])
        for slot, o in zip(step.outputs, outs, strict=True):
            if slot in arena:
                np.copyto(bufs[slot], o)
            else:
                bufs[slot] = o
    return call
