"""The cuda backend's structural kernels (``backends/cuda/indexing.py``) and named
array-module calls (``backends/cuda/calls.py``) under numba-cuda's simulator, against the
interpreter; the last test compiles every kernel they generated to PTX for sm_80/sm_90
and assembles it with ptxas.

Skipped without numba-cuda. The simulator is switched on for the whole process at import
(numba reads ``NUMBA_ENABLE_CUDASIM`` then). Simulator limits: kernels run as Python
threads over NumPy arrays (small shapes only), atomics are serialized by a lock (so the
atomic ``scatter_add`` happens to be deterministic here, never on a GPU), and the named
calls run NumPy/SciPy rather than CuPy/cupyx.
"""

from __future__ import annotations

import os
import re

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if os.environ["NUMBA_ENABLE_CUDASIM"] != "1":
    pytest.skip("numba.cuda was imported without the simulator", allow_module_level=True)

from backend_checks import assert_like_the_interpreter
from functorch_core.backends import determinism, registry
from functorch_core.backends.cuda import runtime
from functorch_core.backends.cuda.ptx import compile_elsewhere, ptxas_path
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp

CUDA = registry.get("cuda")
GENERATED = []      # every kernel source the tests below ran, for the PTX test
F32, F64, I32 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)


def check(graph, args, exact=False, rtol=None, record=True):
    """Run ``graph`` on the cuda backend and the interpreter: same dtypes, shapes and
    values (bit for bit where ``exact``). ``record``: keep its kernels for the PTX test
    (the random graphs' kernels are variants of the ones recorded)."""
    run = CUDA.compile(graph)
    if record:
        GENERATED.extend(run.kernel_sources)

    def tol(dtype):
        if exact or dtype.kind not in "fc":
            return None
        return rtol or (1e-5 if dtype in (np.float32, np.complex64) else 1e-11)
    assert_like_the_interpreter(run, graph, args, tol)
    return run


def structural(run):
    return [s for s in run.kernel_sources if "cuda.grid" in s.text]


@pytest.fixture
def deterministic():
    before = dict(determinism.state)
    determinism.state["enabled"] = True
    yield
    determinism.state.update(before)


def _gather_scatter_graph(dtype, idx_dtype=np.int32):
    b = Builder()
    x, i = b.input((4, 5, 2), dtype), b.input((3, 2, 2), idx_dtype)
    u = b.input((3, 2, 5), dtype)
    g = b(P.gather, x, i, axes=(0, 2))
    return b.graph(g, b(P.scatter_add, x, i, u, axes=(0, 2)), b(P.scatter, x, i, u, axes=(0, 2)))


# duplicates (the last write wins, adds accumulate), out of range and negative (clamped)
_IDX = np.array([[[0, 1], [3, 0]], [[0, 1], [-5, 9]], [[3, 0], [0, 1]]])


@pytest.mark.parametrize("dtype", [F32, np.dtype(np.int64), np.dtype(np.float16),
                                   np.dtype(np.complex64)], ids=str)
def test_gather_scatter_and_scatter_add_with_duplicates(dtype):
    rng = np.random.default_rng(0)
    graph = _gather_scatter_graph(dtype, np.int8)
    x = (rng.standard_normal((4, 5, 2)) * 4 + (1j if dtype.kind == "c" else 0)).astype(dtype)
    u = (rng.standard_normal((3, 2, 5)) * 4).astype(dtype)
    run = check(graph, [x, _IDX.astype(np.int8), u], rtol=2e-3 if dtype == np.float16 else None)
    assert run.host_only == [] and len(structural(run)) >= 3


def test_deterministic_scatter_add_is_numpys_add_at_bit_for_bit(deterministic):
    rng = np.random.default_rng(1)
    graph = _gather_scatter_graph(F32)
    x = rng.standard_normal((4, 5, 2)).astype(np.float32)
    u = (rng.standard_normal((3, 2, 5)) * 1e4).astype(np.float32)
    check(graph, [x, _IDX.astype(np.int32), u], exact=True)


def test_gather_without_axes_and_into_rank_zero():
    b = Builder()
    x, i = b.input((2, 3), F64), b.input((4, 0), I32)
    s, j = b.input((), F64), b.input((3, 0), I32)
    u = b.input((3,), F64)
    graph = b.graph(b(P.gather, x, i, axes=()), b(P.scatter_add, s, j, u, axes=()),
                    b(P.scatter, s, j, u, axes=()))
    check(graph, [np.arange(6.0).reshape(2, 3), np.zeros((4, 0), np.int32), np.float64(2.5),
                  np.zeros((3, 0), np.int32), np.array([1.0, 2.0, 4.0])])


