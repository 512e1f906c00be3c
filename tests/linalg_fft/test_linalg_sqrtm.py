"""The ``sqrtm`` and ``sylvester`` primitives: SciPy's values, vmap against a loop, derivatives,
and the native LAPACK lowering (?gees, ?trsyl) against the interpreter."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg as sl
from functorch_core.ir import primitives as P
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.testing import check_grads


def _rand(rng, shape, dtype=np.complex128):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _sylvester(a, b, c):
    return P.sylvester.bind(a, b, c)


def _sqrtm(a):
    return P.sqrtm.bind(a)


def _rel(got, want):
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def _well_posed(rng, shape, dtype=np.complex128):
    """Matrices whose spectra keep ``a y + y b`` invertible (eigenvalues near 3)."""
    n = shape[-1]
    return (_rand(rng, shape, dtype) + 3 * n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_sylvester_matches_scipy(backend, dtype):
    rng = np.random.default_rng(0)
    a, b = _well_posed(rng, (3, 4, 4), dtype), _well_posed(rng, (3, 2, 2), dtype)
    c = _rand(rng, (3, 4, 2), dtype)
    got = fc.jit(_sylvester, backend=backend)(a, b, c)
    assert got.dtype == dtype
    want = np.stack([sl.solve_sylvester(*m) for m in zip(a, b, c, strict=True)])
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    assert _rel(got, want) < tol
    np.testing.assert_allclose(a @ got + got @ b, c, atol=50 * tol)


def test_sylvester_rejects_mismatched_shapes():
    z = np.zeros((3, 3), np.complex128)
    with pytest.raises(ValueError, match=r"sylvester.*\(3, 3\).*\(2, 2\).*\(3, 3\)"):
        _sylvester(z, np.zeros((2, 2), np.complex128), z)
    with pytest.raises(TypeError, match="sylvester"):
        _sylvester(z.real, z.real, z.real)


def test_sylvester_derivatives_to_second_order_in_every_operand():
    rng = np.random.default_rng(1)
    a, b, c = _well_posed(rng, (3, 3)), _well_posed(rng, (2, 2)), _rand(rng, (3, 2))
    check_grads(_sylvester, (a, b, c), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("batched", list(itertools.product([False, True], repeat=3)))
def test_sylvester_vmap_matches_a_loop(batched):
    rng = np.random.default_rng(2)
    ops = [_well_posed(rng, (5, 3, 3)), _well_posed(rng, (5, 2, 2)), _rand(rng, (5, 3, 2))]
    args = [x if b else x[0] for x, b in zip(ops, batched, strict=True)]
    axes = tuple(0 if b else None for b in batched)
    if not any(batched):
        return
    got = fc.vmap(_sylvester, in_axes=axes)(*args)
    want = np.stack([_sylvester(*(x[i] if b else x for x, b in
                                  zip(args, batched, strict=True))) for i in range(5)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_sqrtm_vmap_of_jvp_matches_a_loop():
    rng = np.random.default_rng(3)
    a, da = _well_posed(rng, (4, 3, 3)), _rand(rng, (4, 3, 3))
    got = fc.vmap(lambda m, t: fc.jvp(_sqrtm, (m,), (t,))[1])(a, da)
    want = np.stack([fc.jvp(_sqrtm, (m,), (t,))[1] for m, t in zip(a, da, strict=True)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def _native_vs_interpreter(fn, *args, tol):
    native = fc.jit(fn, backend="cpu")(*args)
    ref = fc.jit(fn, backend="interpreter")(*args)
    assert native.dtype == ref.dtype
    assert _rel(native, ref) < tol, _rel(native, ref)
    return native


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128],
                         ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (12, 7, 7), (2, 3, 33, 33)])
def test_sqrtm_native_matches_the_interpreter(dtype, shape):
    """The native step (?gees, the diagonal's roots, ?trsyl by blocks, the back-transform)
    against SciPy's sqrtm; real input has no eigenvalue on the negative real axis here."""
    rng = np.random.default_rng(sum(shape))
    n = shape[-1]
    a = (_rand(rng, shape, dtype) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)
    tol = 1e-5 if dtype in (np.float32, np.complex64) else 1e-12
    x = _native_vs_interpreter(_sqrtm, a, tol=tol)
    np.testing.assert_allclose(x @ x, a, atol=tol * 100 * np.abs(a).max())


def test_sqrtm_native_on_defective_and_negative_real_input():
    """Jordan blocks, and a real matrix whose negative eigenvalues get +i sqrt|w| (SciPy's
    real Schur form) though the native step works in complex arithmetic."""
    jordan = 4.0 * np.eye(6) + np.eye(6, k=1)
    negative = np.array([[-4.0, 1.0, 0.0], [0.0, 9.0, 2.0], [0.0, 0.0, -1.0]])
    rng = np.random.default_rng(4)
    v = rng.standard_normal((3, 3))
    similar = v @ negative @ np.linalg.inv(v)
    for a in (jordan, jordan.astype(np.complex128), negative, similar):
        _native_vs_interpreter(_sqrtm, a, tol=1e-12)
        assert _rel(fc.jit(_sqrtm)(a), sl.sqrtm(a)) < 1e-12


def test_sylvester_native_on_a_batch_split_over_threads():
    rng = np.random.default_rng(5)
    a, b, c = _well_posed(rng, (40, 3, 3)), _well_posed(rng, (40, 3, 3)), _rand(rng, (40, 3, 3))
    _native_vs_interpreter(_sylvester, a, b, c, tol=1e-13)


def test_real_sqrtm_gradient_tests_eigenvalues_without_eigenvectors():
    """The negative-eigenvalue test of a real sqrtm is behind stop_gradient: its eig keeps
    compute_v=False under grad (eig's jvp would compute the eigenvectors)."""
    from functorch_core.scipy import linalg as fsl
    a = _well_posed(np.random.default_rng(7), (5, 5)).real.copy()
    graph = fc.make_graph(fc.grad(lambda a: np.sum(fsl.sqrtm(a))))(a)
    assert [e.params["compute_v"] for e in graph.eqns if e.prim is P.eig] == [False]


def test_sqrtm_derivatives_take_one_schur_form_per_sylvester(monkeypatch):
    """sqrtm's jvp and its transpose solve ``X y + y X = c``: the native sylvester step
    takes one Schur form of ``X`` for both sides (zgees twice in all, sqrtm's included),
    with the values of two."""
    from functorch_core.backends.llvm import lapack_schur
    calls, inner = [], lapack_schur._schur
    monkeypatch.setattr(lapack_schur, "_schur",
                        lambda *args: calls.append(args[0]) or inner(*args))
    rng = np.random.default_rng(6)
    a, t = _well_posed(rng, (2, 9, 9)), _rand(rng, (2, 9, 9))
    jvp = fc.jit(lambda a, t: fc.jvp(_sqrtm, (a,), (t,))[1])
    grad = fc.jit(fc.grad(lambda a: np.sum(np.real(_sqrtm(a) * t))))
    for f, args, eager in ((jvp, (a, t), lambda a, t: fc.jvp(_sqrtm, (a,), (t,))[1]),
                           (grad, (a,), fc.grad(lambda a: np.sum(np.real(_sqrtm(a) * t))))):
        calls.clear()
        got = f(*args)
        assert calls == ["sqrtm", "sylvester"]
        assert _rel(got, eager(*args)) < 1e-12


@settings(deadline=None)
@given(st.integers(1, 9), st.integers(0, 2 ** 16))
def test_sqrtm_native_squares_back(n, seed):
    rng = np.random.default_rng(seed)
    a = _rand(rng, (2, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    x = fc.jit(_sqrtm)(a)
    np.testing.assert_allclose(x @ x, a, rtol=0, atol=1e-12 * np.abs(a).max())
    w = np.linalg.eigvals(x)
    assert (w.real > 0).all()
