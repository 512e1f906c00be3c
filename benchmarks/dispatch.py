"""Per-call dispatch overhead of a cached jit call, against NumPy, JAX and torch.

Run from the repository root: ``python benchmarks/dispatch.py`` (JAX and torch rows
appear when they are installed). Every row is the median over repeats of a timed
loop of calls, in one process, so the ratios compare like with like on a noisy host.

Three workloads: ``x + 1.0`` on f32[4] (pure overhead: one tiny kernel), a
multi-output graph of a few small ops on f32[16] (several kernels, three results),
and a small two-layer network called as ``f(params, x)`` with a dict of four
weight arrays (the pytree call of a training or inference loop). The "profiler on"
rows are calls made inside ``functorch_core.profiler.profile()``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import functorch_core as fc
from benchmarks._timing import loop_time, optional_import, result

INNER = 2000       # calls per timed loop
REPEATS = 15


def per_call(fn, arg):
    """Median seconds per call of ``fn(arg)``."""
    return loop_time(fn, arg, REPEATS, INNER, warmup=50)


def add_one(x):
    return x + 1.0


def several(x):
    y = x * 2.0 - 1.0
    return y.sum(), np.maximum(y, 0.0), x * x.max()


def layers(p, x):
    return np.tanh(x @ p["w"] + p["b"]) @ p["v"] + p["c"]


def make_params():
    rng = np.random.default_rng(0)
    shapes = {"w": (8, 16), "b": (16,), "v": (16, 4), "c": (4,)}
    params = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    return params, rng.standard_normal((2, 8)).astype(np.float32)


def _jax_rows(rows, x):
    jax = optional_import("jax")
    if jax is None:
        rows["jax jit"] = rows["jax jit (several)"] = rows["jax jit (params dict)"] = None
        return
    import jax.numpy as jnp
    f = jax.jit(lambda x: x + 1.0)
    g = jax.jit(lambda x: (jnp.sum(x * 2.0 - 1.0), jnp.maximum(x * 2.0 - 1.0, 0.0),
                           x * jnp.max(x)))
    rows["jax jit"] = per_call(lambda a: f(a).block_until_ready(), x[0])
    rows["jax jit (several)"] = per_call(lambda a: jax.block_until_ready(g(a)), x[1])
    h = jax.jit(lambda p, x: jnp.tanh(x @ p["w"] + p["b"]) @ p["v"] + p["c"])
    params, inputs = x[2]
    jp = ({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(inputs))
    rows["jax jit (params dict)"] = per_call(lambda a: h(*a).block_until_ready(), jp)


def _torch_rows(rows, x):
    torch = optional_import("torch")
    if torch is None:
        rows["torch eager"] = rows["torch eager (several)"] = None
        rows["torch eager (params dict)"] = None
        return
    t4, t16 = torch.from_numpy(x[0]), torch.from_numpy(x[1])
    rows["torch eager"] = per_call(lambda a: a + 1.0, t4)
    rows["torch eager (several)"] = per_call(
        lambda a: ((a * 2.0 - 1.0).sum(), torch.clamp_min(a * 2.0 - 1.0, 0.0), a * a.max()),
        t16)
    params, inputs = x[2]
    tp = ({k: torch.from_numpy(v) for k, v in params.items()}, torch.from_numpy(inputs))
    rows["torch eager (params dict)"] = per_call(
        lambda a: torch.tanh(a[1] @ a[0]["w"] + a[0]["b"]) @ a[0]["v"] + a[0]["c"], tp)


def main():
    x4 = np.ones(4, np.float32)
    x16 = np.linspace(-1, 1, 16, dtype=np.float32)
    cpu, interp = fc.jit(add_one, backend="cpu"), fc.jit(add_one, backend="interpreter")
    cpu_several = fc.jit(several, backend="cpu")
    interp_several = fc.jit(several, backend="interpreter")
    executable = next(iter(cpu.cache.values())).run if cpu(x4) is not None else None
    cpu_several(x16)
    net = make_params()
    cpu_layers = fc.jit(layers, backend="cpu")
    cpu_layers(*net)
    rows = {
        "numpy x + 1.0": per_call(add_one, x4),
        "jit cpu": per_call(cpu, x4),
        "  of which the executable": per_call(lambda a: executable.trusted([a]), x4),
        "  executable, checked call": per_call(lambda a: executable([a]), x4),
        "jit cpu, general path": per_call(lambda a: cpu._call((a,), {}, None), x4),
        "jit interpreter": per_call(interp, x4),
        "numpy (several)": per_call(several, x16),
        "jit cpu (several)": per_call(cpu_several, x16),
        "jit interpreter (several)": per_call(interp_several, x16),
        "numpy (params dict)": per_call(lambda a: layers(*a), net),
        "jit cpu (params dict)": per_call(lambda a: cpu_layers(*a), net),
        "jit cpu (params dict), general": per_call(lambda a: cpu_layers._call(a, {}, None), net),
    }
    with fc.profiler.profile():     # what a call costs while a profile records it
        rows["jit cpu, profiler on"] = per_call(cpu, x4)
        rows["jit cpu (params dict), profiler on"] = per_call(lambda a: cpu_layers(*a), net)
    _jax_rows(rows, (x4, x16, net))
    _torch_rows(rows, (x4, x16, net))
    base = rows["jit cpu"]
    print(f"per-call time, median of {REPEATS} loops of {INNER} calls "
          f"(ratio: row / jit cpu on x + 1.0)")
    for name, t in rows.items():
        if t is None:
            print(f"  {name:<32} {'not installed':>12}")
        else:
            print(f"  {name:<32} {t * 1e6:9.2f} us {t / base:8.2f}x")
    result("dispatch jit(x + 1.0), f32[4]", rows["jit cpu"], numpy=rows["numpy x + 1.0"],
           jax=rows["jax jit"], torch=rows["torch eager"], unit="us")
    result("dispatch f(params dict, x), 2-layer net", rows["jit cpu (params dict)"],
           numpy=rows["numpy (params dict)"], jax=rows["jax jit (params dict)"],
           torch=rows["torch eager (params dict)"], unit="us")


if __name__ == "__main__":
    main()
