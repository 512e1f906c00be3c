"""solve, cholesky, det and slogdet lowered to batched LAPACK calls (backends/llvm/lapack.py)
against the interpreter (NumPy's gufuncs).

solve and cholesky call NumPy's own routine on the same Fortran copies, in double
precision as NumPy does: equal to the last bit. det and slogdet take the same ``?getrf``
factors and walk the diagonal in NumPy's order, but with NumPy's vectorized ``log``/``exp``
and complex multiply where the gufunc calls the C library's and its own: logabsdet within
:data:`ULPS` units in the last place, a complex sign within n eps, det within their sum
(see test_det_and_slogdet_match_numpy).
"""

from __future__ import annotations

import numpy as np
import pytest
from bitwise import assert_bitwise
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import lapack, lapack_steps, lowering
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp

CPU = registry.get("cpu")
DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)]
# (batch shape, n): unbatched, batched over two axes, a batch split over threads
# (n <= SPLIT_MAX_N), matrices big enough for OpenBLAS's own threads, 1x1 matrices
SHAPES = [((), 5), ((2, 3), 4), ((24,), 16), ((3,), lapack.SPLIT_MAX_N + 36), ((4,), 1)]
ULPS = 4


def _rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _general(rng, lead, n, dtype):
    return (_rand(rng, lead + (n, n), dtype) + 2 * np.eye(n)).astype(dtype)


def _spd(rng, lead, n, dtype):
    a = _rand(rng, lead + (n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _compiled(prim, *args, **params):
    b = Builder()
    ins = [b.input(a.shape, a.dtype) for a in args]
    out = b(prim, *ins, **params)
    graph = b.graph(*(out if prim.multiple_results else (out,)))
    exe = CPU.compile(graph)
    return exe, graph


def _native_and_reference(prim, *args, **params):
    exe, graph = _compiled(prim, *args, **params)
    assert [type(s).__name__ for s in exe.plan.steps] == ["Lapack"]
    got = exe(list(args))
    with np.errstate(all="ignore"):
        want = run_graph(graph, list(args))
    return got, want


def _assert_ulps(got, want):
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        eps = np.finfo(g.dtype).eps
        np.testing.assert_allclose(g, w, rtol=ULPS * eps, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SHAPES)
def test_solve_is_numpys_to_the_bit(dtype, lead, n):
    rng = np.random.default_rng(n)
    a, b = _general(rng, lead, n, dtype), _rand(rng, lead + (n, 3), dtype)
    assert_bitwise(*_native_and_reference(P.solve, a, b))


def _triangle(n, upper):
    keep = np.tri(n, dtype=bool)
    return keep.T if upper else keep


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SHAPES)
def test_cholesky_is_numpys_to_the_bit_and_reads_one_triangle(dtype, lead, n, upper):
    rng = np.random.default_rng(n + 1)
    a = _spd(rng, lead, n, dtype)
    a[..., ~_triangle(n, upper)] = np.nan        # never read
    assert_bitwise(*_native_and_reference(P.cholesky, a, upper=upper))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", [((), lapack.TILE_MIN_N), ((2,), lapack.TILE + 71)])
def test_cholesky_of_big_matrices_copies_tiles_of_one_triangle_to_the_bit(dtype, lead, n,
                                                                          upper):
    """From TILE_MIN_N rows only the triangle read (lower, or upper for the upper factor)
    goes to Fortran order and back, in tiles (a last partial one too): still NumPy's bits,
    the other triangle zero, the caller's array untouched, and the scratch's other
    triangle never read (a second call on other values gives that call's bits). Below
    BLOCKED_MIN_N: one ?potrf, NumPy's."""
    assert lapack.TILE_MIN_N <= n < lapack.BLOCKED_MIN_N
    rng = np.random.default_rng(n + 3)
    exe, graph = _compiled(P.cholesky, np.zeros(lead + (n, n), dtype), upper=upper)
    for _ in range(2):
        a = _spd(rng, lead, n, dtype)
        a[..., ~_triangle(n, upper)] = np.nan
        before = a.copy()
        (got,) = exe([a])
        np.testing.assert_array_equal(a, before, strict=True)
        assert_bitwise([got], run_graph(graph, [a]))
        assert not np.any(got[..., ~_triangle(n, upper)])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SHAPES)
