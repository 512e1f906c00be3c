"""The linear-algebra primitives the cpu backend lowers to batched LAPACK calls
(backends/llvm/lapack.py) against the same jit function with the equation run by the
interpreter (NumPy/SciPy for the one equation: the backend before the lowering) and
against NumPy/SciPy called directly, in one process, interleaved.

Run from the repository root: ``python benchmarks/lapack.py [--quick]``. Medians over
rounds of medians; ratios against NumPy/SciPy.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.linalg
from _timing import median_rounds, report, result
from functorch_core.backends.llvm import lapack_steps, runtime

import functorch_core as fc
import functorch_core.scipy.linalg as fsl


def _workloads(quick):
    rng = np.random.default_rng(1)
    nb = 512 if quick else 2048
    batch = rng.normal(size=(1000, 32, 32)) + 32 * np.eye(32)
    rhs = rng.normal(size=(1000, 32, 1))
    spd = rng.normal(size=(nb, nb))
    spd = spd @ spd.T + nb * np.eye(nb)
    mid = rng.normal(size=(512, 512)) + 20 * np.eye(512)

    def tri(a, b):
        return scipy.linalg.solve_triangular(a, b, lower=True, check_finite=False)
    return {
        "solve 1000 x 32x32": (np.linalg.solve, np.linalg.solve, (batch, rhs)),
        f"cholesky {nb}^2": (np.linalg.cholesky, np.linalg.cholesky, (spd,)),
        "cholesky 1000 x 32x32": (np.linalg.cholesky, np.linalg.cholesky,
                                  (batch @ batch.transpose(0, 2, 1),)),
        "det 1000 x 32x32": (np.linalg.det, np.linalg.det, (batch,)),
        "slogdet 512^2": (np.linalg.slogdet, np.linalg.slogdet, (mid,)),
        "lu_factor 1000 x 32x32": (fsl.lu_factor,
                                   lambda a: scipy.linalg.lu_factor(a, check_finite=False),
                                   (batch,)),
        "lu_factor 512^2": (fsl.lu_factor,
                            lambda a: scipy.linalg.lu_factor(a, check_finite=False), (mid,)),
        "solve_triangular 1000 x 32x32": (lambda a, b: fsl.solve_triangular(a, b, lower=True),
                                          tri, (np.tril(batch), rhs)),
        f"solve_triangular {nb}^2 x 64": (lambda a, b: fsl.solve_triangular(a, b, lower=True),
                                          tri, (np.tril(spd), rng.normal(size=(nb, 64)))),
    }


def jit_lapack(fn, args, native):
    """``fn`` jitted with its LAPACK equations lowered (``native``) or interpreted."""
    real = lapack_steps.lowering_gap
    if not native:
        lapack_steps.lowering_gap = lambda eqn: "benchmark: the interpreter's LAPACK call"
    try:
        runtime.clear_cache()
        f = fc.jit(fn)
        f(*args)
    finally:
        lapack_steps.lowering_gap = real
        runtime.clear_cache()
    return f


def time_against(title, reference, before, after, args, repeats, rounds):
    """Time ``reference`` (``(name, function)``) and the jitted function with the
    interpreter's LAPACK call (``before``) and the native one (``after``); print the table
    and the result line."""
    name, ref = reference
    runs = {name: ref, "jit, interpreter's call": before, "jit, native LAPACK": after}
    rows = median_rounds({k: lambda f=f, a=args: f(*a) for k, f in runs.items()},
                         repeats, rounds)
    report(title, rows, name)
    result(title, rows["jit, native LAPACK"], numpy=rows[name])


def main():
    quick = "--quick" in sys.argv
    rounds, repeats = (2, 3) if quick else (5, 5)
    for title, (fn, ref, args) in _workloads(quick).items():
        before, after = jit_lapack(fn, args, False), jit_lapack(fn, args, True)
        time_against(title, ("NumPy/SciPy", ref), before, after, args, repeats, rounds)


if __name__ == "__main__":
    main()
