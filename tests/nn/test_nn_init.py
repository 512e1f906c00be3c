"""nn.init: PyTorch's formulas, drawing from the global generator, in place."""

import math

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import init


def test_gains():
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(1 / 3)
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")


def test_in_place_fills_and_bounds():
    lin = nn.Linear(200, 100)
    w = lin.weight
    fc.manual_seed(0)
    assert init.kaiming_uniform_(w, a=math.sqrt(5)) is w
    assert lin.weight is w and w.dtype == np.float32
    assert np.abs(w).max() <= 1 / math.sqrt(200) and np.abs(w).max() > 0.95 / math.sqrt(200)
    a = math.sqrt(6 / 300)
    init.xavier_uniform_(w)
    assert np.abs(w).max() <= a and np.abs(w).max() > 0.95 * a
    init.xavier_normal_(w)
    assert abs(w.std() - math.sqrt(2 / 300)) < 0.05 * math.sqrt(2 / 300)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.std() - math.sqrt(2 / 100)) < 0.05 * math.sqrt(2 / 100)
    init.trunc_normal_(w, mean=1.0, std=2.0, a=0.0, b=3.0)
    assert w.min() >= 0.0 and w.max() <= 3.0
    init.normal_(w, 3.0, 0.5)
    assert abs(w.mean() - 3.0) < 0.01
    init.constant_(lin.bias, 0.25)
    assert np.all(lin.bias == 0.25)
    init.zeros_(lin.bias)
    init.ones_(w)
    assert np.all(lin.bias == 0) and np.all(w == 1)
    sq = np.zeros((3, 4))
    np.testing.assert_array_equal(init.eye_(sq), np.eye(3, 4))


def test_global_generator_reproducible_and_errors():
    x, y = np.zeros((4, 5)), np.zeros((4, 5))
    fc.manual_seed(7)
    init.uniform_(x, -1, 1)
    fc.manual_seed(7)
    init.uniform_(y, -1, 1)
    np.testing.assert_array_equal(x, y)
    assert np.all((x >= -1) & (x < 1)) and len(np.unique(x)) == 20
    with pytest.raises(ValueError, match=r"fewer than 2 dimensions \(shape \(3,\)\)"):
        init.xavier_uniform_(np.zeros(3))
    with pytest.raises(ValueError, match="mode 'fan_avg' not supported"):
        init.kaiming_uniform_(x, mode="fan_avg")


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (6, 2, 3), (3, 2, 2, 2)])
def test_orthogonal_is_orthogonal_in_place(shape):
    w = np.zeros(shape, np.float32)
    fc.manual_seed(1)
    assert init.orthogonal_(w, gain=2.0) is w
    m = w.reshape(shape[0], -1).astype(np.float64)
    small = min(m.shape)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    v = np.zeros(shape, np.float32)
    fc.manual_seed(1)
    np.testing.assert_array_equal(init.orthogonal_(v, gain=2.0), w)


def test_orthogonal_is_haar_distributed():
    # the sign fix makes Q Haar-distributed: entries symmetric about 0 with E[q^2] = 1/n
    # (LAPACK's Householder QR alone leaves diag(R) negative, biasing Q[0, 0] away from 0)
    fc.manual_seed(0)
    firsts = np.array([init.orthogonal_(np.zeros((3, 3)))[0, 0] for _ in range(600)])
    assert abs(firsts.mean()) < 0.08
    assert abs((firsts ** 2).mean() - 1 / 3) < 0.05
    with pytest.raises(ValueError, match=r"orthogonal_: only arrays with 2 or more dimensions "
                                         r"are supported, got shape \(3,\)"):
        init.orthogonal_(np.zeros(3))
