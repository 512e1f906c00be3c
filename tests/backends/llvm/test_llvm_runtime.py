"""The jit call path and the cpu backend's runtime: the dispatch fast path and the arena.

The fast path (``Jitted.__call__`` keyed on positional arrays, scalars and plain
containers of them) must give
exactly what the general path gives and must step aside whenever the general path's
signature would differ (aliasing, layout, writes into arguments, tracing). The arena
(intermediates in memory reused across calls) must never change a result: not across
repeated calls, not between threads, not through a result the caller mutates.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import engine, entries, runtime
from functorch_core.backends.planning import buffers
from functorch_core.backends.planning.plan import Fallback, Sort
from functorch_core.ir import primitives as P
from functorch_core.ir.pytree import tree_flatten
from graph_builder import Builder, stage_chain
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.api import _fast_key

CPU = registry.get("cpu")
Pair = namedtuple("Pair", "a b")


def counting(fn):
    """``fn`` and a list that grows by one each time it is traced."""
    traces = []

    def f(*args):
        traces.append(1)
        return fn(*args)
    return f, traces


def slow(jitted):
    """The same jitted function with its fast path switched off."""
    jitted._fast = None
    return jitted


def arena_memory(exe):
    return [b for s, b in enumerate(exe.new_arena()) if s in exe.arena_offsets]


# -- the fast-path key ---------------------------------------------------------------

def key_of(args):
    found = _fast_key(args)
    return None if found is None else found[0]


def test_fast_key_covers_plain_arrays_and_python_scalars():
    a, b = np.ones((2, 3), np.float32), np.zeros(3)
    assert key_of((a, b, 1.0, 2, True, 1j)) == \
        ((2, 3), a.dtype, (3,), b.dtype, float, int, bool, complex)
    assert key_of(()) == ()
    assert key_of((a,)) != key_of((a.astype(np.float64),))
    assert key_of((1.0,)) != key_of((1,))


def test_fast_key_leaves_follow_tree_flatten():
    a, b, c = np.ones(2), np.zeros((1, 3), np.float32), np.arange(4)
    args = ({"w": a, "b": [b, 2.0], "c": None}, (c,), 1)
    key, leaves = _fast_key(args)
    want, _ = tree_flatten(args)
    assert len(leaves) == len(want) and all(x is y for x, y in zip(leaves, want, strict=True))
    assert key != key_of(({"w": a, "b": (b, 2.0), "c": None}, (c,), 1))     # list vs tuple
    assert key != key_of(({"w": a, "b": [b, 2.0]}, (c,), 1))                  # keys differ
    assert key != key_of(({"w": a, "b": [b, 2.0], "c": None}, c, 1))          # nesting differs
    assert key_of(([a, b],)) != key_of((a, b))


@pytest.mark.parametrize("args", [
    lambda a, b: (a, a),                         # the same array twice
    lambda a, b: ([a], {"x": a}),                # the same array twice, inside pytrees
    lambda a, b: (a[:1], b),                     # a view next to another array
    lambda a, b: ({"v": a[:1], "w": b},),        # the same, inside a dict
    lambda a, b: (a.T,),                         # not C-contiguous
    lambda a, b: ([a.T],),                       # not C-contiguous, inside a list
    lambda a, b: (np.float32(1),),               # a NumPy scalar
    lambda a, b: (np.float64(1),),               # a float subclass, but not weakly typed
    lambda a, b: (a, 2 ** 63),                   # an int that int64 cannot hold
    lambda a, b: (a.view(np.matrix),),           # an ndarray subclass
    lambda a, b: (OrderedDict(x=a),),            # a dict subclass
    lambda a, b: (Pair(a, b),),                  # a namedtuple
])
def test_fast_key_steps_aside(args):
    a, b = np.ones((2, 2)), np.ones(2)
    assert _fast_key(args(a, b)) is None


def test_a_single_view_argument_is_fast():
    base = np.arange(12.0)
    assert key_of((base[2:6],)) == ((4,), base.dtype)


# -- fast path == general path ---------------------------------------------------------

DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_)]
SHAPES = [(), (1,), (4,), (2, 3), (3, 1, 2)]


@st.composite
def call_args(draw):
    """Two arguments: arrays, Python scalars, one array twice, or views of one buffer."""
    shape = draw(st.sampled_from(SHAPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))

    def array(dtype):
        return (rng.standard_normal(shape) * 3).astype(dtype)

    kind = draw(st.sampled_from(["arrays", "scalar", "same", "views", "strided"]))
    dx, dy = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    if kind == "arrays":
        return array(dx), array(dy)
    if kind == "scalar":
        scalar = draw(st.sampled_from([1.5, -2, True, 0.25 + 1j]))
        return (array(dx), scalar) if draw(st.booleans()) else (scalar, array(dx))
    if kind == "same":
        x = array(dx)
        return x, x
    if kind == "views":
        buf = (rng.standard_normal(2 * max(1, int(np.prod(shape)))) * 3).astype(dx)
        n = int(np.prod(shape))
        return buf[:n].reshape(shape), buf[1:n + 1].reshape(shape)
    x = np.repeat(array(dx)[..., None], 2, axis=-1)[..., 0]
    return x, array(dy)


def _same(got, want):
    assert type(got) is type(want)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@given(call_args())
def test_fast_and_general_paths_agree(args):
    def f(x, y):
        return x * y + x, y - 1
    fast, general = fc.jit(f), slow(fc.jit(f))
    for _ in range(3):          # the first call compiles, later ones may take the fast path
        got, want = fast(*args), general(*args)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    with np.errstate(all="ignore"):
        eager = f(*args)
    for g, e in zip(got, eager, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)


def test_fast_path_serves_repeated_calls_without_retracing():
    f, traces = counting(lambda x, y: x * 2.0 + y)
    jf = fc.jit(f)
    x, y = np.ones(4, np.float32), np.arange(4, dtype=np.float32)
    for _ in range(5):
        np.testing.assert_array_equal(jf(x, y), x * 2.0 + y)
    assert len(traces) == 1 and len(jf._fast) == 1


@pytest.mark.parametrize("change", ["shape", "dtype", "same array", "strided", "scalar kind"])
def test_retraces_when_the_signature_changes(change):
    f, traces = counting(lambda x, y: x * y)
    jf = fc.jit(f)
    x, y = np.arange(6.0).reshape(2, 3), np.full((2, 3), 2.0)
    jf(x, y)
    jf(x, y)
    new = {"shape": (x.reshape(3, 2), y.reshape(3, 2)),
           "dtype": (x.astype(np.float32), y),
           "same array": (x, x),
           "strided": (np.repeat(x, 2, axis=1)[:, ::2], y),
           "scalar kind": (x, 2)}[change]
    got = jf(*new)
    assert len(traces) == 2
    np.testing.assert_array_equal(got, new[0] * new[1])
    assert np.asarray(got).dtype == np.result_type(*new)


def test_writes_into_arguments_land_on_every_call_fast_path_or_not():
    def bump(x, y):
        x += y
        return x * 2
    jf = fc.jit(bump)
    x, y = np.zeros(3), np.ones(3)
    for i in range(1, 4):
        np.testing.assert_array_equal(jf(x, y), np.full(3, 2.0 * i))
        np.testing.assert_array_equal(x, np.full(3, float(i)))
    a = np.ones(3)
    jf(a, a)                        # x and y are one array: eager NumPy doubles it
    np.testing.assert_array_equal(a, np.full(3, 2.0))


def test_read_only_destination_is_refused_on_every_call():
    def bump(x):
        x += 1
        return x
    jf, x = fc.jit(bump), np.zeros(2)
    jf(x)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        jf(x)


def test_fast_path_is_not_taken_under_a_trace():
    jf = fc.jit(lambda x: np.sin(x) * x)
    x = np.linspace(0.0, 1.0, 5)
    jf(x)
    jf(x)
    g = fc.grad(lambda x: jf(x).sum())(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-12)
    v = fc.vmap(jf)(np.stack([x, 2 * x]))
    np.testing.assert_allclose(v, np.sin(np.stack([x, 2 * x])) * np.stack([x, 2 * x]))


def test_kwargs_and_static_arguments_still_work():
    jf = fc.jit(lambda x, n, *, scale=1.0: x * n * scale, static_argnums=1)
    x = np.ones(2)
    assert jf._fast is None
    np.testing.assert_array_equal(jf(x, 3, scale=2.0), np.full(2, 6.0))
    jg = fc.jit(lambda x, *, scale=1.0: x * scale)
    jg(x)
    np.testing.assert_array_equal(jg(x, scale=3.0), np.full(2, 3.0))
    np.testing.assert_array_equal(jg(x), np.ones(2))


@given(st.integers(0, 2 ** 16), st.sampled_from(["dict", "list", "nested", "scalar"]))
def test_pytree_arguments_through_the_fast_path(seed, kind):
    rng = np.random.default_rng(seed)
    w, b, x = (rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (2,), (4, 3)))
    params = {"dict": {"w": w, "b": b}, "list": [w, b], "nested": {"layer": [(w, b)]},
              "scalar": {"w": w, "b": b, "scale": 0.5}}[kind]

    def f(p, x):
        w, b = {"dict": lambda: (p["w"], p["b"]), "list": lambda: p,
                "nested": lambda: p["layer"][0], "scalar": lambda: (p["w"], p["b"])}[kind]()
        scale = p["scale"] if kind == "scalar" else 1.0
        return {"y": np.tanh(x @ w + b) * scale, "n": (w * w).sum()}

    fast, general = fc.jit(f), slow(fc.jit(f))
    for _ in range(3):
        got, want = fast(params, x), general(params, x)
        for key in ("y", "n"):
            _same(got[key], want[key])
    assert len(fast._fast) == 1
    np.testing.assert_allclose(got["y"], f(params, x)["y"], rtol=1e-5)


def test_pytree_results_through_the_fast_path():
    jf = fc.jit(lambda x: {"a": x + 1, "b": (x * 2, x - 1)})
    x = np.arange(3.0)
    jf(x)
    out = jf(x)
    np.testing.assert_array_equal(out["a"], x + 1)
    np.testing.assert_array_equal(out["b"][1], x - 1)


def test_results_never_alias_arguments_or_each_other():
    jf = fc.jit(lambda x: (x, x + 0.0, x + 0.0))
    x = np.arange(3.0)
    for _ in range(2):
        a, b, c = jf(x)
        assert not np.shares_memory(a, x)
        assert not np.shares_memory(b, c)


# -- the arena --------------------------------------------------------------------------

@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 8), st.integers(0, 4)),
                min_size=0, max_size=12))
def test_plan_arena_never_overlaps_buffers_that_live_together(specs):
    nbytes = {i: n for i, (n, _, _) in enumerate(specs)}
    lifetimes = {i: (first, first + span) for i, (_, first, span) in enumerate(specs)}
    offsets, total = buffers.plan_arena(nbytes, lifetimes, runtime.ARENA_ALIGN)
    for i in nbytes:
        assert offsets[i] % runtime.ARENA_ALIGN == 0
        assert offsets[i] + nbytes[i] <= total
        for j in nbytes:
            (fi, li), (fj, lj) = lifetimes[i], lifetimes[j]
            if i < j and fi <= lj and fj <= li and nbytes[i] and nbytes[j]:
                assert offsets[i] + nbytes[i] <= offsets[j] or \
                    offsets[j] + nbytes[j] <= offsets[i]


def test_plan_arena_reuses_memory_of_dead_buffers():
    offsets, total = buffers.plan_arena({0: 100, 1: 100, 2: 100},
                                        {0: (0, 1), 1: (1, 2), 2: (2, 3)}, runtime.ARENA_ALIGN)
    assert offsets[0] == offsets[2] != offsets[1]
    assert total == 2 * 128


def test_intermediates_share_an_arena_and_results_are_fresh():
    graph = stage_chain(6, (64, 33))
    exe = CPU.compile(graph)
    assert exe.arena_offsets
    sizes = [buffers.nbytes(*exe.plan.slots[s]) for s in exe.arena_offsets]
    assert exe.arena_bytes < sum(-(-n // 64) * 64 for n in sizes)     # memory is shared
    x = np.random.default_rng(0).standard_normal((64, 33))
    want = run_graph(graph, [x])
    first = exe([x])
    arena = arena_memory(exe)
    for _ in range(4):
        got = exe([x])
        for g, w, f in zip(got, want, first, strict=True):
            np.testing.assert_array_equal(g, f)
            np.testing.assert_allclose(g, w, rtol=1e-12)
            assert g.flags.owndata or (g.base is not None and g.base.flags.owndata)
            assert not any(np.shares_memory(g, a) for a in arena)


def test_mutating_a_result_does_not_change_the_next_call():
    graph = stage_chain(3, (8, 5))
    exe = CPU.compile(graph)
    x = np.random.default_rng(1).standard_normal((8, 5))
    first = [r.copy() for r in exe([x])]
    for r in exe([x]):
        r[...] = 12345.0
    for got, want in zip(exe([x]), first, strict=True):
        np.testing.assert_array_equal(got, want)


def test_threads_calling_one_executable_get_their_own_arenas():
    graph = stage_chain(4, (128, 65))
    exe = CPU.compile(graph)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((128, 65)) for _ in range(8)]
    wants = [exe([x]) for x in xs]
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        return [[r.copy() for r in exe([xs[(k + i) % 8]])] for i in range(40)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for k, calls in enumerate(results):
        for i, got in enumerate(calls):
            for g, w in zip(got, wants[(k + i) % 8], strict=True):
                np.testing.assert_array_equal(g, w)


def test_a_sort_and_a_gemm_in_the_middle_of_a_graph():
    b = Builder()
    x = b.input((6, 4), np.float64)
    w = b.input((4, 4), np.float64)
    y = b(P.mul, x, x)
    s, = b(P.sort, y, dimension=1, num_keys=1)   # a native sort step, into the arena
    z = b(P.dot_general, s, w, dimension_numbers=(((1,), (0,)), ((), ())))   # BLAS
    out = b(P.add, b(P.exp, z), y)
    graph = b.graph(out, b(P.reduce_sum, z, axes=(0,)))
    exe = CPU.compile(graph)
    assert not any(isinstance(st_, Fallback) for st_ in exe.plan.steps)
    sort_step = next(st_ for st_ in exe.plan.steps if isinstance(st_, Sort))
    assert {sort_step.outputs[0], sort_step.scratch} <= set(exe.arena_offsets)
    rng = np.random.default_rng(3)
    for _ in range(3):
        args = [rng.standard_normal((6, 4)), rng.standard_normal((4, 4))]
        want = run_graph(graph, args)
        for g, ww in zip(exe(args), want, strict=True):
            np.testing.assert_allclose(g, ww, rtol=1e-12)


def test_jit_of_a_big_intermediate_chain_repeats_exactly():
    def f(x):
        y = np.tanh(x) * x
        z = np.exp(-y) + y.sum(axis=0)
        return z * 2.0, y.max()
    jf = fc.jit(f)
    x = np.random.default_rng(4).standard_normal((300, 70)).astype(np.float32)
    first = [np.copy(r) for r in jf(x)]
    for _ in range(3):
        for g, w in zip(jf(x), first, strict=True):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(first[0], f(x)[0], rtol=2e-6)


def test_small_kernel_graphs_run_as_one_native_call_and_big_ones_do_not():
    small = CPU.compile(stage_chain(3, (8, 5)))
    assert small.entry is not None or not entries.graph_entry_supported()
    b = Builder()
    x = b.input((1 << 19,), np.float32)
    big = CPU.compile(b.graph(b(P.reduce_sum, b(P.mul, x, x), axes=(0,))))
    assert big.entry is None        # a long kernel releases the GIL through ctypes
    arg = np.linspace(-1, 1, 1 << 19, dtype=np.float32)
    np.testing.assert_allclose(big([arg])[0], np.sum(arg * arg), rtol=1e-5)
    x = np.random.default_rng(5).standard_normal((8, 5))
    want = run_graph(stage_chain(3, (8, 5)), [x])
    for g, w in zip(small([x]), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


# -- one array in, one array out: Executable.trusted_one through Jitted.__call__ -------------

ONE_ARRAY_GRAPHS = {
    "no intermediates": lambda x: x + 1.0,
    "a constant": lambda x: x * np.arange(1.0, 6.0),
    "intermediates in the arena": lambda x: np.exp(np.tanh(x) * 2.0).sum(axis=0) + x[0],
    "a small product": lambda x: np.tanh(x @ x.T) + 1.0,
    "a tuple result": lambda x: (x * 3.0,),
}


@pytest.mark.parametrize("name", list(ONE_ARRAY_GRAPHS))
def test_one_array_calls_agree_with_the_general_path_and_never_alias(name):
    fn = ONE_ARRAY_GRAPHS[name]
    jf, ref = fc.jit(fn), slow(fc.jit(fn))
    x = np.random.default_rng(6).standard_normal((4, 5))
    first = jf(x)
    outs = [jf(x) for _ in range(3)]
    assert len(jf._fast) == 1
    for out in outs:
        for got, want, earlier in zip(tree_flatten(out)[0], tree_flatten(ref(x))[0],
                                      tree_flatten(first)[0], strict=True):
            np.testing.assert_array_equal(got, want)
            assert not np.shares_memory(got, x) and not np.shares_memory(got, earlier)
    assert type(outs[0]) is type(fn(x))


def test_one_array_calls_run_the_native_entry_directly():
    if not entries.graph_entry_supported():
        pytest.skip("no native graph entry on this build")
    jf = fc.jit(lambda x: np.tanh(x) * 2.0 + x.sum())
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    jf(x)
    exe = next(iter(jf.cache.values())).run
    assert exe.trusted_one is not None
    assert jf._fast[(x.shape, x.dtype)][5] is exe.trusted_one
    np.testing.assert_allclose(jf(x), np.tanh(x) * 2.0 + x.sum(), rtol=1e-6, atol=1e-6)


def test_threads_calling_a_one_array_function_get_their_own_arenas():
    jf = fc.jit(lambda x: np.exp(np.tanh(x) * 2.0).sum(axis=0) + x[0])
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((16, 9)) for _ in range(8)]
    wants = [jf(x) for x in xs]
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        return [jf(xs[(k + i) % 8]).copy() for i in range(200)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for k, calls in enumerate(results):
        for i, got in enumerate(calls):
            np.testing.assert_array_equal(got, wants[(k + i) % 8])


def test_a_one_array_call_under_a_trace_is_recorded_not_run():
    jf = fc.jit(lambda x: x + 1.0)
    x = np.ones(3)
    jf(x)
    graph = fc.make_graph(lambda y: jf(x) * y)(np.ones(3))
    assert any(e.prim is P.call for e in graph.eqns)


def test_libm_is_found_without_running_ldconfig(monkeypatch):
    import ctypes.util

    def refuse(name):
        raise AssertionError(f"find_library({name!r}) runs ldconfig in a subprocess")
    monkeypatch.setattr(ctypes.util, "find_library", refuse)
    libm = engine.libm()
    libm.exp.restype, libm.exp.argtypes = ctypes.c_double, [ctypes.c_double]
    assert libm.exp(1.0) == np.exp(1.0)
