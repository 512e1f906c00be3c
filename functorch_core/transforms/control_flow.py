"""The rules of the control-flow primitives (``cond``, ``while``, ``scan``) in every table.

jvp rules *linearize* their bodies (JAX's partial evaluation of scan/cond): the jvp
of a scan is a primal scan that also outputs the body's residuals (stacked per
step; loop-invariant ones are passed as operands) followed by a linear scan over
(residuals, tangents). The graph-level split of reverse mode then finds the primal
scan on the primal side and the linear scan on the linear side, and the transpose
of a linear scan is a reverse scan of the transposed body. ``cond`` does the same
with the union of its branches' residuals (zeros for the branches not taken).
With ``checkpoint=True`` a scan stores only its carries and the linear scan
recomputes the body. ``while`` without ``max_steps`` has a forward-mode rule only;
with ``max_steps`` it is differentiated as a scan of ``max_steps`` guarded steps.
"""

from __future__ import annotations

import functools

import numpy as np

from functorch_core.ir import Graph, Lit, Primitive, Var, eval_graph, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import Table

from .batching import BatchRule, _axis_size, batch_at, batch_eval, batch_graph, moveaxis
from .jvp import JvpRule, Zero, differentiable, instantiate, is_zero, jvp_eval, jvp_graph, zeros
from .transpose import TransposeRule, is_linear, linearize_graph, split_linear, transpose_graph

JVP_RULES: Table[Primitive, JvpRule] = Table("control_flow.py: jvp")
TRANSPOSE_RULES: Table[Primitive, TransposeRule] = Table("control_flow.py: transpose")
BATCH_RULES: Table[Primitive, BatchRule] = Table("control_flow.py: batching")


def depends(graph: Graph, mask) -> list[bool]:
    """Which outputs of ``graph`` depend on the inputs marked in ``mask``."""
    dep = {id(v) for v, m in zip(graph.inputs, mask, strict=True) if m}
    for e in graph.eqns:
        if any(isinstance(a, Var) and id(a) in dep for a in e.inputs):
            dep.update(id(v) for v in e.outputs)
    return [isinstance(o, Var) and id(o) in dep for o in graph.outputs]


def _carry_fixpoint(outputs_of, mask, nc, nk):
    """A loop body's input mask (``nc`` consts, ``nk`` carries, then the rest) at the
    fixpoint where a carry is marked if ``mask`` marks it or the body's carry output
    ``outputs_of(inputs)[:nk]`` is; returns it and the body's output mask there."""
    carry = mask[nc:nc + nk]
    while True:
        inputs = mask[:nc] + carry + mask[nc + nk:]
        out = outputs_of(inputs)
        new = [a or b for a, b in zip(carry, out[:nk], strict=True)]
        if new == carry:
            return inputs, out
        carry = new


def _closed_trace(fn, avals, name):
    graph, captured = trace_flat(fn, avals, name=name)
    if captured:
        raise AssertionError(f"{name}: a control-flow body captured an outer value")
    return graph


def _tangent_mask(graph, nz):
    return [d and differentiable(o.aval)
            for d, o in zip(depends(graph, nz), graph.outputs, strict=True)]


# --- jvp -------------------------------------------------------------------------------

