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
