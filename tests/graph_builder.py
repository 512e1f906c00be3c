"""Build graphs equation by equation in tests (no tracing): ``b = Builder(); x = b.input(...)``."""

from __future__ import annotations

import numpy as np
from functorch_core.ir import primitives as P
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


def stage_chain(n, shape, dtype=np.float64):
    """x -> n stages, each a kernel that reads the previous stage's full result and its
    row maxima: full-size intermediates whose lifetimes shift along the graph."""
    b = Builder()
    x = b.input(shape, dtype)
    y, sums = x, []
    for i in range(n):
        m = b(P.reduce_max, y, axes=(1,))
        low = b(P.broadcast_in_dim, m, shape=shape, broadcast_dimensions=(0,))
        y = b(P.sin, b(P.sub, y, low)) if i % 2 else b(P.mul, b(P.sub, y, low), x)
        sums.append(b(P.reduce_sum, y, axes=(0,)))
    return b.graph(y, sums[-1], sums[0])
