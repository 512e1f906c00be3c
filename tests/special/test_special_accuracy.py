"""Accuracy in ulps of the scipy.special functions fixed for it (issue 16: within 4 ulp of
SciPy where SciPy is correctly rounded), eager and under jit on the cpu backend, on fixed
grids that reach the tails; against 200-bit mpmath where it is installed. The full table
over every function is benchmarks/special_accuracy.py."""

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.special as ss
from functorch_core.backends import registry
from functorch_core.backends.planning.plan import Fallback
from functorch_core.ir import passes
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads, ulp_distance

CPU = registry.get("cpu")


def both_modes(fn, *args):
    return [np.asarray(fn(*args)), np.asarray(fc.jit(fn)(*args))]


def mp_values(fn, *cols):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 200
    return np.array([float(fn(mpmath, *(mpmath.mpf(float(v)) for v in vals)))
                     for vals in zip(*np.broadcast_arrays(*cols), strict=True)])


# --- ndtri ---------------------------------------------------------------------------------

Y_TAILS = np.r_[np.geomspace(1e-300, 1e-10, 60), np.geomspace(1e-10, 0.5, 60),
                1 - np.geomspace(1.2e-16, 0.5, 60), np.geomspace(5e-324, 2e-308, 12)]


def test_ndtri_within_4_ulp_of_scipy_in_both_tails():
    want = ss.ndtri(Y_TAILS)
    for got in both_modes(S.ndtri, Y_TAILS):
        assert np.max(ulp_distance(got, want)) <= 4


def test_ndtri_within_2_ulp_of_the_exact_value():
    def exact(mp, y):
        x = mp.mpf(float(ss.ndtri(float(y))))
        for _ in range(8):
            x -= (mp.ncdf(x) - y) / mp.npdf(x)
        return x
    want = mp_values(exact, Y_TAILS)
    for got in both_modes(S.ndtri, Y_TAILS):
        assert np.max(ulp_distance(got, want)) <= 2


def test_ndtri_float32_and_edges():
    y = np.r_[np.geomspace(1e-38, 0.5, 200), 1 - np.geomspace(6e-8, 0.5, 100)].astype(np.float32)
    for got in both_modes(S.ndtri, y):
        assert got.dtype == np.float32
        assert np.max(ulp_distance(got, ss.ndtri(y))) <= 1
    edges = np.array([0.0, 1.0, 0.5, -0.1, 1.1, np.nan])
    for got in both_modes(S.ndtri, edges):
        np.testing.assert_array_equal(got, ss.ndtri(edges))


@given(st.floats(1e-300, 0.5))
def test_ndtr_inverts_ndtri(y):
    # a few ulps of x move y by |x| phi(x) / ndtr(x) <= |x| (|x| + 1) times as many (relative)
    x = S.ndtri(y)
    np.testing.assert_allclose(S.ndtr(x), y, rtol=8e-16 * (1 + abs(x) * (abs(x) + 1)))


@given(st.floats(0.5, 1.0, exclude_max=True))
def test_ndtri_is_odd_about_one_half(y):
    assert S.ndtri(y) == -S.ndtri(1 - y)


def test_ndtri_derivatives_in_the_tails():
    y = np.array([1e-200, 1e-20, 0.3, 0.5, 0.9, 1 - 1e-12])
    # in log y, whose steps suit every point (d ndtri / d log y is about 1/|x| in the tail)
    check_grads(lambda u: S.ndtri(fc.numpy.exp(u)), (np.log(y[:-1]),), order=2,
                modes=("fwd", "rev"), rtol=1e-5, atol=1e-6)
    check_grads(S.ndtri, (np.array([0.1, 0.5, 0.97]),), order=2, modes=("fwd", "rev"))
    got = fc.vmap(fc.grad(S.ndtri))(y)
    np.testing.assert_allclose(got, 1 / np.exp(-0.5 * ss.ndtri(y) ** 2) * np.sqrt(2 * np.pi),
                               rtol=1e-12)   # exp(x^2/2) turns x^2 eps into ~1e-13


