"""bfloat16 (ml_dtypes') in the IR, the NumPy layer and the interpreter: promotion as
ml_dtypes/NumPy, elementwise ops in float32 rounded once, float32 accumulation, transforms."""

import ml_dtypes
import numpy as np
import pytest
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

import functorch_core as fc
import functorch_core.numpy as fnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
OTHERS = [d for d in dtypes.SUPPORTED if d != BF16]
_interp = {"backend": "interpreter"}


def _bf16(values):
    return np.asarray(values, np.float32).astype(BF16)


def test_the_scalar_type_and_finfo_are_ml_dtypes():
    assert np.dtype(fnp.bfloat16) == BF16
    assert fnp.finfo(fnp.bfloat16).eps == ml_dtypes.finfo(ml_dtypes.bfloat16).eps == 2.0 ** -7
    assert dtypes.dtype_kind(BF16) == "f" and dtypes.is_float(BF16) and dtypes.is_inexact(BF16)
    assert dtypes.canonical("bfloat16") == BF16


@pytest.mark.parametrize("other", OTHERS, ids=str)
def test_promotion_with_every_dtype_is_numpys_with_ml_dtypes(other):
    x, y = fnp.ones(2, BF16), np.ones(2, other)
    want = np.result_type(BF16, other)
    assert (x + y).dtype == want
    assert fc.make_graph(lambda a, b: a + b)(x, y).outputs[0].aval.dtype == want


@pytest.mark.parametrize("scalar", [1, 2.5, True])
def test_python_scalars_are_weak_and_keep_bfloat16(scalar):
    x = fnp.ones(3, BF16)
    assert (x * scalar).dtype == BF16
    assert fc.jit(lambda a: a * scalar, **_interp)(x).dtype == BF16


def _unary_float_prims():
    return [p for p in P.ALL.values() if p.family == "unary" and p.spec.domain is not None
            and "f" in p.spec.kinds]


@pytest.mark.parametrize("prim", _unary_float_prims(), ids=lambda p: p.name)
def test_unary_ops_compute_in_float32_and_round_once(prim):
    lo, hi = prim.spec.domain
    x = _bf16(np.linspace(lo, hi, 257)[1:-1])
    want = np.asarray(prim.spec.reference(x.astype(F32))).astype(BF16)
    for got in (prim.bind(x), fc.jit(prim.bind, **_interp)(x)):
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_binary_ops_compute_in_float32_and_round_once():
    rng = np.random.default_rng(0)
    a, b = _bf16(rng.normal(size=500)), _bf16(rng.normal(size=500))
    # one primitive each (a composite such as hypot rounds after each of its primitives,
    # as float16 does)
    for fn in (np.add, np.subtract, np.multiply, np.divide, np.arctan2, np.power, np.maximum):
        with np.errstate(all="ignore"):
            want = fn(a.astype(F32), b.astype(F32)).astype(BF16)
            got = fc.jit(lambda x, y, fn=fn: fn(x, y), **_interp)(a, b)
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), fn.__name__)


def test_reductions_accumulate_in_float32_and_round_once():
    # 4096 values near 1: summed in bfloat16 the total stalls at 256 (its ulp there is 2),
    # summed in float32 it is exact to float32's error, then rounded once
    x = _bf16(1.0 + np.arange(4096) % 7 * 2.0 ** -7)
    exact = x.astype(np.float64).sum()
    for got in (fnp.sum(x), fc.jit(fnp.sum, **_interp)(x), P.reduce_sum.bind(x, axes=(0,))):
        assert got.dtype == BF16
        assert float(got) == np.float64(exact).astype(BF16)
    assert fnp.mean(x).dtype == BF16
    assert float(fnp.mean(x)) == np.float64(exact / x.size).astype(BF16)
    c = fnp.cumsum(x)
    np.testing.assert_array_equal(c, np.cumsum(x.astype(np.float64)).astype(BF16))


def test_products_accumulate_in_float32():
    rng = np.random.default_rng(1)
    a, b = _bf16(rng.normal(size=(16, 300))), _bf16(rng.normal(size=(300, 8)))
    want64 = a.astype(np.float64) @ b.astype(np.float64)
    got = fc.jit(fnp.matmul, **_interp)(a, b)
    assert got.dtype == BF16
    # float32 accumulation's bound (k u32 sum|a||b|) plus the one rounding to bfloat16
    bound = 300 * 2.0 ** -24 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) \
        + np.abs(want64) * 2.0 ** -8
    assert np.all(np.abs(got.astype(np.float64) - want64) <= bound)


