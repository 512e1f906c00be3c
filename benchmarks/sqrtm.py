"""``scipy.linalg.sqrtm`` and its gradient through functorch_core jit against SciPy and JAX,
in one process.

Run from the repository root: ``python benchmarks/sqrtm.py [--quick]``. Workloads: one
general 256x256 complex matrix, a batch of 500 8x8 real ones (SPD: a real root), and the
gradient of ``sum(sqrtm(A) ** 2)`` for one 64x64 SPD matrix. Medians over repeats; ratios
against SciPy (JAX's ``jax.scipy.linalg.sqrtm``, CPU only, when importable; it has no derivative).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.linalg as sl
from _timing import median_time, optional_import, report, result

import functorch_core as fc
from functorch_core.scipy import linalg as fsl


def _workloads(rng):
    g = rng.standard_normal((256, 256)) + 1j * rng.standard_normal((256, 256))
    b = rng.standard_normal((500, 8, 8))
    spd = b @ np.swapaxes(b, -1, -2) + 8 * np.eye(8)
    c = rng.standard_normal((64, 64))
    return {"sqrtm 256^2 complex": (g,), "sqrtm 500 x 8x8 SPD": (spd,),
            "grad sum(sqrtm^2) 64^2": (c @ c.T + 64 * np.eye(64),)}


def _scipy_grad(a):
    """The gradient by SciPy's pieces: X = sqrtm(A), G = 2 X, then X^T Y + Y X^T = G."""
    x = sl.sqrtm(a)
    return sl.solve_sylvester(x.T, x.T, 2 * x)


def main(quick=False):
    repeats = 3 if quick else 7
    rng = np.random.default_rng(0)
    jax = optional_import("jax")
    ours = {"sqrtm 256^2 complex": fc.jit(fsl.sqrtm), "sqrtm 500 x 8x8 SPD": fc.jit(fsl.sqrtm),
            "grad sum(sqrtm^2) 64^2": fc.jit(fc.grad(lambda m: np.sum(fsl.sqrtm(m) ** 2)))}
    peers = {"sqrtm 256^2 complex": sl.sqrtm, "sqrtm 500 x 8x8 SPD": sl.sqrtm,
             "grad sum(sqrtm^2) 64^2": _scipy_grad}
    for name, args in _workloads(rng).items():
        peer, mine = peers[name], ours[name]
        rows = {"SciPy": median_time(lambda p=peer, a=args: p(*a), repeats),
                "functorch_core jit": median_time(lambda f=mine, a=args: f(*a), repeats)}
        rows["JAX jit"] = None
        if jax is not None and "grad" not in name:     # JAX's schur has no derivative
            jax.config.update("jax_enable_x64", True)
            f = jax.jit(jax.numpy.vectorize(jax.scipy.linalg.sqrtm, signature="(n,n)->(n,n)"))
            dev = [jax.numpy.asarray(a) for a in args]
            rows["JAX jit"] = median_time(lambda f=f, dev=dev: f(*dev).block_until_ready(),
                                          repeats)
        report(name, rows, "SciPy")
        result(name, rows["functorch_core jit"], numpy=rows["SciPy"], jax=rows["JAX jit"])


if __name__ == "__main__":
    main("--quick" in sys.argv)
