"""functorch_core.scipy.signal against scipy.signal: values and dtypes (eager and jit),
derivatives against finite differences (order 2, both modes), vmap against loop-and-stack,
and the errors.

Tolerances come from the error bounds of the two algorithms, not from our output: a direct
sum of ``L`` products has, elementwise, ``|err| <= L eps (|in1| * |in2|)`` (``*`` the
convolution of the magnitudes); an FFT convolution of length ``N`` has, normwise,
``|err| <= c log2(N) eps ||in1||_2 ||in2||_2``. Both SciPy and we carry such an error, so
the bound is twice the larger of the two, with ``c = 4`` and the ``eps`` of the least
precise input."""

import itertools
import math

import numpy as np
import pytest
import scipy.signal as ss

import functorch_core as fc
import functorch_core.scipy.signal as S
from functorch_core.testing import check_grads

RNG = np.random.default_rng(0)


def _arr(shape, kind):
    if kind == "f":
        return RNG.standard_normal(shape)
    if kind == "f32":
        return RNG.standard_normal(shape).astype(np.float32)
    if kind == "c":
        return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    if kind == "i":
        return RNG.integers(-5, 6, shape)
    return RNG.integers(0, 2, shape).astype(bool)


def _bound(a, b, dtype):
    """Twice the larger of the direct and the FFT error bounds for conv(a, b) in dtype
    (SciPy transforms each input in its own precision: the least precise one counts)."""
    if np.dtype(dtype).kind in "biu":
        return 0.0
    eps = max(np.finfo(d).eps for d in (np.dtype(dtype), np.asarray(a).dtype,
                                        np.asarray(b).dtype) if d.kind in "fc")
    a, b = np.abs(np.asarray(a, complex)), np.abs(np.asarray(b, complex))
    terms = min(a.size, b.size)
    direct = terms * eps * ss.convolve(a, b, method="direct").max()
    n = math.prod(p + q - 1 for p, q in zip(a.shape, b.shape))
    fft = 4 * max(math.log2(n), 1) * eps * np.linalg.norm(a) * np.linalg.norm(b)
    return 2 * max(direct, fft)


def _close(got, want, a, b):
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=0, atol=_bound(a, b, want.dtype))


SHAPES = [((7,), (3,)), ((3,), (7,)), ((4,), (4,)), ((4, 5), (2, 3)), ((2, 3), (4, 5)),
          ((3, 6), (3, 2)), ((3, 4, 2), (2, 2, 2)), ((5,), (1,))]


