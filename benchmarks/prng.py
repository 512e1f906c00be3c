"""16M float32 uniforms and normals: jit(cpu) over threefry2x32 vs NumPy's Generator, JAX.

Run from the repository root: ``python3 benchmarks/prng.py [--quick]`` (not random.py: that name
would shadow the standard library's ``random`` for scripts in this folder).
Prints the median of repeats for each variant and the ratio to NumPy (PCG64
``Generator.random`` / ``standard_normal`` with ``dtype=float32``), in one process.
The generators differ (NumPy: PCG64 and ziggurat normals; JAX and functorch_core:
Threefry-2x32 and erfinv normals), so this compares cost, not numbers; functorch_core's
numbers equal JAX's for the same key (uniforms bit for bit).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, optional_import, report

import functorch_core as fc
from functorch_core import random as R

N = 1 << 24


def main():
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
    jax = optional_import("jax")
    gen = np.random.default_rng(0)
    key = R.key(0)
    for name, np_fn, fc_fn in [
        ("uniform", lambda: gen.random(N, dtype=np.float32),
         lambda k: R.uniform(k, (N,), np.float32)),
        ("normal", lambda: gen.standard_normal(N, dtype=np.float32),
         lambda k: R.normal(k, (N,), np.float32)),
    ]:
        rows = {"numpy Generator (PCG64)": median_time(np_fn, repeats)}
        f = fc.jit(fc_fn)
        rows["functorch_core jit(cpu)"] = median_time(lambda f=f: f(key), repeats)
        if jax is not None:
            jr = jax.random
            g = jax.jit(lambda k, name=name, jr=jr: getattr(jr, name)(k, (N,), np.float32))
            kj = jr.PRNGKey(0)
            if name == "uniform" and not np.array_equal(np.asarray(g(kj)), f(key)):
                sys.exit("uniform: functorch_core and JAX disagree for the same key")
            rows["JAX jit"] = median_time(lambda g=g, kj=kj: g(kj).block_until_ready(), repeats)
        report(f"{name}: {N} float32", rows, "numpy Generator (PCG64)")


if __name__ == "__main__":
    main()
