"""Plumbing shared by the transforms: trace once per signature, cache, replay.

A transform wraps ``func``; each call flattens the arguments, looks up the
transformed graph for (func, transform, options, input signature), builds it
on a miss (trace ``func``, rewrite the graph), and replays it on the actual
leaves with ``ir.eval_graph``: eagerly on arrays, or into an enclosing trace.
Writes the function makes into its own arguments are carried out of the graph
as extra outputs and applied to the caller's arrays after the call
(``run_writing``), as ``jit`` and ``functionalize`` do.

The cache lives beside the function object (weakly), so a training loop that
writes ``grad(loss)(params, batch)`` every step traces ``loss`` once.
Closed-over arrays are part of the key by identity: rebinding a global or a
closure cell to a new array traces again instead of reusing a stale constant.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from functorch_core.backends import profiling
from functorch_core.backends.devices import maybe_present
from functorch_core.ir import Graph, current_trace, eval_graph, passes
from functorch_core.ir.core import on_device
from functorch_core.ir.pytree import PyTreeDef

from .._internal import autocast, axis_env, matmul_precision
from .._internal.random_scope import FRESH_KEY, Scope, fill
from .._internal.tracing import Traced, arg_paths, flat_args, fn_name, leaf_aval, trace_call
from ..devices import placement
from .functionalize import (
    check_writable,
    functionalize_graph,
    has_mutation,
    input_plan,
    with_plan,
    write_back,
)

_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_UNCACHEABLE: dict = {}   # functions that cannot be weakly referenced: never cached


@dataclass
class Transformed:
    """A transformed graph and what replaying it needs."""

    graph: Graph
    out_tree: PyTreeDef
    captured: list = field(default_factory=list)   # outer tracers, extra graph inputs
    extra: object = None                           # anything else the transform keeps
    label: str = ""                                # "grad(loss)": its profiler event
    mutated: tuple = ()     # argument leaves written in place; their final values are the
    #                         outputs right after the out_tree's leaves


def _closure_arrays(fn) -> tuple:
    fn = getattr(fn, "__func__", fn)
    cells = getattr(fn, "__closure__", None) or ()
    values = [c.cell_contents for c in cells if _cell_filled(c)]
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is not None and glob is not None:
        values += [glob[n] for n in code.co_names if n in glob]
    return tuple(id(v) for v in values if isinstance(v, np.ndarray) or on_device(v))


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def clear_transform_caches():
    """Forget every transformed graph (``functorch_core.clear_caches``)."""
    _CACHES.clear()


def _cache_for(fn) -> dict:
    try:
        return _CACHES.setdefault(fn, {})
    except TypeError:
        return _UNCACHEABLE


def signature(fn, args, kwargs, what) -> tuple[list, PyTreeDef, tuple]:
    """(leaves, in_tree, key) of a call; the key identifies its input signature."""
    leaves, in_tree = flat_args(args, kwargs, (), fn, what)
    if maybe_present():     # GPU arrays may exist: one call's arrays on one device
        placement(leaves, lambda: arg_paths(fn, in_tree, (), len(args)), what)
    avals = tuple(leaf_aval(x, f"an argument leaf of {what}") for x in leaves)
    # how the arguments overlap in memory decides what writes into them mean
    return leaves, in_tree, (in_tree, in_tree.orders, avals, _closure_arrays(fn),
                             input_plan(leaves, what))


def cached(fn, transform_key, sig_key, build) -> Transformed:
    """The Transformed for (fn, transform_key, sig_key), built on a miss by ``build()``."""
    cache = _cache_for(fn)
    # psum's rules read vmap's axes, products the matmul precision, autocast's policies
    key = (transform_key, sig_key, axis_env.current(), matmul_precision.current(),
           autocast.current())
    entry = cache.get(key) if cache is not _UNCACHEABLE else None
    if entry is None:
        label = f"{transform_key[0]}({fn_name(fn)})"
        with profiling.span(f"transform {label}", "transform"):
            entry = build()
        entry.label = label
        if all(c is FRESH_KEY for c in entry.captured) and cache is not _UNCACHEABLE:
            cache[key] = entry
    return entry


def trace_for_transform(fn, args, kwargs, name, scope=None) -> Traced:
    """Trace ``fn`` and prepare the graph for a transform (calls inlined, functionalized).

    A write into one of ``fn``'s own argument leaves becomes an extra output: the
    graph returns ``fn``'s outputs, then the final value of every leaf listed in
    ``traced.mutated`` (in order). A transform keeps those outputs primal (no
    tangents, no cotangents) and writes them back into the caller's arrays
    (``run_writing``), so the arguments end up as an eager call leaves them.
    Draws from the global random generator become inputs listed first in
    ``traced.captured`` as ``FRESH_KEY`` (see ``_internal.random_scope``); ``scope`` is vmap's.
    """
    leaves = flat_args(args, kwargs, ())[0]
    plan = input_plan(leaves, name)
    with scope or Scope(name, "fresh"), profiling.span("trace", "trace"):
        traced = trace_call(with_plan(fn, plan), args, kwargs, (), name=name)
    n_keys = len(traced.graph.inputs) - len(leaves) - len(traced.captured)
    traced.captured = [FRESH_KEY] * n_keys + traced.captured
    traced.graph = passes.inline(traced.graph)
    if has_mutation(traced.graph):
        graph, mutated = functionalize_graph(traced.graph, plan)
        if mutated and mutated[-1] >= len(leaves):
            raise NotImplementedError(
                f"{name}: the function writes into an array it closes over from the enclosing "
                "traced function; a transform cannot carry that write out. Pass the array "
                "as an argument and return its new value")
        traced.graph, traced.mutated = graph, tuple(mutated)
    return traced


def drop_writes(traced: Traced) -> Traced:
    """``traced`` with the final values of written arguments dropped: the writes stay
    local to the call (custom_jvp/custom_vjp bodies, whose rules return values only)."""
    if traced.mutated:
        graph = traced.graph
        graph.outputs = graph.outputs[:len(graph.outputs) - len(traced.mutated)]
        traced.graph, traced.mutated = passes.dce(graph), ()
    return traced


def replay(entry: Transformed, leaves):
    """Run the transformed graph on the actual leaves (or record it into a trace)."""
    return eval_graph(entry.graph, list(leaves) + fill(entry.captured))


def run_transformed(entry: Transformed, inputs):
    """``eval_graph(entry.graph, inputs)``: an eager call is one profiler event."""
    if profiling.recorder is None or current_trace() is not None:
        return eval_graph(entry.graph, inputs)
    with profiling.span(entry.label, "eager"):
        return eval_graph(entry.graph, inputs)


def run_writing(entry: Transformed, leaves, inputs, what):
    """``run_transformed(entry, inputs)``, then the function's writes into its argument
    ``leaves`` applied to them (into the enclosing trace when there is one); returns the
    outputs without the written values. Nothing is written when the call fails."""
    if not entry.mutated:
        return run_transformed(entry, inputs)
    mutated = check_writable(leaves, entry.mutated, what, scalars="rebind")
    flat = run_transformed(entry, inputs)
    n, k = entry.out_tree.num_leaves, len(entry.mutated)
    finals = dict(zip(entry.mutated, flat[n:n + k], strict=True))
    write_back(leaves, mutated, [finals[i] for i in mutated])
    return flat[:n] + flat[n + k:]
