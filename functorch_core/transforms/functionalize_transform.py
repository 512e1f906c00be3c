"""The user-facing ``functionalize`` transform: the pass of ``functionalize.py`` run
on a traced call, cached like the other transforms, with the writes into the caller's
arrays applied after the graph ran."""

from __future__ import annotations

import functools

import numpy as np

from functorch_core.ir.pytree import tree_unflatten

from .._internal.tracing import fn_name, trace_call
from .common import Transformed, cached, run_transformed, signature
from .functionalize import check_writable, functionalize_graph, input_plan, with_plan, write_back

_REMOVE = ("mutations", "mutations_and_views")


def _own_outputs(outs, leaves):
    arrays = [x for x in leaves if isinstance(x, np.ndarray)]
    owned = []
    for o in outs:
        if isinstance(o, np.ndarray) and any(np.may_share_memory(o, a) for a in arrays + owned):
            o = o.copy()
        owned.append(o)
    return owned


def functionalize(func, *, remove="mutations"):
    """Run ``func`` as a pure graph: no mutation, writes to its inputs applied afterwards.

    ``func`` may write into arrays in place (``x[i] = v``, ``x += y``,
    ``np.add(a, b, out=c)``, ``np.copyto``, ``x.fill``, ``np.add.at``) and
    through views (slices, ``reshape`` where NumPy returns a view, ``.T``,
    ``squeeze``...). The returned function traces ``func``, runs the alias
    analysis and rewrites every write into pure updates, so
    ``make_graph(functionalize(f))(...)`` shows a graph without mutation.
    Results equal NumPy's eager execution of ``func``, and every argument
    ``func`` writes into ends up as eager execution would leave it: the graph
    returns the final value of each such input as an extra output, which is
    copied into the caller's array after the whole graph ran (a failing call
    writes nothing). Arguments that share memory (the same array twice, a
    view and its base) are detected at call time and handled exactly.

    Under an enclosing trace the write-back is itself recorded, as one
    whole-array ``setitem`` per mutated argument at the end: the only
    mutation left in ``make_graph(functionalize(f))`` is that write-back, and
    only when ``f`` writes into its own arguments.

    Args:
        func: a function of arrays (pytrees of arrays), written with NumPy or
            ``functorch_core.numpy``.
        remove (str, default ``'mutations'``): ``'mutations'`` or
            ``'mutations_and_views'``. After functionalization no value is
            ever written, so layout primitives (``slice``, ``reshape``...) have
            plain value semantics in the graph either way and the graphs of the
            two modes are the same. The modes differ in what the call returns:
            with ``'mutations'`` a result may share memory with an argument, as
            the NumPy view it stands for would; with ``'mutations_and_views'``
            every result is a fresh array that shares memory with no argument
            and no other result.

    Returns:
        A function with ``func``'s signature and results.

    Example::

        >>> def f(x):
        ...     y = x[1:]          # a view
        ...     y *= 2             # writes into x
        ...     return x.sum()
        >>> x = np.arange(3.0)
        >>> functionalize(f)(x), x
        (array(6.), array([0., 2., 4.]))
        >>> print(make_graph(functionalize(f))(np.arange(3.0)))
        graph(a:f64[3]) {
          b:f64[2] = slice[start_indices=(1,), limit_indices=(3,), strides=(1,)] a
          c:f64[2] = mul b 2.0:f64~
          d:f64[3] = dynamic_update_slice a c 1:i64
          e:f64[] = reduce_sum[axes=(0,)] d
          _ = setitem[indexer=(('slice', 0, 3, 1),)] a d
          return e
        }

    The last line is the write-back of ``x``; a function that writes only into
    arrays it creates has no ``setitem`` left at all.
    """
    if remove not in _REMOVE:
        raise ValueError(f"functionalize: remove must be one of {_REMOVE}, got {remove!r}")
    name = fn_name(func)

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        leaves, _, key = signature(func, args, kwargs, f"functionalize({name})")
        plan = input_plan(leaves, f"functionalize({name})")

        def build():
            traced = trace_call(with_plan(func, plan), args, kwargs, (), name=name)
            graph, mutated = functionalize_graph(traced.graph, plan)
            return Transformed(graph, traced.out_tree, traced.captured, extra=mutated)

        entry = cached(func, ("functionalize",), (key, plan), build)
        targets = list(leaves) + list(entry.captured)
        check_writable(targets, entry.extra, f"functionalize({name})")
        outs = run_transformed(entry, targets)
        n = len(outs) - len(entry.extra)
        write_back(targets, entry.extra, outs[n:])
        results = outs[:n]
        if remove == "mutations_and_views":
            results = _own_outputs(results, leaves)
        return tree_unflatten(entry.out_tree, results)

    return functionalized


__all__ = ["functionalize"]
