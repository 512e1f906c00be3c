"""The cpu backend's conv steps (backends/llvm/conv.py): every mode on every problem,
split over threads or not, against the interpreter; OpenBLAS's thread setting."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends.llvm import blas
from functorch_core.backends.llvm import conv as conv_module
from functorch_core.backends.llvm.conv import Conv
from hypothesis import given
from hypothesis import strategies as st
from test_conv import _call, _draw_operands, _layout, conv_problems

_POOL = ThreadPoolExecutor(3)


def _conv(p, x, w, dtype, **extra):
    want = _call(p, x, w)
    c = Conv(_layout(x, p["perms"][0]).shape, _layout(w, p["perms"][1]).shape, want.shape,
             dtype, window_strides=p["strides"], padding=p["pads"],
             lhs_dilation=p["lhs_dil"], rhs_dilation=p["rhs_dil"],
             dimension_numbers=tuple(p["perms"]), feature_group_count=p["groups"][0],
             batch_group_count=p["groups"][1], **extra)
    return c, want


@pytest.mark.parametrize("mode", ["taps", "images", "outputs", "features"])
@given(conv_problems(), st.sampled_from([np.float32, np.float64, np.complex128]),
       st.integers(0, 2 ** 32 - 1), st.integers(1, 3))
def test_every_mode_matches_the_interpreter(mode, p, dtype, seed, workers):
    x, w = _draw_operands(p, dtype, seed)
    c, want = _conv(p, x, w, dtype, parallel=lambda: _POOL, workers=workers)
    c.mode = mode
    lhs, rhs = _layout(x, p["perms"][0]), _layout(w, p["perms"][1])
    tol = 1e-10 if dtype != np.float32 else 1e-4
    split_macs = conv_module.SPLIT_MACS
    try:
        conv_module.SPLIT_MACS = 0                  # split whatever the size
        np.testing.assert_allclose(c(lhs, rhs), want, rtol=tol, atol=tol)
    finally:
        conv_module.SPLIT_MACS = split_macs
    out = np.full(want.shape, np.nan, dtype)        # into a given output buffer too
    np.testing.assert_allclose(c(lhs, rhs, out=out), want, rtol=tol, atol=tol)


def test_a_large_forward_conv_runs_a_gemm_per_image_split_over_threads():
    p = dict(n=4, c=8, o=16, i=8, sizes=[17, 9], kernel=[3, 3], strides=[1, 2],
             lhs_dil=[1, 1], rhs_dil=[1, 2], pads=[(1, 1), (2, 0)], groups=(1, 1),
             perms=[(0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)])
    x, w = _draw_operands(p, np.float32, 0)
    calls = []

    def parallel():
        calls.append(1)
        return _POOL
    c, want = _conv(p, x, w, np.float32, parallel=parallel, workers=2)
    assert c.mode == "images"
    split_macs = conv_module.SPLIT_MACS
    try:
        conv_module.SPLIT_MACS = 0
        np.testing.assert_allclose(c(x, w), want, rtol=1e-4, atol=1e-4)
    finally:
        conv_module.SPLIT_MACS = split_macs
    assert calls


def test_small_images_take_one_gemm_per_block_not_one_per_image():
    # cnn_digits' conv (1 -> 16, 3x3, pad 1, 64 images of 8x8) and its kernel gradient:
    # 64 output positions each, but a per-image gemm of ~9k multiply-adds costs more in its
    # Python round than in BLAS
    fwd = dict(n=64, c=1, o=16, i=1, sizes=[8, 8], kernel=[3, 3], strides=[1, 1],
               lhs_dil=[1, 1], rhs_dil=[1, 1], pads=[(1, 1), (1, 1)], groups=(1, 1),
               perms=[(0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)])
    kgrad = dict(n=1, c=64, o=16, i=64, sizes=[8, 8], kernel=[8, 8], strides=[1, 1],
                 lhs_dil=[1, 1], rhs_dil=[1, 1], pads=[(1, 1), (1, 1)], groups=(1, 1),
                 perms=[(1, 0, 2, 3), (1, 0, 2, 3), (1, 0, 2, 3)])
    for p, mode in ((fwd, "taps"), (kgrad, "outputs")):
        x, w = _draw_operands(p, np.float64, 0)
        c, want = _conv(p, x, w, np.float64)
        assert c.mode == mode
        lhs, rhs = _layout(x, p["perms"][0]), _layout(w, p["perms"][1])
        np.testing.assert_allclose(c(lhs, rhs), want, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(blas.blas_int_bits() != 64, reason="NumPy's OpenBLAS is not bound")
def test_one_thread_each_puts_the_thread_count_back_after_nested_and_concurrent_blocks():
    lib = blas._numpy_lib[0]
    before = lib.scipy_openblas_get_num_threads64_()
    barrier = threading.Barrier(2)
    seen = []

    def inside():
        with blas.one_thread_each():
            barrier.wait()
            with blas.one_thread_each():
                seen.append(lib.scipy_openblas_get_num_threads64_())
            barrier.wait()
            seen.append(lib.scipy_openblas_get_num_threads64_())
    threads = [threading.Thread(target=inside) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [1, 1, 1, 1]
    assert lib.scipy_openblas_get_num_threads64_() == before


@pytest.mark.skipif(blas.blas_int_bits() != 64, reason="NumPy's OpenBLAS is not bound")
def test_a_conv_too_small_to_split_runs_its_gemms_on_one_openblas_thread(monkeypatch):
    p = dict(n=16, c=8, o=16, i=8, sizes=[17, 9], kernel=[3, 3], strides=[1, 2],
             lhs_dil=[1, 1], rhs_dil=[1, 2], pads=[(1, 1), (2, 0)], groups=(1, 1),
             perms=[(0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)])
    x, w = _draw_operands(p, np.float32, 0)
    c, want = _conv(p, x, w, np.float32, parallel=lambda: _POOL, workers=1)
    lib, seen, real = blas._numpy_lib[0], [], c.fn
    before = lib.scipy_openblas_get_num_threads64_()

    def gemm(*args):
        seen.append(lib.scipy_openblas_get_num_threads64_())
        return real(*args)
    monkeypatch.setattr(c, "fn", gemm)
    monkeypatch.setattr(blas, "busy", lambda: False)
    lib.scipy_openblas_set_num_threads64_(2)
    try:
        np.testing.assert_allclose(c(x, w), want, rtol=1e-4, atol=1e-4)
    finally:
        lib.scipy_openblas_set_num_threads64_(before)
    assert seen and set(seen) == {1}
