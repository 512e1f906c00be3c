"""numpy.fft through the fft primitive: NumPy parity (values and dtypes, eager and jit),
derivatives against finite differences (order 2, both modes, complex inputs too), the
transpose identity, vmap against loop-and-stack, and the errors."""

import numpy as np
import pytest
from functorch_core.ir import Lit
from functorch_core.ir import primitives as P
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.testing import check_grads

C2C = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "ihfft", "rfft2", "rfftn"]
C2R = ["irfft", "hfft", "irfft2", "irfftn"]
ONE_D = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}
NORMS = [None, "backward", "ortho", "forward"]


def _input(name, dtype, shape=(4, 6)):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype) if np.dtype(dtype).kind != "i" else (10 * x).astype(dtype)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", C2C + R2C + C2R)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                   np.int32])
def test_matches_numpy_eager_and_jit(name, dtype, norm):
    if name in R2C and np.dtype(dtype).kind == "c":
        with pytest.raises(TypeError, match=f"fft.{name}: the input must be real"):
            getattr(fnp.fft, name)(_input(name, dtype))
        return
    x = _input(name, dtype)
    want = getattr(np.fft, name)(x, norm=norm)
    eager = getattr(fnp.fft, name)(x, norm=norm)
    jitted = fc.jit(lambda a: getattr(np.fft, name)(a, norm=norm))(x)
    for got in (eager, jitted):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=_tol(dtype), atol=_tol(dtype) * 10)


