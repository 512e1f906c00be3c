"""Stable sorts: NumPy ``kind="stable"`` vs jit(cpu)'s native sort (and JAX/torch if present).

Run from the repository root: ``python3 benchmarks/sort.py [--quick]``.
Prints the median of repeats for each variant and the ratio to NumPy, in one process.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, optional_import, report, result

import functorch_core as fc
import functorch_core.numpy as fnp


def cases(rng):
    big = rng.standard_normal(1_000_000).astype(np.float32)
    square = rng.standard_normal((1000, 1000)).astype(np.float32)
    ints = rng.integers(0, 1000, 1_000_000).astype(np.int32)
    return [
        ("sort 1M float32", "sort", big, -1),
        ("argsort (1000, 1000) float32, last axis", "argsort", square, -1),
        ("argsort (1000, 1000) float32, axis 0", "argsort", square, 0),
        ("sort 1M int32 (1000 distinct)", "sort", ints, -1),
    ]


def main():
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
    rng = np.random.default_rng(0)
    jax, torch = optional_import("jax"), optional_import("torch")
    for title, op, x, axis in cases(rng):
        rows = {}
        rows["numpy (kind='stable')"] = median_time(
            lambda op=op, x=x, axis=axis: getattr(np, op)(x, axis=axis, kind="stable"),
            repeats)
        f = fc.jit(lambda a, op=op, axis=axis: getattr(fnp, op)(a, axis=axis))
        got, want = f(x), getattr(np, op)(x, axis=axis, kind="stable")
        if not np.array_equal(got, want):
            sys.exit(f"{title}: jit(cpu) disagrees with NumPy")
        rows["jit(cpu)"] = median_time(lambda f=f, x=x: f(x), repeats)
        if jax is not None:
            import jax.numpy as jnp
            g = jax.jit(lambda a, op=op, axis=axis: getattr(jnp, op)(a, axis=axis, stable=True))
            xj = jnp.asarray(x)
            rows["JAX jit"] = median_time(lambda g=g, xj=xj: g(xj).block_until_ready(), repeats)
        if torch is not None:
            xt = torch.from_numpy(x)
            if op == "sort":
                def t(xt=xt, axis=axis):
                    return torch.sort(xt, dim=axis, stable=True)
            else:
                def t(xt=xt, axis=axis):
                    return torch.argsort(xt, dim=axis, stable=True)
            rows["torch"] = median_time(t, repeats)
        report(title, rows, "numpy (kind='stable')")
        result(title, rows["jit(cpu)"], numpy=rows["numpy (kind='stable')"],
               jax=rows.get("JAX jit"), torch=rows.get("torch"))


if __name__ == "__main__":
    main()
