"""User-defined differentiation rules: ``custom_jvp``, ``custom_vjp`` and ``stop_gradient``.

A call of a decorated function records one ``custom_jvp_call`` (or
``custom_vjp_call``) equation holding the traced body and the user's rules.
Running it (eagerly, under ``jit``) runs the body; the jvp pass calls the
user's jvp rule instead; ``vmap`` batches the body and runs the rules under
``vmap``. A ``custom_vjp`` function differentiates to a ``custom_lin``
equation whose transpose is the user's ``bwd``; forward mode through it is an
error, as in JAX.

The rules must not close over values being traced by an enclosing transform:
pass such values as arguments.
"""

from __future__ import annotations

import functools

import numpy as np

from functorch_core.ir import Lit, Primitive, Tracer
from functorch_core.ir import primitives as P
from functorch_core.ir.pytree import tree_flatten, tree_map, tree_structure, tree_unflatten
from functorch_core.ir.tables import Table

from .._internal.random_scope import fill
from .._internal.tracing import fn_name, leaf_aval
from .batching import BatchRule, batch_graph, moveaxis
from .common import Transformed, cached, drop_writes, signature, trace_for_transform
from .jvp import JvpRule, Zero, differentiable, instantiate, is_zero, tangent_aval
from .transpose import TransposeRule, is_linear
from .vmap import vmap

JVP_RULES: Table[Primitive, JvpRule] = Table("custom.py: jvp")
TRANSPOSE_RULES: Table[Primitive, TransposeRule] = Table("custom.py: transpose")
BATCH_RULES: Table[Primitive, BatchRule] = Table("custom.py: batching")
NOT_BATCHED_REASONS: Table[Primitive, str] = Table("custom.py: not batched")


class _Rule:
    """A user's rule with the tree structures it needs; hashable by identity."""

    def __init__(self, kind, fn, in_tree, out_tree, n_args, name, res_tree=None):
        self.kind, self.fn, self.name = kind, fn, name
        self.in_tree, self.out_tree, self.n_args = in_tree, out_tree, n_args
        self.res_tree = res_tree

    def __repr__(self):
        return f"<{self.kind} rule of {self.name}>"


def _user_value(x):
    """What a user's rule sees: tracers and arrays (never an IR literal)."""
    return x.value if isinstance(x, Lit) else x


def _atom(x, aval, what):
    """A rule's output leaf as a value of ``aval`` (Python scalars and arrays converted)."""
    x = _user_value(x)
    got = leaf_aval(x, what)
    if got.shape != aval.shape:
        raise ValueError(f"{what} has shape {got.shape}, but it should have shape {aval.shape}")
    if got.dtype != aval.dtype:
        if not got.weak_type and not isinstance(x, np.ndarray):
            raise TypeError(f"{what} has dtype {got.dtype}, but it should have dtype "
                            f"{aval.dtype}")
        return P.convert.bind(x, new_dtype=aval.dtype) if isinstance(x, Tracer) \
            else Lit(np.asarray(x, dtype=aval.dtype))
    return Lit(np.asarray(x)) if not isinstance(x, Tracer) else x


def _flat_like(tree, value, what):
    leaves, got = tree_flatten(value)
    if got != tree:
        raise TypeError(f"{what} has structure {got}, but it should have structure {tree}")
    return leaves


def _no_closure_tangents(tangents, n, name):
    if any(not is_zero(t) for t in tangents[n:]):
        raise ValueError(f"{name} closes over a value that is being differentiated; pass that "
                         "value as an argument instead")


def _bind_custom(prim, self, args, kind, make_params):
    what = f"{kind}({self.name})"
    leaves, _, sig = signature(self.fun, args, {}, what)

    def build():
        traced = drop_writes(trace_for_transform(self.fun, args, {}, what))
        params = make_params(tree_structure(args), traced.out_tree, len(leaves))
        return Transformed(traced.graph, traced.out_tree, traced.captured, params)

    entry = cached(self.fun, (kind, *self.rules()), sig, build)
    outs = prim.bind(*leaves, *fill(entry.captured), graph=entry.graph, name=self.name,
                     **entry.extra)
    return tree_unflatten(entry.out_tree, outs)


