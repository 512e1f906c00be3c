"""The error messages of tracing and jit: they name the problem, the user's line and a fix."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import TracerError


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file that ends with ``# <marker>``."""
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# <{marker}>"):
                return f"{__file__}:{i}"
    raise AssertionError(f"marker {marker} not found")


# --- concretization -------------------------------------------------------------------

def branchy(x):
    if x.sum() > 0:  # <if-on-data>
        return x
    return -x


def test_python_if_on_traced_data():
    with pytest.raises(TracerError) as info:
        fc.jit(branchy)(np.ones(3))
    msg = str(info.value)
    assert "traced" in msg
    assert line_of("if-on-data") in msg
    assert "fnp.where" in msg and "fc.cond" in msg
    assert isinstance(info.value, TypeError)


def test_while_and_assert_on_traced_data():
    def loop(x):
        while x.max() > 1:  # <while-on-data>
            x = x / 2
        return x

    with pytest.raises(TracerError, match="traced") as info:
        fc.make_graph(loop)(np.ones(3))
    assert line_of("while-on-data") in str(info.value)


def to_numpy(x):
    return np.asarray(x) * 2  # <asarray>


def test_np_asarray_of_a_tracer():
    with pytest.raises(TracerError) as info:
        fc.jit(to_numpy)(np.ones(3))
    msg = str(info.value)
    assert "traced" in msg and "np.asarray" in msg
    assert line_of("asarray") in msg
    assert "fnp" in msg


@pytest.mark.parametrize("convert", [float, int, lambda t: t.item(), lambda t: t.tolist()],
                         ids=["float", "int", "item", "tolist"])
def test_other_concretizations(convert):
    with pytest.raises(TracerError, match="traced"):
        fc.jit(lambda x: convert(x.sum()))(np.ones(3))


# --- shape errors at trace time -------------------------------------------------------------

def bad_matmul(a, b):
    return a @ b  # <matmul>


def test_matmul_shape_mismatch_at_trace_time():
    with pytest.raises(ValueError) as info:
        fc.make_graph(bad_matmul)(np.ones((2, 3)), np.ones((4, 5)))   # traces, runs nothing
    msg = str(info.value)
    assert "matmul" in msg
    assert "(2, 3)" in msg and "(4, 5)" in msg
    assert line_of("matmul") in msg


def test_matmul_shape_mismatch_under_jit():
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(4, 5\)"):
        fc.jit(bad_matmul)(np.ones((2, 3)), np.ones((4, 5)))


def test_broadcast_mismatch_names_shapes():
    def add(a, b):
        return a + b  # <add>

    with pytest.raises(ValueError) as info:
        fc.make_graph(add)(np.ones((2, 3)), np.ones(4))
    msg = str(info.value)
    assert "(2, 3)" in msg and "(4,)" in msg


# --- unsupported NumPy functions ---------------------------------------------------------------

@pytest.mark.parametrize("fn,name", [(np.histogramdd, "histogramdd"), (np.poly, "poly")])
def test_unsupported_numpy_function(fn, name):
    with pytest.raises(NotImplementedError) as info:
        fc.jit(lambda x: fn(x))(np.ones((3, 3)))
    assert f"numpy.{name} is not supported on traced arrays" in str(info.value)


def test_unsupported_ufunc_method():
    with pytest.raises(NotImplementedError, match="outer"):
        fc.jit(lambda x: np.add.outer(x, x))(np.ones(3))


# --- escaped tracers -----------------------------------------------------------------------

def test_escaped_tracer_used_after_the_call():
    leaked = []

    def keep(x):
        y = x * 2  # <leak-created>
        leaked.append(y)
        return y

    fc.jit(keep)(np.ones(3))
    with pytest.raises(TracerError) as info:
        leaked[0] + 1  # <leak-used>
    msg = str(info.value)
    assert line_of("leak-created") in msg and line_of("leak-used") in msg
    assert "escaped" in msg


def test_escaped_tracer_used_in_another_trace():
    leaked = []
    fc.jit(lambda x: leaked.append(x * 3) or x)(np.ones(2))
    with pytest.raises(TracerError, match="escaped"):
        fc.jit(lambda x: x + leaked[0])(np.ones(2))


# --- failures leave the caller's arrays alone ---------------------------------------------------

def mutate_then_fail_at_trace(x):
    x[0] = 5.0
    x += 1
    return x @ np.ones((4, 4))


def mutate_then_fail_at_run(x):
    x[0] = 7
    x += 1
    return x ** np.array([-1, -1, -1])     # integers to negative powers: ValueError when run


@pytest.mark.parametrize("fn", [mutate_then_fail_at_trace, mutate_then_fail_at_run])
@pytest.mark.parametrize("transform", ["jit", "make_graph"])
def test_failing_call_leaves_arguments_unmodified(fn, transform):
    a = np.arange(3) if fn is mutate_then_fail_at_run else np.ones(3)
    before = a.copy()
    wrapped = fc.jit(fn) if transform == "jit" else fc.make_graph(fn)
    try:
        wrapped(a)
    except (ValueError, NotImplementedError):
        pass
    else:
        assert transform == "make_graph" and fn is mutate_then_fail_at_run
    np.testing.assert_array_equal(a, before)


