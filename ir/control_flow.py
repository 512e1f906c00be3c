"""Structured control flow: graph-valued primitives ``cond``, ``while`` and ``scan``.

Their bodies are closed :class:`Graph` parameters; values a body closes over are
explicit operands (the ``consts``), as for ``call``.

- ``cond(index, *operands, branches)``: run ``branches[index]`` on the operands
  (``index`` an int32 scalar in range; the API clamps it).
- ``while(*cond_consts, *body_consts, *init, cond_graph, body_graph, n_cond_consts,
  n_body_consts, max_steps)``: ``carry = body(carry)`` while ``cond(carry)``; with
  ``max_steps`` an int, at most that many iterations.
- ``scan(*consts, *init, *xs, body, n_consts, n_carry, length, reverse, checkpoint)``:
  ``carry, y = body(*consts, *carry, *x)`` over the leading axis of the ``xs``;
  outputs the final carry and the stacked ``y``. ``checkpoint`` only tells
  reverse mode to store carries and recompute the body instead of storing its
  residuals.
"""

from __future__ import annotations

from . import dtypes
from .catalogue import fail as _fail
from .catalogue import register as _register
from .core import AbstractArray, Graph


def _same_types(a, b) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype
                                    for x, y in zip(a, b, strict=True))


def _fmt(avals) -> str:
    return "(" + ", ".join(str(a) for a in avals) + ")"


def _joined(avals_per_branch):
    """Output avals of several branches: weak only where every branch's output is."""
    first = avals_per_branch[0]
    return [a.update(weak_type=all(b[i].weak_type for b in avals_per_branch))
            for i, a in enumerate(first)]


def _cond_rule(index, *operands, branches):
    if not branches or not all(isinstance(b, Graph) for b in branches):
        _fail("cond: branches must be a non-empty tuple of graphs")
    if index.shape != () or index.dtype != dtypes.canonical("int32"):
        raise TypeError(f"cond: the index must be an int32 scalar, got {index}")
    for k, b in enumerate(branches):
        if not _same_types(operands, b.in_avals):
            _fail(f"cond: operands {_fmt(operands)} do not match the inputs of branch {k} "
                  f"{_fmt(b.in_avals)}")
        if not _same_types(b.out_avals, branches[0].out_avals):
            _fail(f"cond: branch {k} returns {_fmt(b.out_avals)} but branch 0 returns "
                  f"{_fmt(branches[0].out_avals)}")
    return _joined([b.out_avals for b in branches])


def _while_rule(*args, cond_graph, body_graph, n_cond_consts, n_body_consts, max_steps):
    cc, bc = args[:n_cond_consts], args[n_cond_consts:n_cond_consts + n_body_consts]
    init = args[n_cond_consts + n_body_consts:]
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 0):
        _fail(f"while: max_steps must be None or a non-negative int, got {max_steps!r}")
    if not _same_types(list(cc) + list(init), cond_graph.in_avals):
        _fail(f"while: the condition takes {_fmt(cond_graph.in_avals)}, given "
              f"{_fmt(list(cc) + list(init))}")
    out = cond_graph.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != dtypes.bool_:
        _fail(f"while: the condition must return one bool scalar, it returns {_fmt(out)}")
    if not _same_types(list(bc) + list(init), body_graph.in_avals):
        _fail(f"while: the body takes {_fmt(body_graph.in_avals)}, given "
              f"{_fmt(list(bc) + list(init))}")
    if not _same_types(body_graph.out_avals, init):
        _fail(f"while: the body returns {_fmt(body_graph.out_avals)} for the carry "
              f"{_fmt(init)}")
    return list(init)


def _scan_rule(*args, body, n_consts, n_carry, length, reverse, checkpoint):
    consts, init = args[:n_consts], args[n_consts:n_consts + n_carry]
    xs = args[n_consts + n_carry:]
    for x in xs:
        if not x.shape or x.shape[0] != length:
            _fail(f"scan: every xs operand needs a leading axis of length {length}, got {x}")
    slices = [AbstractArray(x.shape[1:], x.dtype) for x in xs]
    if not _same_types(list(consts) + list(init) + slices, body.in_avals):
        _fail(f"scan: the body takes {_fmt(body.in_avals)}, given "
              f"{_fmt(list(consts) + list(init) + slices)}")
    outs = body.out_avals
    if not _same_types(outs[:n_carry], init):
        _fail(f"scan: the body returns the carry {_fmt(outs[:n_carry])} for the carry "
              f"{_fmt(init)}")
    ys = [AbstractArray((length,) + y.shape, y.dtype) for y in outs[n_carry:]]
    return list(init) + ys


cond = _register("cond", _cond_rule, "control", multiple_results=True)
while_loop = _register("while", _while_rule, "control", multiple_results=True)
scan = _register("scan", _scan_rule, "control", multiple_results=True)
CONTROL_FLOW = [cond, while_loop, scan]


def subgraphs(params) -> list[Graph]:
    """The graphs among an equation's parameters (a tuple of graphs counts too)."""
    out = []
    for p in params.values():
        if isinstance(p, Graph):
            out.append(p)
        elif isinstance(p, tuple) and p and all(isinstance(g, Graph) for g in p):
            out.extend(p)
    return out
