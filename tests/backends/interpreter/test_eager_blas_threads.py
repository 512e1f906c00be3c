"""OpenBLAS's thread count around the interpreter's (eager) products: as the cpu backend's
gemm calls, a product from OPENBLAS_THREADS_MACS up to ONE_THREAD_MACS multiply-adds runs
with NumPy's OpenBLAS at one thread (on a busy machine its own threads stall at their
barriers), and the user's count is back afterwards. The count is read from inside the
product (NumPy's matmul / einsum wrapped)."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends import openblas

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import lax

pytestmark = pytest.mark.skipif(openblas.numpy_lib() is None,
                                reason="the BLAS is not NumPy's OpenBLAS")


@pytest.fixture
def seen(monkeypatch):
    """OpenBLAS at two threads (the user's setting); the counts read inside each matmul and
    einsum; the setting before is put back afterwards."""
    lib = openblas.numpy_lib()
    before = lib.scipy_openblas_get_num_threads64_()
    lib.scipy_openblas_set_num_threads64_(2)
    counts = []
    for name in ("matmul", "einsum"):
        real = getattr(np, name)

        def hooked(*a, _real=real, **k):
            counts.append(lib.scipy_openblas_get_num_threads64_())
            return _real(*a, **k)
        monkeypatch.setattr(np, name, hooked)
    try:
        yield counts
        assert lib.scipy_openblas_get_num_threads64_() == 2     # the user's count is back
    finally:
        lib.scipy_openblas_set_num_threads64_(before)


def test_eager_grad_products_run_on_one_openblas_thread(seen):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((784, 256)).astype(np.float32)
    x = rng.standard_normal((128, 784)).astype(np.float32)      # 128 x 784 x 256 = 2^24.6
    g = fc.grad(lambda w: fnp.sum(fnp.tanh(x @ w)))(w)
    np.testing.assert_allclose(g, x.T @ (1 - np.tanh(x @ w) ** 2), rtol=1e-4, atol=1e-3)
    assert seen and set(seen) == {1}


def test_small_products_keep_the_users_count(seen):
    a = np.ones((8, 8), np.float32)
    fc.vmap(lambda v: v @ a)(a)                 # 8 x 8 x 8: OpenBLAS's caller thread anyway
    assert seen and set(seen) == {2}


def test_eager_convolution_runs_on_one_openblas_thread(seen):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 8, 32, 32)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)  # 16*16*30*30*72 = 2^24
    out = fc.vmap(lambda x: lax.conv(x[None], w, (1, 1), "VALID")[0])(x)
    assert out.shape == (16, 16, 30, 30)
    assert seen and set(seen) == {1}


def test_the_size_rule():
    assert isinstance(openblas.eager_product(openblas.OPENBLAS_THREADS_MACS),
                      openblas.OneThread)
    assert not isinstance(openblas.eager_product(openblas.OPENBLAS_THREADS_MACS - 1),
                          openblas.OneThread)
    assert not isinstance(openblas.eager_product(openblas.ONE_THREAD_MACS), openblas.OneThread)