def test_det_and_slogdet_match_numpy(dtype, lead, n):
    """logabsdet within ULPS of NumPy's; a complex sign (a product of n unit numbers, whose
    roundings NumPy's vectorized multiply may fuse) within n eps; det = sign exp(logabsdet)
    within those errors, the second amplified by |logabsdet|."""
    rng = np.random.default_rng(n + 2)
    a = _general(rng, lead, n, dtype)
    (sign, logdet), (want_sign, want_logdet) = _native_and_reference(P.slogdet, a)
    eps = np.finfo(logdet.dtype).eps
    assert sign.dtype == want_sign.dtype and logdet.dtype == want_logdet.dtype
    np.testing.assert_allclose(logdet, want_logdet, rtol=ULPS * eps, atol=0)
    if dtype.kind == "c":
        np.testing.assert_allclose(sign, want_sign, rtol=0, atol=n * eps)
    else:
        np.testing.assert_array_equal(sign, want_sign, strict=True)
    (det,), (want_det,) = _native_and_reference(P.det, a)
    assert det.dtype == want_det.dtype and det.shape == want_det.shape
    bound = eps * (ULPS * (1 + np.abs(want_logdet)) + (n if dtype.kind == "c" else 0))
    finite = np.isfinite(want_det)      # float32 overflows at n = 100: inf, as NumPy's
    np.testing.assert_array_equal(det[~finite], want_det[~finite])
    err = np.abs(det[finite] - want_det[finite])
    assert np.all(err <= (bound * np.abs(want_det))[finite]), (det, want_det)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SHAPES)
def test_slogdet_inv_t_matches_numpy(dtype, lead, n):
    """slogdet_inv_t's sign and logabsdet are slogdet's own bits (the same ?getrf and
    walk); its inverse (?getri on those factors, where NumPy's inv solves against the
    identity) within rounding of NumPy's, transposed. The operand is untouched (wide
    dtypes factor in the result itself)."""
    rng = np.random.default_rng(n + 5)
    a = _general(rng, lead, n, dtype)
    before = a.copy()
    (sign, logdet, inv_t), (_, want_logdet, want_inv_t) = \
        _native_and_reference(P.slogdet_inv_t, a)
    np.testing.assert_array_equal(a, before, strict=True)
    assert_bitwise([sign, logdet], _native_and_reference(P.slogdet, a)[0])
    np.testing.assert_allclose(logdet, want_logdet, rtol=ULPS * np.finfo(logdet.dtype).eps)
    assert inv_t.dtype == want_inv_t.dtype == dtype and inv_t.shape == a.shape
    single = np.finfo(dtype).eps > 1e-10
    np.testing.assert_allclose(inv_t, np.swapaxes(np.linalg.inv(a), -1, -2),
                               rtol=1e-5 if single else 1e-10, atol=1e-7 if single else 1e-13)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_slogdet_inv_t_of_a_singular_matrix_raises_as_the_interpreter(dtype):
    a = np.stack([np.eye(3), np.ones((3, 3)), np.eye(3)]).astype(dtype)
    exe, graph = _compiled(P.slogdet_inv_t, a)
    with pytest.raises(np.linalg.LinAlgError) as native:
        exe([a])
    with pytest.raises(np.linalg.LinAlgError) as reference:
        run_graph(graph, [a])
    assert str(native.value) == str(reference.value)
    assert "slogdet_inv_t: Singular matrix (operand of shape (3, 3, 3))" in str(native.value)


@pytest.mark.filterwarnings("ignore:Diagonal number")      # the reference's, on singular
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SHAPES)
def test_lu_is_scipys_to_the_bit(dtype, lead, n):
    rng = np.random.default_rng(n + 3)
    a = _rand(rng, lead + (n, n), dtype)
    a[(0,) * len(lead)][-1] = 0                  # a singular matrix still factors
    assert_bitwise(*_native_and_reference(P.lu, a))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,n", SHAPES)
@pytest.mark.parametrize("left_side,lower,transpose_a,conjugate_a,unit_diagonal", [
    (True, True, False, False, False), (True, False, True, False, True),
    (True, True, True, True, False), (True, False, False, True, False),
    (False, True, False, False, False), (False, False, True, False, False),
    (False, True, True, True, True), (False, False, False, True, False)])
