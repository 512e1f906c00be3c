"""NumPy parity of functorch_core.numpy's reductions, creation and linear algebra.

Every check runs the function four ways against NumPy: ``fnp`` eagerly, under
``fc.jit``, NumPy's own API on tracers (``np.sum(tracer)`` dispatching through
``__array_function__``), and ``check_graph`` on the traced graph. Values match
within a dtype-scaled tolerance, dtypes exactly; where NumPy raises, so must fnp.
"""

from __future__ import annotations

import math
import warnings

import functorch_core.ir as ir
import numpy as np
import pytest
from functorch_core.ir import dtypes
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import functorch_core as fc
import functorch_core.numpy as fnp

DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                     np.float16, np.float32, np.float64, np.complex64,
                                     np.complex128))
NO_BOOL = tuple(d for d in DTYPES if d.kind != "b")
REAL = tuple(d for d in DTYPES if d.kind != "c")
RTOL = {"e": 2e-2, "f": 2e-5, "d": 1e-11, "F": 2e-5, "D": 1e-11}
SPECIALS = (math.nan, math.inf, -math.inf, -0.0)


# --- strategies ------------------------------------------------------------------------

def elements(dt, lo=-20, hi=20, specials=False):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return st.integers(max(info.min, lo), min(info.max, hi))
    width = dt.itemsize * 8 // (2 if dt.kind == "c" else 1)
    f = st.floats(lo, hi, width=width)
    if specials:
        f = st.one_of(f, f, f, f, f, st.sampled_from(SPECIALS))
    return f if dt.kind == "f" else st.builds(complex, f, f)


def arrays(dt, shape, **kw):
    return hnp.arrays(np.dtype(dt), shape, elements=elements(dt, **kw))


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


@st.composite
def axis_arg(draw, ndim):
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes)


# --- the parity check --------------------------------------------------------------------

def _quiet(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _scale(xs):
    big = [np.abs(np.asarray(x, dtype=np.complex128)) for x in xs]
    big = [b[np.isfinite(b)] for b in big]
    return max([1.0] + [float(b.max()) for b in big if b.size])


def assert_match(got, want, tol=1.0, scale=1.0, scalar_kind=True):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_match(g, w, tol, scale, scalar_kind)
        return
    if scalar_kind:
        assert isinstance(got, np.ndarray) == isinstance(want, np.ndarray), (type(got), want)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    if w.dtype.kind in "fc":
        rtol = RTOL[w.dtype.char] * tol
        scale = max(scale, _scale([w]))
        # complex: part by part, so an infinite real part does not demand a bit-equal
        # imaginary part (NumPy compares whole complex infinities exactly)
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)) if w.dtype.kind == "c" else ((g, w),):
            np.testing.assert_allclose(gp, wp, rtol=rtol, atol=rtol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def check(np_fn, fnp_fn, *args, tol=1.0, scale=None, np_api=True):
    """``fnp_fn(*args)`` against ``np_fn(*args)``: eager, jit, NumPy API on tracers, graph."""
    scale = _scale(args) if scale is None else scale
    try:
        want = _quiet(np_fn, *args)
    except (ValueError, TypeError, OverflowError) as err:
        with pytest.raises((type(err), TypeError)) as info:
            _quiet(fnp_fn, *args)
        # the same error, or fnp refusing a dtype it does not support before NumPy's error
        assert isinstance(info.value, type(err)) or "supported" in str(info.value), info.value
        return err
    leaves = want if isinstance(want, tuple) else (want,)
    if any(np.asarray(w).dtype not in dtypes.SUPPORTED for w in leaves):
        with pytest.raises(TypeError, match="not a supported dtype"):
            _quiet(fnp_fn, *args)
        return None
    assert_match(_quiet(fnp_fn, *args), want, tol, scale)
    assert_match(_quiet(fc.jit(fnp_fn), *args), want, tol, scale, scalar_kind=False)
    graph = fc.make_graph(fnp_fn)(*args)
    ir.check_graph(graph)
    if np_api:
        assert_match(_quiet(fc.jit(np_fn), *args), want, tol, scale, scalar_kind=False)
    return graph


def prims(graph):
    return [e.prim.name for e in graph.eqns]


# --- reductions ---------------------------------------------------------------------------

ACC_DTYPES = (None, None, None, np.int64, np.float32, np.float64, np.complex128)


@pytest.mark.parametrize("name", ["sum", "prod"])
@given(data=st.data())
def test_sum_prod(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), specials=True, lo=-3, hi=3))
    axis = data.draw(axis_arg(x.ndim))
    keepdims = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(ACC_DTYPES))
    kw = {"axis": axis, "keepdims": keepdims, "dtype": dtype}
    if data.draw(st.booleans()):
        kw["initial"] = data.draw(st.integers(-2, 2))
    check(lambda x: getattr(np, name)(x, **kw), lambda x: getattr(fnp, name)(x, **kw), x,
          tol=4)
    check(lambda x: getattr(x, name)(**kw), lambda x: getattr(fnp, name)(x, **kw), x, tol=4)


