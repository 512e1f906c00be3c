"""Reverse over reverse: jacrev(jacrev(f)) is the Hessian, the same as hessian(f) =
jacfwd(jacrev(f)) and central differences of the gradient, for pytrees, argnums tuples and
has_aux, under jit and vmap; its graph is no larger than the batch times the gradient's."""

from __future__ import annotations

import numpy as np
import pytest

import functorch_core as fc


def _mlp_problem(rng, nin=5, nh=4, nout=3, batch=6):
    shapes = [(nin, nh), (nh,), (nh, nout), (nout,)]
    sizes = [int(np.prod(s)) for s in shapes]
    x = rng.normal(size=(batch, nin))
    y = np.eye(nout)[rng.integers(0, nout, batch)]

    def loss(t):
        parts, off = [], 0
        for s, k in zip(shapes, sizes, strict=True):
            parts.append(t[off:off + k].reshape(s))
            off += k
        w1, b1, w2, b2 = parts
        logits = np.tanh(x @ w1 + b1) @ w2 + b2
        m = np.max(logits, axis=1, keepdims=True)
        lse = np.log(np.sum(np.exp(logits - m), axis=1)) + m[:, 0]
        return np.mean(lse - np.sum(logits * y, axis=1))
    return loss, rng.normal(size=sum(sizes)) / np.sqrt(nin)


def _problems():
    rng = np.random.default_rng(0)
    n = 7
    q = rng.normal(size=(n, n))
    idx = rng.integers(0, n, 11)
    mlp, theta = _mlp_problem(rng)
    return {
        "elementwise": (lambda x: np.sum(np.sin(x) * x ** 2 + np.exp(-x * x)), rng.normal(size=n)),
        "lse_quadratic": (lambda x: np.log(np.sum(np.exp(x))) + 0.5 * x @ q @ q.T @ x,
                          rng.normal(size=n)),
        "gather_cumsum": (lambda x: np.sum(np.cumsum(np.tanh(x[idx])) ** 2), rng.normal(size=n)),
        "matrix": (lambda w: np.sum(np.tanh(q[:3, :4] @ w) ** 2), rng.normal(size=(4, 2))),
        "mlp": (mlp, theta),
    }


PROBLEMS = _problems()


def _fd_hessian(f, x, h=1e-5):
    """Central differences of the (reverse-mode) gradient along each coordinate: truncation
    h^2/6 |g'''| ~ 1e-10 and rounding ~ 1e-16 |g| / h ~ 1e-11 for these O(1) functions."""
    g = fc.grad(f)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        e = e.reshape(x.shape)
        cols.append((g(x + e) - g(x - e)) / (2 * h))
    return np.stack(cols, axis=-1).reshape(x.shape + x.shape)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_jacrev_jacrev_is_the_hessian(name):
    f, x = PROBLEMS[name]
    rr = fc.jacrev(fc.jacrev(f))
    want = fc.hessian(f)(x)
    got = rr(x)
    assert got.shape == x.shape + x.shape and got.dtype == x.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fc.jit(rr)(x), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, _fd_hessian(f, x), rtol=1e-6, atol=1e-7)


def _graph_sizes(graph):
    return [int(np.prod(v.aval.shape)) for e in graph.eqns for v in e.outputs]


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_jacrev_jacrev_graph_is_the_batch_times_the_gradients(name):
    # the outer jacrev is one vmap over the n basis rows of the vjp of the gradient: every
    # value it makes is a cotangent of a value of the gradient's graph, batched n times (a
    # per-row identity matrix pushed through, or a loop, would show as more)
    f, x = PROBLEMS[name]
    per_row = max(_graph_sizes(fc.make_graph(fc.grad(f))(x)))
    for second in (fc.jacrev(fc.jacrev(f)), fc.hessian(f)):
        graph = fc.make_graph(second)(x)
        assert max(_graph_sizes(graph)) <= x.size * max(per_row, x.size)


