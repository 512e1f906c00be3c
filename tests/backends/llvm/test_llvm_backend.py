"""The native CPU backend (backends/llvm) against the reference interpreter.

Graphs are built directly from the catalogue (no NumPy API in between), compiled
with the ``cpu`` backend and compared with ``backends.interpreter.run_graph``:
exactly for integer/bool results and IEEE-exact float ops, within 2 ulp for
transcendental functions, within a summation bound for float sums and products.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from backend_checks import assert_inputs_kept_and_outputs_fresh, sums_and_products
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import lowering
from functorch_core.backends.planning import partition as part
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Lit
from functorch_core.ir.dtypes import bfloat16 as BF16
from functorch_core.ir.dtypes import dtype_kind
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st
from prim_cases import CASES as PRIM_CASES
from prim_cases import assert_matches_interpreter, one_graph

import functorch_core as fc
import functorch_core.numpy as fnp

CPU = registry.get("cpu")
REALS = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                               BF16, np.float16, np.float32, np.float64)]
FLOATS = [np.dtype(t) for t in (BF16, np.float16, np.float32, np.float64)]
INT_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8)]


def values(rng, shape, dtype, special=True):
    dtype = np.dtype(dtype)
    if dtype_kind(dtype) in "iu" and not shape and special:     # also used as indices: go wide
        return np.asarray(rng.integers(-9 if dtype_kind(dtype) == "i" else 0, 9), dtype)
    if dtype_kind(dtype) == "b":
        return rng.random(shape) < 0.5
    if dtype_kind(dtype) in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(-6 if dtype_kind(dtype) == "i" else 0, 7, shape).astype(dtype)
        if special and x.size:
            flat = x.reshape(-1)
            flat[rng.integers(0, flat.size)] = rng.choice([info.min, info.max, 0, -1])
        return x
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if special and x.size:
        flat = x.reshape(-1)
        picks = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0, -3.0]
        for _ in range(max(1, flat.size // 4)):
            flat[rng.integers(0, flat.size)] = rng.choice(picks)
    return x


def both(graph, args):
    got = CPU.compile(graph)(list(args))
    with np.errstate(all="ignore"):
        want = run_graph(graph, list(args))
    return got, want


def assert_exact(got, want):
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def ulp_distance(a, b):
    a, b = np.asarray(a), np.asarray(b)
    itype = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = (x.view(itype).astype(np.int64) for x in (a, b))
    sign = np.int64(np.iinfo(itype).max)
    ia = np.where(ia < 0, -(ia & sign), ia)
    ib = np.where(ib < 0, -(ib & sign), ib)
    d = np.abs(ia - ib)
    d[np.isnan(a) & np.isnan(b)] = 0
    d[np.isnan(a) != np.isnan(b)] = 1 << 40
    return d


# --- the catalogue ----------------------------------------------------------------

def test_every_primitive_lowers_or_has_a_reasoned_fallback():
    for prim in P.ALL.values():
        native, fallback = prim in lowering.NATIVE, prim in lowering.FALLBACK
        assert native != fallback, f"{prim.name}: native={native}, in fallback table={fallback}"
        if fallback:
            assert len(lowering.FALLBACK[prim]) > 10


def test_fallback_runs_one_equation_not_the_graph():
    b = Builder()
    x = b.input((5, 3), np.complex64)
    y = b(P.mul, x, x)
    c = b(P.pow, y, x)                              # complex pow stays in the interpreter
    out = b(P.add, c, Lit(np.complex64(1), AbstractArray((), np.complex64)))
    graph = b.graph(out)
    exe = CPU.compile(graph)
    kinds = [type(s).__name__ for s in exe.plan.steps]
    assert kinds == ["Kernel", "Fallback", "Kernel"]
    assert exe.plan.steps[1].reason == lowering.lowering_gap(graph.eqns[1])
    rng = np.random.default_rng(0)
    z = (rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))).astype(np.complex64)
    with np.errstate(all="ignore"):
        assert_exact(*both(graph, [z]))


def test_the_primitive_case_table_matches_the_interpreter():
    """Every row of tests/prim_cases.py at two sizes (both ranks) in one compiled graph,
    against the interpreter."""
    graph, args, names = one_graph(PRIM_CASES, np.random.default_rng(11), (3, 2, 3),
                                    (2, 1, 4))
    got, want = both(graph, args)
    assert_matches_interpreter(got, want, names)


@pytest.mark.parametrize("index_dtype", [np.int8, np.uint8, np.int32, np.int64])
def test_gather_and_dynamic_slice_clamp_indices(index_dtype):
    rng = np.random.default_rng(5)
    b = Builder()
    x = b.input((4, 4, 4), np.float32)
    idx2 = b.input((5, 2), index_dtype)
    idx1 = b.input((2, 3, 1), index_dtype)
    starts = [b.input((), index_dtype) for _ in range(3)]
    y = b(P.neg, x)
    g2 = b(P.gather, y, idx2, axes=(0, 2))
    g1 = b(P.gather, b(P.rev, x, dimensions=(1,)), idx1, axes=(1,))
    ds = b(P.dynamic_slice, y, *starts, slice_sizes=(2, 4, 1))
    both_ = b(P.add, b(P.gather, x, idx2, axes=(1, 2)), b(P.exp, b(P.gather, x, idx2,
                                                                   axes=(0, 1))))
    graph = b.graph(g2, g1, ds, both_)
    lo, hi = (-7, 9) if np.dtype(index_dtype).kind == "i" else (0, 200)
    for _ in range(3):
        args = [values(rng, (4, 4, 4), np.float32, False),
                rng.integers(lo, hi, (5, 2)).astype(index_dtype),
                rng.integers(lo, hi, (2, 3, 1)).astype(index_dtype)]
        args += [np.asarray(rng.integers(lo, hi), dtype=index_dtype) for _ in range(3)]
        got, want = both(graph, args)
        assert_exact(got[:3], want[:3])
        assert ulp_distance(got[3], want[3]).max() <= 2
    assert not any(isinstance(s, part.Fallback) for s in CPU.compile(graph).plan.steps)


# --- random graphs ----------------------------------------------------------------

EXACT_UNARY = [P.neg, P.sign, P.abs, P.floor, P.ceil, P.round, P.is_finite, P.sqrt, P.not_]
EXACT_BINARY = [P.add, P.sub, P.mul, P.div, P.floor_div, P.rem, P.max, P.min, P.copysign,
                P.and_, P.or_, P.xor, P.eq, P.ne, P.lt, P.le, P.gt, P.ge]
EXACT_REDUCTIONS = [P.reduce_max, P.reduce_min]


def _accepts(prim, *avals, **params):
    try:
        prim.shape_rule(*avals, **params)
    except (TypeError, ValueError):
        return False
    if prim in (P.neg, P.sign) and dtype_kind(avals[0].dtype) == "b":
        return False
    return not (prim in (P.sub,) and dtype_kind(avals[0].dtype) == "b")


def _random_graph(data, rng):
    b = Builder()
    rank = data.draw(st.integers(0, 3), "rank")
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank), "shape"))
    dtype = data.draw(st.sampled_from(REALS), "dtype")
    pool = [b.input(shape, dtype) for _ in range(data.draw(st.integers(1, 3), "n_inputs"))]
    if data.draw(st.booleans(), "scalar input"):
        pool.append(b.input((), dtype))
    for _ in range(data.draw(st.integers(1, 8), "n_ops")):
        kind = data.draw(st.sampled_from(
            ["unary", "binary", "binary", "select", "convert", "layout", "reduce", "iota",
             "gather", "dynamic_slice", "scan", "arg", "concatenate", "pad",
             "update"]))
        x = data.draw(st.sampled_from(pool))
        av = x.aval
        if kind == "unary":
            prims = [p for p in EXACT_UNARY if _accepts(p, av)]
            if prims:
                pool.append(b(data.draw(st.sampled_from(prims)), x))
        elif kind == "binary":
            others = [y for y in pool if y.aval.dtype == av.dtype
                      and (y.aval.shape == av.shape or not y.aval.ndim or not av.ndim)]
            y = data.draw(st.sampled_from(others))
            if data.draw(st.booleans()):
                y = Lit(values(rng, (), av.dtype)[()], AbstractArray((), av.dtype))
            prims = [p for p in EXACT_BINARY if _accepts(p, av, y.aval)]
            if prims:
                pool.append(b(data.draw(st.sampled_from(prims)), x, y))
        elif kind == "select":
            preds = [p for p in pool
                     if dtype_kind(p.aval.dtype) == "b" and p.aval.shape == av.shape]
            others = [y for y in pool if y.aval.dtype == av.dtype and y.aval.shape == av.shape]
            if preds:
                pool.append(b(P.select, data.draw(st.sampled_from(preds)), x,
                              data.draw(st.sampled_from(others))))
        elif kind == "convert":
            pool.append(b(P.convert, x, new_dtype=data.draw(st.sampled_from(REALS))))
        elif kind == "iota" and av.ndim:
            dt = data.draw(st.sampled_from([d for d in REALS if dtype_kind(d) != "b"]))
            pool.append(b(P.iota, dtype=dt, shape=av.shape,
                          dimension=data.draw(st.integers(0, av.ndim - 1))))
        elif kind == "reduce" and av.ndim:
            axes = tuple(sorted(set(data.draw(st.lists(st.integers(0, av.ndim - 1), max_size=2)))))
            prims = [P.reduce_max, P.reduce_min] if dtype_kind(av.dtype) == "f" else P.REDUCTIONS
            prim = data.draw(st.sampled_from(prims))
            if prim in EXACT_REDUCTIONS and any(av.shape[a] == 0 for a in axes):
                prim = P.reduce_sum if dtype_kind(av.dtype) != "f" else None
            if prim is not None:
                out = b(prim, x, axes=axes)
                pool.append(out)
                if out.aval.ndim < av.ndim:   # broadcast it back, as keepdims code does
                    kept = tuple(i for i in range(av.ndim) if i not in axes)
                    pool.append(b(P.broadcast_in_dim, out, shape=av.shape,
                                  broadcast_dimensions=kept))
        elif kind == "layout":
            pool.append(_random_layout(data, b, x))
        elif kind == "concatenate" and av.ndim:
            dim = data.draw(st.integers(0, av.ndim - 1))
            mates = [y for y in pool if y.aval.dtype == av.dtype and y.aval.ndim == av.ndim
                     and all(a == c or i == dim for i, (a, c) in
                             enumerate(zip(y.aval.shape, av.shape, strict=True)))]
            parts = data.draw(st.lists(st.sampled_from(mates), min_size=1, max_size=3))
            pool.append(b(P.concatenate, x, *parts, dimension=dim))
        elif kind == "pad":
            config = tuple((data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2)),
                            data.draw(st.integers(0, 2))) for _ in av.shape)
            fill = data.draw(st.sampled_from(
                [y for y in pool if y.aval.dtype == av.dtype and not y.aval.ndim]
                + [Lit(values(rng, (), av.dtype)[()], AbstractArray((), av.dtype))]))
            if _accepts(P.pad, av, fill.aval, padding_config=config):
                pool.append(b(P.pad, x, fill, padding_config=config))
        elif kind == "update" and av.ndim:
            pool.append(_random_update(data, rng, b, x))
        elif kind == "scan" and av.ndim:
            exact = dtype_kind(av.dtype) != "f"
            prims = [P.cummax, P.cummin] + ([P.cumsum, P.cumprod] if exact else [])
            pool.append(b(data.draw(st.sampled_from(prims)), x,
                          axis=data.draw(st.integers(0, av.ndim - 1)), reverse=data.draw(
                              st.booleans())))
        elif kind == "arg" and av.ndim:
            axis = data.draw(st.integers(0, av.ndim - 1))
            if av.shape[axis]:
                pool.append(b(data.draw(st.sampled_from([P.argmax, P.argmin])), x, axis=axis,
                              index_dtype=data.draw(st.sampled_from(
                                  [np.dtype(np.int32), np.dtype(np.int64)]))))
        elif kind == "gather" and av.ndim and all(av.shape):
            axes = tuple(sorted(set(data.draw(st.lists(st.integers(0, av.ndim - 1), min_size=1,
                                                       max_size=2)))))
            batch = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
            idx = b.input(batch + (len(axes),), data.draw(st.sampled_from(INT_DTYPES)))
            pool.append(b(P.gather, x, idx, axes=axes))
        elif kind == "dynamic_slice":
            sizes = tuple(data.draw(st.integers(0, d)) for d in av.shape)
            starts = [b.input((), data.draw(st.sampled_from(INT_DTYPES))) for _ in av.shape]
            pool.append(b(P.dynamic_slice, x, *starts, slice_sizes=sizes))
    n_out = data.draw(st.integers(1, 3), "n_out")
    computed = [v for v in pool if v not in b.inputs]
    outs = [data.draw(st.sampled_from(computed or pool)) for _ in range(n_out)]
    return b.graph(*outs)


def _random_update(data, rng, b, x):
    av = x.aval
    fresh = data.draw(st.booleans())
    if data.draw(st.booleans()):
        sizes = tuple(data.draw(st.integers(0, d)) for d in av.shape)
        upd = b.input(sizes, av.dtype) if fresh else b(P.slice, x, start_indices=(0,) * av.ndim,
                                                      limit_indices=sizes,
                                                      strides=(1,) * av.ndim)
        starts = [b.input((), data.draw(st.sampled_from(INT_DTYPES))) for _ in av.shape]
        return b(P.dynamic_update_slice, x, upd, *starts)
    axes = tuple(sorted(set(data.draw(st.lists(st.integers(0, av.ndim - 1), min_size=1,
                                               max_size=2)))))
    if any(av.shape[a] == 0 for a in axes):
        return x
    batch = tuple(data.draw(st.lists(st.integers(0, 4), max_size=2)))
    idx = b.input(batch + (len(axes),), data.draw(st.sampled_from(INT_DTYPES)))
    rest = tuple(d for i, d in enumerate(av.shape) if i not in axes)
    upd = b.input(batch + rest, av.dtype)
    add = dtype_kind(av.dtype) != "f" and data.draw(st.booleans())
    return b(P.scatter_add if add else P.scatter, x, idx, upd, axes=axes)


def _random_layout(data, b, x):
    av = x.aval
    op = data.draw(st.sampled_from(["transpose", "rev", "slice", "reshape", "expand", "bcast"]))
    if op == "transpose" and av.ndim:
        perm = tuple(data.draw(st.permutations(range(av.ndim))))
        return b(P.transpose, x, permutation=perm)
    if op == "rev" and av.ndim:
        dims = tuple(sorted(set(data.draw(st.lists(st.integers(0, av.ndim - 1), max_size=2)))))
        return b(P.rev, x, dimensions=dims)
    if op == "slice" and av.ndim:
        starts, limits, steps = [], [], []
        for d in av.shape:
            s = data.draw(st.integers(0, d))
            starts.append(s)
            limits.append(data.draw(st.integers(s, d)))
            steps.append(data.draw(st.integers(1, 2)))
        return b(P.slice, x, start_indices=tuple(starts), limit_indices=tuple(limits),
                 strides=tuple(steps))
    if op == "reshape" and av.size:
        return b(P.reshape, x, new_sizes=(av.size,))
    if op == "expand":
        return b(P.expand_dims, x, dimensions=(0,))
    shape = (2, *av.shape)
    return b(P.broadcast_in_dim, x, shape=shape, broadcast_dimensions=tuple(range(1, av.ndim + 1)))


def random_graph_and_args(data):
    """A drawn graph, arguments for it and a copy of them (to check they stay unwritten)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    graph = _random_graph(data, rng)
    args = [values(rng, v.aval.shape, v.aval.dtype) for v in graph.inputs]
    return graph, args, [a.copy() for a in args]