def test_sum_of_uint8_is_refused_with_a_way_out():
    x = np.arange(5, dtype=np.uint8)
    with pytest.raises(TypeError, match=r"uint64.*dtype="):
        fnp.sum(x)
    with pytest.raises(TypeError, match="uint64"):
        fc.jit(lambda x: np.cumsum(x))(x)
    assert fnp.sum(x, dtype=np.int64) == 10
    assert fnp.sum(np.ones(3, np.int8)).dtype == np.int64
    assert fnp.cumprod(np.ones(3, np.bool_)).dtype == np.int64


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
@given(data=st.data())
def test_max_min(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), specials=True))
    kw = {"axis": data.draw(axis_arg(x.ndim)), "keepdims": data.draw(st.booleans())}
    if data.draw(st.booleans()):
        kw["initial"] = data.draw(st.integers(-2, 2))
    check(lambda x: getattr(np, name)(x, **kw), lambda x: getattr(fnp, name)(x, **kw), x)


def test_max_of_empty_raises_like_numpy():
    for shape, axis in [((0,), None), ((0, 3), 0), ((0, 0), 0)]:
        with pytest.raises(ValueError, match="zero-size array"):
            fnp.max(np.zeros(shape), axis=axis)
    assert fnp.max(np.zeros((0, 3)), axis=1).shape == (0,)
    np.testing.assert_array_equal(fnp.min(np.zeros((0, 2)), axis=0, initial=5), [5.0, 5.0])


@given(data=st.data())
def test_mean(data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), specials=True))
    kw = {"axis": data.draw(axis_arg(x.ndim)), "keepdims": data.draw(st.booleans()),
          "dtype": data.draw(st.sampled_from((None, None, np.float32, np.float64)))}
    check(lambda x: np.mean(x, **kw), lambda x: fnp.mean(x, **kw), x, tol=2)
    check(lambda x: x.mean(**kw), lambda x: fnp.mean(x, **kw), x, tol=2)


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data())
def test_var_std(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), lo=-8, hi=8))
    kw = {"axis": data.draw(axis_arg(x.ndim)), "keepdims": data.draw(st.booleans()),
          "ddof": data.draw(st.sampled_from((0, 0, 1, 2))),
          "dtype": data.draw(st.sampled_from((None, None, None, np.float64)))}
    # float16 accumulates squares of up to 16 in float16: compare on that scale.
    check(lambda x: getattr(np, name)(x, **kw), lambda x: getattr(fnp, name)(x, **kw), x,
          tol=8, scale=64 * x.size)