@pytest.mark.parametrize("fn", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("method", ["direct", "fft", "auto"])
def test_matches_scipy(fn, mode, method):
    for (s1, s2), k1, k2 in itertools.product(SHAPES, ["f", "c", "i", "f32"], ["f", "i"]):
        a, b = _arr(s1, k1), _arr(s2, k2)
        want = getattr(ss, fn)(a, b, mode=mode, method=method)
        _close(getattr(S, fn)(a, b, mode=mode, method=method), want, a, b)


@pytest.mark.parametrize("fn", ["convolve", "correlate"])
@pytest.mark.parametrize("method", ["direct", "fft"])
def test_jit_matches_eager(fn, method):
    a, b = _arr((4, 5), "c"), _arr((2, 3), "f")
    for mode in ("full", "same", "valid"):
        f = fc.jit(lambda a, b, mode=mode: getattr(S, fn)(a, b, mode=mode, method=method))
        _close(f(a, b), getattr(ss, fn)(a, b, mode=mode, method=method), a, b)


def test_bool_and_int_dtypes_stay_exact():
    a, b = _arr((9,), "b"), _arr((4,), "b")
    for method in ("direct", "fft"):      # SciPy's FFT path for bool is not the bool sum
        got = S.convolve(a, b, method=method)
        np.testing.assert_array_equal(got, ss.convolve(a, b, method="direct"))
        np.testing.assert_array_equal(got, np.convolve(a.astype(int), b.astype(int)) != 0)
        assert got.dtype == np.bool_
    big = np.array([2 ** 40, 3, 2 ** 41 + 1], np.int64)
    np.testing.assert_array_equal(S.convolve(big, big, method="fft"),
                                  np.convolve(big, big))      # exact, as the direct sum
    assert S.fftconvolve(np.arange(3), np.arange(2)).dtype == np.float64


def test_zero_d_and_empty():
    assert S.convolve(np.array(2.0), np.array(3.0)) == 6.0
    assert S.correlate(np.array(2.0 + 1j), np.array(1j)) == ss.correlate(2.0 + 1j, 1j)
    assert S.fftconvolve(np.zeros(0), np.ones(2)).shape == (0,)
    for fn in (S.convolve, S.correlate):
        with pytest.raises(ValueError, match=r"in1 and in2 must not be empty, got shapes "
                                             r"\(0, 2\) and \(2, 2\)"):
            fn(np.zeros((0, 2)), np.ones((2, 2)))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fftconvolve_axes(mode):
    cases = [((3, 5), (1, 4), None), ((3, 5), (1, 4), -1), ((3, 5), (3, 4), 1),
             ((4, 6, 2), (4, 3, 2), [1]), ((2, 7), (2, 3), (0, 1)), ((6, 5), (3, 2), None)]
    for (s1, s2, axes), kinds in itertools.product(cases, [("f", "f"), ("c", "f"),
                                                           ("i", "i"), ("f32", "f32")]):
        a, b = _arr(s1, kinds[0]), _arr(s2, kinds[1])
        try:
            want = ss.fftconvolve(a, b, mode=mode, axes=axes)
        except ValueError:
            with pytest.raises(ValueError, match="fftconvolve"):
                S.fftconvolve(a, b, mode=mode, axes=axes)
            continue
        _close(S.fftconvolve(a, b, mode=mode, axes=axes), want, a, b)


@pytest.mark.parametrize("fn", ["convolve2d", "correlate2d"])
@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_2d_boundaries(fn, boundary):
    shapes = [((4, 5), (2, 3)), ((2, 3), (4, 5)), ((3, 3), (3, 3)), ((2, 2), (5, 4)),
              ((3, 7), (2, 2))]
    for (s1, s2), mode, fill, kinds in itertools.product(
            shapes, ["full", "same", "valid"], [0, 1.5], [("f", "f"), ("c", "c"), ("i", "f"),
                                                          ("i", "i")]):
        if kinds == ("i", "i") and fill:
            continue
        a, b = _arr(s1, kinds[0]), _arr(s2, kinds[1])
        want = getattr(ss, fn)(a, b, mode=mode, boundary=boundary, fillvalue=fill)
        got = getattr(S, fn)(a, b, mode=mode, boundary=boundary, fillvalue=fill)
        pad = np.full(np.add(s1, 2 * np.subtract(s2, 1)), max(np.abs(a).max(), fill))
        _close(got, want, pad if boundary == "fill" else np.tile(a, (3, 3)), b)
    a, b = _arr((4, 5), "f"), _arr((3, 2), "f")
    got = fc.jit(lambda a, b: getattr(S, fn)(a, b, "same", boundary, 0.5))(a, b)
    _close(got, getattr(ss, fn)(a, b, "same", boundary, 0.5), np.tile(a, (3, 3)) + 0.5, b)


@pytest.mark.parametrize("fn,kw", [
    ("convolve", {"mode": "same", "method": "direct"}),
    ("convolve", {"mode": "full", "method": "fft"}),
    ("correlate", {"mode": "valid", "method": "direct"}),
    ("correlate", {"mode": "same", "method": "fft"}),
    ("fftconvolve", {"mode": "valid"}),
])
def test_grads(fn, kw):
    a, b = _arr((5, 4), "f"), _arr((2, 3), "f")
    check_grads(lambda a, b: getattr(S, fn)(a, b, **kw), (a, b), order=2)
    ca, cb = _arr((6,), "c"), _arr((3,), "c")
    check_grads(lambda a, b: getattr(S, fn)(a, b, **kw), (ca, cb), order=1)


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_grads_2d(boundary):
    a, b = _arr((4, 4), "f"), _arr((2, 3), "f")
    check_grads(lambda a, b, v: S.convolve2d(a, b, "same", boundary, v), (a, b, 0.7),
                order=2)
    check_grads(lambda a, b: S.correlate2d(a, b, "full", boundary), (a, b), order=1)


@pytest.mark.parametrize("fn,kw", [("convolve", {"mode": "same"}),
                                   ("correlate", {"mode": "full", "method": "fft"}),
                                   ("fftconvolve", {"mode": "valid"}),
                                   ("convolve2d", {"boundary": "symm"})])
def test_vmap_matches_loop(fn, kw):
    xs, ws = _arr((3, 6, 5), "f"), _arr((3, 2, 3), "f")
    f = getattr(S, fn)
    got = fc.vmap(lambda x, w: f(x, w, **kw))(xs, ws)
    want = np.stack([f(x, w, **kw) for x, w in zip(xs, ws)])
    np.testing.assert_allclose(got, want, rtol=0, atol=_bound(xs[0], ws[0], np.float64))
    got = fc.vmap(lambda x: f(x, ws[0], **kw))(xs)
    np.testing.assert_allclose(got, np.stack([f(x, ws[0], **kw) for x in xs]), rtol=0,
                               atol=_bound(xs[0], ws[0], np.float64))


def test_errors_name_the_call_and_shapes():
    with pytest.raises(ValueError, match=r"convolve: in1 and in2 should have the same "
                                         r"dimensionality, got shapes \(3,\) and \(2, 2\)"):
        S.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"correlate: for 'valid' mode.*\(3, 5\) and \(4, 2\)"):
        S.correlate(np.ones((3, 5)), np.ones((4, 2)), mode="valid")
    with pytest.raises(ValueError, match="convolve: acceptable mode flags"):
        S.convolve(np.ones(3), np.ones(2), mode="middle")
    with pytest.raises(ValueError, match="correlate: acceptable method flags"):
        S.correlate(np.ones(3), np.ones(2), method="fast")
    with pytest.raises(ValueError, match=r"convolve2d: inputs must both be 2-D arrays, got "
                                         r"shapes \(3,\)"):
        S.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="correlate2d: acceptable boundary flags"):
        S.correlate2d(np.ones((3, 3)), np.ones((2, 2)), boundary="reflect")
    with pytest.raises(ValueError, match=r"fftconvolve: in1 \(3, 5\) and in2 \(2, 4\) should "
                                         r"have the same size or size 1 along axis 0"):
        S.fftconvolve(np.ones((3, 5)), np.ones((2, 4)), axes=1)
    with pytest.raises(ValueError, match="fftconvolve: axes"):
        S.fftconvolve(np.ones((3, 5)), np.ones((2, 4)), axes=2)


def test_choose_conv_method():
    assert S.choose_conv_method(np.ones(10), np.ones(3)) == "direct"
    assert S.choose_conv_method(np.ones(1000), np.ones(1000)) == "fft"
    assert S.choose_conv_method(np.ones(1000, int), np.ones(1000, int)) == "direct"
    big = _arr((1000,), "f"), _arr((600,), "f")
    _close(S.convolve(*big), ss.convolve(*big), *big)
