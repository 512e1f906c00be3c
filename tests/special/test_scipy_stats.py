"""``functorch_core.scipy.stats`` against ``scipy.stats``: values on grids with the edges
(outside the support, invalid parameters, NaN, infinities), dtypes, derivatives (order 2,
forward and reverse, in the argument and the parameters), ``jit`` against eager, ``vmap``
against a loop, and the list of distributions and functions against SciPy's."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as ss

import functorch_core as fc
from functorch_core import numpy as fnp
from functorch_core.scipy import stats
from functorch_core.testing import check_grads

EPS = np.finfo(np.float64).eps
X = np.concatenate([-np.geomspace(1e-8, 60, 25), [0.0, -np.inf, np.inf, np.nan],
                    np.geomspace(1e-8, 60, 25), np.linspace(0, 1, 11)])
Q = np.concatenate([[0.0, 1.0, -0.1, 1.1, np.nan], np.geomspace(1e-300, 0.5, 25),
                    1 - np.geomspace(1e-16, 0.5, 25)])
K = np.concatenate([np.arange(-2.0, 30.0), [0.5, 2.5, np.inf, -np.inf, np.nan, 1e3]])

# shape parameters per distribution: ordinary, edge (a = 1, df = inf, p = 0 or 1) and invalid
CONTINUOUS = {
    "norm": [()], "expon": [()], "laplace": [()], "logistic": [()], "cauchy": [()],
    "uniform": [()],
    "t": [(0.5,), (3.0,), (30.0,), (1e6,), (np.inf,), (-1.0,), (np.nan,)],
    "gamma": [(0.3,), (1.0,), (2.5,), (50.0,), (0.0,)],
    "chi2": [(0.5,), (2.0,), (7.0,), (-1.0,)],
    "beta": [(0.5, 0.5), (2.0, 3.0), (1.0, 1.0), (0.3, 7.0), (40.0, 60.0), (0.0, 1.0)]}
DISCRETE = {
    "poisson": [(0.0,), (0.5,), (3.0,), (30.0,), (1e6,), (-1.0,)],
    "binom": [(10, 0.3), (40, 0.9), (5, 0.0), (5, 1.0), (0, 0.5), (5.5, 0.3), (5, 1.2)],
    "bernoulli": [(0.3,), (0.0,), (1.0,), (1.5,)],
    "nbinom": [(3, 0.4), (0.5, 0.9), (10.0, 1.0), (0, 0.5)],
    "geom": [(0.3,), (1.0,), (0.01,), (0.0,)]}
LOC_SCALE = [(0.0, 1.0), (0.5, 2.0), (0.0, -1.0), (0.0, 0.0)]


def _scipy(fn, *args, **kw):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _assert_matches(ours, ref, rtol, atol=0.0, what=""):
    """Equal NaN pattern, equal infinities, finite values within ``rtol * |ref| + atol``
    (``rtol`` may be an array, one tolerance per point)."""
    ours, ref = np.broadcast_arrays(np.asarray(ours), np.asarray(ref))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref), err_msg=f"{what}: NaNs")
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(ours[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)],
                                  err_msg=f"{what}: infinities")
    rtol = np.broadcast_to(rtol, ref.shape)
    err = np.abs(ours[fin] - ref[fin])
    bound = rtol[fin] * np.abs(ref[fin]) + atol
    worst = np.argmax(err - bound) if err.size else None
    assert np.all(err <= bound), (
        f"{what}: at {np.flatnonzero(fin)[worst]} got {ours[fin][worst]!r}, SciPy "
        f"{ref[fin][worst]!r} (tolerance {bound[worst]:.3g})")


def _rtol(name, fname, y, shapes, ref):
    """1e-13, loosened where one side is known to be less accurate (the reason each):"""
    rtol = np.full(np.shape(ref), 1e-13)
    with np.errstate(all="ignore"):
        # the normal cdf's relative condition number is y^2 (the rounding of
        # y = (x - loc) / scale, and SciPy's ndtr, which rounds y / sqrt 2, carries it)
        if name == "norm" or (name == "t" and np.isinf(shapes[0])):
            rtol = rtol + 4 * EPS * np.nan_to_num(y * y, posinf=0.0)
        # x from P(a, x) = p: P's rounding costs 1/a in x (P ~ x^a as x -> 0)
        if name in ("gamma", "chi2") and fname in ("ppf", "isf"):
            a = shapes[0] / (2 if name == "chi2" else 1)
            rtol = rtol + 8 * EPS / min(a, 1.0)
        # a density computed as exp(logpdf): |logpdf| ulps
        if fname in ("pdf", "pmf"):
            rtol = rtol + 4 * EPS * np.abs(np.nan_to_num(np.log(ref), neginf=0.0, posinf=0.0))
    return rtol


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_values_match_scipy(name):
    """Every function on the grid X (Q for ppf/isf) for each shape and (loc, scale),
    scale <= 0 and invalid shapes included: NaN, inf and 0 where SciPy has them, the rest
    within 1e-13 relative (looser where ``_rtol`` says why); logpdf within 1e-13 absolute
    too (SciPy's betaln and ours differ by an ulp of |betaln|, ~1e-14 at a=40, b=60)."""
    ours_d, ref_d = getattr(stats, name), getattr(ss, name)
    for fname in ours_d.functions:
        for shapes in CONTINUOUS[name]:
            # the iterative inverses are slow eagerly: two (loc, scale), one invalid
            iterative = fname in ("ppf", "isf") and name in ("t", "beta", "gamma", "chi2")
            for loc, scale in LOC_SCALE[1:3] if iterative else LOC_SCALE:
                arg = Q if fname in ("ppf", "isf") else X
                ref = _scipy(getattr(ref_d, fname), arg, *shapes, loc=loc, scale=scale)
                ours = getattr(ours_d, fname)(arg, *shapes, loc=loc, scale=scale)
                if name == "t" and shapes[0] == 1.0 and fname != "logpdf":
                    # SciPy's stdtr is 3e-9 off at df=1 near 0; Cauchy is t(1) exactly
                    ref = _scipy(getattr(ss.cauchy, fname), arg, loc=loc, scale=scale)
                if fname in ("ppf", "isf") and name in ("t", "beta"):
                    ours, ref = np.asarray(ours), np.asarray(ref)
                    # deep tails: x below 1e-300 (SciPy's beta clamps to 2.2e-308, the
                    # true root underflows to 0 here); |t| above 1e150 (x = df / (df + t^2)
                    # underflows: inf here; SciPy's stdtrit is finite at df = 0.5, -inf at
                    # df = 3 where the truth is 2e100); SciPy's NaN at beta.isf(1e-300, 0.3,
                    # 7) (the root rounds to 1 here)
                    std = np.abs((ref - loc) / scale) if scale else ref
                    valid = scale > 0 and np.all(np.greater(shapes, 0))
                    odd = (std < 1e-300) | (std > 1e150) | (np.isnan(ref) & ~np.isnan(ours)
                                                           & valid)
                    if name == "t" and scale > 0 and shapes[0] > 0:
                        # SciPy's stdtrit is off in the deep tails (a factor 2 in t at
                        # df = 3, q = 2e-163: its own cdf of it is 8 q); there SciPy's cdf
                        # of ours must give q back
                        back = getattr(ref_d, "cdf" if fname == "ppf" else "sf")
                        wrong = (np.abs(_scipy(back, ref, *shapes, loc, scale) / arg - 1) > 1e-8)
                        wrong &= (arg > 0) & (arg < 1) & (np.abs(ours) < 1e150)
                        mine = _scipy(back, ours, *shapes, loc, scale)
                        np.testing.assert_allclose(mine[wrong], arg[wrong], rtol=1e-12)
                        odd = odd | wrong
                    ref = np.where(odd, ours, ref)
                y = (arg - loc) / scale if scale else arg
                atol = 1e-13 if fname == "logpdf" else 0.0
                rtol = _rtol(name, fname, y, shapes, ref)
                if name == "t" and fname in ("ppf", "isf") and np.isfinite(shapes[0]):
                    # from y = t^2 / (df + t^2), solved for in betainc's complement, whose
                    # rounding costs ~df / t^2 ulps in t (1e-11 at df = 1e6, t = 2)
                    with np.errstate(all="ignore"):
                        t2 = np.nan_to_num(((ref - loc) / scale) ** 2) if scale else 1.0
                        rtol = rtol + EPS * np.nan_to_num(abs(shapes[0]) / t2, posinf=0.0)
                _assert_matches(ours, ref, rtol, atol,
                                f"{name}.{fname}{shapes} loc={loc} scale={scale}")


def test_t_cdf_with_a_large_df_keeps_its_tail():
    """df = 1e6, x = -10.6: the tail is 1.25e-26, ``I_x(df/2, 1/2)`` at ``x`` within an
    ulp of 1 (x carried in double-double; rounded, it cost 6e-11 relative)."""
    _assert_matches(stats.t.cdf(-10.616607694646133, 1e6),
                    ss.t.cdf(-10.616607694646133, 1e6), 2e-14)
    _assert_matches(stats.t.cdf(-1e-8, 1.0), ss.cauchy.cdf(-1e-8), 1e-15)


def _scipy_discrete(ref_d, fname, arg, shapes, loc):
    ref = np.array(_scipy(getattr(ref_d, fname), arg, *shapes, loc=loc), dtype=float)
    if fname == "logcdf":
        # SciPy's rv_discrete.logcdf writes 0 at k >= the support's end after marking
        # invalid parameters NaN (its cdf keeps the NaN): we keep NaN there
        cdf = _scipy(ref_d.cdf, arg, *shapes, loc=loc)
        ref = np.where(np.isnan(cdf), np.nan, ref)
    return ref


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_values_match_scipy(name):
    """Every function on the grid K (non-integer, negative, infinite and NaN k included;
    Q for ppf), each shape (invalid ones included) and loc in (0, 2): within 1e-13 relative,
    logpmf within 1e-13 absolute too (binom's log-binomial coefficient: SciPy's three
    gammaln against one betaln)."""
    ours_d, ref_d = getattr(stats, name), getattr(ss, name)
    for fname in ours_d.functions:
        for shapes in DISCRETE[name]:
            for loc in (0.0, 2.0):
                arg = Q if fname == "ppf" else K
                ref = _scipy_discrete(ref_d, fname, arg, shapes, loc)
                ours = getattr(ours_d, fname)(arg, *shapes, loc=loc)
                if fname == "ppf":
                    # q within 1e-13 of 1: SciPy decides cdf(k) >= q on a cdf that rounds to
                    # 1 (off by one at poisson(1e6), q = 1 - 2^-53, and at nbinom(0.5, 0.9));
                    # there SciPy's sf must put ours first with sf(k) <= 1 - q
                    near = (arg > 1 - 1e-13) & (arg < 1) & (ours != ref) & np.isfinite(ref)
                    k = ours[near] - loc
                    sf = ref_d.sf
                    assert np.all(_scipy(sf, k, *shapes) <= 1 - arg[near])
                    assert np.all(_scipy(sf, k - 1, *shapes) > 1 - arg[near])
                    ref = np.where(near, ours, ref)
                # SciPy's discrete logcdf/logsf are log(cdf)/log(sf): near 0 they carry eps
                # absolute (ours take log1p(-sf) there, as SciPy's continuous ones do)
                atol = {"logpmf": 1e-13, "logcdf": 4 * EPS, "logsf": 4 * EPS}.get(fname, 0.0)
                _assert_matches(ours, ref, _rtol(name, fname, arg, shapes, ref), atol,
                                f"{name}.{fname}{shapes} loc={loc}")


def test_multivariate_values_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + 0.5 * np.eye(3)
    mean = np.array([0.1, -0.2, 0.3])
    x = rng.standard_normal((4, 5, 3))
    for fname in ("logpdf", "pdf"):
        for args in [(x, mean, cov), (x[0, 0], mean, cov), (x, mean, 2.0),
                     (x, mean, np.array([1.0, 2.0, 3.0])), (x[0, :, 0], None, 2.0),
                     (0.3, 0.0, 2.0)]:
            ours = getattr(stats.multivariate_normal, fname)(*args)
            ref = getattr(ss.multivariate_normal, fname)(*args)
            assert np.shape(ours) == np.shape(ref)
            np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=0)
    alpha = np.array([0.5, 2.0, 3.5])
    xs = rng.dirichlet(alpha, size=6).T
    for fname in ("logpdf", "pdf"):
        for xx in (xs, xs[:, 0], xs[:2]):
            ours = getattr(stats.dirichlet, fname)(xx, alpha)
            ref = getattr(ss.dirichlet, fname)(xx, alpha)
            assert np.shape(ours) == np.shape(ref)
            np.testing.assert_allclose(ours, ref, rtol=1e-13)
    p = np.array([0.2, 0.3, 0.5])
    counts = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 6.0], [1.5, 1.5, 3.0], [-1.0, 4.0, 3.0],
                       [1.0, 1.0, 1.0]])
    for fname in ("logpmf", "pmf"):
        for n, pp in [(6, p), (6, np.array([0.2, 0.3, 0.6])), (6, np.array([-0.1, 0.6, 0.5])),
                      (-1, p)]:
            ours = getattr(stats.multinomial, fname)(counts, n, pp)
            ref = _scipy(getattr(ss.multinomial, fname), counts, n, pp)
            _assert_matches(ours, ref, 1e-13, what=f"multinomial.{fname} n={n} p={pp}")


