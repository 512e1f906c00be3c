"""``check_graph``: re-run every shape rule and check that the graph is closed."""

from __future__ import annotations

from .control_flow import subgraphs
from .core import Graph, Lit, Var


class GraphError(AssertionError):
    """A graph is malformed; a pass or the tracer has a bug."""


def check_graph(graph: Graph) -> Graph:
    """Raise GraphError on a free variable, a redefinition or a wrong type; return the graph."""
    defined: set[int] = set()

    def define(v, where):
        if not isinstance(v, Var):
            raise GraphError(f"{where}: {v!r} is not a Var")
        if id(v) in defined:
            raise GraphError(f"{where}: {v!r} is defined twice")
        defined.add(id(v))

    def use(a, where):
        if isinstance(a, Lit):
            if a.value.shape != a.aval.shape or a.value.dtype != a.aval.dtype:
                raise GraphError(f"{where}: literal {a!r} does not match its type {a.aval}")
        elif id(a) not in defined:
            raise GraphError(f"{where}: {a!r} is used before it is defined (free variable)")

    for v in graph.inputs:
        define(v, "graph inputs")
    for i, eqn in enumerate(graph.eqns):
        where = f"equation {i} ({eqn.prim.name} at {eqn.source})"
        for a in eqn.inputs:
            use(a, where)
        for sub in subgraphs(eqn.params):
            check_graph(sub)
        try:
            avals = eqn.prim.shape_rule(*(a.aval for a in eqn.inputs), **eqn.params)
        except (ValueError, TypeError) as err:
            raise GraphError(f"{where}: shape rule failed: {err}") from err
        if len(avals) != len(eqn.outputs):
            raise GraphError(f"{where}: {len(eqn.outputs)} outputs, rule says {len(avals)}")
        for v, av in zip(eqn.outputs, avals, strict=True):
            if (v.aval.shape, v.aval.dtype) != (av.shape, av.dtype):
                raise GraphError(f"{where}: output typed {v.aval}, rule says {av}")
            define(v, where)
    for o in graph.outputs:
        use(o, "graph outputs")
    return graph
