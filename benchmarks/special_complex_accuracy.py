"""Accuracy of the complex ``functorch_core.scipy.special`` functions against mpmath, next to
SciPy's: the max, 99th percentile and median relative error ``|f - exact| / |exact|`` over
points log-spaced in magnitude in every direction (and, for ``log_ndtr``, a band along the
positive real axis where SciPy's formula cancels), under ``jit`` on the cpu backend.

This is an accuracy report, not a timed test. Run from the repository root:
``python benchmarks/special_complex_accuracy.py [name ...] [--n N] [--write]`` (needs
mpmath); ``--write`` rewrites ``benchmarks/results/special_complex_accuracy.md``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.special as ss
from _results import require, write

import functorch_core as fc
import functorch_core.scipy.special as S

mp = require("mpmath", "special_complex_accuracy.py")
mp.mp.dps = 50
_SQRT2 = mp.sqrt(2)


def _log_ndtr(z):
    if mp.re(z) > 0:        # ndtr = 1 + u, u small: no cancellation in 1 + u
        return mp.log1p(-mp.erfc(z / _SQRT2) / 2)
    return mp.log(mp.erfc(-z / _SQRT2) / 2)


# name -> (exact value of one complex point, largest |z|, our function, SciPy's)
SPECS = {
    "erf": (mp.erf, 30.0, S.erf, ss.erf),
    "erfc": (mp.erfc, 30.0, S.erfc, ss.erfc),
    "erfcx": (lambda z: mp.exp(z * z) * mp.erfc(z), 1e3, S.erfcx, ss.erfcx),
    "ndtr": (lambda z: mp.erfc(-z / _SQRT2) / 2, 40.0, S.ndtr, ss.ndtr),
    "log_ndtr": (_log_ndtr, 60.0, S.log_ndtr, ss.log_ndtr),
    "loggamma": (mp.loggamma, 1e3, S.loggamma, ss.loggamma),
    "gamma": (mp.gamma, 150.0, S.gamma, ss.gamma),
    "digamma": (mp.digamma, 1e3, S.digamma, ss.digamma),
    "spence": (lambda z: mp.polylog(2, 1 - z), 1e3, S.spence, ss.spence),
    "jv(2.5, z)": (lambda z: mp.besselj(2.5, z), 50.0, lambda z: S.jv(2.5, z),
                   lambda z: ss.jv(2.5, z)),
}


def points(top, n, seed=0):
    rng = np.random.default_rng(seed)
    z = np.exp(rng.uniform(np.log(1e-3), np.log(top), n)) * \
        np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    return z


def errors(got, exact):
    """(max, 99th percentile, median) of the relative errors where the result is finite,
    and how many results are not (inf or NaN where the exact value is a double)."""
    ok = np.isfinite(exact) & (exact != 0)
    finite = np.isfinite(got[ok])
    with np.errstate(all="ignore"):
        e = (np.abs(got[ok] - exact[ok]) / np.abs(exact[ok]))[finite]
    return np.max(e), np.quantile(e, 0.99), np.median(e), int(np.sum(~finite))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*", default=list(SPECS))
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--write", action="store_true",
                        help="rewrite benchmarks/results/special_complex_accuracy.md")
    parser.add_argument("--quick", action="store_true",
                        help="accepted for run_all.py: not timed, so no shorter form")
    args = parser.parse_args()
    rows = []
    print(f"{args.n} points per function, relative error to mpmath at 50 digits")
    print("(max, p99, median over the finite results; 'not': results inf or NaN where the "
          "exact value is a double)")
    print(f"{'':12} {'|z| up to':>9}  {'ours max':>9} {'p99':>9} {'median':>9} {'not':>4}  "
          f"{'SciPy max':>9} {'p99':>9} {'median':>9} {'not':>4}")
    for name in args.names:
        exact_fn, top, ours, scipys = SPECS[name]
        z = points(top, args.n)
        if name == "log_ndtr":          # SciPy's cancellation band
            band = np.random.default_rng(1)
            z = np.r_[z, band.uniform(2, 7, args.n // 4) + 1j * band.uniform(-0.3, 0.3,
                                                                            args.n // 4)]
        exact = np.array([complex(exact_fn(mp.mpc(v))) for v in z])
        with np.errstate(all="ignore"):
            mine = errors(np.asarray(fc.jit(ours)(z)), exact)
            theirs = errors(np.asarray(scipys(z)), exact)
        print(f"{name:12} {top:9.3g}  " + "  ".join(
            " ".join(f"{v:9.2g}" for v in e[:3]) + f" {e[3]:4d}" for e in (mine, theirs)))
        rows.append([f"`{name}`", f"{top:.3g}"] + [
            f"{v:.2g}" for e in (mine, theirs) for v in (*e[:3], e[3])])
    if args.write:
        columns = ["function", "abs(z) up to", "ours max", "p99", "median", "not finite",
                   "SciPy max", "p99", "median", "not finite"]
        write("special_complex_accuracy", "special_complex_accuracy.py",
              [(None, columns, rows)],
              notes=[f"Relative error `|f - exact| / |exact|` to mpmath at 50 digits, {args.n} "
                     "points per function log-spaced in magnitude from 1e-3 in every "
                     "direction (`log_ndtr`: a quarter more in SciPy's cancellation band "
                     "along the positive real axis); ours under `jit` on the cpu backend. "
                     "Max, 99th percentile and median over the finite results; 'not finite': "
                     "results inf or NaN where the exact value is a double. Deterministic."])


if __name__ == "__main__":
    main()
