"""The cost of the runtime bounds check of traced indices (``fc.config.check_bounds``).

Run from the repository root: ``python3 benchmarks/bounds_check.py [--quick]``.
Workloads: an embedding lookup ``F.embedding(idx, table)`` of a (10000, 64) float32 table
(4096 and 256 indices), its gradient in the table (a scatter-add of the cotangent rows),
and a gather-heavy row shuffle ``x[idx] * 2`` of a (1M,) float64 vector with 1M indices.
Each is jitted twice, traced with the check (the default) and without it (clamping), and
timed in one process by rounds (medians of medians); NumPy's ``table[idx]`` is the peer.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_rounds, report, result

import functorch_core as fc
import functorch_core.nn.functional as F


def _jitted(fn, check):
    """``jit(fn)`` traced (by a first call elsewhere) under ``check_bounds=check``."""
    def run(*args):
        saved = fc.config.check_bounds
        fc.config.check_bounds = check
        try:
            return f(*args)
        finally:
            fc.config.check_bounds = saved
    f = fc.jit(fn)
    return run


def workloads(rng):
    table = rng.standard_normal((10000, 64)).astype(np.float32)
    vec = rng.standard_normal(1 << 20)
    loss = lambda w, i: F.embedding(i, w).sum()      # noqa: E731
    return [
        ("embedding 4096 x 64", lambda w, i: F.embedding(i, w), table,
         rng.integers(0, 10000, 4096), lambda w, i: w[i]),
        ("embedding 256 x 64", lambda w, i: F.embedding(i, w), table,
         rng.integers(0, 10000, 256), lambda w, i: w[i]),
        ("embedding grad 4096 x 64", fc.grad(loss), table, rng.integers(0, 10000, 4096), None),
        ("shuffle 1M float64", lambda x, i: x[i] * 2.0, vec,
         rng.permutation(1 << 20), lambda x, i: x[i] * 2.0),
    ]


def _runs(fn, x, idx, ref):
    """The timed calls of one workload (after checking both jitted versions agree)."""
    checked, unchecked = _jitted(fn, True), _jitted(fn, False)
    np.testing.assert_array_equal(unchecked(x, idx), checked(x, idx))
    runs = {"check_bounds=True": lambda: checked(x, idx),
            "check_bounds=False": lambda: unchecked(x, idx)}
    if ref is not None:
        runs["NumPy"] = lambda: ref(x, idx)
    return runs


def main():
    quick = "--quick" in sys.argv
    repeats, rounds = (5, 3) if quick else (15, 7)
    rng = np.random.default_rng(0)
    for name, fn, x, idx, ref in workloads(rng):
        t = median_rounds(_runs(fn, x, idx, ref), repeats, rounds)
        report(f"{name} (median of {rounds} rounds of {repeats})", t,
               baseline="check_bounds=False")
        print(f"  check cost: {100 * (t['check_bounds=True'] / t['check_bounds=False'] - 1):+.1f}%")
        result(f"bounds check: {name}", t["check_bounds=True"], numpy=t.get("NumPy"))
        result(f"no bounds check: {name}", t["check_bounds=False"], numpy=t.get("NumPy"))


if __name__ == "__main__":
    main()