def test_var_of_complex_is_real_and_mean_of_float16_is_float16():
    z = np.array([1 + 2j, 3 - 1j, -2j], np.complex64)
    assert fnp.var(z).dtype == np.float32 and fnp.std(z).dtype == np.float32
    h = np.full(3000, 1.5, np.float16)            # a float16 sum would be 4500 -> 4500, ok,
    assert fnp.mean(h).dtype == np.float16 and fnp.mean(h) == np.float16(1.5)
    assert fnp.mean(np.arange(4)).dtype == np.float64
    assert fnp.var(np.ones(3), correction=1) == 0.0


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_argmax_argmin(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), specials=True, lo=-3, hi=3))
    axis = data.draw(st.none() | st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1))
    kw = {"axis": axis, "keepdims": data.draw(st.booleans())}
    check(lambda x: getattr(np, name)(x, **kw), lambda x: getattr(fnp, name)(x, **kw), x)


@pytest.mark.parametrize("name", ["all", "any"])
@given(data=st.data())
def test_all_any(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), specials=True, lo=-1, hi=1))
    kw = {"axis": data.draw(axis_arg(x.ndim)), "keepdims": data.draw(st.booleans())}
    check(lambda x: getattr(np, name)(x, **kw), lambda x: getattr(fnp, name)(x, **kw), x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@given(data=st.data())
def test_cumsum_cumprod(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(), lo=-3, hi=3))
    axis = data.draw(st.none() | st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1))
    kw = {"axis": axis, "dtype": data.draw(st.sampled_from(ACC_DTYPES))}
    check(lambda x: getattr(np, name)(x, **kw), lambda x: getattr(fnp, name)(x, **kw), x,
          tol=4)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.minimum,
                                   np.logical_and, np.logical_or])
@given(data=st.data())
def test_ufunc_reduce_on_tracers(ufunc, data):
    dt = data.draw(st.sampled_from(REAL))
    x = data.draw(arrays(dt, shapes(min_dims=1, min_side=1), lo=-3, hi=3))
    kw = data.draw(st.sampled_from([{}, {"axis": None}, {"axis": -1, "keepdims": True}]))
    check(lambda x: ufunc.reduce(x, **kw),
          lambda x: fnp.UFUNC_REDUCTIONS[ufunc](x, **kw), x, tol=4)


def test_where_is_not_supported():
    with pytest.raises(NotImplementedError, match="where"):
        fnp.sum(np.ones(3), where=np.array([True, False, True]))


# --- creation ------------------------------------------------------------------------------

SHAPE_ARGS = st.one_of(st.integers(0, 4), st.lists(st.integers(0, 3), max_size=3).map(tuple))
DTYPE_ARGS = st.sampled_from((None, *DTYPES))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@given(shape=SHAPE_ARGS, dt=DTYPE_ARGS)
def test_zeros_ones_empty(name, shape, dt):
    np_fn = np.zeros if name == "empty" else getattr(np, name)
    check(lambda: np_fn(shape, dt), lambda: getattr(fnp, name)(shape, dt), np_api=False)


def test_creation_records_small_equations_not_constants():
    graph = fc.make_graph(lambda x: x + fnp.zeros((500, 500), np.float32))(
        np.ones((500, 500), np.float32))
    assert "broadcast_in_dim" in prims(graph)
    assert all(a.value.size == 1 for e in graph.eqns for a in e.inputs
               if isinstance(a, ir.Lit))
    graph = fc.make_graph(lambda: (fnp.arange(1000), fnp.eye(300), fnp.linspace(0, 1, 999)))()
    assert {"iota", "convert"} <= set(prims(graph))
    assert all(a.value.size == 1 for e in graph.eqns for a in e.inputs
               if isinstance(a, ir.Lit))
    out = fnp.zeros(3)
    out[0] = 1.0                                  # eager results are writable ndarrays
    assert isinstance(fnp.arange(3), np.ndarray)


@given(shape=SHAPE_ARGS, dt=DTYPE_ARGS, fill=st.sampled_from([0, 1, -3, 2.5, True, 1 + 2j]))
def test_full(shape, dt, fill):
    check(lambda: np.full(shape, fill, dt), lambda: fnp.full(shape, fill, dt), np_api=False)


@given(data=st.data())
def test_full_with_traced_fill(data):
    dt = data.draw(st.sampled_from(DTYPES))
    v = data.draw(arrays(dt, shapes(max_dims=1, min_side=1, max_side=3)))
    shape = (2, *v.shape)
    out_dt = data.draw(DTYPE_ARGS)
    check(lambda v: np.full(shape, v, out_dt), lambda v: fnp.full(shape, v, out_dt), v,
          np_api=False)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@given(data=st.data())
