"""FFTs through functorch_core jit against NumPy, SciPy, JAX and torch, in one process.

Run from the repository root: ``python benchmarks/fft.py [--quick]``. Workloads (issue
16's): ``rfft`` of 2^22 float64 samples, ``fft2`` of a 2048x2048 complex128 array, and
the gradient of a spectral loss ``sum(|rfft(x) * w|^2)`` with respect to ``x`` (reverse
mode: an rfft forward, its transpose backward). Medians over repeats; ratios against NumPy.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scipy.fft
from _timing import median_time, optional_import, report, result

import functorch_core as fc


def _jax_rows(jax, workloads, repeats, rows):
    if jax is None:
        return {k: None for k in workloads}
    jax.config.update("jax_enable_x64", True)
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


def main():
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
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
    rows = {k: {} for k in workloads}
    for k, args in workloads.items():
        rows[k]["NumPy"] = median_time(lambda k=k, args=args: np_fns[k](*args), repeats)
        if k in sp_fns:
            rows[k]["SciPy"] = median_time(lambda k=k, args=args: sp_fns[k](*args), repeats)
        rows[k]["functorch_core jit"] = median_time(
            lambda k=k, args=args: fc_fns[k](*args), repeats)
    jax_t = _jax_rows(optional_import("jax"), workloads, repeats, rows)
    torch_t = _torch_rows(optional_import("torch"), workloads, repeats, rows)
    titles = {"rfft": f"rfft of {n} float64", "fft2": f"fft2 of {side}x{side} complex128",
              "grad": f"grad of sum(|rfft(x) * w|^2), {n} float64 (NumPy: closed form)"}
    for k in workloads:
        report(titles[k], rows[k], "NumPy")
        result(titles[k], rows[k]["functorch_core jit"],
               numpy=rows[k]["NumPy"] if k != "grad" else None, jax=jax_t[k], torch=torch_t[k])


if __name__ == "__main__":
    main()