def test_dirichlet_checks_concrete_points_as_scipy():
    with pytest.raises(ValueError, match="sum to 1"):
        stats.dirichlet.logpdf(np.array([0.2, 0.2]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="first axis"):
        stats.dirichlet.logpdf(np.array([0.2]), np.array([1.0, 2.0, 3.0]))


def test_dtypes_and_scalars_as_scipy():
    """float64 out for float32, integer and float64 inputs (SciPy computes in float64);
    a NumPy scalar for scalar inputs; dirichlet keeps float32 as SciPy's does."""
    for fn, args in [(stats.norm.logpdf, (np.float32([0.5]),)),
                     (stats.gamma.cdf, (np.float32([0.5]), np.float32(2))),
                     (stats.poisson.logpmf, (np.int64([1, 2]), np.float32(2))),
                     (stats.t.sf, (np.arange(3), 4)),
                     (stats.multivariate_normal.logpdf, (np.float32([0.5, 1.0]),))]:
        assert fn(*args).dtype == np.float64, fn
    assert type(stats.norm.cdf(0.5)) is np.float64
    assert type(stats.binom.pmf(2, 5, 0.5)) is np.float64
    d = stats.dirichlet.logpdf(np.float32([0.2, 0.8]), np.float32([1.0, 2.0]))
    assert d.dtype == ss.dirichlet.logpdf(np.float32([0.2, 0.8]), np.float32([1, 2])).dtype


GRADS = [
    # (function, point): derivatives in every argument, x and the parameters
    (lambda x, m, s: stats.norm.logpdf(x, m, s), (0.3, -0.2, 1.5)),
    (lambda x, m, s: stats.norm.cdf(x, m, s), (0.3, -0.2, 1.5)),
    (lambda x, m, s: stats.norm.logsf(x, m, s), (2.3, -0.2, 1.5)),
    (lambda q, m, s: stats.norm.ppf(q, m, s), (0.3, -0.2, 1.5)),
    (lambda x, df, s: stats.t.logpdf(x, df, 0.1, s), (0.7, 3.5, 1.3)),
    (lambda x, df: stats.t.cdf(x, df), (-0.7, 3.5)),
    (lambda x, df: stats.t.cdf(x, df), (2.5, 4.5)),
    (lambda x, a, s: stats.gamma.logpdf(x, a, 0.0, s), (1.7, 2.5, 0.8)),
    (lambda x, a: stats.gamma.cdf(x, a), (1.7, 2.5)),
    (lambda x, df: stats.chi2.logsf(x, df), (1.7, 3.0)),
    (lambda q, a, s: stats.gamma.ppf(q, a, 0.1, s), (0.3, 2.5, 1.3)),
    (lambda q, a: stats.gamma.isf(q, a), (0.01, 0.7)),
    (lambda q, df: stats.chi2.ppf(q, df), (0.8, 3.0)),
    (lambda q, a, b: stats.beta.ppf(q, a, b), (0.3, 2.5, 1.7)),
    (lambda q, a, b: stats.beta.isf(q, a, b), (0.05, 0.8, 3.0)),
    (lambda q, df: stats.t.ppf(q, df), (0.2, 4.5)),
    (lambda q, df: stats.t.isf(q, df), (0.01, 2.5)),
    (lambda x, a, b: stats.beta.logpdf(x, a, b), (0.3, 2.5, 1.7)),
    (lambda x, a, b: stats.beta.cdf(x, a, b), (0.3, 2.5, 1.7)),
    (lambda x, a, b: stats.beta.sf(x, a, b), (0.1, 2.5, 1.7)),
    (lambda x, s: stats.expon.logcdf(x, 0.1, s), (0.9, 1.3)),
    (lambda x, s: stats.laplace.cdf(x, 0.1, s), (0.9, 1.3)),
    (lambda x, s: stats.logistic.logpdf(x, 0.1, s), (0.9, 1.3)),
    (lambda x: stats.logistic.logcdf(x), (-0.4,)),
    (lambda q, s: stats.logistic.ppf(q, 0.1, s), (0.3, 1.3)),
    (lambda x, s: stats.cauchy.logpdf(x, 0.1, s), (2.9, 1.3)),
    (lambda q: stats.cauchy.ppf(q), (0.8,)),
    (lambda x, lo, s: stats.uniform.cdf(x, lo, s), (0.5, 0.1, 1.3)),
    (lambda mu: stats.poisson.logpmf(3.0, mu), (2.5,)),
    (lambda mu: stats.poisson.cdf(3.0, mu), (2.5,)),
    (lambda p: stats.binom.logpmf(3.0, 10, p), (0.35,)),
    (lambda p: stats.binom.sf(3.0, 10, p), (0.35,)),
    (lambda p: stats.bernoulli.logpmf(1.0, p), (0.35,)),
    (lambda n, p: stats.nbinom.logpmf(4.0, n, p), (2.5, 0.35)),
    (lambda n, p: stats.nbinom.cdf(4.0, n, p), (2.5, 0.35)),
    (lambda p: stats.geom.logsf(4.0, p), (0.35,)),
    (lambda x, k, m: stats.vonmises.logpdf(x, k, m), (0.7, 2.5, 0.2)),
    (lambda x, k: stats.vonmises.cdf(x, k), (0.7, 2.5)),
    (lambda x, k: stats.vonmises.sf(x, k), (-1.1, 60.0)),
]


@pytest.mark.parametrize("case", range(len(GRADS)))
def test_derivatives_order_two_forward_and_reverse(case):
    fn, point = GRADS[case]
    check_grads(fn, tuple(np.float64(v) for v in point), order=2, modes=("fwd", "rev"),
                rtol=1e-5, atol=1e-6)


def test_multivariate_derivatives_order_two():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    x = rng.standard_normal((2, 3))
    check_grads(lambda x, m, c: stats.multivariate_normal.logpdf(x, m, (c + c.T) / 2),
                (x, np.array([0.1, 0.2, -0.3]), cov), order=2, rtol=1e-5, atol=1e-6)
    check_grads(lambda x, a: stats.dirichlet.logpdf(x / fnp.sum(x), a),
                (np.array([0.2, 0.3, 0.5]), np.array([1.5, 2.0, 0.7])), order=2)
    check_grads(lambda p: stats.multinomial.logpmf(np.array([1.0, 2.0, 3.0]), 6, p),
                (np.array([0.2, 0.3, 0.5]),), order=2)


def test_discrete_ppf_derivatives_are_zero():
    """Integer-valued: 0 (the search's loop was refused by reverse mode before)."""
    for fn in (lambda mu: stats.poisson.ppf(0.3, mu), lambda p: stats.binom.ppf(0.3, 10, p),
               lambda p: stats.nbinom.ppf(0.3, 2.0, p), lambda p: stats.geom.ppf(0.3, p)):
        assert fc.grad(fn)(0.4) == 0.0
        assert fc.jvp(fn, (0.4,), (1.0,))[1] == 0.0


def test_derivatives_outside_the_support_are_zero_not_nan():
    g = fc.grad(lambda x: fnp.sum(stats.beta.logpdf(x, 2.0, 3.0) + stats.beta.pdf(x, 0.5, 3.0)))
    np.testing.assert_array_equal(g(np.array([-1.0, 2.0])), [0.0, 0.0])
    g = fc.grad(lambda x: fnp.sum(stats.gamma.logcdf(x, 2.0) + stats.t.logpdf(x, -1.0)))
    np.testing.assert_array_equal(g(np.array([-1.0, -0.5])), [0.0, 0.0])
    g = fc.grad(lambda a: fnp.sum(stats.gamma.logpdf(np.array([-1.0, 1.0]), a)))
    assert np.isfinite(g(2.0))


JIT_CASES = [
    (stats.norm.logcdf, (X, 0.3, 1.7)), (stats.t.sf, (X, 3.5)), (stats.gamma.logpdf, (X, 2.5)),
    (stats.beta.cdf, (X, 2.0, 0.5)), (stats.chi2.logsf, (X, 3.0)), (stats.cauchy.ppf, (Q,)),
    (stats.laplace.isf, (Q, 0.1, 2.0)), (stats.gamma.ppf, (Q, 0.4)), (stats.chi2.isf, (Q, 7.0)),
    (stats.beta.ppf, (Q, 0.5, 3.0)), (stats.t.isf, (Q, 2.5)), (stats.poisson.logpmf, (K, 3.5)),
    (stats.binom.cdf, (K, 20, 0.3)), (stats.nbinom.sf, (K, 2.5, 0.3)),
    (stats.geom.ppf, (Q, 0.3)), (stats.bernoulli.pmf, (K, 0.3)), (stats.poisson.ppf, (Q, 30.0)),
    (stats.binom.ppf, (Q, 40, 0.9)), (stats.nbinom.ppf, (Q, 0.5, 0.9)),
    (stats.vonmises.cdf, (X, 3.5)), (stats.vonmises.logpdf, (X, 70.0)),
]


@pytest.mark.parametrize("case", range(len(JIT_CASES)))
def test_jit_equals_eager(case):
    fn, args = JIT_CASES[case]
    eager = fn(*args)
    jitted = fc.jit(fn)(*args)
    _assert_matches(jitted, eager, 1e-14, what=f"jit {fn.__qualname__}")


def test_jit_multivariate():
    x = np.random.default_rng(2).standard_normal((5, 2))
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    f = stats.multivariate_normal.logpdf
    np.testing.assert_allclose(fc.jit(f)(x, np.zeros(2), cov), f(x, np.zeros(2), cov),
                               rtol=1e-14)


def test_vmap_over_a_parameter_equals_loop_and_stack():
    xs = np.linspace(-1.0, 4.0, 7)
    for fn, params in [(lambda df: stats.t.cdf(xs, df), np.array([0.5, 2.0, 30.0])),
                       (lambda a: stats.gamma.logpdf(xs, a, 0.0, 1.5), np.array([0.5, 2.0])),
                       (lambda p: stats.binom.logpmf(np.arange(5.0), 4, p), np.array([0.1, 0.7])),
                       (lambda s: stats.norm.ppf(0.2, 0.0, s), np.array([0.5, 2.0, -1.0])),
                       (lambda a: stats.gamma.ppf(Q, a), np.array([0.01, 3.0, 300.0])),
                       (lambda mu: stats.poisson.ppf(Q, mu), np.array([0.0, 3.0, 1e6]))]:
        np.testing.assert_allclose(fc.vmap(fn)(params), np.stack([fn(p) for p in params]),
                                   rtol=1e-14)
    covs = np.stack([np.eye(2) * s for s in (0.5, 1.0, 3.0)])
    fn = lambda c: stats.multivariate_normal.logpdf(np.ones((4, 2)), None, c)  # noqa: E731
    np.testing.assert_allclose(fc.vmap(fn)(covs), np.stack([fn(c) for c in covs]), rtol=1e-14)


# SciPy's methods of each distribution that are left out, with the reason a user reads
LEFT_OUT = {"vonmises": {"ppf": "SciPy inverts the cdf by a generic root search",
                         "isf": "SciPy inverts the cdf by a generic root search"}}
_CHECKED = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "pmf", "logpmf")


