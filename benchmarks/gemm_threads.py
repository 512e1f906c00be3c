"""Big products split over the runtime's threads (OpenBLAS at one thread each) against
OpenBLAS's own threads, on a quiet machine and under a background load.

Run from the repository root: ``python3 benchmarks/gemm_threads.py [--quick]``.
For each product (square 256/1024/2048 float32/float64, 64x128 @ 128x9216,
9216x64 @ 64x128, batched 64 x (32x32 @ 32x32) and 8 x (512x512 @ 512x512), float32
unless named) it times, in one process, medians of repeats:

- ``jit before``: jit(cpu) with the split turned off (one gemm call, OpenBLAS's threads),
- ``jit split``: jit(cpu) as it is (split from blas.SPLIT_MACS multiply-adds, one
  OpenBLAS thread below blas.ONE_THREAD_MACS; while the load average is above the cores,
  one OpenBLAS thread below blas.BUSY_SPLIT_MACS),
- ``NumPy @`` with OpenBLAS's threads, and ``NumPy @ 1 thread``,

first quiet, then with a busy-loop subprocess per core running beside it, and checks that
the split product has the bits of the single-thread one (a product of few rows, split into
column blocks fixed by its shape: the bits of those blocks on one thread).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _timing
from functorch_core.backends.llvm import blas, runtime, threads

import functorch_core as fc

BUSY = "while True: pass"


def _workloads(quick):
    sizes = (256, 1024) if quick else (256, 1024, 2048)
    rows = [(f"{s}^3 {np.dtype(dt).name}", (s, s), (s, s), dt)
            for s in sizes for dt in (np.float32, np.float64)]
    rows += [("64x128 @ 128x9216", (64, 128), (128, 9216), np.float32),
             ("9216x64 @ 64x128", (9216, 64), (64, 128), np.float32),
             ("64 x (32x32 @ 32x32)", (64, 32, 32), (64, 32, 32), np.float32),
             ("8 x (512x512 @ 512x512)", (8, 512, 512), (8, 512, 512), np.float32)]
    return rows


def _compiled(split, a, b):
    """jit(a @ b), compiled as it is (``split``) or as before the split (one gemm call on
    OpenBLAS's threads whatever the load)."""
    limits = blas.SPLIT_MACS, blas.ONE_THREAD_MACS, blas.OPENBLAS_THREADS_MACS
    if not split:
        blas.SPLIT_MACS = blas.ONE_THREAD_MACS = blas.OPENBLAS_THREADS_MACS = math.inf
    runtime.clear_cache()
    try:
        f = fc.jit(lambda x, y: x @ y)
        f(a, b)
    finally:
        blas.SPLIT_MACS, blas.ONE_THREAD_MACS, blas.OPENBLAS_THREADS_MACS = limits
    return f


def _on_one_runtime_thread(a, b):
    """A few-row product's column blocks (fixed by its shape, so not one gemm's bits),
    computed on one runtime thread."""
    workers = runtime.get_num_threads()
    runtime.set_num_threads(1)
    try:
        return _compiled(True, a, b)(a, b)
    finally:
        runtime.set_num_threads(workers)


def _one_thread_numpy(a, b):
    with blas.one_thread_each():
        return a @ b


def _interleaved(variants, a, b, repeats):
    """Median seconds of each ``fn(a, b)``, timed in turn within each repeat (the host's
    load drifts: this keeps the drift out of the ratios)."""
    times = {name: [] for name in variants}
    for fn in variants.values():
        fn(a, b)
    for _ in range(repeats):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn(a, b)
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def _measure(workloads, repeats):
    rng = np.random.default_rng(0)
    table = {}
    for name, ls, rs, dt in workloads:
        a, b = rng.standard_normal(ls).astype(dt), rng.standard_normal(rs).astype(dt)
        before, after = _compiled(False, a, b), _compiled(True, a, b)
        dn = (((2,), (1,)), ((0,), (0,))) if len(ls) == 3 else (((1,), (0,)), ((), ()))
        product = blas.DotGeneral(ls, rs, dt, dn, parallel=threads.pool,
                                  workers=runtime.get_num_threads())
        parts = product.parts
        if parts[0].cols is not None:
            want, of = _on_one_runtime_thread(a, b), "the same column blocks on one thread"
        else:
            with blas.one_thread_each():
                want, of = before(a, b), "one unsplit gemm"
        if product.splits(blas.busy()) and not np.array_equal(after(a, b), want):
            sys.exit(f"{name}: the split product's bits differ from {of}'s")
        reps = repeats if math.prod(ls) * rs[-1] < 1 << 32 else max(3, repeats // 2)
        variants = {"jit before": before, "jit split": after, "NumPy @": np.matmul,
                    "NumPy @ 1 thread": _one_thread_numpy}
        table[name] = {"parts": len(parts), **_interleaved(variants, a, b, reps)}
    return table


def _print(title, table):
    cols = ["jit before", "jit split", "NumPy @", "NumPy @ 1 thread"]
    print(f"\n{title} (ms, medians; last column: before / split)")
    print(f"  {'product':<26}{'parts':>6}" + "".join(f"{c:>18}" for c in cols)
          + f"{'speed-up':>10}")
    for name, row in table.items():
        cells = "".join(f"{1e3 * row[c]:18.2f}" for c in cols)
        print(f"  {name:<26}{row['parts']:6d}{cells}"
              f"{row['jit before'] / row['jit split']:9.2f}x")
        _timing.result(f"gemm {name}, {title.split(' ')[0]}", row["jit split"],
                       numpy=row["NumPy @"])


def main():
    quick = "--quick" in sys.argv
    repeats = 5 if quick else 9
    workloads = _workloads(quick)
    print(f"{os.cpu_count()} cores, {runtime.get_num_threads()} runtime threads, "
          f"split from {blas.SPLIT_MACS} multiply-adds, load average {os.getloadavg()[0]:.2f}")
    quiet = _measure(workloads, repeats)
    _print("quiet", quiet)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(os.cpu_count() or 1)]
    try:
        loaded = _measure(workloads, repeats)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    _print(f"loaded ({len(busy)} busy-loop processes)", loaded)


if __name__ == "__main__":
    main()