@given(st.data())
def test_random_graphs_match_the_interpreter_exactly(data):
    graph, args, before = random_graph_and_args(data)
    got, want = both(graph, args)
    assert_exact(got, want)
    assert_inputs_kept_and_outputs_fresh(args, before, got)


# --- per-op semantics ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", INT_DTYPES + FLOATS)
def test_division_edge_cases(dtype):
    b = Builder()
    x, y = b.input((64,), dtype), b.input((64,), dtype)
    graph = b.graph(b(P.floor_div, x, y), b(P.rem, x, y), b(P.max, x, y), b(P.min, x, y))
    if dtype_kind(dtype) == "f":
        pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -7.0, np.inf, -np.inf, np.nan], dtype)
    else:
        info = np.iinfo(dtype)
        pool = np.array([0, 1, -1, 7, -7, info.min, info.max], dtype=np.int64).astype(dtype)
    xs, ys = np.meshgrid(pool, pool)
    args = [np.resize(xs.reshape(-1), 64), np.resize(ys.reshape(-1), 64)]
    assert_exact(*both(graph, args))


@pytest.mark.parametrize("src", FLOATS)
def test_float_to_int_conversion_never_traps(src):
    b = Builder()
    x = b.input((8,), src)
    outs = [b(P.convert, x, new_dtype=np.dtype(d)) for d in REALS]
    graph = b.graph(*outs)
    special = np.array([np.nan, np.inf, -np.inf, 1e30 if src != np.float16 else 6e4, -1.5,
                        2.5, 300.7, -0.0], src)
    got = CPU.compile(graph)([special])
    assert [g.dtype for g in got] == REALS
    finite = np.array([-1.5, 2.5, 100.7, -0.0, 3.0, 7.9, -8.9, 0.5], src)
    assert_exact(*both(graph, [finite]))