def test_jacrev_jacrev_of_a_pytree():
    rng = np.random.default_rng(1)
    p = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    xs = rng.normal(size=(4, 3))

    def f(p):
        return np.sum(np.tanh(xs @ p["w"] + p["b"]) ** 2)
    got = fc.jacrev(fc.jacrev(f))(p)
    want = fc.hessian(f)(p)
    assert set(got) == {"w", "b"} and all(set(got[k]) == {"w", "b"} for k in got)
    for a in ("w", "b"):
        for b in ("w", "b"):
            assert got[a][b].shape == p[a].shape + p[b].shape
            np.testing.assert_allclose(got[a][b], want[a][b], rtol=1e-12, atol=1e-14)
    # against central differences on the flattened parameters
    sizes = {k: v.size for k, v in p.items()}

    def flat_f(t):
        return f({"w": t[:sizes["w"]].reshape(3, 2), "b": t[sizes["w"]:]})
    t = np.concatenate([p["w"].ravel(), p["b"]])
    fd = _fd_hessian(flat_f, t)
    nw = sizes["w"]
    np.testing.assert_allclose(got["w"]["w"].reshape(nw, nw), fd[:nw, :nw], atol=1e-7)
    np.testing.assert_allclose(got["w"]["b"].reshape(nw, 2), fd[:nw, nw:], atol=1e-7)
    np.testing.assert_allclose(got["b"]["w"].reshape(2, nw), fd[nw:, :nw], atol=1e-7)
    np.testing.assert_allclose(got["b"]["b"], fd[nw:, nw:], atol=1e-7)


def test_jacrev_jacrev_with_argnums_tuple():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=3), rng.normal(size=(2, 3))

    def f(a, b, scale):
        return scale * np.sum(np.sin(b @ a) ** 2) + np.sum(a ** 3)
    nums = (0, 1)
    got = fc.jacrev(fc.jacrev(f, argnums=nums), argnums=nums)(a, b, 1.5)
    want = fc.hessian(f, argnums=nums)(a, b, 1.5)
    shapes = (a.shape, b.shape)
    for i in range(2):
        for j in range(2):
            assert got[i][j].shape == shapes[i] + shapes[j]
            np.testing.assert_allclose(got[i][j], want[i][j], rtol=1e-12, atol=1e-14)
    # one argument of two: the block of the full Hessian
    only_b = fc.jacrev(fc.jacrev(f, argnums=1), argnums=1)(a, b, 1.5)
    np.testing.assert_allclose(only_b, want[1][1], rtol=1e-12, atol=1e-14)


def test_jacrev_jacrev_with_aux():
    rng = np.random.default_rng(3)
    x = rng.normal(size=5)

    def f(x):
        return np.sum(np.exp(x) * x), {"norm": np.sum(x * x)}
    inner = fc.jacrev(f, has_aux=True)
    h, aux = fc.jacrev(inner, has_aux=True)(x)
    want = fc.hessian(lambda x: f(x)[0])(x)
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, np.diag(np.exp(x) * (x + 2)), rtol=1e-12)
    np.testing.assert_allclose(aux["norm"], np.sum(x * x), rtol=1e-15)


@pytest.mark.parametrize("name", ["elementwise", "lse_quadratic", "mlp"])
def test_vmap_of_jacrev_jacrev_is_the_loop(name):
    f, x = PROBLEMS[name]
    rng = np.random.default_rng(4)
    xs = x + 0.1 * rng.normal(size=(3,) + x.shape)
    rr = fc.jacrev(fc.jacrev(f))
    want = np.stack([rr(xi) for xi in xs])
    np.testing.assert_allclose(fc.vmap(rr)(xs), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fc.jit(fc.vmap(rr))(xs), want, rtol=1e-10, atol=1e-12)
    # batch axis last on the input, first on the output
    np.testing.assert_allclose(fc.vmap(rr, in_dims=-1)(np.moveaxis(xs, 0, -1)), want,
                               rtol=1e-12, atol=1e-14)
