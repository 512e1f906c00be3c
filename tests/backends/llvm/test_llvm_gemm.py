"""dot_general on the cpu backend: gemm on the operands' own memory (BLAS transpose flags),
and small products inside the one-call native graph entry."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import paths
import pytest
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import runtime
from functorch_core.backends.llvm.blas import gemm_layout
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st
from test_products import dot_problems

import functorch_core as fc

CPU = registry.get("cpu")
ROOT = paths.ROOT


def _compile_fresh(graph):
    runtime._CACHE.clear()
    return CPU.compile(graph)


@pytest.mark.parametrize("in_entry", [True, False])
@given(dot_problems(contracting=True),
       st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
       st.integers(0, 2 ** 32 - 1))
def test_products_match_the_interpreter_in_every_layout(in_entry, problem, dtype, seed):
    lshape, rshape, dn, _ = problem
    b = Builder()
    lhs, rhs = b.input(lshape, np.dtype(dtype)), b.input(rshape, np.dtype(dtype))
    graph = b.graph(b(P.dot_general, lhs, rhs, dimension_numbers=dn))
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=s).astype(dtype) for s in (lshape, rshape)]
    if np.dtype(dtype).kind == "c":
        args = [a + 1j * rng.normal(size=a.shape).astype(dtype) for a in args]
    limit = runtime.GEMM_ENTRY_MAX_MACS
    try:
        runtime.GEMM_ENTRY_MAX_MACS = limit if in_entry else 0
        exe = _compile_fresh(graph)
        got, again = exe(args)[0], exe(args)[0]
    finally:
        runtime.GEMM_ENTRY_MAX_MACS = limit
        runtime._CACHE.clear()
    want = run_graph(graph, args)[0]
    layout = gemm_layout(lshape, rshape, dn)
    uses_entry = in_entry and layout is not None and min(
        layout.batch, layout.m, layout.n, layout.k) > 0
    assert (exe.entry is not None) == uses_entry
    assert got.shape == want.shape and got.dtype == want.dtype
    single = dtype in (np.float32, np.complex64)
    np.testing.assert_allclose(got, want, rtol=1e-5 if single else 1e-12, atol=1e-5)
    assert not np.shares_memory(got, again)


@given(dot_problems(contracting=True), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_float16_products_are_native_and_bit_exact(problem, seed, special):
    """NumPy's half matmul: exact float32 products summed in order in float32, rounded
    once; the native loop must give the same bits, infinities and NaNs included."""
    lshape, rshape, dn, _ = problem
    b = Builder()
    lhs, rhs = b.input(lshape, np.dtype(np.float16)), b.input(rshape, np.dtype(np.float16))
    graph = b.graph(b(P.dot_general, lhs, rhs, dimension_numbers=dn))
    rng = np.random.default_rng(seed)
    args = [(rng.normal(size=s) * 40).astype(np.float16) for s in (lshape, rshape)]
    if special:
        for a in args:
            a.reshape(-1)[rng.random(a.size) < 0.2] = rng.choice([np.inf, -np.inf, np.nan, 6e4])
    exe = _compile_fresh(graph)
    assert not any(type(s).__name__ == "Fallback" for s in exe.plan.steps)
    got = exe(args)[0]
    with np.errstate(all="ignore"):
        want = run_graph(graph, args)[0]
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_small_mlp_runs_as_one_native_call_and_a_big_product_does_not():
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(64, 32)), rng.normal(size=(32, 10))

    def predict(x):
        return np.tanh(x @ w1) @ w2.T.T
    x = rng.normal(size=(8, 64))
    f = fc.jit(predict)
    np.testing.assert_allclose(f(x), predict(x), rtol=1e-12)
    assert next(iter(f.cache.values())).run.entry is not None
    big = rng.normal(size=(2 * runtime.GEMM_ENTRY_MAX_MACS // (64 * 32), 64))
    np.testing.assert_allclose(f(big), predict(big), rtol=1e-12)
    entries = [e.run.entry for e in f.cache.values()]
    assert entries[1] is None       # a product over the limit runs as its own step


def test_layouts_that_need_a_copy_are_refused():
    # batch dimension in the middle of the lhs: no gemm layout without a copy
    assert gemm_layout((3, 2, 4), (2, 4, 5), (((2,), (1,)), ((1,), (0,)))) is None
    lay = gemm_layout((4, 3), (5, 4), (((0,), (1,)), ((), ())))
    assert (lay.trans_lhs, lay.trans_rhs, lay.m, lay.n, lay.k) == (True, True, 3, 5, 4)


LAZY_BLAS = """
import sys
import numpy as np
import functorch_core as fc
a = np.arange(6.0).reshape(2, 3)
got = fc.jit(lambda x, y: x @ y, backend="cpu")(a, a.T.copy())
assert np.array_equal(got, a @ a.T), got
assert "scipy.linalg" not in sys.modules and "scipy.special" not in sys.modules
import scipy.linalg.cython_blas
assert "dgemm" in scipy.linalg.cython_blas.__pyx_capi__
from scipy.linalg import blas
assert np.array_equal(blas.dgemm(1.0, a, a.T), a @ a.T)
print("ok")
"""


def test_gemm_pointers_without_importing_scipy_linalg(tmp_path):
    """The first jit call loads only SciPy's cython_blas extension, and a later import of
    scipy.linalg still works and sees the module (CPython's extension cache)."""
    env = dict(os.environ, FUNCTORCH_CORE_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", LAZY_BLAS], env=env, capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
