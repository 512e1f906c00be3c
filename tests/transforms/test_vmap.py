"""vmap against loop-and-stack, the in_dims/out_dims API, composition and errors."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from budget import share
from functorch_core.ir import AbstractArray, check_graph, trace_flat
from functorch_core.ir import primitives as P
from functorch_core.ir.pytree import tree_flatten, tree_map
from hypothesis import given, settings
from hypothesis import strategies as st
from op_table import OPS, RTOL
from prim_cases import CASES, dn

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import vmap
from functorch_core.transforms.batching import batch_graph

F64, I64 = np.float64, np.int64

# --- the primitive case table (tests/prim_cases.py) against loop-and-stack ---------------
# ``c.make(rng, m, n, k)`` draws one example's arguments; every argument is an array, so any
# of them may be batched along any of its axes.


def draw_batch(c, rng, size, dims, sizes):
    """Batched arguments: ``size`` examples stacked along each argument's in_dim."""
    examples = [c.make(rng, *sizes) for _ in range(size)]
    args = []
    for i, d in enumerate(dims):
        if d is None:
            args.append(examples[0][i])
        else:
            args.append(np.stack([np.asarray(e[i]) for e in examples], axis=d))
    return args


def loop_and_stack(f, in_dims, args, out_dim=0):
    size = next(np.shape(a)[d] for a, d in zip(args, in_dims, strict=True) if d is not None)
    outs = [f(*[a if d is None else np.take(a, i, axis=d)
                for a, d in zip(args, in_dims, strict=True)]) for i in range(size)]
    return tree_map(lambda *xs: np.stack(xs, axis=out_dim), *outs)


