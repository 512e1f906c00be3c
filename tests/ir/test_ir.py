"""The IR: golden printed graphs, avals and NEP 50 promotion, the generic passes,
and check_graph on malformed graphs."""

from __future__ import annotations

import itertools
import re
import textwrap

import numpy as np
import pytest
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import (
    AbstractArray,
    Eqn,
    Graph,
    GraphError,
    Lit,
    Var,
    check_graph,
    dtypes,
    passes,
)
from functorch_core.ir import primitives as P

import functorch_core as fc

F32 = np.float32


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


# --- golden IR text ------------------------------------------------------------------

def test_golden_mlp_layer():
    def layer(x, w, b):
        return np.tanh(x @ w + b)
    g = fc.make_graph(layer)(np.ones((8, 4), F32), np.ones((4, 3), F32), np.ones(3, F32))
    assert str(g) == golden("""
        graph(a:f32[8,4], b:f32[4,3], c:f32[3]) {
          d:f32[8,3] = dot_general[dimension_numbers=(((1,), (0,)), ((), ()))] a b
          e:f32[8,3] = broadcast_in_dim[shape=(8, 3), broadcast_dimensions=(1,)] c
          f:f32[8,3] = add d e
          g:f32[8,3] = tanh f
          return g
        }
    """)


def test_golden_reduction_keepdims():
    g = fc.make_graph(lambda x: x - x.max(axis=-1, keepdims=True))(np.ones((2, 3), F32))
    assert str(g) == golden("""
        graph(a:f32[2,3]) {
          b:f32[2] = reduce_max[axes=(1,)] a
          c:f32[2,1] = expand_dims[dimensions=(1,)] b
          d:f32[2] = reshape[new_sizes=(2,)] c
          e:f32[2,3] = broadcast_in_dim[shape=(2, 3), broadcast_dimensions=(0,)] d
          f:f32[2,3] = sub a e
          return f
        }
    """)


def test_golden_indexing(monkeypatch):
    g = fc.make_graph(lambda x, i: x[1:, None, ::-2][i])(np.ones((4, 5), F32), np.arange(2))
    text = re.sub(r"where=x\[index\] at .*?test_ir\.py:\d+ \(`[^`]*`\)", "where=W", str(g))
    assert text == golden("""
        graph(a:f32[4,5], b:i64[2]) {
          c:f32[3,3] = slice[start_indices=(1, 0), limit_indices=(4, 5), strides=(1, 2)] a
          d:f32[3,3] = rev[dimensions=(1,)] c
          e:f32[3,1,3] = expand_dims[dimensions=(1,)] d
          f:i64[2] = check_index[size=3, axis=0, where=W] b
          g:i64[2,1] = expand_dims[dimensions=(1,)] f
          h:f32[2,1,3] = gather[axes=(0,)] e g
          return h
        }
    """)
    monkeypatch.setattr(fc.config, "check_bounds", False)      # clamps: no check in the graph
    g = fc.make_graph(lambda x, i: x[1:, None, ::-2][i])(np.ones((4, 5), F32), np.arange(2))
    assert str(g) == golden("""
        graph(a:f32[4,5], b:i64[2]) {
          c:f32[3,3] = slice[start_indices=(1, 0), limit_indices=(4, 5), strides=(1, 2)] a
          d:f32[3,3] = rev[dimensions=(1,)] c
          e:f32[3,1,3] = expand_dims[dimensions=(1,)] d
          f:i64[2] = add b 3:i64
          g:bool[2] = lt b 0:i64
          h:i64[2] = select g f b
          i:i64[2,1] = expand_dims[dimensions=(1,)] h
          j:f32[2,1,3] = gather[axes=(0,)] e i
          return j
        }
    """)



def double_sin(x):
    return np.sin(x) * 2.0


def test_golden_nested_jit_call():
    inner = fc.jit(double_sin)
    g = fc.make_graph(lambda x: inner(x) + 1.0)(np.ones(3, F32))
    assert str(g) == golden("""
        graph(a:f32[3]) {
          e:f32[3] = call[graph=
            graph(b:f32[3]) {
              c:f32[3] = sin b
              d:f32[3] = mul c 2.0:f32~
              return d
            }
          , name=double_sin] a
          f:f32[3] = add e 1.0:f32~
          return f
        }
    """)


