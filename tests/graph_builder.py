"""Build graphs equation by equation in tests (no tracing): ``b = Builder(); x = b.input(...)``."""

from __future__ import annotations

from functorch_core.ir.check import check_graph
from functorch_core.ir.core import AbstractArray, Eqn, Graph, Var


class Builder:
    def __init__(self):
        self.inputs, self.eqns = [], []

    def input(self, shape, dtype):
        v = Var(AbstractArray(shape, dtype))
        self.inputs.append(v)
        return v

    def __call__(self, prim, *ins, **params):
        avals = prim.shape_rule(*(a.aval for a in ins), **params)
        outs = tuple(Var(a) for a in avals)
        self.eqns.append(Eqn(prim, tuple(ins), outs, params))
        return outs if prim.multiple_results else outs[0]

    def graph(self, *outputs):
        return check_graph(Graph(list(self.inputs), list(self.eqns), list(outputs)))
