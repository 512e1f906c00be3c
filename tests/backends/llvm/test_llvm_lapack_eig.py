"""qr, svd, eigh and eig lowered to batched LAPACK calls (backends/llvm/lapack_eig.py)
against the interpreter (NumPy's gufuncs): the same routines on the same Fortran copies in
double precision with the same workspace sizes, so every result is NumPy's to the last
bit, the sign and phase conventions of the vectors included.
"""

from __future__ import annotations

import numpy as np
import pytest
from bitwise import assert_bitwise
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import lapack, lapack_eig, lapack_steps
from functorch_core.backends.llvm import lowering as part
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp

CPU = registry.get("cpu")
DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)]
# (batch shape, n): unbatched, two batch axes, a batch split over threads (n <= SPLIT_MAX_N),
# matrices big enough for OpenBLAS's own threads (and blocked LAPACK code), 1x1 matrices
SQUARE = [((), 5), ((2, 3), 4), ((24,), 16), ((3,), lapack.SPLIT_MAX_N + 36), ((4,), 1)]
# (batch shape, m, n): square, tall and wide, batched and split
RECT = [((), 5, 5), ((2, 3), 7, 4), ((2,), 3, 6), ((24,), 12, 9), ((16,), 9, 12),
        ((2,), 130, 70), ((), 1, 1)]


def _rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _compiled(prim, *args, **params):
    b = Builder()
    ins = [b.input(a.shape, a.dtype) for a in args]
    out = b(prim, *ins, **params)
    graph = b.graph(*out)
    return CPU.compile(graph), graph


def _native_and_reference(prim, a, **params):
    exe, graph = _compiled(prim, a, **params)
    assert [type(s).__name__ for s in exe.plan.steps] == ["Lapack"]
    return exe([a]), run_graph(graph, [a])


def _same_outcome(prim, a, **params):
    """The native step and the interpreter both raise the same LinAlgError, or both return
    the same bits."""
    exe, graph = _compiled(prim, a, **params)
    try:
        want = run_graph(graph, [a])
    except np.linalg.LinAlgError as e:
        with pytest.raises(np.linalg.LinAlgError) as native:
            exe([a])
        assert str(native.value) == str(e)
        return str(e)
    assert_bitwise(exe([a]), want)
    return None


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,m,n", RECT)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr_is_numpys_to_the_bit(dtype, lead, m, n, full_matrices):
    a = _rand(np.random.default_rng(m * n), lead + (m, n), dtype)
    assert_bitwise(*_native_and_reference(P.qr, a, full_matrices=full_matrices))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,m,n", RECT)
@pytest.mark.parametrize("full_matrices,compute_uv", [(True, True), (False, True),
                                                      (False, False)])
def test_svd_is_numpys_to_the_bit(dtype, lead, m, n, full_matrices, compute_uv):
    a = _rand(np.random.default_rng(m * n + 1), lead + (m, n), dtype)
    assert_bitwise(*_native_and_reference(P.svd, a, full_matrices=full_matrices,
                                           compute_uv=compute_uv))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SQUARE)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_is_numpys_to_the_bit_and_reads_one_triangle(dtype, lead, n, lower):
    a = _rand(np.random.default_rng(n + 2), lead + (n, n), dtype)
    a = a + np.conj(np.swapaxes(a, -1, -2))
    a[..., ~np.tri(n, dtype=bool) if lower else ~np.tri(n, dtype=bool).T] = np.nan
    assert_bitwise(*_native_and_reference(P.eigh, a, lower=lower))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SQUARE)
