"""Derivatives of ``betainc`` in ``a`` and ``b``, once and twice (the ``betainc_grad``
primitive, ``wrt`` an index or a pair): against 40-digit mpmath, finite differences, vmap
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


def _mpmath_di(a, b, x, wrt):
    """``dI_x(a, b)/da`` (wrt 0) or ``/db`` at 40 digits, through ``1 - I_(1-x)(b, a)`` above
    the mean (where ``I`` is 1 - tiny and its own derivative would cancel)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    a, b, x = (mpmath.mpf(float(v)) for v in (a, b, x))

    def inc(p, q, y):
        return mpmath.betainc(p, q, 0, y, regularized=True)

    if x > (a + 1) / (a + b + 2):
        f = (lambda s: -inc(b, s, 1 - x)) if wrt == 0 else (lambda s: -inc(s, a, 1 - x))
    else:
        f = (lambda s: inc(s, b, x)) if wrt == 0 else (lambda s: inc(a, s, x))
    return float(mpmath.diff(f, a if wrt == 0 else b))


@pytest.mark.parametrize("backend", [None, "cpu"])
def test_matches_mpmath(backend):
    """a, b in 0.1..50, x in (0, 1): relative error below 1e-13 (the prefactor
    x^a (1-x)^b / B(a, b) carries eps (a |log x| + b |log1p(-x)|)), eagerly (NumPy) and
    natively."""
    pytest.importorskip("mpmath")
    rng = np.random.default_rng(0)
    a, b = 10 ** rng.uniform(-1, 1.7, 60), 10 ** rng.uniform(-1, 1.7, 60)
    x = np.r_[rng.uniform(0, 1, 56), 1e-6, 1 - 1e-6, 0.5, 0.999]

    def run(f):
        return f if backend is None else fc.jit(f, backend=backend)
    ga = run(fc.grad(lambda a: fc.numpy.sum(S.betainc(a, b, x))))(a)
    gb = run(fc.grad(lambda b: fc.numpy.sum(S.betainc(a, b, x))))(b)
    worst = max(worst_relative(got, [_mpmath_di(*v, wrt) for v in zip(a, b, x, strict=True)])
                for wrt, got in enumerate((ga, gb)))
    assert worst < 1e-13, worst