@pytest.mark.parametrize("name", sorted([*CONTINUOUS, *DISCRETE, "vonmises"]))
def test_functions_and_signatures_match_scipy(name):
    """Each SciPy function (of pdf/logpdf/cdf/logcdf/sf/logsf/ppf/isf/pmf/logpmf) is either
    provided or in LEFT_OUT, and each provided one takes SciPy's arguments: the point, the
    shape parameters by SciPy's ``.shapes`` names, then loc (and scale)."""
    ref, ours = getattr(ss, name), getattr(stats, name)
    theirs = {f for f in _CHECKED if hasattr(ref, f)}
    if isinstance(ref, ss.rv_continuous):
        theirs -= {"pmf", "logpmf"}
    else:
        theirs -= {"pdf", "logpdf", "isf"}
    assert set(ours.functions) | set(LEFT_OUT.get(name, {})) == theirs
    assert not set(ours.functions) & set(LEFT_OUT.get(name, {}))
    shapes = [s.strip() for s in ref.shapes.split(",")] if ref.shapes else []
    tail = ["loc", "scale"] if isinstance(ref, ss.rv_continuous) else ["loc"]
    for f in ours.functions:
        first = "q" if f in ("ppf", "isf") else ("x" if tail == ["loc", "scale"] else "k")
        assert list(inspect.signature(getattr(ours, f)).parameters) == [first, *shapes, *tail]


