"""``x.sort()`` and ``x.shape = ...`` on tracers: in-place NumPy that functionalize
expresses, with NumPy's results (jit, grad, vmap) and NumPy's errors."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core.testing import check_grads

X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])


def sort_copy(x, axis=-1):
    y = x * 1.0
    y.sort(axis=axis)
    return y


def reshape_in_place(x):
    z = x + 0.0
    row = z[1]                  # a view taken before: sees writes through the new shape
    z.shape = (3, 2)
    z[0, 0] = 100.0
    z[2] *= 2.0
    return z, row * 1.0


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_sort_in_place_matches_numpy(axis):
    want = sort_copy(X, axis)
    np.testing.assert_array_equal(fc.jit(sort_copy, static_argnums=1)(X, axis), want)
    got = fc.vmap(lambda x: sort_copy(x, axis))(np.stack([X, -X]))
    np.testing.assert_array_equal(got, np.stack([sort_copy(X, axis), sort_copy(-X, axis)]))


def test_sort_in_place_of_an_argument_writes_back_like_numpy():
    def f(x):
        assert x.sort(axis=0) is None
        return x * 2.0
    a, b = X.copy(), X.copy()
    np.testing.assert_array_equal(fc.jit(f)(a), f(b))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        fc.jit(lambda x: x.sort(axis=None))(X.copy())


def test_sort_in_place_gradients():
    w = np.arange(6.0).reshape(2, 3)
    g = fc.grad(lambda x: (sort_copy(x) * w).sum())(X)
    np.testing.assert_array_equal(g, [[2.0, 0.0, 1.0], [3.0, 5.0, 4.0]])
    check_grads(lambda x: sort_copy(x) ** 2, (X + 0.25,), order=2)


def test_shape_assignment_matches_numpy_and_aliases_see_it():
    want = reshape_in_place(X)
    for got in (fc.jit(reshape_in_place)(X), fc.functionalize(reshape_in_place)(X)):
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    batched = fc.vmap(reshape_in_place)(np.stack([X, X + 1]))
    for g, w0, w1 in zip(batched, reshape_in_place(X), reshape_in_place(X + 1), strict=True):
        np.testing.assert_array_equal(g, np.stack([w0, w1]))
    check_grads(lambda x: reshape_in_place(x)[0] ** 2, (X,), order=2)


def test_shape_assignment_errors_are_numpy_s():
    def needs_copy(x):
        t = (x * 1.0).T
        t.shape = (6,)
        return t

    def wrong_size(x):
        y = x * 1.0
        y.shape = (4,)
        return y
    for f, err, match in [(needs_copy, AttributeError, "Incompatible shape for in-place"),
                          (wrong_size, ValueError, r"cannot reshape array of size 6 into "
                                                   r"shape \(4,\)")]:
        with pytest.raises(err, match=match):
            f(X)
        with pytest.raises(err, match=match):
            fc.jit(f)(X)


def test_shape_of_an_argument_is_refused_by_name():
    def f(x):
        x.shape = (6,)
        return x
    with pytest.raises(TypeError, match=r"x\.shape = \(6,\) on an argument of the traced "
                                        r"function \(jit\(.*f\)\).*x = x\.reshape"):
        fc.jit(f)(X)


def test_minus_one_and_trivial_shapes():
    def f(x):
        y = (x * 1.0).T         # strided, but dropping and adding unit axes is a view
        y.shape = (3, 1, 2)
        y.shape = (3, 2)
        z = x * 2.0
        z.shape = (-1,)
        return y, z
    for g, w in zip(fc.jit(f)(X), f(X), strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
