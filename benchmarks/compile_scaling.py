"""Compile cost against program size: the first call of a jitted function of n equations,
split by phase, with the peak memory of the process, and JAX's first call when JAX is
installed.

Each row runs in a fresh interpreter with an empty disk cache (FUNCTORCH_CORE_CACHE_DIR),
so nothing is compiled or cached before:
  loop    the issue's unrolled loop: ``x = tanh(x @ w); s = s + x.sum()`` per step, on a
          4x4 float64 x (4 equations a step: dot_general, tanh, reduce_sum, add);
  tanh    a chain of n ``tanh`` on 1,000 float64 values (one fused kernel of n tanh);
  concat  ``np.concatenate`` of n operands of 3 values (one equation of n operands).
Phases (seconds, nested ones marked): trace, functionalize (only for graphs that mutate),
simplify, partition, emit IR (llvmlite builder), IR text (printing it), LLVM parse,
LLVM optimize, LLVM codegen + load (MCJIT), then ``first`` the whole first call and
``us/eqn`` its microseconds per equation of the traced graph. ``RSS`` is the peak resident
memory of the child process (``ru_maxrss``). A flat us/eqn column is linear cost.

    python benchmarks/compile_scaling.py [--quick] [--kinds loop,tanh,concat] [--max N]
"""

import json
import os
import resource
import sys
import tempfile
import time

import _results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUICK = "--quick" in sys.argv
SIZES = {
    "loop": [1000, 2000, 4000, 8000, 16000, 24000, 30000],
    "tanh": [100, 200, 400, 800],
    "concat": [250, 500, 1000, 2000, 4000],
}
QUICK_SIZES = {"loop": [1000, 2000, 4000], "tanh": [100, 200], "concat": [500, 1000, 2000]}
PHASES = ("trace", "functionalize", "simplify", "partition", "emit IR", "IR text",
          "LLVM parse", "LLVM optimize", "LLVM codegen+load")


def _timed(phases, owner, name, label):
    """Replace ``owner.name`` by a wrapper adding its run time to ``phases[label]``
    (the outermost call only, for functions that recurse)."""
    fn = getattr(owner, name)
    depth = [0]

    def wrapper(*args, **kwargs):
        depth[0] += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                phases[label] = phases.get(label, 0.0) + time.perf_counter() - t0
    setattr(owner, name, wrapper)


def make(kind, n, np_):
    """(function, arguments) of ``kind`` with ``n`` steps, over the NumPy namespace ``np_``."""
    import numpy as np
    if kind == "loop":
        def f(x, w):
            s = 0.0
            for _ in range(n // 4):
                x = np_.tanh(x @ w)
                s = s + x.sum()
            return s
        return f, (np.full((4, 4), 0.1), np.eye(4) * 0.5)
    if kind == "tanh":
        def f(x):
            for _ in range(n):
                x = np_.tanh(x)
            return x
        return f, (np.linspace(-2.0, 2.0, 1000),)

    def f(*xs):
        return np_.concatenate(xs)
    return f, tuple(np.arange(3.0) + i for i in range(n))


def child_fc(kind, n):
    import numpy as np
    from functorch_core.backends.llvm import engine, kernels, runtime
    from functorch_core.ir import passes
    from llvmlite import ir as llir

    import functorch_core as fc
    from functorch_core import api
    phases = {}
    _timed(phases, api, "trace_call", "trace")
    _timed(phases, api, "functionalize_graph", "functionalize")
    _timed(phases, passes, "simplify", "simplify")
    _timed(phases, runtime, "partition", "partition")
    _timed(phases, kernels, "build_module", "emit IR")
    _timed(phases, llir.Module, "__repr__", "IR text")
    _timed(phases, engine, "parse", "LLVM parse")
    _timed(phases, engine, "optimize", "LLVM optimize")
    _timed(phases, engine, "NativeModule", "LLVM codegen+load")
    f, args = make(kind, n, np)
    jf = fc.jit(f, backend="cpu")
    t0 = time.perf_counter()
    got = jf(*args)
    first = time.perf_counter() - t0
    graph = fc.make_graph(f)(*args)
    want = f(*args)
    assert np.allclose(got, want, rtol=1e-12, atol=0), (kind, n)
    return dict(first=first, eqns=len(graph.eqns), phases=phases,
                rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def child_jax(kind, n):
    import jax
    import jax.numpy as jnp
    import numpy as np
    jax.config.update("jax_enable_x64", True)
    f, args = make(kind, n, jnp)
    jf = jax.jit(f)
    t0 = time.perf_counter()
    jax.block_until_ready(jf(*args))
    first = time.perf_counter() - t0
    eqns = len(jax.make_jaxpr(f)(*args).eqns)
    assert np.allclose(np.asarray(jf(*args)), make(kind, n, np)[0](*args), rtol=1e-9)
    return dict(first=first, eqns=eqns, phases={},
                rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def run_child(who, kind, n, timeout):
    # the phases are timed in the child itself: its compile worker stays off
    with tempfile.TemporaryDirectory(prefix="fc-compile-scaling-") as cache_dir:
        return _results.json_child(__file__, [who, kind, n], cache_dir, timeout,
                                   OPENBLAS_NUM_THREADS="1", FUNCTORCH_CORE_COMPILE_WORKER="0")


def _arg(flag, default):
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def main():
    kinds = _arg("--kinds", "loop,tanh,concat").split(",")
    biggest = int(_arg("--max", "30000"))
    timeout = float(_arg("--timeout", "900"))
    jax_too = _results.installed("jax") and "--no-jax" not in sys.argv
    short = {"LLVM codegen+load": "codegen", "LLVM optimize": "optimize",
             "LLVM parse": "parse", "functionalize": "functnlz"}
    for kind in kinds:
        sizes = [n for n in (QUICK_SIZES if QUICK else SIZES)[kind] if n <= biggest]
        print(f"\n{kind}: first call, seconds per phase, fresh process and disk cache each")
        head = " ".join(f"{short.get(p, p):>9}" for p in PHASES)
        print(f"  {'n':>6} {'eqns':>6} {head} {'first':>8} {'us/eqn':>8} {'RSS MB':>7}"
              + (f" {'JAX':>8} {'JAX us/eqn':>10} {'JAX MB':>7}" if jax_too else ""))
        jax_here = jax_too
        for n in sizes:
            r = run_child("fc", kind, n, timeout)
            if r is None:
                print(f"  {n:>6} did not answer within {timeout:.0f} s")
                break
            cells = " ".join(f"{r['phases'].get(p, 0.0):9.3f}" for p in PHASES)
            line = (f"  {n:>6} {r['eqns']:>6} {cells} {r['first']:8.2f} "
                    f"{1e6 * r['first'] / r['eqns']:8.0f} {r['rss_mb']:7.0f}")
            if jax_here:
                j = run_child("jax", kind, n, timeout)
                line += (f" {j['first']:8.2f} {1e6 * j['first'] / j['eqns']:10.0f} "
                         f"{j['rss_mb']:7.0f}" if j else f"  (JAX: over {timeout:.0f} s)")
                jax_here = j is not None    # bigger ones would time out too
            elif jax_too:
                line += "  (JAX: not run, a smaller n timed out)"
            print(line, flush=True)


if __name__ == "__main__":
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        who, kind, n = sys.argv[i + 1], sys.argv[i + 2], int(sys.argv[i + 3])
        out = (child_fc if who == "fc" else child_jax)(kind, n)
        print(json.dumps(out))
    else:
        main()
