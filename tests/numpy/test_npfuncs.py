"""Derivatives and refusals of the NumPy functions added for issue 29 (gradient,
trapezoid, nan-quantiles, histogram, polyfit, unique/nonzero with size=, r_/c_...).

Values and dtypes against NumPy (eager, jit, NumPy's API on tracers) and vmap by
loop-and-stack come from their op-table rows (tests/op_table.py); here: finite-difference
checks of the derivatives (order 2, forward and reverse) where the function is smooth at
the drawn points, and the messages of the data-dependent refusals.
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

RNG = np.random.default_rng(29)
F = RNG.uniform(0.5, 2.0, (4, 5))
X = np.array([0.0, 0.7, 1.5, 2.0, 3.1])

def _put(x, v):
    y = np.copy(x)
    np.put_along_axis(y, np.array([[0], [4], [2], [1]]), v * y[:, :1], axis=1)
    return y


SMOOTH = {
    "gradient": (lambda f: np.gradient(f, 0.5, axis=1), (F,)),
    "gradient_coords": (lambda f, x: np.gradient(f, x, axis=-1, edge_order=2), (F, X)),
    "gradient_all_axes": (lambda f: np.stack(np.gradient(f, edge_order=2)), (F,)),
    "trapezoid": (lambda y, x: np.trapezoid(y, x), (F, X)),
    "trapezoid_dx": (lambda y: np.trapezoid(y, dx=0.25, axis=0), (F,)),
    "ediff1d": (lambda x: np.ediff1d(x, to_begin=1.0, to_end=[2.0, 3.0]), (F,)),
    "unwrap": (lambda p: np.unwrap(p * 0.1), (F,)),
    "nanmedian": (lambda x: np.nanmedian(x, axis=1), (F,)),
    "nanquantile": (lambda x: np.nanquantile(x, [0.3, 0.8], axis=0), (F,)),
    "nanpercentile": (lambda x, q: np.nanpercentile(x, q), (F, 37.0)),
    "histogram_weights": (lambda w: np.histogram(X, 3, range=(0, 3), weights=w)[0],
                          (RNG.uniform(size=5),)),
    "histogram_density": (lambda w: np.histogram(X, np.array([0.0, 1.0, 2.5, 4.0]),
                                                 weights=w, density=True)[0],
                          (RNG.uniform(0.5, 1, size=5),)),
    "vander": (lambda x: np.vander(x, 4), (X,)),
    "polyfit": (lambda y: np.polyfit(X, y, 2), (RNG.normal(size=5),)),
    "polyfit_w_2d": (lambda y, w: np.polyfit(X, y, 1, w=w), (RNG.normal(size=(5, 2)),
                                                               RNG.uniform(0.5, 1.5, 5))),
    "polyfit_x": (lambda x, y: np.polyfit(x, y, 1), (X, RNG.normal(size=5))),
    "unique_size": (lambda x: fnp.unique(x, size=4, fill_value=0.0), (X[::-1].copy(),)),
    "logspace": (lambda a, b: np.logspace(a, b, 4, base=2.0), (0.5, np.array([1.0, 1.5]))),
    "geomspace": (lambda a, b: np.geomspace(a, b, 5, axis=-1), (X[1:3], X[3:5])),
    "geomspace_negative": (lambda a: np.geomspace(-a, -3.0, 4), (1.5,)),
    "insert": (lambda x, v: np.insert(x, [1, 3], v, axis=1), (F, np.array([0.5, 2.0]))),
    "delete": (lambda x: np.delete(x, [0, 2], axis=1), (F,)),
    "resize": (lambda x: np.resize(x, (3, 7)), (F,)),
    "i0": (np.i0, (X - 1.0,)),
    "piecewise": (lambda x: np.piecewise(x, [x < 1.0, x > 2.5], [np.sin, lambda v: v * v,
                                                                 np.exp]), (X + 0.05,)),
    "apply_along_axis": (lambda x: np.apply_along_axis(lambda v: np.cumsum(v) * v[0], 0, x),
                         (F,)),
    "put_along_axis": (lambda x, v: _put(x, v), (F, np.array([[1.5], [2.5], [0.5], [1.0]]))),
    "r_": (lambda a: np.r_[a, 2.0, a * a], (X,)),
    "c_": (lambda a: np.c_[a, np.sin(a)], (X,)),
}


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_derivatives_match_finite_differences(name):
    f, args = SMOOTH[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_jit_of_numpy_call_matches_numpy_on_the_grad_path():
    """fc.grad of plain NumPy code through the new functions."""
    def loss(y):
        return np.sum(np.gradient(y) ** 2) + np.trapezoid(y) + np.nanmedian(y)
    y = np.array([0.5, 1.0, 3.0, 2.0])
    eps = 1e-6
    fd = [(loss(y + eps * e) - loss(y - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(fc.jit(fc.grad(loss))(y), fd, rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda x: np.unique(x), "fnp.unique(x, size=3)"),
    (lambda x: np.nonzero(x), "fnp.nonzero(x, size=3)"),
    (lambda x: np.argwhere(x), "fnp.argwhere(x, size=3)"),
    (lambda x: np.flatnonzero(x), "fnp.flatnonzero(x, size=3)"),
    (lambda x: x.nonzero(), "fnp.nonzero(x, size=3)"),
])
def test_data_dependent_shapes_ask_for_size(call, message):
    with pytest.raises(TracerError, match="output shape depends on the data") as err:
        fc.jit(call)(X)
    assert message in str(err.value)
    assert "not known while tracing" in str(err.value)


def test_refusals_name_the_call():
    with pytest.raises(TracerError, match="trim_zeros of a traced array"):
        fc.jit(np.trim_zeros)(X)
    with pytest.raises(TracerError, match="bins='auto'"):
        fc.jit(lambda x: np.histogram(x, "auto"))(X)
    with pytest.raises(TracerError, match="range must be static"):
        fc.jit(lambda x: fnp.histogram(x, 2, range=(x[0], 3.0)))(X)
    with pytest.raises(ValueError, match=r"fill_value has 1 entries.*shape \(4, 5\)"):
        fnp.nonzero(F, size=2, fill_value=(0,))
    with pytest.raises(ValueError, match="distances must match"):
        fnp.gradient(F, X[:3], axis=1)
    with pytest.raises(TypeError, match="size must be a static int"):
        fc.jit(lambda x: fnp.unique(x, size=x[0]))(X)


def test_size_pads_and_cuts_like_jax():
    x = np.array([[0.0, 3.0], [0.0, 5.0]])
    rows, cols = fc.jit(lambda x: fnp.nonzero(x, size=3, fill_value=-1))(x)
    np.testing.assert_array_equal(rows, [0, 1, -1])
    np.testing.assert_array_equal(cols, [1, 1, -1])
    np.testing.assert_array_equal(fc.jit(lambda x: fnp.argwhere(x, size=1))(x), [[0, 1]])
    u, counts = fc.jit(lambda x: fnp.unique(x, return_counts=True, size=4))(x)
    np.testing.assert_array_equal(u, [0.0, 3.0, 5.0, 0.0])     # padded with the minimum
    np.testing.assert_array_equal(counts, [2, 1, 1, 0])


def test_vmap_of_size_functions():
    xs = np.array([[0.0, 2.0, 2.0], [1.0, 1.0, 0.0]])
    got = fc.vmap(lambda x: fnp.unique(x, size=3, fill_value=-1.0))(xs)
    np.testing.assert_array_equal(got, [[0.0, 2.0, -1.0], [0.0, 1.0, -1.0]])
    got = fc.vmap(lambda x: fnp.flatnonzero(x, size=2))(xs)
    np.testing.assert_array_equal(got, [[1, 2], [0, 1]])


def test_numpy_index_tricks_keep_working_on_concrete_values():
    np.testing.assert_array_equal(np.r_[1:4, 7], [1, 2, 3, 7])
    np.testing.assert_array_equal(np.c_[np.array([1, 2]), np.array([3, 4])], [[1, 3], [2, 4]])


DOCUMENTED = {"_setops": None, "_calculus": None, "_histograms": None, "_polynomial": None,
              "_ranges": None, "_editing": None, "_functional": None, "_math": ("i0",),
              "_indexing": ("put_along_axis",),
              "_statistics": ("nanmedian", "nanquantile", "nanpercentile")}


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_docstring_examples(module):
    """The examples of the new functions' docstrings run (NumPy scalars print as in
    NumPy 1.25: ``3.0``)."""
    mod = importlib.import_module(f"functorch_core.numpy.{module}")
    names = DOCUMENTED[module] or mod.__all__
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy="1.25"):
        for name in names:
            for test in doctest.DocTestFinder().find(getattr(mod, name), name,
                                                     globs={"np": np, "fnp": fnp}):
                runner.run(test)
    assert runner.failures == 0 and runner.tries >= len(names), module
