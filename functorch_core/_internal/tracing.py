"""Tracing user functions over pytrees: the first step of every transform."""

from __future__ import annotations

import functools
import operator
import sys
from dataclasses import dataclass

import numpy as np

from functorch_core.ir import (
    AbstractArray,
    Graph,
    Tracer,
    aval_of,
    check_graph,
    current_trace,
    dtypes,
    trace_flat,
)
from functorch_core.ir.core import on_device
from functorch_core.ir.pytree import PyTreeDef, leaf_paths, tree_flatten, tree_unflatten

from . import random_guard
from .signatures import positional_names
from .trace_errors import explain


def fn_name(fn) -> str:
    """How an error names a user's callable: its qualified name, ``partial(name)``, or the
    class of a callable object (a Module's repr would print the whole model)."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if isinstance(name, str):
        return name
    if isinstance(fn, functools.partial):
        return f"partial({fn_name(fn.func)})"
    return type(fn).__name__


_ARRAY_AVALS: dict = {}   # (shape, dtype) -> AbstractArray; avals are immutable


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def check_leaf(leaf, what: str):
    """Refuse what no array of the type system can stand for (``what`` names the leaf)."""
    if isinstance(leaf, int) and not isinstance(leaf, bool | Tracer) \
            and not INT64_MIN <= leaf <= INT64_MAX:
        raise OverflowError(
            f"{what} is the Python int {leaf}, outside int64 (the dtype a Python int takes): "
            f"the allowed range is [-2**63, 2**63 - 1]; pass a float, or a NumPy array of "
            "a dtype that holds it")
    # a masked array exists only once numpy.ma is imported: never import it here (numpy
    # imports it lazily, and an import in one thread hangs a child forked meanwhile)
    ma = sys.modules.get("numpy.ma")
    if ma is not None and isinstance(leaf, ma.MaskedArray):
        raise TypeError(
            f"{what} is a numpy.ma.MaskedArray; the transforms compute on plain arrays and "
            "would silently drop its mask. Pass x.filled(value) or np.asarray(x.data) and "
            "the mask as a separate boolean array")
    if isinstance(leaf, np.matrix):
        raise TypeError(
            f"{what} is a numpy.matrix, whose `*` and `**` are matrix products; the "
            "transforms trace plain arrays, where they are elementwise, so the answer would "
            "silently differ. Pass np.asarray(x) and write matrix products with `@`")
    if isinstance(leaf, np.ndarray | np.generic) and leaf.dtype not in _NATIVE_SUPPORTED:
        try:
            dtypes.canonical(leaf.dtype)
        except TypeError:
            raise TypeError(dtypes.unsupported_message(
                leaf.dtype, f"{what} (shape {leaf.shape})")) from None


_NATIVE_SUPPORTED = frozenset(dtypes.SUPPORTED)


def native_leaves(leaves: list) -> list:
    """``leaves`` with non-native byte order arrays (``>f8``) copied to native order.

    The same list when there are none; one copy per distinct array otherwise.
    """
    out = None
    for i, x in enumerate(leaves):
        if isinstance(x, np.ndarray) and not x.dtype.isnative:
            if out is None:
                out, copies = list(leaves), {}
            if id(x) not in copies:
                copies[id(x)] = x.astype(x.dtype.newbyteorder("="))
            out[i] = copies[id(x)]
    return leaves if out is None else out


def leaf_aval(leaf, what: str) -> AbstractArray:
    """The abstract value of an argument leaf, or a clear TypeError."""
    if type(leaf) is np.ndarray:
        av = _ARRAY_AVALS.get((leaf.shape, leaf.dtype))
        if av is None:
            check_leaf(leaf, what)
            av = aval_of(leaf)
            if len(_ARRAY_AVALS) < 4096:
                _ARRAY_AVALS[(leaf.shape, leaf.dtype)] = av
        return av
    if isinstance(leaf, Tracer):
        return leaf.aval
    if on_device(leaf):
        return aval_of(leaf)
    if isinstance(leaf, bool | int | float | complex | np.ndarray | np.generic):
        check_leaf(leaf, what)
        av = aval_of(leaf)
        dtypes.canonical(av.dtype)
        return av
    refusal = getattr(type(leaf), "not_a_value", None)    # e.g. x[mask] with a traced mask
    if refusal is not None:
        raise refusal(leaf)
    raise TypeError(f"{what} is a {type(leaf).__name__}, not an array, a scalar or a pytree of "
                    "them; mark it static (static_argnums) if it is configuration")


def argnums_tuple(argnums, fname, what="static_argnums") -> tuple[int, ...]:
    """``argnums`` (an int or a sequence of ints) as a tuple of ints, or a clear TypeError."""
    nums = (argnums,) if not isinstance(argnums, tuple | list) else tuple(argnums)
    try:
        if any(isinstance(a, bool) for a in nums):
            raise TypeError
        return tuple(operator.index(a) for a in nums)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be an int or a tuple of ints, got "
                        f"{argnums!r}") from None


def normalize_argnums(argnums, nargs, fname, what="static_argnums") -> tuple[int, ...]:
    out = []
    for a in argnums_tuple(argnums, fname, what):
        if not -nargs <= a < nargs:
            raise ValueError(f"{fname}: {what}={argnums} is out of range for a call with "
                             f"{nargs} positional arguments")
        if a % nargs in out:
            raise ValueError(f"{fname}: {what}={argnums} names positional argument "
                             f"{a % nargs} twice; list each argument once")
        out.append(a % nargs)
    return tuple(out)


@dataclass
class Traced:
    """A traced call: the graph, the structure of its inputs and outputs."""

    graph: Graph
    captured: list            # outer tracers passed as the graph's extra inputs
    in_tree: PyTreeDef
    out_tree: PyTreeDef
    mutated: tuple = ()       # argument leaves written in place (see trace_for_transform)


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
        # which outer value each input stands for (vmap.is_batched follows them out)
        current_trace().input_sources = leaves
        dyn_args, kw = tree_unflatten(in_tree, tracers)
        try:
            out = fn(*merge_static(dyn_args, static, len(args)), **kw)
        except (TypeError, AttributeError, ValueError) as e:
            explain(e, fn, fname, args, static_argnums)
            raise
        out_leaves, out_tree = tree_flatten(out)
        for leaf in out_leaves:
            leaf_aval(leaf, f"an output leaf of {fname}")
        out_tree_cell.append(out_tree)
        return out_leaves

    if current_trace() is not None:         # an enclosing trace watches numpy.random
        graph, captured = trace_flat(flat_fn, avals, name=fname)
    else:
        watch = random_guard.Watch(fn, [v for _, v in static])
        graph, captured = trace_flat(flat_fn, avals, name=fname)
        if watch.moved():
            out_tree_cell.clear()
            graph, captured = watch.confirm(
                lambda: trace_flat(flat_fn, avals, name=fname), fname)
    check_graph(graph)
    return Traced(graph, captured, in_tree, out_tree_cell[0])


def flat_args(args, kwargs, static_argnums, fn=None, what=None):
    """The leaves and structure of the non-static arguments.

    With ``what`` (the call, as errors name it), every leaf is checked (``check_leaf``),
    the offending one named by its path (``params['w1']``, ``args[1][0]``).
    """
    dyn, _ = split_static(args, static_argnums)
    leaves, tree = tree_flatten((dyn, kwargs))
    if what is not None:
        for i, x in enumerate(leaves):
            if (type(x) is not np.ndarray or x.dtype not in _NATIVE_SUPPORTED) \
                    and type(x) is not float:
                check_leaf(x, _LazyPath(fn, tree, i, static_argnums, len(args), what))
    return leaves, tree


class _LazyPath:
    """``f'argument {path} of {what}'``, computed only when an error formats it."""

    def __init__(self, fn, tree, i, static_argnums, nargs, what):
        self.args = (fn, tree, i, static_argnums, nargs, what)

    def __format__(self, spec):
        fn, tree, i, nums, nargs, what = self.args
        return f"argument {arg_paths(fn, tree, nums, nargs)[i]} of {what}"

    __str__ = __repr__ = lambda self: format(self)


def arg_paths(fn, in_tree, static_argnums, nargs) -> list[str]:
    """Each leaf of the ``(dynamic args, kwargs)`` tree named as the user wrote it.

    A positional argument is named by its parameter (``params['w1']``) when ``fn``'s
    signature names it, else ``args[i]``; a keyword argument by its name.
    """
    names = positional_names(fn, nargs)
    dyn = [i for i in range(nargs) if i not in static_argnums]
    out = []
    args_td, kw_td = in_tree.children
    for j, td in enumerate(args_td.children):
        head = names[dyn[j]]
        out += [head + p for p in leaf_paths(td)]
    for key, td in zip(kw_td.aux, kw_td.children, strict=True):
        out += [str(key) + p for p in leaf_paths(td)]
    return out


def unflatten_out(traced: Traced, outs):
    return tree_unflatten(traced.out_tree, outs)