def _scan_jvp(primals, tangents, *, body, n_consts, n_carry, length, reverse, checkpoint):
    nc, nk = n_consts, n_carry
    nz = [not is_zero(t) for t in tangents]
    # a carry whose tangent the body makes nonzero carries a tangent
    diff, out_nz = _carry_fixpoint(functools.partial(_tangent_mask, body), nz, nc, nk)
    carry_nz = diff[nc:nc + nk]
    keep = carry_nz + out_nz[nk:]
    n_out = len(body.outputs)
    tan = [instantiate(t) for t, d in zip(tangents, diff, strict=True) if d]
    n_ct, n_kt = sum(diff[:nc]), sum(carry_nz)
    ct, kt, xt = tan[:n_ct], tan[n_ct:n_ct + n_kt], tan[n_ct + n_kt:]
    common = dict(length=length, reverse=reverse, checkpoint=False)
    if checkpoint:
        # primal: stack the carry entering each step; linear: recompute the body's jvp
        pbody = Graph(body.inputs, body.eqns, list(body.outputs) + body.inputs[nc:nc + nk])
        outs = P.scan.bind(*primals, body=pbody, n_consts=nc, n_carry=nk, **common)
        stacked = outs[n_out:]
        jg = jvp_graph(body, diff)
        n_in = len(body.inputs)
        ins, tins = jg.inputs[:n_in], jg.inputs[n_in:]
        lbody = Graph(ins[:nc] + tins[:n_ct] + tins[n_ct:n_ct + n_kt] + ins[nc:nc + nk]
                      + ins[nc + nk:] + tins[n_ct + n_kt:], jg.eqns,
                      [t for t, k in zip(jg.outputs[n_out:], keep, strict=True) if k])
        louts = P.scan.bind(*primals[:nc], *ct, *kt, *stacked, *primals[nc + nk:], *xt,
                            body=lbody, n_consts=nc + n_ct, n_carry=n_kt, **common)
    else:
        lin = linearize_graph(body, diff)
        res = lin.primal.outputs[n_out:]
        const_pos = {id(v): i for i, v in enumerate(lin.primal.inputs[:nc])}
        is_const = [id(r) in const_pos for r in res]
        stacked_vars = [r for r, c in zip(res, is_const, strict=True) if not c]
        pbody = Graph(lin.primal.inputs, lin.primal.eqns,
                      list(lin.primal.outputs[:n_out]) + stacked_vars)
        outs = P.scan.bind(*primals, body=pbody, n_consts=nc, n_carry=nk, **common)
        stacked = outs[n_out:]
        lres = lin.linear.inputs[:lin.n_res]
        ltan = lin.linear.inputs[lin.n_res:]
        res_c = [v for v, c in zip(lres, is_const, strict=True) if c]
        res_s = [v for v, c in zip(lres, is_const, strict=True) if not c]
        lbody = Graph(res_c + ltan[:n_ct] + ltan[n_ct:n_ct + n_kt] + res_s
                      + ltan[n_ct + n_kt:], lin.linear.eqns,
                      [t for t, k in zip(lin.linear.outputs, keep, strict=True) if k])
        const_vals = [primals[const_pos[id(r)]] for r, c in zip(res, is_const, strict=True)
                      if c]
        louts = P.scan.bind(*const_vals, *ct, *kt, *stacked, *xt, body=lbody,
                            n_consts=len(const_vals) + n_ct, n_carry=n_kt, **common)
    it = iter(louts)
    touts = [next(it) if k else Zero(o.aval.strong()) for k, o in
             zip(keep, outs[:n_out], strict=True)]
    return list(outs[:n_out]), touts


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], list(primals[1:])
    nz = [not is_zero(t) for t in tangents[1:]]
    out_nz = [any(m) for m in zip(*(_tangent_mask(b, nz) for b in branches), strict=True)]
    n_out = len(branches[0].outputs)
    lins = [linearize_graph(b, nz) for b in branches]
    res_avals = [[v.aval for v in lin.primal.outputs[n_out:]] for lin in lins]

    def primal_branch(k):
        def fn(*xs):
            outs = eval_graph(lins[k].primal, list(xs))
            res = []
            for j, avals in enumerate(res_avals):
                res += outs[n_out:] if j == k else [zeros(a) for a in avals]
            return outs[:n_out] + res
        return _closed_trace(fn, branches[k].in_avals, "cond (jvp)")

    outs = P.cond.bind(index, *ops, branches=tuple(primal_branch(k)
                                                   for k in range(len(branches))))
    res_all = outs[n_out:]
    tan = [instantiate(t) for t, d in zip(tangents[1:], nz, strict=True) if d]
    starts = np.cumsum([0] + [len(a) for a in res_avals])

    def linear_branch(k):
        def fn(*args):
            res = list(args[starts[k]:starts[k + 1]])
            touts = eval_graph(lins[k].linear, res + list(args[len(res_all):]))
            return [t for t, m in zip(touts, out_nz, strict=True) if m]
        return _closed_trace(fn, [r.aval for r in res_all] + [t.aval for t in tan],
                             "cond (linear)")

    louts = iter(P.cond.bind(index, *res_all, *tan,
                             branches=tuple(linear_branch(k) for k in range(len(branches)))))
    touts = [next(louts) if m else Zero(o.aval.strong())
             for m, o in zip(out_nz, outs[:n_out], strict=True)]
    return list(outs[:n_out]), touts


