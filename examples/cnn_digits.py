"""A small CNN (Conv2d-BatchNorm2d-ReLU-MaxPool2d-Linear) trained on the 8x8 digits with a
``jit``-compiled step: ``value_and_grad`` of a ``functional_call`` loss, Adam, and BatchNorm's
running statistics carried out of ``grad`` through ``has_aux``. Evaluation runs in ``eval()``
mode; the state dict goes through a ``save``/``load`` round trip.

Run: python examples/cnn_digits.py
"""

import os
import tempfile
import time

import numpy as np
from _digits import load_digits

import functorch_core as fc
from functorch_core import nn, optim
from functorch_core.nn import functional as F


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 10))


def make_train_step(model, opt):
    """The ``jit``-compiled step ``(params, buffers, opt_state, x, y) -> (params, buffers,
    opt_state, loss)``: ``value_and_grad`` of ``model``'s cross-entropy through
    ``functional_call``, then ``opt``'s update (examples/deploy.py and benchmarks/nn.py
    train with it too)."""

    def loss_fn(params, buffers, x, y):
        logits = fc.functional_call(model, (params, buffers), (x,))
        # BatchNorm writes its running statistics into the buffers passed in (grad writes
        # them back to the caller's arrays); returning them as aux hands them on too.
        return F.cross_entropy(logits, y), buffers

    @fc.jit
    def train_step(params, buffers, opt_state, x, y):
        (loss, buffers), grads = fc.value_and_grad(loss_fn, has_aux=True)(params, buffers, x, y)
        params, opt_state = opt.update(grads, opt_state, params)
        return params, buffers, opt_state, loss
    return train_step


def train(model, x, y, epochs, batch=64, lr=1e-2, report=None):
    """Train ``model`` with Adam (``lr``) on ``epochs`` passes of seeded shuffled batches and
    load the result into it; ``report(epoch, mean loss)`` after each epoch. Returns the
    steps per epoch (examples/deploy.py and examples/deploy_c/build.py train with it)."""
    params = {k: np.array(v) for k, v in model.named_parameters()}
    buffers = {k: np.array(v) for k, v in model.named_buffers()}
    opt = optim.adam(lr=lr)
    opt_state = opt.init(params)
    train_step = make_train_step(model, opt)
    model.train()
    rng = np.random.default_rng(0)
    n = len(x) // batch * batch
    for epoch in range(epochs):
        order = rng.permutation(len(x))[:n].reshape(-1, batch)
        losses = []
        for idx in order:
            params, buffers, opt_state, loss = train_step(params, buffers, opt_state,
                                                          x[idx], y[idx])
            losses.append(loss)
        if report is not None:
            report(epoch, float(np.mean(losses)))
    model.load_state_dict({**params, **buffers})
    return len(order)


def main(epochs=8, batch=64):
    x_train, y_train, x_test, y_test = load_digits()
    x_train, x_test = x_train.reshape(-1, 1, 8, 8), x_test.reshape(-1, 1, 8, 8)
    fc.manual_seed(0)
    model = make_model()
    t0 = time.perf_counter()
    steps = train(model, x_train, y_train, epochs, batch,
                  report=lambda e, loss: print(f"epoch {e}: mean loss {loss:.4f}"))
    print(f"trained {epochs} epochs of {steps} steps in {time.perf_counter() - t0:.2f} s")
    tracked = model.state_dict()["1.num_batches_tracked"]
    assert tracked == epochs * steps, tracked

    model.eval()
    predict = fc.jit(lambda m, x: np.argmax(m(x), axis=1))
    pred = predict(model, x_test)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cnn_digits.npz")
        fc.save(dict(model.state_dict()), path)
        restored = make_model()
        restored.load_state_dict(fc.load(path))
    restored.eval()
    assert all(np.array_equal(v, restored.state_dict()[k])
               for k, v in model.state_dict().items())
    assert np.array_equal(predict(restored, x_test), pred), "restored model predicts differently"
    print("checkpoint round trip: state dict and predictions identical")
    print(f"test accuracy: {np.mean(pred == y_test):.4f}")


if __name__ == "__main__":
    main()
