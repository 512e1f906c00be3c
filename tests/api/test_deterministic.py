"""Deterministic mode: the switch, the BLAS thread hold, and bit-identical results of every
primitive that could depend on the thread count, under 1 and N worker threads."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends.llvm import blas, runtime
from functorch_core.backends.llvm.conv import SPLIT_MACS, Conv

import functorch_core as fc
from functorch_core.profiler import profile

N_THREADS = 5


@pytest.fixture(autouse=True)
def mode_off_after():
    yield
    fc.use_deterministic_algorithms(False)


@pytest.fixture
def threads():
    """set(n): compile from now on for n worker threads (restored afterwards)."""
    before = runtime.get_num_threads()
    yield runtime.set_num_threads
    runtime.set_num_threads(before)


def test_switch_and_its_errors():
    assert not fc.are_deterministic_algorithms_enabled()
    fc.use_deterministic_algorithms(True)
    assert fc.are_deterministic_algorithms_enabled()
    assert not fc.is_deterministic_algorithms_warn_only_enabled()
    fc.use_deterministic_algorithms(True, warn_only=True)
    assert fc.is_deterministic_algorithms_warn_only_enabled()
    fc.use_deterministic_algorithms(False)
    assert not fc.are_deterministic_algorithms_enabled()
    assert not fc.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        fc.use_deterministic_algorithms(1)
    with pytest.raises(TypeError, match="warn_only must be a bool"):
        fc.use_deterministic_algorithms(True, warn_only="yes")


def _openblas():
    if blas.blas_int_bits() != 64:
        pytest.skip("the BLAS is not NumPy's OpenBLAS")
    return blas._numpy_lib[0]


def test_openblas_held_at_one_thread_while_on():
    lib = _openblas()
    before = lib.scipy_openblas_get_num_threads64_()
    fc.use_deterministic_algorithms(True)
    assert lib.scipy_openblas_get_num_threads64_() == 1
    with blas.one_thread_each():        # a conv's own split inside the mode
        assert lib.scipy_openblas_get_num_threads64_() == 1
    assert lib.scipy_openblas_get_num_threads64_() == 1
    fc.use_deterministic_algorithms(True)       # switching on twice holds once
    fc.use_deterministic_algorithms(False)
    assert lib.scipy_openblas_get_num_threads64_() == before
    with blas.one_thread_each():
        fc.use_deterministic_algorithms(True)
        fc.use_deterministic_algorithms(False)
        assert lib.scipy_openblas_get_num_threads64_() == 1
    assert lib.scipy_openblas_get_num_threads64_() == before


def test_products_round_as_on_one_openblas_thread():
    # OpenBLAS splits the k loop of some shapes over its threads: this one's bits differ
    # between 1 and 2 threads on the 2-core machine the tests were written on
    lib = _openblas()
    before = lib.scipy_openblas_get_num_threads64_()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 700)).astype(np.float32)
    b = rng.standard_normal((700, 500)).astype(np.float32)
    f = fc.jit(lambda a, b: a @ b)
    try:
        lib.scipy_openblas_set_num_threads64_(1)
        one = f(a, b)
        lib.scipy_openblas_set_num_threads64_(4)
        fc.use_deterministic_algorithms(True)
        np.testing.assert_array_equal(f(a, b), one)
        np.testing.assert_array_equal(a @ b, one)      # NumPy's own products too
    finally:
        fc.use_deterministic_algorithms(False)
        lib.scipy_openblas_set_num_threads64_(before)


def test_unheld_blas_raises_naming_the_primitives(monkeypatch):
    blas.blas_int_bits()
    monkeypatch.setattr(blas, "_numpy_lib", [None])     # as with SciPy's BLAS
    with pytest.raises(RuntimeError, match="dot_general and conv_general_dilated"):
        fc.use_deterministic_algorithms(True)
    assert not fc.are_deterministic_algorithms_enabled()
    with pytest.warns(UserWarning, match="dot_general"):
        fc.use_deterministic_algorithms(True, warn_only=True)
    assert fc.are_deterministic_algorithms_enabled()


def test_conv_features_split_is_fixed_by_shape():
    # a kernel gradient's shape: "features" sums per-part partial products
    lhs, rhs, out = (8, 32, 30, 30), (16, 32, 28, 28), (8, 16, 3, 3)
    params = dict(window_strides=(1, 1), padding=((0, 0), (0, 0)), lhs_dilation=(1, 1),
                  rhs_dilation=(1, 1), dimension_numbers=((0, 1, 2, 3),) * 3,
                  feature_group_count=1, batch_group_count=1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(lhs).astype(np.float32)
    b = rng.standard_normal(rhs).astype(np.float32)
    fc.use_deterministic_algorithms(True)
    with ThreadPoolExecutor(N_THREADS) as pool:
        convs = {w: Conv(lhs, rhs, out, np.float32, **params, parallel=lambda: pool, workers=w)
                 for w in (1, 2, 3, N_THREADS)}
        assert convs[1].mode == "features" and 16 * 8 * 32 * 28 * 28 * 9 >= SPLIT_MACS
        results = {w: c(a, b) for w, c in convs.items()}
    for w, r in results.items():
        np.testing.assert_array_equal(r, results[1], err_msg=f"{w} threads")


def _reductions_sorts_scatters_random(x, idx, key):
    import functorch_core.numpy as fnp
    bins = x[0, :100] * 0
    np.add.at(bins, idx, x[1])          # scatter_add with repeated indices
    pooled = fc.grad(lambda y: fc.lax.max_pool(y, (2, 2)).sum())(x[None, None])
    return {
        "reduce_sum rows": x.sum(axis=1),
        "reduce_sum columns": x.sum(axis=0),
        "reduce_sum all": x.sum(),
        "var rows": np.var(x, axis=1),
        "reduce_max rows": x.max(axis=1),
        "argmax rows": np.argmax(x, axis=1),
        "cumsum rows": np.cumsum(x, axis=1),
        "sort rows": np.sort(fnp.round(x, 1), axis=1),
        "argsort rows (stable)": np.argsort(fnp.round(x, 1), axis=1, kind="stable"),
        "scatter_add": bins,
        "select_and_scatter_add": pooled,
        "threefry2x32": fc.random.normal(key, x.shape, np.float32) + x,
        "rfft rows": np.fft.rfft(x, axis=1),
        "fft, 320000 points (four-step)": np.fft.fft(x.reshape(-1)),
    }


def _products(x, w, k):
    return {
        "dot_general": x @ w,
        "conv_general_dilated": fc.lax.conv(x[:256].reshape(8, 8, 40, 50), k, (1, 1), "SAME"),
        "conv kernel gradient": fc.grad(
            lambda k: fc.lax.conv(x[:256].reshape(8, 8, 40, 50), k, (1, 1), "SAME").sum())(k),
    }


def _run(fn, args, n, threads):
    threads(n)
    f = fc.jit(fn)
    with profile() as prof:
        out = f(*args)
    parts = sum(e.name.endswith(" part") for e in prof.events())
    return out, parts


@pytest.mark.parametrize("fn", [_reductions_sorts_scatters_random, _products])
def test_one_and_n_threads_agree_bit_for_bit(fn, threads):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((640, 500)).astype(np.float32)     # above PARALLEL_MIN_POINTS
    if fn is _products:
        args = (x, rng.standard_normal((500, 300)).astype(np.float32),
                rng.standard_normal((16, 8, 5, 5)).astype(np.float32))
    else:
        args = (x, rng.integers(0, 100, 500), fc.random.key(3))
    fc.use_deterministic_algorithms(True)
    one, _ = _run(fn, args, 1, threads)
    many, parts = _run(fn, args, N_THREADS, threads)
    if fn is _reductions_sorts_scatters_random:
        assert parts >= N_THREADS       # the big kernels and sorts did split
    for name, a in one.items():
        np.testing.assert_array_equal(many[name], a, err_msg=f"{name}: 1 vs {N_THREADS} threads")
    sums = fn is _reductions_sorts_scatters_random       # and a check against NumPy
    np.testing.assert_allclose(one["reduce_sum rows"] if sums else one["dot_general"],
                               x.sum(axis=1) if sums else x @ args[1], rtol=1e-4, atol=1e-3)
