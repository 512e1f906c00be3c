"""Forward mode: the jvp rule table and the jvp graph pass.

``jvp_graph(graph, diff)`` turns a graph of primals into a graph of
``(primals, tangents) -> (outputs, output tangents)``. It is built by tracing
a walk over the equations that calls ``JVP[eqn.prim](primals, tangents, **params)``.

A rule returns ``(out, tangent_out)`` (lists for multiple-result primitives).
A tangent is a traced array or ``Zero(aval)``, a symbolic zero that is never
materialised unless an operation needs an operand; the walk skips equations
whose tangents are all zero. Integer and bool values always have zero tangents.

Conventions at the non-smooth points:
  - ``max``/``min`` split the tangent half/half on ties; ``reduce_max``,
    ``reduce_min``, ``cummax`` and ``cummin`` split it evenly among all tied
    elements (so ``reduce_max`` agrees with the last element of ``cummax``).
  - ``abs`` has derivative ``sign(x)`` (0 at 0; for complex ``x``, 0 at 0).
  - ``sqrt``/``cbrt`` at 0 give an infinite derivative, as NumPy's limits do.
  - ``pow(x, y)``: d/dx is 0 at ``x == y == 0`` (``y * x**(y-1)`` elsewhere, so the
    mixed partial at ``y == 0`` is ``1/x``); d/dy is 0 where ``x == 0`` (JAX's convention);
    the higher derivatives there are 0 too, not NaN.
  - Complex values: tangents are complex and rules are holomorphic where the
    function is; ``real``, ``imag``, ``conj`` and ``abs`` are handled as R-linear maps.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from functorch_core.ir import AbstractArray, Graph, Lit, Primitive, passes, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.tables import Table, caller_site


class Zero:
    """A symbolic zero tangent of type ``aval``."""

    __slots__ = ("aval",)

    def __init__(self, aval: AbstractArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval})"


def is_zero(t) -> bool:
    return isinstance(t, Zero)


def differentiable(aval: AbstractArray) -> bool:
    return dtype_kind(aval.dtype) in "fc"


def tangent_aval(aval: AbstractArray) -> AbstractArray:
    return AbstractArray(aval.shape, aval.dtype)


def zeros(aval: AbstractArray):
    """A materialised zero array of ``aval``'s shape and dtype."""
    lit = Lit(np.zeros((), aval.dtype))
    if not aval.shape:
        return lit
    return P.broadcast_in_dim.bind(lit, shape=tuple(aval.shape), broadcast_dimensions=())


def instantiate(t):
    return zeros(t.aval) if is_zero(t) else t


def const(value, like):
    """A rank-0 constant of ``like``'s dtype."""
    return Lit(np.asarray(value, dtype=like.aval.dtype))


def _av(x) -> AbstractArray:
    return x.aval


def mul(a, b):
    return P.mul.bind(a, b)


def div(a, b):
    return P.div.bind(a, b)


def add(a, b):
    return P.add.bind(a, b)


def sub(a, b):
    return P.sub.bind(a, b)


def add_tangents(a, b):
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return add(a, b)


JvpRule = Callable[..., tuple]
# The jvp pass reads JVP; transforms/rules.py assembles it from every rule module's table.
JVP: Table[Primitive, JvpRule] = Table("jvp")
JVP_RULES: Table[Primitive, JvpRule] = Table("jvp.py: jvp")


# --- families -----------------------------------------------------------------

