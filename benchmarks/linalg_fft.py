"""Linear algebra and FFTs through functorch_core jit against NumPy/SciPy, JAX and torch,
in one process.

Run from the repository root: ``python benchmarks/linalg_fft.py [--quick]``. Workloads:
a batched ``solve`` (1000 x 32x32), ``cholesky`` (2048^2), SciPy's ``cho_solve(cho_factor(a),
b)`` (2048^2, upper factor, one right-hand side), ``svd`` (512^2), ``eigh`` (512^2),
the gradients of ``slogdet`` (256^2) and of the sum of ``eigh``'s eigenvalues weighted
(256^2), ``rfft`` of 2^22 float64 samples, ``fft2`` of a 2048x2048 complex128 array, and
the gradient of a spectral loss ``sum(|rfft(x) * w|^2)`` (reverse mode: an rfft forward,
its transpose backward). Medians over repeats (after a warm-up call); the linear algebra
rows, and the FFT rows of NumPy, SciPy and functorch_core, are medians of three rounds in
which the contenders take turns. Ratios against NumPy.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.fft
import scipy.linalg
from _timing import median_rounds, median_time, optional_import, report, result

import functorch_core as fc
import functorch_core.scipy.linalg as fsl


def _jax_rows(jax, workloads, repeats, rows):
    if jax is None:
        return {k: None for k in workloads}
    jnp = jax.numpy
    fns = {"rfft": jax.jit(jnp.fft.rfft), "fft2": jax.jit(jnp.fft.fft2),
           "grad": jax.jit(jax.grad(lambda x, w: jnp.sum(jnp.abs(jnp.fft.rfft(x) * w) ** 2)))}
    out = {}
    for k, args in workloads.items():
        dev = [jnp.asarray(a) for a in args]
        f = fns[k]
        out[k] = median_time(lambda f=f, dev=dev: f(*dev).block_until_ready(), repeats)
        rows[k]["JAX jit"] = out[k]
    return out


def _torch_rows(torch, workloads, repeats, rows):
    if torch is None:
        return {k: None for k in workloads}

    def grad(x, w):
        x = x.detach().requires_grad_(True)
        (torch.abs(torch.fft.rfft(x) * w) ** 2).sum().backward()
        return x.grad

    fns = {"rfft": torch.fft.rfft, "fft2": torch.fft.fft2, "grad": grad}
    out = {}
    for k, args in workloads.items():
        t = [torch.from_numpy(a) for a in args]
        f = fns[k]
        out[k] = median_time(lambda f=f, t=t: f(*t), repeats)
        rows[k]["torch"] = out[k]
    return out


def _linalg(quick, repeats, rounds, jax, torch):
    rng = np.random.default_rng(1)
    n_big, n_mid, n_grad = (512, 256, 128) if quick else (2048, 512, 256)
    batch = rng.normal(size=(1000, 32, 32)) + 32 * np.eye(32)
    rhs = rng.normal(size=(1000, 32, 1))
    spd = rng.normal(size=(n_big, n_big))
    spd = spd @ spd.T + n_big * np.eye(n_big)
    mid = rng.normal(size=(n_mid, n_mid))
    sym = mid + mid.T
    g = rng.normal(size=(n_grad, n_grad)) + n_grad ** 0.5 * np.eye(n_grad)
    weights = np.linspace(0.0, 1.0, n_grad)
    work = {
        "solve 1000 x 32x32": (np.linalg.solve, (batch, rhs), "solve"),
        f"cholesky {n_big}^2": (np.linalg.cholesky, (spd,), "cholesky"),
        f"cho_factor + cho_solve {n_big}^2 (NumPy: SciPy)": (None, (spd, spd[:, :1]),
                                                             "cho_solve"),
        f"svd {n_mid}^2": (np.linalg.svd, (mid,), "svd"),
        f"eigh {n_mid}^2": (np.linalg.eigh, (sym,), "eigh"),
        f"grad slogdet {n_grad}^2": (None, (g,), "grad_slogdet"),
        f"grad eigh {n_grad}^2": (None, (g + g.T,), "grad_eigh"),
    }
    fc_fns = {
        "cho_solve": fc.jit(lambda a, b: fsl.cho_solve(fsl.cho_factor(a), b)),
        "grad_slogdet": fc.jit(fc.grad(lambda a: np.linalg.slogdet(a)[1])),
        "grad_eigh": fc.jit(fc.grad(lambda a: np.sum(np.linalg.eigh(a)[0] * weights))),
    }
    np_fns = {   # SciPy's, and the closed forms by hand
        "cho_solve": lambda a, b: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a), b),
        "grad_slogdet": lambda a: np.linalg.inv(a).T,
        # NumPy's eigh reads the lower triangle: the gradient lives there
        "grad_eigh": lambda a: (lambda g: np.tril(g + g.T) - np.diag(np.diag(g)))(
            (lambda v: (v * weights) @ v.T)(np.linalg.eigh(a)[1])),
    }
    peers = {}
    if jax is not None:
        import jax.scipy.linalg as jsl
        jnp = jax.numpy
        peers["JAX"] = {
            "solve": jax.jit(jnp.linalg.solve), "cholesky": jax.jit(jnp.linalg.cholesky),
            "cho_solve": jax.jit(lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b)),
            "svd": jax.jit(jnp.linalg.svd), "eigh": jax.jit(jnp.linalg.eigh),
            "grad_slogdet": jax.jit(jax.grad(lambda a: jnp.linalg.slogdet(a)[1])),
            "grad_eigh": jax.jit(jax.grad(lambda a: jnp.sum(jnp.linalg.eigh(a)[0] * weights))),
        }
    if torch is not None:
        tw = torch.from_numpy(weights)

        def t_grad(f):
            def run(a):
                a = a.detach().requires_grad_(True)
                f(a).backward()
                return a.grad
            return run

        peers["torch"] = {
            "solve": torch.linalg.solve, "cholesky": torch.linalg.cholesky,
            "cho_solve": lambda a, b: torch.cholesky_solve(
                b, torch.linalg.cholesky(a, upper=True), upper=True),
            "svd": torch.linalg.svd, "eigh": torch.linalg.eigh,
            "grad_slogdet": t_grad(lambda a: torch.linalg.slogdet(a)[1]),
            "grad_eigh": t_grad(lambda a: (torch.linalg.eigh(
                (a + a.mT) / 2)[0] * tw).sum()),
        }
    for title, (np_fn, args, key) in work.items():
        f = fc_fns.get(key) or fc.jit(np_fn)
        ref = np_fns.get(key, np_fn)
        np.testing.assert_allclose(fc.tree_leaves(f(*args))[0], fc.tree_leaves(ref(*args))[0],
                                   rtol=1e-6, atol=1e-8)
        runs = {"NumPy": lambda r=ref, a=args: r(*a),
                "functorch_core jit": lambda f=f, a=args: f(*a)}
        for peer, fns in peers.items():
            if peer == "JAX":
                dev = [jax.numpy.asarray(a) for a in args]

                def run(fn=fns[key], d=dev):
                    return jax.block_until_ready(fn(*d))
            else:
                ts = [torch.from_numpy(a) for a in args]

                def run(fn=fns[key], t=ts):
                    return fn(*t)
            runs[peer] = run
        rows = median_rounds(runs, repeats, rounds)
        times = {peer: rows[peer] for peer in peers}
        report(title, rows, "NumPy")
        result(title, rows["functorch_core jit"],
               numpy=rows["NumPy"] if key in ("solve", "cholesky", "cho_solve", "svd", "eigh")
               else None,
               jax=times.get("JAX"), torch=times.get("torch"))


def main():
    quick = "--quick" in sys.argv
    repeats, rounds = (3, 1) if quick else (7, 3)
    jax, torch = optional_import("jax"), optional_import("torch")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    _linalg(quick, repeats, rounds, jax, torch)
    rng = np.random.default_rng(0)
    n = 1 << (20 if quick else 22)
    side = 1024 if quick else 2048
    x = rng.normal(size=n)
    z = rng.normal(size=(side, side)) + 1j * rng.normal(size=(side, side))
    w = rng.normal(size=n // 2 + 1)
    workloads = {"rfft": (x,), "fft2": (z,), "grad": (x, w)}

    def spectral(x, w):
        return np.sum(np.abs(np.fft.rfft(x) * w) ** 2)

    fc_fns = {"rfft": fc.jit(np.fft.rfft), "fft2": fc.jit(np.fft.fft2),
              "grad": fc.jit(fc.grad(spectral))}
    weights = np.r_[1.0, np.full(n // 2 - 1, 2.0), 1.0]      # irfft's, for even n
    np_fns = {"rfft": np.fft.rfft, "fft2": np.fft.fft2,      # the gradient in closed form:
              "grad": lambda x, w: 2 * n * np.fft.irfft(np.fft.rfft(x) * w * w / weights, n)}
    sp_fns = {"rfft": scipy.fft.rfft, "fft2": scipy.fft.fft2}
    np.testing.assert_allclose(fc_fns["grad"](x, w), np_fns["grad"](x, w), rtol=1e-7, atol=1e-6)
    rows = {}
    for k, args in workloads.items():
        runs = {"NumPy": lambda k=k, args=args: np_fns[k](*args)}
        if k in sp_fns:
            runs["SciPy"] = lambda k=k, args=args: sp_fns[k](*args)
        runs["functorch_core jit"] = lambda k=k, args=args: fc_fns[k](*args)
        rows[k] = median_rounds(runs, repeats, rounds)
    jax_t = _jax_rows(jax, workloads, repeats, rows)
    torch_t = _torch_rows(torch, workloads, repeats, rows)
    titles = {"rfft": f"rfft of {n} float64", "fft2": f"fft2 of {side}x{side} complex128",
              "grad": f"grad of sum(|rfft(x) * w|^2), {n} float64 (NumPy: closed form)"}
    for k in workloads:
        report(titles[k], rows[k], "NumPy")
        result(titles[k], rows[k]["functorch_core jit"],
               numpy=rows[k]["NumPy"] if k != "grad" else None, jax=jax_t[k], torch=torch_t[k])


if __name__ == "__main__":
    main()
