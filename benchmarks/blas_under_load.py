"""OpenBLAS's threads on a busy machine: an MLP training step, jit-compiled and in plain
NumPy, quiet and under a synthetic background load.

Run from the repository root: ``python3 benchmarks/blas_under_load.py [--quick] [--sweep]``.

The step is one SGD update of an MLP 784 -> 256 -> 10 (tanh, softmax cross-entropy,
float32) on a batch of 64 and of 128: ``jit`` of ``grad`` and the update (the cpu backend),
against the same forward and backward pass written by hand in NumPy (``@`` with
OpenBLAS's default thread count, and with OpenBLAS held at one thread). Each variant is
timed call by call, the variants in turn within each round (the host's load drifts), first
quiet, then while two busy-looping processes run beside it (started and stopped here, each
bounded in time). The jit step runs twice: as it is, and with the load average read as
quiet (``blas.busy`` False), as it reads for up to a minute after a load starts. Printed
per variant: the median, the 10th-90th percentile spread, and loaded / quiet.

``--sweep`` also times single float32 products ``(m, k) @ (k, n)`` through NumPy's
OpenBLAS on its default thread count and on one thread, quiet and loaded: the figures
behind ``blas.ONE_THREAD_MACS``, the size below which the cpu backend runs a product with
OpenBLAS at one thread whatever the load.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _timing
from _timing import Load
from functorch_core.backends.llvm import blas

import functorch_core as fc

QUICK = "--quick" in sys.argv
SIZES = (784, 256, 10)
LR = np.float32(0.1)


# -- the MLP -----------------------------------------------------------------------

def init_params(rng):
    (i, h, o) = SIZES
    return {"w1": (rng.standard_normal((i, h)) / np.sqrt(i)).astype(np.float32),
            "b1": np.zeros(h, np.float32),
            "w2": (rng.standard_normal((h, o)) / np.sqrt(h)).astype(np.float32),
            "b2": np.zeros(o, np.float32)}


def loss(p, x, onehot):
    hidden = np.tanh(x @ p["w1"] + p["b1"])
    logits = hidden @ p["w2"] + p["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * log_probs, axis=1))


def sgd_step(p, x, onehot):
    g = fc.grad(loss)(p, x, onehot)
    return {k: p[k] - LR * g[k] for k in p}


def numpy_step(p, x, onehot):
    """``sgd_step`` by hand in NumPy: the same forward pass and its backward pass."""
    hidden = np.tanh(x @ p["w1"] + p["b1"])
    logits = hidden @ p["w2"] + p["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(shifted)
    dlogits = (e / np.sum(e, axis=1, keepdims=True) - onehot) / np.float32(len(x))
    dhidden = (dlogits @ p["w2"].T) * (1 - hidden * hidden)
    g = {"w1": x.T @ dhidden, "b1": dhidden.sum(0), "w2": hidden.T @ dlogits,
         "b2": dlogits.sum(0)}
    return {k: p[k] - LR * g[k] for k in p}


def read_as_quiet(fn):
    """``fn`` with the load average read as below the cores (``blas.busy`` False), as it
    reads for up to a minute after a load starts: the size of a product alone decides."""
    def call(*args):
        saved, blas.busy = blas.busy, lambda: False
        try:
            return fn(*args)
        finally:
            blas.busy = saved
    return call


def numpy_one_thread_step(p, x, onehot):
    with blas.one_thread_each():
        return numpy_step(p, x, onehot)


def _problem(batch, rng):
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    onehot = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], batch)]
    return init_params(rng), x, onehot


# -- timing ------------------------------------------------------------------------

def _times(variants, args, rounds, calls):
    """Seconds per call of each variant (``calls`` calls per round, the variants in turn
    within each round): name -> array of every call's time."""
    times = {name: [] for name in variants}
    for fn in variants.values():
        fn(*args)
    for _ in range(rounds):
        for name, fn in variants.items():
            for _ in range(calls):
                t0 = time.perf_counter()
                fn(*args)
                times[name].append(time.perf_counter() - t0)
    return {name: np.array(t) for name, t in times.items()}