def test_failing_call_with_pytree_arguments_leaves_them_unmodified():
    params = {"w": np.ones((2, 2)), "b": [np.zeros(2)]}

    def f(p):
        p["w"][0, 0] = 9.0
        p["b"][0] += 3.0
        return p["w"] @ np.ones(5)

    with pytest.raises(ValueError):
        fc.jit(f)(params)
    np.testing.assert_array_equal(params["w"], np.ones((2, 2)))
    np.testing.assert_array_equal(params["b"][0], np.zeros(2))


# --- jit arguments and caching -----------------------------------------------------------------

def test_unhashable_static_argument():
    f = fc.jit(lambda x, cfg: x * len(cfg), static_argnums=1)
    with pytest.raises(TypeError) as info:
        f(np.ones(3), [1, 2])
    msg = str(info.value)
    assert "static" in msg and "hashable" in msg and "list" in msg


def test_static_argnums_out_of_range():
    with pytest.raises(ValueError, match="static_argnums"):
        fc.jit(lambda x: x, static_argnums=3)(np.ones(2))


def test_non_array_argument_is_a_clear_error():
    with pytest.raises(TypeError, match=r"str.*static"):
        fc.jit(lambda x, s: x)(np.ones(2), "tanh")


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self, x, y, n):
        self.calls += 1
        return fnp.sum(x) * n + y


def test_jit_retraces_once_per_signature():
    body = Counter()
    f = fc.jit(body, static_argnums=2)
    x32 = np.ones(3, np.float32)
    f(x32, 1.0, 2)
    f(x32 + 1, 5.0, 2)                       # same signature: cached (scalar values differ)
    assert body.calls == 1
    f(np.ones(4, np.float32), 1.0, 2)        # shape
    assert body.calls == 2
    f(np.ones(4, np.float64), 1.0, 2)        # dtype
    assert body.calls == 3
    f(np.ones(4, np.float64), 1.0, 3)        # static value
    assert body.calls == 4
    f(np.ones(4, np.float64), np.float32(1), 3)   # weak Python float -> strong f32
    assert body.calls == 5
    f(np.ones(4, np.float64), 1.0, 3)        # back to a seen signature
    f(np.ones(4, np.float64), 1.0, 2)
    assert body.calls == 5


def test_jit_retraces_when_the_structure_changes():
    calls = []

    @fc.jit
    def total(tree):
        calls.append(1)
        return sum(fnp.sum(v) for v in fc.tree_leaves(tree))

    total({"a": np.ones(2), "b": np.ones(2)})
    total({"a": np.zeros(2), "b": np.ones(2)})
    assert len(calls) == 1
    total({"a": np.ones(2), "c": np.ones(2)})
    total([np.ones(2), np.ones(2)])
    total((np.ones(2), np.ones(2)))
    assert len(calls) == 4


def _retrace_messages(caplog):
    return [r.getMessage() for r in caplog.records if "tracing again" in r.getMessage()]


def test_retrace_log_names_the_changed_argument(log_retraces, caplog):
    f = fc.jit(lambda x, y, n: x.sum() * n + y, static_argnums=2)
    with caplog.at_level(logging.WARNING, logger="functorch_core.jit"):
        f(np.ones(3, np.float32), np.ones(3, np.float32), 1)
        f(np.ones(3, np.float32), np.ones(3, np.float32), 1)
        assert _retrace_messages(caplog) == []
        f(np.ones(3, np.float32), np.ones(5, np.float32), 1)
        f(np.ones(3, np.float32), np.ones(5, np.float64), 1)
        f(np.ones(3, np.float32), np.ones(5, np.float64), 2)
    first, second, third = _retrace_messages(caplog)
    assert "argument y changed" in first and "f32[3]" in first and "f32[5]" in first
    assert "argument y changed" in second and "f64[5]" in second
    assert "static argument n changed from 1 to 2" in third


def test_retrace_log_names_a_structure_change(log_retraces, caplog):
    f = fc.jit(lambda t: fc.tree_leaves(t)[0] * 2)
    with caplog.at_level(logging.WARNING, logger="functorch_core.jit"):
        f({"a": np.ones(2)})
        f({"b": np.ones(2)})
    (msg,) = _retrace_messages(caplog)
    assert "structure" in msg and "'a'" in msg and "'b'" in msg


def test_no_retrace_log_when_disabled(caplog):
    assert not fc.config.log_retraces
    f = fc.jit(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger="functorch_core.jit"):
        f(np.ones(2))
        f(np.ones(3))
    assert _retrace_messages(caplog) == []


def test_errors_name_a_callable_object_by_its_class_not_its_repr():
    import functools

    from functorch_core import nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    with pytest.raises(ValueError) as info:
        fc.grad(model)(np.ones((2, 3), np.float32))
    assert str(info.value).startswith("grad(Sequential): the function must return a scalar")
    assert "Linear(" not in str(info.value)
    with pytest.raises(ValueError, match=r"^grad\(partial\(add\)\)"):
        fc.grad(functools.partial(np.add, np.ones(2)))(np.ones(2))
