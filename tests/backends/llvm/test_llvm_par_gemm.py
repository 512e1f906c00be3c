"""A few-row product's column blocks through par_gemm (the caller and a native helper
thread): the bits of its blocks computed one by one whoever runs them, the helper really
taking blocks, many callers at once (one owns the job record, the others run alone), and
the jit path using it."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends.llvm import blas, par_gemm, runtime
from hypothesis import assume, given
from hypothesis import strategies as st

import functorch_core as fc

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True, scope="module")
def quiet():
    """The load average read as below the cores: a busy machine runs the blocks alone."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(blas, "busy", lambda: False)
        yield


@pytest.fixture(scope="module")
def pool():
    with ThreadPoolExecutor(2) as p:
        yield p


def _case(dtype, m, k, n, trans_rhs, seed=0):
    rng = np.random.default_rng(seed)

    def draw(*shape):
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)
    w = draw(n, k) if trans_rhs else draw(k, n)
    return draw(m, k), w, (((1,), (1 if trans_rhs else 0,)), ((), ()))


def _split_product(pool, a, w, dn):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blas, "SPLIT_MACS", 0)       # column blocks whatever the size
        dot = blas.DotGeneral(a.shape, w.shape, a.dtype, dn, parallel=lambda: pool, workers=2)
        assert dot._par is not None and blas.column_blocks(dot._lay)
    return dot


def _blocks(a, w, trans_rhs):
    """The product's column blocks (blas.column_cuts), each its own ?gemm on one thread."""
    cols = w.T if trans_rhs else w
    parts = []
    with blas.one_thread_each():
        for lo, hi in itertools.pairwise(blas.column_cuts(cols.shape[1])):
            if hi > lo:
                part = np.ascontiguousarray(w[lo:hi] if trans_rhs else w[:, lo:hi])
                dn = (((1,), (1 if trans_rhs else 0,)), ((), ()))
                parts.append(blas.DotGeneral(a.shape, part.shape, a.dtype, dn)(a, part))
    return np.concatenate(parts, axis=1)


@given(st.sampled_from(DTYPES), st.integers(1, blas.COLUMN_SPLIT_ROWS - 1),
       st.integers(1, 300), st.integers(2 * blas.COLUMN_ALIGN, 1100), st.booleans())
def test_the_product_has_the_bits_of_its_blocks(pool, dtype, m, k, n, trans_rhs):
    assume(m > 1 or k == 1)         # one row and k > 1: one ?gemv (test_llvm_gemv.py)
    a, w, dn = _case(dtype, m, k, n, trans_rhs)
    dot = _split_product(pool, a, w, dn)
    want = _blocks(a, w, trans_rhs)
    for _ in range(3):
        np.testing.assert_array_equal(dot(a, w), want)


@given(st.integers(0, 5000))
def test_column_cuts_tile_the_columns_at_aligned_starts(n):
    cuts = blas.column_cuts(n)
    assert cuts[0] == 0 and cuts[-1] == n and cuts == sorted(cuts)
    assert len(cuts) == blas.COLUMN_PARTS + 1
    assert all(c % blas.COLUMN_ALIGN == 0 for c in cuts[:-1])


def test_the_helper_takes_blocks(pool):
    if runtime.get_num_threads() < 2:
        pytest.skip("one worker thread: products are not split")
    a, w, dn = _case(np.float32, 64, 784, 1280, False)
    dot = _split_product(pool, a, w, dn)
    want = _blocks(a, w, False)
    before = par_gemm.helped()
    for _ in range(500):
        np.testing.assert_array_equal(dot(a, w), want)
        if par_gemm.helped() > before:
            break
    assert par_gemm.helped() > before


def test_many_callers_at_once(pool):
    cases = [_case(np.float32, 32 + s, 256, 1024 + 64 * s, s % 2 == 1, seed=s) for s in range(4)]
    dots = [_split_product(pool, *c) for c in cases]
    want = [_blocks(a, w, s % 2 == 1) for s, (a, w, _) in enumerate(cases)]

    def run(i):
        return [dots[i % 4](*cases[i % 4][:2]) for _ in range(5)]
    with ThreadPoolExecutor(6) as callers:
        results = list(callers.map(run, range(12)))
    for i, runs in enumerate(results):
        for got in runs:
            np.testing.assert_array_equal(got, want[i % 4])


def test_jit_few_row_product(pool):
    if runtime.get_num_threads() < 2:
        pytest.skip("one worker thread: products are not split")
    a, w, _ = _case(np.float32, 64, 784, 1280, False, seed=3)
    f = fc.jit(lambda a, w: a @ w)
    got = f(a, w)
    np.testing.assert_array_equal(got, _blocks(a, w, False))
    assert not np.shares_memory(got, a)
