"""The cuda backend on a GPU against CuPy by hand, JAX on the GPU and torch CUDA.

    python benchmarks/gpu.py          # on a GPU
    python benchmarks/gpu.py --ptx    # anywhere with the nvidia-cuda-nvcc/nvrtc wheels

(Not ``cuda.py``: a script's folder comes first on ``sys.path``, and a ``cuda.py`` there
would hide NVIDIA's ``cuda`` package, ``cuda.bindings``, from numba-cuda.)

``--ptx`` compiles the kernels of the three workloads below to PTX for sm_80/sm_90 and
prints ptxas's registers per thread and spill bytes (no GPU needed). Otherwise it prints
"no GPU" and exits 0 where the cuda backend cannot run on a real device (no numba-cuda,
CuPy or driver, or numba-cuda's simulator switched on). On a GPU, in one
process, medians over repeats (each call synchronised):
- the fused elementwise chain of ``fused_elementwise.py`` over 16M float32, as a fraction
  of the device's peak memory bandwidth (memory clock x bus width x 2, from the device
  attributes; one read and one write of the array);
- per-sample gradients of the MLP of ``transforms.py`` (784-512-512-10, batch 256);
- layernorm then softmax over the rows of a 4096x1024 float32 array.
Each row gives its time and its ratio to functorch_core's.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, optional_import, result
from functorch_core.backends.cuda import availability
from transforms import mlp_forward, mlp_loss, mlp_loss_of, mlp_params

import functorch_core as fc
import functorch_core.numpy as fnp

REPEATS = 15


def chain(x):
    return fnp.tanh(0.5 * x + 1) * (1 / (1 + fnp.exp(-x))) + fnp.exp(-x ** 2)


def layernorm_softmax(x, g, b):
    mu = fnp.mean(x, axis=-1, keepdims=True)
    var = fnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    y = (x - mu) / fnp.sqrt(var + 1e-5) * g + b
    e = fnp.exp(y - fnp.max(y, axis=-1, keepdims=True))
    return e / fnp.sum(e, axis=-1, keepdims=True)


def peak_bandwidth(cp):
    """Bytes per second: memory clock (kHz) x bus width (bits) / 8 x 2 (double data rate)."""
    attrs = cp.cuda.Device().attributes
    return attrs["MemoryClockRate"] * 1e3 * attrs["GlobalMemoryBusWidth"] / 8 * 2


def timed(cp, fn):
    def call():
        fn()
        cp.cuda.Device().synchronize()
    return median_time(call, REPEATS, warmup=2)


def print_rows(title, rows, base="functorch_core"):
    print(f"\n{title}")
    for name, t in rows.items():
        if t is None:
            print(f"  {name:<34} {'not available':>14}")
        else:
            print(f"  {name:<34} {1e3 * t:10.3f} ms   {t / rows[base]:6.2f}x functorch_core")


def _jax_gpu():
    jax = optional_import("jax")
    if jax is None:
        return None
    try:
        return jax if jax.devices("gpu") else None
    except RuntimeError:        # no GPU plugin (jax[cuda12] not installed)
        return None


def _torch_cuda():
    torch = optional_import("torch")
    return torch if torch is not None and torch.cuda.is_available() else None


def bench_fused(cp, jax, torch):
    n = 1 << 24
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x = fc.device_put(host)
    f = fc.jit(chain)
    want = cp.tanh(0.5 * x + 1) * (1 / (1 + cp.exp(-x))) + cp.exp(-x ** 2)
    err = float(cp.max(cp.abs(f(x) - want)))
    fused = cp.fuse(lambda x: cp.tanh(0.5 * x + 1) * (1 / (1 + cp.exp(-x))) + cp.exp(-x ** 2))
    rows = {"functorch_core": timed(cp, lambda: f(x)),
            "CuPy by hand (unfused)": timed(cp, lambda: cp.tanh(0.5 * x + 1) * (
                1 / (1 + cp.exp(-x))) + cp.exp(-x ** 2)),
            "CuPy by hand (cupy.fuse)": timed(cp, lambda: fused(x)),
            "JAX jit (GPU)": None, "torch CUDA": None}
    if jax is not None:
        import jax.numpy as jnp
        g = jax.jit(lambda x: jnp.tanh(0.5 * x + 1) * jax.nn.sigmoid(x) + jnp.exp(-x ** 2))
        jx = jax.device_put(host, jax.devices("gpu")[0])
        rows["JAX jit (GPU)"] = median_time(lambda: g(jx).block_until_ready(), REPEATS, 2)
    if torch is not None:
        tx = torch.as_tensor(host, device="cuda")

        def tf():
            torch.tanh(0.5 * tx + 1) * torch.sigmoid(tx) + torch.exp(-tx ** 2)
            torch.cuda.synchronize()
        rows["torch CUDA"] = median_time(tf, REPEATS, 2)
    peak = peak_bandwidth(cp)
    frac = 2 * 4 * n / rows["functorch_core"] / peak
    print_rows(f"fused elementwise, 16M float32 (max |error| vs CuPy {err:.2e}); peak "
               f"bandwidth {peak / 1e9:.0f} GB/s, functorch_core reaches {100 * frac:.0f}% "
               "(target 80%)", rows)
    result("cuda fused elementwise 16M f32", rows["functorch_core"],
           jax=rows["JAX jit (GPU)"], torch=rows["torch CUDA"])


def _cupy_per_sample(cp, params, xs, ys):
    """Hand-written batched backprop: per-example gradients as batched outer products."""
    acts, logits = mlp_forward(cp.tanh, params, xs)
    p = cp.exp(logits - logits.max(axis=1, keepdims=True))
    delta = p / p.sum(axis=1, keepdims=True) - ys
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, _ = params[i]
        grads.append((acts[i][:, :, None] * delta[:, None, :], delta))
        if i:
            delta = (delta @ w.T) * (1 - acts[i] ** 2)
    return grads[::-1]


def bench_per_sample(cp, jax, torch):
    rng = np.random.default_rng(0)
    batch = 256
    params = mlp_params(rng)
    xs = rng.normal(size=(batch, 784)).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    dp, dx, dy = fc.device_put((params, xs, ys))
    f = fc.jit(fc.vmap(fc.grad(mlp_loss), in_dims=(None, 0, 0)))
    got, want = f(dp, dx, dy), _cupy_per_sample(cp, dp, dx, dy)
    err = max(float(cp.max(cp.abs(got[k][j] - want[k][j]))) for k in range(3) for j in range(2))
    rows = {"functorch_core": timed(cp, lambda: f(dp, dx, dy)),
            "CuPy by hand (batched backprop)": timed(cp, lambda: _cupy_per_sample(cp, dp, dx, dy)),
            "JAX jit(vmap(grad)) (GPU)": None, "torch.func vmap(grad) CUDA": None}
    if jax is not None:
        import jax.numpy as jnp

        loss = mlp_loss_of(jnp.tanh, jax.nn.logsumexp, jnp.sum)
        g = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
        gpu = jax.devices("gpu")[0]
        jp, jx, jy = jax.device_put((params, xs, ys), gpu)
        rows["JAX jit(vmap(grad)) (GPU)"] = median_time(
            lambda: jax.block_until_ready(g(jp, jx, jy)), REPEATS, 2)
    if torch is not None:
        from torch.func import grad, vmap

        tloss = mlp_loss_of(torch.tanh, lambda logits: torch.logsumexp(logits, 0), torch.sum)
        tp = [(torch.as_tensor(w, device="cuda"), torch.as_tensor(b, device="cuda"))
              for w, b in params]
        tx, ty = torch.as_tensor(xs, device="cuda"), torch.as_tensor(ys, device="cuda")
        tf = vmap(grad(tloss), in_dims=(None, 0, 0))

        def run():
            tf(tp, tx, ty)
            torch.cuda.synchronize()
        rows["torch.func vmap(grad) CUDA"] = median_time(run, REPEATS, 2)
    print_rows(f"per-sample gradients, MLP 784-512-512-10, batch {batch}, float32 "
               f"(max |error| vs CuPy by hand {err:.2e})", rows)
    result("cuda per-sample grads MLP b256", rows["functorch_core"],
           jax=rows["JAX jit(vmap(grad)) (GPU)"], torch=rows["torch.func vmap(grad) CUDA"])


def _cupy_layernorm_softmax(cp, x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / cp.sqrt(var + 1e-5) * g + b
    e = cp.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def bench_layernorm_softmax(cp, jax, torch):
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((4096, 1024)).astype(np.float32)
    gs, bs = rng.standard_normal(1024).astype(np.float32), np.zeros(1024, np.float32)
    x, g, b = fc.device_put((xs, gs, bs))
    f = fc.jit(layernorm_softmax)
    err = float(cp.max(cp.abs(f(x, g, b) - _cupy_layernorm_softmax(cp, x, g, b))))
    rows = {"functorch_core": timed(cp, lambda: f(x, g, b)),
            "CuPy by hand": timed(cp, lambda: _cupy_layernorm_softmax(cp, x, g, b)),
            "JAX jit (GPU)": None, "torch CUDA": None}
    if jax is not None:
        import jax.numpy as jnp

        def jf(x, g, b):
            mu = x.mean(-1, keepdims=True)
            y = (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
            return jax.nn.softmax(y, axis=-1)
        jj = jax.jit(jf)
        jx, jg, jb = jax.device_put((xs, gs, bs), jax.devices("gpu")[0])
        rows["JAX jit (GPU)"] = median_time(lambda: jj(jx, jg, jb).block_until_ready(),
                                            REPEATS, 2)
    if torch is not None:
        tx, tg, tb = (torch.as_tensor(a, device="cuda") for a in (xs, gs, bs))

        def tf():
            y = torch.nn.functional.layer_norm(tx, (1024,), tg, tb, 1e-5)
            torch.softmax(y, dim=-1)
            torch.cuda.synchronize()
        rows["torch CUDA"] = median_time(tf, REPEATS, 2)
    print_rows(f"layernorm + softmax, 4096x1024 float32 (max |error| vs CuPy {err:.2e})", rows)
    result("cuda layernorm+softmax 4096x1024", rows["functorch_core"],
           jax=rows["JAX jit (GPU)"], torch=rows["torch CUDA"])


def workload_graphs():
    """(name, graph) of each benchmark workload, traced with its benchmark shapes."""
    rng = np.random.default_rng(0)
    x = np.zeros(1 << 24, np.float32)
    params = mlp_params(rng)
    xs, ys = np.zeros((256, 784), np.float32), np.zeros((256, 10), np.float32)
    rows = np.zeros((4096, 1024), np.float32)
    vec = np.zeros(1024, np.float32)
    per_sample = fc.vmap(fc.grad(mlp_loss), in_dims=(None, 0, 0))
    return [("fused elementwise", fc.make_graph(chain)(x)),
            ("per-sample gradients", fc.make_graph(per_sample)(params, xs, ys)),
            ("layernorm+softmax", fc.make_graph(layernorm_softmax)(rows, vec, vec))]


def ptx_report():
    """Registers per thread and spills of every kernel of the workloads (ptxas -v)."""
    if availability.simulated():
        print("--ptx renders for real hardware: run it with NUMBA_ENABLE_CUDASIM unset")
        return 1
    from functorch_core.backends.cuda import runtime
    from functorch_core.backends.cuda.ptx import compile_elsewhere
    names, srcs = [], []
    for name, graph in workload_graphs():
        _, rendered, host = runtime.sources(graph)
        for src in (s for group in rendered.values() for s in group):
            names.append(name)
            srcs.append(src)
        if host:
            print(f"{name}: on the host: {'; '.join(sorted(set(host)))}")
    try:
        records = compile_elsewhere(srcs)
    except RuntimeError as e:
        print(e)
        return 1
    print(f"{'workload':<22} {'kernel':>6} {'target':>6} {'registers':>9} {'spills (st/ld B)':>16}")
    for r in records:
        print(f"{names[r['kernel']]:<22} {r['kernel']:>6} {r['cc']:>6} {r['registers']!s:>9} "
              f"{r['spill_stores']!s:>8}/{r['spill_loads']!s:<7}")
    return 0


def main():
    if "--ptx" in sys.argv:
        return ptx_report()
    why = "numba-cuda's simulator is on" if availability.simulated() else availability.missing()
    if why is not None:
        print(f"no GPU ({why}): nothing to measure")
        return 0
    import cupy as cp
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    print(f"device: {name.decode() if isinstance(name, bytes) else name}")
    jax, torch = _jax_gpu(), _torch_cuda()
    bench_fused(cp, jax, torch)
    bench_per_sample(cp, jax, torch)
    bench_layernorm_softmax(cp, jax, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