def test_multivariate_signatures_match_scipy():
    for name, fnames in [("multivariate_normal", ("logpdf", "pdf")),
                         ("dirichlet", ("logpdf", "pdf")), ("multinomial", ("logpmf", "pmf"))]:
        for f in fnames:
            ours = inspect.signature(getattr(getattr(stats, name), f))
            ref = inspect.signature(getattr(getattr(ss, name), f))
            assert [(p.name, p.default) for p in ours.parameters.values()] == \
                [(p.name, p.default) for p in ref.parameters.values()]


def test_every_listed_distribution_is_provided():
    assert sorted(stats.__all__) == sorted([*CONTINUOUS, *DISCRETE, "multivariate_normal",
                                            "dirichlet", "multinomial", "vonmises"])


def test_bad_calls_name_the_function():
    with pytest.raises(TypeError, match=r"stats\.gamma\.logpdf\(x, a, loc=0.0, scale=1.0\)"):
        stats.gamma.logpdf(1.0)
    with pytest.raises(TypeError, match=r"stats\.norm\.cdf: complex"):
        stats.norm.cdf(1j)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(np.zeros(2), allow_singular=True)


def test_gamma_ppf_and_isf_on_a_wide_grid():
    """a in 1e-3..1e5, q in 1e-300..1 - 1e-16 (both tails, from the bracketed Newton's
    start to its end): within 1e-13 + 8 eps / min(a, 1) relative of SciPy's gammaincinv
    and gammainccinv (P's rounding costs 1/a in x where P ~ x^a); results below 1e-290
    aside (their density underflows on the way: 1.5e-13 at x = 5e-299)."""
    a = np.geomspace(1e-3, 1e5, 25)[:, None]
    q = np.concatenate([np.geomspace(1e-300, 0.5, 30), 1 - np.geomspace(1e-16, 0.5, 30)])
    a, q = np.broadcast_arrays(a, q[None, :])
    rtol = 1e-13 + 8 * EPS / np.minimum(a, 1.0)
    for ours, ref in [(stats.gamma.ppf(q, a), _scipy(ss.gamma.ppf, q, a)),
                      (stats.gamma.isf(q, a), _scipy(ss.gamma.isf, q, a))]:
        normal = ref > 1e-290
        _assert_matches(ours[normal], ref[normal], rtol[normal], what="gamma inverse")