class custom_jvp:
    """Give a function a hand-written forward-mode rule (reverse mode follows from it).

    Args:
        fun: the function; its positional arguments are arrays or pytrees of them.

    Define the rule with ``@f.defjvp``: ``rule(primals, tangents)`` receives two
    tuples (one entry per argument) and returns ``(output, output_tangent)``.
    The rule must be linear in the tangents for reverse mode to work.

    Example::

        >>> @custom_jvp
        ... def log1pexp(x):
        ...     return np.log1p(np.exp(x))
        >>> @log1pexp.defjvp
        ... def _(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return log1pexp(x), t / (1 + np.exp(-x))
        >>> grad(log1pexp)(100.0)
        array(1.)
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun, self.jvp, self.name = fun, None, fn_name(fun)

    def defjvp(self, jvp):
        """Register ``jvp(primals, tangents) -> (out, tangent_out)``; returns ``jvp``."""
        self.jvp = jvp
        return jvp

    def rules(self):
        return (self.jvp,)

    def __call__(self, *args):
        if self.jvp is None:
            raise TypeError(f"custom_jvp({self.name}) has no jvp rule; define one with "
                            f"@{self.name}.defjvp")

        def params(in_tree, out_tree, n):
            return {"jvp": _Rule("custom_jvp", self.jvp, in_tree, out_tree, n, self.name)}
        return _bind_custom(P.custom_jvp_call, self, args, "custom_jvp", params)


class custom_vjp:
    """Give a function a hand-written reverse-mode rule.

    Args:
        fun: the function; its positional arguments are arrays or pytrees of them.

    Define the rule with ``f.defvjp(fwd, bwd)``: ``fwd(*args)`` returns
    ``(output, residuals)`` (residuals: any pytree of arrays), and
    ``bwd(residuals, cotangent)`` returns a tuple with one cotangent per
    argument (``None`` for zero). Forward mode (``jvp``, ``jacfwd``) through
    the function is an error.

    Example::

        >>> @custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (np.clip(g, -1, 1),))
        >>> grad(lambda x: 3 * clip_gradient(x))(2.0)
        array(1.)
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun, self.fwd, self.bwd, self.name = fun, None, None, fn_name(fun)

    def defvjp(self, fwd, bwd):
        """Register ``fwd(*args) -> (out, residuals)`` and ``bwd(residuals, g) -> cotangents``."""
        self.fwd, self.bwd = fwd, bwd

    def rules(self):
        return (self.fwd, self.bwd)

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp({self.name}) has no rule; define one with "
                            f"{self.name}.defvjp(fwd, bwd)")

        def params(in_tree, out_tree, n):
            return {"fwd": _Rule("custom_vjp fwd", self.fwd, in_tree, out_tree, n, self.name),
                    "bwd": _Rule("custom_vjp bwd", self.bwd, in_tree, out_tree, n, self.name)}
        return _bind_custom(P.custom_vjp_call, self, args, "custom_vjp", params)


@custom_jvp
def _stop(x):
    return x


@_stop.defjvp
def _stop_jvp(primals, tangents):
    """A symbolic zero tangent (what depends on it alone is not differentiated at all), and
    the value stopped again, so that an enclosing derivative stops there too."""
    (x,), _ = primals, tangents
    return _stop(x), Zero(tangent_aval(leaf_aval(x, "stop_gradient")))


def stop_gradient(x):
    """Return ``x`` unchanged, but with zero derivative (a pytree of arrays is fine).

    Args:
        x: an array, scalar or pytree of them.

    Example::

        >>> grad(lambda x: x * stop_gradient(x))(3.0)
        array(3.)
    """
    return tree_map(lambda v: _stop(v) if differentiable(leaf_aval(v, "stop_gradient"))
                    else v, x)


# --- jvp rules --------------------------------------------------------------------------

