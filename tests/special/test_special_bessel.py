"""``y0``, ``y1``, ``yn``, ``iv``, ``ive``, ``k0``, ``k1``, ``kv`` and ``kve``: SciPy's own
compiled functions, so SciPy's bits (eagerly, the interpreter's SciPy ufunc; under ``jit``,
the native call into ``scipy.special.cython_special``), float64 and float32, on grids with
the edges (0, negative, huge, inf, NaN); derivatives in the argument against finite
differences and the closed forms; the refused derivative in the order; vmap against a
loop."""

import warnings

import numpy as np
import pytest
import scipy.special as ss

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads

EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 1e-300, -1.0, -2.5, 0.5, 1.0,
                  2.0, 20.0, 700.0, 710.0, 1e5, 1e300])
X = np.concatenate([EDGES, np.linspace(-30, 60, 2001), np.geomspace(1e-8, 1e4, 400)])
ORDERS = np.array([-3.0, -1.5, -1.0, 0.0, 0.5, 1.0, 2.0, 3.7, 10.0, 60.0, np.nan, np.inf])
V, Z = (a.ravel() for a in np.meshgrid(ORDERS, X[::5]))
ARGS = {"y0": (X,), "y1": (X,), "yn": (np.trunc(V), Z), "iv": (V, Z), "ive": (V, Z),
        "k0": (X,), "k1": (X,), "kv": (V, Z), "kve": (V, Z)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(ARGS))
def test_scipy_bits_eager_and_jit(name, dtype):
    args = tuple(a.astype(dtype) for a in ARGS[name])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = getattr(ss, name)(*args)
        for got in (getattr(S, name)(*args), fc.jit(getattr(S, name))(*args)):
            assert got.dtype == want.dtype == dtype
            np.testing.assert_array_equal(got, want)


def test_integer_orders_follow_scipys_loops():
    x = np.linspace(0.5, 4, 5, dtype=np.float32)
    # yn's integer order takes SciPy's ld->d loop: float64; its float order ff->f
    assert S.yn(2, x).dtype == ss.yn(2, x).dtype == np.float64
    assert S.yn(np.float32(2), x).dtype == ss.yn(np.float32(2), x).dtype == np.float32
    np.testing.assert_array_equal(fc.jit(lambda t: S.yn(2, t))(x), ss.yn(2, x))
    assert fc.jit(lambda t: S.iv(1, t))(x).dtype == np.float32


X_SMOOTH = np.array([0.3, 1.1, 2.5, 7.0])


@pytest.mark.parametrize("name,order", [("y0", None), ("y1", None), ("yn", 0.0), ("yn", 3.0),
                                        ("iv", 0.0), ("iv", 1.5), ("iv", -2.3), ("iv", 2.0),
                                        ("ive", 0.5), ("ive", 2.0), ("k0", None),
                                        ("k1", None), ("kv", 0.0), ("kv", 1.5), ("kv", -2.3),
                                        ("kve", 0.5), ("kve", 3.0)])
def test_check_grads_order_2(name, order):
    fn = getattr(S, name)
    f = fn if order is None else (lambda x: fn(order, x))
    # a negative argument only for an integer order of iv/ive (NaN there otherwise)
    x = X_SMOOTH if order != 2.0 else np.concatenate([X_SMOOTH, -X_SMOOTH])
    check_grads(f, (x,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_derivatives_in_closed_form():
    x = X_SMOOTH
    d = fc.vmap(fc.grad(S.y0))(x)
    np.testing.assert_array_equal(d, -ss.y1(x))
    d = fc.vmap(fc.grad(S.y1))(x)
    np.testing.assert_allclose(d, (ss.y0(x) - ss.yn(2, x)) / 2, rtol=1e-13)
    d = fc.vmap(fc.grad(lambda t: S.yn(2, t)))(x)
    np.testing.assert_allclose(d, ss.yvp(2, x), rtol=1e-12)
    d = fc.vmap(fc.grad(lambda t: S.iv(1.5, t)))(x)
    np.testing.assert_allclose(d, ss.ivp(1.5, x), rtol=1e-12)
    d = fc.vmap(fc.grad(lambda t: S.ive(1.5, t)))(-x)
    want = ss.ivp(1.5, -x) * np.exp(-x) + ss.iv(1.5, -x) * np.exp(-x)     # d/dx e^{x} at x<0
    np.testing.assert_allclose(d, want, rtol=1e-12)
    np.testing.assert_array_equal(fc.vmap(fc.grad(S.k0))(x), -ss.k1(x))
    d = fc.vmap(fc.grad(lambda t: S.kv(1.5, t)))(x)
    np.testing.assert_allclose(d, ss.kvp(1.5, x), rtol=1e-12)
    d = fc.vmap(fc.grad(lambda t: S.kve(1.5, t)))(x)
    np.testing.assert_allclose(d, (ss.kvp(1.5, x) + ss.kv(1.5, x)) * np.exp(x), rtol=1e-12)


@pytest.mark.parametrize("name", ["yn", "iv", "ive", "kv", "kve"])
def test_no_derivative_in_the_order(name):
    with pytest.raises(NotImplementedError, match=f"{name}: the derivative with respect to"):
        fc.grad(lambda v: getattr(S, name)(v, 2.0))(1.0)


def test_vmap_matches_a_loop():
    v, x = np.array([0.0, 1.5, 3.0]), np.array([0.5, 2.0, 9.0])
    got = fc.vmap(S.iv)(v, x)
    np.testing.assert_array_equal(got, np.stack([S.iv(a, b) for a, b in zip(v, x, strict=True)]))
    got = fc.vmap(lambda t: S.yn(2, t))(x)
    np.testing.assert_array_equal(got, ss.yn(2, x))


def test_scipy_ufuncs_on_tracers():
    x = np.array([0.5, 2.0, 9.0])
    np.testing.assert_array_equal(fc.jit(lambda t: ss.y0(t) + ss.iv(1.0, t))(x),
                                  ss.y0(x) + ss.iv(1.0, x))
    np.testing.assert_array_equal(fc.grad(lambda t: ss.y0(t).sum())(x), -ss.y1(x))


def test_complex_argument_is_refused_naming_the_function():
    with pytest.raises(TypeError, match=r"functorch_core\.scipy\.special\.iv: complex arguments"):
        S.iv(1.0, np.array([1 + 1j]))