def test_creation_functions_take_bfloat16():
    for made in (fnp.zeros(3, BF16), fnp.ones((2, 2), dtype="bfloat16"),
                 fnp.full(4, 1.5, BF16), fnp.arange(5, dtype=BF16), fnp.eye(3, dtype=BF16),
                 fnp.linspace(0, 1, 9, dtype=BF16), fnp.zeros_like(_bf16([1.0]))):
        assert made.dtype == BF16
    np.testing.assert_array_equal(fnp.linspace(0, 1, 9, dtype=BF16),
                                  np.linspace(0, 1, 9).astype(BF16))


def test_astype_rounds_as_ml_dtypes():
    vals = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.4e38, -0.0, np.inf, np.nan, 1e-40,
                     2.0 ** -133], np.float64)
    for src in (np.float64, np.float32):
        got = fnp.asarray(vals.astype(src)).astype(BF16)
        np.testing.assert_array_equal(got.view(np.uint16), vals.astype(src).astype(BF16)
                                      .view(np.uint16))


def test_grad_and_vmap_keep_bfloat16():
    x = _bf16(np.linspace(-1, 1, 6))
    g = fc.grad(lambda v: fnp.sum(fnp.tanh(v) * v))(x)
    assert g.dtype == BF16
    want = (np.tanh(x.astype(F32)) + x.astype(F32) / np.cosh(x.astype(F32)) ** 2)
    np.testing.assert_allclose(g.astype(F32), want, rtol=2 * 2.0 ** -8, atol=2.0 ** -9)
    v = fc.vmap(lambda r: fnp.sum(r * r))(x.reshape(3, 2))
    assert v.dtype == BF16
    np.testing.assert_array_equal(v, (x.astype(F32).reshape(3, 2) ** 2).sum(1).astype(BF16))


def test_random_draws_in_bfloat16():
    key = fc.random.PRNGKey(0)
    u = fc.random.uniform(key, (4000,), BF16)
    n = fc.random.normal(key, (4000,), BF16)
    assert u.dtype == n.dtype == BF16
    assert 0 <= float(u.min()) and float(u.max()) < 1
    # 7 mantissa bits: the draws are multiples of 2^-7
    np.testing.assert_array_equal(u.astype(F32) * 128, np.floor(u.astype(F32) * 128))
    assert abs(float(n.astype(F32).mean())) < 0.1 and abs(float(n.astype(F32).std()) - 1) < 0.1


def test_linalg_refuses_bfloat16_naming_the_call():
    with pytest.raises(TypeError, match=r"linalg.inv: array type bfloat16 .*astype\(np.float32"):
        fnp.linalg.inv(fnp.eye(2, dtype=BF16))


def test_softmax_and_layer_norm_run_in_bfloat16():
    x = _bf16(np.linspace(-3, 3, 12).reshape(3, 4))
    s = fc.nn.functional.softmax(x, -1)
    assert s.dtype == BF16
    ref = np.exp(x.astype(F32)) / np.exp(x.astype(F32)).sum(-1, keepdims=True)
    np.testing.assert_allclose(s.astype(F32), ref, rtol=4 * 2.0 ** -8)


@pytest.mark.parametrize("bits", [(8, 7), (5, 4), (8, 3), (4, 0), (5, 10)])
def test_reduce_precision_of_bfloat16_is_its_float32_rounding(bits):
    # every bf16 bit pattern; jit (llvm) and eager agree, and equal float32's rounding
    x = np.arange(65536, dtype=np.uint16).view(BF16)
    eb, mb = bits
    eager = fc.lax.reduce_precision(x, eb, mb)
    jitted = fc.jit(lambda v: fc.lax.reduce_precision(v, eb, mb))(x)
    via32 = fc.lax.reduce_precision(x.astype(F32), eb, mb).astype(BF16)
    # a NaN stays a NaN (its payload is free), except with no mantissa bits: XLA's inf
    nan = np.isnan(x.astype(F32)) if mb else np.zeros(x.shape, bool)
    for got in (eager, jitted):
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.view(np.uint16)[~nan], via32.view(np.uint16)[~nan])
        assert np.isnan(got[nan].astype(F32)).all()
