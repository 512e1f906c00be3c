"""functorch_core.scipy.linalg's rectangular ``lu``, ``solve_sylvester``,
``solve_continuous_lyapunov`` and ``solve_banded`` against SciPy: values and dtypes (eager
and jit), derivatives against finite differences (order 2, both modes), vmap against
loop-and-stack, and the errors.

Tolerances: LU and the solves are backward stable, so their forward error is bounded by
``c n eps cond``; for the well-conditioned matrices drawn here (a diagonal shift) that is
``1e3 eps`` with room to spare, for SciPy's results and for ours."""

import itertools

import numpy as np
import pytest
import scipy.linalg as sl

import functorch_core as fc
import functorch_core.scipy.linalg as L
from functorch_core.testing import check_grads

RNG = np.random.default_rng(0)


def _mat(shape, kind):
    x = RNG.standard_normal(shape)
    if kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    if kind == "f32":
        x = x.astype(np.float32)
    if kind == "i":
        x = RNG.integers(-3, 4, shape)
    return x


def _tol(dtype):
    return 1e3 * np.finfo(np.float32 if np.dtype(dtype) in (np.float32, np.complex64)
                          else np.float64).eps


LU_SHAPES = [(4, 3), (3, 5), (1, 4), (4, 1), (2, 4, 3), (3, 3), (6, 2)]


@pytest.mark.parametrize("kw", [{}, {"permute_l": True}, {"p_indices": True}])
def test_lu_rectangular_matches_scipy(kw):
    shapes = LU_SHAPES if not kw else [(4, 3), (3, 5), (2, 4, 3)]
    for shape, kind in itertools.product(shapes, ["f", "c", "f32", "i"]):
        a = _mat(shape, kind)
        want = sl.lu(a, **kw)
        jitted = (fc.jit(lambda a: L.lu(a, **kw))(a),) if shape == (2, 4, 3) else ()
        for got in (L.lu(a, **kw), *jitted):
            for g, w in zip(got, want, strict=True):
                assert g.shape == w.shape and g.dtype == w.dtype, (shape, kind, g.dtype, w.dtype)
                np.testing.assert_allclose(g, w, rtol=0, atol=_tol(w.dtype) * np.abs(a).max())


def test_lu_pivots_like_lapack_on_ties_and_zero_columns():
    a = np.array([[1.0, 2.0], [-1.0, 0.0], [1.0, 5.0]])       # a tie in |a[:, 0]|
    for g, w in zip(L.lu(a), sl.lu(a), strict=True):
        np.testing.assert_array_equal(g, w)
    z = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 1.0]])          # a zero first column
    for g, w in zip(L.lu(z.T), sl.lu(z.T), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    c = np.array([[1 + 1j, 0], [-1.5 + 0j, 1], [0.2 + 1.7j, 2]])    # |re| + |im| picks row 2
    for g, w in zip(L.lu(c), sl.lu(c), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-15)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_lu_rectangular_grads_and_vmap(shape):
    a = _mat(shape, "f") + 2 * np.eye(*shape)
    check_grads(lambda a: L.lu(a)[1:], (a,), order=2)
    check_grads(lambda a: L.lu(a, permute_l=True), (a,), order=1)
    batch = _mat((3, *shape), "f")
    got = fc.vmap(L.lu)(batch)
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, np.stack([sl.lu(x)[k] for x in batch]), rtol=0,
                                   atol=_tol(np.float64) * np.abs(batch).max())


@pytest.mark.parametrize("kind", ["f", "c", "f32", "i"])
def test_sylvester_and_lyapunov_match_scipy(kind):
    for m, n in [(1, 1), (1, 3), (3, 2), (4, 4)]:
        a, b, q = _mat((m, m), kind), _mat((n, n), kind), _mat((m, n), kind)
        if kind == "i":
            a, b = a + 8 * np.eye(m, dtype=int), b + 8 * np.eye(n, dtype=int)
        else:
            a, b = a + 3 * np.eye(m), b + 3 * np.eye(n)
        want = sl.solve_sylvester(a, b, q)
        for got in (L.solve_sylvester(a, b, q), fc.jit(L.solve_sylvester)(a, b, q)):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=0, atol=_tol(want.dtype) * np.abs(
                want).max())
        qq = _mat((m, m), kind)
        want = sl.solve_continuous_lyapunov(a, qq)
        got = L.solve_continuous_lyapunov(a, qq)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=0, atol=_tol(want.dtype) * np.abs(
            want).max())


