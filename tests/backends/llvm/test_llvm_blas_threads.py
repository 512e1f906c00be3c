"""OpenBLAS's thread count around the cpu backend's products (backends/llvm/blas.py): a
product below blas.ONE_THREAD_MACS runs with OpenBLAS at one thread whatever the load,
from Python steps, native graph entries, loops and convs alike, and the user's own NumPy
gets the thread count back afterwards. Each test reads the count from inside the gemm
call (a hook in front of OpenBLAS's ?gemm)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from functorch_core.backends.llvm import blas, runtime

import functorch_core as fc
from functorch_core import lax

pytestmark = pytest.mark.skipif(blas.blas_int_bits() != 64,
                                reason="the BLAS is not NumPy's OpenBLAS")


def _lib():
    return blas._numpy_lib[0]


@pytest.fixture
def two_threads(monkeypatch):
    """OpenBLAS at two threads (the user's setting) and the machine read as quiet, so only
    the product's size decides; the setting before is put back afterwards."""
    lib = _lib()
    before = lib.scipy_openblas_get_num_threads64_()
    lib.scipy_openblas_set_num_threads64_(2)
    monkeypatch.setattr(blas, "busy", lambda: False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    try:
        yield lib
    finally:
        lib.scipy_openblas_set_num_threads64_(before)


def _recording_gemm(monkeypatch, seen):
    """blas.gemm replaced by one that notes OpenBLAS's thread count at every call."""
    real, lib = blas.gemm, _lib()

    def gemm(dtype):
        fn = real(dtype)

        def call(*args):
            seen.append(lib.scipy_openblas_get_num_threads64_())
            return fn(*args)
        return call
    monkeypatch.setattr(blas, "gemm", gemm)


def test_a_small_jit_product_runs_on_one_openblas_thread_and_numpy_keeps_its_own(
        two_threads, monkeypatch):
    seen = []
    _recording_gemm(monkeypatch, seen)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784)).astype(np.float32)     # an MLP's first layer
    w = rng.standard_normal((784, 256)).astype(np.float32)
    runtime.clear_cache()
    f = fc.jit(lambda x, w: (x @ w) * 2.0, backend="cpu")
    got = f(x, w)
    assert seen and set(seen) == {1}
    assert two_threads.scipy_openblas_get_num_threads64_() == 2     # the user's, back
    with blas.one_thread_each():
        want = (x @ w) * 2.0
    np.testing.assert_array_equal(got, want)


def test_a_big_product_keeps_openblas_threads_on_a_quiet_machine(two_threads, monkeypatch):
    monkeypatch.setattr(blas, "ONE_THREAD_MACS", 1 << 21)     # 128 x 128 x 256 is past it
    monkeypatch.setattr(blas, "SPLIT_MACS", 1 << 40)
    seen = []
    _recording_gemm(monkeypatch, seen)
    a, b = np.ones((128, 128)), np.ones((128, 256))
    dot = blas.DotGeneral(a.shape, b.shape, np.float64, (((1,), (0,)), ((), ())),
                          parallel=lambda: None, workers=2)
    np.testing.assert_array_equal(dot(a, b), a @ b)
    assert seen == [2]
    monkeypatch.setattr(blas, "busy", lambda: True)
    dot(a, b)
    assert seen == [2, 1]      # while busy, one thread


