"""Per-function throughput of jit(f) for exp, tanh, sigmoid, log, log1p and expm1 on 16M values,
float32 and float64: NumPy vs jit(cpu) vs JAX jit (when importable), in one process.

Run from the repository root: ``python3 benchmarks/transcendentals.py``.
Prints the median of repeats and the ratios to NumPy and JAX.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import functorch_core as fc
import functorch_core.numpy as fnp

FUNCTIONS = {
    "exp": (fnp.exp, np.exp),
    "tanh": (fnp.tanh, np.tanh),
    "sigmoid": (lambda x: 1 / (1 + fnp.exp(-x)), lambda x: 1 / (1 + np.exp(-x))),
    "log": (fnp.log, np.log),
    "log1p": (fnp.log1p, np.log1p),
    "expm1": (fnp.expm1, np.expm1),
}
POSITIVE = {"log", "log1p"}     # these get |x|


def median_time(fn, arg, repeats=7):
    fn(arg)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _jax_functions():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    table = {"exp": jnp.exp, "tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid, "log": jnp.log,
             "log1p": jnp.log1p, "expm1": jnp.expm1}
    return {name: (lambda f: lambda a: jax.block_until_ready(f(a)))(jax.jit(fn))
            for name, fn in table.items()}


def main():
    n = 1 << 24
    jax_fns = _jax_functions()
    if jax_fns is None:
        print("JAX not installed: no JAX column")
    print(f"{n} values, median of 7; ratio = time / other's time")
    print(f"{'':16} {'numpy ms':>9} {'jit cpu ms':>10} {'JAX ms':>8} {'cpu/numpy':>9} "
          f"{'cpu/JAX':>8}")
    for dtype in (np.float32, np.float64):
        x = (np.random.default_rng(0).standard_normal(n) * 3).astype(dtype)
        for name, (ours, numpys) in FUNCTIONS.items():
            arg = np.abs(x) if name in POSITIVE else x
            t_np = median_time(numpys, arg)
            t_cpu = median_time(fc.jit(ours, backend="cpu"), arg)
            t_jax = median_time(jax_fns[name], arg) if jax_fns else float("nan")
            print(f"{name + ' ' + np.dtype(dtype).name:16} {t_np * 1e3:9.2f} {t_cpu * 1e3:10.2f} "
                  f"{t_jax * 1e3:8.2f} {t_cpu / t_np:9.2f} {t_cpu / t_jax:8.2f}")


if __name__ == "__main__":
    main()