def zero_rule(prim):
    """A primitive whose outputs have zero tangents (integer valued or piecewise constant)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        outs = out if prim.multiple_results else [out]
        touts = [Zero(tangent_aval(_av(o))) for o in outs]
        return out, touts if prim.multiple_results else touts[0]
    return rule


def _linear(prim, positions=None):
    """A primitive linear in the operands at ``positions`` (all by default), jointly."""
    def rule(primals, tangents, **params):
        pos = range(len(primals)) if positions is None else positions
        targs = [instantiate(tangents[i]) if i in pos else p for i, p in enumerate(primals)]
        return prim.bind(*primals, **params), prim.bind(*targs, **params)
    return rule


def defjvp_unary(prim, dydx=None, *, dxdy=None):
    """The rule of ``y = prim(x, **params)`` from ``dydx(x, y, **params)``, the derivative
    (the tangent is ``t * dydx``), or from ``dxdy(x, y, **params)``, its reciprocal (the
    tangent is ``t / dxdy``, one rounding where ``t * (1 / dxdy)`` has two)."""
    if (dydx is None) == (dxdy is None):
        raise TypeError("defjvp_unary: give exactly one of dydx and dxdy")

    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        y = prim.bind(x, **params)
        if is_zero(t):
            return y, Zero(tangent_aval(_av(y)))
        if dydx is not None:
            return y, mul(t, dydx(x, y, **params))
        return y, div(t, dxdy(x, y, **params))
    return rule


def _sq(x):
    return mul(x, x)


def _abs_rule(primals, tangents):
    """R-linear for a complex ``x``: the real part of ``t`` times ``conj(x) / |x|``."""
    (x,), (t,) = primals, tangents
    y = P.abs.bind(x)
    return y, _abs_tangent(t, x, y)


def _abs_tangent(t, x, y):
    if _av(x).dtype.kind != "c":
        return mul(t, P.sign.bind(x))
    unit = div(P.conj.bind(x), P.convert.bind(y, new_dtype=_av(x).dtype))
    unit = P.select.bind(P.eq.bind(y, const(0, y)), const(0, x), unit)
    return P.real.bind(mul(t, unit))


for _p in (P.sign, P.floor, P.ceil, P.round, P.is_finite, P.not_, P.iota, P.argmax, P.argmin,
           *P.COMPARISONS, P.floor_div, P.and_, P.or_, P.xor, P.threefry2x32, P.check_index):
    JVP_RULES.register(_p, zero_rule(_p))
for _p in (P.neg, P.real, P.imag, P.conj, P.convert, P.broadcast_in_dim, P.reshape,
           P.transpose, P.squeeze, P.expand_dims, P.rev, P.slice, P.reduce_sum, P.cumsum,
           P.concatenate, P.pad, P.reduce_precision):
    JVP_RULES.register(_p, _linear(_p))
JVP_RULES.register(P.select, _linear(P.select, (1, 2)))
JVP_RULES.register(P.dynamic_slice, _linear(P.dynamic_slice, (0,)))
JVP_RULES.register(P.dynamic_update_slice, _linear(P.dynamic_update_slice, (0, 1)))
JVP_RULES.register(P.gather, _linear(P.gather, (0,)))
JVP_RULES.register(P.scatter_add, _linear(P.scatter_add, (0, 2)))
# for fixed indices, overwriting is linear in (x, updates)
JVP_RULES.register(P.scatter, _linear(P.scatter, (0, 2)))


def _unary(prim, dydx=None, *, dxdy=None):
    """Register ``defjvp_unary(prim, ...)``, reported from the caller's line."""
    JVP_RULES.register(prim, defjvp_unary(prim, dydx, dxdy=dxdy), site=caller_site())


JVP_RULES.register(P.abs, _abs_rule)
_unary(P.exp, lambda x, y: y)
_unary(P.exp2, lambda x, y: mul(y, const(math.log(2), y)))
_unary(P.expm1, lambda x, y: add(y, const(1, y)))
_unary(P.log, dxdy=lambda x, y: x)
_unary(P.log1p, dxdy=lambda x, y: add(x, const(1, x)))
_unary(P.sqrt, lambda x, y: div(const(0.5, y), y))
_unary(P.cbrt, lambda x, y: div(const(1 / 3, y), _sq(y)))
_unary(P.tanh, lambda x, y: sub(const(1, y), _sq(y)))
_unary(P.logistic, lambda x, y: mul(y, sub(const(1, y), y)))
_unary(P.sin, lambda x, y: P.cos.bind(x))
_unary(P.cos, lambda x, y: P.neg.bind(P.sin.bind(x)))
_unary(P.tan, lambda x, y: add(const(1, y), _sq(y)))
_unary(P.asin, dxdy=lambda x, y: P.sqrt.bind(sub(const(1, x), _sq(x))))
_unary(P.acos, dxdy=lambda x, y: P.neg.bind(P.sqrt.bind(sub(const(1, x), _sq(x)))))
_unary(P.atan, dxdy=lambda x, y: add(const(1, x), _sq(x)))
_unary(P.sinh, lambda x, y: P.cosh.bind(x))
_unary(P.cosh, lambda x, y: P.sinh.bind(x))
_unary(P.asinh, dxdy=lambda x, y: P.sqrt.bind(add(_sq(x), const(1, x))))
_unary(P.acosh, dxdy=lambda x, y: mul(P.sqrt.bind(sub(x, const(1, x))),
                                      P.sqrt.bind(add(x, const(1, x)))))
