"""Passes for graphs whose parameters are constants (``functorch_core.deploy.freeze``).

- :func:`fold_affine_into_products`: the classic freezing rewrite. A ``conv`` or
  ``dot_general`` with a constant weight, followed by a chain of ``add``/``sub``/``mul``/
  ``div`` by per-channel constants (a bias, then an eval-mode BatchNorm's
  ``(y - mean) / sqrt(var + eps) * gamma + beta`` once its constants are folded), becomes
  one product with scaled weights plus one bias add.
- :func:`pretranspose_constants`: a constant operand of ``dot_general`` whose layout
  would need a copy on every call (``gemm_layout``'s rule) is stored transposed.
"""

from __future__ import annotations

import numpy as np

from .. import primitives as P
from ..core import Eqn, Graph, Lit, Var
from ..dtypes import dtype_kind

_CHAIN = ("add", "sub", "mul", "div")


def _uses(graph: Graph) -> dict[int, list]:
    uses: dict[int, list] = {}
    for eqn in graph.eqns:
        for a in eqn.inputs:
            if isinstance(a, Var):
                uses.setdefault(id(a), []).append(eqn)
    for o in graph.outputs:
        if isinstance(o, Var):
            uses.setdefault(id(o), []).append(None)
    return uses


def _channel_axes(eqn: Eqn):
    """(output axis, weight axis) of the product's output channels, or None."""
    out = eqn.outputs[0].aval
    if eqn.prim is P.conv_general_dilated:
        _, rspec, ospec = eqn.params["dimension_numbers"]
        if eqn.params["batch_group_count"] != 1:
            return None
        return ospec[1], rspec[0]
    (_, rc), (_, rb) = eqn.params["dimension_numbers"]
    rfree = [i for i in range(eqn.inputs[1].aval.ndim) if i not in rc and i not in rb]
    if len(rfree) != 1:
        return None
    return out.ndim - 1, rfree[0]


def _per_channel(atom, producers, out_shape, axis):
    """The per-channel values (1 or C of them) of a constant operand, else None."""
    if isinstance(atom, Lit):
        v = atom.value
        if v.ndim == 0:
            return v.reshape(1)
        if v.shape != out_shape:
            return None
        first = v[tuple(slice(None) if d == axis else slice(0, 1) for d in range(v.ndim))]
        return first.reshape(-1) if np.array_equal(np.broadcast_to(first, v.shape), v) \
            else None
    eqn = producers.get(id(atom))
    if eqn is None or eqn.prim is not P.broadcast_in_dim or not isinstance(eqn.inputs[0], Lit):
        return None
    src, dims = eqn.inputs[0].value, eqn.params["broadcast_dimensions"]
    if any(n != 1 and d != axis for n, d in zip(src.shape, dims, strict=True)):
        return None
    return src.reshape(-1)


