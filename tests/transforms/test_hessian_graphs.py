"""Lean Jacobian graphs: jacrev of one output element without a size-1 batch, and
``ir.passes.algebra.simplify_products`` turning products with identity matrices into layout
changes (values, non-finite inputs, what it must leave alone)."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import AbstractArray, Eqn, Graph, Lit, Var, check_graph
from functorch_core.ir import primitives as P
from functorch_core.ir.passes.algebra import simplify_products
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.testing import check_grads


def _lse_quadratic(q):
    def f(z):
        m = np.max(z)
        return np.log(np.sum(np.exp(z - m))) + m + 0.5 * z @ q @ z
    return f


def _lse_quadratic_hessian(q, z):
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.diag(p) - np.outer(p, p) + q


def _graph_of(jitted, *args):
    jitted(*args)
    return next(iter(jitted.cache.values())).graph


def _prims(graph):
    return [e.prim.name for e in graph.eqns]


# --- hessian / jacrev / jacfwd values ---------------------------------------------------

@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_hessian_of_logsumexp_plus_quadratic(backend):
    rng = np.random.default_rng(0)
    d = 24                       # the identity basis is too big to be folded as a constant
    a = rng.normal(size=(d, d))
    q = a @ a.T / d
    z = rng.normal(size=d)
    f = _lse_quadratic(q)
    want = _lse_quadratic_hessian(q, z)
    np.testing.assert_allclose(fc.jit(fc.hessian(f), backend=backend)(z), want,
                               rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fc.hessian(f)(z), want, rtol=1e-12, atol=1e-13)
    check_grads(f, (z,), order=2)


def test_hessian_graph_has_no_products_and_no_size1_axes():
    rng = np.random.default_rng(1)
    d = 32
    q = rng.normal(size=(d, d))
    graph = _graph_of(fc.jit(fc.hessian(_lse_quadratic(q))), rng.normal(size=d))
    assert "dot_general" not in _prims(graph)
    shapes = [v.aval.shape for e in graph.eqns for v in e.outputs]
    assert all(1 not in s for s in shapes), shapes


def test_jacrev_of_scalar_is_one_vjp_without_a_batch():
    w = np.linspace(-1.0, 1.0, 12).reshape(3, 4)

    def f(x):
        return np.sum(np.tanh(w @ x))
    x = np.linspace(0.1, 0.9, 4)
    graph = _graph_of(fc.jit(fc.jacrev(f)), x)
    assert all(1 not in v.aval.shape for e in graph.eqns for v in e.outputs)
    np.testing.assert_allclose(fc.jacrev(f)(x), fc.grad(f)(x), rtol=1e-14)
    # against jit(grad): the cpu backend's tanh need not be bit-equal to NumPy's, and entry 2
    # cancels ~300x (a 1-ulp tanh difference moves it by 1e-13 relative)
    np.testing.assert_allclose(fc.jit(fc.jacrev(f))(x), fc.jit(fc.grad(f))(x), rtol=1e-14)


@pytest.mark.parametrize("out_shape", [(), (1,), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jacrev_of_one_element_output_shapes_and_dtypes(out_shape, dtype):
    x = np.array([0.5, -1.5, 2.0], dtype)
    y = np.array([[1.0, 2.0], [3.0, 4.0]], dtype)

    def f(x, y):
        return np.reshape(np.sum(np.sin(x)) * np.sum(y * y), out_shape)
    jx, jy = fc.jacrev(f, argnums=(0, 1))(x, y)
    assert jx.shape == out_shape + x.shape and jx.dtype == dtype
    assert jy.shape == out_shape + y.shape and jy.dtype == dtype
    np.testing.assert_allclose(jx.reshape(x.shape), np.cos(x) * np.sum(y * y), rtol=1e-6)
    np.testing.assert_allclose(jy.reshape(y.shape), 2 * y * np.sum(np.sin(x)), rtol=1e-6)
    fwd = fc.jacfwd(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, fwd[0], rtol=1e-6)
    np.testing.assert_allclose(jy, fwd[1], rtol=1e-6)


def test_jacrev_of_one_element_pytree_aux_and_chunks():
    def f(p):
        out = np.sum(p["a"] ** 2) + np.prod(p["b"])
        return {"loss": out}, p["a"] * 2
    p = {"a": np.array([1.0, 2.0]), "b": np.array([[3.0, 4.0]])}
    for chunk in (None, 1, 3):
        jac, aux = fc.jacrev(f, has_aux=True, chunk_size=chunk)(p)
        np.testing.assert_array_equal(aux, [2.0, 4.0])
        np.testing.assert_allclose(jac["loss"]["a"], [2.0, 4.0])
        np.testing.assert_allclose(jac["loss"]["b"], [[4.0, 3.0]])
    jit_jac, _ = fc.jit(fc.jacrev(f, has_aux=True))(p)
    np.testing.assert_allclose(jit_jac["loss"]["b"], [[4.0, 3.0]])


def test_jacrev_of_one_complex_element():
    x = np.array([0.5 + 1.0j, -1.0 + 0.25j])
    jac = fc.jacrev(lambda x: np.sum(x * x, keepdims=True), holomorphic=True)(x)
    want = fc.jacfwd(lambda x: np.sum(x * x, keepdims=True), holomorphic=True)(x)
    assert jac.shape == (1, 2) and jac.dtype == np.complex128
    np.testing.assert_allclose(jac, want)


@pytest.mark.parametrize("chunk", [None, 5])
def test_jacfwd_of_matrix_product_matches_the_matrix(chunk):
    rng = np.random.default_rng(2)
    w = rng.normal(size=(9, 7))
    x = rng.normal(size=7)
    jf = fc.jit(fc.jacfwd(lambda w, x: np.tanh(w @ x), argnums=1, chunk_size=chunk))
    want = (1 - np.tanh(w @ x) ** 2)[:, None] * w
    np.testing.assert_allclose(jf(w, x), want, rtol=1e-12, atol=1e-14)
    jr = fc.jit(fc.jacrev(lambda w, x: np.tanh(w @ x), argnums=1, chunk_size=chunk))
    np.testing.assert_allclose(jr(w, x), want, rtol=1e-12, atol=1e-14)


def test_jacfwd_identity_product_with_nonfinite_argument_is_nan_like_the_product():
    w = np.array([[1.0, 2.0, 3.0], [np.inf, 0.5, -1.0], [2.0, np.nan, 4.0], [1.0, 1.0, 1.0]])
    x = np.array([0.5, -0.5, 1.5])
    jf = fc.jit(fc.jacfwd(lambda w, x: w @ x, argnums=1))
    assert "dot_general" not in _prims(_graph_of(jf, w, x))
    got = jf(w, x)
    with np.errstate(invalid="ignore"):
        want = w @ np.eye(3)      # what pushing the basis through a matrix product gives
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[1, 1]) and got[1, 0] == np.inf


# --- simplify_products on hand-built graphs ---------------------------------------------

def _product_graph(lhs, rhs, dn):
    """``dot_general(lhs, rhs)`` where each side is an aval (an input) or a Lit."""
    inputs = [a for a in (lhs, rhs) if isinstance(a, AbstractArray)]
    vars_ = {id(a): Var(a) for a in inputs}
    atoms = [vars_[id(a)] if isinstance(a, AbstractArray) else a for a in (lhs, rhs)]
    (aval,) = P.dot_general.shape_rule(*(a.aval for a in atoms), dimension_numbers=dn)
    out = Var(aval)
    eqn = Eqn(P.dot_general, tuple(atoms), (out,), {"dimension_numbers": dn})
    return Graph([vars_[id(a)] for a in inputs], [eqn], [out])


def _rewritten(graph):
    from functorch_core.ir import passes
    return check_graph(passes.dce(simplify_products(graph)))


def _run_all(graph, args):
    """The interpreter and the cpu backend on ``graph``, the interpreter on the original."""
    new = _rewritten(graph)
    return (run_graph(graph, args)[0], run_graph(new, args)[0],
            registry.get("cpu").compile(new)(list(args))[0], new)


def _assert_products_rewritten_exactly(graph, args):
    """The rewrite leaves no dot_general, and the interpreter and the cpu backend on the
    rewritten graph give the original's bits. Returns the rewritten graph."""
    want, interp, cpu, new = _run_all(graph, args)
    assert "dot_general" not in _prims(new)
    np.testing.assert_array_equal(interp, want)
    np.testing.assert_array_equal(cpu, want)
    return new