def assert_tree_close(got, want):
    g, gt = tree_flatten(got)
    w, wt = tree_flatten(want)
    assert gt == wt
    for a, b in zip(g, w, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def dim_choices(c, sizes):
    ranks = [np.ndim(a) for a in c.make(np.random.default_rng(0), *sizes)]
    return [tuple(dims) for dims in itertools.product(*[[None, *range(r + 1)] for r in ranks])
            if any(d is not None for d in dims)]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_every_in_dims_combination(c):
    rng = np.random.default_rng(1)
    sizes = (3, 2, 4)
    for dims in dim_choices(c, sizes):   # a batch size unlike any other size
        args = draw_batch(c, rng, 5, dims, sizes)
        assert_tree_close(vmap(c.f, in_dims=dims)(*args), loop_and_stack(c.f, dims, args))


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
@settings(max_examples=share(4, floor=3))
@given(data=st.data(), size=st.integers(1, 4), sizes=st.tuples(*[st.integers(1, 4)] * 3),
       seed=st.integers(0, 2**31))
def test_drawn_sizes_and_dims(c, data, size, sizes, seed):
    dims = data.draw(st.sampled_from(dim_choices(c, sizes)), label="in_dims")
    args = draw_batch(c, np.random.default_rng(seed), size, dims, sizes)
    ref = loop_and_stack(c.f, dims, args)
    rank = min(np.ndim(leaf) for leaf in tree_flatten(ref)[0])
    out_dim = data.draw(st.integers(-rank, rank - 1), label="out_dims")
    got = vmap(c.f, in_dims=dims, out_dims=out_dim)(*args)
    assert_tree_close(got, loop_and_stack(c.f, dims, args, out_dim))


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_batched_graph_checks(c):
    sizes = (3, 2, 4)
    examples = c.make(np.random.default_rng(0), *sizes)
    graph = fc.make_graph(c.f)(*examples)
    for dims in dim_choices(c, sizes):
        in_avals_dims = list(dims)
        out_dims = [0] * len(graph.outputs)
        batched, captured = batch_graph(graph, in_avals_dims, 5, out_dims)
        assert not captured
        check_graph(batched)
        for v, o in zip(batched.outputs, graph.outputs, strict=True):
            assert v.aval.shape == (5, *o.aval.shape)


def test_unbatched_equations_pass_through():
    graph = fc.make_graph(lambda x, w: P.add.bind(x, P.tanh.bind(w)))(np.ones(3), np.ones(3))
    batched, _ = batch_graph(graph, [0, None], 4, [0])
    prims = [e.prim for e in batched.eqns]
    assert prims == [P.tanh, P.broadcast_in_dim, P.add]
    assert batched.eqns[0].inputs[0] is batched.inputs[1]


def test_batched_start_indices_do_not_copy_an_unbatched_table():
    table = np.arange(12.0).reshape(6, 2)
    graph = fc.make_graph(lambda t, i: P.dynamic_slice.bind(t, i, np.int64(0),
                                                            slice_sizes=(2, 2)))(table, np.int64(1))
    batched, _ = batch_graph(graph, [None, 0], 7, [0])
    gathers = [e for e in batched.eqns if e.prim is P.gather]
    assert len(gathers) == 1 and gathers[0].inputs[0] is batched.inputs[0]
    assert not any(e.prim is P.broadcast_in_dim and e.inputs[0] is batched.inputs[0]
                   for e in batched.eqns)


def test_elementwise_keeps_the_batch_axis_in_place():
    graph = fc.make_graph(lambda x, y, s: P.mul.bind(P.add.bind(x, y), s))(
        np.ones((2, 3)), np.ones((2, 3)), np.float64(2))
    batched, _ = batch_graph(graph, [1, None, 0], 4, [1])
    assert P.transpose not in [e.prim for e in batched.eqns]
    check_graph(batched)


def test_unbatched_scalars_are_not_broadcast():
    graph = fc.make_graph(lambda x: P.mul.bind(x, np.float64(2)))(np.ones(3))
    batched, _ = batch_graph(graph, [1], 4, [1])
    assert [e.prim for e in batched.eqns] == [P.mul]


# --- the fnp op table under vmap -------------------------------------------------------

def example_variant(a, i):
    """The i-th example of a batch built from one drawn argument: its values rolled."""
    a = np.asarray(a)
    return np.roll(a.ravel(), i).reshape(a.shape) if a.size else a


def _quiet(fn):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@settings(max_examples=share(10, floor=3))
@given(data=st.data())
def test_op_table_against_loop_and_stack(op, data):
    """Every fnp function of the op table, batched over a drawn in_dims combination."""
    dtype = data.draw(st.sampled_from(op.dtypes), label="dtype")
    case = data.draw(op.gen(dtype), label="case")
    arrays = [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray | np.generic)]
    if not arrays:
        return
    choices = [[None, *range(np.ndim(case.args[i]) + 1)] for i in arrays]
    picked = data.draw(st.tuples(*map(st.sampled_from, choices)).filter(
        lambda ds: any(d is not None for d in ds)), label="in_dims")
    size = data.draw(st.integers(1, 3), label="batch size")
    dims = [None] * len(case.args)
    for i, d in zip(arrays, picked, strict=True):
        dims[i] = d
    args = [a if d is None else np.stack([example_variant(a, j) for j in range(size)], axis=d)
            for a, d in zip(case.args, dims, strict=True)]

    def f(*a):
        return op.fn(fnp, *a, **case.kwargs)

    per_example = fc.jit(f)
    try:
        want = _quiet(lambda: loop_and_stack(per_example, dims, args))
    except Exception:    # the op rejects this case; parity tests judge that
        return
    got = _quiet(lambda: vmap(f, in_dims=tuple(dims))(*args))
    for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0], strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{op.name} {dims}: {case!r}"
        rtol = 10 * RTOL.get(w.dtype, 0.0) * op.tol
        scale = np.max(np.abs(w[np.isfinite(w)]), initial=1.0) if w.dtype.kind in "fc" else 1
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{op.name} in_dims={dims}: {case!r}")


# --- the API --------------------------------------------------------------------------

def test_negative_in_and_out_dims():
    x = np.arange(24.0).reshape(2, 3, 4)
    got = vmap(lambda r: P.reduce_sum.bind(r, axes=(0,)), in_dims=-1, out_dims=-1)(x)
    np.testing.assert_array_equal(got, x.sum(axis=0))
    got = vmap(lambda r: P.tanh.bind(r), in_dims=-2, out_dims=-2)(x)
    np.testing.assert_allclose(got, np.tanh(x))


