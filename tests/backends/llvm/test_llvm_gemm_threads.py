"""Big products split over the runtime's threads (blas.split_parts): the same bits as one
unsplit gemm on one OpenBLAS thread, a split that a stalled thread cannot hold back, and
the jit path using it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends.llvm import blas, runtime
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True, scope="module")
def quiet():
    """The load average read as below the cores, and row blocks split even so: these tests
    check the split itself (the quiet-machine policy has its own test)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(blas, "busy", lambda: False)
        m.setattr(blas, "ROW_SPLIT_WHEN_QUIET", True)
        yield


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(4) as p:
        yield p


def _operands(rng, lshape, rshape, dtype):
    a, b = (rng.standard_normal(s).astype(dtype) for s in (lshape, rshape))
    if np.dtype(dtype).kind == "c":
        a, b = (x + 1j * rng.standard_normal(x.shape).astype(dtype) for x in (a, b))
    return a, b


def _problem(batch, m, k, n, trans_lhs, trans_rhs):
    """Shapes and dimension numbers of a (batch of) m x k x n product, each operand stored
    as given or transposed (BLAS's transpose flags)."""
    lshape = (batch, k, m) if trans_lhs else (batch, m, k)
    rshape = (batch, n, k) if trans_rhs else (batch, k, n)
    return lshape, rshape, (((1 if trans_lhs else 2,), (2 if trans_rhs else 1,)), ((0,), (0,)))


def _one_thread(dot, a, b):
    with blas.one_thread_each():
        return dot(a, b)


@given(st.integers(1, 6), st.integers(1, 400), st.integers(1, 300), st.integers(1, 200),
       st.booleans(), st.booleans(), st.sampled_from(DTYPES), st.integers(2, 5),
       st.integers(0, 2 ** 32 - 1))
def test_split_has_the_bits_of_one_unsplit_gemm(pool, batch, m, k, n, tl, tr, dtype, workers,
                                                seed):
    lshape, rshape, dn = _problem(batch, m, k, n, tl, tr)
    a, b = _operands(np.random.default_rng(seed), lshape, rshape, dtype)
    whole = blas.DotGeneral(lshape, rshape, dtype, dn)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blas, "SPLIT_MACS", 0)       # split whatever the size
        split = blas.DotGeneral(lshape, rshape, dtype, dn, parallel=lambda: pool,
                                workers=workers)
        columns = blas.column_blocks(split._lay)
        one = blas.DotGeneral(lshape, rshape, dtype, dn, parallel=lambda: pool, workers=1)
    if columns:     # the shape's own column blocks, on any number of threads
        assert len(split.parts) > 1 and [p.col_lo for p in split.parts] == \
            [p.col_lo for p in one.parts]
        got = split(a, b)
        np.testing.assert_array_equal(got, _one_thread(one, a, b))
        np.testing.assert_allclose(got, _one_thread(whole, a, b), rtol=1e-5 * k, atol=1e-5 * k)
        return
    expect_parts = batch >= workers or (m >= 2 * blas.SPLIT_ALIGN and
                                        m * k * n >= 4 * blas.ROW_BLOCK_MIN_MACS and
                                        blas.row_blocks_round_alike(dtype))
    assert (len(split.parts) > 1) == expect_parts
    # unsplit, it runs on OpenBLAS's own threads while the machine is quiet
    got = split(a, b) if expect_parts else _one_thread(split, a, b)
    np.testing.assert_array_equal(got, _one_thread(whole, a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 9216, 64, 128), (1, 1000, 700, 60), (1, 517, 1000, 301),
                                   (3, 500, 300, 200), (9, 256, 256, 64)])
def test_benchmark_shapes_split_bit_for_bit(pool, dtype, shape):
    lshape, rshape, dn = _problem(*shape, False, False)
    a, b = _operands(np.random.default_rng(0), lshape, rshape, dtype)
    whole = blas.DotGeneral(lshape, rshape, dtype, dn)
    for workers in (2, 3, 5):
        split = blas.DotGeneral(lshape, rshape, dtype, dn, parallel=lambda: pool,
                                workers=workers)
        assert len(split.parts) > 1
        np.testing.assert_array_equal(split(a, b), _one_thread(whole, a, b),
                                      err_msg=f"{workers} threads")


def _cells(part):
    """A part's fields as plain ints (its ctypes integers compare by identity)."""
    return (part.batch_lo, part.batch_hi, part.row_lo, part.rows.value, part.col_lo,
            None if part.cols is None else part.cols.value)


