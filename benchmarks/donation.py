"""``jit(donate_argnums=0)`` on an MLP SGD step: time and bytes allocated per call.

Run from the repository root: ``python3 benchmarks/donation.py [--quick]``.
The step is forward, ``grad`` and the SGD update in one jitted function (float32 MLP
784-1024-1024-10, batch 32); with donation the new parameters are written into the old
ones' memory. Medians of repeats; the bytes are NumPy's allocations seen by tracemalloc
during one call (the results included: without donation every call allocates them anew).
"""

from __future__ import annotations

import itertools
import os
import sys
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, result

import functorch_core as fc

SIZES = (784, 1024, 1024, 10)


def init(rng):
    return {f"{n}{i}": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
            if n == "w" else np.zeros(b, np.float32)
            for i, (a, b) in enumerate(itertools.pairwise(SIZES))
            for n in ("w", "b")}


def loss(params, x, y):
    h = x
    for i in range(len(SIZES) - 1):
        h = h @ params[f"w{i}"] + params[f"b{i}"]
        if i < len(SIZES) - 2:
            h = np.maximum(h, 0)
    return np.mean((h - y) ** 2)


def sgd_step(params, x, y):
    g = fc.grad(loss)(params, x, y)
    return {k: params[k] - np.float32(0.01) * g[k] for k in params}


def allocated_bytes(fn):
    tracemalloc.start()
    fn()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current


def main():
    repeats = 21 if "--quick" in sys.argv else 201
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((32, SIZES[-1])).astype(np.float32)
    rows = {}
    for name, step in (("fresh results", fc.jit(sgd_step)),
                       ("donate_argnums=0", fc.jit(sgd_step, donate_argnums=0))):
        state = {"p": init(rng)}

        def call(step=step, state=state):
            state["p"] = step(state["p"], x, y)
        call()
        t = median_time(call, repeats=repeats, warmup=3)
        held = [state["p"]]        # keep the results alive, so only new memory counts
        b = allocated_bytes(call)
        held.append(state["p"])
        rows[name] = t
        print(f"  {name:<20} {1e3 * t:8.3f} ms per step  {b / 2 ** 20:8.2f} MiB allocated "
              "per step")
    result("MLP SGD step, donate_argnums=0", rows["donate_argnums=0"])
    result("MLP SGD step, fresh results", rows["fresh results"])


if __name__ == "__main__":
    main()
