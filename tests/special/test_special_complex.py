"""Complex arguments to ``functorch_core.scipy.special``: ``gamma``, ``loggamma``,
``digamma``, ``logsumexp``, ``softmax``, ``log_softmax``, ``sinc``, ``xlogy`` and
``xlog1py`` accept them as SciPy and NumPy do (values, derivatives, batching; the erf
family, ``spence`` and ``jv`` in test_special_complex_faddeeva.py); the others raise a
``TypeError`` rather than guess."""

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


def _loggamma_points(rng):
    """Every region of the complex loggamma: scales from 0.3 to 1e5, the Taylor discs about
    1 and 2, the reflection strip (Re z < 0.1, |Im z| <= 7) and points on and just off
    the negative real axis."""
    parts = [s * (rng.standard_normal(1000) + 1j * rng.standard_normal(1000))
             for s in (0.3, 1, 3, 10, 30, 300, 1e5)]
    for centre in (1, 2):
        parts.append(centre + 0.2 * rng.random(500) * np.exp(2j * np.pi * rng.random(500)))
    parts.append(rng.uniform(-20, 0.1, 1000) + 1j * rng.uniform(-7, 7, 1000))
    parts.append(rng.uniform(-20, 0.1, 1000) + 1j * rng.choice([0.0, 1e-300, -1e-10, 1e-5],
                                                               1000))
    return np.concatenate(parts)


@pytest.mark.parametrize("jit", [False, True])
def test_loggamma_and_gamma_complex_match_scipy(jit):
    """Within 3e-14 of SciPy's loggamma relative to |loggamma| (the same method: both
    within 2e-14 of the exact values, measured with mpmath at 200 bits: 1.4e-14 ours, 1.8e-14
    SciPy's, worst case of 3000 points), gamma within 2e-13 where finite; NaN where
    SciPy's is."""
    z = _loggamma_points(np.random.default_rng(3))
    run = fc.jit if jit else (lambda f: f)
    want, got = ss.loggamma(z), np.asarray(run(S.loggamma)(z))
    assert got.dtype == np.complex128
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    err = np.abs(got[ok] - want[ok]) / np.abs(want[ok])
    assert err.max() <= 3e-14, (z[ok][err.argmax()], err.max())
    small = z[np.abs(z) < 100]
    want, got = ss.gamma(small), np.asarray(run(S.gamma)(small))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-13, atol=0)


INF, NAN = np.inf, np.nan
EDGES = [0j, -1 + 0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0),
         -2.5 + 0j, complex(-2.5, -0.0), complex(3, -0.0), -3 + 1e-300j, complex(0, 1e-320),
         0.5 + 0j, -0.5 + 0j, complex(INF, 0), complex(-INF, 0), complex(NAN, 0),
         complex(0, NAN), complex(0, INF), complex(0, -INF), complex(1, INF), complex(-5, INF),
         complex(INF, INF), complex(INF, 1), complex(-INF, 1), 1e308 + 0j, 3e300 + 1e300j,
         complex(-1e200, 1e-10), complex(-1e300, 0), complex(-4.5, 7.0), complex(-4.5, 7.5)]


@pytest.mark.parametrize("name", ["loggamma", "gamma"])
def test_loggamma_and_gamma_complex_edges_are_scipys(name):
    """Poles and NaN (nan + nanj), infinities, overflow, the branch on and just off the
    negative real axis (Im z = -0 is the lower side), signed zeros of the imaginary part;
    eager and compiled alike."""
    z = np.array(EDGES)
    with np.errstate(all="ignore"):
        want = getattr(ss, name)(z)
        for got in (getattr(S, name)(z), fc.jit(getattr(S, name))(z)):
            got = np.asarray(got)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True)
            signed = ~np.isnan(want.imag)
            np.testing.assert_array_equal(np.signbit(got.imag[signed]),
                                          np.signbit(want.imag[signed]))


