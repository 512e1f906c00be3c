"""Per-sample gradients with vmap(grad(...)), checked against a per-example loop,
and one differentially private (DP-SGD style) update built from them; then the same for an
``nn`` module through ``functional_call`` (the functorch tutorial's form,
``vmap(grad(loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)``).

Run: python examples/per_sample_grads.py
"""

import itertools
import time

import numpy as np
from _digits import load_digits, one_hot

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F


def init_mlp(sizes, rng):
    return [{"w": rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(np.float32),
             "b": np.zeros(n, np.float32)} for m, n in itertools.pairwise(sizes)]


def predict(params, x):
    for layer in params[:-1]:
        x = np.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss(params, x, y_onehot):
    """Softmax cross-entropy of one example (x: (64,), y_onehot: (10,)) or a batch."""
    logits = predict(params, x)
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    return -np.mean(np.sum(y_onehot * log_probs, axis=-1))


def main():
    rng = np.random.default_rng(0)
    x_train, y_train, _, _ = load_digits()
    params = init_mlp([64, 32, 10], rng)
    xb, yb = x_train[:64], one_hot(y_train[:64])

    per_sample = fc.vmap(fc.grad(loss), in_dims=(None, 0, 0))
    t0 = time.perf_counter()
    grads = per_sample(params, xb, yb)
    t1 = time.perf_counter()
    print(f"per-sample gradients of {len(xb)} examples: "
          f"w0 {grads[0]['w'].shape}, b0 {grads[0]['b'].shape}  ({1e3 * (t1 - t0):.1f} ms)")

    loop = [fc.grad(loss)(params, xb[i], yb[i]) for i in range(len(xb))]
    worst = max(float(np.max(np.abs(grads[k][name] - np.stack([g[k][name] for g in loop]))))
                for k in range(len(params)) for name in ("w", "b"))
    print(f"largest difference from a per-example loop: {worst:.2e}")
    assert worst < 1e-5

    # DP-SGD: clip each example's gradient to norm C, average, add Gaussian noise.
    clip, noise, lr = 1.0, 0.5, 0.5
    leaves, tree = fc.tree_flatten(grads)
    norms = np.sqrt(sum(np.sum(g.reshape(len(xb), -1) ** 2, axis=1) for g in leaves))
    scale = np.minimum(1.0, clip / (norms + 1e-12))
    noisy = [(np.tensordot(scale, g, axes=1) + noise * clip * rng.normal(size=g.shape[1:]))
             / len(xb) for g in leaves]
    new_params = fc.tree_map(lambda p, g: p - lr * g.astype(np.float32), params,
                             fc.tree_unflatten(tree, noisy))
    print(f"per-example gradient norms: median {np.median(norms):.3f}, max {norms.max():.3f}; "
          f"clipped at {clip}")
    print(f"batch loss before {loss(params, xb, yb):.4f}, after one DP-SGD step "
          f"{loss(new_params, xb, yb):.4f}")
    module_form(xb, y_train[:64])


def module_form(xb, yb):
    """Per-sample gradients of an nn module's loss, the functorch tutorial's way."""
    fc.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
    params = {k: np.array(v) for k, v in model.named_parameters()}
    buffers = {k: np.array(v) for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch, targets = sample[None], target[None]      # one example as a batch of one
        predictions = fc.functional_call(model, (params, buffers), (batch,))
        return F.cross_entropy(predictions, targets)

    per_sample = fc.vmap(fc.grad(compute_loss), in_dims=(None, None, 0, 0))
    t0 = time.perf_counter()
    grads = per_sample(params, buffers, xb, yb)
    t1 = time.perf_counter()
    loop = [fc.grad(compute_loss)(params, buffers, xb[i], yb[i]) for i in range(len(xb))]
    worst = max(float(np.max(np.abs(grads[k] - np.stack([g[k] for g in loop]))))
                for k in params)
    print(f"module form: per-sample gradients {({k: v.shape for k, v in grads.items()})} "
          f"({1e3 * (t1 - t0):.1f} ms)")
    print(f"module form: largest difference from a per-example loop: {worst:.2e}")
    assert worst < 1e-5


if __name__ == "__main__":
    main()
