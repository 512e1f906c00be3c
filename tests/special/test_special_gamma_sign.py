"""``gammasgn``, ``rgamma``, ``beta`` and ``erfcinv`` (``functorch_core/scipy/_gamma_sign.py``)
against SciPy in ulps on dense grids, eagerly and under ``jit``, float64 and float32;
``beta`` beyond SciPy's ratio of gammas against mpmath; derivatives against finite
differences; and SciPy's own ufuncs called on tracers (``__array_ufunc__``)."""

import warnings

import numpy as np
import pytest
import scipy.special as ss

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads, ulp_distance

RNG = np.random.default_rng(0)
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, -0.5, 0.5, 1.0, 2.0, -170.0,
                  -170.5, -171.5, -180.5, 171.5, 171.7, 178.0, 1e-300, 1e-310, 5e-324, 1e300])
X = np.concatenate([EDGES, np.linspace(-175, 180, 20001), np.geomspace(1e-300, 1e300, 2001)])
Y = np.concatenate([EDGES, np.linspace(-0.5, 2.5, 20001), np.geomspace(1e-300, 2, 2001),
                    2 - np.geomspace(1e-16, 1, 200)])
# the ratio-of-gammas region of beta (|a|, |b|, |a + b| <= 171.62) and its poles
A = np.concatenate([RNG.uniform(-30, 30, 8000), np.arange(-10.0, 10.0), EDGES])
B = np.concatenate([RNG.uniform(-30, 30, 8000), np.arange(10.0, -10.0, -1), EDGES[::-1]])

# ulp bounds against SciPy in float64, each from how the function is computed: rgamma is 1 /
# SciPy's gamma (SciPy's rgamma is its own series: 4 ulp apart on X); erfcinv is SciPy's
# formula over this package's ndtri (4 ulp from SciPy's ndtri, so 4 + the scaling's 2);
# beta multiplies rgamma by two of SciPy's gammas (4 + 2 roundings); gammasgn is exact.
# float32 is computed in float64 and rounded once, as SciPy's loops: within 1 ulp.
ULPS = {"gammasgn": 0, "rgamma": 4, "erfcinv": 6, "beta": 6}
ARGS = {"gammasgn": (X,), "rgamma": (X,), "erfcinv": (Y,), "beta": (A, B)}


def _in_ratio_region(a, b):
    return np.maximum(np.maximum(np.abs(a), np.abs(b)), np.abs(a + b)) <= 171.62


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(ULPS))
def test_matches_scipy_in_ulps_eager_and_jit(name, dtype):
    args = tuple(a.astype(dtype) for a in ARGS[name])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = getattr(ss, name)(*args)
        keep = _in_ratio_region(*args) if name == "beta" else np.ones(want.shape, bool)
        for got in (getattr(S, name)(*args), fc.jit(getattr(S, name))(*args)):
            assert got.dtype == want.dtype == dtype
            got, ref = got[keep], want[keep]
            assert np.array_equal(np.isnan(got), np.isnan(ref))
            assert np.array_equal(np.isinf(got) & (got > 0), np.isinf(ref) & (ref > 0))
            assert np.array_equal(np.isinf(got) & (got < 0), np.isinf(ref) & (ref < 0))
            finite = np.isfinite(ref)
            bound = ULPS[name] if dtype == np.float64 else 1
            assert ulp_distance(got[finite], ref[finite]).max() <= bound


def test_the_special_values():
    np.testing.assert_array_equal(S.gammasgn(np.array([-0.0, 0.0, -2.5, -3.5, -3.0, -np.inf])),
                                  [-1.0, 1.0, -1.0, 1.0, np.nan, np.nan])
    np.testing.assert_array_equal(S.rgamma(np.array([-3.0, -np.inf, np.inf, 1e-310])),
                                  [0.0, 0.0, 0.0, 1e-310])
    np.testing.assert_array_equal(S.erfcinv(np.array([0.0, 2.0, -0.1, 2.1, 1.0])),
                                  [np.inf, -np.inf, np.nan, np.nan, 0.0])
    # a non-positive integer: (-1)^m B(1 - n - m, m) where finite (SciPy's), else inf
    a = np.array([-2.0, 3.0, -1.0, -2.0, 0.0, -1e300, np.nan, -2.0])
    b = np.array([2.0, -4.0, 3.0, -1.0, 0.0, -1.0, -3.0, np.nan])
    np.testing.assert_array_equal(S.beta(a, b), ss.beta(a, b))
    assert S.beta(3.0, -4.0) == -1 / 12 and S.beta(1.0, 200.0) == pytest.approx(1 / 200, 1e-15)