def test_sylvester_complex_a_real_b_solves_the_equation():
    # SciPy 1.17 returns a wrong X for a complex a with a real b (the residual is O(1));
    # here X is checked by its residual, and against SciPy with b made complex
    a, b, q = _mat((3, 3), "c") + 3 * np.eye(3), _mat((2, 2), "f") + 3 * np.eye(2), _mat(
        (3, 2), "c")
    x = L.solve_sylvester(a, b, q)
    np.testing.assert_allclose(a @ x + x @ b, q, rtol=0, atol=_tol(np.float64))
    np.testing.assert_allclose(x, sl.solve_sylvester(a, b + 0j, q), rtol=0,
                               atol=_tol(np.float64))


def test_sylvester_lyapunov_grads_and_vmap():
    a, b, q = _mat((3, 3), "f") + 3 * np.eye(3), _mat((2, 2), "f") + 3 * np.eye(2), _mat(
        (3, 2), "f")
    check_grads(L.solve_sylvester, (a, b, q), order=2)
    check_grads(L.solve_continuous_lyapunov, (a, _mat((3, 3), "f")), order=2)
    ca = _mat((2, 2), "c") + 3 * np.eye(2)
    check_grads(L.solve_continuous_lyapunov, (ca, _mat((2, 2), "c")), order=1)
    qs = _mat((4, 3, 2), "f")
    got = fc.vmap(L.solve_sylvester, in_dims=(None, None, 0))(a, b, qs)
    np.testing.assert_allclose(got, np.stack([sl.solve_sylvester(a, b, x) for x in qs]),
                               rtol=0, atol=_tol(np.float64))
    As = _mat((4, 3, 3), "f") + 3 * np.eye(3)
    got = fc.vmap(L.solve_continuous_lyapunov, in_dims=(0, None))(As, q[:, :1] @ q[:, :1].T)
    want = np.stack([sl.solve_continuous_lyapunov(x, q[:, :1] @ q[:, :1].T) for x in As])
    np.testing.assert_allclose(got, want, rtol=0, atol=_tol(np.float64))


def _band(low, up, m, kind):
    ab = _mat((low + up + 1, m), kind)
    if kind == "i":
        ab[up] = 20
    else:
        ab[up] = ab[up] + 4
    return ab


@pytest.mark.parametrize("kind", ["f", "c", "f32", "i"])
def test_solve_banded_matches_scipy(kind):
    for (low, up), m, rhs in itertools.product([(0, 0), (1, 1), (2, 1), (0, 2), (1, 0)],
                                               [1, 5], [(), (3,)]):
        if m == 1 and kind == "c":
            continue        # SciPy 1.17 fails to cast for a complex 1x1 band and real b
        ab, b = _band(low, up, m, kind), _mat((m, *rhs), kind)
        want = sl.solve_banded((low, up), ab, b)
        for got in (L.solve_banded((low, up), ab, b),
                    fc.jit(lambda ab, b, lu=(low, up): L.solve_banded(lu, ab, b))(ab, b)):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=0, atol=_tol(want.dtype) * np.abs(
                want).max())


def test_solve_banded_grads_and_vmap():
    ab, b = _band(1, 2, 5, "f"), _mat((5, 2), "f")
    check_grads(lambda ab, b: L.solve_banded((1, 2), ab, b), (ab, b), order=2)
    bs = _mat((3, 5), "f")
    got = fc.vmap(lambda b: L.solve_banded((1, 2), ab, b))(bs)
    np.testing.assert_allclose(got, np.stack([sl.solve_banded((1, 2), ab, x) for x in bs]),
                               rtol=0, atol=_tol(np.float64))


def test_errors_name_the_call_and_shapes():
    with pytest.raises(ValueError, match=r"lu: a must be at least 2-D, got shape \(3,\)"):
        L.lu(np.ones(3))
    with pytest.raises(ValueError, match=r"solve_sylvester: b must be a square matrix, got "
                                         r"shape \(2, 3\)"):
        L.solve_sylvester(np.eye(2), np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"solve_sylvester: q must have shape \(2, 3\)"):
        L.solve_sylvester(np.eye(2), np.eye(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"solve_continuous_lyapunov: a must be a square "
                                         r"matrix"):
        L.solve_continuous_lyapunov(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"solve_banded: invalid values for the number of "
                                         r"lower and upper diagonals: l\+u\+1 \(3\) does not "
                                         r"equal ab.shape\[0\] \(2\)"):
        L.solve_banded((1, 1), np.ones((2, 4)), np.ones(4))
    with pytest.raises(ValueError, match=r"solve_banded: shapes of ab \(3, 4\) and b \(5,\) "
                                         r"are not compatible"):
        L.solve_banded((1, 1), np.ones((3, 4)), np.ones(5))
    with pytest.raises(ValueError, match="solve_banded: l and u must be non-negative"):
        L.solve_banded((-1, 1), np.ones((1, 4)), np.ones(4))