def test_like(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes()))
    kw = {"dtype": data.draw(DTYPE_ARGS)}
    if data.draw(st.booleans()):
        kw["shape"] = data.draw(SHAPE_ARGS)
    args = (data.draw(st.sampled_from([7, -1.5, True])),) if name == "full_like" else ()
    np_name = "zeros_like" if name == "empty_like" else name
    check(lambda x: getattr(np, np_name)(x, *args, **kw),
          lambda x: getattr(fnp, name)(x, *args, **kw), x, np_api=name != "empty_like")


@given(data=st.data())
def test_arange(data):
    if data.draw(st.booleans()):
        ints = st.integers(-10, 10)
        args = tuple(data.draw(ints) for _ in range(data.draw(st.integers(1, 2))))
        if data.draw(st.booleans()):
            args = (*args, 0, data.draw(ints.filter(bool)))[:3] if len(args) == 1 else \
                (*args, data.draw(ints.filter(bool)))
    else:
        num = st.floats(-10, 10).map(lambda v: round(v, 2))
        step = st.floats(0.05, 3).map(lambda v: round(v, 2)) | st.floats(-3, -0.05)
        args = (data.draw(num), data.draw(num), data.draw(step))
    dt = data.draw(st.sampled_from((None, None, np.int32, np.float32, np.float64, np.int8)))
    if dt is not None and np.dtype(dt).kind in "iu" and any(isinstance(a, float) for a in args):
        dt = None                                   # NumPy's int arange of floats is odd
    check(lambda: np.arange(*args, dtype=dt), lambda: fnp.arange(*args, dtype=dt), tol=4,
          scale=30, np_api=False)


def test_arange_dtypes_and_lengths():
    assert fnp.arange(5).dtype == np.int64
    x = fc.jit(lambda: fnp.arange(0.0, 1.0, 0.1))()
    assert x.dtype == np.float64 and x.shape == np.arange(0.0, 1.0, 0.1).shape
    assert fc.jit(lambda: fnp.arange(np.float32(5)))().dtype == np.float64
    with pytest.raises(TypeError, match="concrete"):
        fc.jit(lambda n: fnp.arange(n))(np.int64(3))


@given(data=st.data())
def test_linspace(data):
    traced_arrays = data.draw(st.booleans())
    if traced_arrays:
        start = data.draw(arrays(np.float32, (2,)))
        stop = data.draw(arrays(np.float64, (3, 1)))
    else:
        start = data.draw(st.floats(-10, 10) | st.integers(-5, 5))
        stop = data.draw(st.floats(-10, 10) | st.integers(-5, 5))
    kw = {"num": data.draw(st.integers(0, 7)), "endpoint": data.draw(st.booleans()),
          "retstep": data.draw(st.booleans()),
          "dtype": data.draw(st.sampled_from((None, None, np.float32, np.int64))),
          "axis": data.draw(st.sampled_from((0, -1)))}
    if traced_arrays:
        check(lambda a, b: np.linspace(a, b, **kw), lambda a, b: fnp.linspace(a, b, **kw),
              start, stop, tol=4)
    else:
        check(lambda: np.linspace(start, stop, **kw), lambda: fnp.linspace(start, stop, **kw),
              tol=4, np_api=False)


@given(n=st.integers(0, 5), m=st.none() | st.integers(0, 5), k=st.integers(-5, 5),
       dt=st.sampled_from((float, *DTYPES)))
def test_eye_identity(n, m, k, dt):
    check(lambda: np.eye(n, m, k, dt), lambda: fnp.eye(n, m, k, dt), np_api=False)
    check(lambda: np.identity(n, dt), lambda: fnp.identity(n, dt), np_api=False)