TRANSCENDENTAL = [P.exp, P.exp2, P.expm1, P.log, P.log1p, P.sqrt, P.cbrt, P.tanh, P.logistic,
                  P.sin, P.cos, P.tan, P.asin, P.acos, P.atan, P.sinh, P.cosh, P.asinh,
                  P.acosh, P.atanh]


def error_in_ulps(value, exact):
    """|value - exact| in units of value's spacing at exact; inf where they differ in NaN/inf."""
    wide = np.longdouble if value.dtype == np.float64 else np.float64
    v, e = value.astype(wide), exact.astype(wide)
    with np.errstate(all="ignore"):
        err = np.abs(v - e) / np.spacing(np.abs(e).astype(value.dtype)).astype(wide)
    same = (v == e) | (np.isnan(v) & np.isnan(e))
    return np.where(same, 0, np.where(np.isfinite(err), err, np.inf))


@pytest.mark.parametrize("dtype", FLOATS)
def test_transcendentals_within_two_ulp(dtype):
    """Within 2 ulp of NumPy; where NumPy's own SIMD loop is further off (its AVX-512 loops on hosts
    that have them), no less accurate than NumPy against a reference in wider precision."""
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(2000) * s for s in (1e-6, 0.3, 1.0, 3.0, 30.0)])
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 88.5, -100.0]])
    x = x.astype(dtype)
    y = (rng.standard_normal(x.size) * 3).astype(dtype)
    b = Builder()
    xv, yv = b.input(x.shape, dtype), b.input(x.shape, dtype)
    outs = [b(p, xv) for p in TRANSCENDENTAL] + [b(P.pow, xv, yv), b(P.atan2, xv, yv)]
    got, want = both(b.graph(*outs), [x, y])
    names = [p.name for p in TRANSCENDENTAL] + ["pow", "atan2"]
    wide = np.longdouble if dtype == np.float64 else np.float64
    extended = np.finfo(wide).nmant > np.finfo(np.float64).nmant or dtype != np.float64
    bad = {}
    for n, g, w in zip(names, got, want, strict=True):
        far = ulp_distance(g, w) > 2
        if far.any() and extended:
            args = (x, y) if n in ("pow", "atan2") else (x,)
            with np.errstate(all="ignore"):
                exact = P.ALL[n].spec.reference(*(a.astype(wide) for a in args))
            ours, numpys = error_in_ulps(g, exact), error_in_ulps(w, exact)
            far &= ~(ours <= np.maximum(numpys, 1.0))
        if far.any():
            i = int(np.argmax(far))
            bad[n] = (x[i], y[i], g[i], w[i], int(ulp_distance(g, w)[i]))
    assert not bad, bad