def test_loggamma_and_gamma_complex_grads_dtypes_and_vmap():
    """Holomorphic: derivatives to order 2 against differences (every region), the
    derivative of loggamma's real part is digamma (JAX's convention, as for logsumexp);
    complex64 computed in complex128 and rounded, as SciPy's; vmap against a loop."""
    z = np.array([0.7 + 0.4j, -2.3 + 1.1j, 9 + 3j, 1.05 - 0.02j, -1.5 - 0.5j, 2.1 + 0.1j,
                  0.3 - 8j])
    check_grads(S.loggamma, (z,), order=2)
    check_grads(S.gamma, (z[:4],), order=2)
    g = fc.grad(lambda z: fc.numpy.sum(fc.numpy.real(S.loggamma(z))))(z)
    np.testing.assert_allclose(g, ss.psi(z), rtol=1e-13)
    small = z.astype(np.complex64)
    for name in ("loggamma", "gamma"):
        got, want = getattr(S, name)(small), getattr(ss, name)(small)
        assert got.dtype == want.dtype == np.complex64
        np.testing.assert_allclose(got, want, rtol=2e-7)
    batch = z.reshape(7, 1) * np.array([1.0, 0.5])
    np.testing.assert_allclose(fc.vmap(S.loggamma)(batch),
                               np.stack([ss.loggamma(r) for r in batch]), rtol=1e-13)


@pytest.mark.parametrize("jit", [False, True])
def test_digamma_complex_matches_scipy(jit):
    """Within 1e-13 of SciPy's psi, relative, or absolute where psi nearly vanishes (both
    lose digits by cancellation next to its roots on the negative axis beyond the first;
    at 2000 points against mpmath at 200 bits, ours within 2.2e-15 of the exact value,
    SciPy's 5.2e-15); its Taylor series about the roots near 1.46 and -0.50 keep the
    relative accuracy there; NaN where SciPy's is."""
    rng = np.random.default_rng(4)
    z = np.concatenate([_loggamma_points(rng),
                        1.4616 + 0.3 * rng.random(300) * np.exp(2j * np.pi * rng.random(300)),
                        -0.504 + 0.3 * rng.random(300) * np.exp(2j * np.pi * rng.random(300)),
                        rng.uniform(-20, 0, 1000) + 1j * rng.uniform(-16, 16, 1000)])
    run = fc.jit if jit else (lambda f: f)
    want, got = ss.psi(z), np.asarray(run(S.digamma)(z))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, equal_nan=True)
    roots = np.array([1.4616321449683622, -0.5040830082644554]) + np.array([[1e-9], [1e-13j]])
    np.testing.assert_allclose(S.digamma(roots.ravel()), ss.psi(roots.ravel()), rtol=1e-13)


def test_digamma_complex_edges_grads_and_dtypes():
    """SciPy's values at poles, NaN, infinities (inf + infj included) and signed zeros;
    derivatives to order 2 against differences, and on the real axis the derivative of
    the real part is polygamma(1, x); complex64 in and out, and psi is the same function."""
    z = np.array(EDGES + [complex(-4.5, 16.0), complex(-4.5, 15.9), complex(1e-320, 0)])
    with np.errstate(all="ignore"):
        want = ss.psi(z)
        for got in (S.digamma(z), fc.jit(S.psi)(z)):
            got = np.asarray(got)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True)
            signed = ~np.isnan(want.imag)
            np.testing.assert_array_equal(np.signbit(got.imag[signed]),
                                          np.signbit(want.imag[signed]))
    a = np.array([0.7 + 0.4j, -2.3 + 1.1j, 12 + 3j, 1.5 - 0.02j, -0.45 - 0.05j, 0.3 - 17j])
    check_grads(S.digamma, (a,), order=2)
    x = np.array([0.3, 1.46, 5.0, -2.5, 25.0])
    g = fc.vmap(fc.grad(lambda t: fc.numpy.real(S.digamma(t + 0j))))(x)
    np.testing.assert_allclose(g, ss.polygamma(1, x), rtol=1e-14)
    small = a.astype(np.complex64)
    assert S.digamma(small).dtype == ss.psi(small).dtype == np.complex64
    np.testing.assert_allclose(S.digamma(small), ss.psi(small), rtol=2e-6)


@pytest.mark.parametrize("name", ["gammaln", "expit", "i0", "entr", "zeta", "betainc"])
def test_other_functions_refuse_complex(name):
    with pytest.raises(TypeError, match=rf"special\.{name}: complex .*complex128\(1,\)"):
        getattr(S, name)(*[np.array([1 + 1j])] * {"zeta": 2, "betainc": 3}.get(name, 1))
