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
# control flow whose bodies get the fused checks and a flag; the graphs of other
# equations (custom rules run as they are) keep the interpreter's check
_REWRITTEN = (P.scan, P.while_loop, P.cond)


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


def _graphs(e):
    """The graphs an equation's params hold (bodies, branches)."""
    for v in e.params.values():
        if isinstance(v, Graph):
            yield v
        elif isinstance(v, tuple):
            yield from (g for g in v if isinstance(g, Graph))


def has_checks(graph: Graph) -> bool:
    """Whether ``graph`` or a graph inside it has a ``check_index``."""
    return any(e.prim is P.check_index or any(has_checks(g) for g in _graphs(e))
               for e in graph.eqns)


def _max_flag(flags, eqns, src):
    """One 0-d flag: the max of ``flags`` (a literal 0 when there are none)."""
    if not flags:
        return Lit(np.zeros((), _FLAG))
    acc = flags[0]
    for f in flags[1:]:
        acc = _emit(eqns, P.max, [acc, f], AbstractArray((), _FLAG), {}, src)
    return acc


def _with_acc(body, at, n_out):
    """``body`` fused, with a flag carry: input ``acc`` at ``at``, the output ``max(acc,
    body's flags)`` after its first ``n_out`` outputs."""
    fused, k = with_flags(body)
    acc = Var(AbstractArray((), _FLAG))
    eqns = list(fused.eqns)
    outs = list(fused.outputs)
    flags, outs = outs[len(outs) - k:], outs[:len(outs) - k]
    new = _max_flag([acc, *flags], eqns, "")
    inputs = list(fused.inputs[:at]) + [acc] + list(fused.inputs[at:])
    return Graph(inputs, eqns, outs[:n_out] + [new] + outs[n_out:])


def _stopping(cond, at):
    """The while condition ``cond`` with a flag input at ``at``: false once it is set."""
    acc = Var(AbstractArray((), _FLAG))
    eqns, b = list(cond.eqns), AbstractArray((), np.dtype(bool))
    ok = _emit(eqns, P.eq, [acc, Lit(np.zeros((), _FLAG))], b, {}, "")
    go = _emit(eqns, P.and_, [cond.outputs[0], ok], b, {}, "")
    return Graph(list(cond.inputs[:at]) + [acc] + list(cond.inputs[at:]), eqns, [go])


def _loop(e, eqns):
    """A control-flow equation with checks inside: rewritten with a flag result (appended
    to ``eqns``, the flag returned), or kept (None: a while whose condition checks)."""
    p, zero, flag = dict(e.params), Lit(np.zeros((), _FLAG)), Var(AbstractArray((), _FLAG))
    if e.prim is P.scan:
        n_pre = p["n_consts"] + p["n_carry"]
        p["body"] = _with_acc(p["body"], n_pre, p["n_carry"])
        p["n_carry"] += 1
        outs, ins = tuple(e.outputs), tuple(e.inputs)
        outs = outs[:p["n_carry"] - 1] + (flag,) + outs[p["n_carry"] - 1:]
        eqns.append(Eqn(e.prim, ins[:n_pre] + (zero,) + ins[n_pre:], outs, p, e.source))
        return flag
    if e.prim is P.while_loop:
        if has_checks(p["cond_graph"]):
            return None
        p["cond_graph"] = _stopping(p["cond_graph"], len(p["cond_graph"].inputs))
        p["body_graph"] = _with_acc(p["body_graph"], len(p["body_graph"].inputs),
                                    len(p["body_graph"].outputs))
        eqns.append(Eqn(e.prim, tuple(e.inputs) + (zero,), tuple(e.outputs) + (flag,), p,
                        e.source))
        return flag
    branches = []
    for g in p["branches"]:
        fused, k = with_flags(g)
        body_eqns, outs = list(fused.eqns), list(fused.outputs)
        flags, outs = outs[len(outs) - k:], outs[:len(outs) - k]
        branches.append(Graph(fused.inputs, body_eqns, outs + [_max_flag(flags, body_eqns, "")]))
    p["branches"] = tuple(branches)
    eqns.append(Eqn(e.prim, tuple(e.inputs), tuple(e.outputs) + (flag,), p, e.source))
    return flag


def with_flags(graph: Graph) -> tuple[Graph, int]:
    """``graph`` with its ``check_index`` equations fused (in loop bodies and branches
    too: a loop carries a flag, and a while loop stops once it is set) and their flags as
    extra results, and how many flags there are (0: ``graph`` itself)."""
    if not has_checks(graph):
        return graph, 0
    eqns, flags = [], []
    for e in graph.eqns:
        if e.prim is P.check_index:
            flag = _lowered(e, eqns)
        elif e.prim in _REWRITTEN and any(has_checks(g) for g in _graphs(e)):
            flag = _loop(e, eqns)
            if flag is None:
                eqns.append(e)
        else:
            eqns.append(e)
            continue
        if flag is not None:
            flags.append(flag)
    return Graph(graph.inputs, eqns, list(graph.outputs) + flags), len(flags)


def raise_first(graph: Graph, args):
    """Raise the IndexError of ``graph`` on ``args`` (a flag of its fused form was set)."""
    eval_graph(graph, list(args))
    e = _first_check(graph)
    raise IndexError(f"an index is out of bounds for axis {e.params['axis']} with size "
                     f"{e.params['size']} (a native check failed), in {e.params['where']}")


def _first_check(graph):
    for e in graph.eqns:
        if e.prim is P.check_index:
            return e
        for g in _graphs(e):
            if has_checks(g):
                return _first_check(g)
    return None