def test_triangular_solve_is_scipys_to_the_bit(dtype, lead, n, left_side, lower, transpose_a,
                                               conjugate_a, unit_diagonal):
    rng = np.random.default_rng(n + 4)
    a = _general(rng, lead, n, dtype)
    b = _rand(rng, lead + ((n, 3) if left_side else (2, n)), dtype)
    assert_bitwise(*_native_and_reference(
        P.triangular_solve, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("left_side,lower,transpose_a", [
    (True, True, True), (True, False, True), (False, True, False), (False, False, False)])
def test_a_big_conjugate_transpose_is_solved_in_place(dtype, left_side, lower, transpose_a):
    """From TRI_IN_PLACE_MIN_N rows a^H x = b (and x conj(a) = b, its transpose) reads a
    in place (no Fortran copy in the scratch), b and x conjugated: SciPy's values within
    rounding, the caller's arrays untouched."""
    n = lapack.TRI_IN_PLACE_MIN_N + 3
    rng = np.random.default_rng(n)
    a = _general(rng, (2,), n, dtype) + n * np.eye(n, dtype=dtype)
    b = _rand(rng, (2,) + ((n, 3) if left_side else (3, n)), dtype)
    exe, graph = _compiled(P.triangular_solve, a, b, left_side=left_side, lower=lower,
                           transpose_a=transpose_a, conjugate_a=True, unit_diagonal=False)
    assert exe.plan.slots[exe.plan.steps[0].scratch[0]][0] == (0,)
    before = a.copy(), b.copy()
    (got,) = exe([a, b])
    np.testing.assert_array_equal(a, before[0], strict=True)
    np.testing.assert_array_equal(b, before[1], strict=True)
    (want,) = run_graph(graph, [a, b])
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=0, atol=8 * n * eps * np.abs(want).max())
    tri = np.tril(a) if lower else np.triu(a)
    # left: a^H x = b; right: x conj(a) = b (the conjugate transpose of the left side's)
    op_a = np.conj(np.swapaxes(tri, -1, -2) if transpose_a else tri)
    np.testing.assert_allclose(op_a @ got if left_side else got @ op_a, b, rtol=0,
                               atol=8 * n * eps * np.abs(b).max())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_singular_matrices_give_numpys_zero_determinant(dtype):
    a = np.ones((3, 4, 4), dtype)
    a[1] = np.eye(4) * 2
    assert_bitwise(*_native_and_reference(P.det, a))
    assert_bitwise(*_native_and_reference(P.slogdet, a))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_jit_raises_the_interpreters_errors(dtype):
    a = np.stack([np.eye(3), np.ones((3, 3)), np.eye(3)]).astype(dtype)
    b = np.ones((3, 3, 2), dtype)
    with pytest.raises(np.linalg.LinAlgError) as native:
        fc.jit(fnp.linalg.solve)(a, b)
    with pytest.raises(np.linalg.LinAlgError) as reference:
        fnp.linalg.solve(a, b)
    assert str(native.value) == str(reference.value)
    assert "solve: Singular matrix" in str(native.value) and "(3, 3, 3)" in str(native.value)
    not_pd = np.stack([np.eye(3), -np.eye(3)]).astype(dtype)
    with pytest.raises(np.linalg.LinAlgError) as native:
        fc.jit(fnp.linalg.cholesky)(not_pd)
    with pytest.raises(np.linalg.LinAlgError) as reference:
        fnp.linalg.cholesky(not_pd)
    assert str(native.value) == str(reference.value)
    assert "cholesky: Matrix is not positive definite" in str(native.value)
    tri = np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0])]).astype(dtype)
    graph_args = (tri, np.ones((2, 3, 1), dtype))
    exe, graph = _compiled(P.triangular_solve, *graph_args, left_side=True, lower=True,
                           transpose_a=False, conjugate_a=False, unit_diagonal=False)
    with pytest.raises(np.linalg.LinAlgError) as native:
        exe(list(graph_args))
    with pytest.raises(np.linalg.LinAlgError) as reference:
        run_graph(graph, list(graph_args))
    assert str(native.value) == str(reference.value)
    assert "resolution failed at diagonal 1" in str(native.value)