@pytest.mark.parametrize("dtype", [BF16, np.float16, np.float32, np.float64, np.int32, np.bool_])
def test_sum_and_prod_reductions(dtype):
    rng = np.random.default_rng(2)
    graph = sums_and_products(dtype)
    arg = values(rng, (5, 33, 7), dtype, special=False)
    if dtype_kind(np.dtype(dtype)) == "f":
        arg = (rng.random((5, 33, 7)) + 0.5).astype(dtype)
    got, want = both(graph, [arg])
    if dtype_kind(np.dtype(dtype)) != "f":
        return assert_exact(got, want)
    # float32 accumulation (float16 and bf16 too) of n positive terms, in two orders: each
    # within n 2^-24 of the exact sum or product; bf16 results then round once (1 ulp apart)
    rtol = 2.0 ** -7 + 2 * arg.size * 2.0 ** -24 if dtype == BF16 else 64 * np.finfo(dtype).eps
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol)


def test_reduction_of_empty_axes_and_zero_sized_shapes():
    b = Builder()
    x = b.input((3, 0, 2), np.float32)
    y = b(P.reduce_sum, x, axes=(1,))
    z = b(P.reduce_prod, x, axes=(0, 1))
    w = b(P.reduce_max, x, axes=(0,))
    graph = b.graph(y, z, w, b(P.exp, x))
    assert_exact(*both(graph, [np.zeros((3, 0, 2), np.float32)]))


