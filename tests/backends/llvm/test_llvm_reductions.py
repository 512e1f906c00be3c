"""Accuracy of the cpu backend's float sums (blocked, with the blocks added pairwise, so
past one block the error against an exact sum grows with log2(n) as NumPy's pairwise sum
does; a sum kept in loop order, even across vector lanes, grows with n) and products (in
NumPy's order)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from functorch_core.backends.llvm.accumulators import LONG_SUM_BLOCK
from hypothesis import example, given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp


def _exact_sum(x, axes):
    """The correctly rounded float64 (complex128) sum over ``axes``: math.fsum per part."""
    x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else axes
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = np.moveaxis(x, kept, list(range(len(kept)))).reshape(
        [x.shape[d] for d in kept] + [-1])
    flat = rows.reshape(-1, rows.shape[-1])
    re = np.array([math.fsum(r) for r in flat.real.astype(np.float64)])
    if x.dtype.kind != "c":
        return re.reshape(rows.shape[:-1])
    im = np.array([math.fsum(r) for r in flat.imag.astype(np.float64)])
    return (re + 1j * im).reshape(rows.shape[:-1])


def _check(got, x, axes, dtype):
    exact = _exact_sum(x, axes)
    n = max(1, np.size(x) // max(1, np.size(exact)))
    mags = np.sum(np.abs(np.asarray(x, np.complex128)), axis=axes)
    eps = float(np.finfo(dtype).eps)
    work = float(np.finfo(np.float32).eps) if np.dtype(dtype) == np.float16 else eps
    bound = 2 * work * max(1.0, math.log2(n)) * mags + eps * np.abs(exact)
    _assert_within(got, exact, bound, dtype)


def _assert_within(got, exact, bound, dtype):
    with np.errstate(over="ignore"):
        rounded = exact.astype(dtype)
    overflows = ~np.isfinite(rounded)       # float16 past 65504
    assert np.array_equal(np.asarray(got)[overflows], rounded[overflows])
    err = np.where(overflows, 0, np.abs(np.asarray(got, exact.dtype) - exact))
    assert np.all(err <= bound), float(np.max(err / np.maximum(bound, 1e-300)))


def _tree_bound(x, axes, dtype):
    """Higham's bound for a sum whose tree has depth d, gamma_d * sum|x| (gamma_d =
    d u / (1 - d u), u the working unit roundoff; sqrt(2) times that for complex values,
    whose parts add apart), plus the final rounding to ``dtype``.
    The cpu backend adds up to LONG_SUM_BLOCK elements of a block in loop order (depth up
    to the block, when the reduced loops are strided and nothing vectorizes), then the
    block sums pairwise; NumPy's order (pairwise along one axis, the other reduced axes in
    loop order) has no deeper tree while n <= LONG_SUM_BLOCK."""
    exact = _exact_sum(x, axes)
    n = max(1, np.size(x) // max(1, np.size(exact)))
    depth = min(n, LONG_SUM_BLOCK) + math.ceil(math.log2(math.ceil(n / LONG_SUM_BLOCK)))
    eps = float(np.finfo(dtype).eps)
    u = (float(np.finfo(np.float32).eps) if np.dtype(dtype) == np.float16 else eps) / 2
    mags = np.sum(np.abs(np.asarray(x, np.complex128)), axis=axes)
    parts = math.sqrt(2) if np.dtype(dtype).kind == "c" else 1.0
    return exact, parts * depth * u / (1 - depth * u) * mags + eps / 2 * np.abs(exact)


def test_float32_sum_of_2_31_plus_1_ones():
    """Broadcast costs no memory; a sum kept in order saturates at 2**24 per lane."""
    f = fc.jit(lambda x: fnp.sum(fnp.broadcast_to(x, (2**31 + 1,))))
    got = f(np.float32(1))
    assert got.dtype == np.float32
    assert got == np.float32(2**31 + 1) == np.sum(np.broadcast_to(np.float32(1), (2**31 + 1,)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
def test_sum_of_a_repeated_value_is_accurate(dtype):
    """One value added 2**27 times: every in-order partial sum rounds the same way."""
    n = 2**27
    f = fc.jit(lambda x: fnp.sum(fnp.broadcast_to(x, (n,))))
    value = np.asarray(1e-4 if np.dtype(dtype) == np.float16 else 0.1, dtype)
    if np.dtype(dtype).kind == "c":
        value = np.asarray(0.1 + 0.3j, dtype)
    got = f(value)
    exact = complex(value) * n
    eps = float(np.finfo(dtype).eps)
    work = float(np.finfo(np.float32).eps) if np.dtype(dtype) == np.float16 else eps
    assert abs(complex(got) - exact) <= (2 * work * math.log2(n) + eps) * abs(exact)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_sum_and_mean_of_16m_values_within_pairwise_bound(dtype):
    rng = np.random.default_rng(5)
    n = 1 << 24
    x = (rng.random(n) * 0.5 + 0.75).astype(np.float32)
    if np.dtype(dtype).kind == "c":
        x = (x[: n // 2] + 1j * x[n // 2:]).astype(dtype)
    _check(fc.jit(fnp.sum)(x), x, None, dtype)
    mean = fc.jit(fnp.mean)(x)
    exact = np.mean(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
    assert abs(complex(mean) - exact) <= 2 * np.finfo(dtype).eps * 24 * abs(exact)


def test_row_sums_do_not_depend_on_the_thread_split():
    """Each row is summed in one fixed order whatever the threads: as a row alone."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((300, 5000)).astype(np.float32)
    rows = fc.jit(lambda a: fnp.sum(a, axis=1))(x)
    one = fc.jit(fnp.sum)
    assert np.array_equal(rows, np.stack([one(r) for r in x]))
    assert np.array_equal(rows, fc.jit(lambda a: fnp.sum(a, axis=1))(x))