@given(st.integers(1, 20), st.integers(1, 5000), st.integers(1, 8))
def test_parts_tile_the_result(batch, m, workers):
    lay = blas.GemmLayout(batch, m, 700, 600, False, False)
    parts = blas.split_parts(lay, workers, np.float64)
    if parts[0].cols is not None:                       # by columns
        assert batch == 1 and m < blas.COLUMN_SPLIT_ROWS and len(parts) == blas.COLUMN_PARTS
        starts = [p.col_lo for p in parts]
        assert all(s % blas.COLUMN_ALIGN == 0 for s in starts) and starts[0] == 0
        assert [s + p.cols.value for s, p in zip(starts, parts, strict=True)] \
            == starts[1:] + [700]
        assert [_cells(p) for p in parts] == \
            [_cells(p) for p in blas.split_parts(lay, 1, np.float64)]   # whatever the threads
        return
    assert len(parts) <= max(1, blas.PARTS_PER_WORKER * workers)
    if len(parts) == 1 or parts[0].batch_hi < batch:     # whole, or by batches
        assert [p.row_lo for p in parts] == [0] * len(parts)
        assert all(p.rows.value == m for p in parts)
        assert [p.batch_lo for p in parts] == [0] + [p.batch_hi for p in parts[:-1]]
        assert parts[-1].batch_hi == batch
    else:                                               # by rows
        assert all((p.batch_lo, p.batch_hi) == (0, batch) for p in parts)
        starts = [p.row_lo for p in parts]
        assert all(s % blas.SPLIT_ALIGN == 0 for s in starts) and starts[0] == 0
        assert [s + p.rows.value for s, p in zip(starts, parts, strict=True)] \
            == starts[1:] + [m]
        assert min(p.rows.value for p in parts) * 700 * 600 > blas.ROW_BLOCK_MIN_MACS


@pytest.mark.parametrize("m, k, n", [(103, 243, 40), (151, 1031, 77), (1000, 500, 30)])
def test_row_blocks_stay_above_openblas_small_matrix_kernel(pool, m, k, n):
    """SkylakeX's sgemm runs products of at most 100^3 multiply-adds through a kernel that
    rounds otherwise: a block below that and a whole product above it disagree (103 x 243
    @ 243 x 40 split at row 48 did), so no block is that small."""
    lshape, rshape, dn = _problem(1, m, k, n, False, False)
    a, b = _operands(np.random.default_rng(8), lshape, rshape, np.float32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blas, "SPLIT_MACS", 0)
        split = blas.DotGeneral(lshape, rshape, np.float32, dn, parallel=lambda: pool,
                                workers=4)
    assert all(p.rows.value * k * n > blas.ROW_BLOCK_MIN_MACS for p in split.parts) or \
        len(split.parts) == 1
    got = split(a, b) if len(split.parts) > 1 else _one_thread(split, a, b)
    np.testing.assert_array_equal(got, _one_thread(blas.DotGeneral(lshape, rshape, np.float32,
                                                                   dn), a, b))


def test_small_products_and_one_worker_do_not_split():
    small = blas.GemmLayout(1, 200, 200, 200, False, False)        # 8M multiply-adds
    assert 200 ** 3 < blas.SPLIT_MACS
    assert len(blas.split_parts(small, 4, np.float32)) == 1
    big = blas.GemmLayout(1, 1024, 1024, 1024, False, False)
    assert len(blas.split_parts(big, 1, np.float32)) == 1
    assert len(blas.split_parts(big, 2, np.float32)) == 2 * blas.PARTS_PER_WORKER
    few_rows = blas.GemmLayout(1, 64, 9216, 1024, False, False)   # by columns, always
    assert [len(blas.split_parts(few_rows, w, np.float32)) for w in (1, 2, 4)] == \
        [blas.COLUMN_PARTS] * 3


def test_rows_do_not_split_where_blocks_would_round_differently(monkeypatch):
    monkeypatch.setattr(blas, "_alike", {np.dtype(np.float32): False})
    lay = blas.GemmLayout(1, 1024, 1024, 1024, False, False)
    assert len(blas.split_parts(lay, 4, np.float32)) == 1
    batched = blas.GemmLayout(8, 1024, 1024, 1024, False, False)   # batches still split
    assert len(blas.split_parts(batched, 4, np.float32)) == 8


