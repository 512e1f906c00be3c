"""Forward and reverse mode: rules against finite differences, laws, API, errors, caching."""

import sys

import numpy as np
import pytest
from functorch_core.ir import primitives as P
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from op_table import OPS_BY_NAME
from prim_cases import CASES as PRIM_CASES
from prim_cases import INTEGER_OPERANDS, INTEGER_OUTPUT, PIECEWISE_CONSTANT

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.testing import check_grads

F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)


def _sum(x):
    return P.reduce_sum.bind(x, axes=tuple(range(np.ndim(x) if not hasattr(x, "ndim")
                                                 else x.ndim)))


# --- the primitive case table (tests/prim_cases.py) crossed with check_grads ----------------

GRAD_CASES = [c for c in PRIM_CASES if c.grad is None]


def _in_inexact(c, args):
    """``c.f`` as a function of the inexact arguments alone (the others held fixed)."""
    where = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind in "fc"]

    def f(*xs):
        full = list(args)
        for i, x in zip(where, xs, strict=True):
            full[i] = x
        return c.f(*full)
    return f, tuple(args[i] for i in where)


@pytest.mark.parametrize("c", GRAD_CASES, ids=lambda c: c.name)
@settings(max_examples=2)
@given(sizes=st.tuples(*[st.integers(1, 3)] * 3), seed=st.integers(0, 2**16))
def test_check_grads_case_table(c, sizes, seed):
    f, args = _in_inexact(c, c.args(np.random.default_rng(seed), *sizes))
    check_grads(f, args, order=c.grad_order, modes=("fwd", "rev"))


@pytest.mark.parametrize("c", [c for c in PRIM_CASES if c.grad is not None], ids=lambda c: c.name)
def test_the_grad_exceptions_of_the_case_table_hold(c):
    """A row's reason for skipping check_grads is checked where it is a fact: integer outputs
    or operands, and a zero derivative away from the jumps."""
    args = c.args(np.random.default_rng(0), 3, 2, 3)
    kinds = [np.asarray(o).dtype.kind for o in fc.tree_leaves(c.f(*args))]
    if c.grad == INTEGER_OUTPUT:
        assert not set(kinds) & set("fc"), kinds
    elif c.grad == INTEGER_OPERANDS:
        assert not {np.asarray(a).dtype.kind for a in args} & set("fc")
    elif c.grad == PIECEWISE_CONSTANT:
        f, xs = _in_inexact(c, args)
        _, tangent = fc.jvp(f, xs, tuple(np.ones_like(x) for x in xs))
        np.testing.assert_array_equal(tangent, 0.0)
    else:
        assert len(c.grad) > 40, "a reason names why and where it is checked instead"


def test_check_grads_catches_a_wrong_rule():
    @fc.custom_jvp
    def f(x):
        return P.sin.bind(x)

    @f.defjvp
    def _(primals, tangents):
        return f(primals[0]), P.mul.bind(tangents[0], 2.0)   # wrong on purpose

    with pytest.raises(AssertionError, match="finite differences"):
        check_grads(f, (np.array([0.3, 1.0]),), order=1, modes=("fwd",))


# --- laws ----------------------------------------------------------------------------------

def _mlp(params, x):
    h = P.tanh.bind(P.dot_general.bind(x, params["w"], dimension_numbers=(((1,), (0,)),
                                                                           ((), ()))))
    return P.mul.bind(h, P.broadcast_in_dim.bind(params["b"], shape=(4, 3),
                                                 broadcast_dimensions=(1,)))


def _params(rng):
    return {"w": rng.normal(size=(2, 3)), "b": rng.normal(size=(3,))}


@settings(max_examples=10)
@given(seed=st.integers(0, 2**16))
def test_dot_product_law(seed):
    rng = np.random.default_rng(seed)
    params, x = _params(rng), rng.normal(size=(4, 2))
    v = {"w": rng.normal(size=(2, 3)), "b": rng.normal(size=(3,))}
    u = rng.normal(size=(4, 3))
    _, jv = fc.jvp(lambda p: _mlp(p, x), (params,), (v,))
    _, vjp_fn = fc.vjp(lambda p: _mlp(p, x), params)
    (ju,) = vjp_fn(u)
    lhs = np.sum(u * jv)
    rhs = np.sum(ju["w"] * v["w"]) + np.sum(ju["b"] * v["b"])
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def _g(x, y):
    return P.mul.bind(P.sin.bind(P.mul.bind(x, y)), P.exp.bind(x))