def _while_jvp(primals, tangents, *, cond_graph, body_graph, n_cond_consts, n_body_consts,
               max_steps):
    if max_steps is not None:
        graph = _bounded_scan_graph(cond_graph, body_graph, n_cond_consts, n_body_consts,
                                    max_steps, [p.aval for p in primals])
        return jvp_eval(graph, primals, tangents)
    ncc, nbc = n_cond_consts, n_body_consts
    nz = [not is_zero(t) for t in tangents]
    bc_nz = nz[ncc:ncc + nbc]
    carry_nz = _carry_fixpoint(functools.partial(_tangent_mask, body_graph), nz[ncc:], nbc,
                               len(nz) - ncc - nbc)[0][nbc:]
    n = len(carry_nz)
    jg = jvp_graph(body_graph, bc_nz + carry_nz)
    nb = len(body_graph.inputs)
    ins, tins = jg.inputs[:nb], jg.inputs[nb:]
    n_bt = sum(bc_nz)
    body = Graph(ins[:nbc] + tins[:n_bt] + ins[nbc:] + tins[n_bt:], jg.eqns,
                 list(jg.outputs[:n]) + [t for t, k in zip(jg.outputs[n:], carry_nz,
                                                           strict=True) if k])
    kt_avals = [v.aval for v in tins[n_bt:]]
    cond = Graph(cond_graph.inputs + [Var(a) for a in kt_avals], cond_graph.eqns,
                 cond_graph.outputs)
    tan = [instantiate(t) for t, d in zip(tangents[ncc:], bc_nz + carry_nz, strict=True) if d]
    # The primal loop runs on its own so that reverse mode's split finds the outputs on
    # the primal side; the joint loop (primal and tangent carries) gives the tangents.
    outs = P.while_loop.bind(*primals, cond_graph=cond_graph, body_graph=body_graph,
                             n_cond_consts=ncc, n_body_consts=nbc, max_steps=None)
    joint = P.while_loop.bind(*primals[:ncc + nbc], *tan[:n_bt], *primals[ncc + nbc:],
                              *tan[n_bt:], cond_graph=cond, body_graph=body,
                              n_cond_consts=ncc, n_body_consts=nbc + n_bt, max_steps=None)
    it = iter(joint[n:])
    touts = [next(it) if k else Zero(o.aval.strong())
             for k, o in zip(carry_nz, outs[:n], strict=True)]
    return list(outs[:n]), touts


def _bounded_scan_graph(cond_graph, body_graph, ncc, nbc, max_steps, avals):
    """The while loop as a scan of ``max_steps`` steps, each ``body`` if ``cond`` else nothing."""
    n_carry = len(avals) - ncc - nbc
    keep = [Var(v.aval) for v in body_graph.inputs]
    identity = Graph(keep, [], keep[nbc:])

    def step(*args):
        cc, bc, carry = args[:ncc], args[ncc:ncc + nbc], args[ncc + nbc:]
        pred = eval_graph(cond_graph, list(cc) + list(carry))[0]
        index = P.convert.bind(pred, new_dtype=np.dtype(np.int32))
        return P.cond.bind(index, *bc, *carry, branches=(identity, body_graph))

    body = _closed_trace(step, list(avals), "while_loop (max_steps)")

    def whole(*args):
        return P.scan.bind(*args, body=body, n_consts=ncc + nbc, n_carry=n_carry,
                           length=max_steps, reverse=False, checkpoint=False)

    return _closed_trace(whole, list(avals), "while_loop (max_steps)")


