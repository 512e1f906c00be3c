"""The cuda backend's buffer plan (``planning.buffers``) under numba-cuda's simulator.

Skipped when numba-cuda is not installed; the simulator is switched on for the whole
process when this module is imported (numba reads ``NUMBA_ENABLE_CUDASIM`` at import).
Simulator limits: kernels run as Python threads over NumPy arrays, so only small shapes.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if os.environ["NUMBA_ENABLE_CUDASIM"] != "1":
    pytest.skip("numba.cuda was imported without the simulator", allow_module_level=True)

from functorch_core.backends import registry
from functorch_core.backends.cuda import runtime
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.planning import buffers
from functorch_core.backends.planning.plan import Blas, Fallback
from functorch_core.ir import primitives as P
from graph_builder import Builder, stage_chain

CUDA = registry.get("cuda")


def _intermediates(plan):
    """Slots a step writes that are neither inputs, constants nor results."""
    kept = set(range(plan.n_inputs)) | set(plan.consts) | {
        r[1] for r in plan.outputs if r[0] == "slot"}
    written = set().union(*(buffers.step_slots(s)[1] for s in plan.steps))
    return written - kept


def _check_calls(run, graph, args, calls=3):
    want = run_graph(graph, list(args))
    first = [np.array(g, copy=True) for g in run(list(args))]
    kept = run(list(args))
    for _ in range(calls):
        got = run(list(args))
        for g, w, f, k in zip(got, want, first, kept, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(g, f)
            # a result of an earlier call is never memory a later call writes
            np.testing.assert_array_equal(k, f)
            assert not np.shares_memory(g, k)


def test_a_chain_reuses_intermediate_buffers():
    graph = stage_chain(4, (8, 5))
    run = CUDA.compile(graph)
    plan = runtime.sources(graph)[0]
    slots = _intermediates(plan)
    assert set(run.arena_offsets) == slots and len(slots) >= 6
    # fewer distinct buffers than intermediate slots, and less memory than one each
    assert len(set(run.arena_offsets.values())) < len(slots)
    sizes = [buffers.nbytes(*plan.slots[s]) for s in slots]
    assert run.arena_bytes < sum(-(-n // 256) * 256 for n in sizes)
    _check_calls(run, graph, [np.random.default_rng(0).standard_normal((8, 5))])


def test_products_and_host_steps_between_arena_buffers():
    """A product and a host equation read and write intermediates of the arena."""
    b = Builder()
    x, w = b.input((6, 4), np.float64), b.input((4, 3), np.float64)
    h = b(P.tanh, b(P.mul, x, x))
    z = b(P.dot_general, h, w, dimension_numbers=(((1,), (0,)), ((), ())))
    c = b(P.cumsum, b(P.neg, z), axis=0, reverse=False)
    graph = b.graph(b(P.add, b(P.exp, c), b(P.exp, z)))
    run = CUDA.compile(graph)
    plan = runtime.sources(graph)[0]
    assert any(isinstance(s, Blas) for s in plan.steps)
    if not any(isinstance(s, Fallback) for s in plan.steps):
        pytest.skip("cumsum now renders to a kernel: no host step left in this graph")
    assert _intermediates(plan) == set(run.arena_offsets)
    rng = np.random.default_rng(1)
    _check_calls(run, graph, [rng.standard_normal((6, 4)), rng.standard_normal((4, 3))])


def test_a_graph_without_intermediates_has_an_empty_arena():
    b = Builder()
    x = b.input((3,), np.float32)
    graph = b.graph(b(P.add, x, x))
    run = CUDA.compile(graph)
    assert run.arena_offsets == {} and run.arena_bytes == 0
    _check_calls(run, graph, [np.arange(3, dtype=np.float32)])
