"""Rewrites of loop bodies before the cpu backend compiles them (``loops.py``).

- :func:`conds_as_selects`: a ``cond`` of cheap branches inside a body becomes every
  branch plus ``select``, so the body stays one native graph entry;
- :func:`hoist_products`: a product of an xs slice and a loop constant becomes one
  product over the stacked xs before the loop.
"""

from __future__ import annotations

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Eqn, Graph, Lit, Var

from . import threads
from .blas import DotGeneral

# branches that are cheap enough to run both of, then select: no loop, no product
_NOT_FLAT = {P.cond, P.while_loop, P.scan, P.dot_general, P.conv_general_dilated}


def conds_as_selects(graph):
    """A loop body with its ``cond``s of flat branches (elementwise work, no loop or
    product) as every branch plus ``select`` on the clamped index, so that the body can
    be one native graph entry and the loop native. Other conds stay jumps."""
    if not any(e.prim is P.cond and all(_flat(b) for b in e.params["branches"])
               for e in graph.eqns):
        return graph
    eqns = []
    for e in graph.eqns:
        branches = e.params["branches"] if e.prim is P.cond else None
        if branches is None or not all(_flat(b) for b in branches):
            eqns.append(e)
            continue
        index, operands = e.inputs[0], e.inputs[1:]
        per_branch = [_inline(b, operands, eqns) for b in branches]
        last = len(branches) - 1
        for j, out in enumerate(e.outputs):
            value = per_branch[last][j]
            for k in range(last - 1, -1, -1):
                pred = Var(AbstractArray((), np.dtype(bool)))
                eqns.append(Eqn(P.le, (index, Lit(np.int32(k), index.aval)), (pred,), {},
                                e.source))
                result = out if k == 0 else Var(out.aval)
                eqns.append(Eqn(P.select, (pred, per_branch[k][j], value), (result,), {},
                                e.source))
                value = result
            if last == 0:     # one branch: its value, under the cond's result name
                eqns.append(Eqn(P.select, (Lit(np.bool_(True), AbstractArray((), np.dtype(
                    bool))), value, value), (out,), {}, e.source))
    return Graph(graph.inputs, eqns, graph.outputs)


def _flat(graph) -> bool:
    return all(e.prim not in _NOT_FLAT for e in graph.eqns)


def _inline(graph, operands, eqns):
    """Append ``graph``'s equations on ``operands`` to ``eqns`` with fresh results; its
    outputs."""
    env = {id(v): a for v, a in zip(graph.inputs, operands, strict=True)}

    def atom(a):
        return env.get(id(a), a) if isinstance(a, Var) else a
    for e in graph.eqns:
        outs = tuple(Var(v.aval) for v in e.outputs)
        eqns.append(Eqn(e.prim, tuple(atom(a) for a in e.inputs), outs, e.params, e.source))
        env.update((id(v), o) for v, o in zip(e.outputs, outs, strict=True))
    return [atom(o) for o in graph.outputs]


def hoist_products(body, nc, nk, length, in_avals):
    """Products of an xs slice and a constant out of a scan body: ``dot_general(x_t, w)``
    for every t is one product of the stacked xs and ``w`` before the loop (``x @ w`` of
    a recurrent cell: one big gemm instead of a small one per step), read as one more xs.

    Returns (the body taking those products as its last xs inputs, a function
    ``products(operands, into=None)`` returning the stacked products), or (body, None)."""
    position = {id(v): i for i, v in enumerate(body.inputs)}
    hoisted = []
    for e in body.eqns:
        if e.prim is not P.dot_general or e.params["dimension_numbers"][1] != ((), ()):
            continue
        lhs, rhs = (position.get(id(a)) if isinstance(a, Var) else None for a in e.inputs)
        if lhs is not None and rhs is not None and lhs >= nc + nk and rhs < nc:
            hoisted.append((e, lhs, rhs))
    if not hoisted:
        return body, None
    dots = []
    for e, lhs, rhs in hoisted:
        (lc, rc), _ = e.params["dimension_numbers"]
        out = e.outputs[0]
        stacked = out.aval.update(shape=(length,) + out.aval.shape)
        dot = DotGeneral(in_avals[lhs].shape, in_avals[rhs].shape, out.aval.dtype,
                         ((tuple(c + 1 for c in lc), rc), ((), ())), parallel=threads.pool,
                         workers=threads.workers)
        dots.append((dot, lhs, rhs, stacked))

    def products(args, into=None):
        """The stacked products of ``args`` (the scan's operands), into the arrays ``into``
        when given (a previous call's, so that no page is touched for the first time)."""
        into = into or [np.empty(av.shape, av.dtype) for *_, av in dots]
        for (dot, lhs, rhs, _), out in zip(dots, into, strict=True):
            dot(args[lhs], args[rhs], out=out)
        return into
    gone = {id(e) for e, _, _ in hoisted}
    new_body = Graph(body.inputs + [e.outputs[0] for e, _, _ in hoisted],
                     [e for e in body.eqns if id(e) not in gone], body.outputs)
    return new_body, products
