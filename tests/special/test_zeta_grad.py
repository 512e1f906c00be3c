"""The derivative of ``zeta(x, q)`` in its exponent ``x`` (Euler-Maclaurin differentiated
term by term, in float64) and through it of Riemann's ``zeta(x)`` everywhere SciPy defines
it (the reflection and the series about 0 included): against mpmath values, finite
differences to order 2 in both modes, eager and compiled, vmap, and the edges."""

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads

# (x, q) -> zeta'(x, q), zeta''(x, q): mpmath at 250 digits (zeta(x, q, derivative))
HURWITZ = {
    (1.001, 1.0): (-999999.92719406617, 1999999999.9909684),
    (1.5, 0.01): (4601.2305426586, 21223.581102778578),
    (2.0, 1.0): (-0.93754825431584375, 1.989280234298901),
    (3.0, 2.5): (-0.14630450848765802, 0.20885716952550702),
    (7.5, 0.3): (10050.915093423257, 12101.085955474366),
    (30.0, 1000.0): (-2.4285858195087338e-88, 1.6859028200080383e-87),
    (55.0, 4.0): (-1.0679681276227146e-33, 1.4805194872174542e-33),
    (2.5, 1e6): (-9.6547917241787011e-9, 1.4011869650757917e-7),
}
# x -> zeta'(x), zeta''(x) of Riemann's zeta below 1 (mpmath)
RIEMANN = {
    -20.5: (300.57792297065501, -305.98639811732234),
    -3.5: (0.0091542136299415125, -0.001787508571840275),
    -0.75: (-0.24223150395439772, -0.37518389719923673),
    -0.25: (-0.55750421696656944, -1.0290876917568824),
    0.0: (-0.91893853320467274, -2.0063564559085849),
    0.5: (-3.9226461392091517, -16.008357013928661),
    0.999: (-999999.9271744634, -2000000000.009683),
}


def _grads(f):
    """The first and second derivatives of a scalar ``f`` at each point, compiled."""
    first = fc.jit(fc.vmap(fc.grad(f)))
    second = fc.jit(fc.vmap(fc.grad(fc.grad(f))))
    return first, second


def test_hurwitz_derivatives_match_mpmath():
    x, q = (np.array(v) for v in zip(*HURWITZ, strict=True))
    d1, d2 = (np.array(v) for v in zip(*HURWITZ.values(), strict=True))
    first = fc.vmap(fc.grad(lambda x, q: S.zeta(x, q)))(x, q)
    np.testing.assert_allclose(first, d1, rtol=2e-13)
    second = fc.jit(fc.vmap(fc.grad(fc.grad(lambda x, q: S.zeta(x, q)))))(x, q)
    np.testing.assert_allclose(second, d2, rtol=5e-12)


def test_riemann_derivatives_match_mpmath_across_its_branches():
    """x >= 1 through the Hurwitz sum, -1/2 < x < 1 through the series about 0, below
    through the functional equation: the same derivative rule underneath."""
    x = np.array([*RIEMANN, 1.5, 2.0, 40.0])
    d1 = np.array([v[0] for v in RIEMANN.values()] + [-3.9322397374311016, -0.9375482543158438,
                                                       -6.304137786330142e-13])
    first, second = _grads(S.zeta)
    np.testing.assert_allclose(first(x), d1, rtol=1e-12)
    np.testing.assert_allclose(second(x[:len(RIEMANN)]),
                               [v[1] for v in RIEMANN.values()], rtol=1e-10)


def test_zeta_derivatives_to_order_two_both_modes():
    x, q = np.array([1.8, 2.5, 4.0, 9.0]), np.array([0.6, 1.0, 3.5, 40.0])
    check_grads(lambda x, q: S.zeta(x, q), (x, q), order=2, modes=("fwd", "rev"))
    check_grads(fc.jit(lambda x, q: S.zeta(x, q)), (x, q), order=2, modes=("fwd", "rev"))
    r = np.array([-6.5, -0.6, -0.2, 0.4, 1.7, 5.0])
    check_grads(S.zeta, (r,), order=2, modes=("fwd", "rev"))


def test_zeta_derivative_edges():
    """NaN where zeta is not differentiable in x (below 1 with q given, non-positive q,
    NaN); 0 at q = inf and at x = inf for q >= 1, inf there for q < 1; -inf at the pole."""
    g = fc.vmap(fc.grad(lambda x, q: S.zeta(x, q)))
    x = np.array([0.5, 2.0, 2.0, np.nan, 2.0, np.inf, np.inf, np.inf, 1.0, 3.0, np.inf])
    q = np.array([1.0, -0.5, 0.0, 1.0, np.inf, 1.0, 2.0, 0.5, 1.0, np.nan, np.nan])
    with np.errstate(all="ignore"):
        got = np.asarray(g(x, q))
        jitted = np.asarray(fc.jit(g)(x, q))
    want = [np.nan, np.nan, np.nan, np.nan, 0.0, 0.0, 0.0, np.inf, -np.inf, np.nan, np.nan]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jitted, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_zeta_derivative_keeps_the_dtype(dtype):
    x = np.array([1.5, 2.0, 3.5], dtype)
    g = fc.grad(lambda x: fnp.sum(S.zeta(x, np.ones_like(x))))(x)
    assert g.dtype == dtype
    want = fc.grad(lambda x: fnp.sum(S.zeta(x, np.ones_like(x))))(x.astype(np.float64))
    np.testing.assert_allclose(g, want.astype(dtype), rtol=2e-3 if dtype == np.float16 else 1e-6)


def test_q_and_x_tangents_together():
    """jvp along (dx, dq) is the sum of the two partial derivatives."""
    x, q = np.array([2.5, 4.0]), np.array([0.7, 3.0])
    dx, dq = np.array([0.3, -1.0]), np.array([2.0, 0.5])
    _, both = fc.jvp(lambda x, q: S.zeta(x, q), (x, q), (dx, dq))
    _, only_x = fc.jvp(lambda x: S.zeta(x, q), (x,), (dx,))
    _, only_q = fc.jvp(lambda q: S.zeta(x, q), (q,), (dq,))
    np.testing.assert_allclose(both, only_x + only_q, rtol=1e-15)