def test_openblas_row_blocks_round_alike():
    if blas.blas_int_bits() != 64:
        pytest.skip("the BLAS is not NumPy's OpenBLAS")
    assert all(blas.row_blocks_round_alike(dt) for dt in DTYPES)


def test_a_stalled_pool_thread_does_not_hold_the_product_back():
    # the pool's only thread is blocked until the product returns: this thread takes
    # every part itself
    release = threading.Event()
    lshape, rshape, dn = _problem(1, 1024, 256, 256, False, False)
    a, b = _operands(np.random.default_rng(1), lshape, rshape, np.float32)
    stalled = ThreadPoolExecutor(1)
    try:
        stalled.submit(release.wait, 60)
        dot = blas.DotGeneral(lshape, rshape, np.float32, dn, parallel=lambda: stalled,
                              workers=4)
        assert len(dot.parts) == 8
        got = dot(a, b)
        assert not release.is_set()     # done while the pool's thread was still blocked
    finally:
        release.set()
        stalled.shutdown()
    np.testing.assert_array_equal(got, _one_thread(blas.DotGeneral(lshape, rshape, np.float32,
                                                                   dn), a, b))


def test_an_error_in_a_part_reaches_the_caller(pool, monkeypatch):
    lshape, rshape, dn = _problem(1, 1024, 256, 256, False, False)
    a, b = _operands(np.random.default_rng(2), lshape, rshape, np.float64)
    dot = blas.DotGeneral(lshape, rshape, np.float64, dn, parallel=lambda: pool, workers=2)
    real = dot._part

    def failing(part, *pointers):
        if part is dot.parts[-1]:
            raise RuntimeError("part failed")
        return real(part, *pointers)
    monkeypatch.setattr(dot, "_part", failing)
    with pytest.raises(RuntimeError, match="part failed"):
        dot(a, b)
    assert blas._threads["inside"] == 0      # OpenBLAS's thread count was given back


def _products(exe):
    """The DotGeneral of each of ``exe``'s product steps."""
    cells = [c.cell_contents for s in exe.steps for c in (s.__closure__ or ())]
    return [c for c in cells if isinstance(c, blas.DotGeneral)]


@pytest.mark.parametrize("threads", [2, 3])
def test_jit_products_split_and_keep_the_bits(threads):
    before = runtime.get_num_threads()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2400, 200)).astype(np.float32)
    w = rng.standard_normal((200, 500)).astype(np.float32)
    v = rng.standard_normal((8, 500, 100)).astype(np.float32)
    try:
        runtime.set_num_threads(threads)
        f = fc.jit(lambda x, w, v: (x @ w).reshape(8, 300, 500) @ v)
        got = f(x, w, v)
        dots = [d for exe in runtime._CACHE.values() for d in _products(exe)]
    finally:
        runtime.set_num_threads(before)
    assert len(dots) == 2 and all(len(d.parts) > 1 for d in dots)
    with blas.one_thread_each():
        want = (x @ w).reshape(8, 300, 500) @ v
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("busy", [True, False])
@pytest.mark.parametrize("k, small", [(256, True), (2048, False)])
def test_unsplit_products_run_on_one_openblas_thread_below_the_limit_or_while_busy(
        pool, monkeypatch, busy, k, small):
    if blas.blas_int_bits() != 64:
        pytest.skip("the BLAS is not NumPy's OpenBLAS")
    lib = blas._numpy_lib[0]
    before = lib.scipy_openblas_get_num_threads64_()
    # 64 x 256 x 120 (2^21 multiply-adds) is below the limit, 64 x 2048 x 120 past it
    monkeypatch.setattr(blas, "ONE_THREAD_MACS", 1 << 22)
    lshape, rshape, dn = _problem(1, 64, k, 120, False, False)    # too small to split
    dot = blas.DotGeneral(lshape, rshape, np.float32, dn, parallel=lambda: pool, workers=2)
    assert len(dot.parts) == 1
    seen, real = [], dot.fn

    def gemm(*args):
        seen.append(lib.scipy_openblas_get_num_threads64_())
        return real(*args)
    monkeypatch.setattr(dot, "fn", gemm)
    monkeypatch.setattr(blas, "busy", lambda: busy)
    a, b = _operands(np.random.default_rng(4), lshape, rshape, np.float32)
    got, want = dot(a, b), _one_thread(blas.DotGeneral(lshape, rshape, np.float32, dn), a, b)
    if busy or small:
        np.testing.assert_array_equal(got, want)
    else:       # OpenBLAS's own threads may round some elements otherwise
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert seen == [1 if busy or small else before]
    assert lib.scipy_openblas_get_num_threads64_() == before