def test_dynamic_slices_clamp_device_indices():
    b = Builder()
    x, up = b.input((5, 4), F64), b.input((2, 3), F64)
    i0, i1 = b.input((), np.int8), b.input((), np.int64)
    graph = b.graph(b(P.dynamic_slice, x, i0, i1, slice_sizes=(2, 3)),
                    b(P.dynamic_update_slice, x, up, i0, i1))
    rng = np.random.default_rng(2)
    for starts in [(4, -3), (1, 1), (-1, 7)]:
        run = check(graph, [rng.standard_normal((5, 4)), rng.standard_normal((2, 3)),
                            np.int8(starts[0]), np.int64(starts[1])], exact=True)
    assert run.host_only == []


@pytest.mark.parametrize("config", [((1, -2, 1), (-1, 2, 0)), ((0, 0, 2), (2, 1, 1)),
                                    ((-3, -1, 0), (0, 0, 0))], ids=str)
def test_pad_with_negative_and_interior_padding(config):
    b = Builder()
    x, v = b.input((5, 3), F32), b.input((), F32)
    graph = b.graph(b(P.pad, x, v, padding_config=config))
    check(graph, [np.arange(15, dtype=np.float32).reshape(5, 3), np.float32(-7)], exact=True)


def test_concatenate_with_an_empty_operand_and_bool():
    b = Builder()
    x, e, y = b.input((2, 3), np.bool_), b.input((2, 0), np.bool_), b.input((2, 1), np.bool_)
    graph = b.graph(b(P.concatenate, x, e, y, x, dimension=1))
    rng = np.random.default_rng(3)
    check(graph, [rng.random((2, 3)) < 0.5, np.zeros((2, 0), bool), rng.random((2, 1)) < 0.5])


@pytest.mark.parametrize("dtype", [F32, np.dtype(np.int32), np.dtype(np.bool_),
                                   np.dtype(np.float16)], ids=str)
def test_cumulative_ops_both_directions(dtype):
    b = Builder()
    x = b.input((3, 4), dtype)
    prims = [P.cumsum, P.cumprod] + ([P.cummax, P.cummin] if dtype.kind != "b" else [])
    graph = b.graph(*(b(p, x, axis=a, reverse=r) for p in prims for a in (0, 1)
                      for r in (False, True)))
    rng = np.random.default_rng(4)
    x = rng.random((3, 4)) < 0.5 if dtype.kind == "b" else \
        (rng.standard_normal((3, 4)) * 3).astype(dtype)
    if dtype.kind == "f":
        x[1, 2] = np.nan
    # one thread per line, in NumPy's order; float16 sums in float32
    run = check(graph, [x], exact=dtype != np.float16, rtol=4e-3)
    assert run.host_only == []


@pytest.mark.parametrize("dtype", [F32, np.dtype(np.int64), np.dtype(np.bool_),
                                   np.dtype(np.float16)], ids=str)
def test_argmax_argmin_first_hit_and_nan(dtype):
    b = Builder()
    x = b.input((3, 5), dtype)
    graph = b.graph(*(b(p, x, axis=a, index_dtype=np.dtype(t)) for p in (P.argmax, P.argmin)
                      for a, t in ((0, np.int32), (1, np.int64))))
    rng = np.random.default_rng(12)
    x = rng.integers(0, 3, (3, 5)).astype(dtype)       # ties
    if dtype.kind == "f":
        x[1, 3] = x[2, 0] = np.nan
    run = check(graph, [x])
    assert run.host_only == []


def test_threefry_is_bit_exact_with_rank_zero_keys():
    b = Builder()
    k0, k1 = b.input((), np.uint32), b.input((), np.uint32)
    x0, x1 = b.input((7,), np.uint32), b.input((7,), np.uint32)
    graph = b.graph(*b(P.threefry2x32, k0, k1, x0, x1))
    ctr = np.array([0, 1, 2, 3, 0xFFFFFFFF, 0x80000000, 12345], np.uint32)
    check(graph, [np.uint32(0x12345678), np.uint32(0xFFFFFFF0), ctr, ctr[::-1].copy()],
          exact=True)
    # Random123's known-answer vector for threefry2x32_20 with key and counter all ones
    ones = np.full(1, 0xFFFFFFFF, np.uint32)
    b = Builder()
    graph = b.graph(*b(P.threefry2x32, *(b.input((1,), np.uint32) for _ in range(4))))
    y0, y1 = CUDA.compile(graph)([ones] * 4)
    assert (int(y0[0]), int(y1[0])) == (0x1CB996FC, 0xBB002BE7)