MATMUL = (((1,), (0,)), ((), ()))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
@pytest.mark.parametrize("eye_side", ["lhs", "rhs"])
@pytest.mark.parametrize("contract", [0, 1])
def test_identity_product_becomes_a_layout_change(dtype, eye_side, contract):
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(5, 5)) * 10).astype(dtype)
    eye = Lit(np.eye(5, dtype=dtype))
    xa = AbstractArray(x.shape, np.dtype(dtype))
    dn = (((contract,), (1,)), ((), ())) if eye_side == "rhs" else (((1,), (contract,)), ((), ()))
    graph = _product_graph(xa, eye, dn) if eye_side == "rhs" else _product_graph(eye, xa, dn)
    want, interp, cpu, new = _run_all(graph, [x])
    assert "dot_general" not in _prims(new)
    assert interp.dtype == want.dtype and interp.shape == want.shape
    np.testing.assert_array_equal(interp, want)
    np.testing.assert_array_equal(cpu, want)


def test_rank3_operand_moves_its_contracted_axis():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 6, 3))
    xa = AbstractArray(x.shape, np.dtype(np.float64))
    for graph in (_product_graph(xa, Lit(np.eye(6)), (((1,), (0,)), ((), ()))),
                  _product_graph(Lit(np.eye(6)), xa, (((0,), (1,)), ((), ())))):
        want, interp, cpu, new = _run_all(graph, [x])
        assert _prims(new) == ["transpose", "is_finite", "not", "convert", "reduce_sum",
                               "broadcast_in_dim", "transpose", "gt", "select"]
        np.testing.assert_array_equal(interp, want)
        np.testing.assert_array_equal(cpu, want)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_nonfinite_entries_give_the_products_nans(bad):
    x = np.arange(20.0).reshape(4, 5)
    x[1, 2] = bad
    x[3, 0] = np.inf
    x[3, 4] = bad                # a column whose only non-finite entry is on the diagonal
    xa = AbstractArray(x.shape, np.dtype(np.float64))
    for graph in (_product_graph(Lit(np.eye(4)), xa, MATMUL),
                  _product_graph(xa, Lit(np.eye(5)), MATMUL),
                  _product_graph(xa, Lit(np.eye(4)), (((0,), (0,)), ((), ())))):
        want, interp, cpu, _ = _run_all(graph, [x])
        assert np.isnan(want).any()
        np.testing.assert_array_equal(interp, want)
        np.testing.assert_array_equal(cpu, want)


