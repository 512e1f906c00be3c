"""The cpu backend's inline Hurwitz zeta and polygamma (backends/llvm/zeta.py) against SciPy
and mpmath: accuracy, SciPy's values at every domain edge, vmap, fusion, native lowering."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.special as ss
from functorch_core.backends.llvm import lowering
from functorch_core.backends.planning.partition import Fallback
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads, ulp_distance

INF, NAN = np.inf, np.nan
zeta_jit = fc.jit(S.zeta)


def _exact_zeta(x, q):
    """zeta(x, q) at 45 digits by Euler-Maclaurin with many terms (mpmath's own zeta loses
    digits for large q)."""
    mp = pytest.importorskip("mpmath")
    out = []
    with mp.workdps(45):
        for xv, qv in zip(x, q, strict=True):
            xm, qm = mp.mpf(float(xv)), mp.mpf(float(qv))
            n = int(min(4000, 60 + 2 * float(xv)))
            w = qm + n
            s = mp.fsum((qm + k) ** -xm for k in range(n))
            s += w ** (1 - xm) / (xm - 1) + w ** -xm / 2
            rising = xm
            for j in range(1, 26):
                s += mp.bernoulli(2 * j) / mp.factorial(2 * j) * rising * w ** (-xm - 2 * j + 1)
                rising *= (xm + 2 * j - 1) * (xm + 2 * j)
            out.append(float(s))
    return np.array(out)


def _same_kind(got, want):
    """NaN, inf (with its sign) and the sign of zero where SciPy has them; ulps elsewhere."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[special & ~np.isnan(want)],
                                  want[special & ~np.isnan(want)])
    signed = special & ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))
    fine = ~special
    return ulp_distance(got[fine], want[fine])


def test_zeta_within_1_ulp_of_the_exact_value_over_wide_ranges():
    rng = np.random.default_rng(16)
    x = np.r_[np.exp(rng.uniform(np.log(1.0001), np.log(60), 150)),
              1 + np.geomspace(1e-15, 1e-3, 12), np.full(12, 2.0), np.full(12, 3.0)]
    q = np.r_[np.exp(rng.uniform(np.log(1e-3), np.log(1e6), 150)), np.geomspace(1e-3, 1e6, 12),
              np.geomspace(1e-3, 1e6, 12), np.geomspace(1e-3, 1e6, 12)]
    got = np.asarray(zeta_jit(x, q))
    assert ulp_distance(got, _exact_zeta(x, q)).max() <= 1


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 60.0, exclude_min=True), st.floats(1e-300, 1e6))
def test_zeta_within_4_ulp_of_scipy_where_scipy_is_exact(x, q):
    x_, q_ = np.array([x]), np.array([q])
    want = ss.zeta(x_, q_)
    exact = _exact_zeta(x_, q_)
    got = np.asarray(zeta_jit(x_, q_))
    if not np.isfinite(exact[0]) or exact[0] == 0:
        np.testing.assert_array_equal(got, want)
    elif ulp_distance(want, exact)[0] <= 1:
        assert ulp_distance(got, want)[0] <= 4
    else:                       # SciPy's q + k rounds, amplified by x: ours is the exact one
        assert ulp_distance(got, exact)[0] <= 1


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 60.0, exclude_min=True), st.floats(1e-30, 1e30))
def test_zeta_float32_as_scipy(x, q):
    x_, q_ = np.array([x], np.float32), np.array([q], np.float32)
    x_ = x_[x_ > 1]
    if x_.size == 0:
        return
    got = np.asarray(zeta_jit(x_, q_))
    assert got.dtype == np.float32
    assert _same_kind(got, ss.zeta(x_, q_)).max(initial=0) <= 1


@pytest.mark.parametrize("x", [2.0, 3.0, 4.0, 7.0, 12.0, 31.0])
def test_zeta_negative_q_integer_x_within_4_ulp_of_scipy_where_it_is_exact(x):
    q = -np.r_[np.random.default_rng(int(x)).uniform(0, 30, 60), 0.5, 1.5, 2.25, 1e-5]
    q = q[q != np.floor(q)]
    xs = np.full(q.shape, x)
    want, got = ss.zeta(xs, q), np.asarray(zeta_jit(xs, q))
    # the exact value is the sum of the (q + k)^-x up to q + k > 0, then zeta at a positive q
    m = np.ceil(-q)
    mp = pytest.importorskip("mpmath")
    with mp.workdps(45):
        head = np.array([float(mp.fsum((mp.mpf(float(v)) + k) ** -x for k in range(int(n))))
                         for v, n in zip(q, m, strict=True)])
    exact = head + _exact_zeta(xs, q + m)      # within a double's rounding: enough for the
    fine = ulp_distance(want, exact) <= 1      # sign of agreement, and the bound below
    assert fine.sum() > 10
    assert ulp_distance(got, want)[fine].max() <= 4