def test_against_finite_differences_in_every_argument():
    a, b = np.array([0.4, 1.0, 2.5, 7.0, 0.9]), np.array([3.0, 0.6, 2.5, 1.5, 12.0])
    x = np.array([0.2, 0.5, 0.45, 0.9, 0.05])
    check_grads(S.betainc, (a, b, x), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_mixed_second_derivatives_and_the_refused_ones():
    """d/dx of dI/da = density (log x - psi(a) + psi(a + b)); log1p(-x), psi(b) for b."""
    a, b, x = 2.5, 1.5, np.linspace(0.1, 0.9, 5)
    density = np.exp((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - ss.betaln(a, b))
    for argnum, extra in ((0, np.log(x) - ss.digamma(a)), (1, np.log1p(-x) - ss.digamma(b))):
        got = fc.vmap(fc.grad(fc.grad(S.betainc, argnums=argnum), argnums=2),
                      in_axes=(None, None, 0))(a, b, x)
        np.testing.assert_allclose(got, density * (extra + ss.digamma(a + b)), rtol=1e-12)
        check_grads(lambda x, n=argnum: fc.grad(S.betainc, argnums=n)(a, b, x), (x[1],),
                    order=1, modes=("fwd", "rev"))
    twice = fc.grad(fc.grad(S.betainc, argnums=0), argnums=1)
    with pytest.raises(NotImplementedError, match=r"b \(a third derivative in a or b\)"):
        fc.grad(twice, argnums=1)(a, b, 0.3)


def _mpmath_d2i(a, b, x, pair):
    """A second derivative of ``I_x(a, b)`` in (a, b) at 40 digits, through ``1 - I_(1-x)(b,
    a)`` above the mean."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    a, b, x = (mpmath.mpf(float(v)) for v in (a, b, x))
    orders = {(0, 0): (2, 0), (0, 1): (1, 1), (1, 1): (0, 2)}[pair]
    if x > (a + 1) / (a + b + 2):
        return -float(mpmath.diff(lambda s, t: mpmath.betainc(t, s, 0, 1 - x,
                                                              regularized=True),
                                  (a, b), orders))
    return float(mpmath.diff(lambda s, t: mpmath.betainc(s, t, 0, x, regularized=True),
                             (a, b), orders))


@pytest.mark.parametrize("backend", [None, "cpu"])
def test_hessian_in_a_and_b_matches_mpmath(backend):
    """The continued fraction differentiated twice (``betainc_grad`` with a pair ``wrt``):
    a, b in 0.1..50, x in (0, 1), relative error below 2e-12, eagerly and natively."""
    pytest.importorskip("mpmath")
    rng = np.random.default_rng(1)
    a, b = 10 ** rng.uniform(-1, 1.7, 24), 10 ** rng.uniform(-1, 1.7, 24)
    x = np.r_[rng.uniform(0, 1, 22), 1e-4, 0.999]
    hess = fc.vmap(fc.hessian(S.betainc, argnums=(0, 1)))
    got = hess(a, b, x) if backend is None else fc.jit(hess, backend=backend)(a, b, x)
    worst = 0.0
    for i, j in ((0, 0), (0, 1), (1, 1)):
        np.testing.assert_array_equal(np.asarray(got[i][j]), np.asarray(got[j][i]))
        want = [_mpmath_d2i(*v, (i, j)) for v in zip(a, b, x, strict=True)]
        worst = max(worst, worst_relative(got[i][j], want))
    assert worst < 2e-12, worst


def test_second_derivatives_against_finite_differences_in_every_argument():
    a, b = np.array([0.4, 1.0, 2.5, 7.0, 0.9]), np.array([3.0, 0.6, 2.5, 1.5, 12.0])
    x = np.array([0.2, 0.5, 0.45, 0.9, 0.05])
    check_grads(S.betainc, (a, b, x), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
    check_grads(fc.jit(S.betainc), (a, b, x), order=2, modes=("fwd", "rev"), atol=1e-5,
                rtol=1e-5)


def test_third_mixed_derivatives_in_x():
    """d/dx of d^2 I/(di dj) = density (slope_i slope_j + curvature_ij): slope_a = log x -
    psi(a) + psi(a + b), slope_b = log1p(-x) - psi(b) + psi(a + b), curvature psi'(a + b)
    less psi' of the parameter on the diagonal."""
    a, b, x = 2.5, 1.5, np.linspace(0.1, 0.9, 5)
    density = np.exp((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - ss.betaln(a, b))
    slope = (np.log(x) - ss.digamma(a) + ss.digamma(a + b),
             np.log1p(-x) - ss.digamma(b) + ss.digamma(a + b))
    tri = ss.polygamma(1, a + b)
    curvature = {(0, 0): tri - ss.polygamma(1, a), (0, 1): tri, (1, 1): tri - ss.polygamma(1, b)}
    for (i, j), c in curvature.items():
        twice = fc.grad(fc.grad(S.betainc, argnums=i), argnums=j)
        got = fc.vmap(fc.grad(twice, argnums=2), in_axes=(None, None, 0))(a, b, x)
        np.testing.assert_allclose(got, density * (slope[i] * slope[j] + c), rtol=1e-11)


def test_edges_dtype_vmap_and_jit():
    a = np.array([1.0, 1.0, -1.0, 1.0, 1.0, 2.0])
    b = np.array([2.0, 2.0, 1.0, 0.0, 1.0, 3.0])
    x = np.array([0.0, 1.0, 0.5, 0.5, 1.5, 0.3])
    got = P.betainc_grad.bind(a, b, x, wrt=0)
    np.testing.assert_array_equal(np.isnan(got), [False, False, True, True, True, False])
    assert got[0] == got[1] == 0.0
    np.testing.assert_array_equal(
        fc.jit(lambda a, b, x: P.betainc_grad.bind(a, b, x, wrt=0))(a, b, x), got)
    assert P.betainc_grad.bind(*(v.astype(np.float32) for v in (a, b, x)), wrt=1).dtype == \
        np.float32
    for pair in ((0, 0), (0, 1), (1, 1)):
        second = P.betainc_grad.bind(a, b, x, wrt=pair)
        np.testing.assert_array_equal(np.isnan(second), np.isnan(got))
        assert second[0] == second[1] == 0.0
        np.testing.assert_allclose(     # natively: the inline polygamma, not SciPy's
            fc.jit(lambda a, b, x, w=pair: P.betainc_grad.bind(a, b, x, wrt=w))(a, b, x),
            second, rtol=1e-14)
    for bad in (2, (1, 0), (0, 2)):
        with pytest.raises(ValueError, match="betainc_grad: wrt"):
            P.betainc_grad.bind(a, b, x, wrt=bad)
    aa, bb, xx = np.linspace(0.5, 4, 5), np.linspace(3, 0.7, 5), np.linspace(0.1, 0.9, 5)
    g = fc.grad(S.betainc, argnums=(0, 1))
    got = fc.vmap(g, in_axes=(0, 0, 0))(aa, bb, xx)
    want = [g(*v) for v in zip(aa, bb, xx, strict=True)]
    for i in range(2):
        np.testing.assert_allclose(got[i], [w[i] for w in want], rtol=0, atol=0)
    got = fc.vmap(lambda a: g(a, 2.0, 0.3)[1])(aa)
    np.testing.assert_allclose(got, [g(v, 2.0, 0.3)[1] for v in aa], rtol=0, atol=0)
