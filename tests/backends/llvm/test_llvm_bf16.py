"""bfloat16 in the native CPU backend: rounding bit for bit as ml_dtypes, and products.

Narrowing (float32, float64 and integers to bf16) and widening/conversion of every one of
the 65536 bf16 values are compared with ml_dtypes' ``astype`` bit for bit. Products
(``vdpbf16ps`` on a CPU with AVX-512 BF16, and the widening path forced on any CPU) are
checked against the float64 product of the same bf16 operands: float32 accumulation of
``k`` terms is within ``k 2^-24 sum|a||b|`` of it, and the one rounding to bf16 adds at
most half an ulp, ``2^-8`` of the magnitude.
"""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import bf16_gemm, entries, lowering, runtime
from functorch_core.backends.llvm.aot import NotNativeError
from functorch_core.backends.llvm.blas import blas_int_bits
from functorch_core.backends.planning import partition as part
from functorch_core.backends.planning.plan import Blas, Conv
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import bfloat16 as BF16
from graph_builder import Builder

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import lax
from functorch_core.profiler import profile

CPU = registry.get("cpu")
TARGETS = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                 np.uint32, np.float16, np.float32, np.float64)]


def _converted(src, x, dst):
    b = Builder()
    v = b.input(x.shape, src)
    got, = CPU.compile(b.graph(b(P.convert, v, new_dtype=np.dtype(dst))))([x])
    return got


def _bits(a):
    return np.asarray(a).view(np.uint16)


def _near_midpoints(rng, n, wide):
    """Values of float type ``wide`` at, just above and just below the midpoints between
    neighbouring bf16 values (normal, subnormal, near overflow), both signs."""
    hi = rng.integers(0, 0x7F80, n).astype(np.uint32) << 16
    mid = (hi | 0x8000).view(np.float32).astype(wide)
    nudge = np.spacing(np.abs(mid).astype(wide))
    vals = np.concatenate([mid, mid + nudge, mid - nudge])
    return np.concatenate([vals, -vals])


def test_float32_narrows_as_ml_dtypes_bit_for_bit():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32),
                        np.array([0x7F800001, 0x7FC12345, 0xFFFFFFFF, 0x7F7FFFFF, 0x7F7F8000,
                                  0x00008000, 0x00018000, 0x80008001, 0x7F800000],
                                 np.uint32)]).view(np.float32)
    x = np.concatenate([x, _near_midpoints(rng, 20_000, np.float32)])
    np.testing.assert_array_equal(_bits(_converted(np.float32, x, BF16)), _bits(x.astype(BF16)))


def test_float64_narrows_in_one_rounding_as_ml_dtypes():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2 ** 63, 100_000, dtype=np.uint64)
    x = np.concatenate([x, x | np.uint64(1 << 63)]).view(np.float64)
    # magnitudes where float32 and bf16 round: near overflow, normal, subnormal, below
    scaled = rng.standard_normal(50_000) * np.exp2(rng.integers(-160, 130, 50_000))
    x = np.concatenate([x, scaled, _near_midpoints(rng, 20_000, np.float64),
                        [1 + 2 ** -8 + 2 ** -30, 3.3961e38, 3.3962e38, 1e39, 2.0 ** -134,
                         2.0 ** -134 * (1 + 2 ** -40), np.nan, -np.nan, np.inf, -np.inf]])
    with np.errstate(all="ignore"):
        want = x.astype(BF16)
    np.testing.assert_array_equal(_bits(_converted(np.float64, x, BF16)), _bits(want))


@pytest.mark.parametrize("src", [np.int32, np.uint32, np.int64, np.int8, np.int16, np.uint8])
def test_integers_narrow_in_one_rounding_as_ml_dtypes(src):
    rng = np.random.default_rng(2)
    info = np.iinfo(src)
    x = rng.integers(info.min, info.max, 50_000, dtype=src, endpoint=True)
    bits = min(info.bits, 63)
    # at, above and below bf16 midpoints of every magnitude (2^24 + 2^16 + 1 and the like)
    extra = [(1 << e) + (1 << (e - 8)) + d for e in range(9, bits) for d in (-1, 0, 1)]
    extra = [v for v in extra if v <= info.max] + [info.min, info.max, 0]
    x = np.concatenate([x, np.array(extra, dtype=np.int64).astype(src)])
    if info.min < 0:
        x = np.concatenate([x, -np.maximum(x, info.min + 1)])
    np.testing.assert_array_equal(_bits(_converted(src, x, BF16)), _bits(x.astype(BF16)))


