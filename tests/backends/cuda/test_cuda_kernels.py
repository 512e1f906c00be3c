"""Elementwise and reduction kernels of the cuda backend on every dtype, under numba-cuda's
simulator, against the interpreter; and every kernel rendered for the device (the
warp-shuffle reductions the simulator cannot run included) through PTX and ptxas.

Skipped when numba-cuda is not installed. The simulator is switched on for the whole
process when this module is imported (numba reads ``NUMBA_ENABLE_CUDASIM`` at import).
Simulator limits: math functions are NumPy's/SciPy's there (libdevice's differ by an ulp
or two on a GPU), and reductions take the shared-memory tree to the last lane (the
simulator has no warp shuffles); the device path is only compiled here.
Each test puts many operations into one graph (one kernel launch) to keep the simulator
time small.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if os.environ["NUMBA_ENABLE_CUDASIM"] != "1":
    pytest.skip("numba.cuda was imported without the simulator", allow_module_level=True)

from functorch_core.backends import registry
from functorch_core.backends.cuda import emit, runtime, scalar
from functorch_core.backends.cuda.ptx import compile_elsewhere, ptxas_path
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.planning.plan import Kernel
from functorch_core.ir import primitives as P
from functorch_core.ir.core import AbstractArray, Lit
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st
from prim_cases import CASES as PRIM_CASES
from prim_cases import assert_matches_interpreter, one_graph

CUDA = registry.get("cuda")
DTYPES = scalar.DTYPES
FLOATS = [d for d in DTYPES if d.kind == "f"]
RTOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}
PLANNED = []        # every Kernel step the tests planned: rendered for the device at the end

UNARY = sorted((p for p in P.ALL.values() if p.family == "unary" and p in scalar.PRIMITIVES),
               key=lambda p: p.name)
BINARY = sorted((p for p in P.ALL.values() if p.family == "binary" and p in scalar.PRIMITIVES),
                key=lambda p: p.name)
# (primitive, operand kinds) that stay on the host: scipy.special's functions (named calls;
# complex erf, erfc, erfcx and spence: SciPy's on a host copy),
# what NumPy rejects (bool neg/sign) or special-cases (integer and complex pow), complex
# sign/max/min, the composed complex exp2/expm1/log1p/logistic, and the complex functions
# numba-cuda compiles only with a GPU present (sin, cos, tan, sinh, cosh, tanh, acosh)
HOST = {"bessel_i0e": "f", "bessel_i1e": "f", "bessel_jv": "f", "digamma": "f", "erfcx": "cf",
        "igamma": "f", "igammac": "f", "polygamma": "f", "spence": "cf", "zeta": "f",
        "erf": "c", "erfc": "c",
        "igamma_grad_a": "f", "igamma_hess_a": "f", "bessel_j0": "f",
        "bessel_y0": "f", "bessel_y1": "f", "bessel_yn": "f", "bessel_iv": "f",
        "bessel_ive": "f", "bessel_k0": "f", "bessel_k1": "f", "bessel_kv": "f",
        "bessel_kve": "f",
        "neg": "b", "sign": "bc", "pow": "ciu", "max": "c", "min": "c", "exp2": "c",
        "expm1": "c", "log1p": "c", "logistic": "c",
        **dict.fromkeys(["sin", "cos", "tan", "sinh", "cosh", "tanh", "acosh"], "c")}
COMPARE = (P.eq, P.ne, P.lt, P.le, P.gt, P.ge)


def edge_values(dtype, n, seed=0):
    """``n`` values of ``dtype`` with the edges first: NaN, +-inf, +-0.0, halves, extremes."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 7, 2]
        if dtype.kind == "i":
            edges += [-1, -7, -2]
        rest = rng.integers(max(info.min, -100), min(info.max, 100), n)
        return np.concatenate([np.asarray(edges, dtype), rest.astype(dtype)])[:n]
    edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0,
             -3.0, 0.25, 0.999, 40000.0, -70000.0, 3e9, -3e9, 1e-30, 2 ** 31, 2 ** 32]
    rest = rng.standard_normal(n) * 4
    if dtype.kind == "c":       # every real edge with a few imaginary ones
        edges = [complex(r, i) for i in (0.0, -0.0, 1.5, np.nan, -np.inf) for r in edges]
        rest = rest + 1j * rng.standard_normal(n) * 4
        edges = [edges[(7 * k) % len(edges)] for k in range(len(edges))]
    with np.errstate(over="ignore"):
        return np.concatenate([np.asarray(edges), rest]).astype(dtype)[:n]


