"""The cpu backend's native ``igamma_grad_a``, ``igamma_hess_a`` and ``betainc_grad`` (first
and second derivatives)
(backends/llvm/special_grads.py) against their NumPy reference
(backends/interpreter/igamma_grad.py, backends/interpreter/betainc_grad.py).

The native loops repeat the reference's arithmetic; only the helpers round differently
(libm's ``lgamma``/``tgamma`` for SciPy's ``gammaln``/``betaln``, the inline ``log``,
``exp``, ``digamma``). Those few-ulp differences are amplified by the prefactor's exponent
(``a log x - x - lgamma(a)``: ``eps`` times its terms' size, relative) and, for ``betainc``,
by the cancellation in ``d log K/da = log x - 1/a - psi(a) + psi(a + b)``. The bound tested
for float64 is 8 eps times that amplification (:func:`_igamma_bound`, :func:`_betainc_bound`;
at most 4 and 1.7 of it on 20000 random points); float32 results (computed in double,
rounded once) are within 1 ulp of the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss
from budget import share
from functorch_core.backends.interpreter.betainc_grad import betainc_grad
from functorch_core.backends.interpreter.igamma_grad import igamma_grad_a
from functorch_core.backends.llvm import lowering
from functorch_core.backends.planning.partition import Fallback
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.scipy import special as S
from functorch_core.testing import ulp_distance

EPS = np.finfo(np.float64).eps
N = 48
TINY = 1e-300       # results this small are gradual underflow: compared in absolute terms


def _log_uniform(lo, hi):
    return st.lists(st.floats(np.log(lo), np.log(hi)), min_size=N, max_size=N).map(
        lambda v: np.exp(np.array(v)))


def _igamma_size(a, x):
    """The size of the prefactor's exponent ``a log x - x - lgamma(a)``."""
    with np.errstate(divide="ignore"):
        return 1 + np.abs(a * np.log(x)) + x + np.maximum(np.abs(ss.gammaln(a)),
                                                          np.abs(ss.gammaln(a + 1)))


def _igamma_bound(a, x, want):
    return 8 * EPS * _igamma_size(a, x) * np.abs(want) + TINY


def _betainc_bound(a, b, x, wrt, want):
    """8 eps (S |want| + I T): S the prefactor's exponent's size, T that of the d log K term
    (after the swap to ``1 - I_(1-x)(b, a)``), I = I_x(a, b) there."""
    swap = x > (a + 1) / (a + b + 2)
    p, q, y = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - x, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        size = (1 + np.abs(p * np.log(y)) + np.abs(q * np.log1p(-y)) + np.abs(ss.betaln(p, q))
                + np.abs(np.log(p)))
        in_p = (wrt == 0) != swap
        t = np.where(in_p, np.abs(np.log(y)) + 1 / p + np.abs(ss.digamma(p)),
                     np.abs(np.log1p(-y)) + np.abs(ss.digamma(q))) + np.abs(ss.digamma(p + q))
        bound = 8 * EPS * (size * np.abs(want) + ss.betainc(p, q, y) * t)
    return np.where(np.isfinite(bound), bound, 0) + TINY


def _native(prim, *args, **params):
    return np.asarray(fc.jit(lambda *v: prim.bind(*v, **params), backend="cpu")(*args))


def _assert_close(got, want, bound):
    bad = ~(np.abs(got - want) <= bound)
    assert not bad.any(), (got[bad][:3], want[bad][:3], bound[bad][:3])


@given(_log_uniform(1e-3, 1e3), _log_uniform(1e-3, 3e3))
def test_igamma_grad_a_float64_within_the_bound_of_the_reference(a, x):
    got, want = _native(P.igamma_grad_a, a, x), igamma_grad_a(a, x)
    assert got.dtype == np.float64
    _assert_close(got, want, _igamma_bound(a, x, want))


def _igamma_hess_bound(a, x, want):
    """:func:`_igamma_bound` for ``d^2P/da^2``, whose three terms (prefactor'' S + 2
    prefactor' S' + prefactor S'') may cancel: the bound takes their sizes, ``|dP/da| L``
    and ``V (L^2 + psi'(a))`` with ``L = |log x| + |psi(a)| + 1`` and ``V`` the value the
    branch sums (``Q`` for the continued fraction, ``P`` for the series)."""
    dp = igamma_grad_a(a, x)
    with np.errstate(divide="ignore"):
        log = np.abs(np.log(x)) + np.abs(ss.digamma(a)) + 1
    value = np.where((x > 1) & (x > a), ss.gammaincc(a, x), ss.gammainc(a, x))
    terms = np.abs(want) + np.abs(dp) * log + value * (log * log + ss.polygamma(1, a))
    return 8 * EPS * _igamma_size(a, x) * terms + TINY