# --- transpose ---------------------------------------------------------------------------

def transpose_apply(graph: Graph, in_lin, nonlin_vals, cts):
    """Cotangents of ``graph``'s linear inputs (``in_lin``), emitted into the current trace.

    ``nonlin_vals`` are the values of the other inputs (in order); ``cts`` one
    cotangent per output (``None`` for none). Equations that do not depend on a
    linear input run forward first (a checkpointed body recomputes its primal part).
    """
    lin_inputs = [v for v, m in zip(graph.inputs, in_lin, strict=True) if m]
    fwd, lin_eqns, lin_ids, res = split_linear(graph.eqns, lin_inputs)
    outs, given = [], []
    for o, c in zip(graph.outputs, cts, strict=True):
        if c is not None and isinstance(o, Var) and id(o) in lin_ids:
            outs.append(o)
            given.append(c)
    nonlin_inputs = [v for v, m in zip(graph.inputs, in_lin, strict=True) if not m]
    res_vals = eval_graph(Graph(nonlin_inputs, fwd, res), list(nonlin_vals))
    back = transpose_graph(Graph(res + lin_inputs, lin_eqns, outs), len(res))
    return eval_graph(back, res_vals + given)


def _scan_transpose(cts, *operands, body, n_consts, n_carry, length, reverse, checkpoint):
    nc, nk = n_consts, n_carry
    lin = [is_linear(o) for o in operands]
    in_lin = _carry_fixpoint(functools.partial(depends, body), lin, nc, nk)[0]
    if not all(in_lin[nc:nc + nk]):
        raise NotImplementedError("transpose: a linear scan with a carry that does not depend "
                                  "on the tangents (a differentiation rule is wrong)")
    rc = [o for o, m in zip(operands[:nc], lin[:nc], strict=True) if not m]
    lc_avals = [o.aval for o, m in zip(operands[:nc], lin[:nc], strict=True) if m]
    rx = [o for o, m in zip(operands[nc + nk:], lin[nc + nk:], strict=True) if not m]
    n_rc, n_lc, n_rx = len(rc), len(lc_avals), len(rx)
    ct_carry, ct_ys = cts[:nk], cts[nk:]

    def tbody(*args):
        consts, acc = args[:n_rc], args[n_rc:n_rc + n_lc]
        ctc = args[n_rc + n_lc:n_rc + n_lc + nk]
        xs = args[n_rc + n_lc + nk:n_rc + n_lc + nk + n_rx]
        cty = args[n_rc + n_lc + nk + n_rx:]
        nonlin = list(consts) + list(xs)
        got = transpose_apply(body, in_lin, nonlin, list(ctc) + list(cty))
        g_c, g_k, g_x = got[:n_lc], got[n_lc:n_lc + nk], got[n_lc + nk:]
        return [P.add.bind(a, g) for a, g in zip(acc, g_c, strict=True)] + g_k + g_x

    slice_avals = [c.aval.update(shape=c.aval.shape[1:]) for c in ct_ys]
    tb = _closed_trace(tbody, [o.aval for o in rc] + lc_avals + [c.aval for c in ct_carry]
                       + [o.aval.update(shape=o.aval.shape[1:]) for o in rx] + slice_avals,
                       "scan (transpose)")
    tb, hoisted = hoist_accumulated_dots(tb, n_rc, n_lc, [*rx, *ct_ys])
    kept = [k for k in range(n_lc) if k not in hoisted]
    outs = P.scan.bind(*rc, *(zeros(lc_avals[k]) for k in kept), *ct_carry, *rx, *ct_ys,
                       body=tb, n_consts=n_rc, n_carry=len(kept) + nk, length=length,
                       reverse=not reverse, checkpoint=False)
    n_new = sum(isinstance(o, int) for _, operands, _ in hoisted.values() for o in operands)
    n_kept, n_ys = len(kept), len(tb.outputs) - len(kept) - nk - n_new
    acc = dict(zip(kept, outs[:n_kept], strict=True))
    extra = outs[n_kept + nk + n_ys:]
    for k, (params, operands, transposed) in hoisted.items():
        whole = P.dot_general.bind(*[extra[o] if isinstance(o, int) else o[1]
                                     for o in operands], **params)
        acc[k] = whole if transposed is None else P.transpose.bind(whole, **transposed)
    outs = [acc[k] for k in range(n_lc)] + list(outs[n_kept:n_kept + nk + n_ys])
    g_c, g_k, g_x = iter(outs[:n_lc]), outs[n_lc:n_lc + nk], iter(outs[n_lc + nk:])
    result = [next(g_c) if m else None for m in lin[:nc]]
    result += [g if m else None for g, m in zip(g_k, lin[nc:nc + nk], strict=True)]
    result += [next(g_x) if m else None for m in lin[nc + nk:]]
    return result


