"""functorch_core.scipy.linalg.sqrtm and eigh(subset_by_value=...) against SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.scipy import linalg as fsl
from functorch_core.testing import check_grads

DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)]


def _rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _spd(rng, shape, dtype=np.float64):
    a = _rand(rng, shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _close(got, want, dtype):
    eps = np.finfo(np.dtype(dtype)).eps
    scale = max(np.max(np.abs(want)), 1.0)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=0, atol=200 * eps * scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 2, 1, 1)])
def test_sqrtm_matches_scipy(dtype, shape):
    """General matrices (real ones with complex conjugate eigenvalues have real roots) and
    SPD ones, batched as SciPy batches, eager and under jit."""
    rng = np.random.default_rng(sum(shape))
    for a in (_rand(rng, shape, dtype) + 3 * np.eye(shape[-1], dtype=dtype),
              _spd(rng, shape, dtype)):
        want = sl.sqrtm(a)
        _close(fsl.sqrtm(a), want, dtype)
        _close(fc.jit(fsl.sqrtm)(a), want, dtype)
        got = fsl.sqrtm(a)
        _close(got @ got, a.astype(want.dtype), dtype)


def test_sqrtm_of_real_input_with_negative_eigenvalues_is_complex_as_scipys():
    a = np.array([[-4.0, 1.0], [0.0, 9.0]])
    want = sl.sqrtm(a)
    got = fsl.sqrtm(a)
    assert want.dtype == got.dtype == np.complex128
    np.testing.assert_allclose(got, want, atol=1e-14)
    np.testing.assert_allclose(fsl.sqrtm(a.astype(np.float32)), want, atol=1e-5)
    # under a trace the dtype is fixed before the values: real, NaN for such a matrix
    both = np.stack([a, np.diag([4.0, 9.0])])
    traced = fc.jit(fsl.sqrtm)(both)
    assert traced.dtype == np.float64
    assert np.isnan(traced[0]).all()
    np.testing.assert_allclose(traced[1], np.diag([2.0, 3.0]), atol=1e-15)


def _jordan(n, w):
    return w * np.eye(n) + np.eye(n, k=1)


def _rel(got, want):
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def _hard_inputs():
    """Defective (Jordan blocks, a similarity-transformed one, nilpotent + identity),
    ill-conditioned and nearly defective matrices, and real ones with negative eigenvalues:
    one name -> a (n, n) float64 matrix."""
    rng = np.random.default_rng(11)
    v = rng.standard_normal((4, 4))
    q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    nilpotent = np.triu(rng.standard_normal((5, 5)), 1)
    return {"shear": np.array([[1.0, 1.0], [0.0, 1.0]]),
            "jordan3": _jordan(3, 4.0),
            "jordan5_complex_similar": v @ _jordan(4, 2.0 + 1.0j) @ np.linalg.inv(v),
            "nilpotent_plus_identity": np.eye(5) + nilpotent,
            "two_jordan_blocks": np.block([[_jordan(2, 3.0), np.ones((2, 2))],
                                           [np.zeros((2, 2)), _jordan(2, 0.5)]]),
            "ill_conditioned": q @ np.diag(np.logspace(-8, 4, 6)) @ q.T,
            "nearly_defective": np.array([[1.0, 1e-8], [0.0, 1.0 + 1e-10]]),
            "negative_eigenvalues": np.array([[-4.0, 1.0, 0.0], [0.0, 9.0, 2.0],
                                              [0.0, 0.0, -1.0]]),
            "random": rng.standard_normal((7, 7))}


@pytest.mark.parametrize("name", list(_hard_inputs()))
def test_sqrtm_matches_scipy_on_defective_and_ill_conditioned_input(name):
    """SciPy's Schur method gives every one of these a root; so do we, to 1e-12 relative,
    eager (SciPy's dtype: complex for real input with a negative eigenvalue), under jit
    and native against the interpreter."""
    a = _hard_inputs()[name]
    # SciPy's own real (real Schur form) and complex roots of it differ by 1.4e-11
    tol = 1e-10 if name == "ill_conditioned" else 1e-12
    want = sl.sqrtm(a)
    got = fsl.sqrtm(a)
    assert got.dtype == want.dtype
    assert _rel(got, want) < tol
    c = a.astype(np.complex128)
    assert _rel(fc.jit(fsl.sqrtm)(c), sl.sqrtm(c)) < 1e-12
    if want.dtype.kind == "f":
        assert _rel(fc.jit(fsl.sqrtm)(a), want) < tol
    assert _rel(fc.jit(fsl.sqrtm, backend="interpreter")(c), sl.sqrtm(c)) < 1e-12


def test_sqrtm_of_a_jordan_block_squares_back_and_differentiates():
    """The shear [[1, 1], [0, 1]] has root [[1, 1/2], [0, 1]]; the derivative at a defective
    matrix exists (the Sylvester operator X. + .X has eigenvalues 2 there)."""
    a = np.array([[1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_allclose(fsl.sqrtm(a), [[1.0, 0.5], [0.0, 1.0]], atol=1e-15)
    j = _jordan(3, 4.0)
    x = fsl.sqrtm(j)
    np.testing.assert_allclose(x @ x, j, atol=1e-14)
    check_grads(fsl.sqrtm, (j,), order=2, modes=("fwd", "rev"))
    check_grads(fsl.sqrtm, (j.astype(np.complex128),), order=1, modes=("fwd", "rev"))


def test_sqrtm_rejects_non_square_input():
    with pytest.raises(np.linalg.LinAlgError, match=r"sqrtm.*square"):
        fsl.sqrtm(np.ones((2, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_sqrtm_derivatives_to_second_order(dtype):
    rng = np.random.default_rng(3)
    a = _spd(rng, (4, 4), dtype)
    check_grads(fsl.sqrtm, (a,), order=2, modes=("fwd", "rev"))


def test_sqrtm_derivative_solves_the_sylvester_equation():
    """X dX + dX X = dA, also at the identity (repeated eigenvalues: finite)."""
    rng = np.random.default_rng(4)
    for a in (_spd(rng, (5, 5)), np.eye(5)):
        da = rng.standard_normal((5, 5))
        x, dx = fc.jvp(fsl.sqrtm, (a,), (da,))
        np.testing.assert_allclose(x @ dx + dx @ x, da, atol=1e-12)
    g = fc.grad(lambda m: np.sum(fsl.sqrtm(m)))(np.eye(3))
    np.testing.assert_allclose(g, np.full((3, 3), 0.5), atol=1e-15)


def test_sqrtm_vmap_matches_a_loop():
    rng = np.random.default_rng(5)
    a = _spd(rng, (6, 4, 4))
    want = np.stack([fsl.sqrtm(m) for m in a])
    np.testing.assert_allclose(fc.vmap(fsl.sqrtm)(a), want, rtol=0, atol=1e-13)
    grads = fc.vmap(fc.grad(lambda m: np.sum(fsl.sqrtm(m) ** 2)))(a)
    loop = np.stack([fc.grad(lambda m: np.sum(fsl.sqrtm(m) ** 2))(m) for m in a])
    np.testing.assert_allclose(grads, loop, rtol=0, atol=1e-12)


@settings(deadline=None)
@given(st.integers(1, 6), st.integers(0, 2 ** 16))
def test_sqrtm_squares_back_on_spd_input(n, seed):
    a = _spd(np.random.default_rng(seed), (n, n))
    x = fsl.sqrtm(a)
    np.testing.assert_allclose(x @ x, a, rtol=0, atol=1e-12 * np.max(np.abs(a)))
    np.testing.assert_allclose(x, x.T, atol=1e-12 * np.max(np.abs(a)))


@pytest.mark.parametrize("bounds", [(1, 3), (-np.inf, 2), (0.5, 1), (2.5, np.inf), (10, 11)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh_subset_by_value_is_scipys_half_open_interval(bounds, dtype):
    rng = np.random.default_rng(6)
    q, _ = np.linalg.qr(_rand(rng, (4, 4), dtype))
    a = (q @ np.diag([1.25, 2.25, 3.25, 4.25]) @ np.conj(q.T)).astype(dtype)
    a = (a + np.conj(a.T)) / 2
    want_w = sl.eigh(a, subset_by_value=bounds, eigvals_only=True)
    got_w, got_v = fsl.eigh(a, subset_by_value=bounds)
    np.testing.assert_allclose(got_w, want_w, atol=100 * np.finfo(dtype).eps)
    assert got_w.dtype == want_w.dtype and got_v.shape == (4, len(want_w))
    np.testing.assert_allclose(a @ got_v, got_v * got_w, atol=1e3 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(fsl.eigh(a, subset_by_value=bounds, eigvals_only=True),
                                  got_w)


def test_eigh_subset_by_value_excludes_low_and_includes_high():
    a = np.diag([1.0, 2.0, 3.0, 4.0])
    for bounds in [(1, 3), (-np.inf, 1), (2, 4), (4, 5)]:
        np.testing.assert_array_equal(
            fsl.eigh(a, subset_by_value=bounds, eigvals_only=True),
            sl.eigh(a, subset_by_value=bounds, eigvals_only=True), strict=True)


def test_eigh_subset_by_value_batches_with_equal_counts():
    a = np.stack([np.diag([1.0, 2.0, 3.0]), np.diag([0.0, 2.5, 3.0])])
    w, v = fsl.eigh(a, subset_by_value=(1.5, 3.0))
    np.testing.assert_array_equal(w, [[2.0, 3.0], [2.5, 3.0]])
    np.testing.assert_array_equal(np.abs(v), np.eye(3)[None, :, 1:].repeat(2, axis=0))


def test_eigh_subset_by_value_errors():
    a = np.diag([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"subset_by_value.*subset_by_index"):
        fc.jit(lambda x: fsl.eigh(x, subset_by_value=(1, 3)))(a)
    with pytest.raises(TypeError, match="subset_by_value"):
        fc.grad(lambda x: np.sum(fsl.eigh(x, subset_by_value=(1, 3), eigvals_only=True)))(a)
    with pytest.raises(ValueError, match="low < high"):
        fsl.eigh(a, subset_by_value=(3, 1))
    with pytest.raises(ValueError, match="Either index or value"):
        fsl.eigh(a, subset_by_value=(1, 3), subset_by_index=(0, 1))
    with pytest.raises(ValueError, match="same number"):
        fsl.eigh(np.stack([a, 2 * a]), subset_by_value=(1.5, 3))