@pytest.mark.parametrize("compute_v", [True, False])
def test_eig_is_numpys_to_the_bit(dtype, lead, n, compute_v):
    """Random real matrices have conjugate pairs of eigenvalues: their vectors are built
    from LAPACK's two real columns as NumPy builds them."""
    a = _rand(np.random.default_rng(n + 3), lead + (n, n), dtype)
    got, want = _native_and_reference(P.eig, a, compute_v=compute_v)
    assert_bitwise(got, want)
    if dtype.kind == "f" and n > 2:
        assert np.any(got[0].imag != 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_degenerate_and_ill_conditioned_inputs(dtype):
    """Repeated eigenvalues and singular values, rank deficiency, a matrix with
    condition number ~1e15, a rotation (eigenvalues +-i), a defective Jordan block."""
    n = 6
    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(_rand(rng, (n, n), np.dtype(np.float64)))
    cases = [np.eye(n), np.zeros((n, n)), np.ones((n, n)),
             q @ np.diag(10.0 ** -np.arange(0, 16, 3)) @ q.T,
             np.kron(np.eye(3), [[0.0, -1.0], [1.0, 0.0]]),
             np.eye(n) + np.diag(np.ones(n - 1), 1)]
    a = np.stack(cases).astype(dtype)
    sym = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    for full in (True, False):
        _same_outcome(P.qr, a, full_matrices=full)
        _same_outcome(P.svd, a, full_matrices=full, compute_uv=True)
    _same_outcome(P.svd, a, full_matrices=False, compute_uv=False)
    _same_outcome(P.eigh, sym, lower=True)
    _same_outcome(P.eig, a, compute_v=True)
    _same_outcome(P.eig, a, compute_v=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_non_finite_input_raises_the_interpreters_error(dtype):
    """LAPACK rejects a NaN operand (info != 0): NumPy's LinAlgError for the whole batch,
    with the interpreter's message."""
    a = np.stack([np.eye(4), np.full((4, 4), np.nan), np.eye(4)]).astype(dtype)
    message = _same_outcome(P.svd, a, full_matrices=False, compute_uv=True)
    assert message == "svd: SVD did not converge (operand of shape (3, 4, 4))"
    _same_outcome(P.svd, a, full_matrices=True, compute_uv=False)
    _same_outcome(P.eigh, a, lower=True)
    _same_outcome(P.eig, a, compute_v=True)
    _same_outcome(P.qr, a, full_matrices=False)


@given(st.sampled_from(["qr", "svd", "svdvals", "eigh", "eig", "eigvals"]),
       st.integers(1, 12), st.integers(1, 9), st.integers(1, 9), st.sampled_from(DTYPES),
       st.integers(0, 2 ** 16))
def test_any_batch_and_shape_is_numpys_to_the_bit(name, batch, m, n, dtype, seed):
    a = _rand(np.random.default_rng(seed), (batch, m, n if name in ("qr", "svd", "svdvals")
                                            else m), dtype)
    prim, params = {"qr": (P.qr, {"full_matrices": seed % 2 == 0}),
                    "svd": (P.svd, {"full_matrices": seed % 2 == 0, "compute_uv": True}),
                    "svdvals": (P.svd, {"full_matrices": False, "compute_uv": False}),
                    "eigh": (P.eigh, {"lower": seed % 2 == 0}),
                    "eig": (P.eig, {"compute_v": True}),
                    "eigvals": (P.eig, {"compute_v": False})}[name]
    assert_bitwise(*_native_and_reference(prim, a, **params))


def test_workspace_is_queried_once_per_shape_and_is_per_thread():
    from functorch_core.backends.llvm import threads
    lapack_eig._query.cache_clear()
    f64 = np.dtype(np.float64)
    spec = lapack_eig._spec(P.eigh, (32, 10, 10), f64, {"lower": True})
    lapack_eig._spec(P.eigh, (16, 10, 10), f64, {"lower": True})
    assert lapack_eig._query.cache_info().misses == 1
    assert spec["work"][0][0] == min(threads.workers, 32)
    assert lapack_eig._spec(P.eigh, (2, 80, 80), f64, {"lower": True})["work"][0][0] == 1
    a = _rand(np.random.default_rng(6), (32, 10, 10), f64)
    exe, _ = _compiled(P.eigh, a, lower=True)
    want = np.linalg.eigh(a)
    for _ in range(2):      # the arena reused
        got = exe([a])
        np.testing.assert_array_equal(got[0], want[0], strict=True)
        np.testing.assert_array_equal(got[1], want[1], strict=True)


@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float32)], ids=str)
@pytest.mark.parametrize("lead,m,n,full_matrices", [
    ((2,), 100, 80, True), ((2,), 100, 80, False), ((), 90, 90, True), ((), 127, 70, True)])
def test_big_real_svd_runs_gesdds_phases_with_one_threads_bits(dtype, lead, m, n,
                                                               full_matrices):
    """Real matrices past SPLIT_MAX_N rows on gesdd's path without a QR run its calls
    themselves, the two ?ormbr at once: NumPy's bits with OpenBLAS on one thread, on one
    runtime thread or two (OpenBLAS's threaded gesdd gives other bits for some of these)."""
    from functorch_core.backends.llvm import blas, runtime, threads
    jobz = "A" if full_matrices else "S"
    wide = np.dtype(np.float64)
    lwork = lapack_eig.svd_sizes(wide, m, n, full_matrices, True)[4]
    assert lapack_eig._phased(wide, m, n, jobz, lwork)
    a = _rand(np.random.default_rng(m + n), lead + (m, n), dtype)
    with blas.one_thread_each():
        want = run_graph(_compiled(P.svd, a, full_matrices=full_matrices,
                                   compute_uv=True)[1], [a])
    before = threads.workers
    try:
        for workers in (1, 2):
            runtime.set_num_threads(workers)
            exe, _ = _compiled(P.svd, a, full_matrices=full_matrices, compute_uv=True)
            assert_bitwise(exe([a]), want)
    finally:
        runtime.set_num_threads(before)