def hoist_accumulated_dots(body: Graph, n_consts: int, n_acc: int, stacked):
    """Take out of a scan body the carries that sum a product per step: carry ``k`` (of
    the first ``n_acc``, each starting at zero) whose update is ``k + dot_general(a, b)``,
    read nowhere else, with ``a`` and ``b`` per-step values (xs slices or values the
    body computes). The sum over steps of those products is one product over the stacked
    operands after the loop, contracting the step axis too: one big gemm instead of a
    small one per step (the weight gradients of a recurrent network).

    ``stacked`` are the scan's xs operands. Returns (the new body: those carries gone,
    the computed operands appended to its ys outputs, in order) and {k: (params of the
    product over stacked operands, operands, params of the transpose after it or None)},
    an operand being the index of a new ys output among the appended ones or
    ``("xs", array)``.
    """
    position = {id(v): i for i, v in enumerate(body.inputs)}
    uses: dict = {}
    producer = {}
    for e in body.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                uses[id(a)] = uses.get(id(a), 0) + 1
        for v in e.outputs:
            producer[id(v)] = e
    for o in body.outputs:
        if isinstance(o, Var):
            uses[id(o)] = uses.get(id(o), 0) + 1
    n_carry = len(body.inputs) - n_consts - len(stacked)
    first_xs = n_consts + n_carry
    hoisted, dropped, new_ys = {}, set(), []
    for k in range(n_acc):
        carry, out = body.inputs[n_consts + k], body.outputs[k]
        add = producer.get(id(out)) if isinstance(out, Var) else None
        if add is None or add.prim is not P.add or uses.get(id(carry), 0) != 1 \
                or uses.get(id(out), 0) != 1 or carry not in add.inputs:
            continue
        term = add.inputs[1] if add.inputs[0] is carry else add.inputs[0]
        dot = producer.get(id(term)) if isinstance(term, Var) else None
        after = None        # a transpose of the product (how transpose rules emit it)
        if dot is not None and dot.prim is P.transpose:
            after, dot = dot, producer.get(id(dot.inputs[0])) \
                if isinstance(dot.inputs[0], Var) else None
        if dot is None or dot.prim is not P.dot_general or term.aval != out.aval:
            continue
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        operands = []
        for a in dot.inputs:
            i = position.get(id(a)) if isinstance(a, Var) else -1
            if i is None:
                operands.append(a)
            elif i >= first_xs:
                operands.append(("xs", stacked[i - first_xs]))
            else:
                break       # a literal, a constant or a carry: not a per-step product
        if len(operands) != 2 or lb or rb:
            continue
        for j, o in enumerate(operands):
            if isinstance(o, Var):
                new_ys.append(o)
                operands[j] = len(new_ys) - 1
        dims = ((((0,) + tuple(c + 1 for c in lc)), ((0,) + tuple(c + 1 for c in rc))),
                ((), ()))
        hoisted[k] = (dict(dot.params, dimension_numbers=dims), operands,
                      None if after is None else after.params)
        dropped.add(id(add))
    if not hoisted:
        return body, {}
    inputs = [v for i, v in enumerate(body.inputs) if i - n_consts not in hoisted]
    outputs = [o for i, o in enumerate(body.outputs) if i not in hoisted] + new_ys
    eqns = [e for e in body.eqns if id(e) not in dropped]
    return Graph(inputs, eqns, outputs), hoisted