WINDOWS = [dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (1, 2)),
                base_dilation=(1, 2), window_dilation=(2, 1)),
           dict(window_dimensions=(3, 1), window_strides=(2, 1), padding=((0, 0), (0, 0)),
                base_dilation=(1, 1), window_dilation=(1, 1))]


@pytest.mark.parametrize("window", WINDOWS, ids=["dilated-padded", "plain"])
@pytest.mark.parametrize("dtype", [F32, np.dtype(np.float16)], ids=str)
def test_window_reductions_and_select_and_scatter_gather(window, dtype):
    b = Builder()
    x = b.input((5, 6), dtype)
    outs = [b(p, x, **window) for p in (P.reduce_window_sum, P.reduce_window_max,
                                        P.reduce_window_min)]
    ct, tg = b.input(outs[0].aval.shape, dtype), b.input((5, 6), dtype)
    graph = b.graph(*outs, b(P.select_and_gather_add, tg, x, select="max", **window),
                    b(P.select_and_scatter_add, ct, x, select="min", **window),
                    b(P.select_and_scatter_add, ct, x, select="max", **window))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 6)).astype(dtype)
    x[2, 3], x[0, 0] = np.nan, 1.0
    x[0, 1] = 1.0                       # ties: the first one wins
    run = check(graph, [x, rng.standard_normal(outs[0].aval.shape).astype(dtype), -x],
                rtol=4e-3 if dtype == np.float16 else None)
    assert run.host_only == []


CONVS = [
    dict(ls=(2, 4, 7), rs=(6, 2, 3), window_strides=(2,), padding=((1, 2),),
         lhs_dilation=(2,), rhs_dilation=(1,), dimension_numbers=((0, 1, 2),) * 3,
         feature_group_count=2, batch_group_count=1),
    dict(ls=(4, 3, 5, 6), rs=(6, 3, 2, 2), window_strides=(1, 2), padding=((0, -1), (1, 1)),
         lhs_dilation=(1, 1), rhs_dilation=(2, 1), dimension_numbers=((0, 1, 2, 3),) * 3,
         feature_group_count=1, batch_group_count=2),
    dict(ls=(2, 5, 6, 3), rs=(2, 2, 3, 4), window_strides=(1, 1), padding=((1, 1), (0, 0)),
         lhs_dilation=(1, 1), rhs_dilation=(1, 1),
         dimension_numbers=((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)),
         feature_group_count=1, batch_group_count=1),
]


@pytest.mark.parametrize("conv", CONVS, ids=["1d-groups-lhs-dilated", "batch-groups",
                                             "nhwc-hwio"])
@pytest.mark.parametrize("dtype", [F64, np.dtype(np.float16), np.dtype(np.int32)], ids=str)
def test_conv_general_dilated_variants(conv, dtype):
    conv = dict(conv)
    b = Builder()
    lhs, rhs = b.input(conv.pop("ls"), dtype), b.input(conv.pop("rs"), dtype)
    graph = b.graph(b(P.conv_general_dilated, lhs, rhs, **conv))
    rng = np.random.default_rng(6)
    args = [(rng.standard_normal(v.aval.shape) * 3).astype(dtype) for v in (lhs, rhs)]
    run = check(graph, args, rtol=2e-3 if dtype == np.float16 else None)
    assert run.host_only == []


def test_lu_pivots_to_permutation():
    b = Builder()
    piv = b.input((3, 4), I32)
    graph = b.graph(b(P.lu_pivots_to_permutation, piv, permutation_size=6))
    check(graph, [np.array([[2, 3, 3, 5], [0, 1, 2, 3], [5, 5, 5, 5]], np.int32)])


# -- named calls ---------------------------------------------------------------------

