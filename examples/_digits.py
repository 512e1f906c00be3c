"""Load the handwritten-digits data shipped in examples/data (see its README for the licence)."""

import gzip
import os

import numpy as np

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.csv.gz")


def load_digits(test_fraction=0.2, seed=0, dtype=np.float32):
    """Return (x_train, y_train, x_test, y_test): pixels scaled to [0, 1], integer labels."""
    with gzip.open(_PATH, "rt") as f:
        data = np.loadtxt(f, delimiter=",")
    x, y = (data[:, :64] / 16.0).astype(dtype), data[:, 64].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def one_hot(y, n=10, dtype=np.float32):
    return np.eye(n, dtype=dtype)[y]