def _cond_transpose(cts, index, *ops, branches):
    if is_linear(index):
        raise NotImplementedError("transpose: the index of a cond is a tangent")
    lin = [is_linear(o) for o in ops]
    nonlin = [o for o, m in zip(ops, lin, strict=True) if not m]

    def tbranch(b):
        def fn(*args):
            return transpose_apply(b, lin, list(args[:len(nonlin)]), list(args[len(nonlin):]))
        return _closed_trace(fn, [o.aval for o in nonlin] + [c.aval for c in cts],
                             "cond (transpose)")

    outs = iter(P.cond.bind(index, *nonlin, *cts, branches=tuple(tbranch(b) for b in branches)))
    return [None] + [next(outs) if m else None for m in lin]


def _while_transpose(cts, *operands, max_steps, **params):
    raise NotImplementedError(
        "reverse-mode differentiation (grad, vjp, jacrev) through while_loop needs a bound "
        "on its trip count: pass while_loop(..., max_steps=N) to record up to N iterations "
        "and differentiate them exactly, or use fori_loop with static bounds (a scan); "
        "forward mode (jvp, jacfwd) works without it")


# --- vmap ---------------------------------------------------------------------------------

def _scan_batch(args, dims, *, body, n_consts, n_carry, length, reverse, checkpoint):
    nc, nk = n_consts, n_carry
    size = _axis_size(args, dims)
    b = [d is not None for d in dims]
    in_b, out_b = _carry_fixpoint(functools.partial(depends, body), b, nc, nk)
    ops = []
    for i, (x, d) in enumerate(zip(args, dims, strict=True)):
        if i >= nc + nk:
            ops.append(x if d is None else moveaxis(x, d, 1))
        else:
            ops.append(batch_at(x, d, size, 0) if in_b[i] else x)
    out_dims = [0 if m else None for m in out_b]
    bbody, captured = batch_graph(body, [0 if m else None for m in in_b], size, out_dims,
                                  name="scan (vmap)")
    if captured:
        raise AssertionError("vmap of a scan body captured an outer value")
    outs = P.scan.bind(*ops, body=bbody, n_consts=nc, n_carry=nk, length=length,
                       reverse=reverse, checkpoint=checkpoint)
    return list(outs), out_dims[:nk] + [None if d is None else 1 for d in out_dims[nk:]]


def _select_outputs(index, per_branch, size):
    """``per_branch[index[b]][b]`` for each example ``b`` (index batched at 0)."""
    result = list(per_branch[0])
    for k in range(1, len(per_branch)):
        hit = P.eq.bind(index, Lit(np.asarray(k, np.int32)))
        for j, y in enumerate(per_branch[k]):
            pred = P.broadcast_in_dim.bind(hit, shape=y.aval.shape, broadcast_dimensions=(0,))
            result[j] = P.select.bind(pred, y, result[j])
    return result


def _cond_batch(args, dims, *, branches):
    size = _axis_size(args, dims)
    index, ops, op_dims = args[0], list(args[1:]), list(dims[1:])
    if dims[0] is None:
        b = [d is not None for d in op_dims]
        out_b = [any(m) for m in zip(*(depends(g, b) for g in branches), strict=True)]
        out_dims = [0 if m else None for m in out_b]
        graphs = []
        for g in branches:
            bg, captured = batch_graph(g, op_dims, size, out_dims, name="cond (vmap)")
            if captured:
                raise AssertionError("vmap of a cond branch captured an outer value")
            graphs.append(bg)
        return list(P.cond.bind(index, *ops, branches=tuple(graphs))), out_dims
    per_branch = [[batch_at(x, d, size, 0) for x, d in batch_eval(g, ops, op_dims, size)]
                  for g in branches]
    return _select_outputs(moveaxis(index, dims[0], 0), per_branch, size), \
        [0] * len(branches[0].outputs)


