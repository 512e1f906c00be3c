"""Reverse mode: split a jvp graph into primal and linear parts, then transpose the linear part.

``linearize_graph`` runs the jvp pass and splits its graph: every equation that
depends on a tangent goes to the *linear* graph, the rest to the *primal*
graph; the primal values the linear graph reads are *residuals*.
``transpose_graph`` walks the linear graph backwards with the ``TRANSPOSE``
table, accumulating cotangents with ``add``.

A transpose rule is ``rule(ct, *operands, **params) -> cotangent per operand``;
an operand the graph is linear in arrives as ``Linear(aval)``, the others as
values, and the rule returns ``None`` for the non-linear ones. The pairing of
complex values is ``Re(sum(a * b))`` (no conjugation), so ``grad`` of a real
function of a complex input gives the conjugate of the steepest-ascent
direction, as JAX does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from functorch_core.ir import AbstractArray, Graph, Lit, Primitive, Var, passes, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import Table, caller_site

from . import _windows as W
from .jvp import MissingRuleError, closed, jvp_graph, zeros


class Linear:
    """An operand of a linear equation that the transpose solves for."""

    __slots__ = ("aval",)

    def __init__(self, aval: AbstractArray):
        self.aval = aval


def is_linear(x) -> bool:
    return isinstance(x, Linear)


@dataclass
class Linearized:
    """``primal``: inputs -> outputs + residuals; ``linear``: residuals + tangents -> tangents."""

    primal: Graph
    linear: Graph
    n_out: int
    n_res: int


def split_linear(eqns, linear_inputs, extra_reads=()):
    """Split ``eqns`` by dependence on ``linear_inputs``: (the equations that depend on
    none of them, those that do, the ids of every dependent value, the residuals: the
    independent values the dependent equations or ``extra_reads`` read, in first-read
    order)."""
    linear_ids = {id(v) for v in linear_inputs}
    primal_eqns, linear_eqns = [], []
    for eqn in eqns:
        if any(isinstance(a, Var) and id(a) in linear_ids for a in eqn.inputs):
            linear_eqns.append(eqn)
            linear_ids.update(id(v) for v in eqn.outputs)
        else:
            primal_eqns.append(eqn)
    residuals, seen = [], set()
    for a in [*(a for e in linear_eqns for a in e.inputs), *extra_reads]:
        if isinstance(a, Var) and id(a) not in linear_ids and id(a) not in seen:
            seen.add(id(a))
            residuals.append(a)
    return primal_eqns, linear_eqns, linear_ids, residuals


def linearize_graph(graph: Graph, diff) -> Linearized:
    """Split the jvp graph of ``graph`` (tangents for the inputs marked in ``diff``)."""
    jgraph = jvp_graph(graph, diff)
    n_in, n_out = len(graph.inputs), len(graph.outputs)
    tangent_inputs = jgraph.inputs[n_in:]
    primal_eqns, linear_eqns, _, residuals = split_linear(
        jgraph.eqns, tangent_inputs, jgraph.outputs[n_out:])
    primal = passes.dce(Graph(jgraph.inputs[:n_in], primal_eqns,
                              list(jgraph.outputs[:n_out]) + residuals))
    linear = Graph(residuals + list(tangent_inputs), linear_eqns, list(jgraph.outputs[n_out:]))
    return Linearized(primal, linear, n_out, len(residuals))


def transpose_graph(linear: Graph, n_res: int, wanted=None) -> Graph:
    """``(residuals, output cotangents of the outputs marked in wanted) -> input cotangents``."""
    wanted = [True] * len(linear.outputs) if wanted is None else list(wanted)
    res_vars, lin_inputs = linear.inputs[:n_res], linear.inputs[n_res:]
    linear_ids = {id(v) for v in lin_inputs}
    for eqn in linear.eqns:
        linear_ids.update(id(v) for v in eqn.outputs)
    ct_avals = [AbstractArray(o.aval.shape, o.aval.dtype)
                for o, w in zip(linear.outputs, wanted, strict=True) if w]

    def body(*args):
        env = {id(v): a for v, a in zip(res_vars, args[:n_res], strict=True)}
        cts: dict[int, object] = {}
        given = iter(args[n_res:])
        for o, w in zip(linear.outputs, wanted, strict=True):
            ct = next(given) if w else None
            if ct is not None and isinstance(o, Var) and id(o) in linear_ids:
                _accumulate(cts, o, ct)
        for eqn in reversed(linear.eqns):
            _transpose_eqn(eqn, env, cts, linear_ids)
        return [cts.get(id(v)) if id(v) in cts else zeros(v.aval) for v in lin_inputs]

    tgraph, captured = trace_flat(body, [v.aval for v in res_vars] + ct_avals, name="transpose")
    return passes.dce(closed(tgraph, captured, "vjp"))


def _accumulate(cts, var, ct):
    aval = var.aval
    if ct.aval.shape != aval.shape:      # a rank-0 operand broadcast by an elementwise op
        ct = P.reduce_sum.bind(ct, axes=tuple(range(len(ct.aval.shape))))
    old = cts.get(id(var))
    cts[id(var)] = ct if old is None else P.add.bind(old, ct)


def _transpose_eqn(eqn, env, cts, linear_ids):
    outs = [cts.pop(id(v), None) for v in eqn.outputs]
    if all(c is None for c in outs):
        return
    rule = TRANSPOSE.get(eqn.prim)
    if rule is None:
        raise MissingRuleError(f"vjp: primitive '{eqn.prim.name}' (at {eqn.source}) has no "
                               "transpose rule, but it is applied to a tangent")
    operands = [Linear(a.aval) if isinstance(a, Var) and id(a) in linear_ids
                else (a if isinstance(a, Lit) else env[id(a)]) for a in eqn.inputs]
    if eqn.prim.multiple_results:
        ct = [zeros(v.aval) if c is None else c for c, v in zip(outs, eqn.outputs, strict=True)]
    else:
        ct = outs[0]
    results = rule(ct, *operands, **eqn.params)
    for a, op, c in zip(eqn.inputs, operands, results, strict=True):
        if c is not None and is_linear(op):
            _accumulate(cts, a, c)


# --- the rule table ---------------------------------------------------------------

TransposeRule = Callable[..., object]
# The transpose pass reads TRANSPOSE; transforms/rules.py assembles it from every rule
# module's table.
TRANSPOSE: Table[Primitive, TransposeRule] = Table("transpose")
TRANSPOSE_RULES: Table[Primitive, TransposeRule] = Table("transpose.py: transpose")


def _not_linear(name):
    return NotImplementedError(f"transpose: {name} is applied to two tangent operands; the "
                               "graph is not linear (a differentiation rule is wrong)")


def _each_linear(fn):
    """Rule ``fn(ct, x)`` for a primitive linear in its first operand (others fixed)."""
    def rule(ct, x, *rest, **params):
        return [fn(ct, x, *rest, **params)] + [None] * len(rest)
    return rule


def _add_t(ct, x, y):
    return [ct if is_linear(x) else None, ct if is_linear(y) else None]


def _sub_t(ct, x, y):
    return [ct if is_linear(x) else None, P.neg.bind(ct) if is_linear(y) else None]


def _mul_t(ct, x, y):
    if is_linear(x) and is_linear(y):
        raise _not_linear("mul")
    return [P.mul.bind(ct, y), None] if is_linear(x) else [None, P.mul.bind(x, ct)]


def _div_t(ct, x, y):
    if is_linear(y):
        raise _not_linear("div (tangent denominator)")
    return [P.div.bind(ct, y), None]


def _convert_t(ct, x, *, new_dtype, weak_type=False):
    src = x.aval.dtype
    if src.kind != "c" and ct.aval.dtype.kind == "c":
        ct = P.real.bind(ct)
    return P.convert.bind(ct, new_dtype=src) if ct.aval.dtype != src else ct


def _reduce_precision_t(ct, x, **bits):
    """JAX's rule: the cotangent is rounded as the value was."""
    return P.reduce_precision.bind(ct, **bits)


