"""Control-flow workloads through functorch_core, NumPy, and (when installed) JAX and torch.

Same process, same inputs; medians over repeats; ratios against functorch_core's jit.
    python benchmarks/control_flow.py [--quick]

(a) an LSTM cell scanned over a sequence (hidden 256, length 100, batch 32, float32):
    loss and gradient with respect to the weights;
(b) Newton's iteration for the cube root as a while_loop, vmapped over 10k starting points;
(c) compile time (first call of a fresh jit) of a fori_loop against the unrolled Python loop,
    for 10, 100 and 1000 steps. The disk cache is off here so every compile is real;
(d) per-iteration overhead: a 10k-step fori_loop of a tiny body (f64[4]).

functorch_core runs a loop's per-step GEMMs on OpenBLAS's own threads while the machine
is quiet and on one thread while it is busy (``backends/llvm/loops.py``); its products
outside loops (the hoisted ones of (a) included) keep OpenBLAS's threads, which stall on a
loaded machine: compare (a) with ``OPENBLAS_NUM_THREADS=1`` as well.
"""

import os
import sys
import time

os.environ["FUNCTORCH_CORE_CACHE_DIR"] = ""     # (c) measures real compiles

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_time, optional_import, report

import functorch_core as fc
from functorch_core import lax

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 7
jax = optional_import("jax")
torch = optional_import("torch")


# --- (a) LSTM scan, forward + backward ------------------------------------------------------

H, T, BATCH = 256, 100, 32


def lstm_params(rng):
    s = 1 / np.sqrt(H)
    return {"wx": rng.uniform(-s, s, (H, 4 * H)).astype(np.float32),
            "wh": rng.uniform(-s, s, (H, 4 * H)).astype(np.float32),
            "b": np.zeros(4 * H, np.float32)}


def _sigmoid(x, xp):
    return 1 / (1 + xp.exp(-x))


def lstm_loss(p, xs, xp=np, scan=None):
    def cell(carry, x):
        h, c = carry
        z = x @ p["wx"] + h @ p["wh"] + p["b"]
        i, f, g, o = (z[:, k * H:(k + 1) * H] for k in range(4))
        c = _sigmoid(f, xp) * c + _sigmoid(i, xp) * xp.tanh(g)
        h = _sigmoid(o, xp) * xp.tanh(c)
        return (h, c), h
    zeros = xp.zeros((BATCH, H), dtype=xp.float32)
    (h, _), hs = scan(cell, (zeros, zeros), xs)
    return xp.mean(hs * hs) + xp.mean(h)


def bench_lstm():
    rng = np.random.default_rng(0)
    p = lstm_params(rng)
    xs = rng.standard_normal((T, BATCH, H)).astype(np.float32)
    rows = {}
    f = fc.jit(fc.value_and_grad(lambda p, xs: lstm_loss(p, xs, np, lax.scan)))
    f(p, xs)
    rows["functorch_core jit(value_and_grad)"] = median_time(lambda: f(p, xs), REPEATS)
    if jax is not None:
        jnp = jax.numpy
        g = jax.jit(jax.value_and_grad(lambda p, xs: lstm_loss(p, xs, jnp, jax.lax.scan)))
        g(p, xs)[0].block_until_ready()
        rows["jax jit(value_and_grad)"] = median_time(
            lambda: g(p, xs)[0].block_until_ready(), REPEATS)
        np.testing.assert_allclose(f(p, xs)[0], g(p, xs)[0], rtol=1e-3)
    if torch is not None:
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
        txs = torch.tensor(xs)

        def torch_scan(cell, carry, xs):
            ys = []
            for x in xs:
                carry, y = cell(carry, x)
                ys.append(y)
            return carry, torch.stack(ys)

        def run():
            loss = lstm_loss(tp, txs, torch, torch_scan)
            loss.backward()
            for v in tp.values():
                v.grad = None
            return loss
        run()
        rows["torch eager autograd"] = median_time(run, REPEATS)
    report(f"(a) LSTM scan h={H} T={T} batch={BATCH} f32, loss + grad", rows,
           "functorch_core jit(value_and_grad)")


# --- (b) vmapped while_loop Newton iteration -----------------------------------------------------

N_POINTS = 10_000


def newton_cbrt(a, xp=np, while_loop=None):
    def body(c):
        x, _ = c
        x_new = x - (x * x * x - a) / (3 * x * x)
        return x_new, xp.abs(x_new - x)
    return while_loop(lambda c: c[1] > 1e-10, body, (a + 1.0, np.float64(1.0)))[0]