def test_jacrev_equals_jacfwd():
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.7])
    for argnums in (0, 1, (0, 1)):
        a = fc.jacrev(_g, argnums)(x, y)
        b = fc.jacfwd(_g, argnums)(x, y)
        for ja, jb in zip(np.atleast_1d(a) if isinstance(a, tuple) else [a],
                          np.atleast_1d(b) if isinstance(b, tuple) else [b], strict=True):
            np.testing.assert_allclose(ja, jb, rtol=1e-12)
    j = fc.jacrev(_g)(x, y)
    np.testing.assert_allclose(j, np.diag(y * np.cos(x * y) * np.exp(x) + np.sin(x * y)
                                          * np.exp(x)), rtol=1e-12)


def test_jacobian_pytree_structure():
    params = {"w": np.ones((2, 3)), "b": np.ones(3)}
    x = np.ones((4, 2))
    jr = fc.jacrev(lambda p: {"out": _mlp(p, x)})(params)
    jf = fc.jacfwd(lambda p: {"out": _mlp(p, x)})(params)
    assert jr["out"]["w"].shape == (4, 3, 2, 3) and jr["out"]["b"].shape == (4, 3, 3)
    for k in ("w", "b"):
        np.testing.assert_allclose(jr["out"][k], jf["out"][k], rtol=1e-12)
    chunked = fc.jacrev(lambda p: {"out": _mlp(p, x)}, chunk_size=5)(params)
    np.testing.assert_allclose(chunked["out"]["w"], jr["out"]["w"], rtol=1e-12)


def test_hessian_symmetric_and_right():
    def f(x):
        return _sum(P.mul.bind(P.sin.bind(x), P.cumprod.bind(x, axis=0, reverse=False)))
    x = np.array([0.4, 1.1, -0.6])
    h = fc.hessian(f)(x)
    np.testing.assert_allclose(h, h.T, atol=1e-12)
    e = 1e-5
    fd = np.stack([(fc.grad(f)(x + e * d) - fc.grad(f)(x - e * d)) / (2 * e) for d in np.eye(3)])
    np.testing.assert_allclose(h, fd, atol=1e-7)
    hvp = fc.jvp(fc.grad(f), (x,), (np.array([1.0, 2.0, 3.0]),))[1]
    np.testing.assert_allclose(hvp, h @ np.array([1.0, 2.0, 3.0]), atol=1e-12)


def test_jit_of_transform_equals_transform():
    x = np.array([0.3, -1.2, 2.0])
    f = lambda x: _sum(P.mul.bind(P.tanh.bind(x), x))   # noqa: E731
    for T in (fc.grad, fc.jacrev, fc.jacfwd, fc.hessian):
        np.testing.assert_allclose(fc.jit(T(f))(x), T(f)(x), rtol=1e-12)
        np.testing.assert_allclose(T(fc.jit(f))(x), T(f)(x), rtol=1e-12)
    np.testing.assert_allclose(fc.jit(lambda x, t: fc.jvp(f, (x,), (t,)))(x, x)[1],
                               fc.jvp(f, (x,), (x,))[1], rtol=1e-12)


def test_vmap_of_grad_is_per_example_grads():
    w = np.array([0.5, -1.0])
    xs = np.random.default_rng(0).normal(size=(5, 2))
    loss = lambda w, x: P.tanh.bind(_sum(P.mul.bind(w, x)))   # noqa: E731
    per = fc.vmap(fc.grad(loss), in_dims=(None, 0))(w, xs)
    np.testing.assert_allclose(per, np.stack([fc.grad(loss)(w, x) for x in xs]), rtol=1e-12)


