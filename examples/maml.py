"""MAML (Finn et al. 2017) on sine-wave regression: the meta-gradient flows through a few
inner SGD steps taken functionally with ``functional_call``, a batch of tasks is handled by
``vmap``, and the whole meta step (Adam on the meta-parameters) is ``jit``-compiled.

Run: python examples/maml.py
"""

import time

import numpy as np

import functorch_core as fc
from functorch_core import nn, optim
from functorch_core.nn import functional as F

INNER_STEPS, INNER_LR, TASKS, SHOTS = 3, 0.05, 8, 10


def sample_tasks(rng, n_tasks, shots):
    """Sine waves ``a sin(x + phase)``: support and query sets of ``shots`` points each."""
    amp = rng.uniform(0.1, 5.0, (n_tasks, 1, 1))
    phase = rng.uniform(0, np.pi, (n_tasks, 1, 1))
    xs = rng.uniform(-5, 5, (2, n_tasks, shots, 1))
    ys = amp * np.sin(xs + phase)
    return xs[0].astype(np.float32), ys[0].astype(np.float32), \
        xs[1].astype(np.float32), ys[1].astype(np.float32)


def main(meta_steps=1000):
    fc.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(),
                          nn.Linear(40, 1))
    params = {k: np.array(v) for k, v in model.named_parameters()}

    def loss(params, x, y):
        return F.mse_loss(fc.functional_call(model, params, (x,)), y)

    def adapt(params, x, y):
        for _ in range(INNER_STEPS):
            grads = fc.grad(loss)(params, x, y)
            params = {k: params[k] - INNER_LR * grads[k] for k in params}
        return params

    def task_loss(params, xs, ys, xq, yq):
        """Query loss after adapting to the support set (second-order: grad through adapt)."""
        return loss(adapt(params, xs, ys), xq, yq)

    def meta_loss(params, xs, ys, xq, yq):
        return np.mean(fc.vmap(task_loss, in_dims=(None, 0, 0, 0, 0))(params, xs, ys, xq, yq))

    opt = optim.adam(lr=1e-3)

    @fc.jit
    def meta_step(params, opt_state, xs, ys, xq, yq):
        value, grads = fc.value_and_grad(meta_loss)(params, xs, ys, xq, yq)
        params, opt_state = opt.update(grads, opt_state, params)
        return params, opt_state, value

    evaluate = fc.jit(lambda p, xs, ys, xq, yq: (
        np.mean(fc.vmap(loss, in_dims=(None, 0, 0))(p, xq, yq)), meta_loss(p, xs, ys, xq, yq)))

    # The meta-gradient (through the inner steps) against central finite differences along
    # a random direction, in float64 at the initial parameters.
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    task = [a[0].astype(np.float64) for a in sample_tasks(np.random.default_rng(2), 1, SHOTS)]
    direction = {k: np.random.default_rng(3).standard_normal(v.shape) for k, v in p64.items()}
    g = fc.grad(task_loss)(p64, *task)
    eps = 1e-6
    shifted = [task_loss({k: p64[k] + s * eps * direction[k] for k in p64}, *task)
               for s in (1, -1)]
    fd = (float(shifted[0]) - float(shifted[1])) / (2 * eps)
    ad = float(sum(np.sum(g[k] * direction[k]) for k in g))
    print(f"meta-gradient along a random direction: autodiff {ad:.6f}, "
          f"finite differences {fd:.6f}")
    assert abs(ad - fd) <= 1e-4 * max(1.0, abs(fd)), (ad, fd)

    rng = np.random.default_rng(0)
    held_out = sample_tasks(np.random.default_rng(1), 64, SHOTS)
    before_adapt, after_adapt = evaluate(params, *held_out)
    print(f"held-out tasks before meta-training: query MSE {float(before_adapt):.3f}, "
          f"after {INNER_STEPS} inner steps {float(after_adapt):.3f}")
    opt_state = opt.init(params)
    t0 = time.perf_counter()
    history = []
    for step in range(meta_steps):
        params, opt_state, value = meta_step(params, opt_state, *sample_tasks(rng, TASKS, SHOTS))
        history.append(float(value))
        if step % 200 == 0 or step == meta_steps - 1:
            print(f"meta step {step}: meta loss (last 50 mean) {np.mean(history[-50:]):.3f}")
    print(f"{meta_steps} meta steps in {time.perf_counter() - t0:.2f} s")
    before, after = evaluate(params, *held_out)
    print(f"held-out tasks after meta-training: query MSE {float(before):.3f}, "
          f"after {INNER_STEPS} inner steps {float(after):.3f}")
    print(f"maml: post-adaptation loss {float(after_adapt):.3f} -> {float(after):.3f}")


if __name__ == "__main__":
    main()
