"""jit: outputs and pytrees, constants, weak scalars, static arguments, nesting, kwargs,
and fresh (never aliasing) outputs."""

from __future__ import annotations

import subprocess
import sys
from collections import namedtuple

import numpy as np
import paths
import pytest
from functorch_core.ir import primitives as P

import functorch_core as fc
import functorch_core.numpy as fnp

F32 = np.float32
Pair = namedtuple("Pair", ["first", "second"])


def test_multiple_outputs():
    f = fc.jit(lambda x, y: (x + y, x * y, x - y))
    x, y = np.arange(3.0), np.full(3, 2.0)
    out = f(x, y)
    assert isinstance(out, tuple) and len(out) == 3
    for got, want in zip(out, (x + y, x * y, x - y), strict=True):
        np.testing.assert_array_equal(got, want)


def test_pytree_outputs():
    @fc.jit
    def f(x):
        return {"sum": x.sum(), "parts": [x * 2, Pair(x[0], None)], "const": 3}

    x = np.arange(4, dtype=F32)
    out = f(x)
    assert set(out) == {"sum", "parts", "const"}
    assert out["sum"].dtype == F32 and out["sum"] == 6
    np.testing.assert_array_equal(out["parts"][0], x * 2)
    assert isinstance(out["parts"][1], Pair) and out["parts"][1].second is None
    assert out["parts"][1].first == 0
    assert int(out["const"]) == 3


def test_pytree_inputs():
    @fc.jit
    def f(params, batch):
        return np.tanh(batch["x"] @ params[0] + params[1])

    w, b = np.ones((3, 2)), np.zeros(2)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f((w, b), {"x": x}), np.tanh(x @ w + b))


def test_closed_over_constants():
    w = np.arange(6.0).reshape(2, 3)
    f = fc.jit(lambda x: x @ w + 1.0)
    x = np.ones((4, 2))
    np.testing.assert_allclose(f(x), x @ w + 1)
    np.testing.assert_allclose(f(x * 2), x * 2 @ w + 1)
    g = fc.make_graph(lambda x: x @ w)(x)
    assert len(g.inputs) == 1          # the constant is not an input


def test_python_scalars_are_weak_and_do_not_retrace():
    calls = []

    @fc.jit
    def scale(x, s):
        calls.append(1)
        return x * s

    x = np.ones(3, F32)
    r2 = scale(x, 2.0)
    assert r2.dtype == F32
    np.testing.assert_array_equal(r2, np.full(3, 2, F32))
    r3 = scale(x, 3.0)
    assert r3.dtype == F32
    np.testing.assert_array_equal(r3, np.full(3, 3, F32))
    assert len(calls) == 1
    assert scale(x, 3).dtype == F32 and len(calls) == 2            # int is another signature
    assert scale(np.ones(3, np.int8), 2).dtype == np.int8


def test_weak_scalar_alone_is_float64():
    out = fc.jit(lambda s: s * 2)(1.5)
    assert out.dtype == np.float64 and out == 3.0


def test_numpy_scalar_is_strong():
    out = fc.jit(lambda x, s: x * s)(np.ones(2, F32), np.float64(2))
    assert out.dtype == np.float64


@pytest.mark.parametrize("argnums", [1, (1,), -1])
def test_static_argnums(argnums):
    calls = []

    @fc.jit(static_argnums=argnums)
    def power(x, n):
        calls.append(n)
        out = x
        for _ in range(n - 1):      # a Python loop on a static value
            out = out * x
        return out

    x = np.arange(4.0)
    np.testing.assert_array_equal(power(x, 3), x ** 3)
    np.testing.assert_array_equal(power(x + 1, 3), (x + 1) ** 3)
    np.testing.assert_array_equal(power(x, 2), x ** 2)
    assert calls == [3, 2]


