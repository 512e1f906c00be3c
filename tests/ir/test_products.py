"""ir.passes.products: transposed and outer products are rewritten without changing any value."""

from __future__ import annotations

import numpy as np
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import AbstractArray, Eqn, Graph, Var, check_graph, passes
from functorch_core.ir import primitives as P
from functorch_core.ir.passes.products import rewrite_products
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc

DTYPES = [np.float32, np.float64, np.int32, np.bool_, np.complex64, np.float16]


def _dot_graph(lhs_shape, rhs_shape, dn, dtype, perm=None):
    lhs, rhs = Var(AbstractArray(lhs_shape, np.dtype(dtype))), \
        Var(AbstractArray(rhs_shape, np.dtype(dtype)))
    (out,) = P.dot_general.abstract_eval(lhs.aval, rhs.aval, dimension_numbers=dn)
    o = Var(out)
    eqns = [Eqn(P.dot_general, (lhs, rhs), (o,), {"dimension_numbers": dn})]
    if perm is not None:
        (t,) = P.transpose.abstract_eval(out, permutation=perm)
        t_var = Var(t)
        eqns.append(Eqn(P.transpose, (o,), (t_var,), {"permutation": perm}))
        o = t_var
    return Graph([lhs, rhs], eqns, [o])


@st.composite
def dot_problems(draw, contracting):
    nb, nl, nr = draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nc = draw(st.integers(1, 2)) if contracting else 0
    size = st.integers(0, 3)
    batch = [draw(size) for _ in range(nb)]
    contract = [draw(size) for _ in range(nc)]
    lhs_dims = ["b"] * nb + ["l"] * nl + ["c"] * nc
    rhs_dims = ["b"] * nb + ["r"] * nr + ["c"] * nc
    lhs_order = draw(st.permutations(range(len(lhs_dims))))
    rhs_order = draw(st.permutations(range(len(rhs_dims))))

    def layout(kinds, order, free_sizes):
        shape, where = [0] * len(kinds), {"b": [], "c": [], "f": []}
        counters = {"b": 0, "c": 0, "f": 0}
        for pos, k in zip(order, kinds, strict=True):
            key = "f" if k in "lr" else k
            i = counters[key]
            counters[key] += 1
            shape[pos] = {"b": batch, "c": contract}.get(k, free_sizes)[i]
            where[key].append(pos)
        return tuple(shape), where

    lshape, lw = layout(lhs_dims, lhs_order, [draw(size) for _ in range(nl)])
    rshape, rw = layout(rhs_dims, rhs_order, [draw(size) for _ in range(nr)])
    dn = ((tuple(lw["c"]), tuple(rw["c"])), (tuple(lw["b"]), tuple(rw["b"])))
    return lshape, rshape, dn, draw(st.sampled_from(DTYPES))


def _values(shape, dtype, rng):
    x = rng.normal(size=shape) * 3
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype) if np.dtype(dtype).kind != "b" else x > 0


def _check_same(graph, new, rng):
    check_graph(new)
    args = [_values(v.aval.shape, v.aval.dtype, rng) for v in graph.inputs]
    want, got = run_graph(graph, args)[0], run_graph(new, args)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@given(dot_problems(contracting=False), st.integers(0, 2 ** 32 - 1))
def test_outer_products_become_an_exact_mul(problem, seed):
    lshape, rshape, dn, dtype = problem
    graph = _dot_graph(lshape, rshape, dn, dtype)
    new = rewrite_products(graph)
    if np.dtype(dtype).kind == "c":     # BLAS may round a complex product differently
        assert new is graph
        return
    assert [e.prim for e in new.eqns].count(P.dot_general) == 0
    assert new.eqns[-1].prim is P.mul and new.outputs[0] is graph.outputs[0]
    _check_same(graph, new, np.random.default_rng(seed))