def test_scaled_identity_literal_and_scaled_by_equations():
    x = np.arange(12.0).reshape(3, 4) - 5.0
    xa = AbstractArray(x.shape, np.dtype(np.float64))
    graph = _product_graph(Lit(2.5 * np.eye(3)), xa, MATMUL)
    _assert_products_rewritten_exactly(graph, [x])

    # 0.5 * -(broadcast(3) * I) @ x, the way jvp of a scaled product meets the basis
    xv = Var(xa)
    f64 = np.dtype(np.float64)
    three = Var(AbstractArray((3, 3), f64))
    s1, s2, s3 = (Var(AbstractArray((3, 3), f64)) for _ in range(3))
    out = Var(AbstractArray((3, 4), f64))
    eqns = [Eqn(P.broadcast_in_dim, (Lit(np.float64(3.0)),), (three,),
                {"shape": (3, 3), "broadcast_dimensions": ()}),
            Eqn(P.mul, (three, Lit(np.eye(3))), (s1,), {}),
            Eqn(P.neg, (s1,), (s2,), {}),
            Eqn(P.mul, (Lit(np.float64(0.5)), s2), (s3,), {}),
            Eqn(P.dot_general, (s3, xv), (out,), {"dimension_numbers": MATMUL})]
    graph = Graph([xv], eqns, [out])
    assert "neg" not in _prims(_assert_products_rewritten_exactly(graph, [x]))