def _to_complex(ct, dtype):
    return P.convert.bind(ct, new_dtype=dtype)


def _select_t(ct, pred, a, b):
    if not is_linear(a) and not is_linear(b):
        return [None, None, None]
    z = zeros(ct.aval)
    return [None, P.select.bind(pred, ct, z) if is_linear(a) else None,
            P.select.bind(pred, z, ct) if is_linear(b) else None]


def _broadcast_in_dim_t(ct, x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    summed = [d for d in range(len(shape)) if d not in bd]
    summed += [bd[i] for i, d in enumerate(x.aval.shape) if d == 1 and shape[bd[i]] != 1]
    r = P.reduce_sum.bind(ct, axes=tuple(sorted(summed))) if summed else ct
    return r if r.aval.shape == x.aval.shape else P.reshape.bind(r, new_sizes=x.aval.shape)


def _reshape_back(ct, x, **params):
    return P.reshape.bind(ct, new_sizes=x.aval.shape)


def _transpose_t(ct, x, *, permutation):
    return P.transpose.bind(ct, permutation=tuple(int(i) for i in np.argsort(permutation)))


def _reduce_sum_t(ct, x, *, axes):
    kept = tuple(i for i in range(x.aval.ndim) if i not in axes)
    return P.broadcast_in_dim.bind(ct, shape=x.aval.shape, broadcast_dimensions=kept)


def _concatenate_t(ct, *xs, dimension):
    out, start = [], 0
    nd = ct.aval.ndim
    for x in xs:
        size = x.aval.shape[dimension]
        if is_linear(x):
            lo = tuple(start if d == dimension else 0 for d in range(nd))
            hi = tuple(start + size if d == dimension else ct.aval.shape[d] for d in range(nd))
            out.append(P.slice.bind(ct, start_indices=lo, limit_indices=hi, strides=(1,) * nd))
        else:
            out.append(None)
        start += size
    return out


def _pad_t(ct, x, value, *, padding_config):
    zero = Lit(np.zeros((), ct.aval.dtype))
    unpadded = P.pad.bind(ct, zero, padding_config=tuple((-lo, -hi, 0)
                                                         for lo, hi, _ in padding_config))
    nd = ct.aval.ndim
    ct_x = P.slice.bind(unpadded, start_indices=(0,) * nd, limit_indices=unpadded.aval.shape,
                        strides=tuple(i + 1 for _, _, i in padding_config))
    ct_v = None
    if is_linear(value):
        all_axes = tuple(range(nd))
        ct_v = P.sub.bind(P.reduce_sum.bind(ct, axes=all_axes),
                          P.reduce_sum.bind(ct_x, axes=all_axes))
    return [ct_x if is_linear(x) else None, ct_v]


def _slice_t(ct, x, *, start_indices, limit_indices, strides):
    config = []
    for d, s, n, st in zip(x.aval.shape, start_indices, ct.aval.shape, strides, strict=True):
        inner = (n - 1) * st + 1 if n else 0
        config.append((s, d - s - inner, st - 1))
    zero = Lit(np.zeros((), ct.aval.dtype))
    return P.pad.bind(ct, zero, padding_config=tuple(config))


def _dynamic_slice_t(ct, x, *idx, slice_sizes):
    return [P.dynamic_update_slice.bind(zeros(x.aval), ct, *idx)] + [None] * len(idx)


def _dynamic_update_slice_t(ct, x, update, *idx):
    ct_x = P.dynamic_update_slice.bind(ct, zeros(update.aval), *idx) if is_linear(x) else None
    ct_u = (P.dynamic_slice.bind(ct, *idx, slice_sizes=update.aval.shape)
            if is_linear(update) else None)
    return [ct_x, ct_u] + [None] * len(idx)


def _gather_t(ct, x, indices, *, axes):
    return [P.scatter_add.bind(zeros(x.aval), indices, ct, axes=axes), None]


def _scatter_add_t(ct, x, indices, updates, *, axes):
    ct_u = P.gather.bind(ct, indices, axes=axes) if is_linear(updates) else None
    return [ct if is_linear(x) else None, None, ct_u]


def _scatter_t(ct, x, indices, updates, *, axes):
    ct_x = (P.scatter.bind(ct, indices, zeros(updates.aval), axes=axes)
            if is_linear(x) else None)
    ct_u = None
    if is_linear(updates):
        # Of several updates written to one place only the last one survives: tag each
        # update with its number, scatter the tags, and keep the cotangent where ours won.
        shape, n = updates.aval.shape, updates.aval.size
        if n == 0:
            return [ct_x, None, zeros(updates.aval)]
        i64 = np.dtype(np.int64)
        tags = P.reshape.bind(P.iota.bind(dtype=i64, shape=(n,), dimension=0), new_sizes=shape)
        board = P.scatter.bind(zeros(AbstractArray(x.aval.shape, i64)), indices, tags, axes=axes)
        won = P.eq.bind(P.gather.bind(board, indices, axes=axes), tags)
        ct_u = P.select.bind(won, P.gather.bind(ct, indices, axes=axes), zeros(updates.aval))
    return [ct_x, None, ct_u]


def _cumsum_t(ct, x, *, axis, reverse):
    return P.cumsum.bind(ct, axis=axis, reverse=not reverse)


def _dot_general_t(ct, lhs, rhs, *, dimension_numbers, **precision):
    """The cotangent products keep the product's ``precision`` (as JAX's rule)."""
    (lc, rc), (lb, rb) = dimension_numbers
    if is_linear(lhs) and is_linear(rhs):
        raise _not_linear("dot_general")
    if is_linear(lhs):
        return [_dot_transpose_operand(ct, rhs, lhs.aval.ndim, lc, rc, lb, rb, True,
                                       precision), None]
    return [None, _dot_transpose_operand(ct, lhs, rhs.aval.ndim, rc, lc, rb, lb, False,
                                         precision)]


def _dot_transpose_operand(ct, other, ndim, mc, oc, mb, ob, mine_is_lhs, precision):
    """Cotangent of the linear operand ("mine", rank ``ndim``) of a dot_general."""
    nb = len(mb)
    my_free = [i for i in range(ndim) if i not in mc and i not in mb]
    other_free = [i for i in range(other.aval.ndim) if i not in oc and i not in ob]
    # ct axes: batch, lhs free, rhs free.
    n_lfree = len(my_free) if mine_is_lhs else len(other_free)
    start = nb + n_lfree if mine_is_lhs else nb
    ct_other_free = tuple(range(start, start + len(other_free)))
    dn = ((ct_other_free, tuple(other_free)), (tuple(range(nb)), tuple(ob)))
    res = P.dot_general.bind(ct, other, dimension_numbers=dn, **precision)
    # res axes: batch, my free (in order), then other's contracting dims in ascending order.
    oc_sorted = sorted(oc)
    perm = []
    for i in range(ndim):
        if i in mb:
            perm.append(mb.index(i))
        elif i in my_free:
            perm.append(nb + my_free.index(i))
        else:
            perm.append(nb + len(my_free) + oc_sorted.index(oc[mc.index(i)]))
    return res if perm == sorted(perm) else P.transpose.bind(res, permutation=tuple(perm))


def _conv_t(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
            dimension_numbers, feature_group_count, batch_group_count, **precision):
    """Both operands as lax transposes them: the lhs cotangent is a convolution of ``ct``
    with the flipped, in/out-swapped kernel (lhs dilation = strides); the rhs cotangent a
    convolution of the input with ``ct``; both keep the convolution's ``precision``."""
    if is_linear(lhs) and is_linear(rhs):
        raise _not_linear("conv_general_dilated")
    lspec, rspec, ospec = dimension_numbers
    lsp, rsp, osp = ([shape[a] for a in spec[2:]] for shape, spec in
                     ((lhs.aval.shape, lspec), (rhs.aval.shape, rspec), (ct.aval.shape, ospec)))
    geometry = (lsp, rsp, window_strides, osp, padding, lhs_dilation, rhs_dilation)
    if is_linear(lhs):
        groups = feature_group_count
        if feature_group_count > 1 or batch_group_count > 1:
            groups = max(feature_group_count, batch_group_count)
            rhs = W.reshape_axis_out_of(rspec[0], groups, rhs)
            rhs = W.reshape_axis_into(rspec[0], rspec[1], rhs)
        out = P.conv_general_dilated.bind(
            ct, P.rev.bind(rhs, dimensions=tuple(rspec[2:])), window_strides=lhs_dilation,
            padding=W.vjp_lhs_padding(*geometry), lhs_dilation=window_strides,
            rhs_dilation=rhs_dilation,
            dimension_numbers=(ospec, W.spec_transpose(rspec), lspec),
            feature_group_count=groups, batch_group_count=1, **precision)
        if batch_group_count > 1:
            out = W.reshape_axis_out_of(lspec[1], batch_group_count, out)
            out = W.reshape_axis_into(lspec[1], lspec[0], out)
        return [out, None]
    fgc, bgc = feature_group_count, batch_group_count
    if bgc > 1:
        fgc, bgc = bgc, 1
    elif fgc > 1:
        fgc, bgc = 1, fgc
    out = P.conv_general_dilated.bind(
        lhs, ct, window_strides=rhs_dilation, padding=W.vjp_rhs_padding(*geometry),
        lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
        dimension_numbers=tuple(W.spec_transpose(s) for s in (lspec, ospec, rspec)),
        feature_group_count=fgc, batch_group_count=bgc, **precision)
    return [None, out]


def _reduce_window_sum_t(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation):
    pads = W.vjp_lhs_padding(x.aval.shape, window_dimensions, window_strides, ct.aval.shape,
                             padding, base_dilation, window_dilation)
    padded = P.pad.bind(ct, Lit(np.zeros((), ct.aval.dtype)),
                        padding_config=tuple((lo, hi, s - 1) for (lo, hi), s in
                                             zip(pads, window_strides, strict=True)))
    ones = (1,) * len(window_dimensions)
    return P.reduce_window_sum.bind(
        padded, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * len(ones), base_dilation=ones, window_dilation=window_dilation)



def _half_spectrum_weights(shape, dtype, n, edge, inner):
    """``edge`` at the zero (and for an even ``n`` the Nyquist) frequency along the last
    axis of a half spectrum of ``shape``, ``inner`` elsewhere: from an iota the kernel
    computes, not a literal as long as the spectrum."""
    i64 = np.dtype(np.int64)
    idx = P.iota.bind(dtype=i64, shape=shape, dimension=len(shape) - 1)
    at_edge = P.eq.bind(idx, Lit(np.zeros((), i64)))
    if n % 2 == 0:
        at_edge = P.or_.bind(at_edge, P.eq.bind(idx, Lit(np.asarray(n // 2, i64))))
    return P.select.bind(at_edge, Lit(np.asarray(edge, dtype)), Lit(np.asarray(inner, dtype)))


def _fft_t(ct, x, *, fft_type, fft_lengths):
    """Under the pairing Re(sum(a * b)): the DFT matrices are symmetric, so fft and ifft are
    their own transposes; rfft is a slice of the complex fft of a real input, whose
    transpose ``Re(fft(pad(ct)))`` is the irfft of the conjugate half spectrum weighted 1
    (zero and Nyquist frequencies) and 1/2 (the others: irfft counts them twice), times
    the size (a real transform where a complex one of the full length, a pad and a real
    part ran); irfft reads the half spectrum with weights 1 and 2."""
    lengths = tuple(fft_lengths)
    n, size = lengths[-1], float(np.prod(lengths))
    if fft_type in ("fft", "ifft"):
        return P.fft.bind(ct, fft_type=fft_type, fft_lengths=lengths)
    if fft_type == "rfft":
        scale = _half_spectrum_weights(ct.aval.shape, ct.aval.dtype, n, size, size / 2)
        return P.fft.bind(P.mul.bind(P.conj.bind(ct), scale), fft_type="irfft",
                          fft_lengths=lengths)
    half = P.conj.bind(P.fft.bind(ct, fft_type="rfft", fft_lengths=lengths))
    return P.mul.bind(half, _half_spectrum_weights(half.aval.shape, half.aval.dtype, n,
                                                   1 / size, 2 / size))


def _selection_t(other):
    """select_and_gather_add and select_and_scatter_add transpose into each other."""
    def rule(ct, t, x, **params):
        if is_linear(x):
            raise _not_linear(other.name)
        return [other.bind(ct, x, **params), None]
    return rule


def _layout(prim, fn):
    """Register ``_each_linear(fn)`` for ``prim``, reported from the caller's line."""
    TRANSPOSE_RULES.register(prim, _each_linear(fn), site=caller_site())


TRANSPOSE_RULES.register(P.add, _add_t)
# the adjoint of re + im * 1j under the convention of the real/imag/convert rules
TRANSPOSE_RULES.register(P.complex, lambda ct, x, y: [
    P.real.bind(ct) if is_linear(x) else None,
    P.neg.bind(P.imag.bind(ct)) if is_linear(y) else None])
TRANSPOSE_RULES.register(P.sub, _sub_t)
TRANSPOSE_RULES.register(P.mul, _mul_t)
TRANSPOSE_RULES.register(P.div, _div_t)
TRANSPOSE_RULES.register(P.select, _select_t)
TRANSPOSE_RULES.register(P.concatenate, _concatenate_t)
TRANSPOSE_RULES.register(P.pad, _pad_t)
TRANSPOSE_RULES.register(P.dynamic_slice, _dynamic_slice_t)
TRANSPOSE_RULES.register(P.dynamic_update_slice, _dynamic_update_slice_t)
TRANSPOSE_RULES.register(P.gather, _gather_t)
TRANSPOSE_RULES.register(P.scatter_add, _scatter_add_t)
TRANSPOSE_RULES.register(P.scatter, _scatter_t)
TRANSPOSE_RULES.register(P.dot_general, _dot_general_t)
TRANSPOSE_RULES.register(P.conv_general_dilated, _conv_t)
TRANSPOSE_RULES.register(P.select_and_gather_add, _selection_t(P.select_and_scatter_add))
TRANSPOSE_RULES.register(P.select_and_scatter_add, _selection_t(P.select_and_gather_add))
_layout(P.neg, lambda ct, x: P.neg.bind(ct))
_layout(P.conj, lambda ct, x: P.conj.bind(ct))
_layout(P.real, lambda ct, x: _to_complex(ct, x.aval.dtype))
_layout(P.imag, lambda ct, x: P.mul.bind(_to_complex(ct, x.aval.dtype),
                                         Lit(np.asarray(-1j, x.aval.dtype))))
_layout(P.convert, _convert_t)
_layout(P.reduce_precision, _reduce_precision_t)
_layout(P.broadcast_in_dim, _broadcast_in_dim_t)
_layout(P.reshape, _reshape_back)
_layout(P.squeeze, _reshape_back)
_layout(P.expand_dims, _reshape_back)
_layout(P.transpose, _transpose_t)
_layout(P.rev, lambda ct, x, *, dimensions: P.rev.bind(ct, dimensions=dimensions))
_layout(P.slice, _slice_t)
_layout(P.reduce_sum, _reduce_sum_t)
_layout(P.cumsum, _cumsum_t)
_layout(P.reduce_window_sum, _reduce_window_sum_t)
_layout(P.fft, _fft_t)
