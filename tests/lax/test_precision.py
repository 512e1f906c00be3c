"""lax.reduce_precision against ml_dtypes/NumPy roundings, and the float32 matmul precision
("highest", "high", "medium") of products and convolutions against NumPy references that
round the same way."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from functorch_core.backends.llvm.runtime import compile_graph
from functorch_core.ir import primitives as P

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import lax
from functorch_core.testing import check_grads

F32 = np.float32
BF16 = ml_dtypes.bfloat16


@pytest.fixture(autouse=True)
def _restore_precision():
    yield
    fc.set_float32_matmul_precision("highest")


def _edge_f32():
    fi = np.finfo(F32)
    ties = [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8), 1 + 2.0 ** -8 + 2.0 ** -23,
            2.0 ** -130 * 3, 2.0 ** -133]
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, fi.max, -fi.max, fi.tiny,
                     -fi.tiny, 1e-45, -1e-45, fi.smallest_subnormal * 255,
                     float(np.float32(3.3895314e38)), *ties], F32)


def _random_f32(n=50_000, seed=0):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(F32)
    scaled = (rng.standard_normal(n) * 10.0 ** rng.uniform(-40, 38, n)).astype(F32)
    return np.concatenate([bits, scaled, _edge_f32()])


def _same_bits(got, want):
    """Bit for bit, except that a NaN only needs to be a NaN (XLA keeps the operand's NaN,
    a cast may quiet it)."""
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    ut = np.dtype(f"uint{8 * got.dtype.itemsize}")
    diff = np.flatnonzero(got[~nan].view(ut) != want[~nan].view(ut))
    assert diff.size == 0, (got[~nan][diff[:5]], want[~nan][diff[:5]])


@pytest.mark.parametrize("run", ["eager", "jit", "interpreter"])
def test_bf16_rounding_is_ml_dtypes_bit_for_bit(run):
    x = _random_f32()
    fn = lambda v: lax.reduce_precision(v, 8, 7)        # noqa: E731
    got = {"eager": fn, "jit": fc.jit(fn),
           "interpreter": fc.jit(fn, backend="interpreter")}[run](x)
    assert got.dtype == F32
    with np.errstate(over="ignore", invalid="ignore"):
        _same_bits(got, x.astype(BF16).astype(F32))


@pytest.mark.parametrize("run", ["eager", "jit"])
def test_f16_rounding_is_numpy_float16_in_its_normal_range(run):
    x = _random_f32(seed=1)
    fn = lambda v: lax.reduce_precision(v, 5, 10)       # noqa: E731
    got = (fn if run == "eager" else fc.jit(fn))(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).astype(F32)
    # XLA flushes the reduced format's subnormals to a signed zero (float16's own cast
    # keeps them): everywhere else the two agree bit for bit
    sub = (np.abs(want) < np.finfo(np.float16).tiny) & (want != 0)
    _same_bits(got[~sub], want[~sub])
    _same_bits(got[sub], np.copysign(np.zeros_like(want[sub]), x[sub]))


@pytest.mark.parametrize("dtype,bits", [(np.float16, [(5, 10), (4, 3), (5, 2), (3, 0)]),
                                        (np.float64, [(8, 23), (11, 7), (5, 10), (11, 52)])])
def test_native_lowering_matches_the_interpreter_on_every_bit_pattern(dtype, bits):
    rng = np.random.default_rng(2)
    width = np.dtype(dtype).itemsize * 8
    raw = rng.integers(0, 2 ** min(width, 63), 20_000, dtype=np.uint64)
    x = raw.astype(f"uint{width}").view(dtype)
    for e, m in bits:
        fn = lambda v, e=e, m=m: lax.reduce_precision(v, e, m)     # noqa: E731
        _same_bits(fc.jit(fn)(x), fc.jit(fn, backend="interpreter")(x))
    if dtype == np.float64:       # (8, 23): float32's rounding, in float64 bits
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(F32).astype(np.float64)
        sub = (np.abs(want) < np.finfo(F32).tiny) & (want != 0)
        _same_bits(lax.reduce_precision(x, 8, 23)[~sub], want[~sub])


def test_reduce_precision_grads_and_vmap_round_the_tangent_too():
    x = np.array([1.1, -2.3, 0.7], F32)
    t = np.array([1.0001, 3.3, -0.5], F32)
    fn = lambda v: lax.reduce_precision(v, 8, 7)        # noqa: E731
    _, ty = fc.jvp(fn, (x,), (t,))
    _same_bits(ty, t.astype(BF16).astype(F32))          # JAX's rule
    g = fc.grad(lambda v: (fn(v) * t).sum())(x)
    _same_bits(g, t.astype(BF16).astype(F32))
    xs = np.stack([x, 2 * x])
    _same_bits(fc.vmap(fn)(xs), xs.astype(BF16).astype(F32))


def test_reduce_precision_rejects_bad_input():
    with pytest.raises(TypeError, match=r"reduce_precision: operand of dtype int64.*\(3,\)"):
        lax.reduce_precision(np.arange(3), 8, 7)
    with pytest.raises(ValueError, match="exponent_bits must be an int >= 1, got 0"):
        lax.reduce_precision(np.ones(3, F32), 0, 7)
    with pytest.raises(ValueError, match=r"mantissa_bits must be an int >= 0, got 2\.5"):
        lax.reduce_precision(np.ones(3, F32), 8, 2.5)


# --- the float32 matmul precision ------------------------------------------------------

def _bf16(x):
    return np.asarray(x, F32).astype(BF16).astype(F32)


def _reference(a, b, precision, product=np.matmul):
    """NumPy's float32 products of operands rounded with ml_dtypes, as the precision says."""
    if precision == "highest":
        return product(a, b)
    ah, bh = _bf16(a), _bf16(b)
    if precision == "medium":
        return product(ah, bh)
    al, bl = _bf16(a - ah), _bf16(b - bh)
    return (product(ah, bl) + product(al, bh)) + product(ah, bh)


