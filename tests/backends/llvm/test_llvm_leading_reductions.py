"""Reductions over leading axes (sums down the columns of a matrix) in the cpu backend.

Such a kernel loops in memory order and accumulates in its result (codegen's
``_leading_reduction``) instead of striding down the reduced axis for every kept
element. Each result still combines its elements in index order, so it must equal
NumPy's reduction over a leading axis (also sequential, row by row) exactly, and the
choice must follow the memory layout: a reduction whose reads are contiguous along the
reduced axis keeps the reduced loops innermost.
"""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.llvm import codegen
from functorch_core.backends.planning.plan import Kernel
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc

REDUCTIONS = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def kernels(jitted):
    exe = next(iter(jitted.cache.values())).run
    return [s for s in exe.plan.steps if isinstance(s, Kernel) and s.reduces]


@given(rows=st.integers(1, 70), cols=st.integers(2, 70),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64]),
       name=st.sampled_from(sorted(REDUCTIONS)), seed=st.integers(0, 2 ** 16))
def test_a_column_reduction_equals_numpy_exactly(rows, cols, dtype, name, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    if name == "prod":
        x = np.where(np.abs(x) > 2, 1, x).astype(dtype)      # keep products finite
    reduce = REDUCTIONS[name]
    jf = fc.jit(lambda a: reduce(a * 2, axis=0))
    want = reduce(x * dtype(2), axis=0)
    got = jf(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if rows > 1 and dtype in (np.float32, np.float64):
        assert any(codegen._leading_reduction(k) for k in kernels(jf))


def test_leading_reduction_with_a_stored_intermediate_and_nans():
    x = np.random.default_rng(1).standard_normal((300, 257)).astype(np.float32)
    x[5, 7] = np.nan
    jf = fc.jit(lambda a: (np.abs(a) * 2, np.sum(np.abs(a) * 2, axis=0), np.max(a, axis=0)))
    e, s, m = jf(x)
    np.testing.assert_array_equal(e, np.abs(x) * np.float32(2))
    np.testing.assert_array_equal(s, np.sum(np.abs(x) * np.float32(2), axis=0))
    np.testing.assert_array_equal(m, np.max(x, axis=0))
    assert np.isnan(s[7]) and np.isnan(m[7])
    assert any(codegen._leading_reduction(k) for k in kernels(jf))


def test_several_leading_axes_and_a_big_kept_axis():
    x = np.random.default_rng(2).standard_normal((6, 40, 1100))
    jf = fc.jit(lambda a: np.sum(np.tanh(a), axis=(0, 1)))
    np.testing.assert_allclose(jf(x), np.sum(np.tanh(x), axis=(0, 1)), rtol=1e-12)
    assert any(codegen._leading_reduction(k) for k in kernels(jf))


@pytest.mark.parametrize("case", ["transposed read", "last axis", "argmax", "float16"])
def test_reductions_that_keep_the_reduced_loops_innermost(case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 96))
    fn = {"transposed read": lambda a: np.sum(a.T * 2, axis=0),   # contiguous down axis 0
          "last axis": lambda a: np.sum(a * 2, axis=1),
          "argmax": lambda a: np.argmax(a * 2, axis=0),
          "float16": lambda a: np.sum(a * np.float16(2), axis=0)}[case]
    if case == "float16":
        x = x.astype(np.float16)      # accumulates in float32: not in its float16 result
    jf = fc.jit(fn)
    want = fn(x.astype(np.float32)).astype(np.float16) if case == "float16" else fn(x)
    np.testing.assert_allclose(jf(x), want, rtol=1e-3 if case == "float16" else 1e-12)
    assert not any(codegen._leading_reduction(k) for k in kernels(jf))