def test_sort_multi_operand_with_nans_and_ties():
    b = Builder()
    k1, k2, v = b.input((3, 6), F32), b.input((3, 6), I32), b.input((3, 6), F64)
    graph = b.graph(*b(P.sort, k1, k2, v, dimension=1, num_keys=2),
                    *b(P.sort, k1, v, dimension=0, num_keys=1))
    rng = np.random.default_rng(7)
    a = rng.integers(0, 3, (3, 6)).astype(np.float32)
    a[0, 2] = a[1, 4] = np.nan
    run = check(graph, [a, rng.integers(0, 2, (3, 6)).astype(np.int32),
                        rng.standard_normal((3, 6))], exact=True)
    assert run.host_only == [] and run.kernel_sources == []


@pytest.mark.parametrize("kind,shape,lengths", [("fft", (2, 8), (8,)), ("ifft", (3, 2, 4), (2, 4)),
                                                ("rfft", (2, 8), (8,)), ("irfft", (2, 5), (8,))])
def test_fft_kinds(kind, shape, lengths):
    dtype = np.dtype(np.float32) if kind == "rfft" else np.dtype(np.complex128)
    b = Builder()
    x = b.input(shape, dtype)
    graph = b.graph(b(P.fft, x, fft_type=kind, fft_lengths=lengths))
    rng = np.random.default_rng(8)
    v = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.kind == "c" else 0)
    check(graph, [np.asarray(v, dtype)], rtol=1e-5 if kind == "rfft" else 1e-10)


def _spd(rng, n, batch=()):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_linalg_calls_eig_included():
    b = Builder()
    a, c = b.input((2, 4, 4), F64), b.input((2, 4, 3), F64)
    lu = b(P.lu, a)
    outs = [b(P.cholesky, a), b(P.cholesky, a, upper=True), *b(P.qr, c, full_matrices=True),
            *b(P.qr, c, full_matrices=False),
            *b(P.svd, c, full_matrices=False, compute_uv=True),
            *b(P.svd, c, full_matrices=True, compute_uv=False), *b(P.eigh, a, lower=False),
            b(P.solve, a, c), b(P.det, a), *b(P.slogdet, a), *lu,
            b(P.triangular_solve, a, c, left_side=True, lower=True, transpose_a=True,
              conjugate_a=False, unit_diagonal=False),
            b(P.triangular_solve, a, b(P.transpose, c, permutation=(0, 2, 1)), left_side=False,
              lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=True),
            *b(P.eig, a, compute_v=False), *b(P.eig, a, compute_v=True)]
    graph = b.graph(*outs)
    rng = np.random.default_rng(9)
    run = check(graph, [_spd(rng, 4, (2,)), rng.standard_normal((2, 4, 3))], rtol=1e-8)
    assert run.host_only == []


def test_a_failed_factorization_names_the_primitive_and_shape():
    b = Builder()
    a = b.input((3, 3), F64)
    run = CUDA.compile(b.graph(b(P.cholesky, a)))
    with pytest.raises(np.linalg.LinAlgError, match=r"cholesky: .*\(3, 3\)"):
        run([-np.eye(3)])


SPECIAL_ARGS = {1: [np.array([0.3, 1.5, 4.0, -0.5])], 2: [np.array([0.5, 2.0, 3.0, 1.2]),
                                                           np.array([0.7, 1.0, 2.5, 3.0])]}


@pytest.mark.parametrize("prim", sorted(runtime.calls.SPECIAL, key=lambda p: p.name),
                         ids=lambda p: p.name)
def test_special_function_calls(prim):
    b = Builder()
    if prim is P.betainc:
        ins = [b.input((4,), F64) for _ in range(3)]
        args = [np.array([0.5, 2.0, 3.0, 1.2]), np.array([1.5, 1.0, 0.5, 2.0]),
                np.array([0.1, 0.5, 0.9, 0.3])]
        out = b(prim, *ins)
    elif prim is P.polygamma:
        ins = [b.input((4,), F64)]
        args = [np.array([0.3, 1.5, 4.0, 2.5])]
        out = b(prim, *ins, order=2)
    else:
        arity = 2 if prim.family == "binary" else 1
        ins = [b.input((4,), F64) for _ in range(arity)]
        args = SPECIAL_ARGS[arity]
        out = b(prim, *ins)
    run = check(b.graph(out), args, rtol=1e-12)
    assert run.host_only == []


