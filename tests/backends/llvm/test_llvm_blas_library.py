"""Which BLAS the cpu backend's products call (backends/llvm/blas.py).

NumPy's wheels bundle an OpenBLAS with 64-bit integers that NumPy has already loaded; the
backend calls it, so a process's first product neither loads SciPy's BLAS (tens of
milliseconds, and a second pool of BLAS threads) nor differs from NumPy's matmul. Without
it, SciPy's 32-bit BLAS serves. Each case runs in a fresh interpreter, since the choice
is made once per process.
"""

import json
import os
import subprocess
import sys

import paths
import pytest

ROOT = paths.ROOT

SCRIPT = """
import json, sys
import numpy as np
from functorch_core.backends.llvm import blas
if {force_scipy}:
    blas._numpy_lib[:] = [None]
import functorch_core as fc

rng = np.random.default_rng(0)


def close(got, want, dtype):
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


for dtype in (np.float32, np.float64, np.complex64, np.complex128):
    for m, k, n in ((3, 4, 5), (70, 90, 60), (300, 200, 310)):    # in the entry, and a step
        a = (rng.standard_normal((m, k)) + 0.5).astype(dtype)
        b = (rng.standard_normal((k, n)) - 0.25).astype(dtype)
        got = fc.jit(lambda a, b: np.tanh(a) @ b.T.T)(a, b)
        want = np.tanh(a) @ b
        close(got, want, dtype)
    batched = rng.standard_normal((4, 6, 7)).astype(dtype)
    got = fc.jit(lambda x: x @ np.swapaxes(x, 1, 2))(batched)
    close(got, batched @ np.swapaxes(batched, 1, 2), dtype)
print(json.dumps({{"bits": blas.blas_int_bits(), "scipy": "scipy" in sys.modules}}))
"""


def run(force_scipy):
    env = dict(os.environ, PYTHONPATH=ROOT, FUNCTORCH_CORE_BACKEND="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(force_scipy=force_scipy)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_products_call_numpys_own_openblas_without_loading_scipy():
    from functorch_core.backends.llvm import blas
    if blas._numpy_openblas() is None:
        pytest.skip("this NumPy does not bundle an ILP64 OpenBLAS")
    out = run(force_scipy=False)
    assert out["bits"] == 64 and not out["scipy"]


def test_scipy_blas_serves_when_numpy_has_none():
    out = run(force_scipy=True)
    assert out["bits"] == 32 and out["scipy"]
