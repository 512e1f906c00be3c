"""Complex ``erf``, ``erfc``, ``erfcx``, ``ndtr``, ``log_ndtr``, ``spence`` and ``jv`` (a real
order, a complex argument) in ``functorch_core.scipy.special``: SciPy's values (to the bit
where the primitive calls SciPy's complex function: eagerly, in the interpreter and in the
cpu backend's native kernels), derivatives to order 2 in both modes, batching, and
``log_ndtr`` accurate where SciPy's formula cancels."""

import numpy as np
import pytest
import scipy.special as ss
from bitwise import assert_bitwise
from functorch_core.backends.llvm import lowering, scipy_calls
from functorch_core.backends.planning.partition import Fallback
from functorch_core.ir import AbstractArray
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
import functorch_core.scipy.special as S
from functorch_core.testing import check_grads

_PARTS = [0.0, -0.0, 0.5, -1.0, 3.0, 6.5, -7.0, 27.0, -40.0, 1e300, np.inf, -np.inf, np.nan]
EDGES = np.array([complex(a, b) for a in _PARTS for b in _PARTS])
BITWISE = ["erf", "erfc", "erfcx", "ndtr", "spence"]
POINTS = np.array([0.7 + 0.4j, -2.3 + 1.1j, 3 + 3j, 1.05 - 0.02j, -1.5 - 0.5j, 5.5 + 0.1j,
                   0.3 - 2j])


def _points(seed, n=3000):
    """Wide magnitudes in every direction, the edges, and a band along the real axis."""
    rng = np.random.default_rng(seed)
    z = np.exp(rng.uniform(-6, 4.5, n)) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    band = rng.uniform(-8, 8, 300) + 1j * rng.uniform(-0.3, 0.3, 300)
    return np.concatenate([z, band, EDGES])


def _modes():
    return {"eager": lambda f: f, "jit": fc.jit,
            "interpreter": lambda f: fc.jit(f, backend="interpreter")}


@pytest.mark.parametrize("mode", list(_modes()))
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", BITWISE)
def test_values_are_scipys_to_the_bit(name, dtype, mode):
    """Every part, NaN, infinity and signed zero as SciPy's, complex64 computed in double
    precision and rounded back as SciPy's ``F->F`` loops do; ``ndtr`` is composed as
    SciPy's (a real scaling part by part around ``erfc``)."""
    with np.errstate(all="ignore"):
        z = _points(1).astype(dtype)
        want = getattr(ss, name)(z)
        got = np.asarray(_modes()[mode](getattr(S, name))(z))
    assert got.dtype == want.dtype == dtype
    assert_bitwise([got], [want])


@pytest.mark.parametrize("mode", list(_modes()))
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=lambda d: np.dtype(d).name)
def test_jv_of_a_complex_argument_is_scipys_to_the_bit(dtype, mode):
    with np.errstate(over="ignore"):
        z = _points(2, n=1500).astype(dtype)
    real = np.float32 if dtype == np.complex64 else np.float64
    v = np.random.default_rng(3).uniform(-4, 30, z.size).round(1).astype(real)
    v[:40] = [0.0, 1.0, -1.0, 0.5, -0.5, 2.5, 100.0, np.nan] * 5
    with np.errstate(all="ignore"):
        want = ss.jv(v, z)
        got = np.asarray(_modes()[mode](S.jv)(v, z))
    assert got.dtype == want.dtype == dtype
    assert_bitwise([got], [want])
    # Python scalars: weak order, the argument's dtype; jn is jv, as in SciPy
    assert S.jv(1.5, z[:3]).dtype == dtype
    with np.errstate(all="ignore"):
        assert_bitwise([np.asarray(_modes()[mode](S.jn)(2, z))], [ss.jn(2, z)])


def test_native_kernels_call_scipys_complex_functions():
    """No equation falls back to the interpreter; a big complex array runs the call as a
    kernel of its own (as the real calls into SciPy), and such a kernel counts as calls."""
    b = Builder()
    x = b.input((1 << 12,), np.complex128)
    v = b.input((1 << 12,), np.float64)
    graph = b.graph(b(P.mul, b(P.erfcx, x), x), b(P.bessel_jv, v, x))
    plan = lowering.partition(graph)
    assert not any(isinstance(s, Fallback) for s in plan.steps)
    kernels = [[op.prim for op in k.ops] for k in plan.steps]
    assert [P.erfcx] in kernels and [P.bessel_jv] in kernels, kernels
    assert all(scipy_calls.calls_scipy(k) for k in plan.steps if k.ops[0].prim is not P.mul)
    assert not scipy_calls.is_call(P.erf, np.float64) and scipy_calls.is_call(P.erf, np.complex64)


