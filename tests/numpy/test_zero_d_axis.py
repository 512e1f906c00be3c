"""0-d arrays with axis 0 or -1: NumPy takes them as 1-d in repeat, take, argsort."""

import numpy as np
import pytest

from functorch_core import jit, vmap

ZERO_D = {
    "repeat": lambda x: np.repeat(x, 2, axis=0),
    "repeat_neg": lambda x: np.repeat(x, 3, axis=-1),
    "argsort": lambda x: np.argsort(x, axis=0),
    "argsort_default": lambda x: np.argsort(x),
    "take": lambda x: np.take(x, np.array([0, 0]), axis=0),
    "take_scalar": lambda x: np.take(x, 0, axis=0),
    "squeeze": lambda x: np.squeeze(x, axis=0),
    "method_repeat": lambda x: x.repeat(2, axis=0),
    "method_argsort": lambda x: x.argsort(axis=0),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_zero_d_with_axis_matches_numpy(name):
    f, x = ZERO_D[name], np.array(1.5)
    want = f(x)
    got = jit(f)(x)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("f", [lambda x: np.repeat(x, 2, axis=1),
                               lambda x: np.argsort(x, axis=-2),
                               lambda x: np.take(x, np.array([0]), axis=1),
                               lambda x: np.sort(x, axis=0)])
def test_zero_d_with_other_axes_still_raises_as_numpy(f):
    x = np.array(1.5)
    with pytest.raises(np.exceptions.AxisError):
        f(x)
    with pytest.raises(np.exceptions.AxisError):
        jit(f)(x)


def test_zero_d_repeat_under_vmap():
    xs = np.arange(3.0)
    np.testing.assert_array_equal(vmap(lambda x: np.repeat(x, 2, axis=0))(xs),
                                  np.stack([np.repeat(x, 2, axis=0) for x in xs]))
