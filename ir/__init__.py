"""The graph IR: types, graphs, the primitive catalogue, tracing, pytrees and passes.

Depends on NumPy only; never imports the layers above it.
"""

from . import dtypes, indexing, passes, primitives, pytree
from .check import GraphError, check_graph
from .core import AbstractArray, Eqn, Graph, Lit, Primitive, Var, aval_of
from .printer import format_graph
from .trace import (
    GraphTrace,
    Tracer,
    TracerError,
    bind,
    current_trace,
    eval_graph,
    mark_read_only,
    trace_flat,
)

__all__ = [
    "AbstractArray", "Eqn", "Graph", "GraphError", "GraphTrace", "Lit", "Primitive",
    "Tracer", "TracerError", "Var", "aval_of", "bind", "check_graph", "current_trace",
    "dtypes", "eval_graph", "format_graph", "indexing", "mark_read_only", "passes",
    "primitives", "pytree", "trace_flat",
]
