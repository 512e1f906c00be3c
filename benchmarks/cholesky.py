"""A big cholesky under jit: the blocked factorization over the runtime's threads
(backends/llvm/blocked_cholesky.py) against OpenBLAS's own threaded ?potrf in the same
step (lapack.BLOCKED_MIN_N raised for the call), NumPy, JAX and torch, interleaved in one
process, for tuning BLOCKED_MIN_N, BLOCK and COLS. Wall and CPU time (all threads): a
busy machine shows in the first, spinning threads in the second.

Run from the repository root: ``python benchmarks/cholesky.py [--quick]``. Medians over
rounds of medians.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import optional_import
from functorch_core.backends.llvm import lapack, runtime

import functorch_core as fc


def _times(fn, repeats):
    """Median (wall, cpu) seconds per call after one warm-up call."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return np.median(wall), np.median(cpu)


def _potrf(f, blocked_min_n):
    def run(a):
        saved, lapack.BLOCKED_MIN_N = lapack.BLOCKED_MIN_N, blocked_min_n
        try:
            return f(a)
        finally:
            lapack.BLOCKED_MIN_N = saved
    return run


def _peers(jax, torch, spd):
    """The peers' calls on ``spd`` (none for a peer not installed)."""
    fns = {}
    if jax is not None:
        jc, dev = jax.jit(jax.numpy.linalg.cholesky), jax.numpy.asarray(spd)
        fns["JAX jit"] = lambda: jc(dev).block_until_ready()
    if torch is not None:
        t = torch.from_numpy(spd)
        fns["torch"] = lambda: torch.linalg.cholesky(t)
    return fns


def main():
    quick = "--quick" in sys.argv
    sizes, rounds, repeats = ((256, 512, 1024), 2, 3) if quick else ((512, 1024, 2048), 3, 5)
    jax, torch = optional_import("jax"), optional_import("torch")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.normal(size=(n, n))
        spd = a @ a.T + n * np.eye(n)
        # one jit each, compiled under its own setting (the plan fixes the path; the
        # cpu backend's cache of compiled graphs is cleared between the two)
        blocked = _potrf(fc.jit(np.linalg.cholesky), min(n, lapack.BLOCKED_MIN_N))
        potrf = _potrf(fc.jit(np.linalg.cholesky), n + 1)
        want = np.linalg.cholesky(spd)
        for f in (blocked, potrf):
            runtime.clear_cache()
            np.testing.assert_allclose(f(spd), want, rtol=1e-10,
                                       atol=1e-10 * np.abs(want).max())
        fns = {"functorch_core jit, blocked": lambda b=blocked, x=spd: b(x),
               "functorch_core jit, OpenBLAS potrf": lambda p=potrf, x=spd: p(x),
               "NumPy": lambda x=spd: np.linalg.cholesky(x), **_peers(jax, torch, spd)}
        got = {k: [] for k in fns}
        for _ in range(rounds):
            for k, fn in fns.items():
                got[k].append(_times(fn, repeats))
        print(f"\ncholesky {n}^2 float64 (load {os.getloadavg()[0]:.1f})")
        for k, v in got.items():
            wall, cpu = np.median(np.array(v), axis=0)
            print(f"  {k:<38} {1e3 * wall:10.2f} ms wall {1e3 * cpu:10.2f} ms cpu")


if __name__ == "__main__":
    main()
