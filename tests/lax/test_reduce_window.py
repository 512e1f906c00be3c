"""reduce_window and pooling: a loop reference, the first-max tie rule, derivatives, vmap,
the cpu backend, errors."""

import itertools
import warnings

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.planning.plan import Fallback
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import assume, given
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core import lax
from functorch_core.testing import check_grads

IDENTITY = {"add": 0, "max": -np.inf, "min": np.inf}
REDUCE = {"add": np.sum, "max": np.max, "min": np.min}


def reference(x, kind, window, strides, pads, base, wdil):
    """Loops over the output positions; padding and dilation holes hold the identity."""
    fill = IDENTITY[kind]
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        fill = {"add": 0, "max": info.min, "min": info.max}[kind]
    dilated = [(d - 1) * b + 1 for d, b in zip(x.shape, base)]
    padded = [d + lo + hi for d, (lo, hi) in zip(dilated, pads)]
    xp = np.full(padded, fill, x.dtype)
    xp[tuple(slice(lo, lo + d, b) for (lo, _), d, b in zip(pads, dilated, base))] = x
    span = [(w - 1) * d + 1 for w, d in zip(window, wdil)]
    out_sp = [(p - s) // st + 1 for p, s, st in zip(padded, span, strides)]
    out = np.empty(out_sp, x.dtype)
    for pos in itertools.product(*map(range, out_sp)):
        sl = tuple(slice(p * st, p * st + (w - 1) * d + 1, d)
                   for p, st, w, d in zip(pos, strides, window, wdil))
        out[pos] = REDUCE[kind](xp[sl])
    return out


@st.composite
def window_problems(draw):
    nd = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 5)) for _ in range(nd)]
    window = [draw(st.integers(1, 3)) for _ in range(nd)]
    strides = [draw(st.integers(1, 3)) for _ in range(nd)]
    base = [draw(st.integers(1, 2)) for _ in range(nd)]
    wdil = [draw(st.integers(1, 2)) for _ in range(nd)]
    pads = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd)]
    for d, b, (lo, hi), w, wd in zip(shape, base, pads, window, wdil):
        assume((d - 1) * b + 1 + lo + hi >= (w - 1) * wd + 1)
    return shape, window, strides, pads, base, wdil


@given(window_problems(), st.sampled_from(["add", "max", "min"]),
       st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.complex128]),
       st.integers(0, 2 ** 32 - 1))
def test_reduce_window_matches_a_loop_reference(prob, kind, dtype, seed):
    shape, window, strides, pads, base, wdil = prob
    assume(not (kind != "add" and np.dtype(dtype).kind == "c"))
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, shape) if np.dtype(dtype).kind == "i" else rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    x = x.astype(dtype)
    init = 0 if kind == "add" else IDENTITY[kind]
    if np.dtype(dtype).kind == "i" and kind != "add":
        init = np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max
    got = lax.reduce_window(x, init, kind, window, strides, pads, base, wdil)
    want = reference(x, kind, window, strides, pads, base, wdil)
    assert got.dtype == x.dtype
    tol = 1e-2 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)

    def f(x):
        return lax.reduce_window(x, init, kind, window, strides, pads, base, wdil)
    native = fc.jit(f, backend="cpu")(x)
    if np.dtype(dtype).kind in "iu" or kind != "add" or dtype == np.float16:
        np.testing.assert_array_equal(native, got)      # exact: same order or no rounding
    else:
        np.testing.assert_allclose(native, got, rtol=1e-6, atol=1e-6)


