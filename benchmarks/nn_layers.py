"""The second batch of nn layers, forward+backward: functorch_core jit(value_and_grad) vs
torch eager (float32, one process, medians over repeats).

Run from the repository root: ``python3 benchmarks/nn_layers.py [--quick]``.
Workloads: ConvTranspose2d 64 -> 32 channels 16x16 -> 32x32 (stride 2, batch 32);
GroupNorm(8, 64) and bilinear x2 interpolate of (32, 64, 32, 32); max-pool 3x3/2/1 with and
without return_indices of (32, 64, 32, 32); EmbeddingBag(10000, 64, 'sum') with 4096
indices in 256 bags; reflect-padded Conv2d 64 -> 64 3x3 of (32, 64, 32, 32).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, optional_import, report, result

import functorch_core as fc
from functorch_core.nn import functional as F


def _workloads(rng):
    x4 = rng.standard_normal((32, 64, 32, 32)).astype(np.float32)
    x_up = rng.standard_normal((32, 64, 16, 16)).astype(np.float32)
    w_up = (rng.standard_normal((64, 32, 4, 4)) / 30).astype(np.float32)
    w_conv = (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32)
    gw, gb = np.ones(64, np.float32), np.zeros(64, np.float32)
    table = rng.standard_normal((10000, 64)).astype(np.float32)
    idx = rng.integers(0, 10000, 4096)
    offsets = np.sort(rng.choice(4096, 255, replace=False))
    offsets = np.concatenate([[0], offsets[offsets > 0]])[:256]
    return [
        ("conv_transpose2d s2", (x_up, w_up),
         lambda F, x, w: F.conv_transpose2d(x, w, stride=2, padding=1)),
        ("group_norm 8 groups", (x4, gw, gb), lambda F, x, w, b: F.group_norm(x, 8, w, b)),
        ("interpolate bilinear x2", (x4,),
         lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
        ("max_pool2d 3/2/1", (x4,), lambda F, x: F.max_pool2d(x, 3, 2, 1)),
        ("max_pool2d 3/2/1 indices", (x4,),
         lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[0]),
        ("embedding_bag sum", (table,),
         lambda F, w, idx=idx, off=offsets: F.embedding_bag(
             idx if F.__name__.startswith("functorch") else _torch_int(idx), w,
             off if F.__name__.startswith("functorch") else _torch_int(off), mode="sum")),
        ("conv2d reflect pad", (x4, w_conv),
         lambda F, x, w: F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w)),
    ]


def _torch_int(a):
    import torch
    return torch.tensor(a)


def main():
    repeats = 3 if "--quick" in sys.argv else 7
    rng = np.random.default_rng(0)
    torch = optional_import("torch")
    for name, args, fn in _workloads(rng):
        step = fc.jit(fc.value_and_grad(lambda *a, fn=fn: (fn(F, *a) ** 2).sum(),
                                        argnums=tuple(range(len(args)))))
        ours = median_time(lambda step=step, args=args: step(*args), repeats)
        theirs = None
        if torch is not None:
            targs = [torch.tensor(a, requires_grad=True) for a in args]

            def torch_step(fn=fn, targs=targs):
                for t in targs:
                    t.grad = None
                loss = (fn(torch.nn.functional, *targs) ** 2).sum()
                loss.backward()
                return loss
            theirs = median_time(torch_step, repeats)
            got = float(step(*args)[0])
            want = float(torch_step().detach())
            if abs(got - want) > 1e-3 * max(abs(want), 1):
                sys.exit(f"{name}: functorch_core loss {got} disagrees with torch's {want}")
        report(f"{name}: forward + backward", {"functorch_core jit": ours, "torch eager": theirs},
               "functorch_core jit")
        result(f"nn {name} fwd+bwd", ours, torch=theirs)


if __name__ == "__main__":
    main()