# --- ndtr, log_ndtr, erfinv -------------------------------------------------------------------

X_NDTR = np.r_[np.linspace(-38, -8, 80), np.linspace(-8, 8, 81)]


def test_ndtr_within_2_ulp_of_the_exact_value_natively():
    """The cpu backend's erfc is glibc's (within an ulp); the eager path runs SciPy's erfc,
    whose own tail errors (hundreds of ulps) it inherits."""
    want = mp_values(lambda mp, x: mp.ncdf(x), X_NDTR)
    assert np.max(ulp_distance(fc.jit(S.ndtr)(X_NDTR), want)) <= 2


def test_ndtr_and_log_ndtr_eagerly_within_3_ulp_of_the_exact_value():
    """On concrete arrays the tail goes through erfcx and an exact exp(-z^2) (SciPy's erfc,
    the interpreter's, is up to 25 ulp off from z = 1 on, and ndtr inherited it)."""
    want = mp_values(lambda mp, x: mp.ncdf(x), X_NDTR)
    assert np.max(ulp_distance(S.ndtr(X_NDTR), want)) <= 3
    x = np.linspace(8, 37, 60)
    want = mp_values(lambda mp, v: mp.log1p(-mp.ncdf(-v)), x)
    assert np.max(ulp_distance(S.log_ndtr(x), want)) <= 3


def test_ndtr_and_log_ndtr_float32_round_the_float64_value():
    x = np.linspace(-37, 12, 401).astype(np.float32)
    for name in ("ndtr", "log_ndtr"):
        for got in both_modes(getattr(S, name), x):
            assert got.dtype == np.float32
            assert np.max(ulp_distance(got, getattr(ss, name)(x))) <= 1


def test_log_ndtr_upper_tail():
    x = np.linspace(8, 37, 60)
    want = mp_values(lambda mp, v: mp.log1p(-mp.ncdf(-v)), x)
    assert np.max(ulp_distance(fc.jit(S.log_ndtr)(x), want)) <= 2


def test_log_ndtr_derivative_at_zero():
    """phi(0) / ndtr(0), not half of it (the branches once met at maximum(x, 0))."""
    want = np.sqrt(2 / np.pi)
    assert np.isclose(fc.grad(S.log_ndtr)(0.0), want, rtol=1e-15)
    assert np.isclose(fc.jit(fc.grad(S.log_ndtr))(0.0), want, rtol=1e-15)


def test_erfinv_near_one():
    y = np.r_[1 - np.geomspace(1.2e-16, 0.5, 80), -(1 - np.geomspace(1.2e-16, 0.5, 20))]
    for got in both_modes(S.erfinv, y):
        assert np.max(ulp_distance(got, ss.erfinv(y))) <= 4
    y32 = (1 - np.geomspace(6e-8, 0.5, 100)).astype(np.float32)
    for got in both_modes(S.erfinv, y32):      # both within an ulp of the exact value
        assert np.max(ulp_distance(got, ss.erfinv(y32))) <= 2



def test_erfinv_within_2_ulp_of_the_exact_value_everywhere():
    """Tiny arguments (relative accuracy), the central polynomial's seam with the tail's at
    |y| = 0.6 and the tail's pieces; -0.0, +-1 and outside [-1, 1] as SciPy."""
    g = np.geomspace(1e-300, 0.6, 40)
    y = np.r_[-g, g, np.linspace(0.55, 0.65, 41), 1 - np.geomspace(1.2e-16, 0.4, 60)]
    want = mp_values(lambda mp, v: mp.erfinv(v), y)
    for got in both_modes(S.erfinv, y):
        assert np.max(ulp_distance(got, want)) <= 2
    edges = np.array([-0.0, 0.0, 1.0, -1.0, 1.5, -2.0, np.nan, np.inf])
    for got in both_modes(S.erfinv, edges):
        np.testing.assert_array_equal(got, ss.erfinv(edges))
        assert np.signbit(got[0])



# --- sinc ------------------------------------------------------------------------------------