@pytest.mark.parametrize("dst", TARGETS, ids=str)
def test_every_bf16_value_converts_as_ml_dtypes(dst):
    """All 65536 bf16 values to each dtype: floats exactly (the widening is exact), integers
    as ml_dtypes (0 where the value is out of the integer's range)."""
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)
    with np.errstate(all="ignore"):
        want = x.astype(dst)
    got = _converted(BF16, x, dst)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_elementwise_ops_match_the_interpreter_bit_for_bit():
    """Every bf16 value against random ones: float32 arithmetic rounded once per op."""
    rng = np.random.default_rng(3)
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)
    y = (rng.standard_normal(x.size) * np.exp2(rng.integers(-20, 20, x.size))).astype(BF16)
    b = Builder()
    xv, yv = b.input(x.shape, BF16), b.input(x.shape, BF16)
    outs = [b(p, xv, yv) for p in (P.add, P.sub, P.mul, P.div, P.max, P.min, P.floor_div,
                                   P.rem, P.copysign)]
    outs += [b(p, xv) for p in (P.sqrt, P.neg, P.abs, P.floor, P.round, P.sign)]
    outs.append(b(P.add, b(P.mul, xv, yv), b(P.div, yv, b(P.sqrt, b(P.abs, xv)))))
    graph = b.graph(*outs)
    got = CPU.compile(graph)([x, y])
    with np.errstate(all="ignore"):
        want = run_graph(graph, [x, y])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == BF16
        np.testing.assert_array_equal(g, np.asarray(w))
    wide = run_graph(graph, [x.astype(np.float32), y.astype(np.float32)])[0]
    np.testing.assert_array_equal(want[0], np.asarray(wide).astype(BF16))


def test_exact_ops_on_rounded_values_and_constants_match_the_interpreter():
    """max/min/abs/neg/floor/ceil/sign/select skip their rounding only on operands known to be
    bf16 (loads, rounded results, bf16 constants); a chain through them stays bit for bit
    the interpreter's, NaN, inf and subnormal results included."""
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)
    y = np.random.default_rng(13).standard_normal(x.size).astype(BF16)

    def chain(x, y):
        s = fnp.maximum(x * y, 1e-5)                    # a weak float constant
        t = fnp.minimum(fnp.abs(-(x + y)), 0.3) - fnp.floor(x / 3) + fnp.ceil(y * 5)
        u = fnp.where(x > y, fnp.sign(t), s)
        return s, t, u, fnp.maximum(u, t) * 2
    got = fc.jit(chain)(x, y)
    with np.errstate(all="ignore"):
        want = fc.jit(chain, backend="interpreter")(x, y)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == BF16
        np.testing.assert_array_equal(g.view(np.uint16), np.asarray(w).view(np.uint16))


# --- products ------------------------------------------------------------------------