# --- perturbation confusion and composition ------------------------------------------------

def test_perturbation_confusion():
    assert fc.grad(lambda x: fc.grad(lambda y: P.mul.bind(x, y))(1.0))(2.0) == 1.0
    # d/dx [x * d/dy (x + y)] = 1, not 2
    assert fc.grad(lambda x: P.mul.bind(x, fc.grad(lambda y: P.add.bind(x, y))(1.0)))(3.0) == 1.0
    out = fc.jvp(lambda x: fc.jvp(lambda y: P.mul.bind(x, y), (1.0,), (1.0,))[1], (2.0,),
                 (1.0,))
    assert out == (2.0, 1.0)


def test_higher_order_derivatives():
    f = lambda x: P.mul.bind(P.mul.bind(x, x), x)   # noqa: E731
    assert fc.grad(fc.grad(f))(2.0) == 12.0
    assert fc.grad(fc.grad(fc.grad(f)))(2.0) == 6.0
    np.testing.assert_allclose(fc.grad(fc.grad(P.sin.bind))(0.7), -np.sin(0.7))


# --- semantics at the awkward points -------------------------------------------------------

def test_max_min_ties_split_evenly():
    assert fc.grad(lambda x: P.max.bind(x, 1.0))(1.0) == 0.5
    assert fc.grad(lambda x: P.min.bind(x, 1.0))(1.0) == 0.5
    x = np.array([3.0, 1.0, 3.0])
    np.testing.assert_array_equal(fc.grad(lambda x: P.reduce_max.bind(x, axes=(0,)))(x),
                                  [0.5, 0, 0.5])
    np.testing.assert_array_equal(fc.grad(lambda x: _sum(P.cummax.bind(x, axis=0,
                                                                       reverse=False)))(x),
                                  [2.5, 0, 0.5])


def test_reduce_prod_and_cumprod_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 4.0])
    np.testing.assert_array_equal(fc.grad(lambda x: P.reduce_prod.bind(x, axes=(0,)))(x),
                                  [0, 24, 0, 0])
    y = np.array([2.0, 0.0, 0.0])
    np.testing.assert_array_equal(fc.grad(lambda x: P.reduce_prod.bind(x, axes=(0,)))(y),
                                  [0, 0, 0])
    j = fc.jacrev(lambda x: P.cumprod.bind(x, axis=0, reverse=False))(x)
    np.testing.assert_array_equal(j, [[1, 0, 0, 0], [0, 2, 0, 0], [0, 6, 0, 0], [0, 24, 0, 0]])


def test_sqrt_abs_pow_at_zero():
    with np.errstate(all="ignore"):
        assert fc.grad(P.sqrt.bind)(0.0) == np.inf
        assert fc.grad(P.cbrt.bind)(0.0) == np.inf
    assert fc.grad(P.abs.bind)(0.0) == 0.0
    assert fc.grad(lambda x: P.pow.bind(x, 2.0))(0.0) == 0.0
    assert fc.grad(lambda x: P.pow.bind(x, 0.0))(0.0) == 0.0
    assert fc.grad(lambda y: P.pow.bind(0.0, y))(2.0) == 0.0
    np.testing.assert_allclose(fc.grad(lambda y: P.pow.bind(2.0, y))(3.0), 8 * np.log(2))


def test_complex_convention_is_jaxs():
    z = np.complex128(1.0 + 2.0j)
    # f(z) = |z|^2: the gradient is 2 * conj(z) (conjugate of the ascent direction)
    assert fc.grad(lambda z: P.real.bind(P.mul.bind(z, P.conj.bind(z))))(z) == 2 * np.conj(z)
    assert fc.grad(lambda z: P.abs.bind(z))(z) == np.conj(z) / abs(z)
    assert fc.grad(lambda z: P.imag.bind(z))(z) == -1j
    # holomorphic jvp: d/dz z^2 = 2z
    assert fc.jvp(lambda z: P.mul.bind(z, z), (z,), (np.complex128(1.0),))[1] == 2 * z


