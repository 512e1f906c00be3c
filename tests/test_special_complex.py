"""Complex arguments to ``functorch_core.scipy.special``: ``logsumexp``, ``softmax``,
``log_softmax``, ``sinc``, ``xlogy`` and ``xlog1py`` accept them as SciPy and NumPy do
(values, derivatives, batching); the others raise a ``TypeError`` rather than guess."""

import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads

R = np.random.default_rng(7)


def _c(*shape, dtype=np.complex128):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_logsumexp_complex_matches_scipy(jit, axis):
    a, b = _c(3, 4) * 3, R.standard_normal((3, 4))
    run = fc.jit if jit else (lambda f: f)
    for kw in ({}, {"b": b}, {"b": _c(3, 4)}, {"return_sign": True}, {"b": b, "return_sign": True},
               {"keepdims": True}):
        ours = run(lambda a, kw=kw: S.logsumexp(a, axis=axis, **kw))(a)
        theirs = ss.logsumexp(a, axis=axis, **kw)
        for o, t in zip(np.atleast_1d(ours) if not isinstance(ours, tuple) else ours,
                        np.atleast_1d(theirs) if not isinstance(theirs, tuple) else theirs,
                        strict=True):
            np.testing.assert_allclose(o, t, rtol=1e-13, atol=1e-13)
            assert np.asarray(o).dtype == np.asarray(t).dtype


def test_logsumexp_complex64_and_real_weights_keep_dtype():
    a = _c(5, dtype=np.complex64)
    out = S.logsumexp(a)
    assert out.dtype == ss.logsumexp(a).dtype == np.complex64
    np.testing.assert_allclose(out, ss.logsumexp(a), rtol=1e-5)
    # real a with complex weights: complex result, no NaN for "negative" sums
    np.testing.assert_allclose(S.logsumexp(np.array([1.0, 2.0]), b=np.array([1j, -2.0])),
                               ss.logsumexp(np.array([1.0, 2.0]), b=np.array([1j, -2.0])),
                               rtol=1e-14)


def test_logsumexp_complex_large_real_parts_do_not_overflow():
    a = np.array([1000 + 1j, 1000 - 2j, 990 + 0.5j])
    np.testing.assert_allclose(S.logsumexp(a), ss.logsumexp(a), rtol=1e-14)
    assert np.isfinite(S.logsumexp(a))


def test_logsumexp_complex_grads_and_vmap():
    a = _c(4)
    check_grads(lambda a: S.logsumexp(a), (a,), order=2)
    check_grads(lambda a: S.logsumexp(a, b=np.array([1.0, 2.0, 0.5, 3.0])), (a,), order=2)
    batch = _c(3, 4)
    np.testing.assert_allclose(fc.vmap(S.logsumexp)(batch),
                               np.stack([ss.logsumexp(r) for r in batch]), rtol=1e-13)
    # JAX's convention for a real function of complex input (jax.grad gives the same
    # numbers here): the derivative of the holomorphic logsumexp, unconjugated
    g = fc.grad(lambda a: fc.numpy.real(S.logsumexp(a)))(a)
    np.testing.assert_allclose(g, np.exp(a) / np.exp(a).sum(), rtol=1e-12)


@settings(deadline=None)
@given(st.complex_numbers(max_magnitude=20, allow_nan=False, allow_infinity=False))
def test_sinc_complex_matches_numpy(z):
    x = np.array([z, 0j])
    np.testing.assert_allclose(S.sinc(x), np.sinc(x), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(fc.jit(S.sinc)(x), np.sinc(x), rtol=1e-13, atol=1e-300)


def test_sinc_complex_dtype_and_grads():
    assert S.sinc(np.complex64(0.5 + 1j)).dtype == np.sinc(np.complex64(0.5 + 1j)).dtype
    check_grads(S.sinc, (_c(5),), order=2)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_complex_matches_scipy(name):
    x, y = _c(20), _c(20)
    x[:3] = 0
    y[1] = complex(np.nan, 0)
    y[2] = 0
    with np.errstate(all="ignore"):
        want = getattr(ss, name)(x, y)
        for f in (getattr(S, name), fc.jit(getattr(S, name))):
            np.testing.assert_allclose(f(x, y), want, rtol=1e-13, equal_nan=True)
    check_grads(getattr(S, name), (_c(4), _c(4) + 3), order=2)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_complex_matches_scipy(name, axis, jit):
    """SciPy's shift by NumPy's complex maximum (real part, then imaginary) decides
    log_softmax's branch: its imaginary parts are SciPy's, not x - logsumexp(x)'s. Large
    real parts do not overflow; a non-finite maximum is not subtracted (log_softmax)."""
    x = _c(3, 4) * 4
    x[0, 0] = 1000 + 2j
    x[2] = [np.inf + 0j, 1j, 2.0 + 0j, 3j]
    run = fc.jit if jit else (lambda f: f)
    with np.errstate(all="ignore"):
        want = getattr(ss, name)(x, axis=axis)
        got = run(lambda x: getattr(S, name)(x, axis=axis))(x)
    assert got.dtype == want.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15, equal_nan=True)
    small = _c(6, dtype=np.complex64)
    assert getattr(S, name)(small).dtype == getattr(ss, name)(small).dtype == np.complex64
    np.testing.assert_allclose(getattr(S, name)(small), getattr(ss, name)(small), rtol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_complex_grads_and_vmap(name):
    """Holomorphic in x (the shift held constant changes no derivative): order 2 against
    differences, and the derivative of softmax's real part (JAX's convention) in closed
    form; vmap against a loop."""
    f = getattr(S, name)
    check_grads(lambda x: f(x, axis=-1), (_c(2, 3),), order=2)
    x = _c(4)
    p = np.exp(x) / np.exp(x).sum()
    g = fc.grad(lambda x: fc.numpy.real(S.log_softmax(x)[0]))(x)
    np.testing.assert_allclose(g, np.eye(4)[0] - p, rtol=1e-12, atol=1e-14)
    batch = _c(3, 5)
    np.testing.assert_allclose(fc.vmap(f)(batch), np.stack([getattr(ss, name)(r) for r in batch]),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["erf", "gammaln", "gamma", "digamma", "expit", "i0", "ndtr",
                                  "spence", "entr"])
def test_other_functions_refuse_complex(name):
    with pytest.raises(TypeError, match=rf"special\.{name}: complex .*complex128\(1,\)"):
        getattr(S, name)(np.array([1 + 1j]))
