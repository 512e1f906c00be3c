"""``nn.LSTM`` forward + backward through functorch_core, PyTorch and JAX, in one process.

    python benchmarks/rnn.py [--quick]

One LSTM layer, input 256, hidden 256, sequence 100, batch 32, float32; the loss is
``mean(output**2) + mean(h_n)`` and each row computes it and its gradient with respect to
every weight, from the same weights and inputs:

- functorch_core: ``jit(value_and_grad)`` of a ``functional_call`` loss of ``nn.LSTM``;
- torch: ``torch.nn.LSTM`` eager forward + ``backward()``, with 1 thread and the default;
- JAX: ``jit(value_and_grad)`` of a hand-written ``lax.scan`` LSTM with the same gate order.

Medians over repeats; ratios against functorch_core. A loop of small GEMMs suffers when
OpenBLAS's (and torch's) threads compete on a loaded machine: compare with
``OPENBLAS_NUM_THREADS=1`` as well.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_time, optional_import, report, result

import functorch_core as fc
from functorch_core import nn

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 7
IN, H, T, BATCH = 256, 256, 100, 32
jax = optional_import("jax")
torch = optional_import("torch")


def ours(model, x):
    params = {k: np.array(v) for k, v in model.named_parameters()}

    def loss(p, x):
        out, (h, _) = fc.functional_call(model, p, (x,))
        return np.mean(out * out) + np.mean(h)
    f = fc.jit(fc.value_and_grad(loss))
    value, grads = f(params, x)
    return (lambda: f(params, x)), float(value), grads


def jax_lstm(params, x):
    jnp = jax.numpy

    def loss(p, x):
        gi = x @ p["weight_ih_l0"].T + p["bias_ih_l0"] + p["bias_hh_l0"]

        def cell(carry, g):
            h, c = carry
            z = g + h @ p["weight_hh_l0"].T
            i, f, gg, o = (z[:, k * H:(k + 1) * H] for k in range(4))
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(gg)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zeros = jnp.zeros((BATCH, H), jnp.float32)
        (h, _), out = jax.lax.scan(cell, (zeros, zeros), gi)
        return jnp.mean(out * out) + jnp.mean(h)
    f = jax.jit(jax.value_and_grad(loss))
    value, grads = f(params, x)
    return (lambda: f(params, x)[0].block_until_ready()), float(value), grads


def torch_lstm(sd, x, threads):
    torch.set_num_threads(threads)
    model = torch.nn.LSTM(IN, H)
    model.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    xt = torch.tensor(x)

    def run():
        model.zero_grad()
        out, (h, _) = model(xt)
        loss = (out * out).mean() + h.mean()
        loss.backward()
        return loss
    value = float(run().detach())
    return run, value, {k: p.grad.numpy().copy() for k, p in model.named_parameters()}


def main():
    fc.manual_seed(0)
    model = nn.LSTM(IN, H)
    x = np.random.default_rng(0).standard_normal((T, BATCH, IN)).astype(np.float32)
    sd = {k: np.asarray(v) for k, v in model.state_dict().items()}
    rows, fns = {}, {}
    run, value, grads = ours(model, x)
    fns["functorch_core jit(value_and_grad)"] = run
    peers = {}
    if torch is not None:
        default_threads = torch.get_num_threads()
        for threads, name in ((1, "torch eager, 1 thread"),
                              (default_threads, f"torch eager, {default_threads} threads")):
            run_t, value_t, grads_t = torch_lstm(sd, x, threads)
            np.testing.assert_allclose(value, value_t, rtol=1e-4)
            for k, g in grads_t.items():
                np.testing.assert_allclose(grads[k], g, rtol=2e-3, atol=1e-6, err_msg=k)
            fns[name] = (lambda run_t=run_t, threads=threads:
                         (torch.set_num_threads(threads), run_t()))
            peers.setdefault("torch", []).append(name)
    if jax is not None:
        run_j, value_j, grads_j = jax_lstm(sd, x)
        np.testing.assert_allclose(value, value_j, rtol=1e-4)
        for k, g in grads_j.items():
            np.testing.assert_allclose(grads[k], np.asarray(g), rtol=2e-3, atol=1e-6, err_msg=k)
        fns["jax jit(value_and_grad), lax.scan"] = run_j
        peers["jax"] = ["jax jit(value_and_grad), lax.scan"]
    for name, fn in fns.items():
        rows[name] = median_time(fn, REPEATS)
    if torch is not None:
        torch.set_num_threads(default_threads)
    report(f"nn.LSTM({IN}, {H}) seq {T} batch {BATCH} f32, loss + grad of every weight",
           rows, "functorch_core jit(value_and_grad)")
    best = {p: min(rows[n] for n in names) for p, names in peers.items()}
    result(f"nn.LSTM h{H} T{T} b{BATCH} fwd+bwd", rows["functorch_core jit(value_and_grad)"],
           jax=best.get("jax"), torch=best.get("torch"))


if __name__ == "__main__":
    main()