@given(_log_uniform(1e-3, 1e3), _log_uniform(1e-3, 3e3))
def test_igamma_hess_a_float64_within_the_bound_of_the_reference(a, x):
    """The second derivative: the first's amplification, over the size of its terms."""
    got, want = _native(P.igamma_hess_a, a, x), igamma_grad_a(a, x, order=2)
    assert got.dtype == np.float64
    _assert_close(got, want, _igamma_hess_bound(a, x, want))


@given(_log_uniform(1e-3, 1e3), _log_uniform(1e-3, 3e3))
def test_igamma_grad_a_float32_within_1_ulp_of_the_reference(a, x):
    a, x = a.astype(np.float32), x.astype(np.float32)
    got, want = _native(P.igamma_grad_a, a, x), igamma_grad_a(a, x)
    assert got.dtype == np.float32
    assert ulp_distance(got, want).max() <= 1


def _unit_with_ends(u):
    x = np.array(u)
    x[:4] = [0.0, 1.0, 5e-324, 1 - EPS / 2]
    return x


UNIT = st.lists(st.floats(0, 1), min_size=N, max_size=N).map(_unit_with_ends)


@pytest.mark.parametrize("wrt", [0, 1])
@given(a=_log_uniform(0.1, 50), b=_log_uniform(0.1, 50), x=UNIT)
def test_betainc_grad_float64_within_the_bound_of_the_reference(wrt, a, b, x):
    got, want = _native(P.betainc_grad, a, b, x, wrt=wrt), betainc_grad(a, b, x, wrt)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got[:2], [0.0, 0.0])
    _assert_close(got, want, _betainc_bound(a, b, x, wrt, want))


@pytest.mark.parametrize("pair", [(0, 0), (0, 1), (1, 1)])
@settings(max_examples=share(3))     # 48 points an example; the reference takes 0.2 s for them
@given(a=_log_uniform(0.1, 50), b=_log_uniform(0.1, 50), x=UNIT)
def test_betainc_second_derivatives_within_the_bound_of_the_reference(pair, a, b, x):
    """The second derivatives: the first's bound, over the size of the terms ``I_ij = K (F
    (L_i L_j + L_ij) + F_i L_j + F_j L_i + F_ij)`` (which may cancel), each taken as the
    first derivatives' bounds times the log-density's slopes."""
    got, want = _native(P.betainc_grad, a, b, x, wrt=pair), betainc_grad(a, b, x, pair)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got[:2], [0.0, 0.0])
    i, j = pair
    with np.errstate(divide="ignore", invalid="ignore"):     # x = 0 and 1: bound unused
        slope = 1 + np.abs(np.log(x)) + np.abs(np.log1p(-x)) + np.abs(ss.digamma(a)) + \
            np.abs(ss.digamma(b)) + 1 / a
        size = (np.abs(want) + (np.abs(betainc_grad(a, b, x, i))
                                + np.abs(betainc_grad(a, b, x, j))) * slope
                + ss.betainc(a, b, x) * slope * slope)
        bound = _betainc_bound(a, b, x, i, size) + _betainc_bound(a, b, x, j, size)
    _assert_close(got, want, np.where(np.isfinite(bound), bound, TINY))


@pytest.mark.parametrize("wrt", [0, 1])
@given(a=_log_uniform(0.1, 50), b=_log_uniform(0.1, 50), x=UNIT)
def test_betainc_grad_float32_within_1_ulp_of_the_reference(wrt, a, b, x):
    a, b, x = (v.astype(np.float32) for v in (a, b, x))
    got, want = _native(P.betainc_grad, a, b, x, wrt=wrt), betainc_grad(a, b, x, wrt)
    assert got.dtype == np.float32
    assert ulp_distance(got, want).max() <= 1