def test_sort_gradient_follows_the_permutation():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([1.0, 10.0, 100.0])
    g = fc.grad(lambda x: _sum(P.mul.bind(P.sort.bind(x, dimension=0, num_keys=1)[0], w)))(x)
    np.testing.assert_array_equal(g, [100.0, 1.0, 10.0])


def test_integer_paths_have_zero_derivative():
    def f(x):
        i = P.convert.bind(P.floor.bind(x), new_dtype=I64)
        return P.add.bind(P.convert.bind(i, new_dtype=F64), P.mul.bind(x, 2.0))
    assert fc.grad(f)(1.5) == 2.0
    _out, vjp_fn = fc.vjp(lambda x, n: P.mul.bind(x, P.convert.bind(n, new_dtype=F64)),
                         np.ones(2), np.array([3, 4]))
    gx, gn = vjp_fn(np.ones(2))
    np.testing.assert_array_equal(gx, [3.0, 4.0])
    assert gn.dtype == I64 and not gn.any()


# --- API -----------------------------------------------------------------------------------

def test_argnums_has_aux_and_value_variants():
    f = lambda x, y: (P.mul.bind(x, y), {"aux": P.add.bind(x, y)})   # noqa: E731
    gx, gy = fc.grad(lambda x, y: f(x, y)[0], argnums=(0, 1))(2.0, 3.0)
    assert (gx, gy) == (3.0, 2.0)
    g, aux = fc.grad(f, argnums=1, has_aux=True)(2.0, 3.0)
    assert g == 2.0 and aux["aux"] == 5.0
    g, (v, aux) = fc.grad_and_value(f, has_aux=True)(2.0, 3.0)
    assert (g, v, aux["aux"]) == (3.0, 6.0, 5.0)
    (v, aux), g = fc.value_and_grad(f, has_aux=True)(2.0, 3.0)
    assert (g, v) == (3.0, 6.0)
    assert fc.value_and_grad(lambda x: P.mul.bind(x, x))(3.0) == (9.0, 6.0)
    assert fc.grad(lambda x, y: P.mul.bind(x, y), argnums=-1)(2.0, 5.0) == 2.0


def test_pytree_arguments():
    params = {"w": np.array([1.0, 2.0]), "b": (np.float64(0.5), [np.array(3.0)])}

    def loss(p):
        return P.add.bind(_sum(P.mul.bind(p["w"], p["w"])),
                          P.mul.bind(p["b"][0], p["b"][1][0]))
    g = fc.grad(loss)(params)
    np.testing.assert_array_equal(g["w"], [2.0, 4.0])
    assert g["b"][0] == 3.0 and g["b"][1][0] == 0.5


def test_vjp_fn_reusable_and_vmappable():
    x = np.array([0.1, 0.2, 0.3])
    _out, vjp_fn = fc.vjp(lambda x: P.mul.bind(P.sin.bind(x), 2.0), x)
    a = vjp_fn(np.ones(3))[0]
    b = vjp_fn(np.array([1.0, 0.0, 0.0]))[0]
    np.testing.assert_allclose(a, 2 * np.cos(x))
    np.testing.assert_allclose(b, [2 * np.cos(0.1), 0, 0])
    rows = fc.vmap(vjp_fn)(np.eye(3))[0]
    np.testing.assert_allclose(rows, np.diag(2 * np.cos(x)))


def test_linearize_and_jvp_has_aux():
    x = np.array([0.1, 0.2])
    _out, jvp_fn = fc.linearize(P.exp.bind, x)
    np.testing.assert_allclose(jvp_fn(np.ones(2)), np.exp(x))
    np.testing.assert_allclose(jvp_fn(np.array([2.0, 0.0])), [2 * np.exp(0.1), 0])
    _y, t, aux = fc.jvp(lambda x: (P.sin.bind(x), P.cos.bind(x)), (x,), (np.ones(2),),
                       has_aux=True)
    np.testing.assert_allclose(t, np.cos(x))
    np.testing.assert_allclose(aux, np.cos(x))