def _operands(shape_a=(256, 256), shape_b=(256, 256), seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape_a).astype(F32), rng.standard_normal(shape_b).astype(F32)


@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
@pytest.mark.parametrize("run", ["eager", "jit", "interpreter"])
def test_global_precision_values_match_the_rounded_reference(precision, run):
    a, b = _operands((64, 96), (96, 48))
    fc.set_float32_matmul_precision(precision)
    assert fc.get_float32_matmul_precision() == precision
    fn = lambda x, y: x @ y         # noqa: E731
    got = {"eager": fnp.matmul, "jit": fc.jit(fn),
           "interpreter": fc.jit(fn, backend="interpreter")}[run](a, b)
    want = _reference(a, b, precision)
    # the same float32 products summed in another order (BLAS's vs NumPy's): each within
    # k eps sum |a_i b_i| of the exact sum (Higham's bound, k = 96), the three of "high"
    # and their two adds within about as much again: 4 k eps sum |a||b| bounds the gap
    scale = np.abs(_reference(np.abs(a), np.abs(b), "highest"))
    assert got.dtype == F32
    assert np.all(np.abs(got - want) <= 4 * 96 * np.finfo(F32).eps * scale)


def _errors(a, b):
    ref = a.astype(np.float64) @ b.astype(np.float64)
    out = {}
    for p in ("highest", "high", "medium"):
        with fc.default_matmul_precision(p):
            out[p] = np.max(np.abs(fc.jit(lambda x, y: x @ y)(a, b) - ref)) / np.max(np.abs(ref))
    return out