def fold_affine_into_products(graph: Graph) -> Graph:
    """See the module docstring. Floating-point results change by rounding only (the
    weights are scaled in float64, then cast). Nested graphs are left alone."""
    uses, producers = _uses(graph), {}
    for eqn in graph.eqns:
        for v in eqn.outputs:
            producers[id(v)] = eqn
    dropped: set[int] = set()
    inserted: dict[int, list[Eqn]] = {}     # id(last chain eqn) -> its replacement
    for eqn in graph.eqns:
        if eqn.prim not in (P.conv_general_dilated, P.dot_general) or id(eqn) in dropped \
                or not isinstance(eqn.inputs[1], Lit) \
                or dtype_kind(eqn.outputs[0].aval.dtype) != "f":
            continue
        axes = _channel_axes(eqn)
        if axes is None:
            continue
        ax, wax = axes
        out = eqn.outputs[0].aval
        c = out.shape[ax]
        scale, shift = np.ones(c), np.zeros(c)
        cur, chain = eqn.outputs[0], []
        while len(uses.get(id(cur), ())) == 1 and uses[id(cur)][0] is not None:
            u = uses[id(cur)][0]
            res = u.outputs[0].aval
            if u.prim.name not in _CHAIN or len(u.inputs) != 2 or id(u) in dropped \
                    or res.shape != out.shape or res.dtype != out.dtype:
                break
            pos = 0 if u.inputs[0] is cur else 1
            other = u.inputs[1 - pos]
            if other is cur:
                break
            k = _per_channel(other, producers, out.shape, ax)
            if k is None:
                break
            k = k.astype(np.float64)
            name = u.prim.name
            if name == "add":
                shift = shift + k
            elif name == "sub":
                scale, shift = (scale, shift - k) if pos == 0 else (-scale, k - shift)
            elif name == "mul":
                scale, shift = scale * k, shift * k
            elif pos == 0:      # div by the constant
                scale, shift = scale / k, shift / k
            else:
                break
            chain.append(u)
            cur = u.outputs[0]
        if not chain:
            continue
        w = eqn.inputs[1].value
        bshape = [1] * w.ndim
        bshape[wax] = c
        new_w = (w.astype(np.float64) * scale.reshape(bshape)).astype(w.dtype)
        lit = Lit(new_w, eqn.inputs[1].aval)
        mid = Var(out) if np.any(shift) else cur
        new = [Eqn(eqn.prim, (eqn.inputs[0], lit), (mid,), eqn.params, eqn.source)]
        if np.any(shift):
            dt = out.dtype
            b = Var(out)
            new.append(Eqn(P.broadcast_in_dim, (Lit(shift.astype(dt)),), (b,),
                           {"shape": out.shape, "broadcast_dimensions": (ax,)}, eqn.source))
            new.append(Eqn(P.add, (mid, b), (cur,), {}, chain[-1].source))
        dropped.add(id(eqn))
        dropped.update(id(u) for u in chain)
        inserted[id(chain[-1])] = new
    if not inserted:
        return graph
    eqns = []
    for eqn in graph.eqns:
        eqns.extend(inserted.get(id(eqn), ()))
        if id(eqn) not in dropped:
            eqns.append(eqn)
    return Graph(list(graph.inputs), eqns, list(graph.outputs))


def _ordered(*groups) -> bool:
    return [d for g in groups for d in g] == list(range(sum(len(g) for g in groups)))


def pretranspose_constants(graph: Graph) -> Graph:
    """Store a constant ``dot_general`` operand as (batch, free, contracted) for the left,
    (batch, contracted, free) for the right, when its layout is neither that nor the
    transposed one gemm also reads (then the backend would copy it on every call).
    The output is unchanged: free dimensions keep their order."""
    eqns, changed = [], False
    for eqn in graph.eqns:
        if eqn.prim is P.dot_general:
            (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
            ins, dims = list(eqn.inputs), [[lc, lb], [rc, rb]]
            for side, (con, bat) in enumerate(dims):
                a = ins[side]
                free = [i for i in range(a.aval.ndim) if i not in con and i not in bat]
                order = (bat, free, con) if side == 0 else (bat, con, free)
                swapped = (bat, con, free) if side == 0 else (bat, free, con)
                if not isinstance(a, Lit) or _ordered(*order) or _ordered(*swapped):
                    continue
                perm = [d for g in order for d in g]
                where = {d: i for i, d in enumerate(perm)}
                ins[side] = Lit(np.ascontiguousarray(a.value.transpose(perm)),
                                a.aval.update(shape=[a.aval.shape[d] for d in perm]))
                dims[side] = [tuple(where[d] for d in con), tuple(where[d] for d in bat)]
            if ins != list(eqn.inputs):
                (lc, lb), (rc, rb) = dims
                eqn = Eqn(eqn.prim, tuple(ins), eqn.outputs,
                          {**eqn.params, "dimension_numbers": ((lc, rc), (lb, rb))}, eqn.source)
                changed = True
        eqns.append(eqn)
    return Graph(list(graph.inputs), eqns, list(graph.outputs)) if changed else graph
