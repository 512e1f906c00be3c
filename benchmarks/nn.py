"""nn workloads through functorch_core's jit vs torch.func / torch eager and JAX ``jit``.

Run from the repository root: ``python3 benchmarks/nn.py [--quick]``.
(a) per-sample gradients of the functorch tutorial CNN (conv 1->32, conv 32->64, 3x3,
    max-pool 2, linear 9216->128->10) on a batch of 64 1x28x28 float32 images:
    ``vmap(grad(loss of functional_call), in_dims=(None, None, 0, 0))``;
(b) one training step of examples/cnn_digits.py's model (Conv2d 1->16 3x3 pad 1, BatchNorm2d,
    ReLU, MaxPool2d 2, Linear 256->10) on a batch of 64 1x8x8 images: cross-entropy,
    gradients, BatchNorm running statistics and an Adam update, ``jit``-compiled
    (torch: ``zero_grad``/``backward``/``Adam.step`` in train mode);
(c) a 10-model ensemble forward of an MLP 784->128->10 on a shared batch of 64:
    ``vmap(functional_call over stack_module_state, in_dims=(0, 0, None))``.
Prints medians over repeats ((b), (c): over at least a second of calls) and ratios to the
fastest, in one process (torch limited to one thread, as the shared benchmark machine has
two cores, and NumPy's OpenBLAS too unless OPENBLAS_NUM_THREADS is set). The JAX versions
are the same models written with ``jax.lax`` (same shapes, float32, same update formulas).
"""

from __future__ import annotations

import os
import sys

# OpenBLAS on one thread, as torch below: its own two threads meet at a barrier inside
# every gemm and stall when one is preempted on the shared two-core host (per-sample
# gradients 0.46 s -> 1-6 s); functorch_core's conv still splits over its two workers.
# Set OPENBLAS_NUM_THREADS to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (b) is examples/cnn_digits.py's model and training step
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "examples"))

import _timing
from _timing import median_time, optional_import, report
from cnn_digits import make_model, make_train_step

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 7
# (b) and (c) take well under a millisecond, where one preempted call moves a median of a
# few: their medians run over at least this many seconds of calls, each peer alike
FAST_MIN_TIME = 0.1 if QUICK else 1.0


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
        self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(fc.numpy.reshape(x, (x.shape[0], -1))))
        return F.log_softmax(self.fc2(x), 1)


def per_sample_grads(torch, jax):
    fc.manual_seed(0)
    model = CNN()
    params = {k: np.array(v) for k, v in model.named_parameters()}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    t = rng.integers(0, 10, 64)

    def loss(p, b, xi, ti):
        out = fc.functional_call(model, (p, b), (xi[None],))
        return F.nll_loss(out, ti[None])
    step = fc.jit(fc.vmap(fc.grad(loss), in_dims=(None, None, 0, 0)))
    rows = {"functorch_core jit(vmap(grad))": median_time(lambda: step(params, {}, x, t),
                                                         REPEATS)}
    if torch is not None:
        from torch.func import functional_call, grad, vmap

        class TCNN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1, self.conv2 = torch.nn.Conv2d(1, 32, 3), torch.nn.Conv2d(32, 64, 3)
                self.fc1, self.fc2 = torch.nn.Linear(9216, 128), torch.nn.Linear(128, 10)

            def forward(self, x):
                x = torch.relu(self.conv1(x))
                x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
                x = torch.relu(self.fc1(x.flatten(1)))
                return torch.log_softmax(self.fc2(x), 1)
        tm = TCNN()
        tp = {k: v.detach() for k, v in tm.named_parameters()}
        tx, tt = torch.tensor(x), torch.tensor(t)

        def tloss(p, xi, ti):
            return torch.nn.functional.nll_loss(functional_call(tm, p, (xi[None],)), ti[None])
        tstep = vmap(grad(tloss), in_dims=(None, 0, 0))
        rows["torch.func vmap(grad)"] = median_time(lambda: tstep(tp, tx, tt), REPEATS)
    if jax is not None:
        jstep = jax.jit(jax.vmap(jax.grad(_jax_cnn_loss), in_axes=(None, 0, 0)))
        jp = {k: jax.numpy.asarray(v) for k, v in params.items()}
        jx, jt = jax.numpy.asarray(x), jax.numpy.asarray(t)
        ours, theirs = step(params, {}, x, t), jstep(jp, jx, jt)
        for k in params:               # the same computation: per-sample gradients agree
            np.testing.assert_allclose(np.asarray(theirs[k]), ours[k], rtol=2e-3, atol=2e-5)
        rows["JAX jit(vmap(grad))"] = median_time(
            lambda: jax.block_until_ready(jstep(jp, jx, jt)), REPEATS)
    report("(a) per-sample gradients, tutorial CNN, batch 64", rows, width=34,
           missing="not run")
    _timing.result("nn per-sample grads CNN b64", rows["functorch_core jit(vmap(grad))"],
                   jax=rows.get("JAX jit(vmap(grad))"), torch=rows.get("torch.func vmap(grad)"))