@given(data=st.data())
def test_astype_copy(data):
    src, dst = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(src, shapes(), specials=dst.kind in "fc"))
    check(lambda x: np.astype(x, dst), lambda x: fnp.astype(x, dst), x)
    check(lambda x: x.astype(dst), lambda x: fnp.astype(x, dst), x)
    check(lambda x: np.copy(x), lambda x: fnp.copy(x), x)
    check(lambda x: x.copy(), lambda x: fnp.copy(x), x)
    casting = data.draw(st.sampled_from(["no", "safe", "same_kind"]))
    check(lambda x: x.astype(dst, casting=casting), lambda x: fnp.astype(x, dst, casting=casting),
          x)


def test_copy_is_a_new_value():
    graph = fc.make_graph(lambda x: (fnp.copy(x), x.copy(), fnp.array(x), x.astype(x.dtype)))(
        np.ones(3))
    assert all(o is not graph.inputs[0] for o in graph.outputs)
    graph = fc.make_graph(lambda x: (fnp.asarray(x), x.astype(x.dtype, copy=False)))(np.ones(3))
    assert all(o is graph.inputs[0] for o in graph.outputs)


@given(data=st.data())
def test_array_asarray_of_traced_lists(data):
    d1, d2 = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    shape = data.draw(shapes(max_dims=2))
    x, y = data.draw(arrays(d1, shape)), data.draw(arrays(d2, shape))
    dt = data.draw(st.sampled_from((None, None, np.float64, np.complex64)))
    check(lambda x, y: np.array([x, y, x], dtype=dt), lambda x, y: fnp.array([x, y, x], dt),
          x, y, np_api=False)
    check(lambda x, y: np.asarray([[x, y]], dtype=dt), lambda x, y: fnp.asarray([[x, y]], dt),
          x, y, np_api=False)
    check(lambda x: np.array(x, ndmin=3), lambda x: fnp.array(x, ndmin=3), x, np_api=False)


def test_array_of_tracers_and_scalars_uses_numpy_dtype_discovery():
    f = fc.jit(lambda x: fnp.array([x, 1.0]))
    assert f(np.float32(2)).dtype == np.float64           # as np.array([np.float32(2), 1.0])
    assert fc.jit(lambda x: fnp.array([x, 1]))(np.int8(2)).dtype == np.int64
    with pytest.raises(ValueError, match="inhomogeneous"):
        fc.jit(lambda x: fnp.array([x, x[0]]))(np.ones(2))


# --- linear algebra ---------------------------------------------------------------------------

def _batch_pair(draw):
    """Two batch shapes that broadcast together."""
    out = draw(st.lists(st.integers(1, 3), max_size=2))
    a, b = [], []
    for d in out:
        a.append(draw(st.sampled_from([d, 1])))
        b.append(draw(st.sampled_from([d, 1])))
    return tuple(a[draw(st.integers(0, len(a))):]), tuple(b[draw(st.integers(0, len(b))):])


def _linalg_scale(*xs):
    return _scale(xs) ** 2 * 8


@given(data=st.data())
def test_matmul(data):
    d1, d2 = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    n, k, m = (data.draw(st.integers(0, 4)) for _ in range(3))
    ba, bb = _batch_pair(data.draw)
    sa = (k,) if data.draw(st.booleans()) and not ba else (*ba, n, k)
    sb = (k,) if data.draw(st.booleans()) and not bb else (*bb, k, m)
    a, b = data.draw(arrays(d1, sa, lo=-4, hi=4)), data.draw(arrays(d2, sb, lo=-4, hi=4))
    s = _linalg_scale(a, b)
    check(np.matmul, fnp.matmul, a, b, tol=4, scale=s)
    check(lambda a, b: a @ b, fnp.matmul, a, b, tol=4, scale=s)


