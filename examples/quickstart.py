"""Quickstart: trace, jit and train a small MLP written in plain NumPy.

Loads the handwritten-digits data shipped in examples/data (licence in its
README), prints the traced graph of the network, checks that the jitted
network computes what plain NumPy computes, then trains it with
``fc.grad`` and plain SGD and reports train/test accuracy.

Run: python examples/quickstart.py
"""

import gzip
import itertools
import os
import sys
import time

# The matrices here are small: BLAS threads only add overhead (a lot on a busy machine).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

try:
    import functorch_core as fc
except ModuleNotFoundError:     # run from a checkout that is not installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import functorch_core as fc

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.csv.gz")


def load_digits(test_fraction=0.2, seed=0):
    """(x_train, y_train, x_test, y_test): 64 pixels scaled to [0, 1] and integer labels."""
    with gzip.open(DATA, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    x = (table[:, :64] / 16.0).astype(np.float32)
    y = table[:, 64].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = round(len(x) * test_fraction)
    return x[order[n_test:]], y[order[n_test:]], x[order[:n_test]], y[order[:n_test]]


# The model: ordinary NumPy code, no functorch_core in sight.

def init_params(rng, sizes=(64, 32, 10)):
    return [{"w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             "b": np.zeros(n, np.float32)}
            for m, n in itertools.pairwise(sizes)]


def predict(params, x):
    hidden = np.tanh(x @ params[0]["w"] + params[0]["b"])
    return hidden @ params[1]["w"] + params[1]["b"]


def loss(params, x, labels_onehot):
    """Mean softmax cross-entropy."""
    logits = predict(params, x)
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels_onehot * log_probs, axis=1))


def accuracy(params, x, y):
    return float(np.mean(np.argmax(predict(params, x), axis=1) == y))


def main(steps=300, learning_rate=0.5):
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_digits()
    print(f"digits: {len(x_train)} training and {len(x_test)} test images of 8x8 pixels")
    params = init_params(np.random.default_rng(0))

    # 1. The traced graph of the forward pass.
    print("\nThe graph of predict(params, x) for a batch of 4:")
    print(fc.make_graph(predict)(params, x_test[:4]))

    # 2. jit runs the same computation.
    fast_predict = fc.jit(predict)
    eager, jitted = predict(params, x_test), fast_predict(params, x_test)
    assert jitted.dtype == eager.dtype == np.float32
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-6)
    print(f"\njit(predict) matches NumPy on the test set "
          f"(max abs difference {np.max(np.abs(jitted - eager)):.1e})")

    # 3. Training with gradients computed by fc.grad, compiled once by fc.jit.
    if not hasattr(fc, "grad"):
        print("\nfunctorch_core.grad is not available in this build: no training.")
        return
    onehot = np.eye(10, dtype=np.float32)[y_train]
    value_and_grad = fc.jit(fc.value_and_grad(loss)) if hasattr(fc, "value_and_grad") \
        else fc.jit(lambda p, x, t: (loss(p, x, t), fc.grad(loss)(p, x, t)))
    print(f"\nTraining with full-batch SGD, learning rate {learning_rate}, {steps} steps:")
    for step in range(steps + 1):
        value, grads = value_and_grad(params, x_train, onehot)
        if step % 50 == 0:
            print(f"  step {step:4d}  loss {float(value):.4f}  "
                  f"train accuracy {accuracy(params, x_train, y_train):.3f}")
        if step < steps:
            params = fc.tree_map(lambda p, g: p - learning_rate * g, params, grads)
    train_acc, test_acc = accuracy(params, x_train, y_train), accuracy(params, x_test, y_test)
    print(f"\ntrain accuracy {train_acc:.3f}, test accuracy {test_acc:.3f} "
          f"({time.perf_counter() - start:.1f} s in all)")
    assert test_acc > 0.9, "training did not reach 90% test accuracy"


if __name__ == "__main__":
    main()