@given(dot_problems(contracting=True), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_a_transposed_product_is_the_swapped_product(problem, swap, seed):
    lshape, rshape, dn, dtype = problem
    base = _dot_graph(lshape, rshape, dn, dtype)
    (out,) = base.eqns[0].outputs
    nb, nr = len(dn[1][0]), len(rshape) - len(dn[0][1]) - len(dn[1][1])
    nl = out.aval.ndim - nb - nr
    perm = (*range(nb), *range(nb + nl, nb + nl + nr), *range(nb, nb + nl))
    if not swap:       # any other permutation is left alone
        perm = tuple(reversed(range(out.aval.ndim)))
    graph = _dot_graph(lshape, rshape, dn, dtype, perm)
    new = rewrite_products(graph)
    rewritten = [e.prim for e in new.eqns] == [P.dot_general]
    assert rewritten == (swap or perm == (*range(nb), *range(nb + nl, nb + nl + nr),
                                          *range(nb, nb + nl)))
    if np.dtype(dtype).kind in "fc" and (rewritten or np.dtype(dtype) == np.float16):
        # a swapped product may sum in another order: equal up to rounding
        args = [_values(v.aval.shape, v.aval.dtype, np.random.default_rng(seed))
                for v in graph.inputs]
        np.testing.assert_allclose(run_graph(new, args)[0], run_graph(graph, args)[0],
                                   rtol=2e-3 if dtype == np.float16 else 1e-5, atol=1e-3)
        check_graph(new)
    else:
        _check_same(graph, new, np.random.default_rng(seed))


def test_a_transpose_that_is_also_used_elsewhere_keeps_the_product():
    x = Var(AbstractArray((3, 4), np.dtype(np.float64)))
    y = Var(AbstractArray((4, 5), np.dtype(np.float64)))
    d, t = Var(AbstractArray((3, 5), np.dtype(np.float64))), \
        Var(AbstractArray((5, 3), np.dtype(np.float64)))
    dn = (((1,), (0,)), ((), ()))
    graph = Graph([x, y], [Eqn(P.dot_general, (x, y), (d,), {"dimension_numbers": dn}),
                           Eqn(P.transpose, (d,), (t,), {"permutation": (1, 0)})], [t, d])
    assert rewrite_products(graph) is graph


def test_per_sample_gradients_write_each_gradient_once():
    """Reverse mode of a batched matmul: outer products of per-example vectors, no GEMM
    with k=1 and no transposed copy of the (batch, in, out) gradients."""
    def loss(w, x):
        return np.sum(np.tanh(x @ w))
    w, xs = np.ones((3, 4)), np.arange(15.0).reshape(5, 3) / 15
    f = fc.vmap(fc.grad(loss), in_dims=(None, 0))
    graph = passes.simplify(fc.make_graph(f)(w, xs))
    assert not any(e.prim in (P.dot_general, P.transpose) and e.outputs[0].aval.ndim == 3
                   for e in graph.eqns), graph
    want = np.stack([fc.grad(loss)(w, x) for x in xs])
    np.testing.assert_allclose(fc.jit(f)(w, xs), want, rtol=1e-12)
    np.testing.assert_allclose(fc.jit(f, backend="interpreter")(w, xs), want, rtol=1e-12)


def test_the_symmetrised_hessian_of_an_affine_argument_has_no_transposed_copy():
    """hessian = jacfwd(jacrev): its d x d product reaches the result through a transpose
    only once CSE and DCE have removed the product's other uses; the transposed product
    must still fold into the product (BLAS's transpose flags, no copy)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6)) / 3
    x = rng.standard_normal(6)

    def f(x):
        z = a @ x
        m = np.max(z)
        return np.log(np.sum(np.exp(z - m))) + m + 0.5 * np.sum(x * x)
    graph = passes.simplify(fc.make_graph(fc.hessian(f))(x))
    products = {id(e.outputs[0]) for e in graph.eqns if e.prim is P.dot_general}
    assert any(e.prim is P.dot_general and e.outputs[0].aval.shape == (6, 6)
               for e in graph.eqns), graph
    assert not any(e.prim is P.transpose and id(e.inputs[0]) in products
                   for e in graph.eqns), graph
    p = np.exp(a @ x - np.max(a @ x))
    p /= p.sum()
    want = a.T @ (np.diag(p) - np.outer(p, p)) @ a + np.eye(6)
    np.testing.assert_allclose(run_graph(graph, [x])[0], want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fc.jit(fc.hessian(f))(x), want, rtol=1e-12, atol=1e-14)


@given(dot_problems(contracting=True), st.data(), st.integers(0, 2 ** 32 - 1))
def test_a_product_of_a_transposed_operand_reads_the_operand(problem, data, seed):
    """dot_general(transpose(a, perm), b) reads ``a`` with mapped dimension numbers when
    ``perm`` keeps the free dimensions in order (the result's layout is the same)."""
    lshape, rshape, dn, dtype = problem
    side = data.draw(st.sampled_from([0, 1]))
    shapes = [lshape, rshape]
    nd = len(shapes[side])
    perm = tuple(data.draw(st.permutations(range(nd))))
    inv = tuple(int(i) for i in np.argsort(perm))
    # the operand as given to the product is transpose(src, perm), src of the inverse layout
    src = Var(AbstractArray(tuple(shapes[side][i] for i in inv), np.dtype(dtype)))
    other = Var(AbstractArray(shapes[1 - side], np.dtype(dtype)))
    (t_aval,) = P.transpose.abstract_eval(src.aval, permutation=perm)
    t = Var(t_aval)
    ops = (t, other) if side == 0 else (other, t)
    (out,) = P.dot_general.abstract_eval(ops[0].aval, ops[1].aval, dimension_numbers=dn)
    o = Var(out)
    graph = Graph([src, other], [Eqn(P.transpose, (src,), (t,), {"permutation": perm}),
                                 Eqn(P.dot_general, ops, (o,), {"dimension_numbers": dn})],
                  [o])
    new = rewrite_products(graph)
    check_graph(new)
    c, b = dn[0][side], dn[1][side]
    free = [perm[i] for i in range(nd) if i not in c and i not in b]
    folded = P.transpose not in [e.prim for e in new.eqns]
    assert folded == (free == sorted(free))
    if folded:
        dots = [e for e in new.eqns if e.prim is P.dot_general]
        assert not dots or dots[0].inputs[side] is src
    args = [_values(v.aval.shape, v.aval.dtype, np.random.default_rng(seed))
            for v in graph.inputs]
    want, got = run_graph(graph, args)[0], run_graph(new, args)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.dtype(dtype).kind in "fc":
        np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float16 else 1e-5,
                                   atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)


def test_vmapped_matmul_against_a_transposed_weight_has_no_transposed_copy():
    w = np.random.default_rng(0).standard_normal((10, 6, 5))
    x = np.random.default_rng(1).standard_normal((4, 5))
    f = fc.vmap(lambda w, x: x @ w.T, in_dims=(0, None))
    graph = passes.simplify(fc.make_graph(f)(w, x))
    prims = [e.prim for e in graph.eqns]
    assert prims.count(P.dot_general) == 1 and graph.eqns[0].prim is P.dot_general
    assert prims.count(P.transpose) <= 1        # at most the result's, none of the weights
    np.testing.assert_allclose(fc.jit(f)(w, x), np.einsum("nk,eok->eno", x, w), rtol=1e-12)