DOTS = [((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
        ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),
        ((37, 129), (70, 129), (((1,), (1,)), ((), ()))),
        ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
        ((3, 17, 33), (3, 33, 65), (((2,), (1,)), ((0,), (0,)))),
        ((3, 2, 4), (5, 4, 2), (((2,), (1,)), ((1,), (2,)))),
        ((6,), (6,), (((0,), (0,)), ((), ()))),
        ((3, 4), (5,), (((), ()), ((), ()))),
        ((1, 1), (1, 1), (((1,), (0,)), ((), ()))),
        ((0, 4), (4, 5), (((1,), (0,)), ((), ()))),
        ((3, 0), (0, 5), (((1,), (0,)), ((), ()))),
        ((128, 256), (256, 192), (((1,), (0,)), ((), ())))]


def _exact(lhs, rhs, dn):
    """The float64 product of bf16 operands (exact products, sums far within the bound)."""
    return run_graph(_dot_graph(lhs.shape, rhs.shape, dn, np.float64),
                     [lhs.astype(np.float64), rhs.astype(np.float64)])[0]


def _dot_graph(ls, rs, dn, dtype):
    b = Builder()
    lhs, rhs = b.input(ls, dtype), b.input(rs, dtype)
    return b.graph(b(P.dot_general, lhs, rhs, dimension_numbers=dn))


def _assert_within_the_bound(got, lhs, rhs, dn):
    exact = _exact(lhs, rhs, dn)
    k = max(1, int(np.prod([lhs.shape[i] for i in dn[0][0]])))
    magnitude = _exact(np.abs(lhs.astype(np.float64)), np.abs(rhs.astype(np.float64)), dn)
    accumulation = k * 2.0 ** -24 * magnitude
    bound = accumulation + 2.0 ** -8 * (np.abs(exact) + accumulation)
    assert got.dtype == BF16 and got.shape == exact.shape
    err = np.abs(got.astype(np.float64) - exact)
    assert (err <= bound).all(), float(np.max(err - bound))


@pytest.fixture(params=["native", "widened", "planned"])
def product_path(request, monkeypatch):
    """The bf16 product step on vdpbf16ps or widened (every product a bf16 Blas step), or
    as planned (small products widened to float32 ones in the plan, lowering.py)."""
    if request.param == "native" and not bf16_gemm.host_has_bf16():
        pytest.skip("this CPU has no AVX-512 BF16")
    monkeypatch.setattr(bf16_gemm, "force_widen", request.param == "widened")
    if request.param != "planned":
        monkeypatch.setattr(lowering, "BF16_WIDEN_MACS", 0)
    return request.param


def test_bf16_dot_general_within_float32_accumulation_error(product_path):
    rng = np.random.default_rng(4)
    for ls, rs, dn in DOTS:
        lhs = rng.standard_normal(ls).astype(BF16)
        rhs = (rng.standard_normal(rs) * 3).astype(BF16)
        graph = _dot_graph(ls, rs, dn, BF16)
        exe = CPU.compile(graph)
        assert any(isinstance(s, Blas) for s in exe.plan.steps) or 0 in ls + rs
        assert not any(isinstance(s, part.Fallback) for s in exe.plan.steps)
        got, = exe([lhs, rhs])
        _assert_within_the_bound(got, lhs, rhs, dn)
        want, = run_graph(graph, [lhs, rhs])
        assert np.asarray(want).dtype == BF16


def test_bf16_products_propagate_nan_and_inf(product_path):
    rng = np.random.default_rng(5)
    lhs = rng.standard_normal((9, 40)).astype(BF16)
    rhs = rng.standard_normal((40, 70)).astype(BF16)
    lhs[1, 3], lhs[4, 0], rhs[7, 5] = np.nan, np.inf, -np.inf
    got = fc.jit(fnp.matmul)(lhs, rhs)
    with np.errstate(all="ignore"):
        exact = lhs.astype(np.float64) @ rhs.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(exact))
    finite = np.isfinite(exact)
    np.testing.assert_array_equal(got[~finite].astype(np.float64), exact[~finite])


def test_the_native_kernel_runs_where_the_cpu_has_avx512_bf16(monkeypatch):
    monkeypatch.setattr(bf16_gemm, "force_widen", False)
    monkeypatch.delenv("FUNCTORCH_CORE_BF16_GEMM", raising=False)
    assert bf16_gemm.native() == bf16_gemm.host_has_bf16()
    monkeypatch.setenv("FUNCTORCH_CORE_BF16_GEMM", "widen")
    assert not bf16_gemm.native() and "float32" in bf16_gemm.path()


def test_a_mixed_product_promotes_to_float32_first():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 7)).astype(BF16)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    got = fc.jit(fnp.matmul)(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.astype(np.float32) @ b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape, native", [(((2, 3, 9, 8), (4, 3, 3, 3)), 1),
                                           (((16, 8, 40, 40), (16, 8, 3, 3)), 0)])