# --- dot_general ---------------------------------------------------------------------

DOTS = [((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
        ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),
        ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
        ((3, 2, 4), (5, 4, 2), (((2,), (1,)), ((1,), (2,)))),
        ((6,), (6,), (((0,), (0,)), ((), ()))),
        ((3, 4), (5,), (((), ()), ((), ()))),
        ((0, 4), (4, 5), (((1,), (0,)), ((), ()))),
        ((3, 0), (0, 5), (((1,), (0,)), ((), ())))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.uint8, np.bool_])
def test_dot_general(dtype):
    rng = np.random.default_rng(3)
    b = Builder()
    outs, args = [], []
    for ls, rs, dn in DOTS:
        lhs, rhs = b.input(ls, dtype), b.input(rs, dtype)
        post = {"f": P.tanh, "b": P.not_}.get(dtype_kind(np.dtype(dtype)), P.neg)
        outs.append(b(post, b(P.dot_general, lhs, rhs, dimension_numbers=dn)))
        wrap = dtype_kind(np.dtype(dtype)) != "f"          # integer extremes: products wrap
        args += [values(rng, ls, dtype, wrap), values(rng, rs, dtype, wrap)]
    graph = b.graph(*outs)
    got, want = both(graph, args)
    assert not any(isinstance(s, part.Fallback) for s in CPU.compile(graph).plan.steps)
    if dtype_kind(np.dtype(dtype)) != "f":
        return assert_exact(got, want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-5)