def test_pytree_in_dims_prefix_and_out_dims():
    def f(p, xs):
        return {"y": fnp.add(p["w"], xs[0]), "z": fnp.multiply(p["b"], xs[1])}

    w, b = np.ones((5, 3)), np.arange(3.0)
    xs = (np.arange(15.0).reshape(3, 5), np.arange(5.0))
    got = vmap(f, in_dims=({"w": 0, "b": None}, (1, 0)), out_dims={"y": 1, "z": 0})(
        {"w": w, "b": b}, xs)
    assert got["y"].shape == (3, 5) and got["z"].shape == (5, 3)
    np.testing.assert_allclose(got["y"], (w + xs[0].T).T)
    np.testing.assert_allclose(got["z"], xs[1][:, None] * b)
    got = vmap(f, out_dims=0, in_axes=(None, 1))(
        {"w": w[0], "b": b}, (xs[0], np.ones((3, 5))))
    assert got["y"].shape == (5, 3)


def test_kwargs_and_python_scalars_are_unbatched():
    f = vmap(lambda x, s, *, scale: fnp.multiply(fnp.add(x, s), scale), in_dims=(0, None))
    got = f(np.ones((4, 2), np.float32), 2.0, scale=np.float32(3))
    assert got.dtype == np.float32 and got.shape == (4, 2)
    np.testing.assert_array_equal(got, np.full((4, 2), 9.0, np.float32))


def test_outputs_pytrees_scalars_and_broadcast_unbatched():
    def f(x, y):
        return 1.5, (x, y), P.reduce_sum.bind(x, axes=(0,))

    x, y = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    c, (xo, yo), s = vmap(f, in_dims=(0, None))(x, y)
    np.testing.assert_array_equal(c, [1.5, 1.5])
    np.testing.assert_array_equal(xo, x)
    np.testing.assert_array_equal(yo, np.stack([y, y]))
    np.testing.assert_array_equal(s, x.sum(1))
    c, (xo, yo), s = vmap(f, in_dims=(0, None), out_dims=(None, (0, None), 0))(x, y)
    assert c == 1.5 and yo is y


def test_nested_vmap():
    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    outer = vmap(vmap(lambda a, b: fnp.multiply(a, b), in_dims=(None, 0)), in_dims=(0, None))
    np.testing.assert_array_equal(outer(x[:, 0], y[:, 0]), np.outer(x[:, 0], y[:, 0]))
    np.testing.assert_array_equal(outer(x[:, :1], y[:, 0]), x[:, None, :1] * y[None, :, :1])
    mm = vmap(vmap(lambda a, b: P.reduce_sum.bind(fnp.multiply(a, b), axes=(0,)),
                   in_dims=(None, 1)), in_dims=(0, None))
    np.testing.assert_allclose(mm(x, y), x @ y)
    closure = vmap(lambda a: vmap(lambda b: fnp.multiply(a, b))(y[0]))(x[0])
    np.testing.assert_allclose(closure, np.outer(x[0], y[0]))


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 100])
def test_chunk_size_gives_the_same_result(chunk):
    def f(x, w):
        return P.dot_general.bind(x, w, dimension_numbers=dn((0,), (0,))), 2.0

    x, w = np.arange(15.0).reshape(5, 3), np.arange(6.0).reshape(3, 2)
    want = vmap(f, in_dims=(0, None), out_dims=(1, None))(x, w)
    got = vmap(f, in_dims=(0, None), out_dims=(1, None), chunk_size=chunk)(x, w)
    assert_tree_close(got, want)


def test_chunks_under_jit_and_grad():
    def f(x):
        return fnp.sin(x) * 2.0

    x = np.linspace(0.0, 1.0, 10).reshape(5, 2)
    np.testing.assert_allclose(fc.jit(vmap(f, chunk_size=2))(x), 2 * np.sin(x))
    g = fc.grad(lambda v: fnp.sum(vmap(f, chunk_size=3, out_dims=1)(v)))(x)
    np.testing.assert_allclose(g, 2 * np.cos(x))


