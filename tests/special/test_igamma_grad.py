"""Derivatives of ``gammainc``/``gammaincc`` in ``a``, once and twice (the ``igamma_grad_a``
and ``igamma_hess_a`` primitives): against 40-digit mpmath, finite differences, vmap
against a loop, jit against eager."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss
from functorch_core.ir import primitives as P
from relative_error import worst_relative

import functorch_core as fc
from functorch_core.scipy import special as S
from functorch_core.testing import check_grads

A = np.geomspace(1e-3, 1e3, 13)
X = np.geomspace(1e-3, 3e3, 15)


def _mpmath_dp_da(a, x):
    """``dP/da`` at 40 digits: through ``Q`` where ``x > a`` (``P`` is then 1 - tiny, and its
    derivative would cancel)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    a, x = mpmath.mpf(float(a)), mpmath.mpf(float(x))
    if x > a:
        return -float(mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf,
                                                            regularized=True), a))
    return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a))


@pytest.mark.parametrize("backend", [None, "cpu"])
def test_dp_da_matches_mpmath_on_a_wide_grid(backend):
    """a in 1e-3..1e3, x in 1e-3..3e3 (tails included, values down to 1e-300): relative
    error below 2e-12 (the prefactor x^a e^-x / Gamma(a) carries eps * a |log x|), eagerly
    (NumPy) and natively."""
    pytest.importorskip("mpmath")
    a, x = np.meshgrid(A, X)
    grad = fc.grad(lambda a: fc.numpy.sum(S.gammainc(a, x)))
    got = grad(a) if backend is None else fc.jit(grad, backend=backend)(a)
    worst = worst_relative(got, [_mpmath_dp_da(*v) for v in zip(a.ravel(), x.ravel(),
                                                                  strict=True)])
    assert worst < 2e-12, worst


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_derivative_in_a_against_finite_differences(name):
    a, x = np.linspace(0.3, 8.0, 7), np.linspace(0.2, 9.0, 7)[::-1].copy()
    f = getattr(S, name)
    check_grads(lambda a: f(a, x), (a,), order=1, modes=("fwd", "rev"), atol=1e-7, rtol=1e-7)
    check_grads(lambda a, x: f(a, x), (a, x), order=1, modes=("fwd", "rev"), atol=1e-7,
                rtol=1e-7)
    dq = fc.grad(lambda a: fc.numpy.sum(S.gammaincc(a, x)))(a)
    dp = fc.grad(lambda a: fc.numpy.sum(S.gammainc(a, x)))(a)
    np.testing.assert_array_equal(dq, -dp)


def test_mixed_second_derivative_and_the_refused_third():
    """d^2P/(da dx) = x^(a-1) e^-x / Gamma(a) (log x - digamma(a)); d^3P/(da^2 dx) that
    density times (log x - digamma(a))^2 - polygamma(1, a); d^3P/da^3 raises."""
    a, x = 2.5, np.linspace(0.5, 6.0, 6)
    got = fc.vmap(fc.grad(fc.grad(S.gammainc, argnums=0), argnums=1), in_axes=(None, 0))(a, x)
    density = np.exp((a - 1) * np.log(x) - x - ss.gammaln(a))
    np.testing.assert_allclose(got, density * (np.log(x) - ss.digamma(a)), rtol=1e-13)
    check_grads(lambda x: fc.grad(S.gammainc)(a, x), (x[2],), order=1, modes=("fwd", "rev"))
    twice_a = fc.grad(fc.grad(S.gammainc, argnums=0), argnums=0)
    got = fc.vmap(fc.grad(twice_a, argnums=1), in_axes=(None, 0))(a, x)
    want = density * ((np.log(x) - ss.digamma(a)) ** 2 - ss.polygamma(1, a))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(NotImplementedError, match=r"third derivative in a"):
        fc.grad(twice_a)(a, 1.0)


def _mpmath_d2p_da2(a, x):
    """``d^2P/da^2`` at 40 digits, through ``Q`` where ``x > a``."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    a, x = mpmath.mpf(float(a)), mpmath.mpf(float(x))
    if x > a:
        return -float(mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf,
                                                            regularized=True), a, 2))
    return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a, 2))


@pytest.mark.parametrize("backend", [None, "cpu"])
def test_d2p_da2_matches_mpmath_on_a_grid(backend):
    """The series and the continued fraction differentiated twice (``igamma_hess_a``): a in
    1e-2..300, x in 1e-2..1e3, relative error below 3e-11 where the value is above 1e-280,
    eagerly (NumPy) and natively."""
    pytest.importorskip("mpmath")
    a, x = np.meshgrid(np.geomspace(1e-2, 300, 7), np.geomspace(1e-2, 1e3, 8))
    hess = fc.vmap(fc.grad(fc.grad(S.gammainc)))
    got = hess(a.ravel(), x.ravel()) if backend is None else \
        fc.jit(hess, backend=backend)(a.ravel(), x.ravel())
    worst = worst_relative(got, [_mpmath_d2p_da2(*v) for v in zip(a.ravel(), x.ravel(),
                                                                    strict=True)],
                           zero=1e-280, zero_got=1e-270)
    assert worst < 3e-11, worst


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_second_derivatives_against_finite_differences(name):
    a, x = np.linspace(0.3, 8.0, 7), np.linspace(0.2, 9.0, 7)[::-1].copy()
    f = getattr(S, name)
    check_grads(lambda a, x: f(a, x), (a, x), order=2, modes=("fwd", "rev"), atol=1e-6,
                rtol=1e-6)
    check_grads(fc.jit(lambda a, x: f(a, x)), (a, x), order=2, modes=("fwd", "rev"),
                atol=1e-6, rtol=1e-6)


def test_edges_vmap_and_jit():
    a = np.array([0.5, 2.0, -1.0, 0.0, 3.0, np.nan, 2.0])
    x = np.array([0.0, np.inf, 1.0, 1.0, -1.0, 1.0, 2.0])
    for prim in (P.igamma_grad_a, P.igamma_hess_a):
        got = prim.bind(a, x)
        np.testing.assert_array_equal(np.isnan(got),
                                      [False, False, True, True, True, True, False])
        assert got[0] == got[1] == 0.0
        np.testing.assert_array_equal(fc.jit(lambda a, x, p=prim: p.bind(a, x))(a, x), got)
        f32 = prim.bind(a.astype(np.float32), x.astype(np.float32))
        assert f32.dtype == np.float32
    aa, xx = np.linspace(0.5, 4, 5), np.linspace(0.1, 7, 5)
    g = fc.grad(lambda a, x: S.gammaincc(a, x))
    np.testing.assert_allclose(fc.vmap(g)(aa, xx), [g(ai, xi) for ai, xi in zip(aa, xx)],
                               rtol=0, atol=0)
