"""Planning rules for reductions, arg reductions and scans: members of the kernel that
computes their operand. Each rule takes the :class:`~.partition.Partitioner` and one
equation."""

from __future__ import annotations

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Lit

from .members import Member, Reduced
from .plan import (
    Op,
    Reduce,
)

_COMBINED_WHEN_EMPTY = {P.reduce_sum: (P.add, 0), P.reduce_prod: (P.mul, 1)}


def reduction(planner, eqn, axes=None):
    (x,), out = eqn.inputs, eqn.outputs[0]
    axes = tuple(sorted(eqn.params["axes"])) if axes is None else axes
    if not axes:
        if eqn.prim in _COMBINED_WHEN_EMPTY and x.aval.dtype.kind in "fc":
            return _combine_with_identity(planner, eqn)
        planner.loc[id(out)] = x if isinstance(x, Lit) else planner.loc[id(x)]
        return
    k, (r,) = planner.refs(x.aval.shape, [x], axes, reverse=False)
    k.axes, k.reverse = axes, False
    slot = planner.new_slot(out.aval.shape, out.aval.dtype)
    axis = eqn.params["axis"] if eqn.prim.family == "arg_reduction" else None
    k.reduces.append(Reduce(eqn.prim, r, slot, out.aval.dtype, x.aval.dtype, axis))
    planner.loc[id(out)] = Reduced(k, slot)


def _combine_with_identity(planner, eqn):
    """A sum or product over no axes is still ``0 + x`` / ``1 * x`` in NumPy (which
    turns -0.0 into 0.0, and (1+0j)*z is not z when z has an inf or nan part)."""
    (x,), out = eqn.inputs, eqn.outputs[0]
    dt = out.aval.dtype
    combine, identity = _COMBINED_WHEN_EMPTY[eqn.prim]
    k, (r,) = planner.refs(out.aval.shape, [x])
    k.ops.append(Op(combine, (("const", np.asarray(identity, dt)[()]), r), {}, dt, dt))
    planner.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))


def arg_reduction(planner, eqn):
    reduction(planner, eqn, (eqn.params["axis"],))


def scan(planner, eqn):
    (x,), out = eqn.inputs, eqn.outputs[0]
    axes, reverse = (eqn.params["axis"],), bool(eqn.params["reverse"])
    k, (r,) = planner.refs(x.aval.shape, [x], axes, reverse)
    k.axes, k.reverse = axes, reverse
    k.ops.append(Op(eqn.prim, (r,), {}, out.aval.dtype, x.aval.dtype))
    planner.loc[id(out)] = Member(k, ("op", len(k.ops) - 1))
