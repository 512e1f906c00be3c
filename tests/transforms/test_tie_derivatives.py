"""Derivatives of NumPy functions at their tie points, against hand-derived exact values.

hypot where |x| == |y|, logaddexp/logaddexp2 where x == y, power at a zero base, std of
one element: each was a silent wrong number (0 or NaN) at order 2. Every value is checked
in forward mode (jacfwd of jacfwd) and reverse mode (jacrev of jacrev, grad of grad), and
check_grads confirms the formulas next to the ties, where they are smooth.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.testing import check_grads


def _hessians(f, x):
    """The Hessian of a function of a 1-d array, forward over forward and reverse over
    reverse."""
    return fc.jacfwd(fc.jacfwd(f))(x), fc.jacrev(fc.jacrev(f))(x)


def _assert_hessian(f, point, expected):
    x = np.asarray(point, np.float64)
    for h in _hessians(f, x):
        np.testing.assert_allclose(h, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("x,y", [(2.0, 2.0), (2.0, -2.0), (-3.0, 3.0), (1e-3, 1e-3)])
def test_hypot_hessian_at_equal_magnitudes(x, y):
    r = math.hypot(x, y)
    expected = np.array([[y * y, -x * y], [-x * y, x * x]]) / r**3
    _assert_hessian(lambda v: np.hypot(v[0], v[1]), [x, y], expected)
    assert fc.grad(fc.grad(lambda t: np.hypot(t, 2.0)))(2.0) == pytest.approx(4 / 8**1.5)


def test_hypot_values_grads_and_edges():
    with np.errstate(all="ignore"):
        for x, y in [(1e300, 1e300), (1e-300, 1e-300), (3.0, 4.0), (0.0, 0.0), (np.inf, np.nan),
                     (np.nan, -np.inf), (np.nan, 1.0), (-0.0, 5.0)]:
            got, want = fnp.hypot(x, y), np.hypot(x, y)
            np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
            assert np.asarray(got).dtype == np.asarray(want).dtype
    assert fnp.hypot(np.float32(3e38), np.float32(3e38)).dtype == np.float32
    assert np.isfinite(fnp.hypot(np.float32(3e38), np.float32(1e38)))
    # the origin: a (sub)gradient 0, not NaN, to every order
    assert fc.grad(lambda t: fnp.hypot(t, 0.0))(0.0) == 0.0
    assert fc.grad(fc.grad(lambda t: fnp.hypot(t, 0.0)))(0.0) == 0.0
    np.testing.assert_allclose(fc.grad(lambda v: fnp.hypot(v[0], v[1]))(np.array([1e300, 1e300])),
                               [2**-0.5, 2**-0.5], rtol=1e-15)
    check_grads(lambda a, b: np.hypot(a, b), (np.array([2.0, -1.5, 0.3]),
                                              np.array([2.1, 1.5, -0.3])), order=2)


@pytest.mark.parametrize("name,base", [("logaddexp", math.e), ("logaddexp2", 2.0)])
@pytest.mark.parametrize("t", [0.4, -7.0, 30.0])
def test_logaddexp_hessian_at_ties(name, base, t):
    # f = log_b(b**x + b**y): at x == y the gradient is (1/2, 1/2) and the Hessian is
    # ln(b)/4 * [[1, -1], [-1, 1]]
    fn = getattr(np, name)
    c = math.log(base) / 4
    _assert_hessian(lambda v: fn(v[0], v[1]), [t, t], c * np.array([[1.0, -1.0], [-1.0, 1.0]]))
    for g in (fc.grad(lambda v: fn(v[0], v[1])),
              fc.jacfwd(lambda v: fn(v[0], v[1]))):
        np.testing.assert_allclose(g(np.array([t, t])), [0.5, 0.5], rtol=1e-15)
    assert fc.grad(fc.grad(lambda s: fn(s, t)))(t) == pytest.approx(c, rel=1e-12)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_values_edges_and_smooth_grads(name):
    ours, theirs = getattr(fnp, name), getattr(np, name)
    inf, nan = np.inf, np.nan
    with np.errstate(all="ignore"):
        for x, y in [(-inf, -inf), (inf, inf), (inf, -inf), (-inf, inf), (nan, 1.0),
                     (1.0, nan), (0.0, -30.0), (-30.0, 0.0), (-745.0, -745.0), (1e308, 1e308),
                     (-inf, 3.0), (2.0, inf), (0.0, -800.0)]:
            got, want = ours(x, y), theirs(x, y)
            np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
            assert np.asarray(got).dtype == np.asarray(want).dtype
        f32 = ours(np.float32(1.0), np.float32(1.0))
        assert f32.dtype == np.float32
        np.testing.assert_allclose(f32, theirs(np.float32(1.0), np.float32(1.0)), rtol=1e-6)
    # the weights of infinite operands, as before: 1 to the infinite one, 0 to the other
    assert fc.grad(lambda s: ours(s, 1.0))(inf) == 1.0
    assert fc.grad(lambda s: ours(s, inf))(1.0) == 0.0
    assert fc.grad(lambda s: ours(s, 1.0))(-inf) == 0.0
    check_grads(lambda a, b: theirs(a, b), (np.array([0.4, -2.0, 5.0]),
                                            np.array([0.41, 3.0, -5.0])), order=2)


def test_power_at_a_zero_base():
    g = fc.grad
    assert g(g(lambda x: x**0.0))(0.0) == 0.0
    assert g(g(g(lambda x: x**0.0)))(0.0) == 0.0
    assert g(g(lambda y: 0.0**y))(2.0) == 0.0
    assert g(lambda y: 0.0**y)(2.0) == 0.0
    assert g(g(lambda x: np.power(x, 2.0)))(0.0) == 2.0
    # the whole Hessian of x**y at (0, 2), forward and reverse: d2/dx2 = y(y-1)x**(y-2) = 2,
    # the rest 0 (d/dy is 0 where x == 0, JAX's convention)
    _assert_hessian(lambda v: v[0] ** v[1], [0.0, 2.0], [[2.0, 0.0], [0.0, 0.0]])
    _assert_hessian(lambda v: v[0] ** v[1], [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]])
    for h in _hessians(lambda v: v[0] ** 0.0 + 0.0 ** v[1], np.array([0.0, 3.0])):
        np.testing.assert_array_equal(h, np.zeros((2, 2)))
    check_grads(lambda a, b: a**b, (np.array([0.5, 1.5, 2.0]), np.array([0.0, 2.5, -1.0])),
                order=2)


@pytest.mark.parametrize("shape,axis", [((1,), None), ((3, 1), 1), ((1, 1, 2), (0, 1))])
def test_std_of_one_element_has_zero_derivative(shape, axis):
    x = np.linspace(1.0, 2.0, math.prod(shape)).reshape(shape)

    def f(v):
        return np.std(v, axis=axis).sum()
    assert f(x) == 0.0
    for d in (fc.grad(f), fc.jacfwd(f)):
        np.testing.assert_array_equal(d(x), np.zeros(shape))
    for h in (fc.jacfwd(fc.jacfwd(f))(x), fc.jacrev(fc.grad(f))(x)):
        np.testing.assert_array_equal(h, np.zeros(shape + shape))
    # a given mean makes |x - mean| (derivative sign(x - mean)); ddof=1 is NaN, as NumPy's
    np.testing.assert_allclose(fc.grad(lambda v: np.std(v, mean=np.full((1,), 0.5)))(
        np.array([2.0])), [1.0])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        assert np.isnan(np.std(np.array([1.0]), ddof=1))
    with np.errstate(all="ignore"):
        assert np.isnan(fnp.std(np.array([1.0]), ddof=1))
    for a in (np.array([3]), np.array([np.inf]), np.array([2 + 1j]), np.ones(1, np.float16)):
        with np.errstate(all="ignore"):
            got, want = fnp.std(a), np.std(a)
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
