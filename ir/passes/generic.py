"""Generic graph passes: dead-code elimination, CSE, constant folding, inlining.

Each pass returns a new Graph and leaves its input untouched.
"""

from __future__ import annotations

import numpy as np

from ..core import Eqn, Graph, Lit, Var
from ..eager import host_impl
from ..primitives import call, custom_jvp_call, custom_vjp_call, transpose
from .algebra import simplify_products
from .products import rewrite_products
from .scan_outputs import forward_scan_outputs

FOLD_MAX_ELEMENTS = 64          # results this small are always folded
FOLD_MAX_SAME_SIZE = 1 << 20    # bigger ones only if no larger than a literal operand


def _has_effect(eqn: Eqn) -> bool:
    return eqn.prim.mutates


def dce(graph: Graph) -> Graph:
    """Drop equations whose outputs are never used (mutations are always kept)."""
    live = {id(o) for o in graph.outputs if isinstance(o, Var)}
    kept = []
    for eqn in reversed(graph.eqns):
        if _has_effect(eqn) or any(id(v) in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    return Graph(list(graph.inputs), kept[::-1], list(graph.outputs))


def _lit_key(lit: Lit):
    if lit.value.size <= FOLD_MAX_ELEMENTS:
        return ("lit", lit.aval, lit.value.tobytes())
    return ("lit", id(lit))


def _rename(env, a):
    return env.get(id(a), a) if isinstance(a, Var) else a


def cse(graph: Graph) -> Graph:
    """Merge equations that apply the same primitive to the same inputs and params."""
    env: dict[int, Var | Lit] = {}
    seen: dict[tuple, Eqn] = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = tuple(_rename(env, a) for a in eqn.inputs)
        if _has_effect(eqn):
            eqns.append(Eqn(eqn.prim, inputs, eqn.outputs, eqn.params, eqn.source))
            seen.clear()   # a mutation may change what later reads see
            continue
        try:
            key = (eqn.prim, tuple(id(a) if isinstance(a, Var) else _lit_key(a) for a in inputs),
                   tuple(sorted(eqn.params.items())))
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in seen:
            for old, new in zip(eqn.outputs, seen[key].outputs, strict=True):
                env[id(old)] = new
            continue
        new_eqn = Eqn(eqn.prim, inputs, eqn.outputs, eqn.params, eqn.source)
        if key is not None:
            seen[key] = new_eqn
        eqns.append(new_eqn)
    return Graph(list(graph.inputs), eqns, [_rename(env, o) for o in graph.outputs])


def _fold_size_ok(inputs, outputs, grow=True) -> bool:
    """Small results, or results no bigger than an operand (up to FOLD_MAX_SAME_SIZE): a
    folded broadcast or outer product would hold memory the graph never needed. With
    ``grow=False`` only the latter (a small broadcast stays an equation too)."""
    largest = max((a.aval.size for a in inputs), default=0)
    return all((grow and v.aval.size <= FOLD_MAX_ELEMENTS)
               or v.aval.size <= min(largest, FOLD_MAX_SAME_SIZE) for v in outputs)


def fold_constants(graph: Graph, *, grow=True) -> Graph:
    """Evaluate equations whose inputs are all literals (see :func:`_fold_size_ok`).

    ``grow=False`` keeps every equation whose result is bigger than its largest literal
    operand (a bias broadcast to the batch's shape): then no constant's shape follows an
    input's, as a graph exported with dynamic dimensions needs."""
    env: dict[int, Var | Lit] = {}
    eqns = []
    for eqn in graph.eqns:
        inputs = tuple(_rename(env, a) for a in eqn.inputs)
        impl = host_impl(eqn.prim)
        foldable = (impl is not None and not _has_effect(eqn)
                    and eqn.prim.family != "control"     # a loop would run at compile time
                    and eqn.prim.family != "collective"  # talks to the other processes
                    and all(isinstance(a, Lit) for a in inputs)
                    and _fold_size_ok(inputs, eqn.outputs, grow))
        if foldable:
            with np.errstate(all="ignore"):
                outs = impl(*(a.value for a in inputs), **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            for v, o in zip(eqn.outputs, outs, strict=True):
                env[id(v)] = Lit(np.asarray(o, dtype=v.aval.dtype), v.aval)
            continue
        eqns.append(Eqn(eqn.prim, inputs, eqn.outputs, eqn.params, eqn.source))
    return Graph(list(graph.inputs), eqns, [_rename(env, o) for o in graph.outputs])


def inline(graph: Graph, prims=(call,)) -> Graph:
    """Replace every equation of ``prims`` (calls of a ``graph`` param) by the equations
    of its graph (recursively)."""
    env: dict[int, Var | Lit] = {}
    eqns: list[Eqn] = []
    _inline_into(graph, env, eqns, frozenset(prims))
    return Graph(list(graph.inputs), eqns, [_rename(env, o) for o in graph.outputs])


CUSTOM_CALLS = (custom_jvp_call, custom_vjp_call)


def lower_custom(graph: Graph) -> Graph:
    """``graph`` with every ``custom_jvp_call``/``custom_vjp_call`` (``stop_gradient`` is
    one) replaced by the equations of its function, then simplified: for a backend, once
    no transform is left to use their rules. A graph without them is returned as is.

    Only for execution: a jitted function under another transform hands that transform
    its graph with the custom calls kept, so their rules still apply."""
    if not any(e.prim in CUSTOM_CALLS for e in graph.eqns):
        return graph
    return simplify(inline(graph, (call, *CUSTOM_CALLS)))


def _inline_into(graph, env, eqns, prims):
    # An explicit work stack keeps deep nesting off the Python call stack. Equations
    # copied out of a called graph get fresh outputs: one graph may be called twice.
    stack = [(graph.eqns, 0, env, False)]
    while stack:
        body, i, scope, fresh = stack.pop()
        if i == len(body):
            continue
        eqn = body[i]
        stack.append((body, i + 1, scope, fresh))
        if isinstance(eqn, _Bind):
            eqn.run()
            continue
        inputs = tuple(_rename(scope, a) for a in eqn.inputs)
        if eqn.prim in prims:
            sub = eqn.params["graph"]
            inner = {id(v): a for v, a in zip(sub.inputs, inputs, strict=True)}
            stack.append(([_Bind(sub.outputs, eqn.outputs, inner, scope)], 0, inner, True))
            stack.append((sub.eqns, 0, inner, True))
            continue
        outputs = eqn.outputs
        if fresh:
            outputs = tuple(Var(v.aval, v.hint) for v in eqn.outputs)
            scope.update({id(v): n for v, n in zip(eqn.outputs, outputs, strict=True)})
        eqns.append(Eqn(eqn.prim, inputs, outputs, eqn.params, eqn.source))


class _Bind:
    """Stack marker: after a call's body, map the call's outputs to the body's results."""

    def __init__(self, sub_outputs, call_outputs, inner, outer):
        self.sub_outputs, self.call_outputs = sub_outputs, call_outputs
        self.inner, self.outer = inner, outer

    def run(self):
        for o, v in zip(self.sub_outputs, self.call_outputs, strict=True):
            self.outer[id(v)] = _rename(self.inner, o)


def simplify(graph: Graph, *, grow=True) -> Graph:
    """inline, rewrite products (``ir.passes.products``), then fold constants, CSE and DCE, forward
    scan outputs that need no loop (``ir.passes.scan_outputs``), and rewrite products once more:
    a transposed product whose other uses CSE merged or DCE dropped folds only then (the
    symmetrised Hessian of ``hessian``, for one). ``ir.passes.algebra`` runs again too while a
    transpose is left: one that CSE and DCE left the only use of an elementwise result moves
    into it only then. ``grow`` as in :func:`fold_constants`."""
    graph = rewrite_products(inline(graph))
    graph = dce(cse(fold_constants(simplify_products(graph), grow=grow)))
    if any(e.prim is transpose for e in graph.eqns):
        # a transpose of what CSE and DCE left with one use moves into it only now
        # (hessian's columns-to-rows transpose of an elementwise second derivative)
        graph = dce(simplify_products(graph))
    return rewrite_products(forward_scan_outputs(graph))
