"""First-call latency of jit(vmap(grad(mlp_loss))) in fresh processes, with and without
the cpu backend's disk cache, and JAX's first call when JAX is installed.

Each row runs in a new interpreter (nothing compiled or imported before), batch 256 of
the transforms benchmark's MLP 784-512-512-10:
  cold  an empty cache folder: trace, transform, simplify, partition, LLVM compile, run;
  warm  a second process on the folder the cold run filled: the object code is loaded;
  JAX   jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))), its persistent
        compilation cache left off (its default).
``first`` is the first call, ``steady`` the fastest of the next calls and ``overhead``
their difference (what the first call costs beyond running: tracing, compiling, lazy
imports, first-touch of buffers, thread start-up); ``sys`` is the kernel CPU time of
the first call: mostly page faults on the ~700 MB of fresh results, cheap when the
kernel has free huge pages at hand and up to ~1 s when it must compact memory for them
first (it varies between identical processes; compare it before reading ``first``);
``compile`` is the part spent in
jit's compile step (trace, transforms, simplify, partition, LLVM or the disk cache).
Medians over repeats. The phases split that step (nested: "LLVM optimize" is part of
"LLVM optimize + codegen/load", which is part of "backend compile").

    python benchmarks/first_call.py [--quick]
"""

import json
import os
import resource
import sys
import tempfile
import time

import _results
import numpy as np
from _timing import result

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUICK = "--quick" in sys.argv
REPEATS = 1 if QUICK else 3
STEADY_CALLS = 3


def inputs(rng, batch=256):
    from transforms import mlp_params
    params = mlp_params(rng)
    xs = rng.normal(size=(batch, 784)).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return params, xs, ys


def _timed(phases, owner, name, label):
    """Replace ``owner.name`` by a wrapper adding its run time to ``phases[label]``."""
    fn = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - t0
    setattr(owner, name, wrapper)


def child_functorch_core(t_start):
    from functorch_core.backends.llvm import cache, engine, kernels, runtime
    from functorch_core.ir import passes
    from transforms import mlp_loss

    import functorch_core as fc
    from functorch_core import api
    t_import = time.perf_counter() - t_start

    phases = {}
    _timed(phases, api.Jitted, "_compile", "jit compile, all steps")
    _timed(phases, api, "trace_call", "trace + vmap/grad")
    _timed(phases, passes, "simplify", "simplify")
    _timed(phases, runtime, "partition", "partition")
    _timed(phases, kernels, "build_module", "emit IR")
    _timed(phases, engine, "optimize", "LLVM optimize")
    _timed(phases, engine, "add_module", "LLVM optimize + codegen/load")
    _timed(phases, runtime, "Executable", "backend compile")
    params, xs, ys = inputs(np.random.default_rng(0))
    f = fc.jit(fc.vmap(fc.grad(mlp_loss), in_dims=(None, 0, 0)), backend="cpu")
    first, steady, first_sys = _first_and_steady(lambda: f(params, xs, ys))
    return dict(import_s=t_import, first=first, steady=steady, first_sys=first_sys, phases=phases,
                cache=dict(cache.stats))


def child_jax(t_start):
    import jax
    import jax.numpy as jnp
    t_import = time.perf_counter() - t_start

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        logits = x @ w + b
        m = jnp.max(logits)
        return jnp.log(jnp.sum(jnp.exp(logits - m))) + m - jnp.sum(logits * y)

    params, xs, ys = inputs(np.random.default_rng(0))
    f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    first, steady, first_sys = _first_and_steady(
        lambda: jax.block_until_ready(f(params, xs, ys)))
    return dict(import_s=t_import, first=first, steady=steady, first_sys=first_sys)


def _first_and_steady(call):
    sys0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    t0 = time.perf_counter()
    call()
    first = time.perf_counter() - t0
    first_sys = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
    times = []
    for _ in range(STEADY_CALLS):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return first, min(times), first_sys


def run_child(kind, cache_dir):
    return _results.json_child(__file__, [kind], cache_dir, 600, OPENBLAS_NUM_THREADS="2")


def main():
    rows = {"functorch_core, empty disk cache": [], "functorch_core, warm disk cache": []}
    if _results.installed("jax"):
        rows["JAX, first process"] = []
    for _ in range(REPEATS):
        with tempfile.TemporaryDirectory(prefix="fc-first-call-") as cache_dir:
            cold = run_child("fc", cache_dir)
            warm = run_child("fc", cache_dir)
        assert cold["cache"].get("compiled") and warm["cache"].get("hits"), (cold, warm)
        assert not warm["cache"].get("compiled"), warm
        rows["functorch_core, empty disk cache"].append(cold)
        rows["functorch_core, warm disk cache"].append(warm)
        if "JAX, first process" in rows:
            rows["JAX, first process"].append(run_child("jax", ""))

    def med(runs, field):
        return float(np.median([r[field] for r in runs]))

    print("\nfirst call of jit(vmap(grad(mlp_loss))), MLP 784-512-512-10, batch 256, float32;"
          f" fresh processes, medians of {REPEATS}")
    print(f"  {'':34} {'import':>9} {'first':>9} {'sys':>9} {'steady':>9} {'overhead':>9} "
          f"{'compile':>9}")
    overheads = {}
    for name, runs in rows.items():
        over = float(np.median([r["first"] - r["steady"] for r in runs]))
        overheads[name] = over
        compile_s = [r["phases"]["jit compile, all steps"] for r in runs if "phases" in r]
        compiled = f"{np.median(compile_s):8.3f}s" if compile_s else f"{'-':>9}"
        print(f"  {name:<34} {med(runs, 'import_s'):8.3f}s {med(runs, 'first'):8.3f}s "
              f"{med(runs, 'first_sys'):8.3f}s {med(runs, 'steady'):8.3f}s {over:8.3f}s "
              f"{compiled}")
    cold, warm = (overheads[k] for k in list(rows)[:2])
    print(f"  overhead, warm / empty cache: {warm / cold:.2f}x")
    if "JAX, first process" in overheads:
        jax_over = overheads["JAX, first process"]
        print(f"  overhead vs JAX's: empty cache {cold / jax_over:.2f}x, "
              f"warm cache {warm / jax_over:.2f}x")
        jax_first = med(rows["JAX, first process"], "first")
        cold_first, warm_first = (med(rows[k], "first") for k in list(rows)[:2])
        print(f"  first call vs JAX's: empty cache {cold_first / jax_first:.2f}x, "
              f"warm cache {warm_first / jax_first:.2f}x")
    jax_first = med(rows["JAX, first process"], "first") if "JAX, first process" in rows else None
    for name, label in zip(list(rows)[:2], ("empty cache", "warm cache"), strict=True):
        compile_s = float(np.median([r["phases"]["jit compile, all steps"] for r in rows[name]]))
        result(f"first call jit(vmap(grad)) MLP, {label}: compile", compile_s)
        result(f"first call jit(vmap(grad)) MLP, {label}: whole call", med(rows[name], "first"),
               jax=jax_first)
    for name in list(rows)[:2]:
        phases = rows[name][0]["phases"]
        print(f"\n  phases of the first call, {name} (first repeat):")
        for label, t in phases.items():
            print(f"    {label:<30} {1e3 * t:8.1f} ms")


if __name__ == "__main__":
    if "--child" in sys.argv:
        start = time.perf_counter()
        kind = sys.argv[sys.argv.index("--child") + 1]
        result = child_functorch_core(start) if kind == "fc" else child_jax(start)
        print(json.dumps(result))
    else:
        main()