def test_caller_arrays_untouched():
    x = np.array([1.0, 2.0])
    before = x.copy()
    fc.grad(lambda x: _sum(P.mul.bind(x, x)))(x)
    fc.jacrev(lambda x: P.mul.bind(x, x))(x)
    np.testing.assert_array_equal(x, before)


# --- errors --------------------------------------------------------------------------------

def test_error_non_scalar_output():
    def f(x):
        return P.sin.bind(x)
    msg = (r"grad\(.*f\): the function must return a scalar \(a 0-d array\), but it returned "
           r"an array of shape \(3,\); use jacrev or vjp for non-scalar outputs")
    with pytest.raises(ValueError, match=msg):
        fc.grad(f)(np.ones(3))


def test_error_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"argnums=2 is out of range for a call with 2 "
                                         "positional arguments"):
        fc.grad(lambda x, y: P.mul.bind(x, y), argnums=2)(1.0, 2.0)


def test_error_has_aux_not_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True the function must return a pair"):
        fc.grad(lambda x: P.mul.bind(x, x), has_aux=True)(1.0)


def test_error_integer_input():
    with pytest.raises(TypeError, match=r"argument 0 \(argnums\) has dtype int64"):
        fc.grad(lambda x: P.mul.bind(x, x))(np.array(3))
    with pytest.raises(TypeError, match="int64"):
        fc.jacrev(lambda x: x)(np.arange(3))


def test_error_output_dtype_and_bad_cotangent():
    with pytest.raises(TypeError, match="real floating-point scalar"):
        fc.grad(lambda x: P.convert.bind(x, new_dtype=np.dtype(np.complex128)))(1.0)
    _, vjp_fn = fc.vjp(P.sin.bind, np.ones(3))
    with pytest.raises(ValueError, match="cotangent"):
        vjp_fn(np.ones(4))
    with pytest.raises(ValueError, match="tangent leaf 0"):
        fc.jvp(P.sin.bind, (np.ones(3),), (np.ones(2),))


# --- caching ---------------------------------------------------------------------------------

def test_function_traced_once_per_signature():
    calls = []

    def loss(w, x):
        calls.append(1)
        return _sum(P.mul.bind(P.tanh.bind(P.mul.bind(w, x)), x))
    w = np.ones(3)
    for k in range(5):
        fc.grad(loss)(w, np.full(3, float(k)))
    assert len(calls) == 1
    g = fc.grad(loss)
    g(w, np.ones(3))
    assert len(calls) == 1            # a new grad() of the same function shares the cache
    g(np.ones(4), np.ones(4))
    assert len(calls) == 2            # a new signature traces again
    for _ in range(3):
        fc.vjp(loss, w, w)[1](1.0)
    assert len(calls) == 3


# --- custom rules ------------------------------------------------------------------------------

