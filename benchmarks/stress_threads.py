"""Concurrent first calls: threads x new jit signatures, checked against NumPy.

Each round makes fresh jitted functions (new lambdas, so nothing is cached in memory) and
has ``--threads`` threads call them at once with shapes not compiled before in this process;
every result is compared with NumPy. Prints the number of wrong results and exceptions;
exits 1 if any. The bounded version runs in CI
(tests/backends/llvm/test_llvm_runtime.py::test_concurrent_*); this one is for longer runs
outside it:

    FUNCTORCH_CORE_CACHE_DIR= python benchmarks/stress_threads.py --rounds 20 --threads 8
"""

import argparse
import os
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import functorch_core as fc

WORKLOADS = [     # each runs eagerly on NumPy arrays as the reference
    lambda x: np.tanh(x) * 2 + 1,
    lambda x: np.sum(np.exp(-x * x), axis=-1),
    lambda x: x @ x.T + np.sin(x).sum(),
    lambda x: np.maximum(x, 0.25) / (1 + np.abs(x)),
]


def run_round(threads: int, calls: int, base: int, seed: int):
    """One round: ``threads`` threads each call every workload ``calls`` times on shapes
    (rows, base + k); returns (checked, wrong, errors)."""
    jitted = [(fc.jit(lambda x, f=f: f(x)), f) for f in WORKLOADS]
    barrier = threading.Barrier(threads)
    wrong, errors, checked = [], [], [0]
    lock = threading.Lock()

    def worker(t):
        rng = np.random.default_rng(seed + t)
        barrier.wait()
        for k in range(calls):
            for f, ref in jitted:
                x = rng.normal(size=(1 + (t + k) % 3, base + k))
                try:
                    got = f(x)
                    ok = np.allclose(got, ref(x), rtol=1e-10, atol=1e-10)
                except Exception as e:   # counted and reported
                    with lock:
                        errors.append(repr(e))
                    continue
                with lock:
                    checked[0] += 1
                    if not ok:
                        wrong.append((t, k))

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return checked[0], wrong, errors


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--calls", type=int, default=5)
    a = p.parse_args(argv)
    total = bad = err = 0
    for r in range(a.rounds):
        checked, wrong, errors = run_round(a.threads, a.calls, 3 + 7 * r, r)
        total, bad, err = total + checked, bad + len(wrong), err + len(errors)
        print(f"round {r}: {checked} checked, {len(wrong)} wrong, {len(errors)} errors"
              + (f" ({errors[0]})" if errors else ""), flush=True)
    print(f"total: {total} checked, {bad} wrong, {err} errors")
    return 1 if bad or err else 0


if __name__ == "__main__":
    sys.exit(main())