@pytest.mark.parametrize("matrix", [
    np.diag([1.0, 2.0, 1.0]),                       # diagonal, not a multiple of I
    np.eye(3) + np.eye(3, k=1) * 1e-300,             # one tiny off-diagonal entry
    np.eye(3)[::-1],                                 # a permutation
    np.zeros((3, 3)),
    np.where(np.eye(3) == 1, np.nan, 0.0),
    np.where(np.eye(3) == 1, np.inf, 0.0),
])
def test_non_identity_literals_are_left_alone(matrix):
    xa = AbstractArray((3, 4), np.dtype(np.float64))
    graph = _product_graph(Lit(matrix), xa, MATMUL)
    assert "dot_general" in _prims(_rewritten(graph))


def test_batched_and_multi_contraction_products_are_left_alone():
    eye = Lit(np.eye(3))
    batched = _product_graph(eye, AbstractArray((3, 3), np.dtype(np.float64)),
                             (((1,), (1,)), ((0,), (0,))))        # a diagonal extraction
    both = _product_graph(eye, AbstractArray((3, 3), np.dtype(np.float64)),
                          (((0, 1), (0, 1)), ((), ())))           # a trace
    for graph in (batched, both):
        assert "dot_general" in _prims(_rewritten(graph))


def test_literal_operand_is_folded_only_when_finite():
    q = np.arange(12.0).reshape(3, 4)
    graph = _product_graph(Lit(np.eye(3)), Lit(q), MATMUL)
    new = _rewritten(graph)
    assert new.eqns == [] and isinstance(new.outputs[0], Lit)
    np.testing.assert_array_equal(new.outputs[0].value, q)
    q[0, 0] = np.inf
    graph = _product_graph(Lit(np.eye(3)), Lit(q.copy()), (((0,), (0,)), ((), ())))
    assert "dot_general" in _prims(_rewritten(graph))


def test_complex_products():
    x = np.array([[1 + 2j, 3 - 1j], [0.5j, -2.0]])
    xa = AbstractArray(x.shape, np.dtype(np.complex128))
    eye = Lit(np.eye(2, dtype=np.complex128))
    assert "dot_general" in _prims(_rewritten(_product_graph(eye, xa, MATMUL)))
    graph = _product_graph(eye, Lit(x), (((0,), (0,)), ((), ())))
    new = _rewritten(graph)
    assert new.eqns == []
    np.testing.assert_array_equal(new.outputs[0].value, run_graph(graph, [])[0])


def test_multiplication_by_one():
    f64 = np.dtype(np.float64)
    x = Var(AbstractArray((4,), f64))
    ones, out = Var(AbstractArray((4,), f64)), Var(AbstractArray((4,), f64))
    graph = Graph([x], [Eqn(P.broadcast_in_dim, (Lit(np.float64(1.0)),), (ones,),
                            {"shape": (4,), "broadcast_dimensions": ()}),
                        Eqn(P.mul, (ones, x), (out,), {})], [out])
    new = _rewritten(graph)
    assert new.eqns == [] and new.outputs[0] is x
    c128 = np.dtype(np.complex128)
    xc, oc = Var(AbstractArray((2,), c128)), Var(AbstractArray((2,), c128))
    kept = Graph([xc], [Eqn(P.mul, (xc, Lit(np.ones(2, c128))), (oc,), {})], [oc])
    assert _prims(_rewritten(kept)) == ["mul"]   # (inf + 0j) * (1 + 0j) has a NaN part


def test_negative_zero_differs_only_in_sign():
    x = np.array([[-0.0, 1.0], [2.0, -0.0]])
    graph = _product_graph(Lit(np.eye(2)), AbstractArray(x.shape, np.dtype(np.float64)),
                           MATMUL)
    want, interp, cpu, _ = _run_all(graph, [x])
    assert np.all(interp == want) and np.all(cpu == want)


# --- transposes move into the computation that feeds them --------------------------------