@fc.custom_jvp
def _softplus(x):
    return P.log1p.bind(P.exp.bind(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus(x), P.mul.bind(t, P.logistic.bind(x))


@fc.custom_vjp
def _clip_grad(x):
    return x


_clip_grad.defvjp(lambda x: (x, None),
                  lambda res, g: (P.max.bind(P.min.bind(g, 1.0), -1.0),))


def test_custom_jvp_used_and_composes():
    # the naive formula overflows at 1000; the custom rule does not
    assert fc.grad(_softplus)(1000.0) == 1.0
    x = np.array([-1.0, 0.5, 2.0])
    sig = 1 / (1 + np.exp(-x))
    total = lambda x: _sum(_softplus(x))   # noqa: E731
    np.testing.assert_allclose(fc.grad(total)(x), sig)
    np.testing.assert_allclose(fc.jit(fc.grad(total))(x), sig)
    np.testing.assert_allclose(fc.grad(fc.jit(total))(x), sig)
    np.testing.assert_allclose(fc.vmap(fc.grad(_softplus))(x), sig)
    np.testing.assert_allclose(fc.grad(lambda x: _sum(fc.vmap(_softplus)(x)))(x), sig)
    np.testing.assert_allclose(fc.vmap(_softplus)(x), np.log1p(np.exp(x)))
    np.testing.assert_allclose(fc.grad(fc.grad(_softplus))(0.3),
                               np.exp(-0.3) / (1 + np.exp(-0.3)) ** 2)
    check_grads(total, (x,), order=2)


def test_custom_vjp_used_and_composes():
    x = np.array([1.0, -2.0])
    f = lambda x: _sum(P.mul.bind(_clip_grad(x), 5.0))   # noqa: E731
    np.testing.assert_array_equal(fc.grad(f)(x), [1.0, 1.0])
    np.testing.assert_array_equal(fc.jit(fc.grad(f))(x), [1.0, 1.0])
    np.testing.assert_array_equal(fc.grad(fc.jit(f))(x), [1.0, 1.0])
    np.testing.assert_array_equal(fc.grad(lambda x: _sum(P.mul.bind(fc.vmap(_clip_grad)(x),
                                                                    5.0)))(x), [1.0, 1.0])
    np.testing.assert_array_equal(fc.jacrev(lambda x: P.mul.bind(_clip_grad(x), 0.5))(x),
                                  np.diag([0.5, 0.5]))
    with pytest.raises(TypeError, match="forward-mode"):
        fc.jvp(_clip_grad, (x,), (x,))


def test_custom_vjp_with_residuals_and_unbatched_argument():
    @fc.custom_vjp
    def scale(w, x):
        return P.mul.bind(w, x)

    def fwd(w, x):
        return scale(w, x), (w, x)

    def bwd(res, g):
        w, x = res
        return P.mul.bind(g, x), P.mul.bind(g, w)
    scale.defvjp(fwd, bwd)
    w, xs = np.array([2.0, 3.0]), np.arange(6.0).reshape(3, 2)
    loss = lambda w: _sum(fc.vmap(scale, in_dims=(None, 0))(w, xs))   # noqa: E731
    np.testing.assert_allclose(fc.grad(loss)(w), xs.sum(0))


def test_stop_gradient():
    assert fc.grad(lambda x: P.mul.bind(x, fc.stop_gradient(x)))(3.0) == 3.0
    tree = fc.stop_gradient({"a": np.ones(2), "n": np.arange(2)})
    assert tree["n"].dtype == I64
    assert fc.grad(lambda x: _sum(fc.stop_gradient(P.mul.bind(x, x))))(np.ones(2)).tolist() \
        == [0.0, 0.0]


def test_stop_gradient_tangent_is_a_symbolic_zero():
    """What depends on stop_gradient's output alone is not differentiated: no cos for the
    sin of it in the jvp graph, and a zero gradient without a materialised zero array."""
    x = np.array([0.5, 1.5])
    graph = fc.make_graph(lambda x, t: fc.jvp(
        lambda x: P.sin.bind(fc.stop_gradient(x)) + x, (x,), (t,)))(x, x)
    assert [e.prim for e in graph.eqns if e.prim in (P.cos, P.broadcast_in_dim)] == []
    assert fc.hessian(lambda x: _sum(P.mul.bind(x, fc.stop_gradient(P.mul.bind(x, x)))))(
        x).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_fnp_functions_differentiate():
    x = np.array([0.5, 1.5])
    g = fc.grad(lambda x: _sum(fnp.sin(x) * fnp.exp(x) + fnp.maximum(x, 1.0)))(x)
    np.testing.assert_allclose(g, np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x) + [0, 1])


def test_float32_uses_float32_and_looser_tolerance():
    x = np.array([0.3, -0.8, 1.2], np.float32)
    f = lambda x: P.mul.bind(P.tanh.bind(x), P.exp.bind(x))   # noqa: E731
    check_grads(f, (x,), order=2)
    g = fc.grad(lambda x: _sum(f(x)))(x)
    assert g.dtype == np.float32
    with pytest.raises(AssertionError):
        check_grads(lambda x: P.mul.bind(fc.stop_gradient(x), x), (x,), order=1)


def test_jacobians_with_aux_and_pytree_outputs():
    x = np.array([0.5, 1.5])

    def f(x):
        return {"s": P.sin.bind(x), "c": _sum(P.cos.bind(x))}, P.neg.bind(x)
    jr, aux_r = fc.jacrev(f, has_aux=True)(x)
    jf, aux_f = fc.jacfwd(f, has_aux=True)(x)
    np.testing.assert_allclose(jr["s"], np.diag(np.cos(x)))
    np.testing.assert_allclose(jr["c"], -np.sin(x))
    for k in ("s", "c"):
        np.testing.assert_allclose(jr[k], jf[k], rtol=1e-12)
    np.testing.assert_array_equal(aux_r, -x)
    np.testing.assert_array_equal(aux_f, -x)
    out, vjp_fn, aux = fc.vjp(f, x, has_aux=True)
    np.testing.assert_allclose(out["s"], np.sin(x))
    np.testing.assert_array_equal(aux, -x)
    (g,) = vjp_fn({"s": np.ones(2), "c": 1.0})
    np.testing.assert_allclose(g, np.cos(x) - np.sin(x))


# --- the shared NumPy op table (tests/op_table.py) crossed with check_grads -------------------
# Its generators give the structure (shapes, axes, keywords, index arrays); the inexact
# values are replaced by well-separated points inside each function's smooth domain.

FNP_SMOOTH = {
    "negative": None, "positive": None, "abs": None, "exp": None, "exp2": None, "expm1": None,
    "log": None, "log2": None, "log10": None, "log1p": None, "sqrt": None, "cbrt": None,
    "square": None, "reciprocal": None, "sin": None, "cos": None, "tan": None,
    "arcsin": (0.1, 0.9), "arccos": (0.1, 0.9), "arctan": None, "sinh": None, "cosh": None,
    "tanh": None, "arcsinh": None, "arccosh": (1.2, 2.2), "arctanh": (0.1, 0.9),
    "add": None, "subtract": None, "multiply": None, "divide": None, "power": None,
    "maximum": None, "minimum": None, "fmax": None, "fmin": None, "arctan2": None,
    "hypot": None, "logaddexp": None, "logaddexp2": None, "copysign": None, "where": None,
    "clip": None, "sum": None, "prod": None, "mean": None, "var": None, "std": None,
    "max": None, "min": None, "cumsum": None, "cumprod": None, "reshape": None,
    "transpose": None, "moveaxis": None, "expand_dims": None, "squeeze": None,
    "broadcast_arrays": None, "concatenate": None, "stack": None,
    "split": None, "tile": None, "repeat": None, "roll": None, "pad": None,
    "getitem_basic": None,
    "take": None, "take_along_axis": None, "sort": None, "matmul": None, "dot": None,
    "inner": None, "outer": None, "tensordot": None, "einsum": None, "trace": None,
    "diagonal": None, "tril": None, "triu": None, "method_T": None, "method_var": None,
    "fabs": None, "degrees": None, "radians": None, "sinc": None, "angle": None,
    "nan_to_num": None, "flipud": None, "fliplr": None, "rot90": None, "rollaxis": None,
    "atleast_3d": None, "diff": None, "kron": None, "cross": None, "partition_kth": None,
    "vsplit": None, "hsplit": None, "dsplit": None, "column_stack": None, "append": None,
    "select": None, "cov": None, "corrcoef": None, "median": None, "average": None,
    "ptp": None, "nansum": None, "nanprod": None, "nanmax": None, "nanmin": None,
    "nanmean": None, "nanvar": None, "nanstd": None, "nancumsum": None, "nancumprod": None,
    "meshgrid": None, "polyval": None, "tril_indices_from": None, "r_": None, "c_": None,
    **dict.fromkeys(["float_power", "vecdot", "linalg_vecdot", "matvec", "vecmat",
                     "matrix_transpose", "unstack", "cumulative_sum", "cumulative_prod",
                     "dstack", "diagflat", "fill_diagonal", "polyadd", "polysub", "polyder",
                     "polyint", "choose", "block", "apply_over_axes"]),
}


def _smooth_values(case_args, lo, hi, rng):
    """Replace inexact leaves by float64/complex128 values that are pairwise well apart."""
    sizes = [np.size(a) for a in case_args
             if isinstance(a, float | complex | np.ndarray) and np.asarray(a).dtype.kind in "fc"]
    n = max(sum(sizes), 1)
    pool = iter(lo + (hi - lo) * (rng.permutation(n) + 0.37) / n)   # never exactly 1.0
    out = []
    for a in case_args:
        kind = np.asarray(a).dtype.kind
        if isinstance(a, bool | int) or kind not in "fc":
            out.append(a)
            continue
        vals = np.array([next(pool) for _ in range(np.size(a))]).reshape(np.shape(a))
        if kind == "c":
            vals = vals + 0.25j * vals[::-1] if vals.ndim else complex(vals, 0.25 * vals)
        out.append(float(vals) if isinstance(a, float) else np.asarray(vals))
    return tuple(out)


@pytest.mark.parametrize("name", sorted(FNP_SMOOTH))
@settings(max_examples=2)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_check_grads_fnp_op_table(name, data, seed):
    op = OPS_BY_NAME[name]
    case = data.draw(op.gen(np.dtype(np.float64)))
    lo, hi = FNP_SMOOTH[name] or (0.5, 1.5)
    args = _smooth_values(case.args, lo, hi, np.random.default_rng(seed))

    def f(*a):
        return op.fn(fnp, *a, **case.kwargs)
    try:
        out = f(*args)
    except (TypeError, ValueError, IndexError):
        assume(False)      # not a valid call for these dtypes: the parity tests cover it
    leaves = [np.asarray(o) for o in fc.tree_leaves(out)]
    assume(all(o.dtype.kind in "fc" and o.size and np.isfinite(o).all() for o in leaves))
    if name in ("std", "nanstd"):    # sqrt at 0: a constant group has a NaN derivative (as in JAX)
        assume(all((o > 1e-6).all() for o in leaves))
    assume(any(np.asarray(a).dtype.kind in "fc" for a in args))
    check_grads(f, args, order=1, modes=("fwd", "rev"))


def test_convert_between_float_widths_and_int_outputs():
    x = np.array([0.5, 1.5])
    f = lambda x: P.convert.bind(P.mul.bind(P.convert.bind(x, new_dtype=np.dtype(np.float32)),  # noqa: E731
                                            np.float32(3.0)), new_dtype=F64)
    g = fc.grad(lambda x: _sum(f(x)))(x)
    assert g.dtype == F64
    np.testing.assert_array_equal(g, [3.0, 3.0])
    out, t = fc.jvp(lambda x: (x, P.argmax.bind(x, axis=0, index_dtype=I64)), (x,), (x,))
    assert out[1] == 1
    assert t[1].dtype == I64 and t[1] == 0


def test_jacfwd_chunked_matches_unchunked():
    f = lambda x: P.mul.bind(P.sin.bind(x), _sum(x))   # noqa: E731
    x = np.linspace(0.1, 1.0, 7)
    np.testing.assert_allclose(fc.jacfwd(f, chunk_size=3)(x), fc.jacfwd(f)(x), rtol=1e-12)
    np.testing.assert_allclose(fc.hessian(lambda x: _sum(f(x)), chunk_size=2)(x),
                               fc.hessian(lambda x: _sum(f(x)))(x), rtol=1e-12)


def test_docstring_examples():
    import doctest

    from functorch_core.transforms import autodiff, custom
    names = {"np": np, "check_grads": check_grads,
             **{k: getattr(fc, k) for k in fc.__all__}}
    for module in (autodiff, custom, sys.modules["functorch_core.testing"]):
        result = doctest.testmod(module, extraglobs=names,
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_custom_rule_closing_over_an_outer_tracer_is_a_clear_error():
    def outer(y):
        @fc.custom_jvp
        def f(x):
            return P.mul.bind(x, 2.0)

        @f.defjvp
        def _(primals, tangents):
            return f(primals[0]), P.mul.bind(tangents[0], y)
        return fc.grad(f)(3.0)
    assert outer(5.0) == 5.0
    with pytest.raises(TypeError, match="pass that value as an argument"):
        fc.grad(outer)(1.0)
