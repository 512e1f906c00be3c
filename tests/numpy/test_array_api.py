"""Derivatives and errors of the NumPy functions of functorch_core/numpy/_array_api.py and
the new ufuncs (fmod, heaviside, float_power, signbit, divmod, modf).

Values and dtypes against NumPy (eager, jit, NumPy's API on tracers) and vmap come from
their op-table rows (tests/op_table.py); the smooth ones' derivatives from the op table
crossed with check_grads (tests/transforms/test_autodiff.py). Here: derivatives of the
piecewise functions at points away from their jumps, and the refusals' messages.
"""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
from functorch_core.ir import TracerError

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.testing import check_grads

X = np.array([-3.7, -1.2, 0.4, 2.9, 5.3])
Y = np.array([1.5, -0.7, 0.9, -2.2, 1.6])

PIECEWISE = {
    "fmod": (lambda x, y: np.fmod(x, y), (X, Y)),
    "divmod_remainder": (lambda x, y: np.divmod(x, y)[1], (X, Y)),
    "modf_fraction": (lambda x: np.modf(x)[0], (X,)),
    "heaviside_h0": (lambda h: np.heaviside(np.array([-1.0, 0.0, 2.0, 0.0]), h),
                     (np.array([0.3, 0.6, 0.9, 1.2]),)),
}


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_derivatives(name):
    f, args = PIECEWISE[name]
    check_grads(f, args, order=2)