class _CountingPool(ThreadPoolExecutor):
    submitted = 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return super().submit(*args, **kwargs)


@pytest.mark.parametrize("m, splits", [(1024, False), (8192, True)])
def test_while_busy_only_the_biggest_products_split(monkeypatch, m, splits):
    # 1024 x 256 x 256: 2^26 multiply-adds; 8192 x 256 x 256: 2^29 (BUSY_SPLIT_MACS: 2^28)
    monkeypatch.setattr(blas, "busy", lambda: True)
    lshape, rshape, dn = _problem(1, m, 256, 256, False, False)
    a, b = _operands(np.random.default_rng(5), lshape, rshape, np.float32)
    with _CountingPool(2) as counting:
        dot = blas.DotGeneral(lshape, rshape, np.float32, dn, parallel=lambda: counting,
                              workers=2)
        assert len(dot.parts) == 4
        got = dot(a, b)
    assert (counting.submitted > 0) == splits
    np.testing.assert_array_equal(got, _one_thread(blas.DotGeneral(lshape, rshape, np.float32,
                                                                   dn), a, b))


@pytest.mark.parametrize("busy", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_row_blocks_split_while_busy_or_below_the_one_thread_limit_batches_always(
        pool, monkeypatch, busy, big):
    """On a quiet machine a row-split product from blas.ONE_THREAD_MACS runs as one gemm
    on OpenBLAS's own threads (faster than re-packing the right operand per block); below
    it OpenBLAS stays at one thread, so the rows split over the runtime's threads; a batch
    split runs either way."""
    monkeypatch.setattr(blas, "ROW_SPLIT_WHEN_QUIET", False)
    if big:     # the products below (12M and 126M multiply-adds a gemm call) past it
        monkeypatch.setattr(blas, "ONE_THREAD_MACS", 1 << 20)
    monkeypatch.setattr(blas, "busy", lambda: busy)
    monkeypatch.setattr(blas, "BUSY_SPLIT_MACS", 0)
    rng = np.random.default_rng(5)
    for batch, m in ((1, 960), (8, 96)):
        lshape, rshape, dn = _problem(batch, m, 256, 512, False, False)
        dot = blas.DotGeneral(lshape, rshape, np.float32, dn, parallel=lambda: pool, workers=2)
        assert len(dot.parts) > 1
        calls = []
        monkeypatch.setattr(dot, "_split", lambda a, b, c, calls=calls: calls.append(1))
        a, b = _operands(rng, lshape, rshape, np.float32)
        dot(a, b)
        assert bool(calls) == (busy or batch > 1 or not big)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("busy", [False, True])
def test_few_rows_split_by_columns_with_the_bits_of_the_shape(pool, monkeypatch, dtype, busy):
    """A 10-model ensemble's first layer (64 x 784 @ 784 x 1280): column blocks on any
    number of threads, busy or not, with one set of bits."""
    monkeypatch.setattr(blas, "busy", lambda: busy)
    lshape, rshape, dn = (64, 784), (10, 128, 784), (((1,), (2,)), ((), ()))
    a, b = _operands(np.random.default_rng(6), lshape, rshape, dtype)
    results = []
    for workers in (1, 2, 3):
        dot = blas.DotGeneral(lshape, rshape, dtype, dn, parallel=lambda: pool, workers=workers)
        assert [p.col_lo for p in dot.parts] == [0, 320, 640, 960]
        results.append(dot(a, b))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    np.testing.assert_allclose(results[0], np.einsum("mk,abk->mab", a, b), rtol=1e-4,
                               atol=1e-3)


def test_batched_small_products_out_of_layout_use_matmul_views():
    """vmap's batch dim in the middle of the lhs: no copy, the values of a per-batch loop."""
    rng = np.random.default_rng(7)
    h, w = rng.standard_normal((64, 10, 128)), rng.standard_normal((10, 10, 128))
    dot = blas.DotGeneral(h.shape, w.shape, np.float64, (((2,), (2,)), ((1,), (0,))))
    assert dot.layout is None and dot._matmul
    h0, w0 = h.copy(), w.copy()
    got = dot(h, w)
    want = np.stack([h[:, i] @ w[i].T for i in range(10)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(w, w0)
