"""Accuracy of ``functorch_core.scipy.special`` in ulps, against SciPy and against mpmath.

Every function runs eagerly and under ``jit`` on the cpu backend, in float64 and float32,
over wide ranges including the tails (log-spaced magnitudes, both signs, near poles and
zeros, subnormal-adjacent, huge). For each (function, dtype, range) the table gives the
max and median distance in ulps to SciPy, to the correctly rounded value (mpmath at 200
bits, rounded to the dtype), and the issue's criterion: the max ulps to SciPy over the
points where SciPy itself is within 1 ulp of the correctly rounded value (``crit``;
``FAIL`` above 4). Distances count representable values between the two results (0: the
same float; NaN against a number: ``inf``).

This is an accuracy report, not a timed test. Run from the repository root:
``python benchmarks/special_accuracy.py [name ...] [--dtype float64|float32] [--write]``;
``--write`` rewrites ``benchmarks/results/special_accuracy.md``. The mpmath values are
cached in ``$SPECIAL_ACCURACY_CACHE`` (default ``/tmp/special_accuracy.pkl``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.special as ss
from _results import require, write

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import ulp_distance

mp = require("mpmath", "special_accuracy.py")
mp.mp.prec = 200
N = 160                      # points per range
R = np.random.default_rng(1)


def logs(lo, hi, n=N, sign=1.0):
    return sign * np.geomspace(lo, hi, n)


def lin(lo, hi, n=N):
    return np.linspace(lo, hi, n)


def both(lo, hi, n=N // 2):
    g = np.geomspace(lo, hi, n)
    return np.r_[-g[::-1], g]


def rand_pair(a_lo, a_hi, b_lo, b_hi, n=N):
    a = np.exp(R.uniform(np.log(a_lo), np.log(a_hi), n))
    b = np.exp(R.uniform(np.log(b_lo), np.log(b_hi), n))
    return a, b


# mpmath's values, as functions of mpf arguments
def _lgamma(x):
    return mp.re(mp.loggamma(x))


def _ndtri(y):
    if y <= 0 or y >= 1:
        return mp.mpf("-inf") if y <= 0 else mp.mpf("inf")
    lo = -mp.sqrt(-2 * mp.log(min(y, 1 - y)))
    guess = lo if y < 0.5 else -lo
    return mp.findroot(lambda x: mp.ncdf(x) - y, (guess - 1, guess + 1), solver="anderson") \
        if abs(y - 0.5) > 1e-300 else mp.mpf(0)


def _ndtri_newton(y):
    x = mp.mpf(float(ss.ndtri(float(y)))) if 0 < y < 1 else _ndtri(y)
    if not mp.isfinite(x):
        return x
    for _ in range(60):
        step = (mp.ncdf(x) - y) / mp.npdf(x)
        x -= step
        if abs(step) < abs(x) * mp.mpf(2) ** -190 + mp.mpf(10) ** -1000:
            break
    return x


def _betaln(a, b):
    # the lgamma terms reach a log a; their difference needs that many more bits
    with mp.workprec(mp.mp.prec + 2 * int(mp.log(a + b + 2, 2) + 8)):
        return +(_lgamma(a) + _lgamma(b) - _lgamma(a + b))


def _erfcx(x):
    if x < 1e6:
        return mp.exp(x * x) * mp.erfc(x)
    w = 1 / (2 * x * x)        # the asymptotic series, to far below 200 bits out here
    return (1 - w + 3 * w * w - 15 * w ** 3 + 105 * w ** 4) / (x * mp.sqrt(mp.pi))


def _logit(p):
    if p <= 0 or p >= 1:
        return mp.mpf("-inf") if p == 0 else mp.mpf("inf") if p == 1 else mp.nan
    return mp.log(p / (1 - p))


def _spence(x):
    return mp.polylog(2, 1 - x)


def _entr(x):
    return -x * mp.log(x) if x > 0 else (mp.mpf(0) if x == 0 else mp.mpf("-inf"))


def _rel_entr(x, y):
    if x > 0 and y > 0:
        return x * mp.log(x / y)
    return mp.mpf(0) if x == 0 and y >= 0 else mp.mpf("inf")


def _kl_div(x, y):
    if x > 0 and y > 0:
        return x * mp.log(x / y) - x + y
    return y if x == 0 and y >= 0 else mp.mpf("inf")


def _xlogy(x, y):
    return mp.mpf(0) if x == 0 else x * mp.log(y)


def _xlog1py(x, y):
    return mp.mpf(0) if x == 0 else x * mp.log1p(y)


def _sinc(x):
    return mp.mpf(1) if x == 0 else mp.sinpi(x) / (mp.pi * x)


def _gammainc(a, x):
    return mp.gammainc(a, 0, x, regularized=True)


def _gammaincc(a, x):
    return mp.gammainc(a, x, mp.inf, regularized=True)


def _betainc(a, b, x):
    return mp.betainc(a, b, 0, x, regularized=True)


def _zeta(x, q):
    """Euler-Maclaurin with many terms: mp.zeta(x, q) is off in the 10th digit for large q
    (zeta(40.497, 660.12): 1.11938775102836e-113 at 200 bits, 1.11938775074871e-113 exact)."""
    n = int(min(4000, 60 + 2 * x))
    w = q + n
    total = mp.fsum((q + k) ** -x for k in range(n)) + w ** (1 - x) / (x - 1) + w ** -x / 2
    rising = x
    for j in range(1, 26):
        total += mp.bernoulli(2 * j) / mp.factorial(2 * j) * rising * w ** (-x - 2 * j + 1)
        rising *= (x + 2 * j - 1) * (x + 2 * j)
    return total


UNARY_MP = {
    "erf": mp.erf, "erfc": mp.erfc, "erfinv": lambda y: mp.erfinv(y) if abs(y) < 1 else
    mp.sign(y) * mp.inf, "erfcx": _erfcx, "ndtr": mp.ncdf,
    "ndtri": _ndtri_newton,
    "log_ndtr": lambda x: mp.log(mp.ncdf(x)) if x <= 0 else mp.log1p(-mp.ncdf(-x)),
    "expit": lambda x: 1 / (1 + mp.exp(-x)), "logit": _logit,
    "entr": _entr, "gamma": mp.gamma, "gammaln": _lgamma,
    "loggamma": lambda x: _lgamma(x) if x > 0 else mp.nan, "digamma": mp.digamma,
    "psi": mp.digamma, "i0": lambda x: mp.besseli(0, x), "i1": lambda x: mp.besseli(1, x),
    "i0e": lambda x: mp.exp(-abs(x)) * mp.besseli(0, x),
    "i1e": lambda x: mp.exp(-abs(x)) * mp.besseli(1, x), "sinc": _sinc, "spence": _spence,
    "j0": lambda x: mp.besselj(0, x), "j1": lambda x: mp.besselj(1, x),
    "y0": lambda x: mp.bessely(0, x), "y1": lambda x: mp.bessely(1, x),
    "k0": lambda x: mp.besselk(0, x), "k1": lambda x: mp.besselk(1, x),
    "rgamma": mp.rgamma, "erfcinv": lambda y: mp.erfinv(1 - y),
    "multigammaln3": lambda a: 3 * mp.log(mp.pi) / 2 + sum(_lgamma(a - mp.mpf(j) / 2)
                                                           for j in range(3)),
}
BINARY_MP = {
    "xlogy": _xlogy, "xlog1py": _xlog1py, "rel_entr": _rel_entr, "kl_div": _kl_div,
    "gammainc": _gammainc, "gammaincc": _gammaincc,
    "betaln": lambda a, b: _betaln(a, b),
    "zeta": _zeta, "jv": mp.besselj, "betainc": _betainc,
    "polygamma1": lambda n, x: mp.polygamma(1, x),
    "beta": mp.beta, "yn": mp.bessely, "iv": mp.besseli,
    "ive": lambda v, x: mp.exp(-abs(x)) * mp.besseli(v, x), "kv": mp.besselk,
    "kve": lambda v, x: mp.exp(x) * mp.besselk(v, x),
}

# name: (ours, scipy's, [(range label, args)])
SPECS = {
    "erf": [("|x| 1e-300..1e-3", (both(1e-300, 1e-3),)), ("[-6, 6]", (lin(-6, 6),))],
    "erfc": [("[-6, 6]", (lin(-6, 6),)), ("tail 6..27", (lin(6, 27),))],
    "erfcx": [("[-26, 6]", (lin(-26, 6),)), ("1..1e300", (logs(1, 1e300),))],
    "erfinv": [("|y| 1e-300..0.5", (both(1e-300, 0.5),)),
               ("1-y 1e-16..0.5", (1 - logs(1.2e-16, 0.5),))],
    "ndtr": [("[-8, 8]", (lin(-8, 8),)), ("tail -38..-8", (lin(-38, -8),))],
    "ndtri": [("y 1e-300..1e-10", (logs(1e-300, 1e-10),)), ("y 1e-10..0.5", (logs(1e-10, 0.5),)),
              ("y 0.5..1-1e-16", (1 - logs(1.2e-16, 0.5),)),
              ("subnormal y", (logs(5e-324, 2e-308, 40),))],
    "log_ndtr": [("[-40, 8]", (lin(-40, 8),)), ("-1e150..-40", (logs(40, 1e150, sign=-1),)),
                 ("8..38", (lin(8, 38),))],
    "expit": [("[-40, 40]", (lin(-40, 40),)), ("-745..-40", (lin(-745, -40),))],
    "logit": [("p 1e-300..0.5", (logs(1e-300, 0.5),)), ("p 0.25..0.75", (lin(0.25, 0.75),)),
              ("1-p 1e-16..0.5", (1 - logs(1.2e-16, 0.5),))],
    "xlogy": [("x,y 1e-10..1e10", rand_pair(1e-10, 1e10, 1e-10, 1e10)),
              ("y near 1", (lin(0.5, 2), 1 + both(1e-15, 1e-2)))],
    "xlog1py": [("x 1e-3..1e3, y 1e-300..1e3", rand_pair(1e-3, 1e3, 1e-300, 1e3))],
    "entr": [("1e-300..1e300", (logs(1e-300, 1e300),)), ("near 1", (1 + both(1e-15, 0.5),))],
    "rel_entr": [("x,y 1e-5..1e5", rand_pair(1e-5, 1e5, 1e-5, 1e5))],
    "kl_div": [("x,y 1e-5..1e5", rand_pair(1e-5, 1e5, 1e-5, 1e5))],
    "gamma": [("1e-300..171", (logs(1e-300, 171.5),)),
              ("negative non-integers", (-lin(0.05, 170.5, N) - 0.0173,))],
    "gammaln": [("1e-300..1e300", (logs(1e-300, 1e300),)), ("near 1, 2", (np.r_[
        1 + both(1e-15, 0.1), 2 + both(1e-15, 0.1)],)),
        ("negative", (-lin(0.05, 1000.5) - 0.0173,))],
    "loggamma": [("1e-300..1e300", (logs(1e-300, 1e300),))],
    "digamma": [("1e-300..1e300", (logs(1e-300, 1e300),)),
                ("near root 1.4616", (1.4616321449683622 + both(1e-14, 1e-2),)),
                ("negative", (-lin(0.05, 100.5) - 0.0173,))],
    "polygamma1": [("1e-100..1e100", (np.ones(N), logs(1e-100, 1e100)))],
    "multigammaln3": [("a 1.01..1e100", (logs(1.01, 1e100),))],
    "gammainc": [("a,x 1e-3..1e3", rand_pair(1e-3, 1e3, 1e-3, 1e3))],
    "gammaincc": [("a,x 1e-3..1e3", rand_pair(1e-3, 1e3, 1e-3, 1e3))],
    "betaln": [("a,b 1e-3..30", rand_pair(1e-3, 30, 1e-3, 30)),
               ("a,b 30..1e15", rand_pair(30, 1e15, 30, 1e15)),
               ("a 1e6..1e300, b 1e-3..30", rand_pair(1e6, 1e300, 1e-3, 30))],
    "betainc": [("a,b 0.1..50, x 0..1", rand_pair(0.1, 50, 0.1, 50) + (R.uniform(0, 1, N),))],
    "zeta": [("s 1.01..60, q 1e-3..1e3", (np.exp(R.uniform(np.log(1.01), np.log(60), N)),
                                          np.exp(R.uniform(np.log(1e-3), np.log(1e3), N))))],
    "i0": [("|x| 1e-300..700", (both(1e-300, 700),))],
    "i1": [("|x| 1e-300..700", (both(1e-300, 700),))],
    "i0e": [("|x| 1e-300..1e300", (both(1e-300, 1e300),))],
    "i1e": [("|x| 1e-300..1e300", (both(1e-300, 1e300),))],
    "sinc": [("|x| 1e-300..1e-2", (both(1e-300, 1e-2),)), ("[-10, 10]", (lin(-10, 10) + 1e-3,))],
    "spence": [("1e-300..1e300", (logs(1e-300, 1e300),)), ("near 1", (1 + both(1e-15, 0.5),))],
    "jv": [("v 0..20, z 0..100", (R.uniform(0, 20, N), R.uniform(0, 100, N)))],
    "j0": [("[-100, 100]", (lin(-100, 100) + 1e-3,))],
    "j1": [("[-100, 100]", (lin(-100, 100) + 1e-3,))],
    "y0": [("0..100", (lin(0, 100) + 1e-3,))],
    "y1": [("0..100", (lin(0, 100) + 1e-3,))],
    "yn": [("n 0..20, x 0..100", (np.floor(R.uniform(0, 20, N)), R.uniform(0, 100, N)))],
    "iv": [("v 0..20, x 0..100", (R.uniform(0, 20, N), R.uniform(0, 100, N)))],
    "ive": [("v 0..20, x -100..100", (np.floor(R.uniform(0, 20, N)), R.uniform(-100, 100, N)))],
    "k0": [("1e-300..700", (logs(1e-300, 700),))],
    "k1": [("1e-300..700", (logs(1e-300, 700),))],
    "kv": [("v 0..20, x 1e-3..100", (R.uniform(0, 20, N), np.exp(R.uniform(-7, 4.6, N))))],
    "kve": [("v 0..20, x 1e-3..1e4", (R.uniform(0, 20, N), np.exp(R.uniform(-7, 9.2, N))))],
    "rgamma": [("[-170, 170]", (lin(-170, 170) + 1e-3,))],
    "erfcinv": [("y 0.01..1.99", (lin(0.01, 1.99),))],
    "beta": [("a,b 1e-3..30", rand_pair(1e-3, 30, 1e-3, 30)),
             ("a 172..1e4, b 1e-3..30", rand_pair(172, 1e4, 1e-3, 30))],
}
OURS = {"polygamma1": lambda n, x: S.polygamma(1, x),
        "multigammaln3": lambda a: S.multigammaln(a, 3)}
THEIRS = {"polygamma1": lambda n, x: ss.polygamma(1, x),
          "multigammaln3": lambda a: ss.multigammaln(a, 3), "sinc": np.sinc}
REDUCTIONS = ("logsumexp", "softmax", "log_softmax")


def _reduction_mp(name, row):
    m = [mp.mpf(float(v)) for v in row]
    lse = mp.log(mp.fsum(mp.exp(v) for v in m))
    if name == "logsumexp":
        return [lse]
    return [v - lse if name == "log_softmax" else mp.exp(v - lse) for v in m]


_CACHE_PATH = os.environ.get("SPECIAL_ACCURACY_CACHE", "/tmp/special_accuracy.pkl")


def _load_cache():
    try:
        with open(_CACHE_PATH, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return {}


def truth(name, args, dtype):
    """The correctly rounded values (float64 from 200-bit mpmath, then rounded to dtype)."""
    cache = _load_cache()
    key = hashlib.sha1(name.encode() + b"".join(np.asarray(a, np.float64).tobytes()
                                                 for a in args)).hexdigest()
    if key not in cache:
        if name in REDUCTIONS:
            out = np.array([[float(v) for v in _reduction_mp(name, row)] for row in args[0]])
            if name == "logsumexp":
                out = out[:, 0]
        else:
            fn = UNARY_MP.get(name) or BINARY_MP[name]
            cols = np.broadcast_arrays(*args)
            out = np.array([_exact(fn, vals) for vals in zip(*cols, strict=True)])
        cache = _load_cache()
        cache[key] = out
        with open(_CACHE_PATH, "wb") as f:
            pickle.dump(cache, f)
    with np.errstate(over="ignore", under="ignore"):
        return cache[key].astype(dtype)


def _exact(fn, vals):
    try:
        return _to_float(fn(*(mp.mpf(float(v)) for v in vals)))
    except (ValueError, ZeroDivisionError):      # a pole: the row shows it as inf ulps
        return np.nan


def _to_float(v):
    if isinstance(v, mp.mpc):
        v = v.real if v.imag == 0 else mp.nan
    return float(v)


def evaluate(name, args, dtype, jit):
    fn = OURS.get(name) or getattr(S, name)
    if jit:
        fn = fc.jit(fn)
    return np.asarray(fn(*args))


def rows(names, dtypes):
    for name in names:
        ranges = SPECS[name] if name in SPECS else [
            ("rows of 8, N(0, 10)", (R.normal(0, 10, (N // 8, 8)),))]
        for dtype in dtypes:
            for label, args64 in ranges:
                with np.errstate(all="ignore"):
                    args = tuple(np.asarray(a, dtype) for a in args64)
                    # float32 ranges: leave out what overflows or flushes to zero
                    keep = np.all([(np.isfinite(a) | ~np.isfinite(a64)) & ((a != 0) | (a64 == 0))
                                   for a, a64 in zip(args, args64, strict=True)], axis=0)
                    keep = keep.reshape(len(keep), -1).all(axis=1)     # whole rows
                    args = tuple(a[keep] if np.ndim(a) else a for a in args)
                    if not keep.any():
                        continue
                    exact = truth(name, args, dtype)
                    if name in REDUCTIONS:
                        sp = getattr(ss, name)(args[0], axis=-1)
                        sp = np.asarray(sp, dtype)
                    else:
                        sp = np.asarray((THEIRS.get(name) or getattr(ss, name))(*args))
                for jit in (False, True):
                    if name in REDUCTIONS:
                        ours = np.stack([np.asarray(getattr(S, name)(r) if not jit else
                                                    fc.jit(getattr(S, name))(r))
                                         for r in args[0]])
                    else:
                        ours = evaluate(name, args, dtype, jit)
                    if ours.dtype != exact.dtype:         # multigammaln: float64 always
                        exact = truth(name, args, ours.dtype)
                    yield name, np.dtype(dtype).name, label, jit, ours, sp, exact


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(SPECS) + list(REDUCTIONS))
    parser.add_argument("--dtype", action="append", choices=["float64", "float32"])
    parser.add_argument("--write", action="store_true",
                        help="rewrite benchmarks/results/special_accuracy.md")
    parser.add_argument("--quick", action="store_true",
                        help="accepted for run_all.py: not timed, so no shorter form")
    ns = parser.parse_args(argv)
    dtypes = ns.dtype or ["float64", "float32"]
    head = (f"{'function':<14}{'dtype':<8}{'range':<30}{'mode':<6}{'vs scipy max/med':>17}"
            f"{'vs exact max/med':>17}{'scipy vs exact':>15}{'crit':>7}")
    print(head)
    print("-" * len(head))
    failed, table = [], []
    for name, dt, label, jit, ours, sp, exact in rows(ns.names, dtypes):
        d_sp = ulp_distance(ours, sp.astype(ours.dtype))
        d_ex = ulp_distance(ours, exact)
        sp_ex = ulp_distance(sp.astype(ours.dtype), exact)
        ok = sp_ex <= 1
        crit = np.max(d_sp[ok]) if ok.any() else np.nan
        flag = " FAIL" if crit > 4 else ""
        mode = "jit" if jit else "eager"
        print(f"{name:<14}{dt:<8}{label:<30}{mode:<6}"
              f"{_fmt(np.max(d_sp)):>9}/{_fmt(np.median(d_sp)):<7}"
              f"{_fmt(np.max(d_ex)):>9}/{_fmt(np.median(d_ex)):<7}"
              f"{_fmt(np.max(sp_ex)):>15}{_fmt(crit):>7}{flag}", flush=True)
        table.append([f"`{name}`", dt, label, mode,
                      f"{_fmt(np.max(d_sp))} / {_fmt(np.median(d_sp))}",
                      f"{_fmt(np.max(d_ex))} / {_fmt(np.median(d_ex))}",
                      _fmt(np.max(sp_ex)), _fmt(crit) + flag])
        if flag:
            failed.append(f"{name} {dt} {label} {mode}")
    print(f"\n{len(failed)} rows miss the criterion" + (":\n  " + "\n  ".join(failed)
                                                      if failed else ""))
    if ns.write:
        columns = ["function", "dtype", "range", "mode", "vs SciPy max / median",
                   "vs exact max / median", "SciPy vs exact max", "crit"]
        write("special_accuracy", "special_accuracy.py", [(None, columns, table)],
              notes=[__doc__.split("\n\n")[1].replace("\n", " "),
                     f"{len(failed)} rows miss the criterion. Deterministic: the same "
                     "numbers on every run on this CPU."], argv=argv)


def _fmt(v):
    if not np.isfinite(v):
        return "inf" if v > 0 else "nan"
    return f"{v:.0f}" if v < 1e6 else f"{v:.0e}"


if __name__ == "__main__":
    main()
