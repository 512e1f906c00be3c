"""Checks the backend tests share: a compiled graph against the interpreter, the inputs a
run must leave alone, and the reduction graph the summation-bound tests build."""

from __future__ import annotations

import numpy as np
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import primitives as P
from graph_builder import Builder


def assert_like_the_interpreter(run, graph, args, tol):
    """``run(args)`` against ``run_graph(graph, args)``: same dtypes and shapes; values bit
    for bit where ``tol(dtype)`` is None, else within ``tol`` (relative and absolute; NaN
    matches NaN). Returns the run's outputs."""
    got = run(list(args))
    with np.errstate(all="ignore"):
        want = run_graph(graph, list(args))
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        t = tol(w.dtype)
        if t is None:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=t, atol=t, equal_nan=True)
    return got


def assert_inputs_kept_and_outputs_fresh(args, before, got):
    """The run wrote into no input, and no output shares memory with one."""
    for a, c in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, c)
    for g in got:
        assert not any(np.shares_memory(g, a) for a in args)


def sums_and_products(dtype, shape=(5, 33, 7)):
    """reduce_sum and reduce_prod of one input over each axis, two axes and all three."""
    b = Builder()
    x = b.input(shape, dtype)
    return b.graph(*(b(p, x, axes=axes) for p in (P.reduce_sum, P.reduce_prod)
                     for axes in ((0,), (1,), (2,), (0, 2), (0, 1, 2))))