def test_printed_graph_has_one_line_per_equation():
    const = np.arange(6).reshape(3, 2)
    g = fc.make_graph(lambda x: x + const)(np.ones((3, 2), np.int64))
    assert len(str(g).splitlines()) == 2 + len(g.eqns) + 1


# --- avals and promotion -----------------------------------------------------------------

ALL = dtypes.SUPPORTED
PY_SCALARS = [True, 3, 2.5, 1.5 + 2j]


def test_abstract_array_basics():
    a = AbstractArray([2, np.int64(3)], np.float32)
    assert a.shape == (2, 3) and type(a.shape[1]) is int
    assert a.dtype == np.dtype(np.float32) and a.ndim == 2 and a.size == 6
    assert str(a) == "f32[2,3]"
    weak = AbstractArray((), np.float64, weak_type=True)
    assert str(weak) == "f64~[]" and weak.strong() == AbstractArray((), np.float64)
    assert a == AbstractArray((2, 3), "float32") and hash(a) == hash(AbstractArray((2, 3), F32))
    assert a != AbstractArray((2, 3), np.float64) and weak != weak.strong()
    assert a.update(dtype=np.int8) == AbstractArray((2, 3), np.int8)
    assert AbstractArray((0, 4), np.bool_).size == 0


def test_abstract_array_rejects_bad_input():
    with pytest.raises(ValueError, match="negative"):
        AbstractArray((2, -1), np.float32)
    with pytest.raises(TypeError, match="not supported"):
        AbstractArray((2,), np.uint64)
    with pytest.raises(TypeError, match="not supported"):
        AbstractArray((2,), np.dtype("U3"))


@pytest.mark.parametrize("a,b", list(itertools.product(ALL, ALL)), ids=str)
def test_promotion_of_dtype_pairs(a, b):
    assert dtypes.result_type((a, False), (b, False)) == (np.result_type(a, b), False)


