"""Throughput of ``functorch_core.scipy.special`` under ``jit`` (cpu backend) against SciPy
and ``jax.scipy.special`` (when importable), per function, on 1M float64 and float32 values
(and, asked for, complex128 or complex64 ones: the functions that take them).

Run from the repository root: ``python benchmarks/special_speed.py [name ...]
[--dtype float64|float32|complex128|complex64] [--n N]``. Each row is the median of
repeats, all in one process; ``ours/scipy`` above 1 means slower than SciPy.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.special as ss
from _timing import median_time, optional_import

import functorch_core as fc
import functorch_core.scipy.special as S

R = np.random.default_rng(0)


def _inputs(n):
    """name -> the float64 arguments of the function of that name in S and in SciPy."""
    u = R.uniform(1e-12, 1 - 1e-12, n)
    z = R.standard_normal(n) * 3
    pos = np.exp(R.uniform(np.log(1e-3), np.log(1e3), n))
    return {
        "erf": (z,), "erfc": (z,), "erfinv": (2 * u - 1,), "erfcx": (z,), "ndtr": (z,),
        "ndtri": (u,), "log_ndtr": (z * 3,), "expit": (z,), "logit": (u,),
        "xlogy": (pos, pos[::-1].copy()), "xlog1py": (pos, u), "entr": (pos,),
        "rel_entr": (pos, pos[::-1].copy()), "kl_div": (pos, pos[::-1].copy()),
        "gamma": (z * 10,), "gammaln": (pos,), "loggamma": (pos,), "digamma": (pos,),
        "gammainc": (pos, pos[::-1].copy()), "gammaincc": (pos, pos[::-1].copy()),
        "betaln": (pos, pos[::-1].copy()), "zeta": (1 + pos, pos[::-1].copy()),
        "i0": (z,), "i0e": (z,), "i1": (z,), "i1e": (z,), "sinc": (z,), "spence": (pos,),
        "betainc": (pos, pos[::-1].copy(), u), "jv": (R.uniform(0, 20, n), pos),
        "j0": (z * 10,), "polygamma1": (pos,), "polygamma3": (pos,),
    }


def _complex_inputs(n):
    """name -> the complex128 arguments (and jv's real order) of the functions taking them."""
    z = R.standard_normal(n) * 3 + 1j * R.standard_normal(n) * 3
    return {"erf": (z,), "erfc": (z,), "erfcx": (z,), "ndtr": (z,), "log_ndtr": (z,),
            "gamma": (z,), "loggamma": (z,), "digamma": (z,), "spence": (z,),
            "sinc": (z,), "jv": (R.uniform(0, 20, n), z)}


def _functions(name, js):
    """(ours, SciPy's, JAX's or None) for a row name ("polygammaN": order N)."""
    if name.startswith("polygamma"):
        n = int(name.removeprefix("polygamma"))
        jf = None if js is None else (lambda x: js.polygamma(n, x))
        return (lambda x: S.polygamma(n, x)), (lambda x: ss.polygamma(n, x)), jf
    return (getattr(S, name), getattr(ss, name),
            getattr(js, name) if js is not None and hasattr(js, name) else None)


def _jax_special():
    jax = optional_import("jax")
    if jax is None:
        return None, None
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.special as js
    return jax, js


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--dtype", choices=("float64", "float32", "complex128", "complex64"),
                        action="append")
    parser.add_argument("--n", type=int, help="values (default 2**20; --quick: 2**16)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    args.n = args.n or (1 << (16 if args.quick else 20))
    jax, js = _jax_special()
    tables = {"f": _inputs(args.n), "c": _complex_inputs(args.n)}
    print(f"{args.n} values, median of 7 (ms); ratio = ours / other")
    print(f"{'':20} {'ours':>8} {'scipy':>8} {'jax':>8} {'ours/scipy':>10} {'ours/jax':>9}")
    for dtype in args.dtype or ("float64", "float32"):
        table = tables[np.dtype(dtype).kind]
        part = np.finfo(dtype).dtype
        for name in [n for n in args.names or table if n in table]:
            xs = [a.astype(dtype if a.dtype.kind == "c" else part) for a in table[name]]
            fn, scipys, jfn = _functions(name, js)
            ours = fc.jit(fn, backend="cpu")
            t_ours = median_time(lambda f=ours, xs=xs: f(*xs))
            t_sp = median_time(lambda f=scipys, xs=xs: f(*xs))
            t_jax = float("nan")
            if jfn is not None:
                jf = jax.jit(jfn)
                jxs = [jax.numpy.asarray(x) for x in xs]
                try:
                    t_jax = median_time(lambda f=jf, xs=jxs: jax.block_until_ready(f(*xs)))
                except Exception:            # a peer lacking a dtype or case
                    pass
            print(f"{name + ' ' + dtype:20} {t_ours * 1e3:8.2f} {t_sp * 1e3:8.2f} "
                  f"{t_jax * 1e3:8.2f} {t_ours / t_sp:10.2f} {t_ours / t_jax:9.2f}")


if __name__ == "__main__":
    main()
