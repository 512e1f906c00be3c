"""Native loops on the cpu backend: a loop whose bodies are native graph entries runs as
one native function. References: the interpreter (same graph), Python loops; that no
Python runs per step is checked by counting the calls a profiler sees."""

import os
import sys
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core import lax

pytestmark = pytest.mark.skipif(
    not __import__("functorch_core.backends.llvm.entries", fromlist=["x"]).graph_entry_supported(),
    reason="native graph entries need a release CPython with the GIL")


def _loop_steps(f, *args):
    """The runtime steps of every control-flow equation of ``f``'s compiled graph."""
    from functorch_core.backends.llvm.runtime import compile_graph
    from functorch_core.backends.planning.plan import Loop
    exe = compile_graph(fc.make_graph(f)(*args))
    return [exe.steps[k] for k, s in enumerate(exe.plan.steps) if isinstance(s, Loop)]


def _profiled_calls(f, *args) -> int:
    """How many Python and builtin calls one call of ``f`` makes."""
    count = [0]

    def prof(frame, event, arg):
        if event in ("call", "c_call"):
            count[0] += 1
    sys.setprofile(prof)
    try:
        f(*args)
    finally:
        sys.setprofile(None)
    return count[0]


def _agree(f, *args, rtol=1e-12):
    got = fc.jit(f, backend="cpu")(*args)
    want = fc.jit(f, backend="interpreter")(*args)
    for g, w in zip(fc.tree_leaves(got), fc.tree_leaves(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-13)
    return got


def _rnn(w, xs, h0):
    def cell(h, x):
        h = np.tanh(h @ w + x)
        return h, h.sum()
    return lax.scan(cell, h0, xs)


def _newton(a):
    def body(c):
        x, _ = c
        x_new = x - (x * x * x - a) / (3 * x * x)
        return x_new, np.abs(x_new - x)
    return lax.while_loop(lambda c: c[1] > 1e-12, body, (a + 1.0, np.float64(1.0)))[0]


CASES = {
    "fori": (lambda n: (lambda x: lax.fori_loop(0, n, lambda i, c: c * 0.999 + i, x)),
             lambda n: (np.ones(4),)),
    "rnn_gemm": (lambda n: _rnn, lambda n: (RNG.standard_normal((3, 3)) * 0.5,
                                          RNG.standard_normal((n, 2, 3)), np.zeros((2, 3)))),
    "reverse_scan": (lambda n: (lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c - x), 0.0, xs,
                                                    reverse=True)),
                     lambda n: (np.linspace(0, 1, n),)),
    "while_bounded": (lambda n: (lambda x: lax.while_loop(lambda c: c[0] < 10 ** 6,
                                                          lambda c: (c[0] + 1, np.sin(c[1])),
                                                          (0, x), max_steps=n)),
                      lambda n: (np.ones(3),)),
}
RNG = np.random.default_rng(0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_native_loops_match_the_interpreter_and_run_no_python_per_step(case):
    make, args = CASES[case]
    calls = []
    for n in (5, 200):
        f = make(n)
        _agree(f, *args(n), rtol=1e-10)
        steps = _loop_steps(f, *args(n))
        assert steps and all(s.native for s in steps)
        g = fc.jit(f, backend="cpu")
        a = args(n)
        g(*a)
        calls.append(_profiled_calls(g, *a))
    assert calls[0] == calls[1], f"Python calls grow with the trip count: {calls}"


def test_python_loop_path_is_kept_for_bodies_that_are_not_native():
    # a body holding a loop is no single graph entry: the outer loop stays in Python
    def f(x, xs, w):
        def outer(c, x):      # x @ w: a product of an xs slice and a constant, taken out
            return lax.fori_loop(0, 3, lambda i, v: v * 0.5 + 1.0, c) + x @ w, c.sum()
        return lax.scan(outer, x, xs)
    args = np.ones(2), RNG.standard_normal((4, 3)), RNG.standard_normal((3, 2))
    steps = _loop_steps(f, *args)
    assert [s.native for s in steps] == [False]
    _agree(f, *args)


def test_native_while_with_data_dependent_trip_counts_and_zero_steps():
    a = np.array(27.0)
    np.testing.assert_allclose(_agree(_newton, a), 3.0, rtol=1e-12)
    assert all(s.native for s in _loop_steps(_newton, a))
    # zero iterations; a condition that is the carry itself (no native step in it)
    def f(b, x):
        return lax.while_loop(lambda c: c[0], lambda c: (c[1].sum() < 4, c[1] * 2.0), (b, x))
    for b in (False, True):
        out = _agree(f, np.bool_(b), np.ones(2))
        assert out[1].tolist() == ([1.0, 1.0] if not b else [4.0, 4.0])
    assert all(s.native for s in _loop_steps(f, np.bool_(True), np.ones(2)))


def test_native_scan_bodies_that_pass_values_through_or_return_literals():
    def f(c0, xs, k):
        def body(c, x):
            a, b = c
            # b passes through; y0 is an input, y1 a literal, y2 a result twice
            z = a * x + k
            return (z, b), (x, np.float32(2.0), z, z)
        return lax.scan(body, c0, xs)
    args = ((np.float32(1.0), np.arange(3, dtype=np.int32)), np.linspace(0, 1, 7, dtype=np.float32),
            np.float32(0.5))
    _agree(f, *args)
    assert all(s.native for s in _loop_steps(f, *args))
    # a body with no native step at all: every result is an input
    def g(c, xs):
        return lax.scan(lambda c, x: (x, c), c, xs)
    out = _agree(g, np.float64(3.0), np.arange(4.0))
    assert out[1].tolist() == [3.0, 0.0, 1.0, 2.0]
    assert all(s.native for s in _loop_steps(g, np.float64(3.0), np.arange(4.0)))


def test_native_loops_are_safe_across_threads():
    w, xs, h0 = RNG.standard_normal((4, 4)) * 0.3, RNG.standard_normal((50, 2, 4)), np.zeros((2, 4))
    f = fc.jit(_rnn, backend="cpu")
    want = fc.jit(_rnn, backend="interpreter")(w, xs, h0)
    errors = []

    def work(scale):
        for _ in range(20):
            got = f(w, xs * scale, h0)
            ref = want if scale == 1 else fc.jit(_rnn, backend="interpreter")(w, xs * scale, h0)
            try:
                np.testing.assert_allclose(got[1], ref[1], rtol=1e-12)
            except AssertionError as e:
                errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


_OPS = [np.sin, np.tanh, lambda v: v * 0.5 + 1.0, lambda v: v * v * 0.25, np.cos]


@given(st.lists(st.integers(0, len(_OPS) - 1), min_size=1, max_size=4),
       st.integers(1, 6), st.booleans(), st.sampled_from(["float64", "float32"]),
       st.integers(0, 3))
def test_random_scan_bodies_native_against_interpreter(ops, n, reverse, dtype, gemm):
    dt = np.dtype(dtype)
    xs = np.linspace(-0.7, 0.7, n * 6).reshape(n, 2, 3).astype(dt)
    w = (np.eye(3) * 0.4 + 0.1).astype(dt)

    def f(c0, xs, w):
        def step(c, x):
            h, i = c
            for k in ops:
                h = _OPS[k](h) + x * dt.type(0.3)
            if gemm:
                h = np.tanh(h @ w) if gemm == 1 else h + (x @ w) * dt.type(0.1)
            return (h, i + 1), (h.sum(axis=0), x)
        return lax.scan(step, c0, xs, reverse=reverse)
    args = ((np.full((2, 3), 0.1, dt), np.int32(0)), xs, w)
    rtol = 1e-5 if dt == np.float32 else 1e-12
    _agree(f, *args, rtol=rtol)
    assert all(s.native for s in _loop_steps(f, *args))


@given(st.lists(st.integers(0, len(_OPS) - 1), min_size=1, max_size=3), st.integers(0, 5),
       st.one_of(st.none(), st.integers(0, 6)))
def test_random_while_bodies_native_against_interpreter(ops, limit, max_steps):
    def f(x):
        def body(c):
            i, v = c
            for k in ops:
                v = _OPS[k](v)
            return i + 1, v
        return lax.while_loop(lambda c: (c[0] < limit) | (c[1].sum() > 1e9), body, (0, x),
                              max_steps=max_steps)
    x = np.array([0.3, -0.2])
    out = _agree(f, x)
    assert int(out[0]) == min(limit, max_steps if max_steps is not None else limit)
    assert all(s.native for s in _loop_steps(f, x))


def test_conds_of_flat_branches_in_loop_bodies_keep_the_loop_native():
    def f(x, xs):
        def body(c, x):
            c = lax.cond(x > 0, lambda v: np.sin(v) + x, lambda v: v * 0.5, c)
            k = (x * 3).astype(np.int32)      # -3..3: switch clamps it to 0..2
            c = lax.switch(k, [lambda v: v + 1.0, lambda v: -v, lambda v: v * v * 0.1], c)
            return c, c.sum()
        return lax.scan(body, x, xs)
    args = np.array([0.2, -0.4]), np.linspace(-1, 1, 9)
    _agree(f, *args)
    assert all(s.native for s in _loop_steps(f, *args))

    def g(x, xs, w):      # a branch with a product stays a jump: the loop is Python-driven
        return lax.scan(lambda c, x: (lax.cond(x > 0, lambda v: v @ w, lambda v: v, c), x),
                        x, xs)
    args = np.array([0.2, -0.4]), np.linspace(-1, 1, 5), np.eye(2) * 0.5
    _agree(g, *args)
    assert [s.native for s in _loop_steps(g, *args)] == [False]


def test_grad_of_a_bounded_while_runs_native_loops():
    def f(a):
        body = lambda c: (c[0] + 1, c[1] - (c[1] ** 3 - a) / (3 * c[1] ** 2))   # noqa: E731
        return lax.while_loop(lambda c: c[0] < 30, body, (0, a + 1.0), max_steps=40)[1]
    a = np.array(8.0)
    grad = fc.grad(f)
    _agree(grad, a)
    np.testing.assert_allclose(fc.jit(grad, backend="cpu")(a), 1 / 12, rtol=1e-10)
    assert all(s.native for s in _loop_steps(grad, a))


@pytest.mark.parametrize("load", [0.0, 64.0])
def test_loops_with_gemms_run_blas_on_one_thread_only_on_a_busy_machine(
        monkeypatch, one_thread_each_entries, load):
    entered = one_thread_each_entries
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    w, xs, h0 = RNG.standard_normal((3, 3)), RNG.standard_normal((4, 2, 3)), np.zeros((2, 3))
    f = fc.jit(lambda w, xs, h0: _rnn(w, xs, h0), backend="cpu")
    f(w, xs, h0)
    assert bool(entered) == (load >= (os.cpu_count() or 1) + 1)
    entered.clear()
    fc.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x), backend="cpu")(np.ones(2))
    assert not entered      # no gemm in the body
