"""Bounds checks in native code: ``check_index`` fused into the kernels, with a flag.

:func:`with_flags` rewrites each ``y = check_index(a; size)`` of a graph into arithmetic
the kernels fuse (``w = a + size`` where ``a < 0``; ``y = clip(w, 0, size - 1)``, so every
read or write through ``y`` stays in bounds, even when the check fails) and a status
word, ``flag = max(w < 0 or w >= size)``, an extra 0-d result of the graph. The runtime
looks at the flags after the call; when one is set, :func:`raise_first` replays the
original graph through the interpreter, whose ``check_index`` raises NumPy's IndexError
for the first violation, with the user's call and line.
"""

from __future__ import annotations

import numpy as np
from functorch_core.ir import eval_graph
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Eqn, Graph, Lit, Var

_I64, _FLAG = np.dtype(np.int64), np.dtype(np.int32)


def _lit(value, dtype, shape):
    return Lit(np.full(shape, value, dtype))


def _emit(eqns, prim, inputs, aval, params, source):
    out = Var(aval)
    eqns.append(Eqn(prim, tuple(inputs), (out,), params, source))
    return out


def _lowered(e, eqns):
    """Append the fused form of the check ``e`` to ``eqns``; its flag (None: nothing
    to check, an empty index array)."""
    (a,), (y,), n = e.inputs, e.outputs, e.params["size"]
    shape, src = a.aval.shape, e.source
    i64, flag_aval = AbstractArray(shape, _I64), AbstractArray(shape, _FLAG)
    b = AbstractArray(shape, np.dtype(bool))
    a = a if a.aval.dtype == _I64 else _emit(eqns, P.convert, [a], i64, {"new_dtype": _I64},
                                             src)
    neg = _emit(eqns, P.lt, [a, _lit(0, _I64, shape)], b, {}, src)
    shifted = _emit(eqns, P.add, [a, _lit(n, _I64, shape)], i64, {}, src)
    w = _emit(eqns, P.select, [neg, shifted, a], i64, {}, src)
    low = _emit(eqns, P.lt, [w, _lit(0, _I64, shape)], b, {}, src)
    high = _emit(eqns, P.ge, [w, _lit(n, _I64, shape)], b, {}, src)
    bad = _emit(eqns, P.or_, [low, high], b, {}, src)
    top = _emit(eqns, P.min, [w, _lit(max(n - 1, 0), _I64, shape)], i64, {}, src)
    eqns.append(Eqn(P.max, (top, _lit(0, _I64, shape)), (y,), {}, src))
    if not a.aval.size:
        return None
    flags = _emit(eqns, P.convert, [bad], flag_aval, {"new_dtype": _FLAG}, src)
    if not shape:
        return flags
    return _emit(eqns, P.reduce_max, [flags], AbstractArray((), _FLAG),
                 {"axes": tuple(range(len(shape)))}, src)


def with_flags(graph: Graph) -> tuple[Graph, int]:
    """``graph`` with its ``check_index`` equations fused and their flags as extra
    results, and how many flags there are (0: ``graph`` itself)."""
    if not any(e.prim is P.check_index for e in graph.eqns):
        return graph, 0
    eqns, flags = [], []
    for e in graph.eqns:
        if e.prim is not P.check_index:
            eqns.append(e)
            continue
        flag = _lowered(e, eqns)
        if flag is not None:
            flags.append(flag)
    return Graph(graph.inputs, eqns, tuple(graph.outputs) + tuple(flags)), len(flags)


def raise_first(graph: Graph, args):
    """Raise the IndexError of ``graph`` on ``args`` (a flag of its fused form was set)."""
    eval_graph(graph, list(args))
    e = next(e for e in graph.eqns if e.prim is P.check_index)
    raise IndexError(f"an index is out of bounds for axis {e.params['axis']} with size "
                     f"{e.params['size']} (a native check failed), in {e.params['where']}")
