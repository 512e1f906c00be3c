"""jit and grad arguments: argnums validation, static_argnames, pickling, retrace log paths."""

import logging
import pickle

import _pickle_targets as targets
import numpy as np
import pytest

from functorch_core import grad, jacfwd, jacrev, jit, value_and_grad

# --- argnums ----------------------------------------------------------------------


@pytest.mark.parametrize("transform", [grad, value_and_grad, jacrev, jacfwd])
def test_duplicate_argnums_is_a_clear_error(transform):
    f = transform(lambda x, y: x * y, argnums=(0, 0))
    with pytest.raises(ValueError, match=r"argnums=\(0, 0\) names positional argument 0 twice"):
        f(1.0, 2.0)
    with pytest.raises(ValueError, match="twice"):
        transform(lambda x, y: x * y, argnums=(1, -1))(1.0, 2.0)


@pytest.mark.parametrize("bad", [1.0, "0", None, (0, 1.5), True])
def test_non_int_argnums_fails_when_the_transform_is_made(bad):
    with pytest.raises(TypeError, match=r"grad\(.*\): argnums must be an int or a tuple of "
                                        r"ints, got"):
        grad(lambda x, y: x * y, argnums=bad)
    with pytest.raises(TypeError, match="static_argnums must be an int or a tuple of ints"):
        jit(lambda x, y: x * y, static_argnums=bad)


def test_numpy_int_argnums_still_accepted():
    assert grad(lambda x, y: x * y, argnums=np.int64(1))(2.0, 3.0) == 2.0


# --- static_argnames -------------------------------------------------------------------

def test_static_argnames_by_keyword_and_by_position():
    traces = []

    def f(x, n, *, mode="mul"):
        traces.append((n, mode))
        return x * n if mode == "mul" else x - n
    g = jit(f, static_argnames=("n", "mode"))
    x = np.arange(3.0)
    np.testing.assert_array_equal(g(x, n=3), x * 3)
    np.testing.assert_array_equal(g(x, 3), x * 3)             # same entry: n is keyed by name
    np.testing.assert_array_equal(g(x, n=3, mode="sub"), x - 3)
    np.testing.assert_array_equal(g(x, n=4), x * 4)
    assert traces == [(3, "mul"), (3, "sub"), (4, "mul")]
    for t in traces:   # n was a Python value while tracing, not an array
        assert type(t[0]) is int


def test_static_argnums_static_when_passed_by_name():
    g = jit(lambda x, shape: np.reshape(x, shape), static_argnums=1)
    np.testing.assert_array_equal(g(np.arange(6.0), shape=(2, 3)), np.arange(6.0).reshape(2, 3))


def test_static_argnames_unhashable_and_bad_names():
    g = jit(lambda x, shape: np.reshape(x, shape), static_argnames="shape")
    with pytest.raises(TypeError, match="static argument shape is a list"):
        g(np.arange(6.0), shape=[2, 3])
    with pytest.raises(TypeError, match="static_argnames must be a str or a tuple of str"):
        jit(lambda x: x, static_argnames=(1,))


def test_static_argnames_as_decorator_factory():
    np.testing.assert_allclose(targets.powered(np.arange(3.0), n=2), np.arange(3.0) ** 2)


# --- pickling ----------------------------------------------------------------------------

def test_pickle_a_jitted_module_function():
    f = jit(targets.square)
    f(np.ones(2))                                   # compiled code is not pickled
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(np.arange(3.0)), np.arange(3.0) ** 2)
    assert isinstance(g, type(f)) and g.func is targets.square


def test_pickle_a_decorated_function_by_reference():
    targets.decorated(np.ones(2))
    assert pickle.loads(pickle.dumps(targets.decorated)) is targets.decorated
    assert pickle.loads(pickle.dumps(targets.powered)) is targets.powered


def test_pickle_keeps_static_arguments():
    f = jit(targets.square, static_argnums=0)
    g = pickle.loads(pickle.dumps(f))
    assert g.static_argnums == (0,) and g.static_argnames == ("x",)
    assert g(3) == 9


def test_pickle_a_jitted_lambda_names_the_lambda():
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(jit(lambda x: x))


# --- retrace log: arguments named by path ------------------------------------------------

def test_retrace_log_names_arguments_by_path(log_retraces, caplog):
    def loss(params, batch):
        return np.sum(params["w1"] * batch[1][0])
    f = jit(loss)
    with caplog.at_level(logging.WARNING, logger="functorch_core.jit"):
        f({"w1": np.ones(2)}, (0, [np.ones(2)]))
        f({"w1": np.ones(3)}, (0, [np.ones(3)]))
        f({"w1": np.ones(3)}, (0, [np.ones(3, np.float32)]))
        jit(lambda *a: a[0] * a[1])(1.0, np.ones(2))
        g = jit(lambda *a: a[0] * a[1])
        g(1.0, np.ones(2))
        g(1.0, np.ones(3))
    msgs = [r.getMessage() for r in caplog.records if "tracing again" in r.getMessage()]
    assert "argument params['w1'] changed from f64[2] to f64[3]" in msgs[0]
    assert "argument batch[1][0] changed from f64[3] to f32[3]" in msgs[1]
    assert "argument args[1] changed from f64[2] to f64[3]" in msgs[2]
