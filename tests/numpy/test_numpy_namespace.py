"""NumPy main-namespace functions beyond the op table's generic crossings: NumPy's own
functions on tracers (``np.ndim``, ``np.result_type``, ``np.degrees`` ...), the contracts
NumPy specifies only in part (``partition``), the refusals (``real_if_close``,
``bincount`` without ``length=``), and derivatives the op table's smooth points cannot
reach (``interp``, ``quantile``, ``sinc`` at 0).
"""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.ir import TracerError

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.testing import check_grads


def test_numpy_type_queries_on_tracers_are_python_values():
    seen = {}

    def f(x, s):
        seen.update(ndim=np.ndim(x), shape=np.shape(x), size=np.size(x), size1=np.size(x, 1),
                    rt=np.result_type(x, s), rt32=np.result_type(x.astype(np.float32), s),
                    cplx=np.iscomplexobj(x), real=np.isrealobj(x * 1j))
        return x
    fc.jit(f)(np.zeros((2, 3)), 1.5)
    assert seen == {"ndim": 2, "shape": (2, 3), "size": 6, "size1": 3,
                    "rt": np.dtype(np.float64), "rt32": np.dtype(np.float32), "cplx": False,
                    "real": False}
    assert type(seen["ndim"]) is int and type(seen["size"]) is int


def test_degrees_radians_fabs_through_numpys_ufuncs():
    x = np.array([0.5, -2.0], np.float32)
    got = fc.jit(lambda t: (np.degrees(t), np.radians(t), np.fabs(t), np.sinc(t)))(x)
    want = (np.degrees(x), np.radians(x), np.fabs(x), np.sinc(x))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(fc.grad(lambda t: np.degrees(t))(1.0), 180 / np.pi)


@pytest.mark.parametrize("kth", [0, 2, -1, (1, 3)])
def test_partition_contract(kth):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, size=(3, 6)).astype(np.float64)
    x[0, 2] = np.nan
    for got in (fnp.partition(x, kth), fc.jit(lambda t: np.partition(t, kth))(x)):
        want = np.partition(x, kth)
        for k in np.atleast_1d(kth):
            np.testing.assert_array_equal(got[:, k], want[:, k])
            assert np.all(~(got[:, :k % 6] > got[:, k:k % 6 + 1]))
            assert np.all(~(got[:, k % 6:] < got[:, k:k % 6 + 1]))
        np.testing.assert_array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
    idx = fc.jit(lambda t: np.argpartition(t, kth))(x)
    np.testing.assert_array_equal(np.take_along_axis(x, idx, 1)[:, np.atleast_1d(kth)],
                                  np.partition(x, kth)[:, np.atleast_1d(kth)])
    with pytest.raises(ValueError, match="out of bounds"):
        fnp.partition(x, 6)


def test_real_if_close_refuses_traced_complex_and_passes_real():
    with pytest.raises(TracerError, match=r"real_if_close.*depends on the values"):
        fc.jit(lambda z: np.real_if_close(z))(np.array([1 + 0j]))
    np.testing.assert_array_equal(fc.jit(lambda x: np.real_if_close(x))(np.ones(2)), np.ones(2))
    assert fnp.real_if_close(np.array([2.0 + 1e-15j])).dtype == np.float64


def test_bincount_needs_a_static_length_under_trace():
    x = np.array([0, 1, 1, 4])
    with pytest.raises(TracerError, match="length="):
        fc.jit(lambda t: np.bincount(t))(x)
    np.testing.assert_array_equal(fc.jit(lambda t: fnp.bincount(t, length=6))(x),
                                  np.bincount(x, minlength=6))
    np.testing.assert_array_equal(fc.jit(lambda t: fnp.bincount(t, length=3))(x), [1, 2, 0])
    w = np.array([0.5, 1.0, 2.0, -1.0])
    np.testing.assert_allclose(fc.grad(lambda v: fnp.bincount(x, v, length=5)[1])(w),
                               [0, 1, 1, 0])
    np.testing.assert_array_equal(fnp.bincount(x), np.bincount(x))


def test_r_and_c_trace_and_match_numpy():
    x = np.arange(3.0)
    for make in (lambda m, t: m.r_[t, 1.0, t * 2], lambda m, t: m.c_[t, t],
                 lambda m, t: m.r_["0,2", t, t], lambda m, t: m.r_[t, 0:4, -1:1:5j],
                 lambda m, t: m.r_["-1,2,0", t, t]):
        want = make(np, x)
        got = fc.jit(lambda t, make=make: make(fnp, t))(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="not supported"):
        fnp.r_["r", x]


def test_allclose_is_a_python_bool_eagerly_and_traced_under_jit():
    assert fnp.allclose([1.0, 2.0], [1.0, 2.0 + 1e-9]) is True
    assert fnp.allclose(np.array([np.nan]), np.nan, equal_nan=True) is True
    assert bool(fc.jit(lambda a: np.allclose(a, a + 1.0))(np.ones(2))) is False


def test_derivatives_of_interp_quantile_sinc():
    xp, fp = np.array([-1.0, 0.0, 0.5, 2.0]), np.array([1.0, 3.0, -1.0, 2.0])
    x = np.array([-0.5, 0.2, 1.0, 1.7])
    check_grads(lambda t, f: fnp.interp(t, xp, f), (x, fp), order=2)
    np.testing.assert_allclose(fc.grad(lambda t: fnp.interp(t, xp, fp))(0.2), -8.0)
    a = np.array([[0.3, -1.2, 2.5, 0.9], [1.1, 0.4, -0.7, 3.0]])
    for method in ("linear", "midpoint", "lower"):
        check_grads(lambda v, method=method: fnp.quantile(v, [0.3, 0.8], axis=1,
                                                          method=method), (a,), order=2)
    check_grads(lambda v: fnp.percentile(v, 40.0), (a,), order=2)
    check_grads(lambda v: fnp.median(v, axis=0), (a,), order=2)
    # sinc at 0: sinc'(0) = 0, sinc''(0) = -pi**2 / 3, both modes
    assert fc.grad(fnp.sinc)(0.0) == 0.0
    np.testing.assert_allclose(fc.grad(fc.grad(fnp.sinc))(0.0), -np.pi**2 / 3, rtol=1e-12)
    np.testing.assert_allclose(fc.jacfwd(fc.jacfwd(fnp.sinc))(0.0), -np.pi**2 / 3, rtol=1e-12)
    check_grads(fnp.sinc, (np.array([-0.003, 0.001, 0.4, 1.5]),), order=2)


def test_cov_corrcoef_average_derivatives():
    rng = np.random.default_rng(1)
    m = rng.normal(size=(3, 5))
    check_grads(lambda v: fnp.cov(v), (m,), order=2)
    check_grads(lambda v: fnp.corrcoef(v), (m,), order=2)
    check_grads(lambda v, w: fnp.average(v, axis=1, weights=w),
                (m, np.abs(rng.normal(size=5)) + 0.5), order=2)
    with pytest.raises(ZeroDivisionError):
        fnp.average(m, axis=1, weights=np.zeros(5))


def test_errors_name_the_call_and_shapes():
    with pytest.raises(ValueError, match="fliplr: the input must be at least 2-d"):
        fnp.fliplr(np.ones(3))
    with pytest.raises(ValueError, match="cross: incompatible dimensions"):
        fnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="diff requires input that is at least one"):
        fnp.diff(np.float64(1.0))
    with pytest.raises(TypeError, match="select: invalid entry 0"):
        fnp.select([np.ones(2)], [np.ones(2)])
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        fnp.quantile(np.ones(3), 1.5)