def test_special_functions_cupy_lacks_run_on_the_host_by_name():
    b = Builder()
    x, v = b.input((4,), F64), b.input((4,), F64)
    graph = b.graph(b(P.spence, x), b(P.bessel_jv, v, x))
    run = check(graph, [np.array([0.3, 1.5, 4.0, 2.0]), np.array([0.5, 1.0, 2.5, 0.0])],
                rtol=1e-12)
    assert [h.split(":")[0] for h in run.host_only] == ["spence", "bessel_jv"]


def test_complex_special_functions_run_on_the_host_by_name():
    """CuPy's erf, erfc and erfcx are float only: complex operands take SciPy's on a host
    copy (named), as spence and jv do; real ones stay named calls."""
    b = Builder()
    z, v, x = b.input((4,), np.complex128), b.input((4,), F64), b.input((4,), F64)
    graph = b.graph(b(P.erf, z), b(P.erfc, z), b(P.erfcx, z), b(P.spence, z),
                    b(P.bessel_jv, v, z), b(P.erf, x))
    zs = np.array([0.3 + 1j, -1.5 - 0.5j, 4.0 + 0j, 2.0 - 3j])
    run = check(graph, [zs, np.array([0.5, 1.0, 2.5, 0.0]), zs.real], rtol=1e-12)
    assert [h.split(":")[0] for h in run.host_only] == ["erf", "erfc", "erfcx", "spence",
                                                        "bessel_jv"]
    assert "no complex loop" in run.host_only[0]


def test_graph_valued_calls_run_inner_graphs_on_the_device():
    inner = Builder()
    p, q = inner.input((3,), F64), inner.input((), np.int32)
    inner_graph = inner.graph(inner(P.cumsum, p, axis=0, reverse=True),
                              inner(P.dynamic_slice, p, q, slice_sizes=(2,)))
    b = Builder()
    x, i = b.input((3,), F64), b.input((), np.int32)
    graph = b.graph(*b(P.call, x, i, graph=inner_graph, name="f"),
                    *b(P.custom_jvp_call, x, i, graph=inner_graph, name="g"))
    check(graph, [np.array([1.0, 2.0, 4.0]), np.int32(5)], exact=True)


def test_cond_while_scan_and_their_gradients_through_jit():
    def f(x, n):
        def body(c, xi):
            c = fnp.tanh(c + xi)
            return c, fnp.cumsum(c * xi)
        carry, ys = fc.lax.scan(body, x[0], x)
        big = fc.lax.cond(fnp.sum(carry) > 0, lambda v: v * 2.0, lambda v: v - 1.0, ys)
        count = fc.lax.while_loop(lambda v: v[0] < n, lambda v: (v[0] + 1, v[1] * 1.5),
                                  (0, fnp.sum(big)), max_steps=8)
        return count[1]
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 3))
    got = fc.jit(f, backend="cuda")(x, 3)
    np.testing.assert_allclose(got, f(x, 3), rtol=1e-12)
    loss = fc.grad(lambda v: f(v, 2))
    np.testing.assert_allclose(fc.jit(loss, backend="cuda")(x), loss(x), rtol=1e-10)
    graph = fc.make_graph(f)(x, 3)
    assert {e.prim for e in graph.eqns} >= {P.scan, P.cond, P.while_loop}
    assert runtime.split_for_device(graph)[1] == []


def test_vmap_and_grad_of_a_jitted_conv_net_and_a_sort():
    def net(w, x):          # x: (N, C, W), w: (O, C, K)
        h = fc.lax.conv_general_dilated(x, w, (1,), ((1, 1),))
        h = fnp.sort(fnp.tanh(h), axis=-1)
        return fnp.sum(fnp.cumsum(h, axis=-1) * h)
    rng = np.random.default_rng(11)
    w, x = rng.standard_normal((3, 2, 3)), rng.standard_normal((2, 2, 5))
    g = fc.jit(fc.grad(net), backend="cuda")(w, x)
    np.testing.assert_allclose(g, fc.grad(net)(w, x), rtol=1e-10)
    per = fc.vmap(fc.grad(net), in_dims=(None, 0))
    xs = x[:, None]
    np.testing.assert_allclose(fc.jit(per, backend="cuda")(w, xs), per(w, xs), rtol=1e-10)
    graph = fc.make_graph(fc.grad(net))(w, x)
    assert runtime.split_for_device(graph)[1] == []