def test_max_tangent_is_the_first_maximum_in_the_window():
    x = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    t = np.array([10.0, 20.0, 30.0, 40.0, 50.0])

    def f(x):
        return lax.reduce_window(x, -np.inf, "max", (3,), (1,))
    _, tout = fc.jvp(f, (x,), (t,))
    np.testing.assert_array_equal(tout, [20.0, 20.0, 30.0])
    np.testing.assert_array_equal(fc.grad(lambda x: f(x).sum())(x), [0, 2, 1, 0, 0])
    g = fc.grad(lambda x: lax.reduce_window(x, np.inf, "min", (2,), (1,)).sum())
    np.testing.assert_array_equal(g(np.array([2.0, 2.0, 1.0, 1.0])), [1, 0, 2, 0])
    # a NaN is the max (np.max propagates it): the first NaN in the window is selected
    x = np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, 2.0, 5.0, 5.0]])
    pool = fc.grad(lambda x: lax.max_pool(x, (2, 2)).sum())
    np.testing.assert_array_equal(pool(x), [[0, 1, 0, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(fc.jit(pool, backend="cpu")(x), pool(x))


CASES = [
    ("max", (2, 2), (2, 2), ((0, 1), (1, 0)), (1, 1), (1, 1)),
    ("min", (3, 2), (1, 2), ((1, 1), (0, 1)), (2, 1), (1, 2)),
    ("add", (3, 2), (2, 1), ((1, 2), (0, 1)), (2, 1), (1, 2)),
]


def _window_fn(case):
    kind, window, strides, pads, base, wdil = case
    return lambda x: lax.reduce_window(x, IDENTITY[kind], kind, window, strides, pads, base,
                                       wdil)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_check_grads_order_two_both_modes(case):
    x = np.random.default_rng(0).normal(size=(5, 6))
    check_grads(_window_fn(case), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_matches_loop_and_stack(case, axis):
    x = np.random.default_rng(1).normal(size=(5, 6))
    xs = np.stack([x + i for i in range(3)], axis)
    f = _window_fn(case)
    want = np.stack([f(np.take(xs, i, axis)) for i in range(3)])
    np.testing.assert_allclose(fc.vmap(f, in_axes=axis)(xs), want, rtol=1e-12)
    g = fc.grad(lambda x: (f(x) ** 2).sum())
    want = np.stack([g(np.take(xs, i, axis)) for i in range(3)])
    np.testing.assert_allclose(fc.vmap(g, in_axes=axis)(xs), want, rtol=1e-12)
    np.testing.assert_allclose(fc.jit(fc.vmap(g, in_axes=axis), backend="cpu")(xs), want,
                               rtol=1e-12)


@pytest.mark.parametrize("select", ["max", "min"])
def test_select_primitives_batch_over_both_operands(select):
    rng = np.random.default_rng(2)
    params = dict(select=select, window_dimensions=(2, 3), window_strides=(1, 2),
                  padding=((1, 0), (0, 1)), base_dilation=(1, 1), window_dilation=(2, 1))
    x, t = rng.normal(size=(3, 4, 5)), rng.normal(size=(4, 5, 3))
    ct = rng.normal(size=(3, 3, 2))

    def gather(t, x):
        return P.select_and_gather_add.bind(t, x, **params)

    def scatter(c, x):
        return P.select_and_scatter_add.bind(c, x, **params)
    for f, first, axes in [(gather, t, (2, 0)), (scatter, ct, (0, 0)), (gather, t, (2, None)),
                           (scatter, ct[0], (None, 0))]:
        second = x if axes[1] is not None else x[1]
        want = np.stack([f(first if axes[0] is None else np.take(first, i, axes[0]),
                           second if axes[1] is None else np.take(second, i, 0))
                         for i in range(3)])
        np.testing.assert_allclose(fc.vmap(f, in_axes=axes)(first, second), want, rtol=1e-12)


def _select_graph(prim, first_shape, x_shape, dtype, t_dtype, params):
    b = Builder()
    first, x = b.input(first_shape, t_dtype), b.input(x_shape, dtype)
    return b.graph(b(prim, first, x, **params))


def _select_values(rng, shape, dtype):
    """Few distinct values (ties), some NaN for floats, extremes for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(-2, 3, shape).astype(dtype)
    if dtype.kind == "f":
        x[rng.random(shape) < 0.15] = np.nan
        x[rng.random(shape) < 0.1] = -np.inf
    elif x.size:
        info = np.iinfo(dtype)
        x.flat[rng.integers(0, x.size)] = info.min
    return x


@given(window_problems(), st.sampled_from(["max", "min"]),
       st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int32, np.uint8,
                        np.bool_]),
       st.sampled_from([np.float16, np.float32, np.float64, np.complex64]),
       st.integers(0, 2 ** 32 - 1))
def test_select_primitives_native_match_the_interpreter_bit_for_bit(prob, select, dtype,
                                                                    t_dtype, seed):
    """Both max/min-pool derivative primitives lower natively (no fallback) and give the
    interpreter's bits: ties (first wins), NaN (first NaN wins), padding, both dilations,
    overlapping windows (strides below the window: additions in the interpreter's order)."""
    shape, window, strides, pads, base, wdil = prob
    params = dict(select=select, window_dimensions=tuple(window),
                  window_strides=tuple(strides), padding=tuple(map(tuple, pads)),
                  base_dilation=tuple(base), window_dilation=tuple(wdil))
    rng = np.random.default_rng(seed)
    x = _select_values(rng, shape, dtype)
    gather = _select_graph(P.select_and_gather_add, shape, shape, dtype, t_dtype, params)
    out_shape = gather.outputs[0].aval.shape
    scatter = _select_graph(P.select_and_scatter_add, out_shape, shape, dtype, t_dtype, params)
    t = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(t_dtype) \
        if np.dtype(t_dtype).kind == "c" else rng.normal(size=shape).astype(t_dtype)
    ct = (rng.normal(size=out_shape) * 1e4).astype(t_dtype)
    ct[rng.random(out_shape) < 0.2] = -0.0
    cpu = registry.get("cpu")
    for graph, first in [(gather, t), (scatter, ct)]:
        if 0 in out_shape:
            continue
        exe = cpu.compile(graph)
        assert not [s for s in exe.plan.steps if isinstance(s, Fallback)]
        got, = exe([first, x])
        want, = run_graph(graph, [first, x])
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                      np.ascontiguousarray(want).view(np.uint8))


def test_overlapping_max_pool_gradient_adds_in_the_interpreters_order():
    """Three windows select the same element: its cotangents add in window-tap order, and
    float addition does not associate, so another order gives other bits."""
    x = np.array([0.0, 0.0, 5.0, 0.0, 0.0], np.float32)
    ct = np.array([1e8, -1e8, 1.0], np.float32)
    params = dict(select="max", window_dimensions=(3,), window_strides=(1,),
                  padding=((0, 0),), base_dilation=(1,), window_dilation=(1,))
    graph = _select_graph(P.select_and_scatter_add, (3,), (5,), np.float32, np.float32,
                          params)
    want, = run_graph(graph, [ct, x])
    got, = registry.get("cpu").compile(graph)([ct, x])
    np.testing.assert_array_equal(got, want)
    assert want[2] == 0 and (ct[0] + ct[1]) + ct[2] == 1     # tap order, not window order


def test_max_pool_reverse_mode_materialises_no_one_hot():
    x = np.random.default_rng(3).normal(size=(2, 3, 8, 8))
    graph = fc.make_graph(fc.grad(lambda x: lax.max_pool(x, (2, 2)).sum()))(x)
    prims = {e.prim.name for e in graph.eqns}
    assert "select_and_scatter_add" in prims
    assert not prims & {"eq", "select", "scatter_add", "gather"}
    assert all(np.prod(v.aval.shape) <= x.size for e in graph.eqns for v in e.outputs)


def test_pooling_helpers():
    x = np.random.default_rng(4).normal(size=(2, 3, 5, 4))
    got = lax.max_pool(x, (2, 2), (1, 2), padding=1)
    want = reference(x, "max", (1, 1, 2, 2), (1, 1, 1, 2), ((0, 0), (0, 0), (1, 1), (1, 1)),
                     (1,) * 4, (1,) * 4)
    np.testing.assert_array_equal(got, want)
    pads = ((0, 0), (0, 0), (1, 1), (0, 1))
    total = reference(x, "add", (1, 1, 3, 2), (1, 1, 2, 1), pads, (1,) * 4, (1,) * 4)
    counts = reference(np.ones_like(x), "add", (1, 1, 3, 2), (1, 1, 2, 1), pads, (1,) * 4,
                       (1,) * 4)
    np.testing.assert_allclose(lax.avg_pool(x, (3, 2), (2, 1), padding=[1, (0, 1)]),
                               total / 6, rtol=1e-12)
    np.testing.assert_allclose(lax.avg_pool(x, (3, 2), (2, 1), padding=[1, (0, 1)],
                                            count_include_pad=False), total / counts,
                               rtol=1e-12)
    check_grads(lambda x: lax.avg_pool(x, (3, 2), (2, 1), padding=[1, (0, 1)],
                                       count_include_pad=False), (x,), order=1)
    assert lax.max_pool(x, (2, 2), padding="SAME").shape == (2, 3, 3, 2)


def test_init_value_bounds_max_and_min():
    x = np.array([-3.0, -1.0, -2.0, 5.0])
    np.testing.assert_array_equal(lax.reduce_window(x, 0.0, np.maximum, (2,), (2,)), [0, 5])
    np.testing.assert_array_equal(lax.reduce_window(x, 0.0, "min", (2,), (2,)), [-3, -2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # -inf is no bound for integers either
        ints = lax.max_pool(np.arange(8).reshape(2, 4), (2,))
    np.testing.assert_array_equal(ints, [[1, 3], [5, 7]])
    assert ints.dtype == np.arange(1).dtype


def test_errors_name_the_function_the_argument_and_the_shapes():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"reduce_window_sum: window_dimensions \(4, 1\).*larger "
                                         r"than the padded input \(3, 4\)"):
        lax.reduce_window(x, 0.0, "add", (4, 1), (1, 1))
    with pytest.raises(ValueError, match=r"window_strides \(1,\) should have 2 entries"):
        lax.reduce_window(x, 0.0, "add", (2, 1), (1,))
    with pytest.raises(ValueError, match="computation 'mul' is not supported"):
        lax.reduce_window(x, 1.0, "mul", (2, 1), (1, 1))
    with pytest.raises(ValueError, match="'add' takes init_value 0"):
        lax.reduce_window(x, 1.0, "add", (2, 1), (1, 1))


@pytest.mark.parametrize("output_size", [(3, 4), (7, 5), (1, 1), (2,)])
def test_adaptive_pooling_uses_pytorchs_windows(output_size):
    x = np.random.default_rng(5).normal(size=(2, 3, 7, 10))
    k = len(output_size)
    avg, mx = np.empty(x.shape[:-k] + output_size), np.empty(x.shape[:-k] + output_size)
    for idx in itertools.product(*map(range, output_size)):
        box = tuple(slice(i * n // o, -(-(i + 1) * n // o))
                    for i, n, o in zip(idx, x.shape[-k:], output_size))
        avg[(..., *idx)] = x[(..., *box)].mean(axis=tuple(range(-k, 0)))
        mx[(..., *idx)] = x[(..., *box)].max(axis=tuple(range(-k, 0)))
    np.testing.assert_allclose(lax.adaptive_avg_pool(x, output_size), avg, rtol=1e-12)
    np.testing.assert_array_equal(lax.adaptive_max_pool(x, output_size), mx)
    f = fc.jit(lambda x: lax.adaptive_avg_pool(x, output_size), backend="cpu")
    np.testing.assert_allclose(f(x), avg, rtol=1e-12)
    check_grads(lambda x: lax.adaptive_max_pool(x, output_size), (x[:1, :1],), order=1)
    with pytest.raises(ValueError, match=r"adaptive_avg_pool: output_size \(0,\)"):
        lax.adaptive_avg_pool(x, (0,))