def test_svd_phases_leave_scaled_non_finite_and_wide_matrices_to_gesdd():
    """A matrix gesdd would scale (tiny or huge entries), a NaN, a matrix on gesdd's QR path
    (m >= 11n/6) or a wide one, and complex ones take gesdd itself: NumPy's outcome."""
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4, 90, 90))
    a[0] *= 1e-160
    a[1] *= 1e160
    a[2, 3, 4] = np.nan
    _same_outcome(P.svd, a[:2], full_matrices=True, compute_uv=True)
    _same_outcome(P.svd, a, full_matrices=True, compute_uv=True)
    wide = np.dtype(np.float64)
    for m, n in ((170, 90), (90, 100)):
        lwork = lapack_eig.svd_sizes(wide, m, n, True, True)[4]
        assert not lapack_eig._phased(wide, m, n, "A", lwork)
    lwork = lapack_eig.svd_sizes(np.dtype(np.complex128), 90, 90, True, True)[4]
    assert not lapack_eig._phased(np.dtype(np.complex128), 90, 90, "A", lwork)


def test_scipys_32_bit_lapack_when_numpy_has_none(monkeypatch):
    """Without NumPy's ILP64 OpenBLAS the routines come from SciPy's capsules (another
    OpenBLAS build: NumPy's values within rounding, the vectors' signs compared through
    products that do not depend on them)."""
    from functorch_core.backends.llvm import runtime
    monkeypatch.setattr(lapack, "_routines", {"numpy": None})
    runtime.clear_cache()
    try:
        rng = np.random.default_rng(11)
        a = _rand(rng, (20, 7, 5), np.dtype(np.float64))
        exe, _ = _compiled(P.svd, a, full_matrices=False, compute_uv=True)
        assert exe.plan.slots[exe.plan.steps[0].scratch[4]][1] == np.int32
        s, u, vh = exe([a])
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
        np.testing.assert_allclose((u * s[:, None]) @ vh, a, atol=1e-12)
        big = rng.standard_normal((90, 90))      # gesdd's phases (SciPy's dormbr too)
        lwork = lapack_eig.svd_sizes(big.dtype, 90, 90, True, True)[4]
        assert lapack_eig._phased(big.dtype, 90, 90, "A", lwork)
        s, u, vh = _compiled(P.svd, big, full_matrices=True, compute_uv=True)[0]([big])
        np.testing.assert_allclose(s, np.linalg.svd(big, compute_uv=False), rtol=1e-12)
        np.testing.assert_allclose((u * s) @ vh, big, atol=1e-12)
        np.testing.assert_allclose(u.T @ u, np.eye(90), atol=1e-12)
        (q, r), _ = _native_and_reference(P.qr, a, full_matrices=False)
        np.testing.assert_allclose(q @ r, a, atol=1e-12)
        sym = a[:, :5] + np.swapaxes(a[:, :5], -1, -2)
        (w, v), _ = _native_and_reference(P.eigh, sym, lower=True)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), rtol=1e-12, atol=1e-12)
        (w, v), _ = _native_and_reference(P.eig, a[:, :5], compute_v=True)
        np.testing.assert_allclose(a[:, :5] @ v, v * w[:, None], atol=1e-11)
    finally:
        runtime.clear_cache()


def test_lowered_primitives_leave_the_fallback_table():
    for prim in (P.qr, P.svd, P.eigh, P.eig):
        assert prim in lapack_steps.LOWERED and prim in part.NATIVE and prim not in part.FALLBACK


def _jit_grad_matches(f, x):
    """jit(grad(f)) runs every linalg equation as a Lapack step and gives the eager
    (interpreter) gradient."""
    steps = [type(s).__name__ for s in CPU.compile(fc.make_graph(fc.grad(f))(x)).plan.steps]
    assert "Lapack" in steps and "Fallback" not in steps, steps
    np.testing.assert_allclose(fc.jit(fc.grad(f))(x), fc.grad(f)(x), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ["qr", "svd", "svdvals", "eigh", "eigvalsh", "eig"])
def test_jit_of_grad_runs_native_lapack(name):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5, 5))
    sym = x + np.swapaxes(x, -1, -2)
    fns = {
        "qr": (lambda a: fnp.sum(fnp.linalg.qr(a)[1] ** 2 * np.arange(5.0)), x),
        "svd": (lambda a: fnp.sum(fnp.linalg.svd(a)[1] ** 3), x),
        "svdvals": (lambda a: fnp.sum(fnp.linalg.svd(a, compute_uv=False) ** 2), x),
        "eigh": (lambda a: fnp.sum(fnp.linalg.eigh(a)[0] ** 3)
                 + fnp.sum(fnp.abs(fnp.linalg.eigh(a)[1][..., 0, :])), sym),
        "eigvalsh": (lambda a: fnp.sum(fnp.linalg.eigvalsh(a) ** 3), sym),
        "eig": (lambda a: fnp.sum(fnp.abs(fnp.linalg.eigvals(a)) ** 2), x),
    }
    f, arg = fns[name]
    _jit_grad_matches(f, arg)