@given(shape=st.lists(st.integers(1, 64), min_size=1, max_size=3),
       axes_bits=st.integers(1, 7), base=st.floats(0.01, 100), spread=st.floats(0, 2),
       dtype=st.sampled_from([np.float16, np.float32, np.float64, np.complex64]),
       seed=st.integers(0, 2**16), transposed=st.booleans())
# equal values, strided: each block's loop-order sum rounds the same way at every step
@example(shape=[2, 48, 57], axes_bits=6, base=97.890625, spread=0.0, dtype=np.float32, seed=0,
         transposed=True)
def test_sums_over_axes_within_the_summation_tree_bound(shape, axes_bits, base, spread, dtype, seed,
                                              transposed):
    rng = np.random.default_rng(seed)
    axes = tuple(a for a in range(len(shape)) if axes_bits >> a & 1) or (0,)
    x = base * (1 + spread * (rng.random(shape) - 0.5))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * base * rng.random(shape)
    x = np.asarray(x).astype(dtype)
    if transposed:           # a strided read: the reduced loops are not contiguous
        x = x.T
        axes = tuple(len(shape) - 1 - a for a in axes)
    got = fc.jit(lambda a: fnp.sum(a, axis=axes))(x)
    with np.errstate(over="ignore"):
        want = np.sum(x, axis=axes)
    assert got.dtype == want.dtype
    exact, bound = _tree_bound(x, axes, dtype)
    _assert_within(got, exact, bound, dtype)
    if np.dtype(dtype) != np.float16:     # NumPy rounds float16 partial sums to float16
        _assert_within(want, exact, bound, dtype)   # the bound holds NumPy's own error


@pytest.mark.parametrize("x", [
    np.array([1.75e-39, np.inf, 1.75e-39], np.float32),       # regrouped: 0 * inf = nan
    np.random.default_rng(0).uniform(0.9, 1.1, 10 ** 6).astype(np.float32),  # ~7e-45
    np.random.default_rng(1).uniform(0.5, 2.0, 4097),
], ids=["inf-between-tiny", "long-f32-underflow", "f64"])
def test_products_multiply_in_numpys_order(x):
    """NumPy multiplies a reduction in order; so does the native loop (bit for bit)."""
    got = fc.jit(np.prod)(x)
    np.testing.assert_array_equal(got, np.prod(x))
    assert got.dtype == x.dtype