def _while_batch(args, dims, *, cond_graph, body_graph, n_cond_consts, n_body_consts,
                 max_steps):
    ncc, nbc = n_cond_consts, n_body_consts
    size = _axis_size(args, dims)
    b = [d is not None for d in dims]
    cc_b, bc_b, carry_b = b[:ncc], b[ncc:ncc + nbc], b[ncc + nbc:]
    while True:
        pred_b = depends(cond_graph, cc_b + carry_b)[0]
        new = [True] * len(carry_b) if pred_b else [
            x or y for x, y in zip(carry_b, depends(body_graph, bc_b + carry_b), strict=True)]
        if new == carry_b:
            break
        carry_b = new
    ops = [batch_at(x, d, size, 0) if m else x
           for x, d, m in zip(args, dims, b[:ncc + nbc] + carry_b, strict=True)]
    cc, bc, carry = ops[:ncc], ops[ncc:ncc + nbc], ops[ncc + nbc:]
    cd = [0 if m else None for m in cc_b]
    bd = [0 if m else None for m in bc_b]
    kd = [0 if m else None for m in carry_b]
    common = dict(max_steps=max_steps)
    if not pred_b:
        cg, c1 = batch_graph(cond_graph, cd + kd, size, [None], name="while (vmap)")
        bg, c2 = batch_graph(body_graph, bd + kd, size, kd, name="while (vmap)")
        if c1 or c2:
            raise AssertionError("vmap of a while body captured an outer value")
        outs = P.while_loop.bind(*cc, *bc, *carry, cond_graph=cg, body_graph=bg,
                                 n_cond_consts=ncc, n_body_consts=nbc, **common)
        return list(outs), kd

    def lanes(c_vals, k_vals):
        (p, d), = batch_eval(cond_graph, list(c_vals) + list(k_vals), cd + kd, size)
        return batch_at(p, d, size, 0)

    def new_cond(*a):
        return [P.reduce_max.bind(lanes(a[:ncc], a[ncc:]), axes=(0,))]

    def new_body(*a):
        c_vals, b_vals, k_vals = a[:ncc], a[ncc:ncc + nbc], a[ncc + nbc:]
        active = lanes(c_vals, k_vals)
        stepped = batch_eval(body_graph, list(b_vals) + list(k_vals), bd + kd, size)
        stepped = [[batch_at(x, d, size, 0) for x, d in stepped]]
        return _select_outputs(P.convert.bind(active, new_dtype=np.dtype(np.int32)),
                               [list(k_vals)] + stepped, size)

    k_avals = [x.aval for x in carry]
    cg = _closed_trace(new_cond, [x.aval for x in cc] + k_avals, "while (vmap)")
    bg = _closed_trace(new_body, [x.aval for x in cc + bc] + k_avals, "while (vmap)")
    outs = P.while_loop.bind(*cc, *cc, *bc, *carry, cond_graph=cg, body_graph=bg,
                             n_cond_consts=ncc, n_body_consts=ncc + nbc, **common)
    return list(outs), [0] * len(carry)


JVP_RULES.register(P.scan, _scan_jvp)
JVP_RULES.register(P.cond, _cond_jvp)
JVP_RULES.register(P.while_loop, _while_jvp)
TRANSPOSE_RULES.register(P.scan, _scan_transpose)
TRANSPOSE_RULES.register(P.cond, _cond_transpose)
TRANSPOSE_RULES.register(P.while_loop, _while_transpose)
BATCH_RULES.register(P.scan, _scan_batch)
BATCH_RULES.register(P.cond, _cond_batch)
BATCH_RULES.register(P.while_loop, _while_batch)