def _custom_jvp_call_jvp(primals, tangents, *, graph, jvp, name):
    n = jvp.n_args
    _no_closure_tangents(tangents, n, f"custom_jvp({name})")
    ts = [_user_value(instantiate(t)) for t in tangents[:n]]
    xs = [_user_value(x) for x in primals[:n]]
    result = jvp.fn(tuple(tree_unflatten(jvp.in_tree, xs)), tuple(tree_unflatten(jvp.in_tree, ts)))
    if not isinstance(result, tuple) or len(result) != 2:
        raise TypeError(f"custom_jvp({name}): the jvp rule must return a pair "
                        "(output, output_tangent)")
    avals = graph.out_avals
    what = f"custom_jvp({name}): the jvp rule's"
    outs = [_atom(o, av, f"{what} output") for o, av in
            zip(_flat_like(jvp.out_tree, result[0], f"{what} output"), avals, strict=True)]
    touts = [t if is_zero(t) and t.aval == tangent_aval(av) else
             _atom(t, tangent_aval(av), f"{what} tangent") for t, av in
             zip(_flat_like(jvp.out_tree, result[1], f"{what} tangent"), avals, strict=True)]
    return outs, touts


def _custom_vjp_call_jvp(primals, tangents, *, graph, fwd, bwd, name):
    n = fwd.n_args
    _no_closure_tangents(tangents, n, f"custom_vjp({name})")
    xs = [_user_value(x) for x in primals[:n]]
    result = fwd.fn(*tree_unflatten(fwd.in_tree, xs))
    if not isinstance(result, tuple) or len(result) != 2:
        raise TypeError(f"custom_vjp({name}): fwd must return a pair (output, residuals)")
    what = f"custom_vjp({name}): fwd's output"
    outs = [_atom(o, av, what) for o, av in
            zip(_flat_like(fwd.out_tree, result[0], what), graph.out_avals, strict=True)]
    res_leaves, res_tree = tree_flatten(result[1])
    res = [_atom(r, leaf_aval(r, f"custom_vjp({name}): a residual"), "a residual")
           for r in res_leaves]
    lin = _Rule("custom_vjp", bwd.fn, bwd.in_tree, bwd.out_tree, n, name, res_tree)
    touts = P.custom_lin.bind(*res, *(instantiate(t) for t in tangents[:n]), n_res=len(res),
                              bwd=lin, out_avals=tuple(tangent_aval(a) for a in graph.out_avals))
    return outs, touts


def _custom_lin_jvp(primals, tangents, *, n_res, bwd, out_avals):
    if any(not is_zero(t) for t in tangents[:n_res]):
        raise NotImplementedError(f"differentiating the residuals of {bwd} (a derivative of a "
                                  "custom_vjp function's derivative) is not supported")
    params = {"n_res": n_res, "bwd": bwd, "out_avals": out_avals}
    lin = [instantiate(t) for t in tangents[n_res:]]
    return (P.custom_lin.bind(*primals, **params),
            P.custom_lin.bind(*primals[:n_res], *lin, **params))


def _custom_lin_transpose(cts, *operands, n_res, bwd, out_avals):
    if any(is_linear(r) for r in operands[:n_res]):
        raise NotImplementedError(f"transpose of {bwd}: its residuals depend on the tangents")
    residuals = tree_unflatten(bwd.res_tree, [_user_value(r) for r in operands[:n_res]])
    got = bwd.fn(residuals, tree_unflatten(bwd.out_tree, [_user_value(c) for c in cts]))
    args = tree_unflatten(bwd.in_tree, list(operands[n_res:]))
    if not isinstance(got, tuple | list) or len(got) != len(args):
        raise TypeError(f"custom_vjp({bwd.name}): bwd must return a tuple with one cotangent "
                        f"per argument ({len(args)}), got {type(got).__name__}"
                        + (f" of length {len(got)}" if isinstance(got, tuple | list) else ""))
    out = []
    for k, (ct, arg) in enumerate(zip(got, args, strict=True)):
        arg_leaves, arg_tree = tree_flatten(arg)
        what = f"custom_vjp({bwd.name}): bwd's cotangent for argument {k}"
        ct_leaves = [None] * len(arg_leaves) if ct is None else _flat_like(arg_tree, ct, what)
        for c, a in zip(ct_leaves, arg_leaves, strict=True):
            keep = c is not None and is_linear(a) and differentiable(a.aval)
            out.append(_atom(c, a.aval, what) if keep else None)
    return [None] * n_res + out


