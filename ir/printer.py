"""A compact, readable text form of graphs: one equation per line, with types."""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import Graph, Lit


def _short_name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        name = letters[r] + name
    return name


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}

    def __call__(self, v) -> str:
        if isinstance(v, Lit):
            return _format_lit(v)
        if id(v) not in self.names:
            self.names[id(v)] = _short_name(len(self.names))
        return self.names[id(v)]

    def typed(self, v) -> str:
        return f"{self(v)}:{v.aval}"


def _format_lit(lit: Lit) -> str:
    if lit.value.ndim == 0:
        val = lit.value.item()
        text = repr(val) if not isinstance(val, float) else f"{val:g}" if "e" in f"{val:g}" \
            else repr(val)
        return f"{text}:{dtypes.SHORT_NAMES[lit.aval.dtype]}{'~' if lit.aval.weak_type else ''}"
    if lit.value.size <= 6:
        return f"{np.array2string(lit.value, separator=',').replace(chr(10), '')}:{lit.aval}"
    return f"const<{lit.aval}>"


def _format_param(value, namer, indent) -> str:
    if isinstance(value, Graph):
        return "\n" + _format(value, namer, indent + 4) + "\n" + " " * (indent + 2)
    if isinstance(value, tuple) and value and all(isinstance(g, Graph) for g in value):
        return "(" + ",".join(_format_param(g, namer, indent) for g in value) + ")"
    if isinstance(value, np.dtype):
        return dtypes.SHORT_NAMES.get(value, str(value))
    return str(value)


def _format(graph: Graph, namer: _Namer, indent: int) -> str:
    pad = " " * indent
    lines = [f"{pad}graph({', '.join(namer.typed(v) for v in graph.inputs)}) {{"]
    for eqn in graph.eqns:
        params = ", ".join(f"{k}={_format_param(v, namer, indent)}"
                           for k, v in eqn.params.items())
        lhs = " ".join(namer.typed(v) for v in eqn.outputs) or "_"
        rhs = eqn.prim.name + (f"[{params}]" if params else "")
        args = " ".join(namer(a) for a in eqn.inputs)
        lines.append(f"{pad}  {lhs} = {rhs} {args}".rstrip())
    lines.append(f"{pad}  return {', '.join(namer(o) for o in graph.outputs)}")
    lines.append(f"{pad}}}")
    return "\n".join(lines)


def format_graph(graph: Graph) -> str:
    return _format(graph, _Namer(), 0)