@pytest.mark.parametrize("name,kwargs", [
    ("fft", {"n": 9}), ("fft", {"n": 3, "axis": 0}), ("ifft", {"n": 5, "axis": -2}),
    ("rfft", {"n": 7}), ("rfft", {"n": 8, "axis": 0}), ("irfft", {"n": 9}),
    ("irfft", {"n": 4, "axis": 0}), ("hfft", {"n": 7}), ("ihfft", {"n": 5, "axis": 1}),
    ("fftn", {"s": (3, 8), "axes": (1, 2)}), ("fftn", {"axes": (0,)}),
    ("fftn", {"axes": (1, 0)}), ("fftn", {"s": (5,), "axes": (0,)}), ("fftn", {"axes": (1, 1)}),
    ("ifftn", {"s": (2, 2, 3), "axes": (0, 1, 2)}), ("rfftn", {"axes": (2, 0)}),
    ("rfftn", {"s": (4, 4), "axes": (0, 2)}), ("irfftn", {"s": (3, 4, 10), "axes": (0, 1, 2)}),
    ("irfftn", {"axes": (0, 2)}), ("rfft2", {"axes": (0, 2)}),
    ("irfft2", {"s": (6, 6)}), ("fft2", {"axes": (2, 0)}), ("rfftn", {"axes": (1, 1)}),
])
def test_lengths_and_axes_match_numpy(name, kwargs):
    x = _input(name, np.float64, (4, 3, 6))
    for norm in ("backward", "ortho"):
        want = getattr(np.fft, name)(x, norm=norm, **kwargs)
        got = fc.jit(lambda a, kw=kwargs, nm=norm: getattr(np.fft, name)(a, norm=nm, **kw))(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_frequencies_and_shifts_match_numpy():
    np.testing.assert_array_equal(fnp.fft.fftfreq(7, 0.3), np.fft.fftfreq(7, 0.3))
    np.testing.assert_array_equal(fnp.fft.rfftfreq(8), np.fft.rfftfreq(8))
    x = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(fc.jit(lambda a, ax=axes: np.fft.fftshift(a, ax))(x),
                                      np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(fc.jit(lambda a, ax=axes: np.fft.ifftshift(a, ax))(x),
                                      np.fft.ifftshift(x, axes))


def test_unmodified_numpy_code_traces():
    def spectrum_energy(x):
        return np.sum(np.abs(np.fft.rfft(x, norm="ortho")) ** 2)

    x = np.random.default_rng(1).normal(size=16)
    graph = fc.make_graph(spectrum_energy)(x)
    assert any(e.prim is P.fft for e in graph.eqns)
    np.testing.assert_allclose(fc.jit(spectrum_energy)(x), spectrum_energy(x), rtol=1e-12)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2",
                                  "rfftn", "irfftn"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_check_grads_order_2(name, norm):
    rng = np.random.default_rng(2)
    shape = (3, 5) if name not in ONE_D else (7,)
    x = rng.normal(size=shape)
    if name in C2R or name in ("fft", "ifft", "fft2"):
        x = x + 1j * rng.normal(size=shape)

    def f(a):
        y = getattr(fnp.fft, name)(a, norm=norm)
        return y * y      # non-linear, so second derivatives are not all zero

    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("fft_type,in_shape,lengths", [
    ("fft", (3, 4), (4,)), ("ifft", (2, 3, 5), (3, 5)), ("rfft", (3, 6), (6,)),
    ("rfft", (4, 7), (4, 7)), ("irfft", (2, 4), (6,)), ("irfft", (2, 4), (7,)),
    ("irfft", (3, 4, 3), (4, 4)), ("irfft", (3, 4, 3), (4, 5)),
])
def test_transpose_identity(fft_type, in_shape, lengths):
    """<ct, T x> == <T^t ct, x> under Re(sum(a * b)), the pairing of the vjp."""
    rng = np.random.default_rng(3)
    dt = np.float64 if fft_type == "rfft" else np.complex128
    x = rng.normal(size=in_shape).astype(dt)
    if dt == np.complex128:
        x = x + 1j * rng.normal(size=in_shape)

    def t(a):
        return P.fft.bind(a, fft_type=fft_type, fft_lengths=lengths)

    y, pull = fc.vjp(t, x)
    ct = rng.normal(size=y.shape).astype(y.dtype)
    if ct.dtype.kind == "c":
        ct = ct + 1j * rng.normal(size=y.shape)
    (ct_x,) = pull(ct)
    assert ct_x.dtype == x.dtype and ct_x.shape == x.shape
    np.testing.assert_allclose(np.real(np.sum(ct * t(x))), np.real(np.sum(ct_x * x)),
                               rtol=1e-10)


@pytest.mark.parametrize("name,shape", [("fft2", (256, 384)), ("rfft", (64, 2048)),
                                        ("irfftn", (3, 128, 257))])
def test_threaded_transforms_give_one_threads_bits(name, shape):
    """Batched and n-d transforms of at least 2^16 elements run pocketfft on every core,
    which splits the independent 1-d transforms: the bits of one thread's, eagerly. Compiled,
    the power-of-two leading axes run natively (tests/backends/llvm/test_llvm_fft.py: the same
    bits on any thread count)."""
    import scipy.fft
    rng = np.random.default_rng(7)
    x = rng.normal(size=shape)
    if name != "rfft":
        x = x + 1j * rng.normal(size=shape)
    want = getattr(scipy.fft, name)(x, workers=1)
    np.testing.assert_array_equal(getattr(scipy.fft, name)(x, workers=4), want, strict=True)
    np.testing.assert_array_equal(getattr(fnp.fft, name)(x), want, strict=True)
    got = fc.jit(getattr(fnp.fft, name))(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.max(np.abs(want)))


def test_irfft_transpose_weights_come_from_an_iota():
    """(Results of up to FOLD_MAX_ELEMENTS elements are folded into literals anyway.)"""
    g = fc.make_graph(fc.grad(lambda h: fnp.sum(fnp.fft.irfft(h, 1000) ** 2)))(
        np.ones(501, complex))
    assert max(v.value.size for e in g.eqns for v in e.inputs if isinstance(v, Lit)) == 1


@pytest.mark.parametrize("n", [4096, 4097])
def test_rfft_transposes_into_a_real_transform(n):
    """The vjp of rfft runs an irfft of the weighted conjugate half spectrum (no complex
    FFT of the full length): the gradient of a spectral loss, in closed form
    ``2 n irfft(rfft(x) w^2 / weights)`` (weights 1 at the zero and Nyquist frequencies,
    2 elsewhere), to rounding, for even and odd lengths."""
    rng = np.random.default_rng(6)
    x, w = rng.normal(size=n), rng.normal(size=n // 2 + 1)

    def loss(x, w):
        return fnp.sum(fnp.abs(fnp.fft.rfft(x) * w) ** 2)

    g = fc.make_graph(fc.grad(loss))(x, w)
    assert [e.params["fft_type"] for e in g.eqns if e.prim is P.fft] == ["rfft", "irfft"]
    # the weights come from an iota, not from a literal as long as the spectrum
    assert max(v.value.size for e in g.eqns for v in e.inputs if isinstance(v, Lit)) == 1
    weights = np.full(n // 2 + 1, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    want = 2 * n * np.fft.irfft(np.fft.rfft(x) * w * w / weights, n)
    for got in (fc.grad(loss)(x, w), fc.jit(fc.grad(loss))(x, w)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(1, 4), name=st.sampled_from(["rfft", "irfft", "fft"]),
       seed=st.integers(0, 2 ** 16))
def test_transpose_identity_property(n, m, name, seed):
    rng = np.random.default_rng(seed)
    if name == "irfft":
        x = rng.normal(size=(m, n // 2 + 1)) + 1j * rng.normal(size=(m, n // 2 + 1))
    elif name == "rfft":
        x = rng.normal(size=(m, n))
    else:
        x = rng.normal(size=(m, n)) + 1j * rng.normal(size=(m, n))

    def f(a):
        return getattr(fnp.fft, name)(a, n=n)

    y, pull = fc.vjp(f, x)
    ct = rng.normal(size=y.shape) + (1j * rng.normal(size=y.shape) if y.dtype.kind == "c"
                                     else 0)
    (ct_x,) = pull(ct.astype(y.dtype))
    np.testing.assert_allclose(np.real(np.sum(ct * y)), np.real(np.sum(ct_x * x)),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name,axis", [("fft", -1), ("rfft", 0), ("irfft", 1), ("fft2", -1),
                                       ("rfftn", 0), ("ifftn", 2)])
@pytest.mark.parametrize("in_dim", [0, 1, 2])
def test_vmap_matches_loop(name, axis, in_dim):
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(4, 5, 6)) + 1j * rng.normal(size=(4, 5, 6))
    if name.startswith("rfft"):
        xs = xs.real

    def f(a):
        kw = {"axis": axis % 2} if name in ONE_D else {}
        return getattr(fnp.fft, name)(a, **kw)

    got = fc.vmap(f, in_dims=in_dim)(xs)
    want = np.stack([f(np.take(xs, i, axis=in_dim)) for i in range(xs.shape[in_dim])])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fc.jit(fc.vmap(f, in_dims=in_dim))(xs), want, rtol=1e-12,
                               atol=1e-12)


def test_per_example_grad_of_a_spectral_loss():
    rng = np.random.default_rng(5)
    xs, w = rng.normal(size=(8, 16)), rng.normal(size=9)

    def loss(w, x):
        return fnp.sum(fnp.abs(fnp.fft.rfft(x) * w) ** 2)

    got = fc.jit(fc.vmap(fc.grad(loss), in_dims=(None, 0)))(w, xs)
    want = np.stack([2 * w * np.abs(np.fft.rfft(x)) ** 2 for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("call,error,match", [
    (lambda x: fnp.fft.fft(x, norm="backwards"), ValueError,
     r'fft.fft: invalid norm value \'backwards\'; should be "backward", "ortho" or "forward"'),
    (lambda x: fnp.fft.rfft(x.astype(complex)), TypeError, "fft.rfft: the input must be real"),
    (lambda x: fnp.fft.fft(x, n=0), ValueError,
     r"fft.fft: invalid number of data points \(0\) specified for an input of shape \(3, 4\)"),
    (lambda x: fnp.fft.fftn(x, s=(2, 2), axes=(0,)), ValueError,
     r"fft.fftn: shape s=\(2, 2\) and axes=\(0,\) must have the same length"),
    (lambda x: fnp.fft.fft(x, axis=2), np.exceptions.AxisError, "axis 2 is out of bounds"),
    (lambda x: fnp.fft.fft(x, out=np.empty((3, 4), complex)), NotImplementedError,
     r"fft.fft\(..., out=...\) is not supported"),
])
def test_errors_name_the_function(call, error, match):
    with pytest.raises(error, match=match):
        call(np.ones((3, 4)))
    with pytest.raises(error, match=match):
        fc.jit(call)(np.ones((3, 4)))


def test_primitive_shape_rule_errors():
    with pytest.raises(ValueError, match=r"fft \(rfft\): the trailing axes of an operand of "
                                         r"shape \(3, 4\) must be \(5,\)"):
        P.fft.bind(np.ones((3, 4)), fft_type="rfft", fft_lengths=(5,))
    with pytest.raises(ValueError, match="fft_type must be one of"):
        P.fft.bind(np.ones((3, 4), complex), fft_type="dft", fft_lengths=(4,))


def test_caller_array_untouched():
    x = np.random.default_rng(6).normal(size=(4, 8))
    before = x.copy()
    fc.jit(lambda a: np.fft.irfft(np.fft.rfft(a) * 2))(x)
    fc.grad(lambda a: np.sum(np.real(np.fft.fft(a)) ** 2))(x)
    np.testing.assert_array_equal(x, before)