def test_grad_and_vmap_of_jitted_indexing():
    """gather's transpose is a scatter_add, pad's a negative pad, concatenate's slices."""
    def f(x, idx):
        y = fnp.concatenate([fnp.pad(x, ((1, 2), (0, 0))), x[:1] * 2.0], axis=0)
        return fnp.sum(fnp.take(y, idx, axis=0) ** 2) + fnp.sum(fnp.cumprod(y, axis=1))
    rng = np.random.default_rng(13)
    x, idx = rng.standard_normal((3, 2)), np.array([0, 2, 2, 5, 1])
    g = fc.grad(f)
    np.testing.assert_allclose(fc.jit(g, backend="cuda")(x, idx), g(x, idx), rtol=1e-10)
    xs = rng.standard_normal((4, 3, 2))
    per = fc.vmap(g, in_dims=(0, None))
    np.testing.assert_allclose(fc.jit(per, backend="cuda")(xs, idx), per(xs, idx), rtol=1e-10)
    graph = fc.make_graph(per)(xs, idx)
    assert {e.prim for e in graph.eqns} >= {P.gather, P.scatter_add, P.pad, P.concatenate}
    assert runtime.split_for_device(graph)[1] == []


@settings(deadline=None)
@given(st.data())
def test_random_gathers_and_scatters_match_the_interpreter(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), "shape"))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), max_size=len(shape)),
                                  "axes")))
    batch = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2), "batch"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    b = Builder()
    x, i = b.input(shape, F64), b.input((*batch, len(axes)), np.int64)
    g = b(P.gather, x, i, axes=axes)
    u = b.input(g.aval.shape, F64)
    graph = b.graph(g, b(P.scatter, x, i, u, axes=axes), b(P.scatter_add, x, i, u, axes=axes))
    idx = rng.integers(-2, 6, (*batch, len(axes)))
    check(graph, [rng.standard_normal(shape), idx, rng.standard_normal(g.aval.shape)],
          record=False)


@settings(deadline=None, max_examples=15)
@given(st.data())
def test_random_window_reductions_match_the_interpreter(data):
    nd = data.draw(st.integers(1, 2), "ndim")
    shape = tuple(data.draw(st.integers(1, 5), f"d{i}") for i in range(nd))
    win = tuple(data.draw(st.integers(1, 3), f"w{i}") for i in range(nd))
    strides = tuple(data.draw(st.integers(1, 2), f"s{i}") for i in range(nd))
    pads = tuple((data.draw(st.integers(0, 2), f"lo{i}"), data.draw(st.integers(0, 2), f"hi{i}"))
                 for i in range(nd))
    bd = tuple(data.draw(st.integers(1, 2), f"bd{i}") for i in range(nd))
    wd = tuple(data.draw(st.integers(1, 2), f"wd{i}") for i in range(nd))
    window = dict(window_dimensions=win, window_strides=strides, padding=pads, base_dilation=bd,
                  window_dilation=wd)
    b = Builder()
    x = b.input(shape, F64)
    try:
        out = b(P.reduce_window_max, x, **window)
    except ValueError:
        return                          # the window does not fit: nothing to run
    ct = b.input(out.aval.shape, F64)
    graph = b.graph(out, b(P.reduce_window_sum, x, **window),
                    b(P.select_and_scatter_add, ct, x, select="max", **window))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    check(graph, [rng.standard_normal(shape), rng.standard_normal(out.aval.shape)],
          record=False)


def test_every_structural_kernel_compiles_to_ptx():
    """compile_ptx + ptxas for sm_80 and sm_90 (needs the NVVM wheels, not a GPU)."""
    try:
        import nvidia.cuda_nvcc
        import nvidia.cuda_nvrtc  # noqa: F401
    except ImportError:
        pytest.skip("nvidia-cuda-nvcc-cu12 / nvidia-cuda-nvrtc-cu12 are not installed")
    if not GENERATED:
        test_window_reductions_and_select_and_scatter_gather(WINDOWS[0], F32)
    # one kernel per structure and dtypes: kernels differing only in their constants
    # (shapes, strides, window geometry) type and compile alike
    unique = {(re.sub(r"\d+", "0", s.text), s.arg_dtypes): s for s in GENERATED}
    records = compile_elsewhere(list(unique.values()))
    assert len(records) == 2 * len(unique)
    if ptxas_path() is not None:
        assert all(r["registers"] is not None and r["spill_stores"] == 0 for r in records)