def test_jit_of_vmap_and_vmap_of_jit():
    def f(x, w):
        return P.tanh.bind(P.dot_general.bind(x, w, dimension_numbers=dn((1,), (0,))))

    x, w = np.random.default_rng(0).standard_normal((2, 4, 3)), np.ones((3, 2))
    want = vmap(f, in_dims=(1, None))(x, w)
    np.testing.assert_allclose(fc.jit(vmap(f, in_dims=(1, None)))(x, w), want)
    np.testing.assert_allclose(vmap(fc.jit(f), in_dims=(1, None))(x, w), want)
    g = fc.make_graph(vmap(f, in_dims=(1, None)))(x, w)
    check_graph(g)
    assert g.out_avals[0].shape == (4, 2, 2)


def test_vmap_of_grad_and_grad_of_vmap():
    def loss(w, x):
        return fnp.sum(fnp.tanh(fnp.matmul(x, w)) ** 2)

    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal((3, 2)), rng.standard_normal((5, 4, 3))
    per_example = vmap(fc.grad(loss), in_dims=(None, 0))(w, xs)
    want = np.stack([fc.grad(loss)(w, x) for x in xs])
    np.testing.assert_allclose(per_example, want, rtol=1e-12)
    total = fc.grad(lambda w: fnp.sum(vmap(loss, in_dims=(None, 0))(w, xs)))(w)
    np.testing.assert_allclose(total, want.sum(0), rtol=1e-12)
    inner = vmap(fc.grad(lambda a, b: fnp.sum(a * b)), in_dims=(0, None))
    nested = vmap(inner, in_dims=(0, None))(xs, w[:, 0])
    np.testing.assert_allclose(nested, np.broadcast_to(w[:, 0], (5, 4, 3)))


def test_vmap_of_a_vjp_function_is_the_jacobian():
    def f(x):
        return fnp.sin(x) * fnp.sum(x)

    x = np.linspace(0.1, 1.0, 4)
    _, pullback = fc.vjp(f, x)
    rows = vmap(pullback)(np.eye(4))[0]
    np.testing.assert_allclose(rows, fc.jacfwd(f)(x), rtol=1e-12)
    np.testing.assert_allclose(fc.jacrev(f)(x), fc.jacfwd(f)(x), rtol=1e-12)
    stacked = vmap(fc.jacrev(f))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(stacked[1], fc.jacfwd(f)(2 * x), rtol=1e-12)


def test_vmap_keeps_custom_derivative_rules():
    @fc.custom_jvp
    def clipped(x):
        return fnp.sin(x)

    @clipped.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return clipped(x), t * 10.0

    xs = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(vmap(clipped)(xs), np.sin(xs))
    np.testing.assert_allclose(fc.grad(lambda v: fnp.sum(vmap(clipped)(v)))(xs), [10.0] * 3)
    np.testing.assert_allclose(vmap(fc.grad(clipped))(xs), [10.0] * 3)


def test_traces_once_per_signature():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(x)

    g = vmap(f)
    for _ in range(3):
        g(np.ones((3, 2)))
    g(np.ones((4, 2)))
    vmap(f, out_dims=1)(np.ones((4, 2)))
    assert len(calls) == 3


def test_numpy_c_functions_are_cached_too():
    from functorch_core.transforms import common
    g = vmap(np.outer)
    x = np.ones((2, 3))
    np.testing.assert_array_equal(g(x, x), np.ones((2, 3, 3)))
    assert len(common._CACHES.get(g, {})) == 1
    g(x, x)
    assert len(common._CACHES.get(g, {})) == 1


def test_does_not_touch_the_callers_arrays():
    x = np.arange(6.0).reshape(2, 3)
    before = x.copy()
    vmap(lambda r: P.dynamic_update_slice.bind(r, np.zeros(1), np.int64(1)))(x)
    np.testing.assert_array_equal(x, before)


