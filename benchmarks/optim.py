"""One Adam step over a model-sized pytree (8 float32 leaves, ~1.2M parameters), and over a
small MLP's (6 leaves, ~27K parameters: there the per-call dispatch dominates).

Run from the repository root: ``python3 benchmarks/optim.py [--quick]``.
functorch_core: ``optim.adam``'s update eagerly (NumPy underneath) and under ``jit`` (cpu
backend); NumPy: the same formulas written by hand; torch: ``torch.optim.Adam.step`` (its
default single-tensor loop and ``foreach=True``). Medians of repeats, one process, ratios to
NumPy. The jitted update returns new arrays (pure); ``optim.Adam.step`` (the stateful
wrapper: one compiled update, state buffers reused) and torch update in place. torch runs
on one thread.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, optional_import, report, result

import functorch_core as fc
from functorch_core import optim

SHAPES = [(784, 512), (512,), (512, 512), (512,), (512, 1024), (1024,), (1024, 10), (10,)]
SMALL = [(64, 128), (128,), (128, 128), (128,), (128, 10), (10,)]


def numpy_adam(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    out = {}
    for k, p in params.items():
        g = grads[k]
        m[k] += (1 - b1) * (g - m[k])
        v[k] *= b2
        v[k] += (1 - b2) * g * g
        denom = np.sqrt(v[k]) / np.float32(np.sqrt(1 - b2 ** t)) + np.float32(eps)
        out[k] = p - np.float32(lr / (1 - b1 ** t)) * (m[k] / denom)
    return out


def main():
    repeats = 5 if "--quick" in sys.argv else 15
    torch = optional_import("torch")
    if torch is not None:
        torch.set_num_threads(1)
    compare(SHAPES, repeats, torch, "optim: Adam step, 1.2M float32 params")
    compare(SMALL, repeats * 20, torch, "optim: Adam step, small MLP (27K float32 params)")


def compare(shapes, repeats, torch, workload):
    rng = np.random.default_rng(0)
    params = {f"p{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    grads = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    n = sum(v.size for v in params.values())
    opt = optim.adam(lr=1e-3)
    state = opt.init(params)
    jitted = fc.jit(opt.update)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v2 = {k: np.zeros_like(v) for k, v in params.items()}
    rows = {
        "NumPy (hand-written)": median_time(lambda: numpy_adam(params, grads, m, v2, 3),
                                            repeats),
        "functorch_core eager": median_time(lambda: opt.update(grads, state, params), repeats),
        "functorch_core jit": median_time(lambda: jitted(grads, state, params), repeats,
                                          warmup=2),
    }
    mine = {k: v.copy() for k, v in params.items()}
    stateful = optim.Adam(mine, lr=1e-3)
    rows["functorch_core optim.Adam.step"] = median_time(lambda: stateful.step(grads), repeats,
                                                         warmup=2)
    t_rows = {}
    if torch is not None:
        for label, foreach in (("torch Adam.step", False), ("torch Adam.step foreach", True)):
            tp = [torch.tensor(p, requires_grad=True) for p in params.values()]
            for p, g in zip(tp, grads.values(), strict=True):
                p.grad = torch.tensor(g)
            topt = torch.optim.Adam(tp, lr=1e-3, foreach=foreach)
            t_rows[label] = median_time(topt.step, repeats, warmup=2)
    else:
        t_rows["torch Adam.step"] = None
    rows.update(t_rows)
    report(f"Adam step, {len(shapes)} float32 leaves, {n} parameters", rows,
           "NumPy (hand-written)")
    best_torch = min((t for t in t_rows.values() if t is not None), default=None)
    result(workload, rows["functorch_core optim.Adam.step"],
           numpy=rows["NumPy (hand-written)"], torch=best_torch)


if __name__ == "__main__":
    main()
