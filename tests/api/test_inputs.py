"""Input handling at the boundary of jit and the transforms: byte order, Python ints
outside int64, masked arrays, shapes too large."""

import numpy as np
import pytest

import functorch_core.numpy as fnp
from functorch_core import grad, jit, jvp, vjp, vmap

BACKENDS = ["cpu", "interpreter"]


# --- big-endian arrays: converted to native order where they enter -----------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_big_endian_arrays_run_as_native(backend):
    x = np.linspace(-1, 1, 5).astype(">f8")
    y = jit(lambda a, b: np.tanh(a) * b, backend=backend)(x, x)
    np.testing.assert_allclose(y, np.tanh(x) * x)
    assert y.dtype == np.float64 and y.dtype.isnative
    y = jit(lambda a: a, backend=backend)(x.astype(">i4"))     # returned as is: still native
    assert y.dtype == np.int32 and y.dtype.isnative
    np.testing.assert_array_equal(y, x.astype(">i4"))


def test_big_endian_arrays_through_the_eager_transforms():
    x = np.linspace(-1, 1, 4).astype(">f4")
    g = grad(lambda a: np.sum(a * a))(x)
    assert g.dtype == np.float32 and g.dtype.isnative
    np.testing.assert_allclose(g, 2 * x)
    out = vmap(lambda a: a * 2)(x)
    assert out.dtype.isnative and out.dtype == np.float32
    out = vmap(lambda a: a)(x)
    assert out.dtype.isnative
    primal, tangent = jvp(lambda a: a * a, (x,), (np.ones(4, ">f4"),))
    assert primal.dtype.isnative and tangent.dtype.isnative
    _, back = vjp(lambda a: a * 3, x)
    (ct,) = back(np.ones(4, ">f4"))
    assert ct.dtype.isnative
    np.testing.assert_allclose(ct, 3)


def test_big_endian_argument_written_in_place():
    x = np.arange(4.0).astype(">f8")

    def f(a):
        a += 1
        return a * 2
    jit(f)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0, 4.0])
    assert x.dtype == np.dtype(">f8")


def test_big_endian_call_does_not_enter_the_fast_path():
    f = jit(lambda a: a + 1)
    native = np.arange(3.0)
    f(native)
    f(native)
    big = native.astype(">f8")
    for _ in range(3):
        np.testing.assert_array_equal(f(big), native + 1)


# --- Python ints outside int64 ------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_python_int_outside_int64_is_named(backend):
    f = jit(lambda x: x + 1, backend=backend)
    with pytest.raises(OverflowError, match=r"argument x of jit\(.*lambda.*\).*-2\*\*63"):
        f(2 ** 63)
    with pytest.raises(OverflowError, match=r"argument x of jit"):
        f(-(2 ** 63) - 1)
    assert f(2 ** 63 - 2) == 2 ** 63 - 1          # the edge of the range still runs


def test_python_int_outside_int64_named_by_path():
    def loss(params, batch):
        return params["w"] * batch[1][0]
    with pytest.raises(OverflowError, match=r"argument batch\[1\]\[0\] of jit\(.*loss\)"):
        jit(loss)({"w": 1.0}, (0, [2 ** 70]))
    with pytest.raises(OverflowError, match=r"argument params\['w'\] of grad\(.*loss\)"):
        grad(loss)({"w": 2 ** 64}, (0, [1.0]))
    with pytest.raises(OverflowError, match=r"argument scale of jit"):
        jit(lambda x, scale=1: x * scale)(1.0, scale=2 ** 64)
    with pytest.raises(OverflowError, match=r"args\[1\] of jit"):
        jit(lambda *a: a[0] * a[1])(1.0, 2 ** 64)
    with pytest.raises(OverflowError, match="outside int64"):
        vmap(lambda x, y: x + y, in_axes=(0, None))(np.ones(3), 2 ** 64)


# --- masked arrays --------------------------------------------------------------------

def test_masked_array_is_refused_by_name():
    m = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    with pytest.raises(TypeError, match=r"argument x of jit.*MaskedArray.*mask"):
        jit(lambda x: x * 2)(m)
    with pytest.raises(TypeError, match=r"argument params\['w'\] of grad.*MaskedArray"):
        grad(lambda params: np.sum(params["w"]))({"w": m})
    with pytest.raises(TypeError, match="MaskedArray"):
        vmap(lambda x: x * 2)(m)


# --- shapes too large: caught at trace time ----------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_too_large_shape_is_an_error_naming_the_call_and_line(backend):
    def f(x):
        return fnp.zeros((2 ** 40, 2 ** 40))
    with pytest.raises(ValueError, match=r"shape \(1099511627776, 1099511627776\).*too large"
                                         r".*test_inputs.py:\d+ while tracing jit\(.*f\)"):
        jit(f, backend=backend)(1.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduce", [np.sum, np.max])
def test_size_overflowing_int64_is_not_a_silent_zero(backend, reduce):
    f = jit(lambda x: reduce(np.broadcast_to(x, (2 ** 32, 2 ** 32))), backend=backend)
    with pytest.raises(ValueError, match=r"\(4294967296, 4294967296\).*too large"):
        f(1.0)


def test_large_but_valid_broadcast_still_traces():
    # 2**40 virtual elements of a broadcast are fine: only the graph is built
    from functorch_core import make_graph
    g = make_graph(lambda x: np.broadcast_to(x, (2 ** 20, 2 ** 20)))(1.0)
    assert g.outputs[0].aval.shape == (2 ** 20, 2 ** 20)
