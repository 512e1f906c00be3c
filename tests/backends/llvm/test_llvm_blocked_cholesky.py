"""The blocked Cholesky factorization of big matrices (backends/llvm/blocked_cholesky.py)
through the cpu backend's cholesky step: NumPy's values within rounding (ill-conditioned
matrices too), bits that do not depend on the number of threads, NumPy's error for a
matrix that is not positive definite, the caller's array untouched; the lower factor and
the upper one.

Small BLOCK/COLS/BLOCKED_MIN_N make small matrices take many blocks (a partial last one
too); one test runs the real constants."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.llvm import blas, blocked_cholesky, lapack, threads
from functorch_core.ir import primitives as P
from graph_builder import Builder

CPU = registry.get("cpu")
DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)]
pytestmark = pytest.mark.skipif(not blocked_cholesky.available(np.float64),
                                reason="NumPy's ILP64 OpenBLAS is not the BLAS in use")


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(blocked_cholesky, "BLOCK", 16)
    monkeypatch.setattr(blocked_cholesky, "COLS", 24)
    monkeypatch.setattr(lapack, "BLOCKED_MIN_N", 40)


def _spd(rng, lead, n, dtype, cond=None):
    a = rng.standard_normal(lead + (n, n))
    if dtype.kind == "c":
        a = a + 1j * rng.standard_normal(lead + (n, n))
    if cond is None:
        return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)
    q = np.linalg.qr(a)[0]
    w = np.geomspace(1.0, 1.0 / cond, n)
    return ((q * w[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))).astype(dtype)


def _cholesky_exe(like, upper=False):
    b = Builder()
    x = b.input(like.shape, like.dtype)
    exe = CPU.compile(b.graph(b(P.cholesky, x, upper=upper)))
    assert [type(s).__name__ for s in exe.plan.steps] == ["Lapack"]
    return exe


def _kept(n, upper):
    """The triangle the factor reads and fills."""
    keep = np.tri(n, dtype=bool)
    return keep.T if upper else keep


def _close_to_numpy(got, a, cond, upper=False):
    want = np.linalg.cholesky(a, upper=upper)
    assert got.dtype == want.dtype and got.shape == want.shape
    eps = np.finfo(np.float64).eps
    n = a.shape[-1]
    assert not np.any(got[..., ~_kept(n, upper)])
    if upper:       # the conjugate transposes are lower factors
        got, want = (np.conj(np.swapaxes(x, -1, -2)) for x in (got, want))
        a = np.conj(np.swapaxes(a, -1, -2))
    if a.dtype in (np.float32, np.complex64):   # both round the same double result
        np.testing.assert_allclose(got, want, rtol=2 * np.finfo(a.dtype).eps,
                                   atol=2 * np.finfo(a.dtype).eps * np.abs(want).max())
        return
    # the factors' forward error grows with the condition number; the residual does not
    err = np.abs(got - want).max(axis=(-2, -1)) / np.abs(want).max(axis=(-2, -1))
    assert np.all(err <= 4 * n * eps * (cond or 1) ** 0.5), err
    residual = got @ np.conj(np.swapaxes(got, -1, -2)) - np.tril(a) - np.conj(
        np.swapaxes(np.tril(a, -1), -1, -2))
    scale = np.abs(a).max(axis=(-2, -1))
    assert np.all(np.abs(residual).max(axis=(-2, -1)) <= 4 * n * eps * scale)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n,cond", [((), 40, None), ((3,), 77, None), ((), 90, 1e12)])
def test_values_are_numpys_within_rounding(small_blocks, dtype, lead, n, cond, upper):
    rng = np.random.default_rng(n)
    if cond and dtype in (np.float32, np.complex64):
        cond = 1e5      # positive definite once rounded to single precision
    a = _spd(rng, lead, n, dtype, cond)
    a[..., ~_kept(n, upper)] = np.nan        # never read
    before = a.copy()
    (got,) = _cholesky_exe(a, upper)([a])
    np.testing.assert_array_equal(a, before, strict=True)
    _close_to_numpy(got, np.where(np.isnan(a), np.conj(np.swapaxes(a, -1, -2)), a), cond,
                    upper)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.complex128)], ids=str)
def test_bits_do_not_depend_on_the_thread_count(small_blocks, monkeypatch, dtype, upper):
    a = _spd(np.random.default_rng(5), (2,), 101, dtype)
    exe = _cholesky_exe(a, upper)
    results = []
    for workers in (1, 2, 3, 7):
        monkeypatch.setattr(threads, "workers", workers)
        results.append(exe([a])[0])
    with blas.one_thread_each():
        results.append(exe([a])[0])
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0], strict=True)


def test_a_matrix_not_positive_definite_raises_numpys_error(small_blocks):
    """The failing leading minor is in a later block (the first blocks factor)."""
    a = _spd(np.random.default_rng(6), (2,), 64, np.dtype(np.float64))
    a[1, 50, 50] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(a)
    with pytest.raises(np.linalg.LinAlgError, match=r"cholesky: Matrix is not positive "
                                                    r"definite \(operand of shape \(2, 64, 64\)"):
        _cholesky_exe(a)([a])


@pytest.mark.parametrize("upper", [False, True])
def test_the_real_constants_on_a_matrix_of_blocked_min_n_rows(upper):
    n = lapack.BLOCKED_MIN_N + 5
    a = _spd(np.random.default_rng(7), (), n, np.dtype(np.float64))
    exe = _cholesky_exe(a, upper)
    # factored in the result itself: no copy in the arena
    assert exe.plan.slots[exe.plan.steps[0].scratch[0]][0] == (0, n, n)
    (got,) = exe([a])
    _close_to_numpy(got, a, None, upper)
