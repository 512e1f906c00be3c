"""The CPU backend's fft step (backends/llvm/fft.py): the four-step method and the native
transforms along leading axes against a long double reference (no less accurate than
pocketfft's own algorithm), the split and twiddle tables, the same bits on any number of
threads, inputs never written, pocketfft's bits for the other n-d transforms, and the jit
path through the step (an intermediate written into the arena)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft
from functorch_core.backends.llvm import fft as F
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc

KINDS = ["fft", "ifft", "rfft", "irfft"]
REAL = {np.complex64: np.float32, np.complex128: np.float64}


@pytest.fixture
def four_step(monkeypatch):
    """Every transform the four-step method can take takes it; counts the calls."""
    calls = []
    inner = F._four_step

    def counted(*args):
        calls.append(args[0].size)
        return inner(*args)

    monkeypatch.setattr(F, "FOUR_STEP_MIN", 0)
    monkeypatch.setattr(F, "FOUR_STEP_MIN_REAL", 0)
    monkeypatch.setattr(F, "_four_step", counted)
    return calls


def _operand(kind, n, dtype, batch=(), seed=0):
    """The input of a ``kind`` transform to ``n`` points, complex ``dtype``."""
    rng = np.random.default_rng(seed)
    if kind == "rfft":
        return rng.normal(size=(*batch, n)).astype(REAL[dtype])
    size = n // 2 + 1 if kind == "irfft" else n
    return (rng.normal(size=(*batch, size)) + 1j * rng.normal(size=(*batch, size))).astype(dtype)


def _pocketfft(kind, x, n, dtype=None):
    f = {"fft": scipy.fft.fft, "ifft": scipy.fft.ifft, "rfft": scipy.fft.rfft,
         "irfft": lambda a: scipy.fft.irfft(a, n)}[kind]
    return f(x if dtype is None else x.astype(dtype))


def _error(got, want):
    want = want.astype(np.clongdouble if want.dtype.kind == "c" else np.longdouble)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@given(st.integers(1, 1 << 22))
def test_split_is_the_divisor_pair_nearest_the_root(m):
    pair = F.split(m)
    divisors = [d for d in range(math.isqrt(m), 0, -1) if m % d == 0]
    if divisors[0] < 16:
        assert pair is None
    else:
        assert pair == (m // divisors[0], divisors[0])


@pytest.mark.parametrize("n", [2, 16, 1000, 1 << 16, 3 * 5 * 7 * 11 * 13, (1 << 22) + 6])
def test_twiddle_tables_give_the_roots_of_unity(n):
    hi, lo, shift = F.twiddle_tables(n)
    r = np.arange(n) if n < 1 << 17 else np.random.default_rng(0).integers(0, n, 1 << 16)
    got = hi[r >> shift] * lo[r & ((1 << shift) - 1)]
    pi = 4 * np.arctan(np.longdouble(1))
    want = np.exp(-2j * pi * (r.astype(np.longdouble) / n))
    assert np.max(np.abs(got - want)) <= 2 * np.finfo(np.float64).eps
    assert lo.size == 1 << shift and (hi.size - 1) << shift < n <= hi.size << shift


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n,batch", [(512, ()), (4096, (3,)), (2 * 3 * 5 * 7 * 16, (2, 2)),
                                     (1 << 16, ())])
def test_four_step_is_as_accurate_as_pocketfft(four_step, kind, dtype, n, batch):
    """Against pocketfft in long double: within twice pocketfft's own error (at least a
    few ulps) in the working precision."""
    x = _operand(kind, n, dtype, batch)
    got = F.fft(x, fft_type=kind, fft_lengths=(n,), workers=2)
    assert four_step, "the four-step method did not run"
    ref = _pocketfft(kind, x, n, np.clongdouble if x.dtype.kind == "c" else np.longdouble)
    want_dtype = REAL[dtype] if kind == "irfft" else dtype
    assert got.dtype == want_dtype and got.shape == ref.shape
    eps = np.finfo(want_dtype).eps
    assert _error(got, ref) <= max(2 * _error(_pocketfft(kind, x, n), ref), 4 * eps)


@given(st.sampled_from([2, 3, 5, 7]).flatmap(
    lambda p: st.tuples(st.just(p), st.integers(8, 11))), st.sampled_from(KINDS))
def test_four_step_on_mixed_radix_lengths(pair, kind):
    p, log2 = pair
    n = p * (1 << log2)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(F, "FOUR_STEP_MIN", 0)
        m.setattr(F, "FOUR_STEP_MIN_REAL", 0)
        x = _operand(kind, n, np.complex128, seed=log2)
        got = F.fft(x, fft_type=kind, fft_lengths=(n,))
    np.testing.assert_allclose(got, _pocketfft(kind, x, n), rtol=0,
                               atol=1e-13 * np.max(np.abs(got)))


@pytest.mark.parametrize("kind", KINDS)
def test_bits_do_not_depend_on_the_thread_count(four_step, monkeypatch, kind):
    monkeypatch.setattr(F, "THREADS_MIN", 0)
    x = _operand(kind, 1 << 14, np.complex128, (2,))
    runs = [F.fft(x, fft_type=kind, fft_lengths=(1 << 14,), workers=w) for w in (1, 2, 3, 8)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0], strict=True)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lengths", [(1 << 12,), (6, 1 << 12), (64, 1 << 12)])
def test_inputs_are_never_written(four_step, kind, lengths):
    """Long last axes by the four-step method; a leading axis of 64 natively."""
    x = _operand(kind, lengths[-1], np.complex128, (2, *lengths[:-1]))
    kept = x.copy()
    F.fft(x, fft_type=kind, fft_lengths=lengths, workers=2)
    np.testing.assert_array_equal(x, kept)


def test_irfft_ignores_the_imaginary_parts_pocketfft_ignores(four_step):
    n = 1 << 12
    x = _operand("irfft", n, np.complex128)
    x[0] += 3j
    x[-1] -= 5j
    got = F.fft(x, fft_type="irfft", fft_lengths=(n,))
    np.testing.assert_allclose(got, scipy.fft.irfft(x, n), rtol=0, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape,k", [((3, 128, 257), 3), ((6, 10, 30), 2), ((5, 7, 9), 3),
                                     ((256, 384), 2)])
def test_n_d_transforms_give_pocketfft_bits(monkeypatch, dtype, shape, k):
    """Axis by axis in pocketfft's order and with its scaling: its bits (and the
    interpreter's) when every axis runs by pocketfft's own algorithm."""
    monkeypatch.setattr(F, "COLUMNS_MIN", 1 << 62)
    rng = np.random.default_rng(3)
    x = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    axes = tuple(range(len(shape) - k, len(shape)))
    lengths = shape[-k:]
    out_n = (*lengths[:-1], 2 * (lengths[-1] - 1))
    for kind, ref, arg, s in (("fft", scipy.fft.fftn, x, lengths),
                              ("ifft", scipy.fft.ifftn, x, lengths),
                              ("rfft", scipy.fft.rfftn, x.real.copy(), lengths),
                              ("irfft", scipy.fft.irfftn, x, out_n)):
        got = F.fft(arg, fft_type=kind, fft_lengths=s, workers=2)
        np.testing.assert_array_equal(got, ref(arg, s=s, axes=axes), strict=True)


@pytest.mark.parametrize("kind", KINDS)
def test_n_d_with_a_four_step_last_axis(four_step, kind):
    shape = (3, 5, 1 << 11)
    x = _operand(kind, shape[-1], np.complex128, shape[:-1])
    lengths = shape[1:]
    ref = {"fft": scipy.fft.fftn, "ifft": scipy.fft.ifftn, "rfft": scipy.fft.rfftn,
           "irfft": scipy.fft.irfftn}[kind](x, s=lengths, axes=(1, 2))
    got = F.fft(x, fft_type=kind, fft_lengths=lengths, workers=2)
    assert four_step
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.max(np.abs(ref)))


@pytest.mark.parametrize("kind", KINDS)
def test_result_into_out(four_step, kind):
    n = 1 << 12
    x = _operand(kind, n, np.complex64, (2,))
    want = F.fft(x, fft_type=kind, fft_lengths=(n,))
    out = np.full(want.shape, np.nan, want.dtype)
    assert F.fft(x, fft_type=kind, fft_lengths=(n,), out=out) is out
    np.testing.assert_array_equal(out, want)


def test_jit_runs_the_step_and_writes_an_intermediate_into_the_arena():
    """A long transform under jit: the four-step method (default thresholds), its result an
    intermediate of the graph (in the arena) and a result; the profile names the step."""
    n = 4 * F.FOUR_STEP_MIN_REAL
    x = np.random.default_rng(0).normal(size=n)

    def f(x):
        spectrum = np.fft.rfft(x)
        return np.fft.irfft(spectrum * 2.0, n), np.fft.fft(spectrum[:-1])

    want = f(x)
    with fc.profiler.profile() as prof:
        got = fc.jit(f)(x)
    names = [e.name for e in prof.events()]
    assert names.count("fft") == 3 and not any("fallback" in s for s in names)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * np.max(np.abs(w)))


def test_float16_runs_through_the_interpreter():
    x = np.linspace(0, 1, 64, dtype=np.float16)
    got = fc.jit(np.fft.rfft)(x)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, np.fft.rfft(x.astype(np.float32)), rtol=1e-5, atol=1e-5)


@pytest.fixture
def native_columns(monkeypatch):
    """Every leading axis the native kernel can take takes it; records the calls."""
    calls = []
    inner = F._columns

    def counted(x, axis, *args):
        calls.append(x.shape[axis])
        return inner(x, axis, *args)

    monkeypatch.setattr(F, "COLUMNS_MIN", 0)
    monkeypatch.setattr(F, "_columns", counted)
    return calls


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("rows", [16, 32, 64, 128, 1024, 2048])
@pytest.mark.parametrize("inverse", [False, True])
def test_native_columns_are_as_accurate_as_pocketfft(native_columns, dtype, rows, inverse):
    """Radix-4 levels (and a radix-2 one for odd powers of two) down strips of columns:
    within twice pocketfft's error against long double, scaled as NumPy's inverse."""
    width = F.STRIP_BYTES // np.dtype(dtype).itemsize
    x = _operand("fft", rows * 3 * width, dtype, seed=rows).reshape(rows, 3 * width)
    f = scipy.fft.ifft if inverse else scipy.fft.fft
    got = F._lead_pass(x.copy(), 0, inverse, 2, True)
    assert native_columns == [rows]
    ref = f(x.astype(np.clongdouble), axis=0)
    eps = np.finfo(REAL[dtype]).eps
    assert _error(got, ref) <= max(2 * _error(f(x, axis=0), ref), 4 * eps)


@pytest.mark.parametrize("kind", KINDS)
def test_n_d_with_native_leading_axes(native_columns, kind):
    """Leading axes of 32 and 64 points over strips of 16 complex128 (an irfft's first
    leading pass reads the input: pocketfft's; its second runs natively)."""
    lengths = (32, 64, 30 if kind in ("rfft", "irfft") else 16)
    x = _operand(kind, lengths[-1], np.complex128, (2, 32, 64))
    ref = {"fft": scipy.fft.fftn, "ifft": scipy.fft.ifftn, "rfft": scipy.fft.rfftn,
           "irfft": scipy.fft.irfftn}[kind](x, s=lengths, axes=(1, 2, 3))
    got = F.fft(x, fft_type=kind, fft_lengths=lengths, workers=2)
    assert native_columns == ([64] if kind == "irfft" else [32, 64])
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.max(np.abs(ref)))


