"""NEP 50 weak types of Python scalar arguments under jit and vmap, against NumPy."""

import operator

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from functorch_core import jit, make_graph, vmap

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
       "truediv": operator.truediv, "pow": operator.pow}
SCALARS = {"int": 3, "float": 0.5, "bool": True}
PARAMS = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "c64": np.complex64}


@given(op=st.sampled_from(sorted(OPS)), a=st.sampled_from(sorted(SCALARS)),
       b=st.sampled_from(sorted(SCALARS)), param=st.sampled_from(sorted(PARAMS)),
       transform=st.sampled_from(["jit", "vmap"]))
def test_python_scalars_combined_stay_weak(op, a, b, param, transform):
    fn, x, y = OPS[op], SCALARS[a], SCALARS[b]
    if a == b == "bool":
        assume(False)  # True + True is 2 in Python but True for a traced bool, as in NumPy/JAX
    w = np.ones(3, PARAMS[param])

    def f(w, x, y):
        return w * fn(x, y)

    want = f(w, x, y)
    got = jit(f)(w, x, y) if transform == "jit" else vmap(f, in_axes=(0, None, None))(w, x, y)
    assert got.dtype == want.dtype, (op, a, b, param, transform)
    np.testing.assert_allclose(got, want, rtol=1e-3)


def test_step_schedule_keeps_float32_params():
    w = np.ones(4, np.float32)
    for f in (lambda w, step: w / (0.5 * step), lambda w, step: w * 0.9 ** step,
              lambda w, step: w * step ** 0.5):
        assert jit(f)(w, 3).dtype == np.float32
        assert vmap(f, in_axes=(0, None))(w, 3).dtype == np.float32
    graph = make_graph(lambda w, step: w / (0.5 * step))(w, 3)
    assert all(v.aval.dtype != np.float64 or v.aval.weak_type
               for e in graph.eqns for v in e.outputs)


def test_ufunc_of_one_weak_value_is_strong_as_in_numpy():
    # np.sin(3) is a strong np.float64 in NumPy: it upcasts float32
    w = np.ones(3, np.float32)
    assert jit(lambda w, s: w * np.sin(s))(w, 3).dtype == (w * np.sin(3)).dtype


@given(op=st.sampled_from(["add", "multiply", "true_divide", "power"]),
       a=st.sampled_from(sorted(SCALARS)), b=st.sampled_from(["int", "float"]))
def test_ufunc_of_two_python_scalars_is_strong_as_in_numpy(op, a, b):
    # np.multiply(0.5, 2) is a strong np.float64, where 0.5 * 2 is a weak Python float
    w = np.ones(3, np.float16)
    x, y = SCALARS[a], SCALARS[b]
    want = (w * getattr(np, op)(x, y)).dtype
    assert jit(lambda w, x, y: w * getattr(np, op)(x, y))(w, x, y).dtype == want
    assert jit(lambda w: w * getattr(np, op)(x, y))(w).dtype == want


COMPARISONS = {"lt": operator.lt, "le": operator.le, "eq": operator.eq, "ne": operator.ne,
               "ge": operator.ge, "gt": operator.gt}


@given(op=st.sampled_from(sorted(COMPARISONS)), a=st.integers(-5, 5), b=st.integers(-5, 5),
       backend=st.sampled_from(["cpu", "interpreter"]))
def test_python_ints_compared_under_jit(op, a, b, backend):
    # NumPy resolves int < int to its object loop; traced, both are int64 (was: "dtype
    # object is not supported")
    fn = COMPARISONS[op]
    got = jit(lambda x: fn(x, b), backend=backend)(a)
    assert got.dtype == np.bool_ and bool(got) == fn(a, b)
    assert bool(jit(lambda x: np.less(x, b), backend=backend)(a)) == (a < b)