_unary(P.atanh, dxdy=lambda x, y: sub(const(1, x), _sq(x)))


def _binary(prim, dx, dy):
    """Register the rule of ``prim`` from ``dx(x, y, out)``/``dy(...)``, the partial
    derivatives (``None``: not differentiable)."""
    def rule(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        out = prim.bind(x, y)
        tout = Zero(tangent_aval(_av(out)))
        for t, d in ((tx, dx), (ty, dy)):
            if not is_zero(t) and d is not None:
                tout = add_tangents(tout, mul(t, d(x, y, out)))
        return out, tout
    JVP_RULES.register(prim, rule, site=caller_site())


def _add_sub_rule(prim):
    def rule(primals, tangents):
        (tx, ty) = tangents
        if not is_zero(ty) and prim is P.sub:
            ty = P.neg.bind(ty)
        return prim.bind(*primals), add_tangents(tx, ty)
    return rule


JVP_RULES.register(P.add, _add_sub_rule(P.add))
JVP_RULES.register(P.sub, _add_sub_rule(P.sub))
JVP_RULES.register(P.complex, _linear(P.complex))


def _mul_rule(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    tout = Zero(tangent_aval(_av(x)))
    if not is_zero(tx):
        tout = mul(tx, y)
    if not is_zero(ty):
        tout = add_tangents(tout, mul(x, ty))
    return mul(x, y), tout


def _div_rule(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = div(x, y)
    tout = Zero(tangent_aval(_av(out)))
    if not is_zero(tx):
        tout = div(tx, y)
    if not is_zero(ty):
        tout = add_tangents(tout, P.neg.bind(mul(ty, div(out, y))))
    return out, tout


JVP_RULES.register(P.mul, _mul_rule)
JVP_RULES.register(P.div, _div_rule)


def _pow_dx(x, y, out):
    # 0 at x == y == 0; there the base is replaced by 1, so that the unselected branch (and
    # every derivative of it) stays finite. Elsewhere y * x**(y-1), whose y-derivative is
    # right at y == 0 too
    both0 = P.and_.bind(P.eq.bind(x, const(0, x)), P.eq.bind(y, const(0, y)))
    safe = P.select.bind(both0, const(1, x), x)
    full = mul(y, P.pow.bind(safe, sub(y, const(1, y))))
    return P.select.bind(both0, const(0, x), full)


def _pow_dy(x, y, out):
    # log of x == 0 replaced by log(1) = 0, for the same reason
    is0 = P.eq.bind(x, const(0, x))
    full = mul(P.log.bind(P.select.bind(is0, const(1, x), x)), out)
    return P.select.bind(is0, const(0, x), full)


def _chooser_coef(mine):
    """max/min: 1 where the operand was chosen, 1/2 on ties, 0 elsewhere."""
    def coef(x, y, out):
        tie = P.eq.bind(x, y)
        chosen = P.select.bind(P.eq.bind(out, mine(x, y)), const(1, out), const(0, out))
        return P.select.bind(tie, const(0.5, out), chosen)
    return coef


def _atan2_denom(x, y):
    return add(_sq(x), _sq(y))


_binary(P.pow, _pow_dx, _pow_dy)
_binary(P.max, _chooser_coef(lambda x, y: x), _chooser_coef(lambda x, y: y))
_binary(P.min, _chooser_coef(lambda x, y: x), _chooser_coef(lambda x, y: y))
_binary(P.rem, lambda x, y, out: const(1, out),
        lambda x, y, out: P.neg.bind(P.floor_div.bind(x, y)))
_binary(P.atan2, lambda x, y, out: div(y, _atan2_denom(x, y)),
        lambda x, y, out: P.neg.bind(div(x, _atan2_denom(x, y))))
_binary(P.copysign, lambda x, y, out: mul(P.copysign.bind(const(1, x), x),
                                          P.copysign.bind(const(1, y), y)), None)


# --- contraction ----------------------------------------------------------------

def _product_rule(prim):
    """dot_general and conv_general_dilated: bilinear, the tangent products with the
    primal's params (its precision included)."""
    def rule(primals, tangents, **params):
        (lhs, rhs), (tl, tr) = primals, tangents
        out = prim.bind(lhs, rhs, **params)
        tout = Zero(tangent_aval(_av(out)))
        if not is_zero(tl):
            tout = prim.bind(tl, rhs, **params)
        if not is_zero(tr):
            tout = add_tangents(tout, prim.bind(lhs, tr, **params))
        return out, tout
    return rule


JVP_RULES.register(P.dot_general, _product_rule(P.dot_general))
JVP_RULES.register(P.conv_general_dilated, _product_rule(P.conv_general_dilated))


# --- windowed reductions --------------------------------------------------------------

def _window_chooser_rule(prim, select):
    """max/min over windows: the tangent of each window's first selected element."""
    def rule(primals, tangents, **window):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **window)
        if is_zero(t):
            return out, Zero(tangent_aval(_av(out)))
        return out, P.select_and_gather_add.bind(t, x, select=select, **window)
    return rule


JVP_RULES.register(P.reduce_window_sum, _linear(P.reduce_window_sum))
JVP_RULES.register(P.fft, _linear(P.fft))
JVP_RULES.register(P.reduce_window_max, _window_chooser_rule(P.reduce_window_max, "max"))
JVP_RULES.register(P.reduce_window_min, _window_chooser_rule(P.reduce_window_min, "min"))
# linear in the tangent/cotangent; piecewise constant in the operand that selects
JVP_RULES.register(P.select_and_gather_add, _linear(P.select_and_gather_add, positions=(0,)))
JVP_RULES.register(P.select_and_scatter_add, _linear(P.select_and_scatter_add, positions=(0,)))


# --- reductions ---------------------------------------------------------------------

def _kept(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


def _tie_split(t, x, out_b, reduce_axes):
    """Sum of ``t`` over the elements of ``x`` equal to ``out_b``, divided by their count."""
    mask = P.convert.bind(P.eq.bind(x, out_b), new_dtype=_av(x).dtype)
    count = P.reduce_sum.bind(mask, axes=reduce_axes)
    return div(P.reduce_sum.bind(mul(t, mask), axes=reduce_axes), count)


def _reduce_chooser_rule(prim):
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        out_b = P.broadcast_in_dim.bind(out, shape=_av(x).shape,
                                        broadcast_dimensions=_kept(_av(x).ndim, axes))
        return out, _tie_split(t, x, out_b, axes)
    return rule


JVP_RULES.register(P.reduce_max, _reduce_chooser_rule(P.reduce_max))
JVP_RULES.register(P.reduce_min, _reduce_chooser_rule(P.reduce_min))


def _to_last(x, axes):
    """Move ``axes`` to the end and flatten them into one axis."""
    shape = _av(x).shape
    kept = _kept(len(shape), axes)
    x = P.transpose.bind(x, permutation=kept + tuple(axes))
    n = math.prod(shape[a] for a in axes)
    return P.reshape.bind(x, new_sizes=tuple(shape[k] for k in kept) + (n,))


def _exclusive_cumprod(x, reverse):
    """Products of the elements strictly before (after, if reverse) each one on the last axis."""
    nd = _av(x).ndim
    c = P.cumprod.bind(x, axis=nd - 1, reverse=reverse)
    shift = (-1, 1, 0) if reverse else (1, -1, 0)
    return P.pad.bind(c, const(1, x), padding_config=((0, 0, 0),) * (nd - 1) + (shift,))


def _reduce_prod_rule(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    out = P.reduce_prod.bind(x, axes=axes)
    xf, tf = _to_last(x, axes), _to_last(t, axes)
    # d out / d x_i = product of all the other elements: exact with zeros in the input.
    others = mul(_exclusive_cumprod(xf, False), _exclusive_cumprod(xf, True))
    return out, P.reduce_sum.bind(mul(tf, others), axes=(_av(xf).ndim - 1,))


JVP_RULES.register(P.reduce_prod, _reduce_prod_rule)


# --- cumulative ---------------------------------------------------------------------

def _scan_layout(prim, core):
    """Wrap ``core(x, t, out)`` (scan along the last axis, forward) into a cumulative rule."""
    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        nd = _av(x).ndim
        perm = tuple(i for i in range(nd) if i != axis) + (axis,)
        inv = tuple(int(i) for i in np.argsort(perm))
        xs, ts, os = (P.transpose.bind(v, permutation=perm) for v in (x, t, out))
        if reverse:
            xs, ts, os = (P.rev.bind(v, dimensions=(nd - 1,)) for v in (xs, ts, os))
        tout = core(xs, ts, os)
        if reverse:
            tout = P.rev.bind(tout, dimensions=(nd - 1,))
        return out, P.transpose.bind(tout, permutation=inv)
    return rule


def _pairs(x, which):
    """(..., n) -> (..., n, n) holding x[..., i] (which=0) or x[..., k] (which=1) at [i, k]."""
    shape = _av(x).shape
    lead = tuple(range(len(shape) - 1))
    return P.broadcast_in_dim.bind(x, shape=shape + (shape[-1],),
                                   broadcast_dimensions=lead + (len(shape) - 1 + which,))


def _index_grid(shape, test):
    """A bool (..., n, n) mask with ``test(i, k)`` at [..., i, k]."""
    n = shape[-1]
    i = P.iota.bind(dtype=np.dtype(np.int64), shape=(n, n), dimension=0)
    k = P.iota.bind(dtype=np.dtype(np.int64), shape=(n, n), dimension=1)
    nd = len(shape) + 1
    return P.broadcast_in_dim.bind(test(i, k), shape=shape + (n,),
                                   broadcast_dimensions=(nd - 2, nd - 1))


def _cumprod_core(x, t, out):
    # out_k = prod_{j<=k} x_j, so d out_k / d x_i = prod_{j<i} x_j * prod_{i<j<=k} x_j (i <= k).
    # Built as an (n, n) matrix per row: exact with zeros, O(n^2) memory along the axis.
    shape = _av(x).shape
    one, zero = const(1, x), const(0, x)
    after = P.select.bind(_index_grid(shape, lambda i, k: P.gt.bind(k, i)), _pairs(x, 1),
                          one)
    span = P.cumprod.bind(after, axis=len(shape), reverse=False)
    span = P.select.bind(_index_grid(shape, P.le.bind), span, zero)
    scaled = mul(t, _exclusive_cumprod(x, False))
    return P.reduce_sum.bind(mul(_pairs(scaled, 0), span), axes=(len(shape) - 1,))


def _cum_chooser_core(x, t, out):
    shape = _av(x).shape
    hit = P.and_.bind(P.eq.bind(_pairs(x, 0), _pairs(out, 1)), _index_grid(shape, P.le.bind))
    mask = P.convert.bind(hit, new_dtype=_av(x).dtype)
    count = P.reduce_sum.bind(mask, axes=(len(shape) - 1,))
    return div(P.reduce_sum.bind(mul(_pairs(t, 0), mask), axes=(len(shape) - 1,)), count)


JVP_RULES.register(P.cumprod, _scan_layout(P.cumprod, _cumprod_core))
JVP_RULES.register(P.cummax, _scan_layout(P.cummax, _cum_chooser_core))
JVP_RULES.register(P.cummin, _scan_layout(P.cummin, _cum_chooser_core))


# --- sort -----------------------------------------------------------------------------

def _sort_rule(primals, tangents, *, dimension, num_keys):
    shape = _av(primals[0]).shape
    i64 = np.dtype(np.int64)
    position = P.iota.bind(dtype=i64, shape=shape, dimension=dimension)
    *outs, perm = P.sort.bind(*primals, position, dimension=dimension, num_keys=num_keys)
    columns = [perm if a == dimension else P.iota.bind(dtype=i64, shape=shape, dimension=a)
               for a in range(len(shape))]
    index = P.concatenate.bind(*(P.expand_dims.bind(c, dimensions=(len(shape),))
                                 for c in columns), dimension=len(shape))
    axes = tuple(range(len(shape)))
    touts = [t if is_zero(t) else P.gather.bind(t, index, axes=axes) for t in tangents]
    return outs, touts


JVP_RULES.register(P.sort, _sort_rule)


# --- the pass -------------------------------------------------------------------------

class MissingRuleError(NotImplementedError):
    """A primitive has no rule in a transform's table."""


def closed(graph, captured, what):
    """The graph of a pass; a capture means a user's rule closed over an outer traced value."""
    if captured:
        raise TypeError(f"{what}: a custom differentiation rule uses a value traced by an "
                        "enclosing transform that it closes over; pass that value as an "
                        "argument of the custom_jvp/custom_vjp function instead")
    return graph


def _fit(t, aval: AbstractArray):
    """The tangent as the output's type: zero for integer outputs, rank-0 broadcast."""
    if is_zero(t) or not differentiable(aval):
        return Zero(tangent_aval(aval))
    if _av(t).shape != aval.shape:
        t = P.broadcast_in_dim.bind(t, shape=aval.shape, broadcast_dimensions=())
    return t


def jvp_eval(graph: Graph, primals, tangents):
    """Walk ``graph`` on (primals, tangents); returns (outputs, output tangents)."""
    env = {id(v): (p, t if differentiable(v.aval) else Zero(tangent_aval(v.aval)))
           for v, p, t in zip(graph.inputs, primals, tangents, strict=True)}

    def read(atom):
        if isinstance(atom, Lit):
            return atom, Zero(tangent_aval(atom.aval))
        return env[id(atom)]

    for eqn in graph.eqns:
        xs, ts = zip(*map(read, eqn.inputs), strict=True) if eqn.inputs else ((), ())
        if all(map(is_zero, ts)):
            out = eqn.prim.bind(*xs, **eqn.params)
            outs = out if eqn.prim.multiple_results else [out]
            touts = [Zero(tangent_aval(v.aval)) for v in eqn.outputs]
        else:
            rule = JVP.get(eqn.prim)
            if rule is None:
                raise MissingRuleError(
                    f"jvp: primitive '{eqn.prim.name}' (at {eqn.source}) has no "
                    "differentiation rule")
            out, tout = rule(list(xs), list(ts), **eqn.params)
            outs, touts = (out, tout) if eqn.prim.multiple_results else ([out], [tout])
        for v, o, t in zip(eqn.outputs, outs, touts, strict=True):
            env[id(v)] = (o, _fit(t, v.aval))
    results = [read(o) for o in graph.outputs]
    return [r[0] for r in results], [r[1] for r in results]


def jvp_graph(graph: Graph, diff) -> Graph:
    """``(inputs, tangents of the inputs marked in diff) -> (outputs, output tangents)``.

    Every output gets a tangent; zeros are materialised there (of the output's
    dtype for integer outputs).
    """
    n = len(graph.inputs)
    tan_avals = [tangent_aval(v.aval) for v, d in zip(graph.inputs, diff, strict=True) if d]

    def body(*args):
        it = iter(args[n:])
        tangents = [next(it) if d else Zero(tangent_aval(v.aval))
                    for v, d in zip(graph.inputs, diff, strict=True)]
        outs, touts = jvp_eval(graph, args[:n], tangents)
        return list(outs) + [instantiate(t) for t in touts]

    jgraph, captured = trace_flat(body, graph.in_avals + tan_avals, name="jvp")
    return passes.dce(closed(jgraph, captured, "jvp"))
