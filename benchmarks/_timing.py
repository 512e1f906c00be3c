"""Timing helpers shared by the benchmark scripts: medians over repeats, ratio tables, and
the machine-readable result lines ``run_all.py`` gathers into one table."""

import ctypes
import json
import os
import subprocess
import sys
import time

import numpy as np


def blas_core() -> str:
    """The kernel family NumPy's OpenBLAS runs: its own CPU detection unless
    OPENBLAS_CORETYPE forces one (some hosts force an older family, which slows NumPy and
    the cpu backend's products alike)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from functorch_core.backends.llvm import blas
    if blas.blas_int_bits() != 64:
        return "SciPy's BLAS"
    name = blas._numpy_lib[0].scipy_openblas_get_corename64_
    name.restype = ctypes.c_char_p
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return name().decode() + (f" (forced by OPENBLAS_CORETYPE={forced})" if forced else "")


print(f"# NumPy's OpenBLAS runs its {blas_core()} kernels", flush=True)


def median_time(fn, repeats=7, warmup=1, min_time=0.0):
    """Median seconds per call of ``fn()`` after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    while len(times) < repeats or sum(times) < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def median_rounds(runs, repeats, rounds):
    """name -> the median over ``rounds`` rounds of each run's median time; every round
    times the runs one after another (a slow spell of a shared machine falls on all)."""
    got = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            got[name].append(median_time(run, repeats))
    return {name: float(np.median(t)) for name, t in got.items()}


def loop_time(fn, arg, repeats, inner=1, warmup=1):
    """Median seconds per call of ``fn(arg)`` over ``repeats`` timed loops of ``inner`` calls,
    after ``warmup`` calls."""
    for _ in range(warmup):
        fn(arg)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn(arg)
        times.append((time.perf_counter() - t0) / inner)
    return float(np.median(times))


def report(title, rows, baseline=None, width=38, missing="not installed"):
    """Print ``rows`` (name -> seconds or None) with ratios to the ``baseline`` row, or to
    the fastest row ("x of the best") when ``baseline`` is None; a None row reads
    ``missing``."""
    print(f"\n{title}")
    if baseline is None:
        base, note = min(t for t in rows.values() if t is not None), " of the best"
    else:
        base, note = rows.get(baseline), ""
    for name, t in rows.items():
        if t is None:
            print(f"  {name:<{width}} {missing:>12}")
            continue
        ratio = f"{t / base:8.2f}x{note}" if base else ""
        print(f"  {name:<{width}} {1e3 * t:10.3f} ms {ratio}")


def optional_import(name):
    try:
        return __import__(name)
    except ImportError:
        return None


RESULT_MARK = "@@fc-result "
PEERS = ("NumPy", "JAX", "torch")


def result(workload, functorch_core, *, numpy=None, jax=None, torch=None, unit="ms"):
    """Print one line for ``run_all.py``'s table: seconds per call of ``workload`` through
    functorch_core and through each peer that ran it (None: not installed, or no such
    variant). ``unit`` ("ms" or "us") is how the table shows it. A peer is only given for
    the same computation (not a closed form that skips the transform)."""
    peers = dict(zip(PEERS, (numpy, jax, torch), strict=True))
    print(RESULT_MARK + json.dumps({"workload": workload, "functorch_core": functorch_core,
                                    "peers": peers, "unit": unit}), flush=True)


class Load:
    """``processes`` busy-looping processes beside the ``with`` block, each ending by itself
    after ``seconds`` whatever happens here: the synthetic load of the "loaded" figures.
    Fresh interpreters, not forks (forking a process that runs JAX's threads can deadlock)."""

    def __init__(self, processes=2, seconds=120):
        self.processes, self.seconds = processes, seconds

    def __enter__(self):
        loop = (f"import time\nend = time.time() + {self.seconds}\n"
                "while time.time() < end:\n    pass")
        self.procs = [subprocess.Popen([sys.executable, "-c", loop])
                      for _ in range(self.processes)]
        time.sleep(0.5)      # let them reach the loop
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(5)