def test_static_argnums_with_a_string_option():
    f = fc.jit(lambda x, act: np.tanh(x) if act == "tanh" else np.maximum(x, 0),
               static_argnums=(1,))
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(f(x, "tanh"), np.tanh(x))
    np.testing.assert_allclose(f(x, "relu"), np.maximum(x, 0))


def test_jit_inside_jit():
    inner = fc.jit(lambda x: np.sin(x) * 2.0)
    outer = fc.jit(lambda x: inner(x) + inner(x + 1.0))
    x = np.linspace(0, 1, 4, dtype=F32)
    out = outer(x)
    assert out.dtype == F32
    np.testing.assert_allclose(out, np.sin(x) * 2 + np.sin(x + 1) * 2, rtol=1e-6)
    g = fc.make_graph(lambda x: inner(x) * 3.0)(x)
    assert [e.prim for e in g.eqns] == [P.call, P.mul]


def test_jit_of_a_jitted_function_and_a_closure_over_a_tracer():
    @fc.jit
    def outer(x):
        y = x * 2.0
        return fc.jit(lambda z: z + y)(x)     # the inner jit closes over an outer tracer

    x = np.arange(3.0)
    np.testing.assert_array_equal(outer(x), x + 2 * x)


def test_kwargs():
    @fc.jit
    def f(x, *, scale, shift=0.0):
        return x * scale + shift

    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, scale=np.full(3, 2.0)), x * 2)
    np.testing.assert_array_equal(f(x, scale=2.0, shift=np.ones(3)), x * 2 + 1)
    np.testing.assert_array_equal(f(x=x, scale=3.0), x * 3)


def test_no_arguments():
    out = fc.jit(lambda: fnp.asarray(2.0) + 1)()
    assert out == 3.0


@pytest.mark.parametrize("fn", [lambda x: x, lambda x: x[1:], lambda x: x.reshape(-1),
                                lambda x: x.T, lambda x: (x, x), lambda x: {"a": x}],
                         ids=["identity", "slice", "reshape", "T", "tuple", "dict"])
def test_outputs_never_alias_inputs(fn):
    a = np.arange(6.0).reshape(2, 3)
    before = a.copy()
    out = fc.jit(fn)(a)
    for leaf in fc.tree_leaves(out):
        assert not np.shares_memory(leaf, a)
        leaf[...] = -1.0
    np.testing.assert_array_equal(a, before)


def test_outputs_never_alias_closed_over_constants():
    c = np.arange(3.0)
    f = fc.jit(lambda x: (c, x + c))
    first, _ = f(np.ones(3))
    first[...] = 100.0
    np.testing.assert_array_equal(c, np.arange(3.0))
    again, _ = f(np.ones(3))
    np.testing.assert_array_equal(again, np.arange(3.0))


def test_outputs_never_alias_each_other_across_calls():
    f = fc.jit(lambda x: x * 2)
    a, b = f(np.ones(2)), f(np.ones(2))
    a[0] = 5.0
    assert b[0] == 2.0


def test_jit_preserves_the_function_name_and_doc():
    def documented(x):
        """Doc."""
        return x

    f = fc.jit(documented)
    assert f.__name__ == "documented" and f.__doc__ == "Doc."


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        fc.jit(lambda x: x, backend="nope")


def test_transform_outputs_never_alias_closed_over_constants():
    c = np.arange(3.0)
    out, _ = fc.vmap(lambda x: (c, x), out_dims=(None, 0))(np.ones((2, 3)))
    out[...] = 7.0
    np.testing.assert_array_equal(c, np.arange(3.0))


def test_default_backend_is_native_cpu(monkeypatch):
    monkeypatch.delenv("FUNCTORCH_CORE_BACKEND", raising=False)
    code = "import functorch_core as fc; print(fc.default_backend())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=paths.ROOT)
    assert out.stdout.strip() == "cpu"
    f = fc.jit(lambda x: x * 2)
    f(np.ones(3))
    assert next(iter(f.cache.values())).run.__class__.__name__ == \
        ("Executable" if fc.default_backend() == "cpu" else "function")