# --- runtime properties --------------------------------------------------------------

def test_float32_elementwise_kernel_vectorizes():
    b = Builder()
    x = b.input((1024,), np.float32)
    two = Lit(np.float32(2.0), AbstractArray((), np.float32))
    graph = b.graph(b(P.add, b(P.mul, x, two), two))
    exe = CPU.compile(graph)
    assert "<8 x float>" in exe.ir or "<4 x float>" in exe.ir


def test_compiled_graphs_are_cached_by_structure_and_avals():
    def make(n):
        b = Builder()
        x = b.input((n,), np.float64)
        return b.graph(b(P.exp, x))
    assert CPU.compile(make(7)) is CPU.compile(make(7))
    assert CPU.compile(make(7)) is not CPU.compile(make(8))


def test_outputs_are_fresh_even_for_identity_and_views():
    b = Builder()
    x = b.input((2, 3), np.int32)
    graph = b.graph(x, b(P.reshape, x, new_sizes=(6,)), b(P.transpose, x, permutation=(1, 0)))
    arg = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = CPU.compile(graph)([arg])
    assert_exact(got, [arg, arg.reshape(6), arg.T])
    assert not any(np.shares_memory(g, arg) for g in got)


def test_jit_backend_cpu_end_to_end():
    def f(x):
        return fnp.tanh(0.5 * x + 1) * (1 / (1 + fnp.exp(-x))) + fnp.exp(-x ** 2)
    x = np.random.default_rng(4).standard_normal(1000).astype(np.float32)
    got, want = fc.jit(f, backend="cpu")(x), fc.jit(f, backend="interpreter")(x)
    assert got.dtype == want.dtype == np.float32
    assert ulp_distance(got, want).max() <= 4


