"""numpy.linalg through the linear-algebra primitives: NumPy parity (values and dtypes,
batched, eager and jit), derivatives against finite differences (order 2, both modes,
complex too), vmap against loop-and-stack for every primitive, and NumPy's errors."""

import numpy as np
import pytest
from functorch_core.ir import primitives as P
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.testing import check_grads

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _rand(rng, shape, dtype):
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _well_conditioned(rng, shape, dtype):
    n = shape[-1]
    return (_rand(rng, shape, dtype) + 3 * np.eye(n)).astype(dtype)


def _spd(rng, shape, dtype):
    a = _rand(rng, shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def _leaves(x):
    return [np.asarray(v) for v in fc.tree_leaves(tuple(x) if isinstance(x, tuple) else x)]


def _close(got, want, dtype):
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=_tol(dtype), atol=_tol(dtype) * 10)


CASES = {
    "solve": lambda r, d: (_well_conditioned(r, (2, 4, 4), d), _rand(r, (2, 4, 3), d)),
    "solve_vector": lambda r, d: (_well_conditioned(r, (4, 4), d), _rand(r, (4,), d)),
    "solve_broadcast": lambda r, d: (_well_conditioned(r, (4, 4), d), _rand(r, (3, 4, 2), d)),
    "inv": lambda r, d: (_well_conditioned(r, (3, 4, 4), d),),
    "det": lambda r, d: (_well_conditioned(r, (2, 3, 3), d),),
    "slogdet": lambda r, d: (_rand(r, (2, 3, 3), d),),
    "cholesky": lambda r, d: (_spd(r, (2, 4, 4), d),),
    "cholesky_upper": lambda r, d: (_spd(r, (4, 4), d),),
    "qr": lambda r, d: (_rand(r, (2, 5, 3), d),),
    "qr_complete": lambda r, d: (_rand(r, (5, 3), d),),
    "qr_r": lambda r, d: (_rand(r, (3, 5), d),),
    "svd": lambda r, d: (_rand(r, (2, 5, 3), d),),
    "svd_thin": lambda r, d: (_rand(r, (3, 5), d),),
    "svd_hermitian": lambda r, d: (_spd(r, (4, 4), d) - 5 * np.eye(4, dtype=d),),
    "svdvals": lambda r, d: (_rand(r, (4, 6), d),),
    "eigh": lambda r, d: (_rand(r, (2, 4, 4), d),),
    "eigh_upper": lambda r, d: (_rand(r, (4, 4), d),),
    "eigvalsh": lambda r, d: (_rand(r, (4, 4), d),),
    "eigvals": lambda r, d: (_rand(r, (2, 4, 4), d),),
    "norm": lambda r, d: (_rand(r, (3, 4), d),),
    "norm_ord": lambda r, d: (_rand(r, (2, 3, 4), d),),
    "matrix_norm": lambda r, d: (_rand(r, (2, 3, 4), d),),
    "vector_norm": lambda r, d: (_rand(r, (2, 3, 4), d),),
    "cond": lambda r, d: (_rand(r, (2, 3, 3), d),),
    "matrix_rank": lambda r, d: (_rand(r, (2, 4, 4), d) @ np.diag([1, 1, 1, 0]).astype(d),),
    "pinv": lambda r, d: (_rand(r, (2, 5, 3), d),),
    "lstsq": lambda r, d: (_rand(r, (6, 3), d), _rand(r, (6, 2), d)),
    "matrix_power": lambda r, d: (_rand(r, (2, 3, 3), d),),
    "tensorsolve": lambda r, d: (_well_conditioned(r, (6, 6), d).reshape(6, 2, 3),
                                 _rand(r, (6,), d)),
    "tensorinv": lambda r, d: (_well_conditioned(r, (6, 6), d).reshape(2, 3, 6),),
    "multi_dot": lambda r, d: (_rand(r, (3,), d), _rand(r, (3, 5), d), _rand(r, (5, 2), d),
                               _rand(r, (2, 4), d)),
    "cross": lambda r, d: (_rand(r, (2, 3), d), _rand(r, (3,), d)),
    "vecdot": lambda r, d: (_rand(r, (2, 3), d), _rand(r, (3,), d)),
    "matrix_transpose": lambda r, d: (_rand(r, (2, 3, 4), d),),
    "trace": lambda r, d: (_rand(r, (2, 3, 4), d),),
    "diagonal": lambda r, d: (_rand(r, (2, 3, 4), d),),
    "outer": lambda r, d: (_rand(r, (3,), d), _rand(r, (4,), d)),
}

