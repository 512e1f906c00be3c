"""nn workloads through functorch_core's jit vs torch.func (and JAX when importable).

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
Prints medians over repeats and ratios to the fastest, in one process (torch limited to
one thread, as the shared benchmark machine has two cores).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _timing
from _timing import median_time, optional_import

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 7


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


def _report(title, rows):
    print(f"\n{title}")
    best = min(t for t in rows.values() if t is not None)
    for name, t in rows.items():
        if t is None:
            print(f"  {name:<34} {'not run':>12}")
        else:
            print(f"  {name:<34} {1e3 * t:10.3f} ms {t / best:8.2f}x")


def per_sample_grads(torch):
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
    _report("(a) per-sample gradients, tutorial CNN, batch 64", rows)
    _timing.result("nn per-sample grads CNN b64", rows["functorch_core jit(vmap(grad))"],
                   torch=rows.get("torch.func vmap(grad)"))


def cnn_train_step(torch):
    fc.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    params = {k: np.array(v) for k, v in model.named_parameters()}
    buffers = {k: np.array(v) for k, v in model.named_buffers()}
    opt = fc.optim.adam(lr=1e-3)
    rng = np.random.default_rng(0)
    x = rng.random((64, 1, 8, 8), dtype=np.float32)
    y = rng.integers(0, 10, 64)

    def loss_fn(p, b, x, y):
        return F.cross_entropy(fc.functional_call(model, (p, b), (x,)), y), b

    @fc.jit
    def step(p, b, s, x, y):
        (loss, b), g = fc.value_and_grad(loss_fn, has_aux=True)(p, b, x, y)
        p, s = opt.update(g, s, p)
        return p, b, s, loss
    state = [params, buffers, opt.init(params)]

    def run():
        state[0], state[1], state[2], _ = step(*state, x, y)
    rows = {"functorch_core jit step": median_time(run, REPEATS * 5)}
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
        rows["torch eager step"] = median_time(trun, REPEATS * 5)
    _report("(b) cnn_digits training step (conv-BN-ReLU-pool-linear + Adam), batch 64", rows)
    _timing.result("nn cnn_digits train step b64", rows["functorch_core jit step"],
                   torch=rows.get("torch eager step"))


def ensemble(torch):
    models = []
    for s in range(10):
        fc.manual_seed(s)
        models.append(nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)))
    params, buffers = fc.stack_module_state(models)
    x = np.random.default_rng(0).standard_normal((64, 784)).astype(np.float32)
    run = fc.jit(fc.vmap(lambda p, b, x: fc.functional_call(models[0], (p, b), (x,)),
                         in_dims=(0, 0, None)))
    loop = fc.jit(lambda m, x: m(x))
    rows = {"functorch_core jit(vmap)": median_time(lambda: run(params, buffers, x), REPEATS),
            "functorch_core loop of jit": median_time(lambda: [loop(m, x) for m in models],
                                                      REPEATS)}
    if torch is not None:
        from torch.func import functional_call, stack_module_state, vmap
        tms = [torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                   torch.nn.Linear(128, 10)) for _ in range(10)]
        tp, tb = stack_module_state(tms)
        tx = torch.tensor(x)
        base = tms[0]
        tf = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))
        with torch.no_grad():
            rows["torch.func vmap"] = median_time(lambda: tf(tp, tb, tx), REPEATS)
    _report("(c) 10-model MLP ensemble forward, shared batch 64", rows)
    _timing.result("nn ensemble MLP x10 b64", rows["functorch_core jit(vmap)"],
                   torch=rows.get("torch.func vmap"))


if __name__ == "__main__":
    torch = optional_import("torch")
    if torch is not None:
        torch.set_num_threads(1)
    ensemble(torch)
    cnn_train_step(torch)
    per_sample_grads(torch)