def _eqn(prim, inputs, **params):
    (aval,) = prim.shape_rule(*(a.aval for a in inputs), **params)
    return Eqn(prim, tuple(inputs), (Var(aval),), params)


def test_transpose_of_transpose_composes():
    x = Var(AbstractArray((2, 3, 4), np.dtype(np.float64)))
    t1 = _eqn(P.transpose, [x], permutation=(1, 2, 0))
    t2 = _eqn(P.transpose, [t1.outputs[0]], permutation=(2, 0, 1))
    t3 = _eqn(P.transpose, [t2.outputs[0]], permutation=(0, 2, 1))
    back = _rewritten(Graph([x], [t1, t2], [t2.outputs[0]]))
    assert back.eqns == [] and back.outputs[0] is x
    once = _rewritten(Graph([x], [t1, t2, t3], [t3.outputs[0]]))
    assert [e.params["permutation"] for e in once.eqns] == [(0, 2, 1)]


def test_transpose_moves_through_single_use_elementwise_ops():
    rng = np.random.default_rng(5)
    f64 = np.dtype(np.float64)
    x = Var(AbstractArray((2, 4, 3), f64))
    v = Var(AbstractArray((2, 3), f64))
    c = Lit(rng.normal(size=(2, 4, 3)))
    b = _eqn(P.broadcast_in_dim, [v], shape=(2, 4, 3), broadcast_dimensions=(0, 2))
    m = _eqn(P.mul, [x, c])
    s = _eqn(P.add, [m.outputs[0], b.outputs[0]])
    e = _eqn(P.exp, [s.outputs[0]])
    t = _eqn(P.transpose, [e.outputs[0]], permutation=(2, 0, 1))
    graph = Graph([x, v], [b, m, s, e, t], [t.outputs[0]])
    args = [rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 3))]
    want, interp, cpu, new = _run_all(graph, args)
    assert _prims(new)[-1] == "exp"
    # the input and the broadcast's (reordered) operand are transposed, nothing else
    assert [e.inputs[0] for e in new.eqns if e.prim is P.transpose] == [x, v]
    np.testing.assert_array_equal(interp, want)
    np.testing.assert_array_equal(cpu, want)


def test_transpose_of_a_shared_value_stays_a_transpose():
    f64 = np.dtype(np.float64)
    x = Var(AbstractArray((3, 4), f64))
    e = _eqn(P.exp, [x])
    t = _eqn(P.transpose, [e.outputs[0]], permutation=(1, 0))
    graph = Graph([x], [e, t], [t.outputs[0], e.outputs[0]])
    new = _rewritten(graph)
    assert _prims(new) == ["exp", "transpose"]
    assert new.eqns[1].inputs[0] is new.eqns[0].outputs[0]


def test_jacfwd_graph_ends_in_the_fused_computation():
    w = np.arange(12.0).reshape(4, 3) / 10
    jf = fc.jit(fc.jacfwd(lambda x: np.tanh(w @ x)))
    x = np.array([0.5, -0.5, 1.0])
    graph = _graph_of(jf, x)
    assert "transpose" not in _prims(graph) and "dot_general" in _prims(graph)
    np.testing.assert_allclose(jf(x), (1 - np.tanh(w @ x) ** 2)[:, None] * w, rtol=1e-14)


# --- diagonal matrices: c * I times a broadcast vector ------------------------------------

def _diagonal_product_graph(n, r, vdim, eye_side, contract, dtype, scale):
    """``dot_general(scale * I * broadcast(v, vdim), x)`` (or with x on the left)."""
    dt = np.dtype(dtype)
    v = Var(AbstractArray((n,), dt))
    x = Var(AbstractArray((n, r) if eye_side == "lhs" else (r, n), dt))
    b = _eqn(P.broadcast_in_dim, [v], shape=(n, n), broadcast_dimensions=(vdim,))
    d = _eqn(P.mul, [Lit((scale * np.eye(n)).astype(dt)), b.outputs[0]])
    if eye_side == "lhs":
        dot = _eqn(P.dot_general, [d.outputs[0], x], dimension_numbers=(((contract,), (0,)),
                                                                         ((), ())))
    else:
        dot = _eqn(P.dot_general, [x, d.outputs[0]], dimension_numbers=(((1,), (contract,)),
                                                                         ((), ())))
    return Graph([v, x], [b, d, dot], [dot.outputs[0]])


