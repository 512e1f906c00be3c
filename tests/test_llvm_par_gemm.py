"""A loop body's few-row product as column blocks on the loop's thread and par_gemm's
native helper: the bits of the blocks whoever runs them, the helper really taking blocks,
and loops on two Python threads at once (one owns the job record, the other runs alone)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import functorch_core as fc
from backends.llvm import blas, par_gemm, runtime
from functorch_core import lax

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _scan_products(w):
    def f(h0, xs):
        def body(h, x):
            y = (h + x) @ w
            return h, y
        return lax.scan(body, h0, xs)[1]
    return f


def _blocks(a, w):
    """The column blocks of ``a @ w``, each one ?gemm on one OpenBLAS thread."""
    m, k = a.shape
    n = w.shape[1]
    cuts = sorted({0, n} | {blas.COLUMN_ALIGN * (n * p // (blas.COLUMN_PARTS * blas.COLUMN_ALIGN))
                            for p in range(1, blas.COLUMN_PARTS)})
    with blas.one_thread_each():
        return np.concatenate([blas.DotGeneral((m, k), (k, hi - lo), a.dtype,
                                               (((1,), (0,)), ((), ())))(
            a, np.ascontiguousarray(w[:, lo:hi])) for lo, hi in itertools.pairwise(cuts)],
            axis=1)


def _case(dtype, m=32, k=256, n=1024, steps=6, seed=0):
    rng = np.random.default_rng(seed)

    def draw(*shape):
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)
    return draw(k, n), draw(m, k), draw(steps, m, k)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spin", [True, False])
def test_loop_products_have_the_bits_of_their_column_blocks(dtype, spin):
    if runtime.get_num_threads() < 2:
        pytest.skip("one worker thread: loop products are not split")
    w, h0, xs = _case(dtype)
    f = fc.jit(_scan_products(w))
    f(h0, xs)
    with par_gemm.helping(spin):
        got = f(h0, xs)
    want = np.stack([_blocks(h0 + x, w) for x in xs])
    np.testing.assert_array_equal(got, want)


def test_the_helper_takes_blocks_while_a_loop_wants_it():
    if runtime.get_num_threads() < 2:
        pytest.skip("one worker thread: loop products are not split")
    w, h0, xs = _case(np.float64, steps=200, seed=1)
    f = fc.jit(_scan_products(w))
    f(h0, xs)
    before = par_gemm.helped()
    for _ in range(50):
        with par_gemm.helping():
            f(h0, xs)
        if par_gemm.helped() > before:
            break
    assert par_gemm.helped() > before


def test_loops_on_two_threads_at_once():
    if runtime.get_num_threads() < 2:
        pytest.skip("one worker thread: loop products are not split")
    cases = [_case(np.float32, seed=s, steps=40) for s in range(4)]
    fns = [fc.jit(_scan_products(w)) for w, _, _ in cases]
    want = [np.stack([_blocks(h0 + x, w) for x in xs]) for w, h0, xs in cases]

    def run(i):
        with par_gemm.helping():
            return [fns[i % 4](*cases[i % 4][1:]) for _ in range(3)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(8)))
    for i, runs in enumerate(results):
        for got in runs:
            np.testing.assert_array_equal(got, want[i % 4])


def test_small_or_many_row_products_are_not_split():
    lay = blas.GemmLayout(1, 32, 1024, 16, False, False)       # 512k multiply-adds
    assert not blas.loop_column_blocks(lay)
    assert not blas.loop_column_blocks(blas.GemmLayout(1, 96, 1024, 256, False, False))
    assert not blas.loop_column_blocks(blas.GemmLayout(2, 32, 1024, 256, False, False))
    assert blas.loop_column_blocks(blas.GemmLayout(1, 32, 1024, 256, False, False))
