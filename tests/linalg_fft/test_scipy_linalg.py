"""functorch_core.scipy.linalg against SciPy: values (eager and jit), derivatives against
finite differences (order 2), and expm's Fréchet derivative against SciPy's."""

import numpy as np
import pytest
import scipy.linalg as sl

import functorch_core as fc
import functorch_core.scipy.linalg as L
from functorch_core.testing import check_grads

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 4)) + 4 * np.eye(4)
B = RNG.normal(size=(4, 2))
SPD = A @ A.T
LOW = np.tril(A)


def _both(f, *args):
    return f(*args), fc.jit(f)(*args)


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [True, False])
@pytest.mark.parametrize("complex_", [False, True])
def test_solve_triangular(trans, lower, unit, complex_):
    a, b = (A + 1j * A.T, B + 1j) if complex_ else (A, B)
    want = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    for got in _both(lambda a, b: L.solve_triangular(a, b, trans=trans, lower=lower,
                                                     unit_diagonal=unit), a, b):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(L.solve_triangular(a, b[:, 0], trans=trans, lower=lower),
                               sl.solve_triangular(a, b[:, 0], trans=trans, lower=lower),
                               rtol=1e-10)


@pytest.mark.parametrize("lower", [True, False])
def test_cho_factor_and_solve(lower):
    c = L.cho_factor(SPD, lower=lower)
    np.testing.assert_allclose(L.cho_solve(c, B), sl.cho_solve(sl.cho_factor(SPD, lower), B),
                               rtol=1e-10)
    got = fc.jit(lambda a, b: L.cho_solve(L.cho_factor(a, lower=lower), b))(SPD, B)
    np.testing.assert_allclose(got, np.linalg.solve(SPD, B), rtol=1e-10)


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_and_solve(trans):
    a = A + 1j * A.T
    lu, piv = L.lu_factor(a)
    want_lu, want_piv = sl.lu_factor(a)
    np.testing.assert_allclose(lu, want_lu, rtol=1e-12)
    np.testing.assert_array_equal(piv, want_piv)
    want = sl.lu_solve((want_lu, want_piv), B, trans=trans)
    for got in _both(lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=trans), a, B):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_lu_forms_match_scipy():
    for kw in ({}, {"permute_l": True}, {"p_indices": True}):
        want = sl.lu(A, **kw)
        got = fc.jit(lambda a, kw=kw: L.lu(a, **kw))(A)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_expm_matches_scipy_small_large_and_batched():
    for scale in (1e-3, 1.0, 30.0):
        a = scale * RNG.normal(size=(5, 5))
        for got in _both(L.expm, a):
            np.testing.assert_allclose(got, sl.expm(a), rtol=1e-10)
    batch = RNG.normal(size=(3, 4, 4))
    np.testing.assert_allclose(fc.jit(L.expm)(batch), np.stack([sl.expm(x) for x in batch]),
                               rtol=1e-10)


def test_expm_derivative_is_the_frechet_derivative():
    a, e = RNG.normal(size=(4, 4)), RNG.normal(size=(4, 4))
    _, tangent = fc.jvp(L.expm, (a,), (e,))
    np.testing.assert_allclose(tangent, sl.expm_frechet(a, e, compute_expm=False), rtol=1e-9)
    check_grads(L.expm, (0.5 * a,), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_block_diag():
    parts = (np.ones((2, 2)), np.array([1.0, 2.0, 3.0]), 5.0, np.zeros((1, 0)))
    np.testing.assert_array_equal(L.block_diag(*parts), sl.block_diag(*parts))
    np.testing.assert_array_equal(fc.jit(lambda a, b: L.block_diag(a, b))(parts[0], parts[1]),
                                  sl.block_diag(parts[0], parts[1]))


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_standard_generalized_and_subset(lower):
    h = RNG.normal(size=(5, 5))
    w, v = L.eigh(h, lower=lower)
    ww, vv = sl.eigh(h, lower=lower)
    np.testing.assert_allclose(w, ww, rtol=1e-10)
    np.testing.assert_allclose(np.abs(v), np.abs(vv), rtol=1e-8, atol=1e-10)
    b = SPD[:4, :4] + np.eye(4)
    w, v = fc.jit(lambda a, b: L.eigh(a, b, lower=lower))(h[:4, :4], b)
    ww = sl.eigh(h[:4, :4], b, lower=lower, eigvals_only=True)
    np.testing.assert_allclose(w, ww, rtol=1e-10)
    sym = np.tril(h[:4, :4]) + np.tril(h[:4, :4], -1).T if lower else \
        np.triu(h[:4, :4]) + np.triu(h[:4, :4], 1).T
    np.testing.assert_allclose(sym @ v, b @ v * w, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(L.eigh(h, eigvals_only=True, subset_by_index=(1, 3)),
                               sl.eigh(h, eigvals_only=True, subset_by_index=(1, 3)),
                               rtol=1e-10)


@pytest.mark.parametrize("name,f,args", [
    ("solve_triangular", lambda a, b: L.solve_triangular(a, b, lower=True, trans=1),
     (LOW, B)),
    ("cho_solve", lambda a, b: L.cho_solve(L.cho_factor(a), b), (SPD, B)),
    ("lu_solve", lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=2), (A + 1j, B)),
    ("lu", lambda a: L.lu(a)[1:], (A,)),
    ("eigh_generalized", lambda a, b: L.eigh(a + a.T, b + b.T, eigvals_only=True),
     (A, SPD)),
])
def test_check_grads_order_2(name, f, args):
    check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="solve_triangular: trans must be"):
        L.solve_triangular(A, B, trans=3)
    with pytest.raises(ValueError, match="subset_by_index"):
        L.eigh(A, subset_by_index=(2, 9))