def test_literal_arrays_and_broadcast_literals():
    b = Builder()
    x = b.input((3, 70), np.float64)
    table = Lit(np.arange(210, dtype=np.float64).reshape(3, 70))
    seven = Lit(np.float64(7.0), AbstractArray((), np.float64))
    fill = b(P.broadcast_in_dim, seven, shape=(3, 70), broadcast_dimensions=())
    y = b(P.mul, b(P.add, x, table), fill)
    graph = b.graph(y, fill, b(P.transpose, fill, permutation=(1, 0)),
                    b(P.reduce_sum, table, axes=(1,)))
    got, want = both(graph, [values(np.random.default_rng(6), (3, 70), np.float64, False)])
    assert_exact(got, want)
    got[1][0, 0] = -1.0                       # outputs are writable and fresh
    assert CPU.compile(graph)([np.ones((3, 70))])[1][0, 0] == 7.0


@pytest.mark.parametrize("dtype", [BF16, np.float16, np.float32, np.float64, np.int8, np.bool_])
def test_scans_and_arg_reductions(dtype):
    rng = np.random.default_rng(7)
    b = Builder()
    x = b.input((4, 9, 5), dtype)
    outs = []
    for prim in (P.cumsum, P.cumprod, P.cummax, P.cummin):
        for axis in (0, 1, 2):
            outs += [b(prim, x, axis=axis, reverse=rev) for rev in (False, True)]
    for prim in (P.argmax, P.argmin):
        outs += [b(prim, x, axis=axis, index_dtype=np.dtype(np.int64)) for axis in (0, 1, 2)]
    sq = b(P.mul, x, x) if dtype_kind(np.dtype(dtype)) != "b" else x
    outs.append(b(P.cumsum, sq, axis=1, reverse=False))       # fused with its producer
    graph = b.graph(*outs)
    arg = values(rng, (4, 9, 5), dtype)
    if dtype_kind(np.dtype(dtype)) == "f":
        arg[1, 3:5] = arg[1, 2]                                 # ties: the first index wins
        arg = arg.astype(dtype)
    assert_exact(*both(graph, [arg]))


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_concatenate_and_pad(dtype):
    rng = np.random.default_rng(8)
    b = Builder()
    x, y, z = b.input((3, 4), dtype), b.input((3, 0), dtype), b.input((3, 2), dtype)
    fill = b.input((), dtype)
    cat1 = b(P.concatenate, x, y, z, b(P.rev, x, dimensions=(1,)), dimension=1)
    cat0 = b(P.concatenate, b(P.transpose, x, permutation=(1, 0)),
             b(P.transpose, z, permutation=(1, 0)), dimension=0)
    pads = [b(P.pad, x, fill, padding_config=cfg) for cfg in
            (((1, 2, 0), (0, 0, 1)), ((-1, 1, 2), (2, -2, 0)), ((0, 0, 0), (-2, -2, 0)))]
    empty = b(P.pad, y, fill, padding_config=((1, 0, 1), (2, 1, 3)))
    graph = b.graph(cat1, cat0, empty, *pads)
    args = [values(rng, v.aval.shape, dtype) for v in graph.inputs]
    assert_exact(*both(graph, args))
    assert not any(isinstance(s, part.Fallback) for s in CPU.compile(graph).plan.steps)