def test_aot_export_refuses_complex_calls_into_scipy(tmp_path):
    import shutil

    from functorch_core.backends.llvm.aot import NotNativeError
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    exp = fc.export(lambda z: S.erf(z) * 2, np.ones(3, np.complex128))
    with pytest.raises(NotNativeError, match="erf calls SciPy"):
        exp.compile_library(tmp_path / "g.so", "g")


def _mp(values):
    return np.array(values, dtype=np.complex128)


# log(ndtr(z)) by mpmath at 50 digits (log1p(-erfc(z / sqrt 2) / 2)), where SciPy's
# -t^2 + log(erfcx(t)) - log 2 cancels: SciPy is off by 7.6e-8, 2.5e-12 and 8.3e-11 relative
_BAND = _mp([5.51851369 + 0.00385058j, 3.83122585 + 0.09585625j, 4.21451156 + 0.23223064j])
_BAND_EXACT = _mp([-1.7089963595142373e-08 + 3.744587488422826e-10j,
                   -5.923385023605162e-05 + 2.4324985019927342e-05j,
                   -6.624348992085456e-06 + 1.1002984126605702e-05j])


@pytest.mark.parametrize("jit", [False, True])
def test_log_ndtr_complex_matches_scipy_and_beats_it_where_it_cancels(jit):
    """Within 1e-13 of SciPy where both take its formula; where ``|erfc(z / sqrt 2)| / 2 <
    1/2`` is certain, ``log1p`` of it: full precision where SciPy keeps 7 digits (checked
    against mpmath values and against ``u - u^2/2 + u^3/3`` of SciPy's ``ndtr(-z)`` where
    that series is exact); SciPy's NaN, infinities and signed zeros, except the sign of a
    zero imaginary part on the positive real axis (SciPy's is +0 below 6 and -0 above,
    from either side; ours that of ``erfc``'s)."""
    run = fc.jit if jit else (lambda f: f)
    z = _points(5)
    with np.errstate(all="ignore"):
        want, got = ss.log_ndtr(z), np.asarray(run(S.log_ndtr)(z))
    a, b = z.real / np.sqrt(2), z.imag / np.sqrt(2)
    with np.errstate(all="ignore"):
        ours_only = (a > 0) & ((np.abs(b) <= a) | (b * b - a * a < np.log(
            np.maximum(1, np.sqrt(np.pi) * a))))
    np.testing.assert_allclose(got[~ours_only], want[~ours_only], rtol=1e-13, atol=0,
                               equal_nan=True)
    signed = ~ours_only & ~np.isnan(want.imag)
    np.testing.assert_array_equal(np.signbit(got.imag[signed]), np.signbit(want.imag[signed]))
    u = -ss.ndtr(-z[ours_only])
    series = u - u * u / 2 + u ** 3 / 3
    tiny = np.abs(u) < 1e-5
    np.testing.assert_allclose(got[ours_only][tiny], series[tiny], rtol=1e-15, atol=0)
    np.testing.assert_allclose(got[ours_only], want[ours_only], rtol=1e-5, equal_nan=True)
    np.testing.assert_allclose(run(S.log_ndtr)(_BAND), _BAND_EXACT, rtol=4e-15)
    assert np.max(np.abs(ss.log_ndtr(_BAND) - _BAND_EXACT) / np.abs(_BAND_EXACT)) > 1e-8
    small = z[:500].astype(np.complex64)
    got32 = S.log_ndtr(small)
    assert got32.dtype == ss.log_ndtr(small).dtype == np.complex64
    np.testing.assert_allclose(got32, ss.log_ndtr(small), rtol=3e-6, atol=1e-37)


