"""Small convolutions: the native loop nest (backends/llvm/tinyconv.py) against the gemm
modes (backends/llvm/conv.py) on growing problems, forward and kernel gradient, one
process. Sets tinyconv.TINY_MAX_MACS (the crossover).

Run from the repository root: ``python3 benchmarks/tinyconv.py [--quick]``. Each row
times one jit(cpu) conv both ways (median of repeats) and prints the ratio native/gemm.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time
from functorch_core.backends.llvm import runtime, tinyconv

import functorch_core as fc
from functorch_core import lax

# (batch, in features, out features, image side, kernel side): cnn_digits' conv first
PROBLEMS = [(64, 1, 16, 8, 3), (64, 4, 16, 8, 3), (64, 8, 16, 8, 3), (64, 16, 16, 8, 3),
            (32, 16, 32, 8, 3), (64, 16, 32, 8, 3), (16, 16, 32, 16, 3), (64, 1, 32, 28, 3),
            (64, 32, 32, 8, 3)]


def _time(f, args, native: bool, repeats):
    saved = tinyconv.TINY_MAX_MACS
    tinyconv.TINY_MAX_MACS = 1 << 62 if native else -1
    try:
        exe = runtime.Executable(fc.make_graph(f)(*args))     # compiled under this threshold
        args = list(args)
        out, = exe(args)
        return median_time(lambda: exe(args), repeats=repeats, warmup=3), out
    finally:
        tinyconv.TINY_MAX_MACS = saved


def main():
    quick = "--quick" in sys.argv
    repeats = 30 if quick else 200
    rng = np.random.default_rng(0)
    print(f"{'problem (n, c, o, side, k)':<28} {'MACs':>10} {'native us':>10} "
          f"{'gemm us':>9} {'ratio':>6}")
    for n, c, o, side, k in PROBLEMS[:5] if quick else PROBLEMS:
        x = rng.standard_normal((n, c, side, side)).astype(np.float32)
        w = rng.standard_normal((o, c, k, k)).astype(np.float32)
        ct = rng.standard_normal((n, o, side, side)).astype(np.float32)

        def fwd(x, w, pad=k // 2):
            return lax.conv_general_dilated(x, w, (1, 1), [(pad, pad)] * 2)

        def kgrad(x, w, ct, fwd=fwd):
            return fc.vjp(lambda w: fwd(x, w), w)[1](ct)[0]
        macs = n * c * o * side * side * k * k
        for name, f, args in (("fwd", fwd, (x, w)), ("kgrad", kgrad, (x, w, ct))):
            t_n, a = _time(f, args, True, repeats)
            t_g, b = _time(f, args, False, repeats)
            err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1)
            if err > 1e-4:
                sys.exit(f"{name} {(n, c, o, side, k)}: native and gemm disagree ({err:.1e})")
            label = f"{name} {(n, c, o, side, k)}"
            print(f"{label:<28} {macs:>10} {1e6 * t_n:10.1f} {1e6 * t_g:9.1f} "
                  f"{t_n / t_g:6.2f}")


if __name__ == "__main__":
    main()
