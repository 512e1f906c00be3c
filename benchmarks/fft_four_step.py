"""The CPU backend's own FFT passes (backends/llvm/fft.py) against pocketfft (scipy.fft), one
process: long one-dimensional transforms by the four-step method, complex and real, on
growing lengths (sets fft.FOUR_STEP_MIN and FOUR_STEP_MIN_REAL, the crossovers), then the
native transforms down the columns of a matrix against pocketfft's in-place column pass
(sets fft.COLUMNS_MIN).

Run from the repository root: ``python3 benchmarks/fft_four_step.py [--quick]``. Each row
is the median of repeats of both ways at the runtime's thread count and at one thread, and
the ratio ours / pocketfft.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.fft
from _timing import median_time
from functorch_core.backends.llvm import fft, runtime


def main():
    quick = "--quick" in sys.argv
    top = 19 if quick else 23
    workers = runtime.get_num_threads()
    rng = np.random.default_rng(0)
    print(f"\n{'transform':<10} {'points':>9}  {'pocketfft':>10}  "
          f"{'four-step':>10} {'ratio':>6}  {'1 thread':>10} {'ratio':>6}")
    for log2 in range(12, top):
        n = 1 << log2
        x = rng.normal(size=n)
        z = x + 1j * rng.normal(size=n)
        half = scipy.fft.rfft(x)
        for kind, arg, own in (("fft", z, scipy.fft.fft), ("rfft", x, scipy.fft.rfft),
                               ("irfft", half, lambda a, n=n: scipy.fft.irfft(a, n))):
            if fft.split(n if kind == "fft" else n // 2) is None:
                continue
            repeats = max(5, min(200, (1 << 22) // n))
            base = median_time(lambda a=arg, f=own: f(a), repeats)
            saved = fft.FOUR_STEP_MIN, fft.FOUR_STEP_MIN_REAL
            fft.FOUR_STEP_MIN = fft.FOUR_STEP_MIN_REAL = 0
            try:
                times = [median_time(lambda a=arg, k=kind, w=w, n=n: fft.fft(
                    a, fft_type=k, fft_lengths=(n,), workers=w), repeats) for w in (workers, 1)]
            finally:
                fft.FOUR_STEP_MIN, fft.FOUR_STEP_MIN_REAL = saved
            print(f"{kind:<10} {n:>9}  {1e3 * base:8.3f}ms  {1e3 * times[0]:8.3f}ms "
                  f"{times[0] / base:6.2f}  {1e3 * times[1]:8.3f}ms {times[1] / base:6.2f}")


def columns(quick):
    workers = runtime.get_num_threads()
    rng = np.random.default_rng(1)
    print(f"\n{'columns':<10} {'shape':>12}  {'pocketfft':>10}  "
          f"{'native':>10} {'ratio':>6}  {'1 thread':>10} {'ratio':>6}  {'pocketfft, 1':>12}")
    shapes = [(64, 256), (256, 256), (1024, 256), (2048, 1024)] + ([] if quick else
                                                                  [(2048, 2048), (4096, 1024)])
    for dtype in (np.complex64, np.complex128):
        for shape in shapes:
            x = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
            y = x.copy()
            repeats = max(5, min(200, (1 << 22) // x.size))
            own = [median_time(lambda w=w, y=y: scipy.fft.fft(y, axis=0, overwrite_x=True,
                                                              workers=w), repeats)
                   for w in (workers, 1)]
            times = [median_time(lambda w=w, y=y: fft._columns(y, 0, False, w, 1.0), repeats)
                     for w in (workers, 1)]
            print(f"{np.dtype(dtype).name:<10} {shape!s:>12}  {1e3 * own[0]:8.3f}ms  "
                  f"{1e3 * times[0]:8.3f}ms {times[0] / own[0]:6.2f}  {1e3 * times[1]:8.3f}ms "
                  f"{times[1] / own[1]:6.2f}  {1e3 * own[1]:10.3f}ms")


if __name__ == "__main__":
    main()
    columns("--quick" in sys.argv)