def test_sinc_within_2_ulp_of_the_exact_value_next_to_its_zeros_too():
    """sin(pi x) through x = n/2 + r: no rounding of pi x inside the sine, so the values next
    to the integers keep their relative accuracy (NumPy's lose it); float32 rounds the
    float64 value."""
    g = np.geomspace(1e-300, 0.2, 30)
    x = np.r_[-g, g, np.linspace(-10, 10, 201) + 1e-3, np.arange(-8, 9) + 1e-9, 0.25, 0.5,
              0.75, 1.25, 1e6 + 0.3]
    want = mp_values(lambda mp, v: mp.sinpi(v) / (mp.pi * v) if v else mp.mpf(1), x)
    for got in both_modes(S.sinc, x):
        assert np.max(ulp_distance(got, want)) <= 2
    x32 = x.astype(np.float32)
    want32 = mp_values(lambda mp, v: mp.sinpi(v) / (mp.pi * v) if v else mp.mpf(1), x32)
    for got in both_modes(S.sinc, x32):
        assert got.dtype == np.float32 and np.max(ulp_distance(got, want32.astype(np.float32))) <= 1
    edges = np.array([0.0, -0.0, 1.0, -3.0, 2.0 ** 60, np.inf, np.nan])
    for got in both_modes(S.sinc, edges):
        np.testing.assert_array_equal(got, [1, 1, 0, 0, 0, np.nan, np.nan])


def test_sinc_derivatives_at_zero_and_between_the_pieces():
    check_grads(S.sinc, (np.array([0.0, 0.1, 0.26, 0.5, 0.74, 1.3, -2.6]),), order=2,
                modes=("fwd", "rev"))


# --- logit, rel_entr, kl_div ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logit_near_one_half(dtype):
    p = np.r_[np.linspace(0.25, 0.75, 201), 0.5 + np.geomspace(1e-7, 0.2, 40)].astype(dtype)
    for got in both_modes(S.logit, p):
        assert np.max(ulp_distance(got, ss.logit(p))) <= 2


@pytest.mark.parametrize("name", ["rel_entr", "kl_div"])
def test_relative_entropies_float32(name):
    rng = np.random.default_rng(3)
    x, y = (np.exp(rng.uniform(-11, 11, (2, 400)))).astype(np.float32)
    y[:100] = x[:100] * np.float32(1 + 1e-3)
    for got in both_modes(getattr(S, name), x, y):
        assert got.dtype == np.float32
        assert np.max(ulp_distance(got, getattr(ss, name)(x, y))) <= 1


# --- betaln -----------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
A_BIG, B_BIG = np.exp(RNG.uniform(np.log(30), np.log(1e15), (2, 200)))
A_HUGE = np.exp(RNG.uniform(np.log(1e6), np.log(1e300), 200))
B_SMALL = np.exp(RNG.uniform(np.log(1e-3), np.log(30), 200))


def test_betaln_large_arguments_against_the_exact_value():
    """SciPy cancels between its lgamma terms for a, b both large (a million ulps here)."""
    def exact(mp, a, b):
        with mp.workprec(200 + 2 * int(mp.log(a + b + 2, 2) + 8)):
            return +(mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b))
    for a, b in ((A_BIG, B_BIG), (A_HUGE, B_SMALL)):
        want = mp_values(exact, a, b)
        for got in both_modes(S.betaln, a, b):
            # 2 ulp; near a zero of betaln (lgamma(b) ~ b log a) 2 ulp of lgamma(b) ~ 4
            err = np.abs(got - want) / np.spacing(np.maximum(np.abs(want), 4.0))
            assert np.max(err) <= 2


def test_betaln_one_huge_argument_within_4_ulp_of_scipy():
    """SciPy's asymptotic form for a > 1e6 b; the sum of lgammas lost every digit here."""
    b = np.array([1e-3, 0.5, 1.0, 2.5, 7.0, 8.0, 20.0])[:, None]
    a = np.geomspace(1e8, 1e300, 40)[None, :]
    for got in both_modes(S.betaln, a, b):
        assert np.max(ulp_distance(got, ss.betaln(a, b))) <= 4