def test_docstring_examples_give_scipys_values():
    from functorch_core.scipy.stats._examples import EXAMPLES
    for (name, fname), (call, value) in EXAMPLES.items():
        assert f">>> {call}\n        {value}" in getattr(getattr(stats, name), fname).__doc__
        np.testing.assert_allclose(float(value), eval(call, {"stats": ss}), rtol=1e-13)


def test_vonmises_matches_scipy():
    """On x in [-4 pi, 4 pi] (whole turns: SciPy's periodic density and unwrapped cdf), kappa
    from 0 (the uniform circle) through the series' end (kappa < 50) into the normal
    approximation, invalid kappa, loc and scale: SciPy's NaNs and infinities, and
    - pdf/logpdf within 1e-13 relative plus |logpdf| ulps (exp of a log), 1e-13 absolute;
    - cdf/sf: 1e-12 absolute, the accuracy SciPy's von_mises_cdf states for its series
      ("12 decimal digits"; at kappa = 49.9 SciPy and ours are both 7.4e-14 from an mpmath
      quadrature, in different places); absolute, because ``0.5 + x / 2 pi + V / pi``
      cancels to ~1e-16 at the turns; plus 4 eps z^2 relative for the normal
      approximation's ndtr(z), z = sqrt(2 / pi) sin(x / 2) / i0e(kappa) (its condition);
    - logcdf/logsf: that absolute error divided by the cdf/sf (the log's condition), where
      the cdf/sf is above 1e-10 (below, both sides are rounding noise of the cancellation)."""
    x = np.concatenate([np.linspace(-4 * np.pi, 4 * np.pi, 97), [np.nan, np.inf, -np.inf]])
    for kappa in (0.0, 1e-3, 0.5, 2.0, 10.0, 49.9, 50.0, 300.0, -1.0, np.nan):
        for loc, scale in LOC_SCALE:
            y = (x - loc) / scale if scale else x
            with np.errstate(all="ignore"):
                z = np.sqrt(2 / np.pi) * np.sin(y / 2) / _scipy(sp.i0e, kappa)
            normal = 4 * EPS * np.nan_to_num(z * z) if kappa >= 50 else np.zeros_like(x)
            for fname in stats.vonmises.functions:
                ref = _scipy(getattr(ss.vonmises, fname), x, kappa, loc=loc, scale=scale)
                ours = np.asarray(getattr(stats.vonmises, fname)(x, kappa, loc=loc,
                                                                 scale=scale))
                what = f"vonmises.{fname}({kappa}) loc={loc} scale={scale}"
                if fname in ("pdf", "logpdf"):
                    _assert_matches(ours, ref, _rtol("vonmises", fname, y, (kappa,), ref),
                                    1e-13 if fname == "logpdf" else 0.0, what)
                    continue
                if fname in ("cdf", "sf"):
                    _assert_matches(ours, ref, normal, 1e-12, what)
                    continue
                base = _scipy(getattr(ss.vonmises, fname[3:]), x, kappa, loc=loc, scale=scale)
                keep = ~(np.abs(base) <= 1e-10)
                np.testing.assert_array_equal(np.isnan(ours[keep]), np.isnan(ref[keep]), what)
                fin = keep & np.isfinite(ref)
                with np.errstate(all="ignore"):
                    bound = (1e-13 + normal) * np.abs(ref) + 1e-12 / np.abs(base)
                with np.errstate(all="ignore"):
                    err = np.abs(ours - ref)
                assert np.all(err[fin] <= bound[fin]), (what, ours[fin], ref[fin])