@given(data=st.data())
def test_dot_inner(data):
    d1, d2 = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    k = data.draw(st.integers(0, 3))
    sa = (*data.draw(shapes(max_dims=2, min_side=1, max_side=3)), k)
    sb = data.draw(shapes(max_dims=2, min_side=1, max_side=3))
    sb = (*sb[:-1], k, *sb[-1:]) if data.draw(st.booleans()) else (k,)
    if data.draw(st.integers(0, 5)) == 0:
        sa = ()                                                 # a scalar operand
    a, b = data.draw(arrays(d1, sa, lo=-4, hi=4)), data.draw(arrays(d2, sb, lo=-4, hi=4))
    s = _linalg_scale(a, b)
    check(np.dot, fnp.dot, a, b, tol=4, scale=s)
    check(lambda a, b: a.dot(b), fnp.dot, a, b, tol=4, scale=s)
    bi = np.swapaxes(b, -1, -2) if b.ndim >= 2 else b
    check(np.inner, fnp.inner, a, bi, tol=4, scale=s)


@given(data=st.data())
def test_vdot_outer(data):
    d1, d2 = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    a = data.draw(arrays(d1, shapes(max_side=3), lo=-4, hi=4))
    b = data.draw(arrays(d2, shapes(max_side=3), lo=-4, hi=4))
    s = _linalg_scale(a, b)
    check(np.outer, fnp.outer, a, b, tol=4, scale=s)
    b2 = data.draw(arrays(d2, (a.size,), lo=-4, hi=4)).reshape(data.draw(st.sampled_from(
        [(a.size,), (1, a.size)])))
    check(np.vdot, fnp.vdot, a, b2, tol=4, scale=s)


@given(data=st.data())
def test_tensordot(data):
    d1, d2 = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    shared = data.draw(st.lists(st.integers(1, 3), max_size=2))
    fa = data.draw(st.lists(st.integers(1, 3), max_size=2))
    fb = data.draw(st.lists(st.integers(1, 3), max_size=2))
    if data.draw(st.booleans()):
        a = data.draw(arrays(d1, (*fa, *shared), lo=-4, hi=4))
        b = data.draw(arrays(d2, (*shared, *fb), lo=-4, hi=4))
        axes = len(shared)
    else:
        perm = data.draw(st.permutations(range(len(fa) + len(shared))))
        sa = [*fa, *shared]
        a = data.draw(arrays(d1, tuple(sa[p] for p in perm), lo=-4, hi=4))
        b = data.draw(arrays(d2, (*fb, *shared), lo=-4, hi=4))
        axes = ([perm.index(len(fa) + i) - a.ndim for i in range(len(shared))],
                [len(fb) + i for i in range(len(shared))])
    check(lambda a, b: np.tensordot(a, b, axes), lambda a, b: fnp.tensordot(a, b, axes), a, b,
          tol=4, scale=_linalg_scale(a, b))


EINSUM_SPECS = [
    "ij,jk->ik", "ij,jk", "ij,kj->ik", "i,i", "i,i->i", "i,j->ij", "ii", "ii->i", "iij->ji",
    "ij->", "ij->ji", "bij,bjk->bik", "...ij,...jk->...ik", "...i,...i", "i...->...",
    "ij,jk,kl->il", "ijk,kj->i", "ab,bc,ca", "aB,Ba->B", "i...,j...->ij...", "", "->",
]


@given(data=st.data())
def test_einsum(data):
    spec = data.draw(st.sampled_from(EINSUM_SPECS))
    lhs = spec.split("->")[0]
    sizes = {c: data.draw(st.integers(1, 3)) for c in set(lhs) if c.isalpha()}
    ell = data.draw(st.lists(st.integers(1, 3), max_size=2))
    ops = []
    for term in lhs.split(","):
        pre, _, post = term.partition("...")
        mine = [data.draw(st.sampled_from([d, 1])) for d in ell[data.draw(
            st.integers(0, len(ell))):]] if "..." in term else []
        ops.append(tuple(sizes[c] for c in pre) + tuple(mine) + tuple(sizes[c] for c in post))
    dts = [data.draw(st.sampled_from(DTYPES)) for _ in ops]
    xs = [data.draw(arrays(d, s, lo=-3, hi=3)) for d, s in zip(dts, ops, strict=True)]
    scale = _scale(xs) ** max(len(xs), 1) * 30
    check(lambda *xs: np.einsum(spec, *xs), lambda *xs: fnp.einsum(spec, *xs), *xs, tol=4,
          scale=scale)