NAN, INF = np.nan, np.inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_igamma_grad_a_edges_as_the_reference(dtype):
    """x = 0 or inf: 0; a <= 0, x < 0, a = inf or a NaN: NaN; the series/fraction switch."""
    a = np.array([1.0, 1.0, INF, 0.0, -1.0, 1.0, NAN, 1.0, INF, 2.0, 1.0, 1.0, 3.0, 3.0, 1e-300,
                  1e5, 0.5])
    x = np.array([0.0, INF, INF, 1.0, 1.0, -1.0, 1.0, NAN, 2.0, 2.0, 1.0, 1.0 + 1e-15, 3.0,
                  3.0 + 1e-13, 1.0, 1e5, 5e-324])
    a, x = a.astype(dtype), x.astype(dtype)
    got, want = _native(P.igamma_grad_a, a, x), igamma_grad_a(a, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[:3], [0.0, 0.0, 0.0])
    assert np.isnan(got[3:9]).all()
    fine = ~np.isnan(want)
    assert ulp_distance(got[fine], want[fine]).max() <= (1 if dtype == np.float32 else 64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_betainc_grad_edges_as_the_reference(dtype):
    """x = 0 or 1: 0; a or b <= 0 or infinite, x outside [0, 1] or a NaN: NaN; at the
    switch point (a + 1) / (a + b + 2) and next to it."""
    a = np.array([1.0, 1.0, 0.0, -1.0, 1.0, 1.0, INF, 1.0, NAN, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    b = np.array([2.0, 2.0, 1.0, 1.0, 0.0, 1.0, 1.0, INF, 1.0, NAN, 1.0, 1.0, 3.0, 3.0, 3.0])
    x = np.array([0.0, 1.0, 0.5, 0.5, 0.5, 1.5, 0.5, 0.5, 0.5, 0.5, -0.5, NAN, 0.4, 3 / 7,
                  3 / 7 + 1e-12])
    a, b, x = a.astype(dtype), b.astype(dtype), x.astype(dtype)
    for wrt in (0, 1):
        with np.errstate(invalid="ignore"):     # the reference's switch test on NaN operands
            want = betainc_grad(a, b, x, wrt)
        got = _native(P.betainc_grad, a, b, x, wrt=wrt)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[:2], [0.0, 0.0])
        assert np.isnan(got[2:12]).all()
        assert ulp_distance(got[12:], want[12:]).max() <= (1 if dtype == np.float32 else 64)


def _grads(a, b, x):
    """d/da of sum gammainc, gammaincc and d/da, d/db of sum betainc."""
    def total(f):
        return lambda *v: fc.numpy.sum(f(*v))
    return (fc.grad(total(lambda a: S.gammainc(a, x)))(a),
            fc.grad(total(lambda a: S.gammaincc(a, x)))(a),
            *fc.grad(total(lambda a, b: S.betainc(a, b, x / (1 + x))), argnums=(0, 1))(a, b))


def test_grads_under_jit_and_vmap_equal_the_interpreters_within_the_bound():
    rng = np.random.default_rng(3)
    a, b = np.exp(rng.uniform(np.log(0.1), np.log(50), (2, 64)))
    x = np.exp(rng.uniform(np.log(1e-3), np.log(3e3), 64))
    want = fc.jit(_grads, backend="interpreter")(a, b, x)
    got = fc.jit(_grads, backend="cpu")(a, b, x)
    batched = fc.jit(fc.vmap(_grads), backend="cpu")(a.reshape(8, 8), b.reshape(8, 8),
                                                      x.reshape(8, 8))
    y = x / (1 + x)
    bounds = (_igamma_bound(a, x, want[0]), _igamma_bound(a, x, want[1]),
              _betainc_bound(a, b, y, 0, want[2]), _betainc_bound(a, b, y, 1, want[3]))
    for g, v, w, bound in zip(got, batched, want, bounds, strict=True):
        _assert_close(np.asarray(g), np.asarray(w), bound)
        _assert_close(np.asarray(v).ravel(), np.asarray(w), bound)
    np.testing.assert_array_equal(got[0], -np.asarray(got[1]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_both_lower_natively(dtype):
    b = Builder()
    a, q, x = (b.input((1 << 12,), dtype) for _ in range(3))
    outs = [b(P.igamma_grad_a, a, x), b(P.betainc_grad, a, q, x, wrt=0),
            b(P.betainc_grad, a, q, x, wrt=1)]
    plan = lowering.partition(b.graph(*outs))
    assert not any(isinstance(s, Fallback) for s in plan.steps)
    for prim in (P.igamma_grad_a, P.betainc_grad):
        assert prim in lowering.NATIVE and prim not in lowering.FALLBACK
