"""functorch_core.scipy.integrate against scipy.integrate and closed forms: the sample rules
(values and dtypes, eager and jit, check_grads order 2, vmap), and odeint (values against
the exact solution and SciPy's, adjoint gradients against central differences of the
solution in y0, args and t, second order, vmap against loop-and-stack, the errors)."""

import itertools

import numpy as np
import pytest
import scipy.integrate as si

import functorch_core as fc
import functorch_core.scipy.integrate as I
from functorch_core.testing import check_grads

RNG = np.random.default_rng(0)


def _samples(n, axis, kind):
    y = RNG.standard_normal((n, 3) if axis == 0 else (3, n))
    if kind == "i":
        return (5 * y).astype(np.int64)
    return y.astype(np.float32) if kind == "f32" else y


RULES = [("trapezoid", {}), ("cumulative_trapezoid", {}),
         ("cumulative_trapezoid", {"initial": 0}), ("simpson", {})]


@pytest.mark.parametrize("name,kw", RULES)
def test_sample_rules_match_scipy(name, kw):
    for n, xkind, axis, kind in itertools.product([1, 2, 3, 4, 5, 8], ["none", "1d", "full",
                                                                     "bcast"], [0, -1],
                                                  ["f", "i", "f32"]):
        y = _samples(n, axis, kind)
        xs = np.cumsum(0.5 + RNG.random(n))    # spacings within a factor 3 of each other
        col = xs[:, None] if axis == 0 else xs[None, :]
        x = {"none": None, "1d": xs, "full": np.broadcast_to(col, y.shape).copy(),
             "bcast": col}[xkind]
        want = getattr(si, name)(y, x=x, dx=0.5, axis=axis, **kw)
        got = np.asarray(getattr(I, name)(y, x=x, dx=0.5, axis=axis, **kw))
        assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
        # a sum of n terms, each |y| times the spacing times a weight below 6 (Simpson's
        # uneven weights, spacings within a factor 3): 6 n eps |y|max |x|span of rounding for
        # SciPy and for us
        eps = np.finfo(np.float32 if kind == "f32" else np.float64).eps
        span = 1.5 * n if x is not None else 0.5 * n
        bound = 2 * 6 * n * eps * np.abs(y).max() * span
        np.testing.assert_allclose(got, want, rtol=0, atol=bound + 1e-300)
    y = _samples(7, -1, "f")
    got = fc.jit(lambda y, x: getattr(I, name)(y, x=x, **kw))(y, np.linspace(0, 1, 7))
    np.testing.assert_allclose(got, getattr(si, name)(y, x=np.linspace(0, 1, 7), **kw),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name,kw", RULES)
def test_sample_rules_grads_and_vmap(name, kw):
    y, x = RNG.standard_normal((2, 6)), np.cumsum(0.5 + RNG.random(6))
    check_grads(lambda y, x: getattr(I, name)(y, x=x, **kw), (y, x), order=2)
    check_grads(lambda y: getattr(I, name)(y, dx=0.3, axis=0, **kw), (y.T,), order=2)
    ys = RNG.standard_normal((4, 5))
    got = fc.vmap(lambda y: getattr(I, name)(y, x=x[:5], **kw))(ys)
    np.testing.assert_allclose(got, np.stack([getattr(si, name)(v, x=x[:5], **kw)
                                              for v in ys]), rtol=1e-13, atol=1e-15)


def test_sample_rule_errors():
    with pytest.raises(ValueError, match=r"trapezoid: x of shape \(4,\) does not match y of "
                                         r"shape \(2, 3\) along axis 1"):
        I.trapezoid(np.ones((2, 3)), x=np.ones(4))
    with pytest.raises(ValueError, match=r"simpson: axis 2 is out of bounds for y of shape"):
        I.simpson(np.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="cumulative_trapezoid: `initial` must be `None` or "
                                         "`0`"):
        I.cumulative_trapezoid(np.ones(3), initial=1.0)
    with pytest.raises(ValueError, match=r"does not broadcast to y of shape \(2, 3\)"):
        I.cumulative_trapezoid(np.ones((2, 3)), x=np.ones((3, 3)))


# --- odeint ------------------------------------------------------------------------------

def oscillator(y, t, k, c):
    return np.stack([y[1], -k * y[0] - c * y[1]])


def forced(y, t, k):
    return -k * y + np.cos(t)


Y0, TS, K, C = np.array([1.0, 0.0]), np.linspace(0.0, 3.0, 5), 4.0, 0.3


def _exact(ts, k=K, c=C):
    w = np.sqrt(k - c * c / 4)
    return np.exp(-c * ts / 2) * (np.cos(w * ts) + c / (2 * w) * np.sin(w * ts))


@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_odeint_values(tol):
    got = I.odeint(oscillator, Y0, TS, K, C, rtol=tol, atol=tol)
    assert got.shape == (5, 2) and got.dtype == np.float64
    # each accepted step's local error is below tol (|y| <= 1 here); over ~T/h steps of a
    # damped (non-expanding) system they add up to at most steps * tol, and the steps number
    # well below 1e3 for these tolerances
    np.testing.assert_allclose(got[:, 0], _exact(TS), rtol=0, atol=1e3 * tol)
    ref = si.odeint(oscillator, Y0, TS, args=(K, C), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e3 * tol)
    jitted = fc.jit(lambda y0, ts, k, c: I.odeint(oscillator, y0, ts, k, c, rtol=tol,
                                                  atol=tol))(Y0, TS, K, C)
    np.testing.assert_allclose(jitted, got, rtol=1e-12, atol=1e-14)


def test_odeint_float32_and_shapes():
    got = I.odeint(forced, np.ones((2, 2), np.float32), TS.astype(np.float32), np.float32(0.7),
                   rtol=1e-5, atol=1e-6)
    assert got.dtype == np.float32 and got.shape == (5, 2, 2)
    ref = si.odeint(lambda y, t: forced(y, t, 0.7), np.ones(4), TS, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.reshape(5, 4), ref, rtol=0, atol=1e2 * 1e-5)
    assert I.odeint(forced, np.array([1.0]), np.array([0.5]), 0.7).tolist() == [[1.0]]


def _central(fun, x, eps=1e-6):
    x = np.asarray(x, float)
    out = np.zeros(x.shape)
    for j in np.ndindex(x.shape):
        d = np.zeros(x.shape)
        d[j] = eps
        out[j] = (fun(x + d) - fun(x - d)) / (2 * eps)
    return out


def test_odeint_adjoint_gradients_against_central_differences():
    tol = 1e-11
    w = RNG.standard_normal((5, 2))

    def loss(y0, ts, k, c):
        return np.sum(w * I.odeint(oscillator, y0, ts, k, c, rtol=tol, atol=tol))

    grads = fc.jit(fc.grad(loss, argnums=(0, 1, 2, 3)))(Y0, TS, K, C)
    compiled = fc.jit(loss)
    args = [Y0, TS, np.float64(K), np.float64(C)]
    for i, g in enumerate(grads):
        def one(v, i=i):
            return compiled(*[v if j == i else a for j, a in enumerate(args)])
        fd = _central(one, args[i])
        # the adjoint solve and the differenced solves each carry ~1e3 tol of error; the
        # difference quotient divides the solves' error by eps = 1e-6
        np.testing.assert_allclose(g, fd, rtol=0, atol=1e3 * tol / 1e-6 + 1e-7)
    eager = fc.grad(loss, argnums=0)(Y0, TS, K, C)
    np.testing.assert_allclose(eager, grads[0], rtol=1e-10)


def test_odeint_second_order():
    tol = 1e-10

    def loss(y0, k):
        return np.sum(I.odeint(forced, y0, np.linspace(0, 1, 3), k, rtol=tol, atol=tol)[-1])

    y0 = np.array([1.0, 2.0])
    hess = fc.grad(fc.grad(loss, argnums=1), argnums=1)(y0, 0.7)
    fd = _central(lambda k: fc.grad(loss, argnums=1)(y0, k), 0.7, eps=1e-4)
    np.testing.assert_allclose(hess, fd, rtol=1e-6)
    mixed = fc.jacrev(fc.grad(loss, argnums=1), argnums=0)(y0, 0.7)
    np.testing.assert_allclose(mixed, _central(lambda y: fc.grad(loss, argnums=1)(y, 0.7), y0,
                                               eps=1e-4), rtol=1e-6)


def test_odeint_vmap_matches_loop():
    ts = np.linspace(0, 1, 3)
    ys = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    got = fc.vmap(lambda y0: I.odeint(forced, y0, ts, 0.7))(ys)
    np.testing.assert_array_equal(got, np.stack([I.odeint(forced, y, ts, 0.7) for y in ys]))
    ks = np.array([0.1, 1.0, 5.0])
    got = fc.vmap(lambda k: I.odeint(forced, ys[0], ts, k))(ks)
    # one batched loop takes the steps of its slowest member: the same accuracy, other steps
    np.testing.assert_allclose(got, np.stack([I.odeint(forced, ys[0], ts, k) for k in ks]),
                               rtol=0, atol=1e3 * 1.4e-8)
    g = fc.vmap(fc.grad(lambda k: np.sum(I.odeint(forced, ys[0], ts, k))))(ks)
    want = [fc.grad(lambda k: np.sum(I.odeint(forced, ys[0], ts, k)))(k) for k in ks]
    np.testing.assert_allclose(g, want, rtol=1e-5)


def test_odeint_mxstep_gives_nan_not_a_wrong_value():
    ts = np.array([0.0, 0.5, 20.0])
    out = fc.jit(lambda y: I.odeint(forced, y, ts, 0.7, mxstep=1000))(np.array([1.0]))
    assert np.all(np.isfinite(out))
    out = fc.jit(lambda y: I.odeint(forced, y, ts, 0.7, mxstep=3))(np.array([1.0]))
    assert out[0, 0] == 1.0 and np.all(np.isnan(out[1:]))
    blowup = fc.jit(lambda y: I.odeint(lambda y, t: y * y, y, np.array([0.0, 0.5, 2.0])))(
        np.array([1.0]))
    np.testing.assert_allclose(blowup[1], 2.0, rtol=1e-6)     # y = 1 / (1 - t)
    assert np.isnan(blowup[2, 0])                               # past the pole at t = 1


def test_odeint_errors():
    with pytest.raises(ValueError, match=r"odeint\(forced\): t must be a non-empty 1-D array, "
                                         r"got shape \(2, 2\)"):
        I.odeint(forced, Y0, np.ones((2, 2)), 0.7)
    with pytest.raises(ValueError, match=r"odeint\(<lambda>\): func\(y0, t\[0\], \*args\) has "
                                         r"shape \(3,\); it must have y0's shape \(2,\)"):
        I.odeint(lambda y, t: np.ones(3), Y0, TS)
    with pytest.raises(ValueError, match="t must be non-decreasing"):
        I.odeint(forced, Y0, np.array([0.0, 2.0, 1.0]), 0.7)
    with pytest.raises(ValueError, match="rtol must be a non-negative number"):
        I.odeint(forced, Y0, TS, 0.7, rtol=-1.0)
    with pytest.raises(ValueError, match="mxstep must be a positive int or inf"):
        I.odeint(forced, Y0, TS, 0.7, mxstep=0)
    with pytest.raises(TypeError, match="y0 and t must be real"):
        I.odeint(forced, Y0 + 1j, TS, 0.7)
    with pytest.raises(TypeError, match="forward-mode"):
        fc.jvp(lambda k: I.odeint(forced, Y0, TS, k), (0.7,), (1.0,))
    with pytest.raises(ValueError, match=r"custom_vjp\(odeint\(<lambda>\)\) closes over a value "
                                         r"that is being differentiated"):
        fc.grad(lambda k: np.sum(I.odeint(lambda y, t: -k * y, Y0, TS)))(0.7)


# --- solve_ivp (RK45 with a static t_eval, on odeint) ------------------------------------

def _spring(t, y, k):
    return np.stack([y[1], -k * y[0]])


def test_solve_ivp_matches_scipy_and_the_exact_solution():
    te = np.linspace(0.0, 2.0, 5)
    y0 = np.array([1.0, 0.0])
    for tol in (1e-4, 1e-10):
        sol = I.solve_ivp(_spring, (0.0, 2.0), y0, t_eval=te, args=(4.0,), rtol=tol, atol=tol)
        ref = si.solve_ivp(_spring, (0.0, 2.0), y0, t_eval=te, args=(4.0,), rtol=1e-12,
                           atol=1e-12)
        assert sol.y.shape == ref.y.shape == (2, 5) and sol.y.dtype == ref.y.dtype
        np.testing.assert_array_equal(sol.t, te)
        assert sol.status == 0 and sol.success and sol.message == ref.message
        # the same bound as odeint's: ~1e3 accepted steps of local error below tol at most
        np.testing.assert_allclose(sol.y, ref.y, rtol=0, atol=1e3 * tol)
        np.testing.assert_allclose(sol.y[0], np.cos(2 * te), rtol=0, atol=1e3 * tol)
    jitted = fc.jit(lambda y0: I.solve_ivp(_spring, (0.0, 2.0), y0, t_eval=te,
                                           args=(4.0,)).y)(y0)
    np.testing.assert_allclose(jitted, I.solve_ivp(_spring, (0.0, 2.0), y0, t_eval=te,
                                                   args=(4.0,)).y, rtol=1e-12)


def test_solve_ivp_gradient():
    te = np.array([0.5, 1.0])

    def loss(k):
        return np.sum(I.solve_ivp(_spring, (0.0, 1.0), np.array([1.0, 0.0]), t_eval=te,
                                  args=(k,), rtol=1e-10, atol=1e-10).y[0])
    # y0 = cos(sqrt(k) t): d/dk = -sin(sqrt(k) t) t / (2 sqrt(k))
    want = np.sum(-np.sin(2.0 * te) * te / 4.0)
    np.testing.assert_allclose(fc.grad(loss)(4.0), want, rtol=0, atol=1e-6)


def test_solve_ivp_refusals():
    y0 = np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="solve_ivp: t_eval=None returns the solver's own "
                                         "steps, whose number depends on the values"):
        I.solve_ivp(_spring, (0.0, 1.0), y0, args=(4.0,))
    with pytest.raises(NotImplementedError, match="method='LSODA' is not supported"):
        I.solve_ivp(_spring, (0.0, 1.0), y0, method="LSODA", t_eval=[1.0], args=(4.0,))
    with pytest.raises(ValueError, match=r"values in t_eval are not within t_span"):
        I.solve_ivp(_spring, (0.0, 1.0), y0, t_eval=[2.0], args=(4.0,))
    with pytest.raises(ValueError, match=r"solve_ivp: y0 must be 1-D, got shape \(2, 1\)"):
        I.solve_ivp(_spring, (0.0, 1.0), y0[:, None], t_eval=[1.0], args=(4.0,))