@settings(deadline=None)
@given(st.complex_numbers(max_magnitude=12, allow_nan=False, allow_infinity=False))
def test_log_ndtr_is_the_principal_log_of_ndtr_and_conjugate_symmetric(z):
    """``exp(log_ndtr(z)) == ndtr(z)`` with the imaginary part in ``[-pi, pi)`` (on both
    branches), and ``log_ndtr(conj z) == conj(log_ndtr(z))`` off the cut."""
    x = np.array([z, np.conj(z)])
    got = np.asarray(S.log_ndtr(x))
    cdf = ss.ndtr(x)
    np.testing.assert_allclose(np.exp(got), cdf, rtol=2e-13, atol=1e-300)
    assert ((-np.pi <= got.imag) & (got.imag < np.pi)).all()
    if abs(np.angle(cdf[0])) < 3.1:
        np.testing.assert_allclose(got[1], np.conj(got[0]), rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("name", BITWISE + ["log_ndtr"])
def test_derivatives_to_order_two_both_modes(name):
    """Holomorphic: forward and reverse to order 2 against differences, eager and
    compiled; ``log_ndtr`` across both of its branches."""
    f = getattr(S, name)
    check_grads(f, (POINTS,), order=2)
    check_grads(fc.jit(f), (POINTS,), order=2)


def test_jv_derivative_in_a_complex_argument():
    v = np.array([0.5, 1.0, 2.5, 3.0, 0.0, 1.5, 4.0])
    check_grads(lambda z: S.jv(v, z), (POINTS,), order=2)
    g = fc.grad(lambda z: fnp.sum(fnp.real(S.jv(v, z))))(POINTS)
    np.testing.assert_allclose(g, (ss.jv(v - 1, POINTS) - ss.jv(v + 1, POINTS)) / 2,
                               rtol=1e-13)


def test_grad_of_the_real_part_is_the_derivative():
    """JAX's convention (as for loggamma): the gradient of ``Re f`` is ``f'(z)`` itself."""
    g = fc.grad(lambda z: fnp.sum(fnp.real(S.erf(z))))(POINTS)
    np.testing.assert_allclose(g, 2 / np.sqrt(np.pi) * np.exp(-POINTS ** 2), rtol=1e-14)
    g = fc.grad(lambda z: fnp.sum(fnp.real(S.log_ndtr(z))))(POINTS)
    density = np.exp(-POINTS ** 2 / 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(g, density / ss.ndtr(POINTS), rtol=1e-13)
    g = fc.grad(lambda z: fnp.sum(fnp.real(S.spence(z))))(POINTS)
    np.testing.assert_allclose(g, np.log(POINTS) / (1 - POINTS), rtol=1e-13)


def test_log_ndtr_grads_are_finite_where_a_branch_overflows():
    """Each branch sees only its own points: at ``40 + 0j`` (where ``erfcx(-40 / sqrt 2)``
    overflows) and at ``-40 + 30j`` (where ``erfc(z / sqrt 2)`` does) the gradient is the
    finite ``ndtr'/ndtr``."""
    z = np.array([40 + 0j, -40 + 30j, 6 + 50j, 30 - 29j])
    g = np.asarray(fc.grad(lambda z: fnp.sum(fnp.real(S.log_ndtr(z))))(z))
    assert np.isfinite(g).all(), g
    np.testing.assert_allclose(g[2:], fc.vmap(fc.grad(
        lambda t: fnp.real(S.log_ndtr(t))))(z[2:]), rtol=1e-14)


@pytest.mark.parametrize("name", BITWISE + ["log_ndtr"])
def test_vmap_is_a_loop(name):
    batch = POINTS.reshape(7, 1) * np.array([1.0, 0.5, -1.0])
    f = getattr(S, name)
    want = np.stack([np.asarray(f(r)) for r in batch])
    assert_bitwise([np.asarray(fc.vmap(f)(batch))], [want])
    native = np.asarray(fc.jit(fc.vmap(f))(batch))
    if name == "log_ndtr":      # libm's log1p and atan2 natively, NumPy's eagerly
        np.testing.assert_allclose(native, want, rtol=4e-16, atol=0)
    else:
        assert_bitwise([native], [want])


def test_complex_order_of_jv_is_refused_by_name():
    with pytest.raises(TypeError, match=r"special\.jv: the order v must be real"):
        S.jv(np.array([1 + 1j]), 2.0)
    with pytest.raises(TypeError, match="bessel_jv: order dtype float32 and argument dtype "
                                        "complex128 differ"):
        P.bessel_jv.abstract_eval(AbstractArray((), np.float32),
                                  AbstractArray((), np.complex128))
    with pytest.raises(TypeError, match="bessel_jv does not accept dtype complex128"):
        P.bessel_jv.abstract_eval(AbstractArray((), np.complex128),
                                  AbstractArray((), np.complex128))


def test_scipy_seterr_does_not_reach_the_native_complex_calls():
    """As for the real calls (test_llvm_scipy_special_calls.py): natively SciPy's value
    (here jv's overflow), no warning or ``SpecialFunctionError``, small or split arrays."""
    f = fc.jit(lambda v, z: S.jv(v, z) * S.erf(z))
    before = ss.geterr()
    ss.seterr(all="raise")
    try:
        for n in (10, 70000):
            z = np.full(n, 5 + 1000j)
            r = np.asarray(f(np.ones(n), z))
            with np.errstate(all="ignore"):
                ss.seterr(**before)
                want = ss.jv(1.0, z) * ss.erf(z)
                ss.seterr(all="raise")
            assert_bitwise([r], [want])
    finally:
        ss.seterr(**before)
