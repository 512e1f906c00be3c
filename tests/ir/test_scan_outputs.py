"""ir.passes.scan_outputs: stacked scan outputs that are an xs operand or an earlier output are
read from there, with the values of the loop that built them; and the cpu backend's
scans write their stacked outputs into reused memory."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

try:
    import resource
except ImportError:     # not on Windows
    resource = None

from functorch_core.ir import passes
from functorch_core.ir import primitives as P
from functorch_core.ir.passes.scan_outputs import forward_scan_outputs

import functorch_core as fc
from functorch_core import lax
from functorch_core.testing import check_grads


def _f(c, xs):
    def body(c, x):
        y = c * x + 1.0
        return y, (x, y, y, c)        # an xs slice, a duplicate, the carry in
    return lax.scan(body, c, xs)


def _scans(graph):
    return [e for e in graph.eqns if e.prim is P.scan]


def test_xs_slices_and_duplicates_leave_the_loop():
    c, xs = np.full(2, 0.5), np.linspace(-1, 1, 12).reshape(6, 2)
    graph = fc.make_graph(_f)(c, xs)
    before = _scans(passes.inline(graph))
    after = _scans(forward_scan_outputs(passes.inline(graph)))
    assert len(before[0].params["body"].outputs) == 5
    assert len(after[0].params["body"].outputs) == 3      # carry, y, c
    want = _f(c, xs)
    for backend in ("cpu", "interpreter"):
        got = fc.jit(_f, backend=backend)(c, xs)
        for g, w in zip(fc.tree_leaves(got), fc.tree_leaves(want), strict=True):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[1][0], xs)


def test_reverse_scans_and_grads_keep_their_values():
    xs = np.linspace(0.1, 1, 20).reshape(10, 2)

    def loss(w, xs):
        def body(h, x):
            h = np.tanh(w * h + x)
            return h, (h, x, h)
        h, (hs, xs2, hs2) = lax.scan(body, np.zeros(2), xs, reverse=True)
        return (hs * hs2).sum() + (xs2 * hs).sum() + h.sum()
    w = np.float64(0.7)
    check_grads(loss, (w, xs), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(fc.jit(fc.grad(loss))(w, xs), fc.grad(loss)(w, xs),
                               rtol=1e-12)


def test_a_graph_without_forwardable_outputs_is_returned_as_is():
    graph = passes.inline(fc.make_graph(lambda c, xs: lax.scan(lambda c, x: (c + x, c * x),
                                                               c, xs))(1.0, np.ones(3)))
    assert forward_scan_outputs(graph) is graph


def _rnn_loss(w, u, xs):
    def body(h, x):
        h = np.tanh(h @ w + x @ u)
        return h, h * h
    h, hs = lax.scan(body, np.zeros((64, 256), np.float32), xs)
    return hs.sum() + h.sum()


def _rnn_args(seed):
    rng = np.random.default_rng(seed)
    w, u = (rng.standard_normal((256, 256)).astype(np.float32) * 0.05 for _ in range(2))
    return w, u, rng.standard_normal((50, 64, 256)).astype(np.float32)


@pytest.mark.skipif(resource is None or not sys.platform.startswith("linux"),
                    reason="minor page faults are counted on Linux")
def test_a_grads_residuals_touch_no_new_pages_after_the_first_call():
    """The stacked residuals (here ~13 MB) go straight into the reused arena, and the
    hoisted input products into buffers kept between calls: a page fault per 4 kB of
    fresh memory on every call cost an LSTM's grad a fifth of its time."""
    f = fc.jit(fc.grad(_rnn_loss, argnums=(0, 1)))
    args = _rnn_args(0)
    f(*args)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    f(*args)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert faults < 50 * 64 * 256 * 4 * 3 // 4096 // 4, faults


def test_threads_calling_one_scan_at_once_keep_their_own_buffers():
    f = fc.jit(fc.grad(_rnn_loss, argnums=(0, 1)))
    inputs = [_rnn_args(s) for s in range(4)]
    want = [f(*a) for a in inputs]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: [f(*inputs[i % 4]) for _ in range(3)], range(8)))
    for i, runs in enumerate(got):
        for g in runs:
            for a, b in zip(g, want[i % 4], strict=True):
                np.testing.assert_array_equal(a, b)
