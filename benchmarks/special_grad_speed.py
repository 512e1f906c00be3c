"""The shape-parameter derivatives under ``jit``: ``grad`` of ``sum(gammainc(a, x))`` in ``a``
and of ``sum(betainc(a, b, x))`` in ``a`` and ``b``, native (cpu backend: the loops of
backends/llvm/special_grads.py) against the NumPy series and fractions they replace
(backends/interpreter/igamma_grad.py, backends/interpreter/betainc_grad.py, here through the
interpreter backend, the path these equations took before) and JAX's gammainc gradient when
importable (JAX has none for betainc in ``a``, ``b``), all in one process.

Run from the repository root: ``python benchmarks/special_grad_speed.py [--n N]
[--dtype float64|float32] [--repeats R]``. Medians of repeats (ms; the NumPy path is timed
once); ``numpy/ours`` above 1 means faster than the NumPy path.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, optional_import

import functorch_core as fc
import functorch_core.scipy.special as S


def _cases(n, dtype):
    """name -> (function of the differentiated arguments, those arguments, jax version)."""
    r = np.random.default_rng(0)
    a, x = np.exp(r.uniform(np.log(1e-3), np.log(1e3), (2, n))).astype(dtype)
    p, q = np.exp(r.uniform(np.log(0.1), np.log(50), (2, n))).astype(dtype)
    u = r.uniform(0, 1, n).astype(dtype)

    def gammainc_grad(a):
        return fc.grad(lambda a: fc.numpy.sum(S.gammainc(a, x)))(a)

    def betainc_grad(p, q):
        return fc.grad(lambda p, q: fc.numpy.sum(S.betainc(p, q, u)), argnums=(0, 1))(p, q)

    def jax_gammainc(jax, js):
        xj = jax.numpy.asarray(x)
        return jax.jit(jax.grad(lambda a: js.gammainc(a, xj).sum()))

    return {"grad gammainc in a": (gammainc_grad, (a,), jax_gammainc),
            "grad betainc in a, b": (betainc_grad, (p, q), None)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, help="values (default 2**20; --quick: 2**14)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dtype", choices=("float64", "float32"), action="append")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    args.n = args.n or (1 << (14 if args.quick else 20))
    jax = optional_import("jax")
    js = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        import jax.scipy.special as js
    print(f"{args.n} values, median of {args.repeats} (ms; numpy: one call)")
    print(f"{'':32} {'ours':>8} {'numpy':>9} {'jax':>8} {'numpy/ours':>10} {'jax/ours':>9}")
    for dtype in args.dtype or ("float64", "float32"):
        for name, (f, xs, jax_version) in _cases(args.n, dtype).items():
            ours, before = fc.jit(f, backend="cpu"), fc.jit(f, backend="interpreter")
            t_ours = median_time(lambda f=ours, xs=xs: f(*xs), repeats=args.repeats)
            # one call: tens of seconds at 1M values, its tracing a few ms of that
            t_np = median_time(lambda f=before, xs=xs: f(*xs), repeats=1, warmup=0)
            t_jax = float("nan")
            if js is not None and jax_version is not None:
                jf, jxs = jax_version(jax, js), [jax.numpy.asarray(v) for v in xs]
                t_jax = median_time(lambda f=jf, xs=jxs: jax.block_until_ready(f(*xs)),
                                    repeats=args.repeats)
            print(f"{name + ' ' + dtype:32} {t_ours * 1e3:8.1f} {t_np * 1e3:9.1f} "
                  f"{t_jax * 1e3:8.1f} {t_np / t_ours:10.2f} {t_jax / t_ours:9.2f}", flush=True)


if __name__ == "__main__":
    main()