def _jax_conv(x, w, b, padding):
    from jax import lax
    y = lax.conv_general_dilated(x, w, (1, 1), padding,
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def _jax_max_pool2(x):
    from jax import lax
    return lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _jax_cnn_loss(p, xi, ti):
    """The tutorial CNN's nll loss of one example, in JAX."""
    import jax
    x = jax.nn.relu(_jax_conv(xi[None], p["conv1.weight"], p["conv1.bias"], "VALID"))
    x = _jax_max_pool2(jax.nn.relu(_jax_conv(x, p["conv2.weight"], p["conv2.bias"], "VALID")))
    x = jax.nn.relu(x.reshape(1, -1) @ p["fc1.weight"].T + p["fc1.bias"])
    out = jax.nn.log_softmax(x @ p["fc2.weight"].T + p["fc2.bias"], axis=1)
    return -out[0, ti]


def cnn_train_step(torch, jax):
    fc.manual_seed(0)
    model = make_model()
    params = {k: np.array(v) for k, v in model.named_parameters()}
    buffers = {k: np.array(v) for k, v in model.named_buffers()}
    opt = fc.optim.adam(lr=1e-3)
    rng = np.random.default_rng(0)
    x = rng.random((64, 1, 8, 8), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    step = make_train_step(model, opt)
    state = [params, buffers, opt.init(params)]

    def run():
        state[0], state[1], state[2], _ = step(*state, x, y)
    rows = {"functorch_core jit step": median_time(run, REPEATS * 5, min_time=FAST_MIN_TIME)}
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
                                 torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                 torch.nn.Linear(16 * 4 * 4, 10))
        topt = torch.optim.Adam(tm.parameters(), lr=1e-3)
        tx, ty = torch.tensor(x), torch.tensor(y)

        def trun():
            topt.zero_grad()
            torch.nn.functional.cross_entropy(tm(tx), ty).backward()
            topt.step()
        rows["torch eager step"] = median_time(trun, REPEATS * 5, min_time=FAST_MIN_TIME)
    if jax is not None:
        jstep = _jax_train_step(jax)
        jnp = jax.numpy
        jstate = [{k: jnp.asarray(v) for k, v in params.items()},
                  {k: jnp.asarray(v) for k, v in buffers.items()}, None]
        jstate[2] = {"step": jnp.zeros((), jnp.int32),
                     "m": {k: jnp.zeros_like(v) for k, v in jstate[0].items()},
                     "v": {k: jnp.zeros_like(v) for k, v in jstate[0].items()}}
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        # one step agrees: loss and running stats; parameters within 2 lr (Adam's first
        # step is lr * sign(g), and the conv bias's gradient before BatchNorm is ~0: noise)
        first = step(params, buffers, opt.init(params), x, y)
        jfirst = jstep(*jstate, jx, jy)
        np.testing.assert_allclose(float(jfirst[3]), float(first[3]), rtol=1e-5)
        for k in first[1]:
            np.testing.assert_allclose(np.asarray(jfirst[1][k]), first[1][k], rtol=1e-4,
                                       atol=1e-6, err_msg=k)
        for k in first[0]:
            np.testing.assert_allclose(np.asarray(jfirst[0][k]), first[0][k], atol=2e-3,
                                       err_msg=k)

        def jrun():
            jstate[0], jstate[1], jstate[2], loss = jstep(*jstate, jx, jy)
            jax.block_until_ready(loss)
        rows["JAX jit step"] = median_time(jrun, REPEATS * 5, min_time=FAST_MIN_TIME)
    report("(b) cnn_digits training step (conv-BN-ReLU-pool-linear + Adam), batch 64", rows,
           width=34, missing="not run")
    _timing.result("nn cnn_digits train step b64", rows["functorch_core jit step"],
                   jax=rows.get("JAX jit step"), torch=rows.get("torch eager step"))


def _jax_train_step(jax):
    """cnn_digits' training step in JAX: BatchNorm's running statistics returned, torch's
    Adam (lr 1e-3) written out."""
    jnp = jax.numpy

    def forward(p, b, x):
        h = _jax_conv(x, p["0.weight"], p["0.bias"], ((1, 1), (1, 1)))
        mean, var = h.mean((0, 2, 3)), h.var((0, 2, 3))
        n = h.size // h.shape[1]
        new_b = {"1.running_mean": 0.9 * b["1.running_mean"] + 0.1 * mean,
                 "1.running_var": 0.9 * b["1.running_var"] + 0.1 * var * (n / (n - 1)),
                 "1.num_batches_tracked": b["1.num_batches_tracked"] + 1}
        new_b = jax.tree_util.tree_map(jax.lax.stop_gradient, new_b)
        h = (h - mean[None, :, None, None]) / jnp.sqrt(var[None, :, None, None] + 1e-5)
        h = jax.nn.relu(h * p["1.weight"][None, :, None, None] + p["1.bias"][None, :, None, None])
        h = _jax_max_pool2(h).reshape(x.shape[0], -1)
        return h @ p["5.weight"].T + p["5.bias"], new_b

    def loss_fn(p, b, x, y):
        logits, new_b = forward(p, b, x)
        logp = jax.nn.log_softmax(logits, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1)), new_b

    @jax.jit
    def step(p, b, s, x, y):
        (loss, b), g = jax.value_and_grad(loss_fn, has_aux=True)(p, b, x, y)
        t = s["step"] + 1
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, s["m"], g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, s["v"], g)
        c1, c2 = 1 - 0.9 ** t, jnp.sqrt(1 - 0.999 ** t)
        p = jax.tree_util.tree_map(
            lambda p, m, v: p - (1e-3 / c1) * m / (jnp.sqrt(v) / c2 + 1e-8), p, m, v)
        return p, b, {"step": t, "m": m, "v": v}, loss
    return step