def _stats(t):
    return float(np.median(t)), float(np.percentile(t, 10)), float(np.percentile(t, 90))


def mlp(rounds, calls):
    rng = np.random.default_rng(0)
    table = {}
    for batch in (64, 128):
        args = _problem(batch, rng)
        jitted = fc.jit(sgd_step)
        want = numpy_one_thread_step(*args)
        got = jitted(*args)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-6)
        variants = {"jit step": jitted, "jit, load read as quiet": read_as_quiet(jitted),
                    "NumPy step": numpy_step,
                    "NumPy step, 1 thread": numpy_one_thread_step}
        quiet = _times(variants, args, rounds, calls)
        load_quiet = os.getloadavg()[0]
        with Load():
            loaded = _times(variants, args, rounds, calls)
            load_loaded = os.getloadavg()[0]
        table[batch] = quiet, loaded, load_quiet, load_loaded
    return table


def _print_mlp(table):
    print("\nMLP 784-256-10 SGD step, float32: ms per call, median [p10 - p90]")
    for batch, (quiet, loaded, lq, ll) in table.items():
        print(f"\n  batch {batch} (1-min load average {lq:.1f} quiet, {ll:.1f} loaded)")
        print(f"  {'':<24}{'quiet':>24}{'loaded':>24}{'loaded/quiet':>14}")
        for name in quiet:
            q, lo = _stats(quiet[name]), _stats(loaded[name])
            cells = "".join(f"{1e3 * m:9.3f} [{1e3 * a:5.2f} -{1e3 * b:6.2f}]"
                            for m, a, b in (q, lo))
            print(f"  {name:<24}{cells}{lo[0] / q[0]:13.2f}x")
            if name == "jit step":
                _timing.result(f"MLP step batch {batch}, loaded", lo[0],
                               numpy=_stats(loaded["NumPy step"])[0])


# -- the product sweep -------------------------------------------------------------

SWEEP = [(64, 784, 256), (128, 784, 256), (128, 256, 784), (256, 256, 256), (128, 1024, 512),
         (512, 512, 512), (256, 1024, 1024), (1024, 1024, 512), (1024, 1024, 1024),
         (2048, 1024, 1024)]


def _one_thread_matmul(a, b):
    with blas.one_thread_each():
        return a @ b


def sweep(rounds):
    rng = np.random.default_rng(1)
    rows = []
    for m, k, n in SWEEP:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        calls = max(1, int(2e8 // (m * k * n)))
        variants = {"default": np.matmul, "1 thread": _one_thread_matmul}
        quiet = _times(variants, (a, b), rounds, calls)
        with Load():
            loaded = _times(variants, (a, b), rounds, calls)
        rows.append(((m, k, n), quiet, loaded))
    print("\nfloat32 products, ms per call, median [p90]: OpenBLAS default threads / 1 thread")
    print(f"  {'m x k x n':<18}{'MACs':>8}{'quiet default':>22}{'quiet 1 thread':>22}"
          f"{'loaded default':>22}{'loaded 1 thread':>22}")
    for (m, k, n), quiet, loaded in rows:
        cells = ""
        for t in (quiet["default"], quiet["1 thread"], loaded["default"], loaded["1 thread"]):
            med, _, p90 = _stats(t)
            cells += f"{1e3 * med:12.3f} [{1e3 * p90:7.2f}]"
        print(f"  {f'{m}x{k}x{n}':<18}{m * k * n / 2 ** 20:7.1f}M{cells}")


def main():
    rounds, calls = (5, 20) if QUICK else (15, 40)
    threads = blas._numpy_lib[0].scipy_openblas_get_num_threads64_() \
        if blas.blas_int_bits() == 64 else "?"
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, OpenBLAS default "
          f"threads {threads}, one thread below {getattr(blas, 'ONE_THREAD_MACS', 'n/a')} "
          f"multiply-adds")
    _print_mlp(mlp(rounds, calls))
    if "--sweep" in sys.argv:
        sweep(rounds)


if __name__ == "__main__":
    main()