# --- errors ---------------------------------------------------------------------------

def f2(x, y):
    return fnp.add(x, y)


def test_error_batch_size_mismatch():
    msg = ("vmap(f2): in_dims=(0, 0) gives batch sizes 3 for argument 0 (shape (3, 4)) "
           "and 5 for argument 1 (shape (5,))")
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        vmap(f2, in_dims=(0, 0))(np.ones((3, 4)), np.ones(5))


def test_error_all_unbatched():
    with pytest.raises(ValueError, match=r"vmap\(f2\): at least one argument must be batched "
                                         r"\(in_dims are all None"):
        vmap(f2, in_dims=None)(np.ones(3), np.ones(3))


def test_error_structure_mismatch():
    with pytest.raises(ValueError, match=r"vmap\(f2\): in_dims=\(0, \(0, 0\)\) does not match"
                                         r".*\(\*, \(\*, \*\)\).*\(\*, \*\)"):
        vmap(f2, in_dims=(0, (0, 0)))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match=r"out_dims=\(0, 0\) does not match the structure of "
                                         "the outputs"):
        vmap(f2, out_dims=(0, 0))(np.ones(3), np.ones(3))


def test_error_in_dim_out_of_range():
    with pytest.raises(ValueError, match=r"gives axis 2 for argument 1 of rank 2 \(shape "
                                         r"\(3, 3\)\); it must be in \[-2, 1\]"):
        vmap(f2, in_dims=(0, 2))(np.ones((3, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="argument 1, which is a scalar"):
        vmap(f2)(np.ones(3), 2.0)
    with pytest.raises(ValueError, match=r"out_dims=3 gives axis 3 for output of rank 2"):
        vmap(f2, out_dims=3)(np.ones((3, 3)), np.ones((3, 3)))


def test_error_out_dims_none_for_batched_output():
    with pytest.raises(ValueError, match=r"out_dims=\(0, None\) gives None for output\[1\] "
                                         r"\(shape \(3,\) with the batch\)"):
        vmap(lambda x: (x, x), out_dims=(0, None))(np.ones(3))


def test_error_bad_options():
    for choice in ("error", "different", "same"):
        np.testing.assert_array_equal(vmap(f2, randomness=choice)(np.ones(2), np.ones(2)), 2.0)
    with pytest.raises(ValueError, match="randomness"):
        vmap(f2, randomness="maybe")
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(f2, chunk_size=0)
    with pytest.raises(TypeError, match="in_dims must be an int, None"):
        vmap(f2, in_dims=(0, "a"))
    with pytest.raises(TypeError, match="not both"):
        vmap(f2, in_dims=1, in_axes=0)


def test_in_place_updates_are_batched_and_written_back():
    def f(x, y):
        x[0] = y          # functionalized before batching
        x += 1.0
        return x * 2.0

    x, y = np.ones((4, 3)), np.arange(4.0)
    looped = x.copy()
    want = np.stack([f(looped[i], y[i]) for i in range(4)])   # writes into looped's rows
    got = vmap(f)(x, y)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, looped)          # each example's row, as in the loop


def test_in_place_update_through_an_aliasing_argument():
    def f(a, b):
        a[1] = 7.0
        return b + 0.0    # b is a view of a: sees the write, as in the loop

    x = np.zeros((3, 2))
    want = np.array([[0.0, 7.0]] * 3)
    np.testing.assert_array_equal(vmap(f)(x, x), want)


def test_batch_graph_refuses_mutation():
    graph = fc.make_graph(lambda x: P.setitem.bind(x, np.float64(0), indexer=(("int", 0),)))(
        np.ones(3))
    with pytest.raises(NotImplementedError, match="setitem"):
        batch_graph(graph, [0], 2, [])


def test_abstract_arrays_have_batch_axis():
    graph, _ = trace_flat(lambda x: [P.neg.bind(x)], [AbstractArray((3,), np.float64)])
    batched, _ = batch_graph(graph, [0], 7, [1])
    assert batched.out_avals[0].shape == (3, 7)