def test_bf16_convolution_matches_the_interpreter(shape, native):
    """A small conv runs as a native loop nest (bf16 widened as it loads, rounded once as it
    stores), a big one as float32 gemms on widened operands; both within float32
    accumulation error plus half a bf16 ulp of the float64 result."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape[0]).astype(BF16)
    w = rng.standard_normal(shape[1]).astype(BF16)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME")
    exe = runtime.Executable(fc.make_graph(f)(x, w))
    convs = [s for s in exe.plan.steps if isinstance(s, Conv)]
    assert len(convs) == 1 and sum(id(s) in exe._fns for s in convs) == native
    got, = exe([x, w])
    want = fc.jit(f, backend="interpreter")(x, w)
    exact = fc.jit(f, backend="interpreter")(x.astype(np.float64), w.astype(np.float64))
    size = fc.jit(f, backend="interpreter")(np.abs(x.astype(np.float64)),
                                            np.abs(w.astype(np.float64)))
    assert got.dtype == want.dtype == BF16
    acc = shape[1][1] * 9 * 2.0 ** -24 * size
    bound = acc + 2.0 ** -8 * (np.abs(exact) + acc)
    for r in (got, want):
        assert (np.abs(r.astype(np.float64) - exact) <= bound).all()


def test_bf16_linalg_is_refused_clearly():
    with pytest.raises(TypeError, match="bfloat16 is unsupported in linalg"):
        fc.jit(fnp.linalg.inv)(np.eye(3, dtype=BF16))


def test_compile_library_refuses_a_big_bf16_product_by_name(tmp_path):
    side = 1 + round(lowering.BF16_WIDEN_MACS ** (1 / 3))     # above the widened ones
    a = np.ones((side, side), BF16)
    exp = fc.export(fnp.matmul, a, a.T.copy())
    with pytest.raises(NotNativeError, match="bfloat16 dot_general"):
        exp.compile_library(tmp_path / "l.so", "l")


def _small_bf16_layer(x, w, bias):
    """A linear layer (rhs transposed, as nn.Linear's) then ReLU, all in bfloat16."""
    return fnp.maximum(lax.dot_general(x, w, (((1,), (1,)), ((), ()))) + bias, 0)


def _layer_operands(rng):
    x = rng.standard_normal((64, 256)).astype(BF16)
    w = (rng.standard_normal((10, 256)) * 0.1).astype(BF16)
    bias = rng.standard_normal(10).astype(BF16)
    x[0, 0], x[1, 1], w[2, 2] = np.nan, np.inf, 2.0 ** -130     # a NaN, an inf, a subnormal
    return x, w, bias


def test_a_small_bf16_product_is_planned_as_the_interpreter_computes_it():
    """Widened exactly, a float32 product, one rounding: the jit's results are the
    interpreter's bit for bit, and the graph runs in one native entry call."""
    x, w, bias = _layer_operands(np.random.default_rng(11))
    jitted = fc.jit(_small_bf16_layer)
    got = jitted(x, w, bias)
    with np.errstate(all="ignore"):
        want = fc.jit(_small_bf16_layer, backend="interpreter")(x, w, bias)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), np.asarray(want).view(np.uint16))
    graph = fc.make_graph(_small_bf16_layer)(x, w, bias)
    exe = CPU.compile(graph)
    blas = [s for s in exe.plan.steps if isinstance(s, Blas)]
    assert [exe.plan.slots[s.out][1] for s in blas] == [np.dtype(np.float32)]
    if entries.graph_entry_supported():
        assert exe.entry is not None
    np.testing.assert_array_equal(exe([x, w, bias])[0].view(np.uint16), got.view(np.uint16))


@pytest.mark.skipif(shutil.which("cc") is None or blas_int_bits() != 64,
                    reason="a library with a product needs cc and NumPy's ILP64 OpenBLAS")
def test_a_library_computes_a_small_bf16_product_as_the_jit_does(tmp_path):
    x, w, bias = _layer_operands(np.random.default_rng(12))
    exp = fc.export(_small_bf16_layer, x, w, bias)
    exp.compile_library(tmp_path / "libl.so", "l")
    lib = ctypes.CDLL(str(tmp_path / "libl.so"))
    out = np.empty((64, 10), BF16)
    ins = (ctypes.c_void_p * 3)(*[a.ctypes.data for a in (x, w, bias)])
    assert lib.l(ins, (ctypes.c_void_p * 1)(out.ctypes.data)) == 0
    want = fc.jit(_small_bf16_layer)(x, w, bias)
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def _ulps(a, b):
    """bf16 ulps between a and b (0 where both are NaN)."""
    ia, ib = (np.asarray(x).view(np.int16).astype(np.int64) for x in (a, b))
    ia, ib = (np.where(i < 0, -(i & 0x7FFF), i) for i in (ia, ib))
    d = np.abs(ia - ib)
    nan_a, nan_b = np.isnan(a.astype(np.float32)), np.isnan(b.astype(np.float32))
    return np.where(nan_a & nan_b, 0, np.where(nan_a != nan_b, 1 << 20, d))


