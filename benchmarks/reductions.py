"""Float reductions: jit(cpu) vs NumPy, time and error against a float64 reference.

Run from the repository root: ``python3 benchmarks/reductions.py [--quick]``.
Prints the median of repeats for each workload, the ratio to NumPy and each one's
relative error against the float64 sum, in one process; then reductions over axis 0 of
strided arguments (a transposed, a column-stepped and a row-reversed (4096, 4096) float32
view, passed as they are): NumPy, jit, eager ``functorch_core.numpy`` and, when JAX is
importable, ``jax.jit`` on the same view (JAX copies it onto its device first).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import functorch_core as fc
import functorch_core.numpy as fnp
from benchmarks._timing import median_time


def _rel(value, ref):
    return float(np.max(np.abs(np.asarray(value, np.complex128) - ref)) / np.max(np.abs(ref)))


def main():
    quick = "--quick" in sys.argv
    n = 1 << (22 if quick else 24)
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    square = x.reshape(1 << (n.bit_length() // 2), -1)
    z = (x[: n // 2] + 1j * x[n // 2:]).astype(np.complex64)
    workloads = [
        ("sum f32 (whole array)", fnp.sum, np.sum, x),
        ("mean f32 (whole array)", fnp.mean, np.mean, x),
        ("sum(x*x) f32 (fused)", lambda a: fnp.sum(a * a), lambda a: np.sum(a * a), x),
        ("sum f32 axis=1 (rows)", lambda a: fnp.sum(a, axis=1),
         lambda a: np.sum(a, axis=1), square),
        ("sum f32 axis=0 (columns)", lambda a: fnp.sum(a, axis=0),
         lambda a: np.sum(a, axis=0), square),
        ("sum c64 (whole array)", fnp.sum, np.sum, z),
    ]
    print(f"{'workload':<28} {'numpy ms':>9} {'jit ms':>9} {'ratio':>7} "
          f"{'numpy err':>10} {'jit err':>10}")
    for name, f, g, a in workloads:
        jf = fc.jit(f)
        ref = g(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        t_np = median_time(lambda g=g, a=a: g(a), repeats=9)
        t_jit = median_time(lambda jf=jf, a=a: jf(a), repeats=9)
        print(f"{name:<28} {t_np * 1e3:9.2f} {t_jit * 1e3:9.2f} {t_jit / t_np:6.2f}x "
              f"{_rel(g(a), ref):10.1e} {_rel(jf(a), ref):10.1e}")
    strided(quick)


def strided(quick):
    side = 2048 if quick else 4096
    base = np.random.default_rng(1).random((side, side), dtype=np.float32)
    views = {"x.T": base.T, "x[:, ::2]": base[:, ::2], "x[::-1]": base[::-1]}
    ops = {"sum": (fnp.sum, np.sum), "mean": (fnp.mean, np.mean), "max": (fnp.max, np.max)}
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    print(f"\n{'axis 0 of a strided view':<28} {'numpy ms':>9} {'jit ms':>9} {'ratio':>7} "
          f"{'eager':>7} {'vmap':>7}" + (f" {'jax':>7}" if jax else ""))
    for (vname, a), (oname, (f, g)) in ((v, o) for v in views.items() for o in ops.items()):
        jf = fc.jit(lambda a, f=f: f(a, axis=0))
        # the same reduction as a vmap over the columns: sum of each column
        jv = fc.jit(fc.vmap(lambda c, f=f: f(c), in_axes=1))
        ref = g(a.astype(np.float64), axis=0)
        assert _rel(jf(a), ref) < 1e-5 and _rel(jv(a), ref) < 1e-5
        t_np = median_time(lambda g=g, a=a: g(a, axis=0), repeats=9)
        t_jit = median_time(lambda jf=jf, a=a: jf(a), repeats=9)
        t_eager = median_time(lambda f=f, a=a: f(a, axis=0), repeats=9)
        t_vmap = median_time(lambda jv=jv, a=a: jv(a), repeats=9)
        row = (f"{oname + ' ' + vname:<28} {t_np * 1e3:9.2f} {t_jit * 1e3:9.2f} "
               f"{t_jit / t_np:6.2f}x {t_eager / t_np:6.2f}x {t_vmap / t_np:6.2f}x")
        if jax:
            h = getattr(jnp, oname)
            jj = jax.jit(lambda a, h=h: h(a, axis=0))
            t_jax = median_time(lambda jj=jj, a=a: jj(a).block_until_ready(), repeats=9)
            row += f" {t_jax / t_np:6.2f}x"
        print(row)


if __name__ == "__main__":
    main()