def test_error_of_each_precision_against_float64():
    a, b = _operands()
    err = _errors(a, b)
    # medium: operands rounded to bf16, relative error 2^-9 each: the product's error is
    # the bf16 rounding's, well above float32's
    bf16_err = np.max(np.abs(_bf16(a).astype(np.float64) @ _bf16(b).astype(np.float64)
                             - a.astype(np.float64) @ b.astype(np.float64)))
    bf16_err /= np.max(np.abs(a.astype(np.float64) @ b.astype(np.float64)))
    assert 0.5 * bf16_err <= err["medium"] <= 2 * bf16_err
    # high: each operand kept to 16 significant bits (hi + lo, 8 each), the dropped
    # a_lo b_lo term and the lo roundings bound it: 2 * 2^-17 of sum |a||b|, plus float32's
    scale = np.max(np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    scale /= np.max(np.abs(a.astype(np.float64) @ b.astype(np.float64)))
    assert err["high"] <= err["highest"] + 2 * 2.0 ** -17 * scale
    assert err["highest"] < err["high"] < err["medium"]


def test_float64_and_complex_products_are_never_reduced():
    a, b = _operands((8, 8), (8, 8))
    for dt in (np.float64, np.complex128, np.complex64, np.int32):
        x, y = a.astype(dt), b.astype(dt)
        with fc.default_matmul_precision("medium"):
            graph = fc.make_graph(lambda u, v: u @ v)(x, y)
            got = fc.jit(lambda u, v: u @ v)(x, y)
        assert "precision" not in str(graph)
        np.testing.assert_allclose(got, x @ y, rtol=1e-5 if dt == np.complex64 else 1e-12)


@pytest.mark.parametrize("precision,name", [(lax.Precision.HIGHEST, "highest"),
                                            ("float32", "highest"), ("highest", "highest"),
                                            (lax.Precision.HIGH, "high"), ("high", "high"),
                                            ("bfloat16_3x", "high"), ("bfloat16", "medium"),
                                            ("medium", "medium")])
def test_per_call_precision_overrides_the_setting(precision, name):
    a, b = _operands((16, 24), (24, 8))
    fc.set_float32_matmul_precision("medium" if name != "medium" else "highest")
    calls = [
        lambda: lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=precision),
        lambda: lax.dot(a, b, precision=precision),
        lambda: fnp.matmul(a, b, precision=precision),
        lambda: fnp.dot(a, b, precision=precision),
        lambda: fnp.einsum("ij,jk->ik", a, b, precision=precision),
    ]
    want = _reference(a, b, name)
    scale = np.abs(_reference(np.abs(a), np.abs(b), "highest"))
    for call in calls:
        got = np.asarray(call())
        assert np.all(np.abs(got - want) <= 4 * 24 * np.finfo(F32).eps * scale)


@pytest.mark.parametrize("default", [None, lax.Precision.DEFAULT, "default"])
def test_default_means_the_global_setting(default):
    a, b = _operands((4, 5), (5, 3))
    fc.set_float32_matmul_precision("medium")
    graph = fc.make_graph(lambda x, y: lax.dot(x, y, precision=default))(a, b)
    assert "precision=medium" in str(graph)
    fc.set_float32_matmul_precision("highest")
    graph = fc.make_graph(lambda x, y: lax.dot(x, y, precision=default))(a, b)
    assert "precision" not in str(graph)     # the printer shows it only when not highest


def test_bad_precision_names_the_call_and_the_allowed_values():
    with pytest.raises(ValueError, match=r"set_float32_matmul_precision: precision must be "
                                         r"one of 'highest', 'high', 'medium', got 'low'"):
        fc.set_float32_matmul_precision("low")
    assert fc.get_float32_matmul_precision() == "highest"
    a = np.ones((2, 2), F32)
    for call, name in ((lambda: fnp.matmul(a, a, precision="fast"), "matmul"),
                       (lambda: lax.dot(a, a, precision=3), "dot_general"),
                       (lambda: fnp.einsum("ij,jk", a, a, precision="x"), "einsum"),
                       (lambda: lax.conv(a[None, None], a[None, None], (1, 1), "SAME",
                                         precision="tf32"), "conv_general_dilated")):
        with pytest.raises(ValueError, match=rf"{name}: precision .* is not one of None, "
                                             r"lax.Precision.DEFAULT/HIGH/HIGHEST"):
            call()


def test_context_manager_restores_and_nests():
    assert fc.get_float32_matmul_precision() == "highest"
    with fc.default_matmul_precision("bfloat16"):
        assert fc.get_float32_matmul_precision() == "medium"
        with fc.default_matmul_precision(lax.Precision.HIGH):
            assert fc.get_float32_matmul_precision() == "high"
        assert fc.get_float32_matmul_precision() == "medium"
        with pytest.raises(RuntimeError), fc.default_matmul_precision("float32"):
            assert fc.get_float32_matmul_precision() == "highest"
            raise RuntimeError
        assert fc.get_float32_matmul_precision() == "medium"
    assert fc.get_float32_matmul_precision() == "highest"