@pytest.mark.parametrize("busy", [False, True])
@pytest.mark.parametrize("m, held", [(8, False), (64, True)])
def test_openblas_is_held_from_the_size_it_would_thread_at(two_threads, monkeypatch, busy,
                                                           m, held):
    # 8 x 256 x 128 = 2^18 multiply-adds: OpenBLAS keeps it on the calling thread by itself,
    # so nothing is set; 64 x 256 x 128 = 2^21: held at one thread, quiet or busy
    monkeypatch.setattr(blas, "busy", lambda: busy)
    lib, calls = two_threads, []
    real = lib.scipy_openblas_set_num_threads64_

    class Lib:
        def __getattr__(self, name):
            return getattr(lib, name)

        def scipy_openblas_set_num_threads64_(self, n):
            calls.append(n)
            return real(n)
    monkeypatch.setattr(blas, "_numpy_lib", [Lib()])
    a, b = np.ones((m, 256), np.float32), np.ones((256, 128), np.float32)
    dot = blas.DotGeneral(a.shape, b.shape, np.float32, (((1,), (0,)), ((), ())))
    np.testing.assert_array_equal(dot(a, b), a @ b)
    assert calls == ([1, 2] if held else [])


_ENTRY_CHECK = textwrap.dedent("""
    import ctypes, json, sys
    import numpy as np
    from functorch_core.backends.llvm import blas, entries as native_entries, runtime
    import functorch_core as fc
    lib = blas._numpy_lib[0] if blas.blas_int_bits() == 64 else None
    lib.scipy_openblas_set_num_threads64_(2)
    blas.busy = lambda: False
    seen, real = [], blas.gemm(np.float32)
    @ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 13))
    def hook(*args):
        seen.append(lib.scipy_openblas_get_num_threads64_())
        real(*args)
    address = native_entries.gemm_address
    native_entries.gemm_address = lambda dtype, routine="gemm": (
        ctypes.cast(hook, ctypes.c_void_p).value if routine == "gemm"
        else address(dtype, routine))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)
    f = fc.jit(lambda x, w: np.tanh(x @ w), backend="cpu")
    got = f(x, w)
    entries = [e.entry is not None for e in runtime._CACHE.values()]
    ok = bool(np.allclose(got, np.tanh(x @ w), rtol=1e-5, atol=1e-5))
    print(json.dumps({"seen": seen, "entries": entries, "ok": ok,
                      "after": lib.scipy_openblas_get_num_threads64_()}))
""")


def test_a_product_inside_a_native_graph_entry_runs_on_one_openblas_thread():
    # 64 x 128 x 128 = 2^20 multiply-adds: called from the native entry's own code; a fresh
    # process, so that its ?gemm symbol can be bound to the hook
    env = dict(os.environ, FUNCTORCH_CORE_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", _ENTRY_CHECK], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    import json
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["entries"] == [True] and result["ok"]
    assert result["seen"] == [1]
    assert result["after"] == 2


def test_a_loop_with_a_mid_size_product_holds_one_thread_on_a_quiet_machine(
        two_threads, one_thread_each_entries):
    entered = one_thread_each_entries
    rng = np.random.default_rng(1)
    w = rng.standard_normal((128, 128)) * 0.05
    xs, h0 = rng.standard_normal((3, 32, 128)), np.zeros((32, 128))

    def rnn(w, xs, h0):      # 32 x 128 x 128 = 2^19 multiply-adds per step
        return lax.scan(lambda h, x: (np.tanh(h @ w + x), None), h0, xs)[0]
    got = fc.jit(rnn, backend="cpu")(w, xs, h0)
    np.testing.assert_allclose(got, rnn(w, xs, h0), rtol=1e-12, atol=1e-12)
    assert entered


def test_the_last_holder_puts_the_thread_count_back_unless_someone_changed_it(two_threads):
    lib = two_threads
    with blas.one_thread_each():
        with blas.one_thread_each():
            assert lib.scipy_openblas_get_num_threads64_() == 1
        assert lib.scipy_openblas_get_num_threads64_() == 1
    assert lib.scipy_openblas_get_num_threads64_() == 2
    with blas.one_thread_each():
        lib.scipy_openblas_set_num_threads64_(3)    # the user's, set meanwhile
    assert lib.scipy_openblas_get_num_threads64_() == 3
    with pytest.raises(RuntimeError), blas.one_thread_each():
        raise RuntimeError("a failing product")
    assert lib.scipy_openblas_get_num_threads64_() == 3 and blas._threads["inside"] == 0
