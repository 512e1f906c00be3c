"""qr, svd, eigh and eig under jit with native batched LAPACK calls
(backends/llvm/lapack_eig.py) against the same jit function with the equation run by the
interpreter (NumPy's gufunc for the one equation: the backend before the lowering) and
against NumPy called directly, in one process, interleaved.

Run from the repository root: ``python benchmarks/lapack_eig.py [--quick]``. Medians over
rounds of medians; ratios against NumPy.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from functorch_core.backends.llvm import blas
from lapack import jit_lapack, time_against

import functorch_core as fc


def _workloads(quick):
    rng = np.random.default_rng(1)
    n = 256 if quick else 512
    batch = rng.normal(size=(1000, 16, 16))
    sym_batch = batch + batch.transpose(0, 2, 1)
    mid = rng.normal(size=(n, n))
    sym = mid + mid.T
    tall = rng.normal(size=(2 * n, n // 2))
    return {
        f"svd {n}^2": (np.linalg.svd, (mid,)),
        f"svd {n}^2 values only": (lambda a: np.linalg.svd(a, compute_uv=False), (mid,)),
        "svd 1000 x 16x16": (np.linalg.svd, (batch,)),
        f"eigh {n}^2": (np.linalg.eigh, (sym,)),
        "eigh 1000 x 16x16": (np.linalg.eigh, (sym_batch,)),
        f"qr {2 * n}x{n // 2}": (np.linalg.qr, (tall,)),
        "qr 1000 x 16x16": (np.linalg.qr, (batch,)),
        f"eig {n // 2}^2": (np.linalg.eig, (mid[:n // 2, :n // 2],)),
        "eig 1000 x 16x16": (np.linalg.eig, (batch,)),
    }


def main():
    quick = "--quick" in sys.argv
    rounds, repeats = (2, 3) if quick else (5, 5)
    for title, (fn, args) in _workloads(quick).items():
        before, after = jit_lapack(fn, args, False), jit_lapack(fn, args, True)
        # a big svd with vectors runs gesdd's calls with OpenBLAS at one thread each: its bits
        # are NumPy's on one thread; the others call the routine as NumPy does
        held = title.startswith("svd") and "values" not in title and args[0].ndim == 2
        with blas.one_thread_each() if held else contextlib.nullcontext():
            want = fn(*args)
        for g, w in zip(fc.tree_leaves(after(*args)), fc.tree_leaves(want), strict=True):
            np.testing.assert_array_equal(g, w)     # NumPy's routine: its bits
        time_against(title, ("NumPy", fn), before, after, args, repeats, rounds)


if __name__ == "__main__":
    main()