def test_betaln_float32_and_edges():
    a = np.r_[A_BIG[:50], B_SMALL[:50]].astype(np.float32)
    b = np.r_[B_BIG[:50], B_SMALL[50:100]].astype(np.float32)
    for got in both_modes(S.betaln, a, b):
        assert got.dtype == np.float32
        assert np.max(ulp_distance(got, ss.betaln(a, b))) <= 1
    a = np.array([np.inf, 1.0, 0.0, -1.5, np.nan, 20.0, 3.0])
    b = np.array([1.0, np.inf, 1.0, 2.0, 1.0, np.inf, 4.0])
    for got in both_modes(S.betaln, a, b):
        np.testing.assert_allclose(got, ss.betaln(a, b), rtol=1e-15)


def test_betaln_derivatives_in_both_arguments():
    a = np.array([0.5, 3.0, 40.0, 1e4, 2.0])
    b = np.array([2.0, 0.7, 60.0, 3e4, 1e7])
    check_grads(S.betaln, (a, b), order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-7)
    got = fc.vmap(fc.grad(S.betaln), in_dims=(0, 0))(a, b)
    np.testing.assert_allclose(got, ss.digamma(a) - ss.digamma(a + b), rtol=1e-12)


@given(st.floats(1e-3, 1e12), st.floats(1e-3, 1e12))
def test_betaln_symmetry_and_recurrence(a, b):
    """``B(a, b) = B(b, a)`` exactly; ``B(a + 1, b) = B(a, b) a / (a + b)``, to a few ulps of
    the larger magnitude."""
    assert S.betaln(a, b) == S.betaln(b, a)
    lhs, rhs = S.betaln(a + 1, b), S.betaln(a, b) + np.log(a / (a + b))
    scale = max(abs(lhs), abs(S.betaln(a, b)), 1.0)
    assert abs(lhs - rhs) <= 8e-16 * scale * (1 + abs(np.log(a / (a + b))))


# (a, b, betaln(a, b)) near the zeros of betaln (B(a, b) = 1), where lgamma(a) + lgamma(b) -
# lgamma(a + b) cancels (the sum was 9-25 ulp off at the first ten, SciPy up to 38), and at the
# ends of the double-double form; the exact values computed once with mpmath at 40 digits
BETALN_EXACT = np.array([
    (0.5979157609194091, 3.0448687241924457, -0.22540414546758278),
    (3.705363481479834, 0.4393361873065046, 0.15913202215458508),
    (0.49763564525666915, 6.952001022734509, -0.36994234859268516),
    (0.426986959519119, 13.23987650163344, -0.36364973095178393),
    (0.4851762559768097, 5.473464544125205, -0.19992732641312141),
    (0.6306167606429767, 5.02256016652056, -0.6420998023133707),
    (0.3586245123778375, 35.96381466149817, -0.37227930610974486),
    (0.684075465845497, 1.317340840951489, 0.16912064367307075),
    (0.7160658986154773, 1.819093232695884, -0.1335875205412017),
    (0.5096789937717241, 2.3438011748985064, 0.1723137766645703),
    (0.05, 1e+26, -0.02448141984052879),
    (7.9, 1e+30, -537.3884011715801),
    (3.0, 1e+200, -1380.8579086158675),
    (2.5, 2.5, -2.6086880894021074),
    (1e-300, 0.5, 690.7755278982137),
    (5e-324, 3.0, 744.4400719213812),
])


def test_betaln_near_its_zeros_within_1_ulp_of_the_exact_value():
    a, b, want = BETALN_EXACT.T
    for got in both_modes(S.betaln, a, b) + both_modes(S.betaln, b, a):
        assert np.max(ulp_distance(got, want)) <= 1


def _betaln_integer(x, n):
    """``log B(x, n) = log((n - 1)! / (x (x + 1) ... (x + n - 1)))``: a rational's log, to
    40 digits (decimal), with no mpmath."""
    q = Fraction(math.factorial(n - 1))
    for k in range(n):
        q /= Fraction(x) + k
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        return float((decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)).ln())