@pytest.mark.parametrize("scalar", PY_SCALARS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dt", ALL, ids=str)
def test_promotion_with_weak_python_scalars(dt, scalar):
    """NEP 50: a Python scalar takes the array's dtype unless its kind is higher."""
    expected = (np.zeros(2, dt) + scalar).dtype
    weak = (dtypes.python_scalar_dtype(scalar), True)
    assert dtypes.result_type((dt, False), weak) == (expected, False)
    assert dtypes.result_type(weak, (dt, False)) == (expected, False)
    # the same through tracing: the result aval of x + scalar and scalar * x
    g = fc.make_graph(lambda x, s: (x + s, s * x))(np.zeros(2, dt), scalar)
    assert g.in_avals[1] == AbstractArray((), weak[0], weak_type=True)
    assert [av.dtype for av in g.out_avals] == [expected, (scalar * np.zeros(2, dt)).dtype]
    assert not any(av.weak_type for av in g.out_avals)


@pytest.mark.parametrize("s1,s2", list(itertools.product(PY_SCALARS, PY_SCALARS)))
def test_two_weak_scalars_stay_weak(s1, s2):
    (dt, weak) = dtypes.result_type((dtypes.python_scalar_dtype(s1), True),
                                    (dtypes.python_scalar_dtype(s2), True))
    assert weak and dt == np.result_type(s1, s2)


def test_aval_of():
    assert fc.make_graph(lambda x: x)(2.0).in_avals == [AbstractArray((), np.float64, True)]
    assert fc.make_graph(lambda x: x)(np.float32(2)).in_avals == [AbstractArray((), F32)]
    assert fc.make_graph(lambda x: x)(True).in_avals == [AbstractArray((), np.bool_, True)]


# --- passes --------------------------------------------------------------------------

def _prims(graph):
    return [e.prim.name for e in graph.eqns]


def test_dce_removes_dead_equations():
    def f(x):
        np.sin(x)              # dead
        y = np.cos(x)
        np.exp(y)              # dead
        return y * 2.0
    g = fc.make_graph(f)(np.ones(3))
    assert _prims(g) == ["sin", "cos", "exp", "mul"]
    d = check_graph(passes.dce(g))
    assert _prims(d) == ["cos", "mul"]
    assert _prims(g) == ["sin", "cos", "exp", "mul"]     # the input graph is untouched
    np.testing.assert_allclose(run_graph(d, [np.ones(3)])[0], 2 * np.cos(np.ones(3)))


def test_cse_merges_duplicates():
    g = fc.make_graph(lambda x: np.sin(x) + np.sin(x) * np.sin(x + 1.0))(np.ones(3))
    assert _prims(g).count("sin") == 3
    c = check_graph(passes.cse(g))
    assert _prims(c).count("sin") == 2
    x = np.linspace(0, 1, 3)
    expected = np.sin(x) + np.sin(x) * np.sin(x + 1.0)
    np.testing.assert_allclose(run_graph(c, [x])[0], expected)


def test_cse_keeps_equations_with_different_params():
    g = fc.make_graph(lambda x: x.sum(axis=0) + x.sum(axis=1))(np.ones((3, 3)))
    assert _prims(passes.cse(g)).count("reduce_sum") == 2


def test_fold_constants_folds():
    c = np.arange(3.0)
    x, e, m, y = Var(_vec(dt=np.float64)), Var(_vec(dt=np.float64)), \
        Var(_vec(dt=np.float64)), Var(_vec(dt=np.float64))
    g = check_graph(Graph([x], [Eqn(P.exp, (Lit(c),), (e,), {}),
                                Eqn(P.mul, (e, Lit(2.0, AbstractArray((), np.float64))), (m,), {}),
                                Eqn(P.add, (x, m), (y,), {})], [y]))
    folded = check_graph(passes.fold_constants(g))
    assert _prims(folded) == ["add"]
    lit = folded.eqns[0].inputs[1]
    assert isinstance(lit, Lit)
    np.testing.assert_allclose(lit.value, np.exp(c) * 2.0)
    np.testing.assert_allclose(run_graph(folded, [np.ones(3)])[0], 1 + np.exp(c) * 2)
    assert _prims(g) == ["exp", "mul", "add"]      # the input graph is untouched


def test_fold_constants_after_inlining_a_call_on_a_constant():
    inner = fc.jit(lambda v: np.exp(v) * 2.0)
    c = np.arange(3.0)
    g = fc.make_graph(lambda x: x + inner(c))(np.ones(3))
    assert _prims(g) == ["call", "add"]
    s = check_graph(passes.simplify(g))
    assert _prims(s) == ["add"]
    np.testing.assert_allclose(run_graph(s, [np.ones(3)])[0], 1 + np.exp(c) * 2)


def test_fold_constants_folds_big_results_only_when_no_bigger_than_an_operand():
    c = np.linspace(0, 1, passes.FOLD_MAX_ELEMENTS + 1)
    x, y = Var(AbstractArray(c.shape, np.float64)), Var(AbstractArray(c.shape, np.float64))
    g = Graph([x], [Eqn(P.sin, (Lit(c),), (y,), {})], [y])
    folded = passes.fold_constants(g)
    assert _prims(folded) == [] and np.array_equal(folded.outputs[0].value, np.sin(c))
    big = AbstractArray((2, c.size), np.float64)
    z = Var(big)
    g = Graph([x], [Eqn(P.broadcast_in_dim, (Lit(c),), (z,),
                        {"shape": big.shape, "broadcast_dimensions": (1,)})], [z])
    assert _prims(passes.fold_constants(g)) == ["broadcast_in_dim"]
    huge = np.zeros(passes.FOLD_MAX_SAME_SIZE + 1)
    h = Var(AbstractArray(huge.shape, np.float64))
    g = Graph([x], [Eqn(P.sin, (Lit(huge),), (h,), {})], [h])
    assert _prims(passes.fold_constants(g)) == ["sin"]


def test_inline_inlines_a_nested_call():
    inner = fc.jit(lambda x: np.sin(x) * 2.0)
    g = fc.make_graph(lambda x: inner(x) + 1.0)(np.ones(3, F32))
    assert _prims(g) == ["call", "add"]
    flat = check_graph(passes.inline(g))
    assert _prims(flat) == ["sin", "mul", "add"]
    x = np.linspace(0, 1, 3, dtype=F32)
    np.testing.assert_allclose(run_graph(flat, [x])[0], np.sin(x) * 2 + 1, rtol=1e-6)


def test_inline_keeps_ssa_when_a_function_is_called_twice():
    inner = fc.jit(lambda x: np.sin(x) * 2.0)
    g = fc.make_graph(lambda x: inner(x) + inner(x + 1.0))(np.ones(3, F32))
    assert _prims(g) == ["call", "add", "call", "add"]
    flat = check_graph(passes.inline(g))     # raises if a Var is defined twice
    assert _prims(flat) == ["sin", "mul", "add", "sin", "mul", "add"]
    outs = [v for e in flat.eqns for v in e.outputs]
    assert len({id(v) for v in outs}) == len(outs)
    x = np.linspace(0, 1, 3, dtype=F32)
    expected = np.sin(x) * 2 + np.sin(x + 1) * 2
    np.testing.assert_allclose(run_graph(flat, [x])[0], expected, rtol=1e-6)
    # CSE after inlining must not merge the two bodies: their inputs differ
    assert _prims(passes.simplify(g)).count("sin") == 2


def test_inline_nested_calls():
    f1 = fc.jit(lambda x: x * 3.0)
    f2 = fc.jit(lambda x: f1(x) + f1(x * 2.0))
    g = fc.make_graph(lambda x: f2(f2(x)))(np.ones(2))
    flat = check_graph(passes.inline(g))
    assert "call" not in _prims(flat)
    x = np.array([1.0, 2.0])

    def ref(v):
        return v * 3 + v * 2 * 3
    np.testing.assert_allclose(run_graph(flat, [x])[0], ref(ref(x)))


def test_simplify_then_check_and_run():
    c = np.float64(4.0)

    def f(x):
        a = np.sin(x) + np.sin(x)
        np.cos(x)
        return a * (c + 1.0)
    g = fc.make_graph(f)(np.ones(2))
    s = check_graph(passes.simplify(g))
    assert _prims(s).count("sin") == 1 and "cos" not in _prims(s)
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(run_graph(s, [x])[0], (np.sin(x) * 2) * 5)


# --- check_graph on hand-made malformed graphs ---------------------------------------------

def _vec(n=3, dt=np.float32):
    return AbstractArray((n,), dt)


def test_check_graph_accepts_a_good_hand_made_graph():
    x, y = Var(_vec()), Var(_vec())
    g = Graph([x], [Eqn(P.sin, (x,), (y,), {})], [y])
    assert check_graph(g) is g


def test_check_graph_free_variable():
    x, free, y = Var(_vec()), Var(_vec()), Var(_vec())
    g = Graph([x], [Eqn(P.add, (x, free), (y,), {})], [y])
    with pytest.raises(GraphError, match="free variable"):
        check_graph(g)


def test_check_graph_undefined_output():
    x = Var(_vec())
    with pytest.raises(GraphError, match="free variable"):
        check_graph(Graph([x], [], [Var(_vec())]))


def test_check_graph_defined_twice():
    x, y = Var(_vec()), Var(_vec())
    g = Graph([x], [Eqn(P.sin, (x,), (y,), {}), Eqn(P.cos, (x,), (y,), {})], [y])
    with pytest.raises(GraphError, match="defined twice"):
        check_graph(g)


def test_check_graph_wrong_output_type():
    x, y = Var(_vec()), Var(_vec(dt=np.float64))
    g = Graph([x], [Eqn(P.sin, (x,), (y,), {})], [y])
    with pytest.raises(GraphError, match="rule says"):
        check_graph(g)


def test_check_graph_shape_rule_failure():
    x, z, y = Var(_vec(3)), Var(_vec(4)), Var(_vec(3))
    g = Graph([x, z], [Eqn(P.add, (x, z), (y,), {})], [y])
    with pytest.raises(GraphError, match="shape rule failed"):
        check_graph(g)


def test_check_graph_bad_literal():
    x, y = Var(_vec()), Var(_vec())
    bad = Lit(np.float32(1))
    object.__setattr__(bad, "aval", AbstractArray((2,), np.float32))
    g = Graph([x], [Eqn(P.mul, (x, bad), (y,), {})], [y])
    with pytest.raises(GraphError, match="literal"):
        check_graph(g)


def test_check_graph_checks_nested_graphs():
    a, b = Var(_vec()), Var(_vec())
    inner = Graph([a], [], [Var(_vec())])          # returns a free variable
    x, y = Var(_vec()), Var(_vec())
    g = Graph([x], [Eqn(P.call, (x,), (y,), {"graph": inner, "name": "bad"})], [y])
    del b
    with pytest.raises(GraphError, match="free variable"):
        check_graph(g)