@pytest.mark.parametrize("dtype", [BF16, np.float16, np.float32, np.float64, np.int32, np.bool_])
def test_scatter_add_with_duplicates_and_updates(dtype):
    rng = np.random.default_rng(9)
    b = Builder()
    x = b.input((5, 3), dtype)
    idx = b.input((7, 1), np.int64)
    upd = b.input((7, 3), dtype)
    start = b.input((), np.int32)
    sa = b(P.scatter_add, x, idx, upd, axes=(0,))
    sc = b(P.scatter, b(P.neg, x) if dtype_kind(np.dtype(dtype)) != "b" else x, idx, upd, axes=(0,))
    du = b(P.dynamic_update_slice, sa, b(P.slice, upd, start_indices=(0, 0),
                                         limit_indices=(2, 3), strides=(1, 1)), start, start)
    graph = b.graph(sa, sc, du)
    args = [values(rng, (5, 3), dtype, False), np.array([[0], [4], [0], [9], [-2], [0], [4]]),
            values(rng, (7, 3), dtype, False), np.asarray(3, np.int32)]
    assert_exact(*both(graph, args))
    assert not any(isinstance(s, part.Fallback) for s in CPU.compile(graph).plan.steps)


def test_big_kernels_split_their_outer_loop_over_threads(monkeypatch):
    from functorch_core.backends.llvm import steps, threads
    monkeypatch.setattr(steps, "PARALLEL_MIN_POINTS", 1)
    monkeypatch.setattr(threads, "workers", 3)
    submitted = []

    class CountingPool:
        def submit(self, fn, *args):
            submitted.append(args[-2:])
            return threads._state.setdefault("test_pool", ThreadPoolExecutor(2)).submit(fn, *args)
    monkeypatch.setattr(threads, "pool", CountingPool)
    b = Builder()
    x = b.input((7, 5, 3), np.float64)
    y = b(P.mul, x, x)
    graph = b.graph(y, b(P.reduce_max, y, axes=(1,)), b(P.cumsum, x, axis=2, reverse=True),
                    b(P.argmin, x, axis=0, index_dtype=np.dtype(np.int32)))
    arg = values(np.random.default_rng(10), (7, 5, 3), np.float64)
    got, want = both(graph, [arg])
    assert_exact(got[:2] + got[3:], want[:2] + want[3:])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
    assert submitted and all(lo < hi for lo, hi in submitted)


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_float_to_uint32_keeps_values_above_int32(src):
    """NumPy converts float -> uint32 through int64 on x86: 3e9 stays 3e9 (it was
    2147483648, the int32 overflow value), -1 wraps to 2^32 - 1."""
    x = np.array([0.0, 1.5, 2.0 ** 31, 3e9, 2.0 ** 32 - 256, -1.0, -2.0], src)
    got = fc.jit(lambda x: x.astype(np.uint32))(x)
    np.testing.assert_array_equal(got, x.astype(np.uint32))