def bench_newton():
    rng = np.random.default_rng(1)
    a = rng.uniform(0.1, 100.0, N_POINTS)
    rows = {}
    f = fc.jit(fc.vmap(lambda a: newton_cbrt(a, np, lax.while_loop)))
    np.testing.assert_allclose(f(a), np.cbrt(a), rtol=1e-10)
    rows["functorch_core jit(vmap(while_loop))"] = median_time(lambda: f(a), REPEATS)

    def numpy_masked(a):
        x, step = a + 1.0, np.ones_like(a)
        while (step > 1e-10).any():
            live = step > 1e-10
            x_new = np.where(live, x - (x ** 3 - a) / (3 * x * x), x)
            step = np.where(live, np.abs(x_new - x), step)
            x = x_new
        return x
    rows["numpy masked loop"] = median_time(lambda: numpy_masked(a), REPEATS)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy
        g = jax.jit(jax.vmap(lambda a: newton_cbrt(a, jnp, jax.lax.while_loop)))
        aj = jnp.asarray(a)
        np.testing.assert_allclose(np.asarray(g(aj)), np.cbrt(a), rtol=1e-10)
        rows["jax jit(vmap(while_loop))"] = median_time(
            lambda: g(aj).block_until_ready(), REPEATS)
    report(f"(b) Newton cube root, while_loop vmapped over {N_POINTS} points (f64)", rows,
           "functorch_core jit(vmap(while_loop))")


# --- (c) compile time: fori_loop vs unrolled ------------------------------------------------------

def _step(i, x, xp):
    return xp.sin(x) * 0.9 + 0.1


def first_call(make, x):
    from functorch_core.backends.llvm import runtime
    runtime._CACHE.clear()       # no compiled body reused from a previous row
    t0 = time.perf_counter()
    out = make()(x)
    getattr(out, "block_until_ready", lambda: None)()
    return time.perf_counter() - t0


def bench_compile():
    x = np.linspace(0, 1, 8).astype(np.float32)
    print("\n(c) compile time (first call of a fresh jit), seconds")
    print(f"  {'steps':>6} {'fc fori':>10} {'fc unrolled':>12} {'jax fori':>10} "
          f"{'jax unrolled':>13}")
    for n in (10, 100) if QUICK else (10, 100, 1000):
        def fc_fori(n=n):
            return fc.jit(lambda x: lax.fori_loop(0, n, lambda i, x: _step(i, x, np), x))

        def fc_unrolled(n=n):
            def f(x):
                for i in range(n):
                    x = _step(i, x, np)
                return x
            return fc.jit(f)
        row = [first_call(fc_fori, x), first_call(fc_unrolled, x)]
        if jax is not None:
            jnp = jax.numpy

            def jax_fori(n=n, jnp=jnp):
                return jax.jit(lambda x: jax.lax.fori_loop(0, n, lambda i, x: _step(i, x, jnp),
                                                           x))

            def jax_unrolled(n=n, jnp=jnp):
                def f(x):
                    for i in range(n):
                        x = _step(i, x, jnp)
                    return x
                return jax.jit(f)
            row += [first_call(jax_fori, x), first_call(jax_unrolled, x)]
        print(f"  {n:>6} " + " ".join(f"{t:>10.3f}  " for t in row))


# --- (d) per-iteration overhead ----------------------------------------------------------------

STEPS = 10_000


def bench_overhead():
    x = np.ones(4)
    rows = {}
    for backend in ("cpu", "interpreter"):
        f = fc.jit(lambda x: lax.fori_loop(0, STEPS, lambda i, c: c * 0.999 + 1.0, x),
                   backend=backend)
        f(x)
        rows[f"functorch_core jit, {backend}"] = median_time(lambda f=f: f(x), REPEATS)

    def python_loop(x):
        for _ in range(STEPS):
            x = x * 0.999 + 1.0
        return x
    rows["numpy python loop"] = median_time(lambda: python_loop(x), REPEATS)
    if jax is not None:
        g = jax.jit(lambda x: jax.lax.fori_loop(0, STEPS, lambda i, c: c * 0.999 + 1.0, x))
        g(x).block_until_ready()
        rows["jax jit(fori_loop)"] = median_time(lambda: g(x).block_until_ready(), REPEATS)
    report(f"(d) {STEPS}-step fori_loop of c * 0.999 + 1 on f64[4] (per call; / {STEPS} "
           "per step)", rows, "functorch_core jit, cpu")


if __name__ == "__main__":
    bench_lstm()
    bench_newton()
    bench_compile()
    bench_overhead()