@pytest.mark.parametrize("vdim", [0, 1])
@pytest.mark.parametrize("eye_side", ["lhs", "rhs"])
@pytest.mark.parametrize("contract", [0, 1])
@pytest.mark.parametrize("case", ["finite", "x_inf", "x_nan_alone", "v_inf", "v_nan", "int"])
def test_diagonal_matrix_product_is_a_row_scaling(vdim, eye_side, contract, case):
    rng = np.random.default_rng(6)
    n, r = 4, 3
    dtype = np.int64 if case == "int" else np.float64
    v = (rng.normal(size=n) * 5).astype(dtype)
    x = (rng.normal(size=(n, r)) * 5).astype(dtype)
    if case == "x_inf":
        x[1, 2], x[3, 0] = np.inf, -np.inf
    elif case == "x_nan_alone":
        x[2, 1] = np.nan
    elif case == "v_inf":
        v[1] = np.inf
    elif case == "v_nan":
        v[3] = np.nan
    if eye_side == "rhs":
        x = np.ascontiguousarray(x.T)
    graph = _diagonal_product_graph(n, r, vdim, eye_side, contract, dtype, 2.0)
    with np.errstate(invalid="ignore"):
        _assert_products_rewritten_exactly(graph, [v, x])


def test_jacrev_of_elementwise_after_matrix_product_has_no_product_left():
    rng = np.random.default_rng(7)
    w, b, x = rng.normal(size=(6, 5)), rng.normal(size=6), rng.normal(size=5)
    jr = fc.jit(fc.jacrev(lambda w, b, x: np.tanh(w @ x + b), argnums=2))
    graph = _graph_of(jr, w, b, x)
    assert _prims(graph).count("dot_general") == 1          # only the primal w @ x
    np.testing.assert_allclose(jr(w, b, x), (1 - np.tanh(w @ x + b) ** 2)[:, None] * w,
                               rtol=1e-13, atol=1e-15)


def test_transpose_after_a_long_elementwise_chain():
    f64 = np.dtype(np.float64)
    x = Var(AbstractArray((2, 3), f64))
    eqns, y = [], x
    for _ in range(3000):
        eqns.append(_eqn(P.sin, [y]))
        y = eqns[-1].outputs[0]
    eqns.append(_eqn(P.transpose, [y], permutation=(1, 0)))
    graph = Graph([x], eqns, [eqns[-1].outputs[0]])
    args = [np.arange(6.0).reshape(2, 3)]
    want, interp, _, new = _run_all(graph, args)
    assert _prims(new).count("transpose") == 1 and _prims(new)[-1] == "sin"
    np.testing.assert_array_equal(interp, want)


# --- slices of identity matrices (chunked jacobians) --------------------------------------

@pytest.mark.parametrize("rows, contract", [(slice(2, 5), 1), (slice(0, 6), 1),
                                            (slice(None), 0)])
@pytest.mark.parametrize("case", ["finite", "bad_picked", "bad_elsewhere"])
def test_identity_slices_pick_rows(rows, contract, case):
    eye = np.eye(6)[rows] if contract == 1 else np.eye(6)[:, 1:4]
    x = np.arange(18.0).reshape(6, 3) - 7.0
    if case == "bad_picked":
        x[2, 1] = np.inf
    elif case == "bad_elsewhere":
        x[5, 0] = np.nan
    xa = AbstractArray(x.shape, np.dtype(np.float64))
    graph = _product_graph(Lit(eye), xa, (((contract,), (0,)), ((), ())))
    with np.errstate(invalid="ignore"):
        _assert_products_rewritten_exactly(graph, [x])