def test_zeta_every_edge_as_scipy():
    xs = [1.0, 0.5, 0.0, -1.0, -2.5, 2.0, 3.0, 2.5, 1.5, 60.0, 1e3, 1e20, 1e300, INF, -INF, NAN,
          1 + 2 ** -52]
    qs = [1.0, 0.5, 0.0, -0.0, -1.0, -2.0, -0.5, -1.5, -2.3, -1e-300, -5e-324, -1 + 2 ** -53,
          -100.25, 1e-300, 5e-324, 1e6, 1e8, 1e8 + 2, 1e300, INF, -INF, NAN, 2.0,
          0.3, 1.7976931348623157e308]
    x, q = (np.array(v) for v in zip(*itertools.product(xs, qs), strict=True))
    for dtype in (np.float64, np.float32):
        with np.errstate(all="ignore"):
            xd, qd = x.astype(dtype), q.astype(dtype)
            want = ss.zeta(xd, qd)
        got = np.asarray(zeta_jit(xd, qd))
        d = _same_kind(got, want)
        # SciPy loses digits to cancellation at negative q (zeta(3, -1.5): 1696 ulps)
        assert d[(qd > 0)[np.isfinite(want) & (want != 0)]].max() <= 2
        _same_kind(np.asarray(S.zeta(xd, qd)), want)


def test_riemann_zeta_is_q_one():
    x = np.array([1.5, 2.0, 3.0, 10.0, 50.0])
    assert ulp_distance(np.asarray(fc.jit(S.zeta)(x)), ss.zeta(x, 1.0)).max() <= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", range(9))
def test_polygamma_orders_as_scipy(n, dtype):
    rng = np.random.default_rng(n)
    x = np.r_[np.geomspace(1e-3, 1e6, 40), -rng.uniform(0, 20, 20), 0.0, -0.0, -1.0, -3.0, 1e-300,
              1e300, INF, -INF, NAN, 0.5, 1.0, 3.7]
    with np.errstate(all="ignore"):
        x = x.astype(dtype)
        want = np.asarray(ss.polygamma(n, x)).astype(dtype)
    got = np.asarray(fc.jit(lambda v: S.polygamma(n, v))(x))
    assert got.dtype == dtype
    d = _same_kind(got, want)
    fine = np.isfinite(want) & (want != 0)
    if n == 0:          # digamma: more in tests/backends/llvm/test_digamma_kernel.py
        assert d[x[fine] > 0].max() <= 4
        return
    # SciPy's (-1)^(n+1) gamma(n+1) zeta(n+1, x) rounds twice, and at negative x loses digits
    # to the alternating sum (up to 7.7e6 ulps at n = 8): the criterion where SciPy is
    # within an ulp of the exact value, and within 2 ulps of the exact value everywhere
    mp = pytest.importorskip("mpmath")
    with mp.workdps(40):
        exact = np.array([float(mp.polygamma(n, mp.mpf(float(v)))) for v in x[fine]]).astype(dtype)
    assert ulp_distance(got[fine], exact).max() <= 2
    scipy_exact = ulp_distance(want[fine], exact) <= 1
    assert d[scipy_exact].max() <= 4


def test_zeta_under_vmap_and_fused_with_other_math():
    rng = np.random.default_rng(3)
    x, q = 1.5 + rng.uniform(0, 10, (4, 50)), rng.uniform(0.1, 100, (4, 50))

    def f(x, q):
        return fc.numpy.log(S.zeta(x, q)) + S.polygamma(2, q) * fc.numpy.exp(-q)
    got = np.asarray(fc.jit(fc.vmap(f))(x, q))
    want = np.log(ss.zeta(x, q)) + ss.polygamma(2, q) * np.exp(-q)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    loop = np.stack([np.asarray(fc.jit(f)(a, b)) for a, b in zip(x, q, strict=True)])
    np.testing.assert_array_equal(got, loop)


def test_zeta_and_polygamma_lower_natively():
    assert P.zeta not in lowering.FALLBACK and P.polygamma not in lowering.FALLBACK
    for dtype in ("float64", "float32"):
        b = Builder()
        x, q = b.input((1 << 12,), dtype), b.input((1 << 12,), dtype)
        z = b(P.zeta, x, q)
        y = b(P.polygamma, z, order=3)
        plan = lowering.partition(b.graph(b(P.exp, y)))
        assert not any(isinstance(s, Fallback) for s in plan.steps)


def test_zeta_derivative_in_q_and_polygamma_to_second_order_natively():
    x, q = np.array([2.5, 3.0, 6.0]), np.array([0.7, 2.0, 10.0])
    check_grads(fc.jit(lambda q: S.zeta(x, q)), (q,), order=2, modes=("fwd", "rev"))
    check_grads(fc.jit(lambda v: S.polygamma(2, v)), (q,), order=2, modes=("fwd", "rev"))