def test_beta_beyond_the_gammas_against_mpmath():
    """Where a Gamma overflows, SciPy's exp of a sum of lgammas is up to 2.8e7 ulp off;
    ours, exp(betaln), within 4 (1 + |log B|) ulp (measured 2.3: betaln's few ulp of
    log B, times |log B|, and exp's rounding)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 200
    a = np.concatenate([RNG.uniform(172, 1e4, 40), np.geomspace(172, 1e9, 40)])
    b = np.concatenate([RNG.uniform(0.01, 50, 40), RNG.uniform(0.01, 5, 40)])
    exact = [mpmath.beta(mpmath.mpf(x), mpmath.mpf(y)) for x, y in zip(a, b, strict=True)]
    want = np.array([float(v) for v in exact])
    log_b = np.array([float(abs(mpmath.log(v))) for v in exact])
    ok = want > np.finfo(np.float64).tiny
    for got in (S.beta(a, b), fc.jit(S.beta)(a, b)):
        assert np.all(ulp_distance(got[ok], want[ok]) <= 4 * (1 + log_b[ok]))


@pytest.mark.parametrize("name,args", [
    ("rgamma", (np.array([-2.5, -0.5, 0.3, 1.0, 4.5, 20.0]),)),
    ("erfcinv", (np.array([0.05, 0.4, 1.0, 1.7, 1.95]),)),
    ("beta", (np.array([0.5, 2.0, 3.5, -0.5, 1.5]), np.array([1.5, 0.7, 4.0, 2.5, -0.3]))),
    ("beta", (np.array([200.0, 1e3]), np.array([0.5, 2.0]))),     # through exp(betaln)
])
def test_check_grads_order_2(name, args):
    check_grads(getattr(S, name), args, order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_derivatives_in_closed_form():
    x = np.array([-2.5, 0.5, 3.0])
    np.testing.assert_allclose(fc.vmap(fc.grad(S.rgamma))(x), -ss.rgamma(x) * ss.digamma(x),
                               rtol=1e-13)
    y = np.array([0.1, 1.0, 1.9])
    np.testing.assert_allclose(fc.vmap(fc.grad(S.erfcinv))(y),
                               -np.sqrt(np.pi) / 2 * np.exp(ss.erfcinv(y) ** 2), rtol=1e-13)
    a, b = 2.5, 1.5
    da, db = fc.grad(S.beta, argnums=(0, 1))(a, b)
    both = ss.digamma(a + b)
    np.testing.assert_allclose([da, db], [ss.beta(a, b) * (ss.digamma(a) - both),
                                          ss.beta(a, b) * (ss.digamma(b) - both)], rtol=1e-13)
    assert fc.grad(S.gammasgn)(-1.5) == 0.0


def test_vmap_matches_a_loop():
    a, b = np.array([0.5, 2.0, -1.5]), np.array([1.0, 3.0, 0.25])
    got = fc.vmap(S.beta, in_dims=(0, None))(a, b[1])
    np.testing.assert_array_equal(got, np.stack([S.beta(x, b[1]) for x in a]))


# SciPy's own ufuncs called on tracers, as unmodified SciPy code does


def test_scipy_ufuncs_on_tracers_run_ours():
    x = np.array([0.5, 2.0, 3.5])
    np.testing.assert_allclose(fc.grad(lambda t: ss.gammaln(t).sum())(x), ss.digamma(x),
                               rtol=1e-14)
    np.testing.assert_allclose(fc.grad(lambda t: ss.psi(t))(2.0), ss.polygamma(1, 2.0),
                               rtol=1e-13)
    np.testing.assert_array_equal(fc.jit(lambda t: ss.erf(t) * ss.expit(t))(x),
                                  S.erf(x) * S.expit(x))
    np.testing.assert_array_equal(fc.vmap(lambda t: ss.jv(1.0, t))(x), S.jv(1.0, x))
    np.testing.assert_array_equal(fc.jit(lambda t: ss.beta(t, 2.0) + ss.rgamma(t))(x),
                                  S.beta(x, 2.0) + S.rgamma(x))
    got = fc.jit(lambda t: ss.gammaln(t))(x.astype(np.float32))
    assert got.dtype == np.float32


def test_unsupported_scipy_ufuncs_name_scipy():
    x = np.array([0.5, 2.0])
    with pytest.raises(NotImplementedError, match=r"^scipy\.special\.yv is not supported on "
                                                  r"traced arrays; not implemented yet \(to be "
                                                  "built: Bessel"):
        fc.jit(lambda t: ss.yv(1.0, t))(x)
    with pytest.raises(NotImplementedError, match=r"^scipy\.special\.beta\.outer is not"):
        fc.jit(lambda t: ss.beta.outer(t, t))(x)
    with pytest.raises(NotImplementedError, match=r"^numpy\.ldexp is not supported"):
        fc.jit(lambda t: np.ldexp(t, 2))(x)