CALLS = {
    "solve_vector": lambda m, a, b: m.solve(a, b),
    "solve_broadcast": lambda m, a, b: m.solve(a, b),
    "cholesky_upper": lambda m, a: m.cholesky(a, upper=True),
    "qr_complete": lambda m, a: m.qr(a, mode="complete"),
    "qr_r": lambda m, a: m.qr(a, mode="r"),
    "svd_thin": lambda m, a: m.svd(a, full_matrices=False),
    "svd_hermitian": lambda m, a: m.svd(a, hermitian=True),
    "eigh_upper": lambda m, a: m.eigh(a, UPLO="U"),
    "norm_ord": lambda m, a: [m.norm(a, o, axis=(1, 2)) for o in ("fro", "nuc", 1, -1, 2, -2,
                                                                  np.inf, -np.inf)]
    + [m.norm(a, o, axis=-1) for o in (1, 2, 3, 0, np.inf, -np.inf)],
    "matrix_norm": lambda m, a: [m.matrix_norm(a, ord=o, keepdims=k) for o in ("fro", 2, 1)
                                 for k in (False, True)],
    "vector_norm": lambda m, a: [m.vector_norm(a, axis=ax, ord=o)
                                 for ax in (None, 1, (0, 2)) for o in (2, 1, np.inf)],
    "matrix_power": lambda m, a: [m.matrix_power(a, n) for n in (0, 1, 2, 5, -2)],
    "multi_dot": lambda m, *xs: m.multi_dot(list(xs)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy_eager_and_jit(name, dtype):
    if name == "svd_hermitian" and np.dtype(dtype).kind == "c":
        pytest.skip("the hermitian SVD's singular vectors differ by a phase from NumPy's")
    args = CASES[name](np.random.default_rng(0), dtype)
    call = CALLS.get(name, lambda m, *xs, n=name: getattr(m, n)(*xs))
    want = call(np.linalg, *args)
    _close(call(fnp.linalg, *args), want, dtype)
    _close(fc.jit(lambda *xs: call(np.linalg, *xs))(*args), want, dtype)


def test_eig_matches_numpy_up_to_dtype():
    """eig is always complex (a graph's dtype cannot depend on the values)."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 4, 4))
    w, v = fc.jit(np.linalg.eig)(a)
    ww, vv = np.linalg.eig(a)
    assert w.dtype == v.dtype == np.complex128
    np.testing.assert_allclose(w, ww, rtol=1e-12)
    np.testing.assert_allclose(v, vv, rtol=1e-10, atol=1e-12)
    sym = a + np.swapaxes(a, -1, -2)          # real spectrum: NumPy gives float64
    np.testing.assert_allclose(fnp.linalg.eigvals(sym), np.linalg.eigvals(sym), rtol=1e-12)


def test_integer_inputs_compute_in_float64():
    a = np.array([[2, 1], [1, 3]])
    for name in ("inv", "det", "cholesky", "eigvalsh", "svdvals"):
        want = getattr(np.linalg, name)(a)
        got = fc.jit(getattr(np.linalg, name))(a)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12)


# --- derivatives ---------------------------------------------------------------------

GRAD_CASES = {
    "solve": (lambda a, b: fnp.linalg.solve(a, b), lambda r, d: (
        _well_conditioned(r, (3, 3), d), _rand(r, (3, 2), d))),
    "inv": (fnp.linalg.inv, lambda r, d: (_well_conditioned(r, (2, 3, 3), d),)),
    "det": (fnp.linalg.det, lambda r, d: (_well_conditioned(r, (3, 3), d),)),
    "slogdet": (lambda a: tuple(fnp.linalg.slogdet(a)),
                lambda r, d: (_well_conditioned(r, (3, 3), d),)),
    "slogdet_inv_t": (lambda a: tuple(P.slogdet_inv_t.bind(a)),
                      lambda r, d: (_well_conditioned(r, (2, 3, 3), d),)),
    "cholesky": (fnp.linalg.cholesky, lambda r, d: (_spd(r, (3, 3), d),)),
    "cholesky_upper": (lambda a: fnp.linalg.cholesky(a, upper=True),
                       lambda r, d: (_spd(r, (3, 3), d),)),
    "qr": (lambda a: tuple(fnp.linalg.qr(a)), lambda r, d: (_rand(r, (4, 3), d),)),
    "svdvals": (fnp.linalg.svdvals, lambda r, d: (_rand(r, (3, 4), d),)),
    "svd_real": (lambda a: tuple(fnp.linalg.svd(a, full_matrices=False)),
                 lambda r, d: (_rand(r, (4, 3), d).real,)),
    "svd_phase_free": (lambda a: tuple(fnp.abs(x) for x in fnp.linalg.svd(
        a, full_matrices=False)), lambda r, d: (_rand(r, (3, 4), d),)),
    "eigvalsh": (fnp.linalg.eigvalsh, lambda r, d: (_rand(r, (3, 3), d),)),
    "eigh_phase_free": (lambda a: tuple(fnp.abs(x) for x in fnp.linalg.eigh(a)),
                        lambda r, d: (_rand(r, (3, 3), d),)),
    "eigvals": (fnp.linalg.eigvals, lambda r, d: (_rand(r, (3, 3), d),)),
    "pinv": (fnp.linalg.pinv, lambda r, d: (_rand(r, (4, 3), d),)),
    "lstsq": (lambda a, b: fnp.linalg.lstsq(a, b)[0], lambda r, d: (_rand(r, (5, 3), d),
                                                                  _rand(r, (5,), d))),
    "norms": (lambda a: (fnp.linalg.norm(a), fnp.linalg.norm(a, "nuc"), fnp.linalg.norm(a, 2),
                         fnp.linalg.norm(a, 1), fnp.linalg.vector_norm(a, ord=3)),
              lambda r, d: (_rand(r, (3, 4), d),)),
    "matrix_power": (lambda a: fnp.linalg.matrix_power(a, -3),
                     lambda r, d: (_well_conditioned(r, (3, 3), d),)),
    "multi_dot": (lambda a, b, c: fnp.linalg.multi_dot([a, b, c]), lambda r, d: (
        _rand(r, (2, 3), d), _rand(r, (3, 4), d), _rand(r, (4,), d))),
    "cond": (fnp.linalg.cond, lambda r, d: (_well_conditioned(r, (3, 3), d),)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_order_2(name, dtype):
    f, make = GRAD_CASES[name]
    args = make(np.random.default_rng(2), dtype)
    check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)


def test_eigenvector_derivatives_of_a_real_spectrum():
    """Unit-norm eigenvectors of a real matrix with real eigenvalues (sign fixed by LAPACK's
    convention, stable under small perturbations): the derivative matches differences."""
    rng = np.random.default_rng(3)
    q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    a = q @ np.diag([1.0, 2.5, 4.0]) @ np.linalg.inv(q) + 0.1 * rng.normal(size=(3, 3))
    check_grads(lambda a: tuple(fnp.linalg.eig(a)), (a,), order=1, atol=1e-5, rtol=1e-5)


def test_grad_of_slogdet_is_the_inverse_transpose():
    a = _well_conditioned(np.random.default_rng(4), (4, 4), np.float64)
    g = fc.jit(fc.grad(lambda a: fnp.linalg.slogdet(a).logabsdet))(a)
    np.testing.assert_allclose(g, np.linalg.inv(a).T, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_determinant_derivatives_share_one_factorization(dtype):
    """grad of slogdet and of det is one slogdet_inv_t (the values and the inverse from
    one LU) and elementwise work: no second factorization (a solve), no identity matrix to
    solve against."""
    a = _well_conditioned(np.random.default_rng(9), (2, 4, 4), dtype)
    for f in (lambda a: fnp.sum(fnp.linalg.slogdet(a).logabsdet),
              lambda a: fnp.sum(fnp.real(fnp.linalg.det(a)))):
        graph = fc.make_graph(fc.grad(f))(a)
        prims = [e.prim for e in graph.eqns]
        assert prims.count(P.slogdet_inv_t) == 1, graph
        assert not {P.solve, P.slogdet, P.det} & set(prims), graph
    value, grad = fc.jit(fc.value_and_grad(
        lambda a: fnp.sum(fnp.linalg.slogdet(a).logabsdet)))(a)
    np.testing.assert_allclose(value, np.sum(np.linalg.slogdet(a).logabsdet), rtol=1e-12)
    if dtype == np.float64:
        np.testing.assert_allclose(grad, np.swapaxes(np.linalg.inv(a), -1, -2), rtol=1e-10)


@pytest.mark.parametrize("jit", [False, True])
def test_singular_determinants_keep_numpys_values_and_refuse_derivatives(jit):
    """At a singular matrix the values are NumPy's (sign 0, logabsdet -inf, det 0) and the
    derivative, which needs the inverse, raises LinAlgError naming the primitive."""
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    wrap = fc.jit if jit else (lambda f: f)
    sign, logabsdet = wrap(np.linalg.slogdet)(a)
    assert sign == 0 and logabsdet == -np.inf
    assert wrap(np.linalg.det)(a) == 0
    for f in (lambda a: fnp.linalg.slogdet(a).logabsdet, fnp.linalg.det):
        with pytest.raises(np.linalg.LinAlgError,
                           match=r"slogdet_inv_t: Singular matrix \(operand of shape \(2, 2\)"):
            wrap(fc.grad(f))(a)


def test_gaussian_log_likelihood_gradient():
    """The usual user of cholesky/solve/slogdet: grad of a Gaussian log density in its
    covariance factor, checked against finite differences."""
    rng = np.random.default_rng(5)
    x, lf = rng.normal(size=(6, 3)), np.tril(rng.normal(size=(3, 3))) + 3 * np.eye(3)

    def nll(lf, x):
        cov = lf @ lf.T
        chol = fnp.linalg.cholesky(cov)
        z = fnp.linalg.solve(chol, x.T)
        return 0.5 * fnp.sum(z * z) + x.shape[0] * fnp.sum(fnp.log(fnp.abs(fnp.diagonal(chol))))

    check_grads(nll, (lf, x), order=2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky_reads_one_triangle_in_value_and_derivatives(dtype, upper):
    """NumPy's cholesky reads one triangle (and the diagonal's real part): at a matrix
    whose other triangle and imaginary diagonal are noise, the values are NumPy's of the
    Hermitian one, and the derivatives (both modes, order 2) match differences of that
    function of all the elements."""
    rng = np.random.default_rng(8)
    herm = _spd(rng, (2, 4, 4), dtype)
    noise = _rand(rng, (2, 4, 4), dtype)
    keep = np.tri(4, dtype=bool).T if upper else np.tri(4, dtype=bool)
    a = np.where(keep, herm, noise)
    a[..., range(4), range(4)] += 1j * noise[..., range(4), range(4)].imag if \
        np.dtype(dtype).kind == "c" else 0
    f = fc.jit(lambda a: fnp.linalg.cholesky(a, upper=upper))
    np.testing.assert_allclose(f(a), np.linalg.cholesky(a, upper=upper), rtol=1e-12)
    np.testing.assert_allclose(f(a), np.linalg.cholesky(herm, upper=upper), rtol=1e-12)
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigh_reads_one_triangle_in_value_and_derivatives(dtype, uplo):
    """As cholesky: noise in the other triangle and the imaginary diagonal changes neither
    the values nor the derivatives (of sign-free functions of the vectors), and the
    compiled graph is the decomposition alone (no Hermitian matrix built before it)."""
    rng = np.random.default_rng(9)
    herm = _spd(rng, (2, 4, 4), dtype) * np.linspace(0.5, 2.0, 4)
    herm = (herm + np.conj(np.swapaxes(herm, -1, -2))) / 2
    noise = _rand(rng, (2, 4, 4), dtype)
    keep = np.tri(4, dtype=bool).T if uplo == "U" else np.tri(4, dtype=bool)
    a = np.where(keep, herm, noise)
    a[..., range(4), range(4)] += 1j * noise[..., range(4), range(4)].imag if \
        np.dtype(dtype).kind == "c" else 0

    def f(a):
        w, v = fnp.linalg.eigh(a, UPLO=uplo)
        return w, fnp.abs(v) ** 2
    got, want = fc.jit(f)(a), f(herm)
    for g, h in zip(got, want, strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[0], np.linalg.eigvalsh(a, UPLO=uplo), rtol=1e-12)
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
    g = fc.make_graph(lambda a: fnp.linalg.eigh(a, UPLO=uplo))(a)
    assert [e.prim for e in g.eqns] == [P.eigh], g


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_jit_is_the_factorization_alone(upper):
    """No Hermitian matrix is built from the lower triangle before the factorization: the
    primitive reads that triangle itself (the build cost 30-50% of a 2048^2 call); nor is
    the upper factor a transpose of a lower one (two copies of the matrix)."""
    g = fc.make_graph(lambda a: fnp.linalg.cholesky(a, upper=upper))(np.eye(3))
    assert [(e.prim, e.params) for e in g.eqns] == [(P.cholesky, {"upper": upper})], g


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigenvalue_gradient_takes_one_product(dtype):
    """The cotangent of eigh's eigenvalues reaches A through one matrix product (V diag(g)
    V^H as (V * g) V^H, not a product with a diagonal matrix first); its values match the
    closed form and differences."""
    a = _rand(np.random.default_rng(10), (4, 4), dtype)
    weights = np.linspace(0.5, 2.0, 4)

    def f(a):
        return fnp.sum(fnp.linalg.eigvalsh(a) * weights)
    graph = fc.make_graph(fc.grad(f))(a)
    assert sum(e.prim is P.dot_general for e in graph.eqns) == 1, graph
    v = np.linalg.eigh(a)[1]
    full = (v * weights) @ np.conj(v).T
    want = np.tril(full + full.T) - np.diag(np.diag(full))    # the lower triangle is read
    if dtype == np.float64:
        np.testing.assert_allclose(fc.jit(fc.grad(f))(a), want, rtol=1e-10, atol=1e-12)
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_degenerate_eigenvalues_give_nonfinite_vector_derivatives_as_jax():
    _, tangents = fc.jvp(lambda a: tuple(fnp.linalg.eigh(a)), (np.eye(3),), (np.ones((3, 3)),))
    assert not np.all(np.isfinite(tangents[1]))
    assert np.all(np.isfinite(tangents[0]))       # eigenvalues stay differentiable


def test_full_matrices_derivative_is_refused_with_the_fix():
    with pytest.raises(NotImplementedError, match="use full_matrices=False"):
        fc.grad(lambda a: fnp.sum(fnp.linalg.svd(a)[0]))(np.ones((3, 2)))


# --- vmap against loop-and-stack --------------------------------------------------------

TRI = dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False,
           unit_diagonal=False)
PRIMS = {
    "solve": (lambda a, b: P.solve.bind(a, b), 2),
    "triangular_solve": (lambda a, b: P.triangular_solve.bind(a, b, **TRI), 2),
    "triangular_solve_right": (lambda a, b: P.triangular_solve.bind(
        a, b, **{**TRI, "left_side": False, "transpose_a": True}), 2),
    "det": (P.det.bind, 1), "slogdet": (P.slogdet.bind, 1), "cholesky": (P.cholesky.bind, 1),
    "cholesky_upper": (lambda a: P.cholesky.bind(a, upper=True), 1),
    "slogdet_inv_t": (P.slogdet_inv_t.bind, 1),
    "qr": (lambda a: P.qr.bind(a, full_matrices=False), 1),
    "svd": (lambda a: P.svd.bind(a, full_matrices=False, compute_uv=True), 1),
    "eigh": (lambda a: P.eigh.bind(a, lower=True), 1),
    "eig": (lambda a: P.eig.bind(a, compute_v=False), 1),
    "lu": (P.lu.bind, 1),
    "lu_pivots_to_permutation": (lambda a: P.lu_pivots_to_permutation.bind(
        P.lu.bind(a)[1], permutation_size=3), 1),
}


@pytest.mark.parametrize("name", sorted(PRIMS))
@pytest.mark.parametrize("dims", [(0, 0), (None, 0), (0, None), (2, 1), (1, 2)])
def test_vmap_matches_loop(name, dims):
    f, arity = PRIMS[name]
    dims = dims[:arity]
    if all(d is None for d in dims):
        pytest.skip("nothing batched")
    rng = np.random.default_rng(6)
    base = [_spd(rng, (3, 3), np.float64), rng.normal(size=(3, 3))][:arity]
    args = [np.tril(b) if name.startswith("tri") and k == 0 else b
            for k, b in enumerate(base)]
    batched = [a if d is None else np.stack([a + 0.1 * i * np.eye(3) for i in range(4)], d)
               for a, d in zip(args, dims, strict=True)]
    got = fc.vmap(f, in_dims=tuple(dims))(*batched)
    per = [f(*[a if d is None else np.take(a, i, axis=d) for a, d in
               zip(batched, dims, strict=True)]) for i in range(4)]
    got, per = _leaves(got), [_leaves(p) for p in per]
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, np.stack([p[k] for p in per]), rtol=1e-10, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 5), k=st.integers(1, 3), batch=st.integers(1, 3),
       seed=st.integers(0, 2 ** 16))
def test_solve_property(n, k, batch, seed):
    """a @ solve(a, b) == b, eagerly, jitted and vmapped over b with one shared a."""
    rng = np.random.default_rng(seed)
    a, b = _well_conditioned(rng, (n, n), np.float64), rng.normal(size=(batch, n, k))
    x = fc.jit(fc.vmap(fnp.linalg.solve, in_dims=(None, 0)))(a, b)
    np.testing.assert_allclose(a @ x, b, rtol=1e-8, atol=1e-8)


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("call,error,match", [
    (lambda: fnp.linalg.inv(np.ones((2, 2))), np.linalg.LinAlgError,
     r"solve: Singular matrix \(operand of shape \(2, 2\)"),
    (lambda: fc.jit(np.linalg.solve)(np.zeros((2, 2)), np.ones(2)), np.linalg.LinAlgError,
     "solve: Singular matrix"),
    (lambda: fnp.linalg.cholesky(-np.eye(2)), np.linalg.LinAlgError,
     "cholesky: Matrix is not positive definite"),
    (lambda: fnp.linalg.inv(np.ones((2, 3))), np.linalg.LinAlgError,
     r"linalg.inv: Last 2 dimensions of the array must be square, got shape \(2, 3\)"),
    (lambda: fc.jit(np.linalg.det)(np.ones(3)), np.linalg.LinAlgError,
     "linalg.det: 1-dimensional array given. Array must be at least two-dimensional"),
    (lambda: fnp.linalg.solve(np.eye(3), np.ones((2, 1))), ValueError,
     r"linalg.solve: a of shape \(3, 3\) and b of shape \(2, 1\) do not match"),
    (lambda: fnp.linalg.norm(np.ones((2, 2)), "bad"), ValueError,
     "Invalid norm order 'bad' for matrices"),
    (lambda: fnp.linalg.norm(np.ones(2), "fro"), ValueError,
     "Invalid norm order 'fro' for vectors"),
    (lambda: fnp.linalg.eigh(np.eye(2), UPLO="X"), ValueError,
     "UPLO argument must be 'L' or 'U'"),
    (lambda: fnp.linalg.inv(np.eye(2, dtype=np.float16)), TypeError,
     "array type float16 is unsupported in linalg"),
    (lambda: fnp.linalg.qr(np.eye(2), mode="raw"), ValueError, "'raw' is not supported"),
    (lambda: fnp.linalg.cross(np.ones(2), np.ones(3)), ValueError, "3-dimensional vectors"),
])
def test_errors_are_numpys_types_and_name_the_call(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_caller_arrays_untouched():
    rng = np.random.default_rng(7)
    a, b = _well_conditioned(rng, (3, 3), np.float64), rng.normal(size=(3, 2))
    a0, b0 = a.copy(), b.copy()
    fc.jit(fc.grad(lambda a, b: fnp.sum(fnp.linalg.solve(a, b))))(a, b)
    fc.jit(np.linalg.eigh)(a)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
