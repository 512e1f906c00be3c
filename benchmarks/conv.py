"""conv2d and max-pool 2x2, forward and forward+backward: jit(cpu) vs JAX jit and torch.

Run from the repository root: ``python3 benchmarks/conv.py [--quick]``.
The workload of issue 12: batch 64, 32 -> 64 channels, 32x32, 3x3 kernel, stride 1,
padding 1, float32, NCHW/OIHW; max-pool 2x2 (stride 2) of a (64, 64, 32, 32) input.
Prints the median of repeats for each variant and the ratio to the fastest, in one process,
and, where ``_timing.result`` exists, the ``@@fc-result`` lines run_all.py tabulates.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _timing
from _timing import median_time, optional_import, report

import functorch_core as fc
from functorch_core import lax


def _check(name, got, want, tol):
    for g, w in zip(got, want, strict=True):
        err = np.max(np.abs(np.asarray(g) - np.asarray(w))) / max(np.max(np.abs(w)), 1)
        if err > tol:
            sys.exit(f"{name}: jit(cpu) disagrees with the reference ({err:.2e})")


def main():
    repeats = 3 if "--quick" in sys.argv else 7
    rng = np.random.default_rng(0)
    jax, torch = optional_import("jax"), optional_import("torch")
    x = rng.standard_normal((64, 32, 32, 32)).astype(np.float32)
    w = (rng.standard_normal((64, 32, 3, 3)) / 17).astype(np.float32)
    ct = rng.standard_normal((64, 64, 32, 32)).astype(np.float32)
    p = rng.standard_normal((64, 64, 32, 32)).astype(np.float32)
    pct = rng.standard_normal((64, 64, 16, 16)).astype(np.float32)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))

    def conv_loss(x, w, ct):
        return (conv(x, w) * ct).sum()

    def pool(x):
        return lax.max_pool(x, (2, 2))

    def pool_loss(x, c):
        return (pool(x) * c).sum()

    cases = [("conv2d forward", conv, (x, w)),
             ("conv2d forward+backward", fc.grad(conv_loss, argnums=(0, 1)), (x, w, ct)),
             ("max-pool 2x2 forward", pool, (p,)),
             ("max-pool 2x2 forward+backward", fc.grad(pool_loss), (p, pct))]
    if jax is not None:
        import jax.numpy as jnp
        from jax import lax as jlax

        def jconv(x, w):
            return jlax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))

        def jpool(x):
            return jlax.reduce_window(x, -jnp.inf, jlax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                                      "VALID")
        jfns = [jax.jit(jconv),
                jax.jit(jax.grad(lambda x, w, c: (jconv(x, w) * c).sum(), argnums=(0, 1))),
                jax.jit(jpool), jax.jit(jax.grad(lambda x, c: (jpool(x) * c).sum()))]
    if torch is not None:
        F = torch.nn.functional

        def tconv_fb(x, w, c):
            x, w = x.requires_grad_(), w.requires_grad_()
            F.conv2d(x, w, padding=1).backward(c)
            return x.grad, w.grad

        def tpool_fb(x, c):
            x = x.requires_grad_()
            F.max_pool2d(x, 2).backward(c)
            return (x.grad,)
        tfns = [lambda x, w: F.conv2d(x, w, padding=1), tconv_fb,
                lambda x: F.max_pool2d(x, 2), tpool_fb]
    for i, (title, f, args) in enumerate(cases):
        rows = {}
        jf = fc.jit(f, backend="cpu")
        got = jf(*args)
        got = got if isinstance(got, tuple) else (got,)
        rows["functorch_core jit(cpu)"] = median_time(lambda jf=jf, a=args: jf(*a), repeats)
        if jax is not None:
            ja = [jnp.asarray(a) for a in args]
            want = jfns[i](*ja)
            _check(title, got, want if isinstance(want, tuple) else (want,), 1e-4)
            rows["JAX jit"] = median_time(
                lambda g=jfns[i], a=ja: jax.block_until_ready(g(*a)), repeats)
        else:
            rows["JAX jit"] = None
        if torch is not None:
            def tcall(g=tfns[i], a=args, grad="backward" in title):
                with torch.set_grad_enabled(grad):
                    return g(*[torch.from_numpy(v) for v in a])
            rows["torch"] = median_time(tcall, repeats)
        else:
            rows["torch"] = None
        report(title, rows, width=24)
        if hasattr(_timing, "result"):      # run_all.py's table (the hardening branch)
            _timing.result(f"{title}, f32", rows["functorch_core jit(cpu)"],
                           jax=rows["JAX jit"], torch=rows["torch"])


if __name__ == "__main__":
    main()
