"""Products with one row or one column (batch-1 inference: x @ W.T) call ?gemv, as NumPy
does, instead of ?gemm (whose n = 1 path is 1.6-10x slower in OpenBLAS): in the Python
step, the native graph entry, the table entry and the shared library alike, with the same
bits in each, split or not."""

from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends.llvm import entries, runtime
from functorch_core.backends.llvm.blas import DotGeneral, gemm_layout, gemv_form

import functorch_core as fc

CASES = [  # lhs shape, rhs shape, dimension numbers
    ((1, 300), (300, 7), (((1,), (0,)), ((), ()))),           # x @ W
    ((1, 300), (7, 300), (((1,), (1,)), ((), ()))),           # x @ W.T (a Linear layer)
    ((300, 1), (300, 7), (((0,), (0,)), ((), ()))),           # lhs stored transposed
    ((7, 300), (300, 1), (((1,), (0,)), ((), ()))),           # A @ v
    ((300, 7), (300, 1), (((0,), (0,)), ((), ()))),           # A.T @ v
    ((7, 300), (1, 300), (((1,), (1,)), ((), ()))),           # A @ v, v a row
    ((5, 1, 300), (5, 7, 300), (((2,), (2,)), ((0,), (0,)))),  # batched rows
    ((5, 7, 300), (5, 300), (((2,), (1,)), ((0,), (0,)))),     # batched columns
    ((1, 300), (300, 1), (((1,), (0,)), ((), ()))),           # a dot product
]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _operands(ls, rs, dtype, seed=0):
    rng = np.random.default_rng(seed)

    def draw(shape):
        a = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        return a.astype(dtype)
    return draw(ls), draw(rs)


def _bound(lhs, rhs, dn, k):
    """|error| of any order of the k additions: gamma_k times the sum of |terms|."""
    eps = np.finfo(lhs.dtype).eps / 2
    mag = np.abs(np.asarray(fc.lax.dot_general(np.abs(lhs).astype(np.float64),
                                               np.abs(rhs).astype(np.float64), dn)))
    return 2 * k * eps / (1 - k * eps) * mag + np.finfo(lhs.dtype).tiny


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ls, rs, dn", CASES)
def test_a_product_of_one_row_or_column_is_a_gemv(ls, rs, dn, dtype):
    lhs, rhs = _operands(ls, rs, dtype)
    dg = DotGeneral(ls, rs, dtype, dn)
    assert dg._gemv is not None

    def no_gemm(*args):
        raise AssertionError("a one-row product reached ?gemm")
    dg.fn = no_gemm
    got = dg(lhs, rhs)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    want = np.asarray(fc.lax.dot_general(lhs.astype(wide), rhs.astype(wide), dn))
    assert got.dtype == dtype and got.shape == want.shape
    assert np.all(np.abs(got - want) <= _bound(lhs, rhs, dn, 300))
    if np.dtype(dtype).kind == "f" and got.size > 1 and len(ls) == 2 and dn[0] == ((1,), (0,)):
        # NumPy calls ?gemv for these shapes too (?dot for a dot product): the same bits
        np.testing.assert_array_equal(got, lhs @ rhs)


def test_gemv_form_needs_one_row_or_column_and_a_real_contraction():
    def form(ls, rs, dn):
        return gemv_form(gemm_layout(ls, rs, dn))
    assert form((2, 3), (3, 4), (((1,), (0,)), ((), ()))) is None
    assert form((1, 1), (1, 4), (((1,), (0,)), ((), ()))) is None       # an outer product
    assert form((1, 3), (3, 4), (((1,), (0,)), ((), ()))).matrix == "rhs"
    assert form((4, 3), (3, 1), (((1,), (0,)), ((), ()))).matrix == "lhs"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_over_threads_rounds_as_one_call(dtype):
    ls, rs, dn = (64, 1, 1024), (64, 512, 1024), (((2,), (2,)), ((0,), (0,)))
    lhs, rhs = _operands(ls, rs, dtype, 1)
    with ThreadPoolExecutor(1) as pool:
        split = DotGeneral(ls, rs, dtype, dn, parallel=lambda: pool, workers=2)
        assert len(split.parts) > 1 and split._gemv is not None
        whole = DotGeneral(ls, rs, dtype, dn)
        assert len(whole.parts) == 1
        np.testing.assert_array_equal(_split(split, lhs, rhs), whole(lhs, rhs))


def _split(dg, lhs, rhs):
    out = np.empty(dg.out_shape, dg.dtype)
    a, b = (np.ascontiguousarray(x).reshape(dg.batch, -1) for x in (lhs, rhs))
    dg._split(a, b, out.reshape(dg.batch, -1))
    return out


def _layer(x, w, v, a):
    """Products of one row and of one column, in a graph of several steps."""
    h = np.tanh(x @ w.T)
    return h @ a, np.exp(a.T @ v) + 1.0, (h * 2.0) @ w


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_entry_kind_gives_the_python_steps_bits(monkeypatch, dtype):
    rng = np.random.default_rng(2)
    x, w, v, a = (rng.standard_normal(s).astype(dtype)
                  for s in ((1, 96), (48, 96), (48, 1), (48, 5)))
    graph = fc.make_graph(_layer)(x, w, v, a)
    args = [x, w, v, a]
    exe = runtime.Executable(graph)
    monkeypatch.setattr(entries, "TABLE_MIN_CALLS", 1)
    table = runtime.Executable(graph)
    monkeypatch.setattr(entries, "graph_entry_supported", lambda: False)
    stepped = runtime.Executable(graph)
    monkeypatch.undo()
    if entries.graph_entry_supported():
        assert table.table_entry and exe.entry is not None and not exe.table_entry
    assert stepped.entry is None
    for got, t, s, want in zip(exe(args), table(args), stepped(args), _layer(*args),
                               strict=True):
        np.testing.assert_array_equal(got, t)
        np.testing.assert_array_equal(got, s)
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-12)


def test_the_shared_library_gives_the_jit_bits(tmp_path):
    rng = np.random.default_rng(3)
    x, w, v, a = (rng.standard_normal(s).astype(np.float32)
                  for s in ((1, 96), (48, 96), (48, 1), (48, 5)))
    exp = fc.export(_layer, x, w, v, a)
    exp.compile_library(tmp_path / "libgemv.so", "gemv")
    lib = ctypes.CDLL(str(tmp_path / "libgemv.so"))
    want = fc.jit(_layer)(x, w, v, a)
    outs = [np.empty(o.shape, o.dtype) for o in exp.out_avals]
    ins = (ctypes.c_void_p * 4)(*[t.ctypes.data for t in (x, w, v, a)])
    ov = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
    assert lib.gemv(ins, ov) == 0
    for got, ref in zip(outs, want, strict=True):
        np.testing.assert_array_equal(got, ref)