def test_identity_slice_that_would_pad_is_left_alone():
    xa = AbstractArray((3, 4), np.dtype(np.float64))
    graph = _product_graph(Lit(np.eye(6)[2:5]), xa, (((0,), (0,)), ((), ())))
    assert "dot_general" in _prims(_rewritten(graph))
    partial = np.zeros((3, 6))
    partial[0, 4] = partial[1, 5] = 1.0       # a diagonal that stops short
    graph = _product_graph(Lit(partial), AbstractArray((6, 2), np.dtype(np.float64)), MATMUL)
    assert "dot_general" in _prims(_rewritten(graph))


def test_sliced_and_scaled_identity_equations():
    x = np.arange(24.0).reshape(6, 4)
    x[0, 3] = np.inf
    xv = Var(AbstractArray(x.shape, np.dtype(np.float64)))
    s = _eqn(P.slice, [Lit(np.eye(6))], start_indices=(3, 0), limit_indices=(5, 6),
             strides=(1, 1))
    m = _eqn(P.mul, [Lit(np.float64(-0.5)), s.outputs[0]])
    dot = _eqn(P.dot_general, [m.outputs[0], xv], dimension_numbers=MATMUL)
    graph = Graph([xv], [s, m, dot], [dot.outputs[0]])
    with np.errstate(invalid="ignore"):
        _assert_products_rewritten_exactly(graph, [x])


def test_chunked_hessian_has_no_products():
    rng = np.random.default_rng(8)
    d = 20
    q = rng.normal(size=(d, d))
    z = rng.normal(size=d)
    f = _lse_quadratic(q)
    jh = fc.jit(fc.hessian(f, chunk_size=7))
    assert "dot_general" not in _prims(_graph_of(jh, z))
    want = _lse_quadratic_hessian((q + q.T) / 2, z)
    np.testing.assert_allclose(jh(z), want, rtol=1e-12, atol=1e-13)


SPECIAL = [0.0, -0.0, 1.5, -3.0, np.inf, -np.inf, np.nan, 1e308]


@given(data=st.data(), n=st.integers(1, 4), rest=st.lists(st.integers(1, 3), max_size=2),
       scale=st.sampled_from([1.0, -2.5, 0.5]), eye_first=st.booleans(),
       contract=st.integers(0, 1), rows=st.integers(0, 2))
def test_identity_like_products_match_the_product(data, n, rest, scale, eye_first, contract,
                                                   rows):
    """Random (sliced, scaled) identities against random operands with special values."""
    j = data.draw(st.integers(0, len(rest)))
    shape = (*rest[:j], n, *rest[j:])
    x = np.array(data.draw(st.lists(st.sampled_from(SPECIAL) | st.floats(-4, 4),
                                    min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), np.float64).reshape(shape)
    skip = min(rows, n - 1)        # drop leading rows (columns) of I: a chunk of the basis
    eye = scale * (np.eye(n)[skip:] if contract == 1 else np.eye(n)[:, skip:])
    xa = AbstractArray(shape, np.dtype(np.float64))
    dn = (((contract,), (j,)), ((), ())) if eye_first else (((j,), (contract,)), ((), ()))
    graph = _product_graph(Lit(eye), xa, dn) if eye_first else _product_graph(xa, Lit(eye), dn)
    with np.errstate(all="ignore"):
        _assert_products_rewritten_exactly(graph, [x])


def test_hessian_of_elementwise_sum_leaves_no_transposed_copy():
    # jacfwd's columns-to-rows transpose meets an elementwise result that CSE and DCE leave
    # with one use; it must move into that result's loop, not copy the d x d second derivative
    x = np.random.default_rng(5).normal(size=24)

    def f(x):
        return np.sum(np.sin(x) * x ** 2 + np.exp(-x * x))
    jitted = fc.jit(fc.hessian(f))
    d2 = (2 - x * x) * np.sin(x) + 4 * x * np.cos(x) + (4 * x * x - 2) * np.exp(-x * x)
    np.testing.assert_allclose(jitted(x), np.diag(d2), rtol=1e-12, atol=1e-14)
    assert "transpose" not in _prims(_graph_of(jitted, x))
    np.testing.assert_allclose(fc.jit(fc.hessian(f), backend="interpreter")(x), np.diag(d2),
                               rtol=1e-12, atol=1e-14)