def test_einsum_forms():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(fnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    np.testing.assert_allclose(fnp.einsum("ij,jk->ik", a, b, optimize=True), a @ b)
    np.testing.assert_allclose(fnp.einsum("ij,ij->ij", np.ones((1, 3)), a), a)
    with pytest.raises(ValueError, match="einsum"):
        fnp.einsum("i,i", np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="ellipsis"):
        fnp.einsum("...ij->ij", np.ones((2, 2, 3)))


@given(data=st.data())
def test_diagonal_trace(data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(min_dims=2, max_dims=4), lo=-5, hi=5))
    offset = data.draw(st.integers(-4, 4))
    a1 = data.draw(st.integers(-x.ndim, x.ndim - 1))
    a2 = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda x: np.diagonal(x, offset, a1, a2), lambda x: fnp.diagonal(x, offset, a1, a2), x)
    check(lambda x: x.diagonal(offset, a1, a2), lambda x: fnp.diagonal(x, offset, a1, a2), x)
    dtype = data.draw(st.sampled_from((None, None, np.float64)))
    check(lambda x: np.trace(x, offset, a1, a2, dtype),
          lambda x: fnp.trace(x, offset, a1, a2, dtype), x, tol=4)


@given(data=st.data())
def test_diag(data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(min_dims=1, max_dims=2), lo=-5, hi=5))
    k = data.draw(st.integers(-4, 4))
    check(lambda x: np.diag(x, k), lambda x: fnp.diag(x, k), x)


@pytest.mark.parametrize("name", ["tril", "triu"])
@given(data=st.data())
def test_tril_triu(name, data):
    dt = data.draw(st.sampled_from(DTYPES))
    x = data.draw(arrays(dt, shapes(min_dims=1, max_dims=4), specials=True))
    k = data.draw(st.integers(-4, 4))
    check(lambda x: getattr(np, name)(x, k), lambda x: getattr(fnp, name)(x, k), x)


def test_shape_errors_name_the_function_shapes_and_line():
    a, b = np.ones((2, 3)), np.ones((4, 5))
    for fn, msg in [(fnp.matmul, r"matmul: shapes \(2, 3\) and \(4, 5\) are not aligned: "
                                 r"3 \(dim 1\) != 4 \(dim 0\)"),
                    (fnp.dot, r"dot: shapes \(2, 3\) and \(4, 5\) are not aligned"),
                    (fnp.inner, r"inner: shapes \(2, 3\) and \(4, 5\)"),
                    (fnp.tensordot, r"tensordot: shapes \(2, 3\) and \(4, 5\)")]:
        with pytest.raises(ValueError, match=msg + r".*test_fnp_reductions_creation_linalg"):
            fn(a, b)
        with pytest.raises(ValueError, match=msg + r".*test_fnp_reductions_creation_linalg"):
            fc.jit(fn)(a, b)
    with pytest.raises(ValueError, match=r"matmul: .*test_fnp_reductions_creation_linalg.py:\d+"):
        fc.make_graph(lambda a, b: a @ b)(a, b)
    with pytest.raises(ValueError, match="matmul: batch dimensions"):
        fnp.matmul(np.ones((2, 1, 3)), np.ones((3, 3, 1)))
    with pytest.raises(ValueError, match="vdot"):
        fnp.vdot(np.ones(3), np.ones(4))


def test_numpy_code_on_tracers_records_tanh_dot_general_reduce_sum():
    x, w = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    graph = fc.make_graph(lambda x, w: np.sum(np.tanh(x @ w)))(x, w)
    ir.check_graph(graph)
    assert prims(graph) == ["dot_general", "tanh", "reduce_sum"]
    assert graph.out_avals[0].dtype == np.float32
    got = fc.jit(lambda x, w: np.sum(np.tanh(np.matmul(x, w))))(x, w)
    np.testing.assert_allclose(got, np.sum(np.tanh(x @ w)), rtol=1e-6)
