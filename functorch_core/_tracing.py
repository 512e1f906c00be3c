"""Tracing user functions over pytrees: the first step of every transform."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ir import AbstractArray, Graph, Tracer, aval_of, check_graph, dtypes, trace_flat
from ir.pytree import PyTreeDef, tree_flatten, tree_unflatten


def fn_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


_ARRAY_AVALS: dict = {}   # (shape, dtype) -> AbstractArray; avals are immutable


def leaf_aval(leaf, what: str) -> AbstractArray:
    """The abstract value of an argument leaf, or a clear TypeError."""
    if type(leaf) is np.ndarray:
        av = _ARRAY_AVALS.get((leaf.shape, leaf.dtype))
        if av is None:
            av = aval_of(leaf)
            if len(_ARRAY_AVALS) < 4096:
                _ARRAY_AVALS[(leaf.shape, leaf.dtype)] = av
        return av
    if isinstance(leaf, Tracer):
        return leaf.aval
    if isinstance(leaf, bool | int | float | complex | np.ndarray | np.generic):
        av = aval_of(leaf)
        dtypes.canonical(av.dtype)
        return av
    raise TypeError(f"{what} is a {type(leaf).__name__}, not an array, a scalar or a pytree of "
                    "them; mark it static (static_argnums) if it is configuration")


def normalize_argnums(argnums, nargs, fname, what="static_argnums") -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out = []
    for a in nums:
        a = operator.index(a)
        if not -nargs <= a < nargs:
            raise ValueError(f"{fname}: {what}={argnums} is out of range for a call with "
                             f"{nargs} positional arguments")
        out.append(a % nargs)
    return tuple(out)


@dataclass
class Traced:
    """A traced call: the graph, the structure of its inputs and outputs."""

    graph: Graph
    captured: list            # outer tracers passed as the graph's extra inputs
    in_tree: PyTreeDef
    out_tree: PyTreeDef


def split_static(args, static_argnums):
    dyn = tuple(a for i, a in enumerate(args) if i not in static_argnums)
    static = tuple((i, args[i]) for i in static_argnums)
    return dyn, static


def merge_static(dyn, static, nargs):
    out, it, static = [], iter(dyn), dict(static)
    for i in range(nargs):
        out.append(static[i] if i in static else next(it))
    return out


def trace_call(fn, args, kwargs, static_argnums=(), *, name=None) -> Traced:
    """Trace ``fn(*args, **kwargs)`` with the non-static leaves abstract."""
    fname = name or fn_name(fn)
    dyn, static = split_static(args, static_argnums)
    leaves, in_tree = tree_flatten((dyn, kwargs))
    avals = [leaf_aval(x, f"an argument leaf of {fname}") for x in leaves]
    out_tree_cell: list[PyTreeDef] = []

    def flat_fn(*tracers):
        dyn_args, kw = tree_unflatten(in_tree, tracers)
        out = fn(*merge_static(dyn_args, static, len(args)), **kw)
        out_leaves, out_tree = tree_flatten(out)
        for leaf in out_leaves:
            leaf_aval(leaf, f"an output leaf of {fname}")
        out_tree_cell.append(out_tree)
        return out_leaves

    graph, captured = trace_flat(flat_fn, avals, name=fname)
    check_graph(graph)
    return Traced(graph, captured, in_tree, out_tree_cell[0])


def flat_args(args, kwargs, static_argnums):
    dyn, _ = split_static(args, static_argnums)
    return tree_flatten((dyn, kwargs))


def unflatten_out(traced: Traced, outs):
    return tree_unflatten(traced.out_tree, outs)