JVP_RULES.register(P.custom_jvp_call, _custom_jvp_call_jvp)
JVP_RULES.register(P.custom_vjp_call, _custom_vjp_call_jvp)
JVP_RULES.register(P.custom_lin, _custom_lin_jvp)
TRANSPOSE_RULES.register(P.custom_lin, _custom_lin_transpose)


# --- batching rules: batch the body, run the user's rules under vmap -----------------------

def _batched_body(graph, args, dims, n, name):
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError(f"vmap of {name}: the function closes over a batched value; "
                                  "pass it as an argument instead")
    size = next(leaf_aval(x, name).shape[d] for x, d in zip(args, dims, strict=True)
                if d is not None)
    moved = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    in_dims = [None if d is None else 0 for d in dims]
    bgraph, captured = batch_graph(graph, in_dims, size, [0] * len(graph.outputs),
                                   name=f"vmap({name})")
    assert not captured, "a closed graph cannot capture"
    return moved, in_dims[:n], bgraph


def _vmap(fn, in_dims):
    return vmap(fn, in_dims=in_dims, out_dims=0)


def _custom_jvp_call_batch(args, dims, *, graph, jvp, name):
    moved, in_dims, bgraph = _batched_body(graph, args, dims, jvp.n_args, name)
    arg_dims = tree_unflatten(jvp.in_tree, in_dims)

    def rule(primals, tangents):
        return _vmap(jvp.fn, (arg_dims, arg_dims))(primals, tangents)

    batched = _Rule("custom_jvp", rule, jvp.in_tree, jvp.out_tree, jvp.n_args, name)
    outs = P.custom_jvp_call.bind(*moved, graph=bgraph, jvp=batched, name=name)
    return outs, [0] * len(outs)


def _custom_vjp_call_batch(args, dims, *, graph, fwd, bwd, name):
    moved, in_dims, bgraph = _batched_body(graph, args, dims, fwd.n_args, name)
    arg_dims = tuple(tree_unflatten(fwd.in_tree, in_dims))

    def fwd_batched(*xs):
        return _vmap(fwd.fn, arg_dims)(*xs)

    def bwd_batched(res, g):
        cts = _vmap(bwd.fn, (0, 0))(res, g)
        out = []
        for ct, d in zip(cts, arg_dims, strict=True):
            if ct is None:
                out.append(None)
                continue
            leaves, tree = tree_flatten(ct)
            dleaves = tree_flatten(d, is_leaf=lambda v: v is None)[0]
            dleaves = dleaves * len(leaves) if len(dleaves) == 1 else dleaves
            out.append(tree_unflatten(tree, [c if dd is not None
                                             else P.reduce_sum.bind(c, axes=(0,))
                                             for c, dd in zip(leaves, dleaves, strict=True)]))
        return tuple(out)

    params = {"fwd": _Rule("custom_vjp fwd", fwd_batched, fwd.in_tree, fwd.out_tree,
                           fwd.n_args, name),
              "bwd": _Rule("custom_vjp bwd", bwd_batched, bwd.in_tree, bwd.out_tree,
                           bwd.n_args, name)}
    outs = P.custom_vjp_call.bind(*moved, graph=bgraph, name=name, **params)
    return outs, [0] * len(outs)


BATCH_RULES.register(P.custom_jvp_call, _custom_jvp_call_batch)
BATCH_RULES.register(P.custom_vjp_call, _custom_vjp_call_batch)
NOT_BATCHED_REASONS.register(P.custom_lin, (
    "custom_lin (the tangent of a custom_vjp function) is only "
    "evaluated by forward-mode differentiation, which custom_vjp "
    "functions do not support"))