def test_native_columns_bits_do_not_depend_on_the_thread_count(native_columns, monkeypatch):
    monkeypatch.setattr(F, "THREADS_MIN", 0)
    x = _operand("fft", 5 * 256 * 48, np.complex128).reshape(5, 256, 48)
    runs = [F._lead_pass(x.copy(), 1, False, w, True) for w in (1, 2, 3, 7)]
    assert native_columns == [256] * 4
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0], strict=True)
    np.testing.assert_allclose(runs[0], scipy.fft.fft(x, axis=1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype,shape,axis,ok", [
    (np.complex128, (64, 16), 0, True), (np.complex64, (64, 16), 0, False),
    (np.complex64, (64, 32), 0, True), (np.complex128, (64, 24), 0, False),
    (np.complex128, (48, 16), 0, False), (np.complex128, (8, 64), 0, False),
    (np.complex128, (2, 64, 32), 1, True), (np.complex128, (64, 32), 1, False),
    (np.float64, (64, 16), 0, False)])
def test_which_axes_run_natively(monkeypatch, dtype, shape, axis, ok):
    """A power-of-two axis of at least 16 points, not the last, over whole strips."""
    monkeypatch.setattr(F, "COLUMNS_MIN", 0)
    assert F.native_columns(np.zeros(shape, dtype), axis) == ok
    monkeypatch.setattr(F, "COLUMNS_MIN", 1 << 62)
    assert not F.native_columns(np.zeros(shape, dtype), axis)
