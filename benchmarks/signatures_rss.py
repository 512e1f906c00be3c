"""Resident memory of a process that compiles many distinct signatures: one jitted function
(``sum(tanh(x) * 2 + 1)``, ``cache_size=16``) called on float64 vectors of length 1, 2, ...,
N, so every call traces and compiles anew while the cache keeps only the last 16.

Each mode runs in a fresh interpreter with an empty disk cache:
  worker      the default (``FUNCTORCH_CORE_COMPILE_WORKER=auto``): LLVM's optimizer runs
              in a child process once this one has optimized 64 modules;
  in-process  ``FUNCTORCH_CORE_COMPILE_WORKER=0``: every module optimized here, where
              llvmlite keeps ~70 KB of each.
The table gives the RSS (MB) after n signatures, its growth from the first checkpoint, and
the seconds per signature (trace + compile + call).

    python benchmarks/signatures_rss.py [--quick] [--n N] [--in-process-n N]
"""

import os
import sys
import tempfile
import time

import _results

QUICK = "--quick" in sys.argv


def _arg(flag, default):
    return int(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else default


def child(n):
    import numpy as np

    import functorch_core as fc
    import functorch_core.numpy as fnp

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    f = fc.jit(lambda x: fnp.sum(fnp.tanh(x) * 2.0 + 1.0), cache_size=16)
    marks = sorted({m for m in (200, 500, 1000, 2000, 5000, 10000, n) if m <= n})
    rows, t0 = [], time.perf_counter()
    for k in range(1, n + 1):
        got = f(np.ones(k))
        if k in marks:
            assert abs(float(got) - k * (np.tanh(1.0) * 2.0 + 1.0)) < 1e-9 * k
            rows.append([k, rss_mb(), (time.perf_counter() - t0) / k])
    return rows


def main():
    if not sys.platform.startswith("linux"):
        print("signatures_rss.py reads /proc/self/statm: Linux only")
        return
    n = _arg("--n", 2000 if QUICK else 10000)
    runs = {"worker": ("auto", n), "in-process": ("0", _arg("--in-process-n", 2000))}
    print(__doc__.split("\n\n")[0].replace("\n", " "))
    print(f"\n{'mode':>11} {'signatures':>11} {'RSS MB':>8} {'growth MB':>10} {'s/sig':>7}")
    for mode, (setting, count) in runs.items():
        with tempfile.TemporaryDirectory(prefix="fc-signatures-rss-") as cache_dir:
            rows = _results.json_child(__file__, [count], cache_dir, 3 * 3600,
                                       FUNCTORCH_CORE_COMPILE_WORKER=setting)
        base = rows[0][1]
        for k, rss, per in rows:
            print(f"{mode:>11} {k:>11} {rss:8.1f} {rss - base:10.1f} {per:7.3f}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        import json
        print(json.dumps(child(int(sys.argv[sys.argv.index("--child") + 1]))))
    else:
        main()