def test_intermediate_results_in_the_arena():
    """A solve feeding a cholesky feeding a slogdet, all intermediates in the arena, twice
    through the same executable (the arena reused)."""
    rng = np.random.default_rng(7)
    a = _spd(rng, (5,), 6, np.dtype(np.float64))
    b = Builder()
    x = b.input(a.shape, a.dtype)
    y = b(P.solve, x, x)
    z = b(P.mul, x, y)
    c = b(P.cholesky, z)
    sign, logdet = b(P.slogdet, c)
    graph = b.graph(sign, logdet)
    exe = CPU.compile(graph)
    assert sum(type(s).__name__ == "Lapack" for s in exe.plan.steps) == 3
    assert exe.arena_bytes > 0
    for _ in range(2):
        _assert_ulps(exe([a]), run_graph(graph, [a]))


def test_empty_and_integer_operands_stay_in_the_interpreter():
    b = Builder()
    x = b.input((0, 3, 3), np.float64)
    graph = b.graph(b(P.det, x))
    exe = CPU.compile(graph)
    assert [type(s).__name__ for s in exe.plan.steps] == ["Fallback"]
    assert exe([np.zeros((0, 3, 3))])[0].shape == (0,)
    assert lapack.DTYPES == tuple(DTYPES)


def test_scipys_32_bit_lapack_when_numpy_has_none(monkeypatch):
    """Without NumPy's ILP64 OpenBLAS every routine comes from SciPy's capsules, with
    32-bit integers (another OpenBLAS build: NumPy's values within rounding)."""
    from functorch_core.backends.llvm import runtime
    monkeypatch.setattr(lapack, "_routines", {"numpy": None})
    runtime.clear_cache()
    try:
        rng = np.random.default_rng(11)
        a = _spd(rng, (30,), 8, np.dtype(np.float64))
        b = _rand(rng, (30, 8, 2), np.dtype(np.float64))
        exe, _ = _compiled(P.solve, a, b)
        assert exe.plan.slots[exe.plan.steps[0].scratch[-1]][1] == np.int32
        np.testing.assert_allclose(exe([a, b])[0], np.linalg.solve(a, b), rtol=1e-12)
        (low,), _ = _native_and_reference(P.cholesky, a)
        np.testing.assert_allclose(low, np.linalg.cholesky(a), rtol=1e-12, atol=1e-14)
        (_, logdet), _ = _native_and_reference(P.slogdet, a)
        np.testing.assert_allclose(logdet, np.linalg.slogdet(a)[1], rtol=1e-12)
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            _compiled(P.solve, np.zeros((2, 3, 3)), np.ones((2, 3, 1)))[0](
                [np.zeros((2, 3, 3)), np.ones((2, 3, 1))])
    finally:
        runtime.clear_cache()


def test_lowered_primitives_leave_the_fallback_table():
    for prim in lapack_steps.LOWERED:
        assert prim in lowering.NATIVE and prim not in lowering.FALLBACK


@given(st.integers(1, 12), st.integers(1, 9), st.integers(1, 3),
       st.sampled_from(DTYPES), st.integers(0, 2 ** 16))
def test_solve_matches_numpy_for_any_batch(batch, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = _general(rng, (batch,), n, dtype), _rand(rng, (batch, n, k), dtype)
    got = fc.jit(fnp.linalg.solve)(a, b)
    want = np.linalg.solve(a, b)
    np.testing.assert_array_equal(got, want, strict=True)


def test_compile_library_refuses_a_lapack_step(tmp_path):
    from functorch_core.backends.llvm.aot import NotNativeError
    exported = fc.export(lambda m: P.sqrtm.bind(m), np.eye(3))     # slogdet, eig... are native
    with pytest.raises(NotNativeError, match="sqrtm runs as Python-driven LAPACK calls"):
        exported.compile_library(tmp_path / "c.so", "c")


def test_concurrent_calls_keep_their_own_scratch():
    """Calls from several threads at once each take an arena of their own."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(12)
    f = fc.jit(fnp.linalg.solve)
    cases = [(_general(rng, (16,), 12, np.dtype(np.float64)),
              _rand(rng, (16, 12, 2), np.dtype(np.float64))) for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: f(*c), cases * 3))
    for g, (a, b) in zip(got, cases * 3, strict=True):
        np.testing.assert_array_equal(g, np.linalg.solve(a, b), strict=True)