ELEMENTWISE = [p for p in P.ALL.values() if p.family in ("unary", "binary", "special3")
               and "f" in p.spec.kinds]


@pytest.mark.parametrize("prim", ELEMENTWISE, ids=lambda p: p.name)
def test_every_float_elementwise_primitive_runs_bf16_natively(prim):
    """Each one lowers natively on bf16 wherever it does on float32, with bf16 results
    within 2 bf16 ulp of the interpreter's (float32 or SciPy's float64 rounded once)."""
    rng = np.random.default_rng(8)
    lo, hi = prim.spec.domain or (-3, 3)
    n = 3 if prim.family == "special3" else 2 if prim.family == "binary" else 1
    args = [rng.uniform(lo, hi, 512).astype(BF16) for _ in range(n)]

    def graph(dt):
        b = Builder()
        xs = [b.input((512,), dt) for _ in range(n)]
        try:
            return b.graph(b(prim, *xs))
        except (TypeError, ValueError):
            return None
    g16, g32 = graph(BF16), graph(np.dtype(np.float32))
    if g32 is None:
        pytest.skip(f"{prim.name} takes no float operands of one dtype")
    assert g16 is not None
    exe16, exe32 = CPU.compile(g16), CPU.compile(g32)
    fallback = [isinstance(s, part.Fallback) for s in exe32.plan.steps]
    assert [isinstance(s, part.Fallback) for s in exe16.plan.steps] == fallback
    got, = exe16(args)
    with np.errstate(all="ignore"):
        want = np.asarray(run_graph(g16, args)[0])
    assert got.dtype == want.dtype
    if want.dtype != BF16:
        np.testing.assert_array_equal(got, want)
        return
    far = _ulps(got, want) > 2
    assert not far.any(), [(a[far][:3] for a in args), got[far][:3], want[far][:3]]


def test_window_reductions_match_the_interpreter_bit_for_bit():
    """max/min windows natively; a bf16 window sum runs in the interpreter (float32
    accumulation, one rounding: a reasoned fallback, as for float16)."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((6, 40)) * 50).astype(BF16)
    window = dict(window_dimensions=(2, 16), window_strides=(1, 3), padding=((1, 0), (2, 1)),
                  base_dilation=(1, 1), window_dilation=(1, 1))
    b = Builder()
    xv = b.input(x.shape, BF16)
    graph = b.graph(*(b(p, xv, **window) for p in (P.reduce_window_sum, P.reduce_window_max,
                                                   P.reduce_window_min)))
    exe = CPU.compile(graph)
    reasons = [s.reason for s in exe.plan.steps if isinstance(s, part.Fallback)]
    assert len(reasons) == 1 and "bfloat16" in reasons[0]
    got = exe([x])
    with np.errstate(all="ignore"):
        want = run_graph(graph, [x])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == BF16
        np.testing.assert_array_equal(g, np.asarray(w))
    # the interpreter's bf16 window sum is float32's, rounded once
    wide = run_graph(graph, [x.astype(np.float32)])[0]
    np.testing.assert_array_equal(want[0], np.asarray(wide).astype(BF16))


def test_subnormal_operands_keep_their_products(product_path):
    """vdpbf16ps reads subnormal inputs as zero: operands holding one take the widening
    path, so their products are within the same bound as any other."""
    rng = np.random.default_rng(10)
    lhs = (rng.standard_normal((8, 50)) * 2.0 ** -128).astype(BF16)
    rhs = (rng.standard_normal((50, 70)) * 2.0 ** 12).astype(BF16)
    assert (np.abs(lhs.astype(np.float32)) < 2.0 ** -126).any()
    got = fc.jit(fnp.matmul)(lhs, rhs)
    assert np.abs(got.astype(np.float32)).max() > 0
    _assert_within_the_bound(got, lhs, rhs, (((1,), (0,)), ((), ())))


def test_the_profiler_names_a_bf16_products_path():
    a = np.ones((300, 200), BF16)
    f = fc.jit(fnp.matmul)
    f(a, a.T)
    with profile() as prof:
        f(a, a.T)
    names = {e.name for e in prof.events()}
    assert f"dot_general (bf16: {bf16_gemm.path()})" in names