def test_fmod_derivatives_are_those_of_the_truncated_quotient():
    dx, dy = fc.grad(lambda x, y: np.sum(np.fmod(x, y)), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(dx, np.ones_like(X))
    np.testing.assert_allclose(dy, -np.trunc(X / Y))


def test_heaviside_is_flat_in_x():
    g = fc.grad(lambda x: np.sum(np.heaviside(x, 0.5)))(X)
    np.testing.assert_array_equal(g, np.zeros_like(X))


def test_linalg_vecdot_keeps_numpys_integer_and_bool_dtypes():
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.array([True, False, True])
    assert fnp.linalg.vecdot(a, a).dtype == np.int8
    assert fnp.linalg.vecdot(b, b) == np.linalg.vecdot(b, b)
    assert np.asarray(fnp.linalg.vecdot(b, b)).dtype == np.bool_


@pytest.mark.parametrize("call,match", [
    (lambda x: np.vecdot(x, x[:2]), r"vecdot: the core dimensions of x1 \(shape \(3,\)\) "
                                    r"and x2 \(shape \(2,\)\) differ: 3 and 2"),
    (lambda x: np.matvec(x, x), r"matvec: x1 has shape \(3,\); it needs at least 2 dim"),
    (lambda x: np.vecmat(x, x), r"vecmat: x2 has shape \(3,\); it needs at least 2 dim"),
    (lambda x: np.matrix_transpose(x), r"matrix_transpose: x has shape \(3,\)"),
    (lambda x: np.unstack(x[0]), r"unstack: input array must be at least 1-d"),
    (lambda x: np.cumulative_sum(x[:, None] * x), r"cumulative_sum: axis must be given for "
                                                  r"an array of shape \(3, 3\)"),
    (lambda x: np.isposinf(x * 1j), r"isposinf: this operation is not supported for complex "
                                    r"values \(shape \(3,\)\)"),
])
def test_bad_input_names_the_call_and_shapes(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fc.jit(call)(np.ones(3))


def test_gufunc_options_are_refused_by_name():
    with pytest.raises(NotImplementedError, match=r"vecdot\(\.\.\., axes=\.\.\.\) is not "
                                                  "supported on traced arrays"):
        fc.jit(lambda x: np.vecdot(x, x, axes=[(0,), (0,), ()]))(np.ones(3))


def test_array_equal_of_other_shapes_is_false_without_tracing_values():
    assert not fc.jit(lambda a, b: np.array_equal(a, b))(np.ones(2), np.ones(3))
    assert not fnp.array_equal(np.ones(2), np.ones(3))
    assert bool(fc.jit(lambda a, b: np.array_equal(a, b, equal_nan=True))(
        np.array([1.0, np.nan]), np.array([1.0, np.nan])))


@pytest.mark.parametrize("module", ["_array_api", "_static", "_extras"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"functorch_core.numpy.{module}")
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for name in mod.__all__:
        for test in doctest.DocTestFinder().find(getattr(mod, name), name):
            runner.run(test)
    assert runner.failures == 0 and runner.tries >= len(mod.__all__), module


def test_choose_with_a_traced_index_out_of_range_fails_its_bounds_check():
    choices = (np.arange(3.0), 10 * np.arange(3.0))
    for bad in ([0, 2, 1], [0, -1, 1]):
        with pytest.raises(IndexError, match="out of bounds"):
            fc.jit(lambda a, x, y: np.choose(a, [x, y]))(np.array(bad), *choices)
    with pytest.raises(ValueError, match=r"choose: invalid entry in choice array \(entries "
                                         r"of a must be in \[0, 2\)"):
        fc.jit(lambda x, y: np.choose(np.array([0, 2, 1]), [x, y]))(*choices)


def test_unravel_index_of_traced_indices_counts_negatives_from_the_end_and_clamps():
    got = fc.jit(lambda i: np.unravel_index(i, (2, 3)))(np.array([-1, 7, 4]))
    np.testing.assert_array_equal(np.stack(got), np.stack(np.unravel_index([5, 5, 4], (2, 3))))


def test_static_functions_answer_as_numpy_on_tracers():
    x = np.ones((3, 3), np.float32)
    got = {}

    def f(t):
        got.update(can_cast=np.can_cast(t, np.float16), common=np.common_type(t, t),
                   min_scalar=np.min_scalar_type(t), path=np.einsum_path("ij,jk", t, t),
                   diag=np.diag_indices_from(t))
        return t
    fc.jit(f)(x)
    assert got["can_cast"] == np.can_cast(x, np.float16)
    assert got["common"] is np.common_type(x, x)
    assert got["min_scalar"] == np.min_scalar_type(x)
    assert got["path"] == np.einsum_path("ij,jk", x, x)
    np.testing.assert_array_equal(got["diag"], np.diag_indices_from(x))


def test_min_scalar_type_of_a_traced_0d_array_is_refused():
    with pytest.raises(TracerError, match=r"min_scalar_type: the argument is a traced 0-d "
                                          "array"):
        fc.jit(lambda t: (np.min_scalar_type(t), t)[1])(np.float64(3.0))


def test_diag_indices_from_needs_equal_dimensions():
    with pytest.raises(ValueError, match=r"diag_indices_from: .* got shape \(2, 3\)"):
        fc.jit(lambda t: (np.diag_indices_from(t), t)[1])(np.ones((2, 3)))


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_ufuncs_at_the_dtype_extremes(dt):
    """gcd, lcm and bitwise_count of INT_MIN, INT_MAX, 0 and random values, as NumPy's
    (|INT_MIN| wraps to itself there)."""
    info = np.iinfo(dt)
    rng = np.random.default_rng(3)
    edges = np.array([info.min, info.max, 0, 1], dt)
    x = np.concatenate([edges, edges, rng.integers(info.min, info.max, 64, dt, True)])
    y = np.concatenate([edges, edges[::-1], rng.integers(info.min, info.max, 64, dt, True)])
    with np.errstate(all="ignore"):
        for ufunc in (np.gcd, np.lcm):
            want = ufunc(x, y)
            got = fc.jit(lambda a, b, f=ufunc: f(a, b))(x, y)
            np.testing.assert_array_equal(got, want, err_msg=ufunc.__name__)
            assert got.dtype == want.dtype
    np.testing.assert_array_equal(fc.jit(np.bitwise_count)(x), np.bitwise_count(x))


def test_ravel_multi_index_raise_mode_needs_concrete_coordinates():
    coords = (np.array([1, 0]), np.array([2, 1]))
    with pytest.raises(TracerError, match=r"ravel_multi_index\(mode='raise'\) of traced "
                                          "coordinates.*mode='wrap' or mode='clip'"):
        fc.jit(lambda a, b: np.ravel_multi_index((a, b), (2, 3)))(*coords)
    got = fc.jit(lambda a, b: np.ravel_multi_index((a, b), (2, 3), mode="clip"))(*coords)
    np.testing.assert_array_equal(got, np.ravel_multi_index(coords, (2, 3)))
