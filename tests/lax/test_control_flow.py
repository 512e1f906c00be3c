"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

References: Python loops on concrete values, finite differences (check_grads),
loop-and-stack for vmap, the interpreter for the cpu backend.
"""

from dataclasses import dataclass

import numpy as np
import pytest
from functorch_core.ir import check_graph
from functorch_core.ir import primitives as P
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import lax
from functorch_core.testing import check_grads

RNG = np.random.default_rng(0)


def _close(a, b, rtol=1e-10, atol=1e-12):
    for x, y in zip(fc.tree_leaves(a), fc.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)
        assert np.asarray(x).dtype == np.asarray(y).dtype


def _prims(graph, acc=None):
    """Every primitive name in ``graph``, nested bodies included."""
    from functorch_core.ir.control_flow import subgraphs
    acc = set() if acc is None else acc
    for e in graph.eqns:
        acc.add(e.prim.name)
        for g in subgraphs(e.params):
            _prims(g, acc)
    return acc


# --- against Python loops ---------------------------------------------------------------

def test_scan_matches_a_python_loop_with_pytrees_and_reverse():
    xs = {"a": RNG.standard_normal((5, 3)), "b": RNG.standard_normal(5)}
    w = RNG.standard_normal(3)

    def step(c, x):
        h, n = c
        h = np.tanh(h * w + x["a"]) + x["b"]
        return (h, n + 1), {"h2": h * 2, "s": h.sum()}

    for reverse in (False, True):
        carry, ys = lax.scan(step, (np.zeros(3), np.int32(0)), xs, reverse=reverse)
        c, out = (np.zeros(3), np.int32(0)), []
        order = range(4, -1, -1) if reverse else range(5)
        for i in order:
            c, y = step(c, {"a": xs["a"][i], "b": xs["b"][i]})
            out.append((i, y))
        out.sort(key=lambda t: t[0])
        _close(carry, c)
        _close(ys, {"h2": np.stack([y["h2"] for _, y in out]),
                    "s": np.stack([y["s"] for _, y in out])})
        jitted = fc.jit(lambda xs, r=reverse: lax.scan(step, (np.zeros(3), np.int32(0)), xs,
                                                       reverse=r))(xs)
        _close(jitted, (carry, ys), rtol=1e-12)


def test_scan_without_xs_and_map():
    c, ys = lax.scan(lambda c, _: (c * 2.0, c), 1.0, length=4)
    _close(c, np.float64(16.0))
    _close(ys, np.array([1.0, 2.0, 4.0, 8.0]))
    xs = RNG.standard_normal((4, 3))
    _close(lax.map(lambda x: np.sin(x).sum(), xs), np.sin(xs).sum(1))
    _close(fc.jit(lambda xs: lax.map(np.cos, xs))(xs), np.cos(xs))
    c, ys = lax.scan(lambda c, x: (c, None), 0.0, length=0)
    assert ys is None and c == 0.0


def test_cond_and_switch_match_python():
    x = RNG.standard_normal(3)
    assert np.allclose(lax.cond(True, np.sin, np.cos, x), np.sin(x))
    assert np.allclose(lax.cond(False, np.sin, np.cos, x), np.cos(x))
    branches = [lambda x: x, lambda x: x * 2, lambda x: x * 3]
    for i, want in [(-4, 1), (0, 1), (1, 2), (2, 3), (7, 3)]:     # clamped, as in JAX
        assert lax.switch(i, branches, 1.0) == want
        assert fc.jit(lambda i: lax.switch(i, branches, 1.0))(i) == want
    f = fc.jit(lambda x: lax.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x))
    _close(f(x), x * 2 if x.sum() > 0 else -x)
    _close(f(-x), -x * 2 if -x.sum() > 0 else x)


def test_while_and_fori_match_python():
    assert lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0),
                          (0, 1.0)) == (10, 1024.0)
    out = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0),
                         max_steps=3)
    assert out == (3, 8.0)
    assert lax.fori_loop(0, 5, lambda i, x: x + i, 0.0) == 10.0
    assert lax.fori_loop(3, 1, lambda i, x: x + i, 0.0) == 0.0
    traced = fc.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0.0))
    assert traced(5) == 10.0 and traced(0) == 0.0
    g = fc.make_graph(lambda x: lax.fori_loop(0, 5, lambda i, x: x * 2.0, x))(1.0)
    assert "scan" in _prims(g) and "while" not in _prims(g)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_associative_scan_matches_cumulative_ops(n):
    x = RNG.standard_normal((n, 3))
    _close(lax.associative_scan(np.add, x), np.cumsum(x, 0), rtol=1e-12, atol=1e-12)
    _close(lax.associative_scan(np.add, x, axis=1), np.cumsum(x, 1), rtol=1e-12, atol=1e-12)
    _close(lax.associative_scan(np.maximum, x, reverse=True),
           np.maximum.accumulate(x[::-1], 0)[::-1])
    # a pytree: the composition of affine maps (a, b) . (c, d) = (a c, b c + d)
    a, b = RNG.uniform(0.5, 1.5, n), RNG.standard_normal(n)
    _, B = lax.associative_scan(lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]), (a, b))
    h, hs = 0.0, []
    for i in range(n):
        h = h * a[i] + b[i]
        hs.append(h)
    _close(B, np.array(hs), rtol=1e-12, atol=1e-12)
    _close(fc.jit(lambda x: lax.associative_scan(np.add, x))(x), np.cumsum(x, 0),
           rtol=1e-12, atol=1e-12)


# --- derivatives -------------------------------------------------------------------------

def _rnn(w, xs, checkpoint=False):
    def step(c, x):
        c = np.tanh(c @ w + x)
        return c, (c ** 2).sum()
    c, ys = lax.scan(step, np.ones(2) * 0.1, xs, checkpoint=checkpoint)
    return (c * c).sum() + ys.sum()


@pytest.mark.parametrize("checkpoint", [False, True])
def test_scan_grads(checkpoint):
    w, xs = RNG.standard_normal((2, 2)) * 0.5, RNG.standard_normal((4, 2)) * 0.5
    check_grads(lambda w, xs: _rnn(w, xs, checkpoint), (w, xs), order=2)
    g = fc.grad(lambda w: _rnn(w, xs, checkpoint))(w)
    eps, fd = 1e-6, np.zeros_like(w)
    for i in np.ndindex(w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        fd[i] = (_rnn(w + d, xs) - _rnn(w - d, xs)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    h = fc.hessian(lambda w: _rnn(w, xs, checkpoint))(w)
    _close(fc.jacrev(fc.jacrev(lambda w: _rnn(w, xs, checkpoint)))(w), h, rtol=1e-9, atol=1e-12)
    _close(fc.jit(fc.hessian(lambda w: _rnn(w, xs, checkpoint)))(w), h, rtol=1e-9, atol=1e-12)
    _close(fc.vmap(fc.grad(lambda xs: _rnn(w, xs, checkpoint)))(np.stack([xs, 2 * xs])),
           np.stack([fc.grad(lambda xs: _rnn(w, xs))(v) for v in (xs, 2 * xs)]), rtol=1e-10)


def test_scan_reverse_grads_and_loop_invariant_residuals():
    w, xs = RNG.standard_normal((2, 2)) * 0.5, RNG.standard_normal((4, 2)) * 0.5

    def f(w, xs):
        c, ys = lax.scan(lambda c, x: (np.sin(c @ w) + x, c[0] * x), np.ones(2), xs,
                         reverse=True)
        return c.sum() + (ys ** 2).sum()
    check_grads(f, (w, xs), order=2)
    # w is a residual of every step; it is passed to the linear scan once, not stacked
    g = fc.make_graph(fc.grad(f))(w, xs)
    stacked = [v.aval.shape for e in g.eqns if e.prim is P.scan for v in e.outputs]
    assert (4, 2, 2) not in stacked


def test_cond_and_switch_grads():
    def f(x):
        return lax.cond(x.sum() > 0, lambda x: np.sin(x) * x, lambda x: np.cos(x) ** 2,
                        x).sum()
    check_grads(f, (np.array([0.3, 0.2]),), order=2)
    check_grads(f, (np.array([-0.3, 0.2]),), order=2)

    def s(i, x, y):
        return lax.switch(i, [lambda x, y: x * y, lambda x, y: np.exp(x), lambda x, y: y],
                          x, y)
    for i in range(3):
        check_grads(lambda x, y, i=i: s(i, x, y), (0.3, 0.7), order=2)


def test_while_grads_with_max_steps_and_forward_mode_without():
    def body(c):
        return c[0] + 1, np.sin(c[1]) * 1.5

    def bounded(x):
        return lax.while_loop(lambda c: c[0] < 5, body, (0, x), max_steps=10)[1]

    def unbounded(x):
        return lax.while_loop(lambda c: c[0] < 5, body, (0, x))[1]

    check_grads(bounded, (0.7,), order=2)
    check_grads(unbounded, (0.7,), order=2, modes=("fwd",))
    _close(fc.jacfwd(unbounded)(0.7), fc.grad(bounded)(0.7), rtol=1e-12)
    # a data-dependent trip count: Newton's iteration for sqrt(a)
    def newton(a):
        return lax.while_loop(lambda x: np.abs(x * x - a) > 1e-12,
                              lambda x: 0.5 * (x + a / x), a, max_steps=50)
    np.testing.assert_allclose(fc.grad(newton)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)
    with pytest.raises(NotImplementedError, match=r"max_steps.*fori_loop"):
        fc.grad(unbounded)(0.7)


def test_fori_loop_grads():
    def f(x):
        return lax.fori_loop(0, 4, lambda i, c: np.sin(c) * (i + 1.0), x)
    check_grads(f, (0.3,), order=2)

    def traced_bounds(x, n):
        return lax.fori_loop(0, n, lambda i, c: np.sin(c) * 1.5, x)
    check_grads(lambda x: traced_bounds(x, np.int64(3)), (0.3,), order=2)


def _stacked_residuals(graph):
    """The elements of the per-step values the forward scans of ``graph`` stack."""
    return sum(int(np.prod(v.aval.shape)) for e in graph.eqns if e.prim is P.scan
               for v in e.outputs if len(v.aval.shape) >= 1 and v.aval.shape[0] == 6)


def test_fori_loop_checkpoint_same_grads_fewer_residuals():
    w = RNG.standard_normal((3, 3)) * 0.5

    def f(w, checkpoint):
        body = lambda i, c: np.tanh(np.sin(c @ w) * c + i)    # noqa: E731
        return lax.fori_loop(0, 6, body, np.ones(3), checkpoint=checkpoint).sum()
    g_plain = fc.grad(lambda w: f(w, False))(w)
    g_ckpt = fc.grad(lambda w: f(w, True))(w)
    np.testing.assert_array_equal(g_ckpt, g_plain)
    np.testing.assert_array_equal(fc.jit(fc.grad(lambda w: f(w, True)))(w),
                                  fc.jit(fc.grad(lambda w: f(w, False)))(w))
    check_grads(lambda w: f(w, True), (w,), order=2)
    # the forward loop keeps the carry of every step, not the body's intermediates
    plain = _stacked_residuals(fc.make_graph(fc.grad(lambda w: f(w, False)))(w))
    ckpt = _stacked_residuals(fc.make_graph(fc.grad(lambda w: f(w, True)))(w))
    assert ckpt < plain, (ckpt, plain)
    # traced bounds: a while_loop; checkpoint changes nothing there
    n = np.int64(6)
    body = lambda i, c: np.sin(c) * 1.5     # noqa: E731
    np.testing.assert_array_equal(
        fc.jit(lambda x, n: lax.fori_loop(0, n, body, x, checkpoint=True))(0.3, n),
        fc.jit(lambda x, n: lax.fori_loop(0, n, body, x))(0.3, n))


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 10])
def test_map_batch_size_matches_the_plain_map(batch_size):
    xs = RNG.standard_normal((7, 2))

    def f(r):
        return {"s": (np.sin(r) * r).sum(), "v": r * 2.0}
    ref = lax.map(f, xs)
    for out in (lax.map(f, xs, batch_size=batch_size),
                fc.jit(lambda xs: fc.map(f, xs, batch_size=batch_size))(xs)):
        assert list(out) == ["s", "v"]
        _close(out, ref, rtol=1e-15, atol=0)
    check_grads(lambda xs: lax.map(f, xs, batch_size=batch_size)["s"], (xs,), order=1)


def test_map_batch_size_errors():
    with pytest.raises(ValueError, match=r"map\(.*<lambda>\): batch_size must be a positive int"):
        lax.map(lambda x: x, np.ones((3, 2)), batch_size=0)
    with pytest.raises(ValueError, match=r"map\(.*<lambda>\): every leaf of xs needs the same "
                       r"leading axis"):
        lax.map(lambda x: x, (np.ones((3, 2)), np.ones(4)), batch_size=2)


def test_map_and_associative_scan_grads():
    xs = RNG.standard_normal((3, 2))
    check_grads(lambda xs: lax.map(lambda x: np.sin(x) * x.sum(), xs), (xs,), order=2)
    check_grads(lambda x: lax.associative_scan(np.multiply, x), (RNG.uniform(0.5, 1, 5),),
                order=2)


# --- vmap against loop-and-stack -----------------------------------------------------------

@dataclass
class VCase:
    name: str
    f: object
    args: tuple
    in_dims: tuple


def _cond_f(x, y):
    return lax.cond(x.sum() > 0, lambda x, y: x * y, lambda x, y: x - y, x, y)


def _switch_f(i, x):
    return lax.switch(i, [np.sin, np.cos, lambda x: x * 3], x)


def _while_f(x, lim):
    return lax.while_loop(lambda c: c[1] < lim, lambda c: (c[0] + 1, c[1] * 1.5 + 0.1),
                          (0, x))


def _scan_f(w, init, xs):
    return lax.scan(lambda c, x: (np.tanh(c * w + x), c.sum()), init, xs)


B = 4
VMAP_CASES = [
    VCase("cond batched pred", _cond_f, (RNG.standard_normal((B, 3)), np.ones(3)), (0, None)),
    VCase("cond unbatched pred", _cond_f, (np.ones(3), RNG.standard_normal((B, 3))), (None, 0)),
    VCase("switch batched index", _switch_f, (np.array([0, 2, 1, 5]), RNG.standard_normal(B)),
          (0, 0)),
    VCase("switch unbatched index", _switch_f, (1, RNG.standard_normal((3, B))), (None, 1)),
    VCase("while batched pred", _while_f, (RNG.uniform(0.1, 5, B), 10.0), (0, None)),
    VCase("while batched limit", _while_f, (1.0, np.array([1.0, 5.0, 20.0, 0.5])), (None, 0)),
    VCase("while unbatched pred", lambda w, x: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w), (0, x)),
        (RNG.standard_normal(B), 2.0), (0, None)),
    VCase("scan batched xs", _scan_f, (0.5, np.zeros(3), RNG.standard_normal((5, B, 3))),
          (None, None, 1)),
    VCase("scan batched const", _scan_f, (RNG.standard_normal(B), np.zeros(3),
                                          RNG.standard_normal((5, 3))), (0, None, None)),
    VCase("scan batched init", _scan_f, (0.5, RNG.standard_normal((3, B)),
                                         RNG.standard_normal((5, 3))), (None, 1, None)),
]


def _loop_and_stack(f, args, in_dims):
    size = next(np.shape(a)[d] for a, d in zip(args, in_dims, strict=True) if d is not None)
    rows = [f(*[a if d is None else np.take(a, i, axis=d)
                for a, d in zip(args, in_dims, strict=True)]) for i in range(size)]
    return fc.tree_map(lambda *xs: np.stack(xs), *rows)


@pytest.mark.parametrize("case", VMAP_CASES, ids=lambda c: c.name)
def test_vmap_matches_loop_and_stack(case):
    want = _loop_and_stack(case.f, case.args, case.in_dims)
    _close(fc.vmap(case.f, in_dims=case.in_dims)(*case.args), want)
    _close(fc.jit(fc.vmap(case.f, in_dims=case.in_dims))(*case.args), want, rtol=1e-12)


def test_vmap_of_grad_and_grad_of_vmap_through_a_bounded_while():
    def newton(a):
        return lax.while_loop(lambda x: np.abs(x * x - a) > 1e-12,
                              lambda x: 0.5 * (x + a / x), a, max_steps=60)
    a = np.array([0.5, 2.0, 9.0, 100.0])
    np.testing.assert_allclose(fc.vmap(newton)(a), np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(fc.vmap(fc.grad(newton))(a), 0.5 / np.sqrt(a), rtol=1e-8)
    np.testing.assert_allclose(fc.grad(lambda a: fc.vmap(newton)(a).sum())(a),
                               0.5 / np.sqrt(a), rtol=1e-8)


# --- nested control flow and compositions ----------------------------------------------------

def _nested(x, w):
    """A scan inside a cond inside a while."""
    def body(c):
        i, v = c
        def inner(v):
            return lax.scan(lambda h, x: (np.sin(h * w) + x, h), v, np.arange(3.0) * 0.1)[0]
        v = lax.cond(v.sum() > 0, inner, lambda v: v * 0.9, v)
        return i + 1, v
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x), max_steps=5)[1].sum()


def test_nested_control_flow_composes_with_every_transform():
    x, w = np.array([0.3, -0.2]), 0.7
    check_grads(_nested, (x, w), order=2)
    for y in (x, -x):
        g = fc.grad(_nested)(y, w)
        _close(fc.jit(fc.grad(_nested))(y, w), g, rtol=1e-10)
        _close(fc.jacrev(_nested)(y, w), g, rtol=1e-10)
        _close(fc.jacfwd(_nested)(y, w), g, rtol=1e-10)
    xs = np.stack([x, -x, x * 3])
    _close(fc.vmap(fc.grad(_nested), in_dims=(0, None))(xs, w),
           np.stack([fc.grad(_nested)(r, w) for r in xs]), rtol=1e-10)
    h = fc.hessian(_nested)(x, w)
    _close(h, fc.jacrev(fc.jacrev(_nested))(x, w), rtol=1e-8)
    _close(fc.jit(fc.hessian(_nested))(x, w), h, rtol=1e-8)


# --- functionalize, graphs, backends ----------------------------------------------------------

def test_in_place_writes_inside_bodies():
    def step(c, x):
        c = c.copy()
        c[0] += x
        c[1:] *= 2.0
        return c, c[0]
    c, ys = lax.scan(step, np.ones(3), np.arange(3.0))
    want, out = np.ones(3), []
    for x in np.arange(3.0):
        want[0] += x
        want[1:] *= 2.0
        out.append(want[0])
    _close((c, ys), (want, np.array(out)))

    def branch(x):
        x[0] = 5.0
        return x
    _close(fc.jit(lambda x: lax.cond(True, branch, lambda x: x, x))(np.zeros(2)),
           np.array([5.0, 0.0]))
    check_grads(lambda x: lax.scan(step, x, np.arange(3.0))[1].sum(), (np.ones(3),), order=1)


def test_a_body_writing_into_a_closed_over_array_is_refused():
    def f(buf):
        def body(c, x):
            buf[0] = x
            return c + x, None
        return lax.scan(body, 0.0, np.ones(2))[0]
    with pytest.raises(NotImplementedError, match=r"body of scan.*closes over.*carry"):
        fc.jit(f)(np.zeros(2))


def test_graph_prints_nested_bodies_and_checks():
    g = fc.make_graph(lambda x: lax.cond(x > 0, lambda x: lax.scan(
        lambda c, y: (c + y, c), x, np.ones(2))[0], lambda x: x, x))(1.0)
    check_graph(g)
    text = str(g)
    assert "cond[branches=(" in text and "scan[body=" in text
    assert text.count("graph(") == 4      # outer, two branches, the scan body
    check_graph(fc.make_graph(fc.grad(_nested))(np.ones(2), 0.5))
    check_graph(fc.make_graph(fc.vmap(_nested, in_dims=(0, None)))(np.ones((2, 2)), 0.5))


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_jit_backends_agree(backend):
    w, xs = RNG.standard_normal((2, 2)) * 0.5, RNG.standard_normal((6, 2))
    want = _rnn(w, xs)
    _close(fc.jit(_rnn, backend=backend)(w, xs), want, rtol=1e-12)
    g = fc.grad(_rnn)(w, xs)
    _close(fc.jit(fc.grad(_rnn), backend=backend)(w, xs), g, rtol=1e-12)
    _close(fc.jit(_nested, backend=backend)(np.ones(2), 0.5), _nested(np.ones(2), 0.5),
           rtol=1e-12)


# --- errors -------------------------------------------------------------------------------

def test_mismatched_branches_are_named_with_both_sides():
    with pytest.raises(TypeError, match=r"(?s)cond\(.*branch 0.*f64\[3\].*branch 1.*f64\[2\]"):
        lax.cond(True, lambda x: x, lambda x: x[:2], np.ones(3))
    with pytest.raises(TypeError, match="structure"):
        lax.switch(0, [lambda x: (x, x), lambda x: x], 1.0)


def test_carry_changing_shape_or_dtype_is_refused():
    with pytest.raises(TypeError, match=r"(?s)scan\(.*init carry.*f64\[3\].*f64\[1\]"):
        lax.scan(lambda c, x: (c[:1], x), np.ones(3), np.ones(2))
    with pytest.raises(TypeError, match=r"(?s)while_loop\(.*f32.*f64"):
        lax.while_loop(lambda c: c < 1, lambda c: c.astype(np.float64), np.float32(0))
    with pytest.raises(TypeError, match="scan"):
        lax.scan(lambda c, x: c, 0.0, np.ones(2))                 # not a (carry, y) pair


def test_bad_predicates_are_refused():
    with pytest.raises(TypeError, match=r"bool scalar.*float64"):
        lax.cond(1.0, np.sin, np.cos, 1.0)
    with pytest.raises(TypeError, match=r"scalar.*\(2,\)"):
        lax.cond(np.array([True, False]), np.sin, np.cos, 1.0)
    with pytest.raises(TypeError, match="cond_fun must return a bool scalar"):
        lax.while_loop(lambda c: c, lambda c: c + 1, 1.0)
    with pytest.raises(ValueError, match="different lengths"):
        lax.scan(lambda c, x: (c, x), 0.0, (np.ones(2), np.ones(3)))


def test_python_if_inside_a_body_points_to_cond():
    def body(c, x):
        if x > 0:
            return c + x, x
        return c, x
    with pytest.raises(fc.TracerError, match=r"functorch_core\.lax\.cond"):
        lax.scan(body, 0.0, np.ones(2))


# --- property: random small bodies ----------------------------------------------------------

_OPS = [np.sin, np.tanh, lambda v: np.sin(v) * v, lambda v: v * 0.5 + 1.0]   # bounded growth


@given(st.lists(st.integers(0, len(_OPS) - 1), min_size=1, max_size=4),
       st.integers(1, 4), st.booleans())
def test_random_scan_bodies_match_loops_and_finite_differences(ops, n, reverse):
    xs = np.linspace(-0.5, 0.5, n * 2).reshape(n, 2)

    def step(c, x):
        for k in ops:
            c = _OPS[k](c) + x * 0.3
        return c, c.sum()

    def f(c0):
        c, ys = lax.scan(step, c0, xs, reverse=reverse)
        return c.sum() + ys.sum()

    def loop(c0):
        c, total = c0, 0.0
        for i in (range(n - 1, -1, -1) if reverse else range(n)):
            c, y = step(c, xs[i])
            total += y
        return c.sum() + total

    c0 = np.array([0.1, -0.2])
    np.testing.assert_allclose(f(c0), loop(c0), rtol=1e-12)
    check_grads(f, (c0,), order=1)


@given(st.lists(st.integers(0, len(_OPS) - 1), min_size=1, max_size=3),
       st.lists(st.integers(0, len(_OPS) - 1), min_size=1, max_size=3),
       st.integers(0, 4))
def test_random_cond_and_while_bodies_against_python_and_loop_and_stack(a, b, limit):
    def chain(ops, v):
        for k in ops:
            v = _OPS[k](v)
        return v

    def f(x):
        y = lax.cond(x.sum() > 0, lambda v: chain(a, v), lambda v: chain(b, v), x)
        _, z = lax.while_loop(go, lambda c: (c[0] + 1, chain(a, c[1]) * 0.5), (0, y),
                              max_steps=6)
        return z

    def go(c):      # a trip count that depends on the data: a batched predicate under vmap
        return (c[0] < limit) | ((c[0] < limit + 2) & (c[1].sum() > 0))

    def ref(x):
        y = chain(a, x) if x.sum() > 0 else chain(b, x)
        i = 0
        while go((i, y)) and i < 6:
            i, y = i + 1, chain(a, y) * 0.5
        return y

    xs = np.array([[0.3, -0.1], [-0.4, 0.2], [0.1, 0.1]])
    for x in xs:
        np.testing.assert_allclose(f(x), ref(x), rtol=1e-12)
    np.testing.assert_allclose(fc.vmap(f)(xs), np.stack([ref(x) for x in xs]), rtol=1e-12)
    check_grads(lambda x: f(x).sum(), (xs[0],), order=1)
    _ = fnp  # the NumPy API is what traced bodies call


def test_cpu_loops_keep_scalar_carries_and_run_zero_steps():
    f = fc.jit(lambda x, n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                                           (0, x)), backend="cpu")
    for n in (0, 3):
        i, v = f(1.5, n)
        assert i.shape == () and v.shape == () and v == 1.5 * 2 ** n
    g = fc.jit(lambda x: lax.scan(lambda c, y: (c + y, c), x, np.ones((0,)))[0], backend="cpu")
    out = g(np.float64(2.0))
    assert out.shape == () and out == 2.0


def test_cpu_backend_keeps_the_loop():
    from functorch_core.backends.llvm.runtime import compile_graph
    from functorch_core.backends.planning.plan import Loop
    graph = fc.make_graph(lambda x: lax.fori_loop(0, 1000, lambda i, c: np.sin(c) + 1.0, x))(
        np.ones(3))
    exe = compile_graph(graph)
    loops = [s for s in exe.plan.steps if isinstance(s, Loop)]
    assert len(loops) == 1 and loops[0].eqn.params["length"] == 1000
    assert len(loops[0].eqn.params["body"].eqns) < 10     # the body once, not unrolled
    assert exe.steps[exe.plan.steps.index(loops[0])].native     # one native loop
    want = np.ones(3)
    for _ in range(1000):
        want = np.sin(want) + 1.0
    np.testing.assert_allclose(exe([np.ones(3)])[0], want, rtol=1e-12)


# --- reverse mode: per-step weight products summed after the loop ------------------------------

def _rnn_loss(w, u, xs, h0):
    def cell(h, x):
        h = np.tanh(h @ w + x @ u)
        return h, h
    h, hs = lax.scan(cell, h0, xs)
    return (hs * hs).sum() + h.sum()


def _scans(graph):
    out = []
    for e in graph.eqns:
        if e.prim is P.scan:
            out.append(e)
    return out


def test_transposed_scan_sums_weight_products_after_the_loop():
    import functorch_core.transforms.control_flow as cf
    w, u = RNG.standard_normal((3, 3)) * 0.4, RNG.standard_normal((2, 3)) * 0.4
    xs, h0 = RNG.standard_normal((6, 4, 2)), RNG.standard_normal((4, 3)) * 0.1
    def fresh_grad():       # a new function: no trace cached from the other setting
        return fc.grad(lambda *a: _rnn_loss(*a), argnums=(0, 1))
    grad = fresh_grad()
    graph = fc.make_graph(grad)(w, u, xs, h0)
    check_graph(graph)
    transposed = [e for e in _scans(graph) if e.params["reverse"]]
    assert len(transposed) == 1
    # only the cotangent of h is carried; both weight gradients are products after the loop
    assert transposed[0].params["n_carry"] == 1
    assert "dot_general" in {e.prim.name for e in graph.eqns}
    got = grad(w, u, xs, h0)
    saved = cf.hoist_accumulated_dots
    cf.hoist_accumulated_dots = lambda body, *a: (body, {})
    try:
        plain_grad = fresh_grad()
        want = plain_grad(w, u, xs, h0)
        plain = fc.make_graph(plain_grad)(w, u, xs, h0)
    finally:
        cf.hoist_accumulated_dots = saved
    assert [e.params["n_carry"] for e in _scans(plain) if e.params["reverse"]] == [3]
    _close(got, want, rtol=1e-12)
    check_grads(lambda w, u: _rnn_loss(w, u, xs, h0), (w, u), order=2)
    for backend in ("cpu", "interpreter"):
        _close(fc.jit(grad, backend=backend)(w, u, xs, h0), want, rtol=1e-12)


def test_accumulations_that_are_not_per_step_products_stay_carried():
    # the weight meets a constant (not a per-step value): nothing to stack, the carry stays
    w, c = RNG.standard_normal((3, 3)), RNG.standard_normal((2, 3))

    def loss(w, xs):
        return lax.scan(lambda h, x: (h + (c @ w) * x, h.sum()), np.zeros((2, 3)), xs)[1].sum()
    xs = RNG.standard_normal((5, 2, 3))
    check_grads(lambda w: loss(w, xs), (w,), order=1)
    graph = fc.make_graph(fc.grad(loss))(w, xs)
    assert [e.params["n_carry"] for e in _scans(graph) if e.params["reverse"]] == [2]


# --- scan(unroll=...) ----------------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, 7, True])
def test_scan_unroll_gives_the_results_of_the_plain_loop(unroll, reverse):
    xs = {"a": RNG.standard_normal((7, 2)), "b": np.arange(7, dtype=np.int32)}
    w = RNG.standard_normal((2, 2)) * 0.5

    def f(w, c0):
        def step(c, x):
            h, n = c
            h = np.tanh(h @ w + x["a"]) * (x["b"] + 1)
            return (h, n + x["b"]), (h.sum(), n)
        return lax.scan(step, (c0, np.int32(0)), xs, reverse=reverse, unroll=unroll)

    c0 = np.array([0.1, -0.2])
    plain = lax.scan(lambda c, x: ((np.tanh(c[0] @ w + x["a"]) * (x["b"] + 1),
                                    c[1] + x["b"]),
                                   ((np.tanh(c[0] @ w + x["a"]) * (x["b"] + 1)).sum(), c[1])),
                     (c0, np.int32(0)), xs, reverse=reverse)
    _close(f(w, c0), plain, rtol=1e-12)
    for backend in ("cpu", "interpreter"):
        _close(fc.jit(f, backend=backend)(w, c0), plain, rtol=1e-12)
    graph = fc.make_graph(f)(w, c0)
    lengths = sorted(e.params["length"] for e in graph.eqns if e.prim is P.scan)
    block = 7 if unroll is True else unroll
    assert lengths == sorted([7 // block] + ([7 % block] if 7 % block else []))
    check_grads(lambda w, c0: f(w, c0)[0][0].sum() + f(w, c0)[1][0].sum(), (w, c0), order=1)


def test_scan_unroll_without_xs_and_bad_values():
    out = lax.scan(lambda c, _: (c * 2.0, c), 1.0, length=5, unroll=2)
    _close(out, (np.float64(32.0), np.array([1.0, 2.0, 4.0, 8.0, 16.0])))
    with pytest.raises(ValueError, match="unroll"):
        lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), unroll=0)