def check(graph, args, names=None, rtol=None, ptx=True):
    """Run ``graph`` on the simulator and the interpreter; compare every output; keep its
    kernels for the PTX test (``ptx``: the random chains reuse the renderings checked)."""
    plan, _, host = runtime.sources(graph)
    if ptx:
        PLANNED.extend(s for s in plan.steps if isinstance(s, Kernel))
    assert host == [], host
    got = CUDA.compile(graph)(list(args))
    with np.errstate(all="ignore"):
        want = run_graph(graph, list(args))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        w = np.asarray(w)
        what = names[i] if names else i
        assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape)
        if w.dtype.kind in "fc":
            parts = [(g, w)] if w.dtype.kind == "f" else [(g.real, w.real), (g.imag, w.imag)]
            for gp, wp in parts:
                tol = RTOL[wp.dtype] if rtol is None else rtol
                np.testing.assert_allclose(gp, wp, rtol=tol, atol=0, equal_nan=True,
                                           err_msg=str(what))
                # the sign of zeros counts too
                np.testing.assert_array_equal(np.signbit(gp[wp == 0]), np.signbit(wp[wp == 0]),
                                              err_msg=f"{what}: sign of zero")
        else:
            np.testing.assert_array_equal(g, w, err_msg=str(what))


def test_the_elementwise_table_has_no_gap_but_the_listed_ones():
    gaps = {}
    for p in P.ALL.values():
        if p.family not in ("unary", "binary"):
            continue
        for dt in DTYPES:
            avals = [AbstractArray((2,), dt)] * (2 if p.family == "binary" else 1)
            try:
                p.shape_rule(*avals, **({"order": 1} if p is P.polygamma else {}))
            except TypeError:       # the primitive does not take this dtype
                continue
            if scalar.gap(p, dt) is not None:
                gaps[p.name] = "".join(sorted(set(gaps.get(p.name, "") + dt.kind)))
    assert gaps == HOST


def test_the_primitive_case_table_matches_the_interpreter():
    """Every row of tests/prim_cases.py at two sizes in one graph on the simulator (the
    steps the device cannot run on the host, as in use), against the interpreter."""
    graph, args, names = one_graph(PRIM_CASES, np.random.default_rng(12), (3, 2, 3),
                                    (2, 1, 4))
    got = CUDA.compile(graph)(list(args))
    with np.errstate(all="ignore"):
        want = run_graph(graph, list(args))
    assert_matches_interpreter(got, want, names)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_unary_op_on_every_dtype(dtype):
    prims = [p for p in UNARY if scalar.gap(p, dtype) is None]
    b = Builder()
    x = b.input((48,), dtype)
    graph = b.graph(*(b(p, x) for p in prims))
    check(graph, [edge_values(dtype, 48)], [p.name for p in prims])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_binary_op_on_every_dtype_over_all_pairs_of_edges(dtype):
    # an outer product: both operands broadcast by index arithmetic, every pair of edges
    prims = [p for p in BINARY if scalar.gap(p, dtype) is None]
    b = Builder()
    x, y = b.input((20, 1), dtype), b.input((20,), dtype)
    xb = b(P.broadcast_in_dim, b(P.reshape, x, new_sizes=(20,)), shape=(20, 20),
           broadcast_dimensions=(0,))
    yb = b(P.broadcast_in_dim, y, shape=(20, 20), broadcast_dimensions=(1,))
    graph = b.graph(*(b(p, xb, yb) for p in prims))
    xs = edge_values(dtype, 20, seed=1)
    check(graph, [xs.reshape(20, 1), xs[::-1].copy()], [p.name for p in prims])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_select_comparisons_and_literal_operands(dtype):
    b = Builder()
    x, y = b.input((5, 7), dtype), b.input((5, 7), dtype)
    lit = Lit(np.asarray(edge_values(dtype, 9)[8], dtype), AbstractArray((), dtype))
    compare = [p for p in COMPARE if scalar.gap(p, dtype) is None]
    outs = [b(p, x, y) for p in compare] + [b(P.eq, x, lit)]
    outs.append(b(P.select, b(compare[-1], x, y), x, y))
    outs.append(b(P.select, b(P.ne, x, lit), lit, y))
    check(b.graph(*outs), [edge_values(dtype, 35, 3).reshape(5, 7),
                           edge_values(dtype, 35, 4)[::-1].reshape(5, 7).copy()])


@pytest.mark.parametrize("src", DTYPES, ids=str)
def test_convert_between_every_pair_of_dtypes(src):
    b = Builder()
    x = b.input((40,), src)
    graph = b.graph(*(b(P.convert, x, new_dtype=d) for d in DTYPES))
    check(graph, [edge_values(src, 40, 5)], [f"{src}->{d}" for d in DTYPES])


