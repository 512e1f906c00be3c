"""Fused elementwise chain and per-call overhead: NumPy vs jit(interpreter) vs jit(cpu).

Run from the repository root: ``python3 benchmarks/fused_elementwise.py``.
Prints the median of repeats for each variant and the ratios, in one process.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import functorch_core as fc
import functorch_core.numpy as fnp
from benchmarks._timing import loop_time, optional_import, result


def chain(x):
    return fnp.tanh(0.5 * x + 1) * (1 / (1 + fnp.exp(-x))) + fnp.exp(-x ** 2)


def chain_numpy(x):
    return np.tanh(0.5 * x + 1) * (1 / (1 + np.exp(-x))) + np.exp(-x ** 2)


def _jax_rows(x, t_cpu):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("  JAX jit         not installed")
        return None
    f = jax.jit(lambda x: jnp.tanh(0.5 * x + 1) * jax.nn.sigmoid(x) + jnp.exp(-x ** 2))
    t = t_jax = loop_time(lambda a: jax.block_until_ready(f(a)), x, 7)
    print(f"  JAX jit         {t * 1e3:8.2f} ms   (jit cpu is {t_cpu / t:.2f}x JAX's time)")
    g = jax.jit(lambda x: x + 1.0)
    small = np.ones(4, np.float32)
    t = loop_time(lambda a: g(a).block_until_ready(), small, 9, inner=2000)
    print(f"  JAX per-call jit(lambda x: x + 1.0), f32[4]: {t * 1e6:.2f} us")
    return t_jax


def _torch_time(x):
    torch = optional_import("torch")
    if torch is None:
        return None
    xt = torch.from_numpy(x)
    t = loop_time(lambda a: torch.tanh(0.5 * a + 1) * torch.sigmoid(a) + torch.exp(-a ** 2),
                    xt, 7)
    print(f"  torch eager     {t * 1e3:8.2f} ms")
    return t


def main():
    n = 1 << 24
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    cpu, interp = fc.jit(chain, backend="cpu"), fc.jit(chain, backend="interpreter")
    t0 = time.perf_counter()
    cpu(x)
    compile_s = time.perf_counter() - t0
    err = np.max(np.abs(cpu(x) - chain_numpy(x)))
    t_np = loop_time(chain_numpy, x, 7)
    t_int = loop_time(interp, x, 7)
    t_cpu = loop_time(cpu, x, 7)
    print(f"tanh(0.5x+1)*sigmoid(x)+exp(-x^2), {n} float32 (median of 7)")
    print(f"  numpy           {t_np * 1e3:8.2f} ms")
    print(f"  jit interpreter {t_int * 1e3:8.2f} ms   ({t_int / t_np:.2f}x numpy)")
    print(f"  jit cpu         {t_cpu * 1e3:8.2f} ms   ({t_cpu / t_np:.2f}x numpy, "
          f"{t_int / t_cpu:.2f}x faster than interpreter)")
    from functorch_core.backends.llvm import runtime, threads
    workers, threads.workers = threads.workers, 1     # same kernel, one thread
    runtime._CACHE.clear()
    t_one = loop_time(fc.jit(chain, backend="cpu"), x, 7)
    threads.workers = workers
    print(f"  jit cpu 1 thread {t_one * 1e3:8.2f} ms   ({t_one / t_np:.2f}x numpy; "
          f"{workers} workers above)")
    print(f"  cpu first call (trace+compile+run) {compile_s * 1e3:.1f} ms, "
          f"max |cpu - numpy| = {err:.2e}")
    t_jax = _jax_rows(x, t_cpu)
    result("fused tanh(0.5x+1)*sigmoid(x)+exp(-x^2), 16M f32", t_cpu, numpy=t_np, jax=t_jax,
           torch=_torch_time(x))

    small = np.ones(4, np.float32)
    for name in ("cpu", "interpreter"):
        f = fc.jit(lambda x: x + 1.0, backend=name)
        t = loop_time(f, small, 9, inner=2000)
        print(f"per-call overhead jit(lambda x: x + 1.0), f32[4], backend={name}: "
              f"{t * 1e6:.2f} us")
        (entry,) = f.cache.values()      # the backend's own share: compiled run(list)
        t = loop_time(entry.run, [small], 9, inner=2000)
        print(f"  of which the compiled executable itself: {t * 1e6:.2f} us")
    t = loop_time(lambda a: a + 1.0, small, 9, inner=2000)
    print(f"  numpy x + 1.0 on f32[4]: {t * 1e6:.2f} us")


if __name__ == "__main__":
    main()