def test_jit_retraces_when_the_setting_changes():
    traces = []

    @fc.jit
    def f(x, y):
        traces.append(1)
        return x @ y

    a, b = _operands((32, 32), (32, 32))
    want = {p: _reference(a, b, p) for p in ("highest", "high", "medium")}
    scale = np.abs(_reference(np.abs(a), np.abs(b), "highest"))
    for p in ("highest", "medium", "highest", "high", "medium"):
        fc.set_float32_matmul_precision(p)
        for _ in range(2):          # the second call takes the fast path
            got = f(a, b)
            assert np.all(np.abs(got - want[p]) <= 4 * 32 * np.finfo(F32).eps * scale), p
    assert len(traces) == 3         # one per setting: the rest were cache hits
    g = fc.grad(lambda x: (x @ b).sum())
    fc.set_float32_matmul_precision("highest")
    g_hi = g(a)
    fc.set_float32_matmul_precision("medium")
    np.testing.assert_array_equal(g(a), np.broadcast_to(_bf16(b).sum(1), a.shape))
    np.testing.assert_allclose(g_hi, np.broadcast_to(b.sum(1), a.shape), rtol=1e-5)


@pytest.mark.parametrize("precision", ["high", "medium"])
def test_transforms_keep_the_precision(precision):
    a, b = _operands((6, 5), (5, 4))
    f = lambda x, y: lax.dot(x, y, precision=precision)     # noqa: E731
    grad_graph = str(fc.make_graph(fc.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1)))(a, b))
    assert grad_graph.count(f"precision={precision}") == 3      # primal, two cotangents
    jvp_graph = str(fc.make_graph(lambda x, y, t: fc.jvp(f, (x, y), (t, y)))(a, b, a))
    assert jvp_graph.count(f"precision={precision}") == 3
    vm = fc.vmap(f, in_axes=(0, None))
    assert f"precision={precision}" in str(fc.make_graph(vm)(np.stack([a, a]), b))
    # values: vmap against the reference per example; grads: the products' cotangents are
    # products at the same precision: dL/dx = ct @ y^T, rounded alike
    xs = np.stack([a, 2 * a])
    got = vm(xs, b)
    for i in range(2):
        want = _reference(xs[i], b, precision)
        assert np.allclose(got[i], want, rtol=0, atol=1e-5 * np.abs(want).max())
    gx, gy = fc.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(a, b)
    ones = np.ones((6, 4), F32)
    np.testing.assert_allclose(gx, _reference(ones, b.T, precision), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gy, _reference(a.T, ones, precision), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("precision", ["high", "medium"])
def test_check_grads_under_each_precision(precision):
    # float64 products are not reduced: check_grads (finite differences) holds under the
    # setting; float32's reduced products have no useful finite differences, so their
    # jvp and vjp are checked against the reference products they must be
    a, b = _operands((3, 4), (4, 2))
    with fc.default_matmul_precision(precision):
        check_grads(lambda x, y: x @ y, (a.astype(np.float64), b.astype(np.float64)), order=2)
        t = np.flip(a, 1).copy()
        tangent = fc.jvp(lambda u: lax.dot(u, b), (a,), (t,))[1]
        ct = np.random.default_rng(5).standard_normal((3, 2)).astype(F32)
        (cot,) = fc.vjp(lambda u: lax.dot(u, b), a)[1](ct)
    np.testing.assert_allclose(tangent, _reference(t, b, precision), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cot, _reference(ct, b.T, precision), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
def test_convolutions_follow_the_precision(precision):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 9)).astype(F32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(F32)

    def conv(u, v):
        return np.asarray(lax.conv_general_dilated(u.astype(np.float64), v.astype(np.float64),
                                                   (1, 1), "SAME")).astype(F32)

    want = _reference(x, w, precision, conv)
    scale = np.abs(conv(np.abs(x), np.abs(w)))
    fc.set_float32_matmul_precision(precision)
    layer = fc.nn.Conv2d(3, 4, 3, padding=1, bias=False)
    layer.weight = w
    for got in (lax.conv(x, w, (1, 1), "SAME"),
                fc.jit(lambda u, v: lax.conv_general_dilated(u, v, (1, 1), "SAME"))(x, w),
                fc.jit(layer)(x)):
        assert np.all(np.abs(np.asarray(got) - want) <= 8 * 27 * np.finfo(F32).eps * scale)
    fc.set_float32_matmul_precision("highest")
    explicit = lax.conv(x, w, (1, 1), "SAME", precision=precision)
    assert np.all(np.abs(np.asarray(explicit) - want) <= 8 * 27 * np.finfo(F32).eps * scale)


def test_linear_layer_follows_the_setting():
    lin = fc.nn.Linear(16, 8)
    x = np.random.default_rng(4).standard_normal((5, 16)).astype(F32)
    with fc.default_matmul_precision("medium"):
        graph = str(fc.make_graph(lin)(x))
    assert "precision=medium" in graph


def test_backends_expand_the_products_in_one_pass():
    a, b = _operands((8, 8), (8, 8))
    graph = fc.make_graph(lambda x, y: lax.dot(x, y, precision="high"))(a, b)
    plan = compile_graph(graph).plan
    names = [type(s).__name__ for s in plan.steps]
    assert names.count("Blas") == 3         # three plain float32 gemms
    assert P.reduce_precision in {op.prim for s in plan.steps for op in getattr(s, "ops", ())}


@pytest.mark.gpu_sim
def test_cuda_backend_rounds_and_expands_under_the_simulator():
    if "cuda" not in fc.backends_available():
        pytest.skip("needs the cuda backend (NUMBA_ENABLE_CUDASIM=1 under make test-gpu-sim)")
    x = _random_f32(2000)
    got = fc.jit(lambda v: lax.reduce_precision(v, 8, 7), backend="cuda")(x)
    with np.errstate(over="ignore", invalid="ignore"):
        _same_bits(fc.device_get(got), x.astype(BF16).astype(F32))
    a, b = _operands((16, 24), (24, 8))
    scale = np.abs(_reference(np.abs(a), np.abs(b), "highest"))
    for p in ("high", "medium"):
        with fc.default_matmul_precision(p):
            got = fc.device_get(fc.jit(lambda u, v: u @ v, backend="cuda")(a, b))
        assert np.all(np.abs(got - _reference(a, b, p)) <= 4 * 24 * np.finfo(F32).eps * scale)


def test_lax_dot_general_rejects_bad_input():
    a, b = np.ones((2, 3), F32), np.ones((4, 5), F32)
    with pytest.raises(ValueError, match=r"dot_general: lhs \(2, 3\) dimension 1 \(3\) and rhs "
                                         r"\(4, 5\) dimension 0 \(4\) should match"):
        lax.dot_general(a, b, (((1,), (0,)), ((), ())))
    with pytest.raises(ValueError, match=r"dot_general: lhs contracting dimensions \(2,\) are "
                                         r"not distinct axes of an operand of shape \(2, 3\)"):
        lax.dot_general(a, b, (((2,), (0,)), ((), ())))
    with pytest.raises(TypeError, match=r"dot: incompatible shapes for dot: got \(2, 3\) and "
                                        r"\(4, 5\)"):
        lax.dot(a, b)
    with pytest.raises(TypeError, match=r"dot_general: operands of dtype bool and bool "
                                        r"\(shapes \(3,\) and \(3,\)\) are not numeric"):
        lax.dot_general(np.ones(3, bool), np.ones(3, bool), (((0,), (0,)), ((), ())))
    np.testing.assert_allclose(lax.dot_general(np.ones((2, 3)), np.ones((3, 4)),
                                               (((1,), (0,)), ((), ()))), np.full((2, 4), 3.0))


def test_convolution_transforms_keep_the_precision():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 7)).astype(F32)
    w = rng.standard_normal((4, 3, 3)).astype(F32)
    f = lambda u, v: lax.conv(u, v, (1,), "SAME", precision="medium")     # noqa: E731
    graph = str(fc.make_graph(fc.grad(lambda u, v: f(u, v).sum(), argnums=(0, 1)))(x, w))
    assert graph.count("precision=medium") == 3
    vm = str(fc.make_graph(fc.vmap(f, in_axes=(0, None)))(np.stack([x, x]), w))
    assert "precision=medium" in vm
    # the cotangent of the input is a convolution of rounded operands: bf16(ct) with bf16(w)
    gx = fc.grad(lambda u: f(u, w).sum())(x)
    want = fc.grad(lambda u: lax.conv(u, _bf16(w), (1,), "SAME").sum())(x)
    np.testing.assert_allclose(gx, want, rtol=1e-6, atol=1e-6)