@given(st.floats(0.2, 1.6), st.integers(2, 60))
def test_betaln_with_an_integer_argument_near_its_zeros(x, n):
    """B(x, n) = 1 for x from 0.62 (n = 2) down to 0.3 (n = 60): the lgamma terms cancel here.
    Within 2 ulp of the exact value, or of 0.25 where the result is smaller."""
    want = _betaln_integer(x, n)
    a, b = np.array([x, float(n)]), np.array([float(n), x])
    for got in both_modes(S.betaln, a, b):
        assert np.max(np.abs(got - want)) <= 2 * np.spacing(max(abs(want), 0.25))


def test_betaln_under_vmap_with_a_non_positive_argument_in_one_example():
    """The lgamma sum for a non-positive argument runs in a cond, batched here."""
    a = np.array([[0.6, 3.0, 9.0], [-1.5, 0.5, 2.0]])
    b = np.array([[3.0, 0.4, 20.0], [2.0, -0.3, 0.0]])
    got = fc.vmap(S.betaln)(a, b)
    np.testing.assert_allclose(got, np.stack([S.betaln(x, y) for x, y in zip(a, b, strict=True)]),
                               rtol=1e-15)
    np.testing.assert_allclose(got, ss.betaln(a, b), rtol=1e-14)


def test_betaln_compiles_natively():
    graph = passes.lower_custom(fc.make_graph(S.betaln)(np.ones(8192), np.ones(8192)))
    assert not any(isinstance(step, Fallback) for step in CPU.compile(graph).plan.steps)


# --- j0 ----------------------------------------------------------------------------------------


def test_j0_is_scipys_within_20_and_jv_beyond():
    """Cephes's j0 (SciPy's) up to |x| = 20, AMOS's jv(0, x) past it: within 4 ulp of SciPy
    wherever SciPy is correctly rounded (jv alone was 7 off there), and against the exact
    value more than 4 ulp off at fewer points than SciPy's own j0 (near the zeros both
    are hundreds off)."""
    x = np.linspace(-100, 100, 1201)
    want = mp_values(lambda mp, v: mp.besselj(0, v), x)
    scipy_exact = ulp_distance(ss.j0(x), want) <= 1
    near = np.abs(x) <= 20
    for got in both_modes(S.j0, x):
        np.testing.assert_array_equal(got[near], ss.j0(x[near]))
        np.testing.assert_array_equal(got[~near], ss.jv(0, x[~near]))
        assert np.max(ulp_distance(got, ss.j0(x))[scipy_exact]) <= 4
        assert np.sum(ulp_distance(got, want) > 4) < np.sum(ulp_distance(ss.j0(x), want) > 4)


def test_j0_derivatives():
    x = np.array([-21.0, -3.0, 0.0, 0.7, 2.404825557695773, 19.9, 20.1, 40.0])
    np.testing.assert_allclose(fc.vmap(fc.grad(S.j0))(x), -ss.j1(x), rtol=1e-13, atol=1e-16)
    check_grads(S.j0, (x,), order=2, modes=("fwd", "rev"))


@given(st.sampled_from([np.float16, np.float32, np.float64]), st.floats(allow_nan=False),
       st.integers(0, 5))
def test_ulp_distance_counts_representable_values(dtype, x, k):
    with np.errstate(over="ignore"):
        a = np.asarray(x, dtype)
    up = a
    for _ in range(k):
        up = np.nextafter(up, np.asarray(np.inf, dtype))
    if np.isfinite(up):
        assert ulp_distance(a, up) == k == ulp_distance(up, a)
    assert ulp_distance(np.asarray(0.0, dtype), np.asarray(-0.0, dtype)) == 0
    nan = np.asarray(np.nan, dtype)
    assert ulp_distance(nan, nan) == 0 and ulp_distance(a, nan) == np.inf
    with pytest.raises(TypeError, match="ulp_distance"):
        ulp_distance(np.float32(1), np.float64(1))