def ensemble(torch, jax):
    models = []
    for s in range(10):
        fc.manual_seed(s)
        models.append(nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)))
    params, buffers = fc.stack_module_state(models)
    x = np.random.default_rng(0).standard_normal((64, 784)).astype(np.float32)
    run = fc.jit(fc.vmap(lambda p, b, x: fc.functional_call(models[0], (p, b), (x,)),
                         in_dims=(0, 0, None)))
    loop = fc.jit(lambda m, x: m(x))
    rows = {"functorch_core jit(vmap)": median_time(lambda: run(params, buffers, x), REPEATS,
                                                    min_time=FAST_MIN_TIME),
            "functorch_core loop of jit": median_time(lambda: [loop(m, x) for m in models],
                                                      REPEATS, min_time=FAST_MIN_TIME)}
    if torch is not None:
        from torch.func import functional_call, stack_module_state, vmap
        tms = [torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                   torch.nn.Linear(128, 10)) for _ in range(10)]
        tp, tb = stack_module_state(tms)
        tx = torch.tensor(x)
        base = tms[0]
        tf = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))
        with torch.no_grad():
            rows["torch.func vmap"] = median_time(lambda: tf(tp, tb, tx), REPEATS,
                                                   min_time=FAST_MIN_TIME)
    if jax is not None:
        jnp = jax.numpy
        jp = {k: jnp.asarray(v) for k, v in params.items()}

        def jmlp(p, x):
            h = jax.nn.relu(x @ p["0.weight"].T + p["0.bias"])
            return h @ p["2.weight"].T + p["2.bias"]
        jrun = jax.jit(jax.vmap(jmlp, in_axes=(0, None)))
        jx = jnp.asarray(x)
        rows["JAX jit(vmap)"] = median_time(lambda: jax.block_until_ready(jrun(jp, jx)),
                                            REPEATS, min_time=FAST_MIN_TIME)
    report("(c) 10-model MLP ensemble forward, shared batch 64", rows, width=34,
           missing="not run")
    _timing.result("nn ensemble MLP x10 b64", rows["functorch_core jit(vmap)"],
                   jax=rows.get("JAX jit(vmap)"), torch=rows.get("torch.func vmap"))


if __name__ == "__main__":
    torch = optional_import("torch")
    if torch is not None:
        torch.set_num_threads(1)
    jax = optional_import("jax")
    ensemble(torch, jax)
    cnn_train_step(torch, jax)
    per_sample_grads(torch, jax)