def test_iota_of_every_numeric_dtype():
    b = Builder()
    dts = [d for d in DTYPES if d.kind != "b"]
    graph = b.graph(*(b(P.iota, dtype=d, shape=(3, 300), dimension=1) for d in dts))
    check(graph, [], [str(d) for d in dts])


# -- reductions ---------------------------------------------------------------------

REDUCTIONS = (P.reduce_sum, P.reduce_prod, P.reduce_max, P.reduce_min)


def _reduction_graph(dtype, shape, axes, arg_axis):
    b = Builder()
    x = b.input(shape, dtype)
    outs, names = [], []
    for p in REDUCTIONS:
        if emit.reduction_gap(p, dtype) is None:
            outs.append(b(p, x, axes=axes))
            names.append(p.name)
    for p, t in ((P.argmax, np.int32), (P.argmin, np.int64)):
        if emit.reduction_gap(p, dtype) is None:
            outs.append(b(p, x, axis=arg_axis, index_dtype=np.dtype(t)))
            names.append(p.name)
    return b.graph(*outs), names


def _reduction_values(dtype, shape, seed):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype.kind == "f":       # NaN rows, ties, infinities; products stay finite
        x = rng.integers(-3, 4, n).astype(np.float64) * 0.5
        x[rng.integers(0, n, max(1, n // 6))] = np.nan
        x[rng.integers(0, n, max(1, n // 10))] = -np.inf
        x[rng.integers(0, n, max(1, n // 10))] = np.inf
        return x.astype(dtype).reshape(shape)
    if dtype.kind == "c":       # near the unit circle: long products stay finite
        x = np.exp(1j * rng.uniform(-3, 3, n)) * rng.uniform(0.8, 1.25, n)
        x[rng.integers(0, n)] = complex(np.nan, 1.0)
        return x.astype(dtype).reshape(shape)
    return edge_values(dtype, n, seed).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_reduction_on_every_dtype_block_and_row_kernels(dtype):
    # axis 1 of three: the block-per-output kernel; the last axis: one (simulated) warp
    # per row; both see ties, NaN (first NaN wins argmax/argmin) and integer extremes
    for shape, axes, seed in (((3, 20, 4), (1,), 6), ((9, 13), (1,), 7)):
        graph, names = _reduction_graph(dtype, shape, axes, axes[0])
        plan, rendered, _ = runtime.sources(graph)
        (k,) = [s for s in plan.steps if isinstance(s, Kernel)]
        lanes = int(rendered[id(k)][0].text.split("lane = tid % ")[1].split("\n")[0])
        assert lanes == (emit.SIM_ROW_LANES if axes == (len(shape) - 1,) else emit.SIM_BLOCK)
        check(graph, [_reduction_values(dtype, shape, seed)], names,
              rtol=1e-2 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int8),
                                   np.dtype(np.bool_), np.dtype(np.complex64)], ids=str)
def test_a_long_reduction_in_parts_and_a_deterministic_second_pass(monkeypatch, dtype):
    monkeypatch.setattr(emit, "PART_POINTS", 64)
    graph, names = _reduction_graph(dtype, (2, 300), (1,), 1)
    args = [_reduction_values(dtype, (2, 300), 8)]
    check(graph, args, names, rtol=1e-5)
    run = CUDA.compile(graph)
    assert len(run.kernel_sources) == 1 + len(names) and run.kernel_sources[0].scratch
    for a, c in zip(run(args), CUDA.compile(graph)(args), strict=True):
        np.testing.assert_array_equal(a, c)


def test_bool_reductions_are_any_and_all():
    b = Builder()
    x = b.input((4, 6), np.bool_)
    graph = b.graph(*(b(p, x, axes=(0, 1) if i % 2 else (1,))
                      for i, p in enumerate(REDUCTIONS * 2)))
    xs = np.zeros((4, 6), bool)
    xs[1, 2] = True
    xs[2] = True
    check(graph, [xs])


# -- random elementwise chains --------------------------------------------------------

def _chain_ops(dtype):
    return [p for p in (*UNARY, *BINARY) if scalar.gap(p, dtype) is None]


def _within_uint32(b, x):
    """``x`` where it converts to uint32 with a defined value, else 0. NaN and values
    out of range have none: NumPy gives what its loop happens to (its contiguous SIMD loop
    and its strided loop differ, and the interpreter's operand may be either)."""
    dt, shape = x.aval.dtype, x.aval.shape

    def full(value):
        return b(P.broadcast_in_dim, Lit(np.asarray(value, dt), AbstractArray((), dt)),
                 shape=shape, broadcast_dimensions=())
    with np.errstate(over="ignore"):        # float16: 2**32 is inf, above every finite value
        inside = b(P.and_, b(P.ge, x, full(0)), b(P.lt, x, full(2.0 ** 32)))
    return b(P.select, inside, x, full(0))


@settings(deadline=None)
@given(st.data())
def test_random_elementwise_chains_of_the_new_ops(data):
    dtype = data.draw(st.sampled_from(DTYPES), "dtype")
    b = Builder()
    pool = [b.input((3, 5), dtype), b.input((5,), dtype)]
    pool[1] = b(P.broadcast_in_dim, pool[1], shape=(3, 5), broadcast_dimensions=(1,))
    for _ in range(data.draw(st.integers(1, 6), "n_ops")):
        x = data.draw(st.sampled_from(pool))
        kind = data.draw(st.sampled_from(["op", "op", "op", "convert", "select"]))
        dt = x.aval.dtype
        if kind == "convert":
            new = data.draw(st.sampled_from(DTYPES))
            if dt.kind == "f" and new == np.uint32:
                x = _within_uint32(b, x)
            pool.append(b(P.convert, x, new_dtype=new))
        elif kind == "select":
            same = [y for y in pool if y.aval.dtype == dt]
            cmp = P.le if dt.kind != "c" else P.ne
            pool.append(b(P.select, b(cmp, x, data.draw(st.sampled_from(same))), x,
                          data.draw(st.sampled_from(same))))
        else:
            ops = _chain_ops(dt)
            if not ops:
                continue
            p = data.draw(st.sampled_from(ops))
            if p.family == "unary":
                pool.append(b(p, x))
            else:
                pool.append(b(p, x, data.draw(st.sampled_from(
                    [y for y in pool if y.aval.dtype == dt]))))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000), "seed"))
    pick = rng.permutation(edge_values(dtype, 60, rng.integers(1000)))
    args = [pick[:15].reshape(3, 5), pick[15:20].copy()]
    check(b.graph(*pool[2:] or pool[:1]), args, rtol=2e-3 if dtype.kind == "f" else None,
          ptx=False)


# -- PTX for the device ------------------------------------------------------------------

def _bench_kernels():
    """The benchmark shapes: layernorm's row statistics and softmax's max/sum over
    4096x1024 float32 (row-wise kernels), a full 16M float32 sum (parts + second pass)."""
    def stats(shape, axes):
        b = Builder()
        x = b.input(shape, np.float32)
        e = b(P.exp, x)
        graph = b.graph(b(P.reduce_sum, x, axes=axes), b(P.reduce_sum, b(P.mul, x, x), axes=axes),
                        b(P.reduce_max, x, axes=axes), b(P.reduce_sum, e, axes=axes),
                        b(P.argmax, x, axis=axes[-1], index_dtype=np.dtype(np.int32)))
        plan, _, host = runtime.sources(graph)
        assert host == []
        return [s for s in plan.steps if isinstance(s, Kernel)]
    return {"rowwise_4096x1024_f32": stats((4096, 1024), (1,)),
            "block_64x4096x8_f32": stats((64, 4096, 8), (1,)),
            "full_16M_f32": stats((1 << 24,), (0,))}


def test_every_rendered_kernel_compiles_to_ptx_and_assembles():
    """compile_ptx + ptxas for sm_80 and sm_90 of the device rendering (warp shuffles) of
    every kernel the tests above planned, plus the benchmark reductions; prints registers
    and spills per benchmark kernel."""
    try:
        import nvidia.cuda_nvcc
        import nvidia.cuda_nvrtc  # noqa: F401
    except ImportError:
        pytest.skip("nvidia-cuda-nvcc-cu12 / nvidia-cuda-nvrtc-cu12 are not installed")
    if not PLANNED:
        test_every_reduction_on_every_dtype_block_and_row_kernels(np.dtype(np.float32))
    named = [(name, s) for name, ks in _bench_kernels().items()
             for k in ks for s in emit.render(k, simulated=False)]
    sources = {s.text: (None, s) for k in PLANNED for s in emit.render(k, simulated=False)}
    sources.update({s.text: (name, s) for name, s in named})
    assert any("shfl_down_sync" in t for t in sources)
    records = compile_elsewhere([s for _, s in sources.values()])
    assert len(records) == 2 * len(sources)
    names = [n for n, _ in sources.values()]
    for r in records:
        if names[r["kernel"]] is not None:
            print(f"{names[r['kernel']]} kernel {r['kernel']} {r['cc']}: {r['registers']} "
                  f"registers, spills {r['spill_stores']}/{r['spill_loads']} bytes")
    if ptxas_path() is not None:
        assert all(r["registers"] is not None and r["spill_stores"] == 0 for r in records)
