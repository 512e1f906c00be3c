"""The cpu backend's native sort (backends/llvm/sort.py) against the interpreter.

Results are compared bit for bit (so -0.0 against 0.0 and NaN payloads count), with
an int64 position operand riding along so the order of equal keys (stability) shows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import entries, lowering
from functorch_core.backends.planning import buffers
from functorch_core.backends.planning import partition as part
from functorch_core.backends.planning.plan import Fallback, Sort
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Eqn, Lit, Var
from functorch_core.ir.dtypes import bfloat16 as BF16
from functorch_core.ir.dtypes import dtype_kind
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp

CPU = registry.get("cpu")
REALS = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                               BF16, np.float16, np.float32, np.float64)]
CARRIED = REALS + [np.dtype(np.complex64), np.dtype(np.complex128)]


def pool_values(rng, shape, dtype):
    """Values drawn from a small pool (many duplicates), with the extremes and, for
    floats, NaN of both signs, infinities, -0.0, 0.0 and a subnormal."""
    dtype = np.dtype(dtype)
    if dtype_kind(dtype) == "b":
        return rng.random(shape) < 0.5
    if dtype_kind(dtype) in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, 2, info.max - 1], dtype)
        if dtype_kind(dtype) == "i":
            pool = np.concatenate([pool, np.array([-1, -2], dtype)])
        return rng.choice(pool, shape)
    if dtype_kind(dtype) == "c":
        z = np.empty(shape, dtype)
        z.real, z.imag = (pool_values(rng, shape, z.real.dtype) for _ in range(2))
        return z
    tiny = np.finfo(dtype).smallest_subnormal
    pool = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, tiny,
                     -tiny, np.finfo(dtype).max], dtype)
    return rng.choice(pool, shape)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))


def assert_same_bits(got, want):
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(bits(g), bits(w))


def sort_graph(shape, dtypes, dimension, num_keys):
    b = Builder()
    ins = [b.input(shape, dt) for dt in dtypes]
    outs = b(P.sort, *ins, dimension=dimension, num_keys=num_keys)
    return b.graph(*outs)


def check(graph, args):
    exe = CPU.compile(graph)
    assert not [s for s in exe.plan.steps if isinstance(s, Fallback)]
    got = exe(list(args))
    want = run_graph(graph, list(args))
    assert_same_bits(got, want)
    return exe


@st.composite
def sort_cases(draw):
    rank = draw(st.integers(1, 3))
    dimension = draw(st.integers(0, rank - 1))
    shape = [draw(st.integers(0, 4)) for _ in range(rank)]
    shape[dimension] = draw(st.sampled_from([0, 1, 2, 3, 15, 16, 17, 33, 70]))
    num_keys = draw(st.integers(1, 3))
    keys = [draw(st.sampled_from(REALS)) for _ in range(num_keys)]
    carried = [draw(st.sampled_from(CARRIED)) for _ in range(draw(st.integers(0, 2)))]
    return tuple(shape), dimension, keys, carried, draw(st.integers(0, 2**32 - 1))


@given(sort_cases())
def test_sort_matches_the_interpreter_bit_for_bit(case):
    shape, dimension, keys, carried, seed = case
    rng = np.random.default_rng(seed)
    dtypes = keys + carried + [np.dtype(np.int64)]
    args = [pool_values(rng, shape, dt) for dt in keys + carried]
    # the position along the sorted dimension: shows the order of equal keys
    position = np.broadcast_to(np.arange(shape[dimension]).reshape(
        [-1 if d == dimension else 1 for d in range(len(shape))]), shape)
    args.append(np.ascontiguousarray(position, np.int64))
    check(sort_graph(shape, dtypes, dimension, len(keys)), args)


@pytest.mark.parametrize("dtype", REALS)
def test_fnp_sort_and_argsort_under_jit(dtype):
    rng = np.random.default_rng(3)
    x = pool_values(rng, (6, 50), dtype)
    for axis in (0, 1, -1, None):
        got = fc.jit(lambda a, axis=axis: fnp.sort(a, axis=axis))(x)
        np.testing.assert_array_equal(bits(got), bits(np.sort(x, axis=axis, kind="stable")))
        got = fc.jit(lambda a, axis=axis: fnp.argsort(a, axis=axis))(x)
        np.testing.assert_array_equal(got, np.argsort(x, axis=axis, kind="stable"))


def test_complex_values_sort_natively_by_real_keys():
    rng = np.random.default_rng(4)
    z = pool_values(rng, (5, 40), np.complex128)
    for f in (fnp.sort, fnp.argsort):
        exe = fc.jit(f)
        got = exe(z)
        np.testing.assert_array_equal(bits(got), bits(fc.jit(f, backend="interpreter")(z)))
    z = z[np.isfinite(z)]       # NumPy's order of complex NaNs differs from fnp's
    np.testing.assert_array_equal(bits(fc.jit(fnp.sort)(z)), bits(np.sort(z, kind="stable")))
    np.testing.assert_array_equal(fc.jit(fnp.argsort)(z), np.argsort(z, kind="stable"))


def test_complex_keys_keep_a_reasoned_fallback():
    key = Var(AbstractArray((4,), np.complex64))
    eqn = Eqn(P.sort, (key,), (Var(AbstractArray((4,), np.complex64)),),
              {"dimension": 0, "num_keys": 1})
    assert "complex keys" in lowering.lowering_gap(eqn)
    carried = Eqn(P.sort, (Var(AbstractArray((4,), np.float32)), key),
                  tuple(Var(a.aval) for a in (key, key)), {"dimension": 0, "num_keys": 1})
    assert lowering.lowering_gap(carried) is None
    assert P.sort in lowering.NATIVE and P.sort not in lowering.FALLBACK


@pytest.mark.parametrize("shape, dimension", [((300, 400), 0), ((300, 400), 1),
                                              ((7, 9000, 3), 1), ((1, 70000), 1)])
def test_big_sorts_split_rows_over_threads(shape, dimension):
    rng = np.random.default_rng(5)
    keys = [pool_values(rng, shape, np.int8), (rng.standard_normal(shape)).astype(np.float32)]
    keys[1].reshape(-1)[::97] = np.nan
    position = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    graph = sort_graph(shape, [np.dtype(np.int8), np.dtype(np.float32), np.dtype(np.int64)],
                       dimension, 2)
    exe = check(graph, [*keys, position])
    (step,) = [s for s in exe.plan.steps if isinstance(s, Sort)]
    rows = np.prod(shape) // shape[dimension]
    assert step.rows == rows
    parts = -(-rows // step.rows_per_part)
    assert parts == min(part.SORT_PARTS, rows)
    assert exe.plan.slots[step.scratch] == ((parts, 4 * shape[dimension]), np.dtype(np.int64))


def test_long_row_matches_numpy():
    rng = np.random.default_rng(6)
    x = rng.standard_normal(200_003).astype(np.float32)
    x[rng.integers(0, x.size, 500)] = np.nan
    x[rng.integers(0, x.size, 500)] = -0.0
    x[rng.integers(0, x.size, 500)] = np.inf
    np.testing.assert_array_equal(bits(fc.jit(fnp.sort)(x)), bits(np.sort(x, kind="stable")))
    np.testing.assert_array_equal(fc.jit(fnp.argsort)(x), np.argsort(x, kind="stable"))
    already = np.sort(x, kind="stable")
    np.testing.assert_array_equal(fc.jit(fnp.argsort)(already),
                                  np.argsort(already, kind="stable"))
    np.testing.assert_array_equal(fc.jit(fnp.argsort)(already[::-1].copy()),
                                  np.argsort(already[::-1], kind="stable"))


def test_scratch_and_outputs_live_in_the_arena():
    """Two chained sorts, a kernel on each side: the scratch slots and the intermediate
    sort results are arena buffers, read and written by their step."""
    b = Builder()
    x = b.input((64, 48), np.float32)
    y = b(P.neg, x)
    (s1,) = b(P.sort, y, dimension=1, num_keys=1)
    t = b(P.transpose, s1, permutation=(1, 0))
    (s2,) = b(P.sort, t, dimension=1, num_keys=1)
    out = b(P.add, s2, Lit(np.float32(1), AbstractArray((), np.float32)))
    graph = b.graph(out)
    rng = np.random.default_rng(7)
    exe = check(graph, [pool_values(rng, (64, 48), np.float32)])
    sorts = [s for s in exe.plan.steps if isinstance(s, Sort)]
    assert len(sorts) == 2
    for s in sorts:
        reads, writes = buffers.step_slots(s)
        assert s.scratch in reads and s.scratch in writes
        assert s.scratch in exe.arena_offsets and s.outputs[0] in exe.arena_offsets
    arg = pool_values(rng, (64, 48), np.float32)
    want = run_graph(graph, [arg])
    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(lambda _: exe([arg]), range(16)):
            assert_same_bits(got, want)


def test_sort_of_views_and_constants():
    rng = np.random.default_rng(8)
    c = pool_values(rng, (5, 20), np.int16)
    x = pool_values(rng, (20, 5), np.int16)

    def f(a):
        return fnp.sort(a.T, axis=0), fnp.argsort(c + 0 * a.T, axis=1), fnp.sort(a[::2, 1])

    got = fc.jit(f)(x)
    want = fc.jit(f, backend="interpreter")(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_small_sorts_join_the_single_native_entry_and_big_ones_do_not():
    rng = np.random.default_rng(9)
    graph = sort_graph((4, 30), [np.dtype(np.float32)], 1, 1)
    small = CPU.compile(graph)
    assert small.entry is not None or not entries.graph_entry_supported()
    x = pool_values(rng, (4, 30), np.float32)
    assert_same_bits(small([x]), run_graph(graph, [x]))
    big = CPU.compile(sort_graph((1 << 18,), [np.dtype(np.float32)], 0, 1))
    assert big.entry is None        # a long sort releases the GIL through ctypes
