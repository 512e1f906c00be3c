"""Stacked scan outputs that need no loop to build (reverse mode's residuals, mostly).

A ``scan`` whose body returns, as a per-step output (a ys), an xs slice it was given, or
the same value as an earlier ys, makes the loop write a copy of an array the graph already
has: the outer graph reads the stacked xs operand itself, or the earlier stacked output,
and the body returns one fewer ys. (An LSTM's ``grad``: the forward loop restacked each
step's input and returned the hidden state twice; the backward loop returned the gate
gradient twice: ~20 MB of writes per call for h=256, T=100, batch 32.)
"""

from __future__ import annotations

from ..core import Eqn, Graph, Var
from ..primitives import scan


def forward_scan_outputs(graph: Graph) -> Graph:
    """``graph`` with each top-level ``scan``'s forwardable ys outputs read from where they
    already are (see the module docstring); a graph without any is returned as is."""
    env: dict[int, Var] = {}
    eqns, changed = [], False
    for eqn in graph.eqns:
        inputs = tuple(env.get(id(a), a) if isinstance(a, Var) else a for a in eqn.inputs)
        if eqn.prim is scan:
            new = _forwarded(eqn, inputs, env)
            if new is not None:
                eqns.append(new)
                changed = True
                continue
        eqns.append(eqn if inputs == eqn.inputs else
                    Eqn(eqn.prim, inputs, eqn.outputs, eqn.params, eqn.source))
    if not changed:
        return graph
    return Graph(list(graph.inputs), eqns,
                 [env.get(id(o), o) if isinstance(o, Var) else o for o in graph.outputs])


def _forwarded(eqn, inputs, env):
    """The scan without its forwardable ys (their outer outputs mapped in ``env``), or None."""
    p = eqn.params
    body, nc, nk = p["body"], p["n_consts"], p["n_carry"]
    xs_at = {id(v): i for i, v in enumerate(body.inputs[nc + nk:])}
    first: dict[int, int] = {}
    keep = []
    for j, out in enumerate(body.outputs[nk:]):
        outer = eqn.outputs[nk + j]
        if isinstance(out, Var) and id(out) in xs_at:
            env[id(outer)] = inputs[nc + nk + xs_at[id(out)]]
        elif isinstance(out, Var) and id(out) in first:
            env[id(outer)] = eqn.outputs[nk + first[id(out)]]
        else:
            if isinstance(out, Var):
                first[id(out)] = j
            keep.append(j)
    if len(keep) == len(body.outputs) - nk:
        return None
    new_body = Graph(list(body.inputs), list(body.eqns),
                     list(body.outputs[:nk]) + [body.outputs[nk + j] for j in keep])
    outputs = tuple(eqn.outputs[:nk]) + tuple(eqn.outputs[nk + j] for j in keep)
    return Eqn(scan, inputs, outputs, dict(p, body=new_body), eqn.source)
