"""fc.amp.autocast (torch.autocast's semantics on the CPU: bfloat16 products, float32
reductions, norms and losses), Module.bfloat16(), and the optimizers' master weights."""

import ml_dtypes
import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import amp, lax, nn, optim
from functorch_core._internal import scopes
from functorch_core.nn import functional as F

BF16, F16, F32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)
_rng = np.random.default_rng(0)
A = _rng.normal(size=(4, 6)).astype(np.float32)
B = _rng.normal(size=(6, 5)).astype(np.float32)
IMG = _rng.normal(size=(2, 3, 6, 6)).astype(np.float32)
KER = _rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
_interp = {"backend": "interpreter"}

# one call per name of amp.LOWERED, on float32 operands
LOWERED_CALLS = {
    "dot_general": lambda: lax.dot_general(A, B, (((1,), (0,)), ((), ()))),
    "matmul": lambda: fnp.matmul(A, B),
    "dot": lambda: fnp.dot(A, B),
    "einsum": lambda: fnp.einsum("ij,jk->ik", A, B),
    "tensordot": lambda: fnp.tensordot(A, B, 1),
    "inner": lambda: fnp.inner(A, B.T),
    "linear": lambda: F.linear(A, B.T, np.ones(5, np.float32)),
    "bilinear": lambda: F.bilinear(A, A, np.ones((2, 6, 6), np.float32)),
    "conv_general_dilated": lambda: lax.conv_general_dilated(IMG, KER, (1, 1), "SAME"),
    "conv1d": lambda: F.conv1d(IMG[:, :, 0], KER[:, :, 0], np.ones(4, np.float32)),
    "conv2d": lambda: F.conv2d(IMG, KER, np.ones(4, np.float32)),
    "conv3d": lambda: F.conv3d(IMG[:, :, None], KER[:, :, None]),
}
X = A.astype(BF16)
T = (_rng.random(size=(4, 6)) > 0.5).astype(BF16)
LABELS = np.array([0, 5, 2, 1])
# one call per name of amp.FLOAT32, on bfloat16 operands
FLOAT32_CALLS = {
    "sum": lambda: fnp.sum(X), "mean": lambda: fnp.mean(X, 0), "var": lambda: fnp.var(X),
    "std": lambda: fnp.std(X, 1), "prod": lambda: fnp.prod(X[:2]),
    "cumsum": lambda: fnp.cumsum(X), "cumprod": lambda: fnp.cumprod(X[0]),
    "nansum": lambda: fnp.nansum(X), "nanmean": lambda: fnp.nanmean(X),
    "softmax": lambda: F.softmax(X, -1), "log_softmax": lambda: F.log_softmax(X, -1),
    "layer_norm": lambda: F.layer_norm(X, (6,)),
    "group_norm": lambda: F.group_norm(X.reshape(4, 6, 1), 2),
    "normalize": lambda: F.normalize(X),
    "mse_loss": lambda: F.mse_loss(X, T), "l1_loss": lambda: F.l1_loss(X, T),
    "smooth_l1_loss": lambda: F.smooth_l1_loss(X, T), "huber_loss": lambda: F.huber_loss(X, T),
    "nll_loss": lambda: F.nll_loss(F.log_softmax(X, -1), LABELS),
    "cross_entropy": lambda: F.cross_entropy(X, LABELS),
    "binary_cross_entropy": lambda: F.binary_cross_entropy(F.sigmoid(X), T),
    "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(X, T),
    "kl_div": lambda: F.kl_div(F.log_softmax(X, -1), F.softmax(X, -1)),
    "cosine_embedding_loss": lambda: F.cosine_embedding_loss(X, X[::-1], np.ones(4, BF16)),
    "margin_ranking_loss": lambda: F.margin_ranking_loss(X[0], X[1], np.ones(6, BF16)),
    "triplet_margin_loss": lambda: F.triplet_margin_loss(X, X[::-1], X[[1, 0, 3, 2]]),
}


def test_the_documented_lists_are_the_tested_ones():
    assert set(LOWERED_CALLS) == set(amp.LOWERED)
    assert set(FLOAT32_CALLS) == set(amp.FLOAT32)


@pytest.mark.parametrize("name", amp.LOWERED)
def test_products_and_convolutions_run_in_bfloat16(name):
    full = LOWERED_CALLS[name]()
    with fc.autocast():
        low = LOWERED_CALLS[name]()
    assert full.dtype == F32 and low.dtype == BF16
    # the operands rounded to bfloat16, the product accumulated in float32, rounded once:
    # within two bf16 roundings of the operands' relative error of the float32 result
    scale = np.max(np.abs(full)) + 1
    assert np.max(np.abs(low.astype(np.float64) - full)) <= 8 * 2.0 ** -8 * scale * 6


@pytest.mark.parametrize("name", amp.FLOAT32)
def test_reductions_norms_and_losses_run_in_float32(name):
    with fc.autocast():
        got = FLOAT32_CALLS[name]()
    assert np.asarray(got).dtype == F32
    want = FLOAT32_CALLS[name]()      # the same call without autocast: bfloat16 throughout
    assert np.asarray(want).dtype in (BF16, F32)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=0.05, atol=0.05)


def test_float32_operations_are_exact_float32_of_the_widened_operands():
    with fc.autocast():
        got = F.softmax(X, -1)
    np.testing.assert_array_equal(got, F.softmax(X.astype(F32), -1))


def test_other_ops_keep_their_dtypes_and_float64_is_not_lowered():
    with fc.autocast():
        assert fnp.tanh(A).dtype == F32
        assert fnp.matmul(A.astype(np.float64), B.astype(np.float64)).dtype == np.float64
        assert (fnp.matmul(A, B) + np.ones(5, np.float32)).dtype == F32   # NumPy promotion


def test_float32_grads_of_float32_params_under_autocast():
    def loss(w):
        return F.cross_entropy(F.linear(A, w), LABELS % 5)
    w = _rng.normal(size=(5, 6)).astype(np.float32)
    with fc.autocast():
        g = fc.grad(loss)(w)
        gj = fc.jit(fc.grad(loss), **_interp)(w)
    g32 = fc.grad(loss)(w)
    assert g.dtype == gj.dtype == F32
    np.testing.assert_array_equal(g, gj)
    np.testing.assert_allclose(g, g32, atol=4 * 2.0 ** -8 * np.abs(g32).max())


def test_jit_compiles_once_per_autocast_state():
    f = fc.jit(lambda a, b: a @ b, **_interp)
    assert f(A, B).dtype == F32
    with fc.autocast():
        assert f(A, B).dtype == BF16
        assert f(A, B).dtype == BF16
        with fc.autocast(enabled=False):
            assert f(A, B).dtype == F32
    assert f(A, B).dtype == F32
    with fc.autocast(dtype=np.float16):
        assert f(A, B).dtype == F16


def test_scoped_blocks_close_on_every_exit_so_the_fast_path_returns():
    # jit's fast path steps aside while any autocast / matmul precision block is open
    f = fc.jit(lambda a, b: a @ b, **_interp)
    with pytest.raises(ZeroDivisionError):
        with fc.autocast(), fc.default_matmul_precision("high"):
            assert scopes.OPEN[0] == 2
            assert f(A, B).dtype == BF16
            raise ZeroDivisionError
    assert scopes.OPEN[0] == 0
    assert f(A, B).dtype == F32 and f(A, B).dtype == F32


def test_autocast_inside_a_jitted_function_and_as_a_decorator():
    def inside(a, b):
        with fc.autocast():
            y = a @ b
        return y, fnp.sum(y)
    y, s = fc.jit(inside, **_interp)(A, B)
    assert y.dtype == BF16 and s.dtype == BF16      # the sum is outside the block

    @fc.autocast()
    def decorated(a, b):
        return fnp.matmul(a, b)     # (NumPy arrays' own ``@`` is NumPy's, outside any trace)
    assert decorated(A, B).dtype == BF16
    assert fnp.matmul(A, B).dtype == F32            # off again after the call
    assert not amp.is_autocast_enabled() and amp.get_autocast_dtype() == BF16


def test_nn_modules_under_autocast():
    fc.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 10))
    with fc.autocast():
        out = model(IMG)
        loss = F.cross_entropy(out, np.array([1, 2]))
    assert out.dtype == BF16 and loss.dtype == F32
    np.testing.assert_allclose(out.astype(F32), model(IMG), atol=0.05 * np.abs(model(IMG)).max())


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="device_type must be 'cpu' or 'cuda'"):
        fc.autocast("tpu")
    with pytest.raises(ValueError, match="dtype must be bfloat16 or float16, got float64"):
        fc.autocast(dtype=np.float64)
    with pytest.raises(TypeError, match="enabled must be a bool"):
        fc.autocast(enabled="yes")


def test_module_bfloat16_and_half_cast_float_state_only():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m.bfloat16()
    assert m[0].weight.dtype == BF16 and m[1].running_mean.dtype == BF16
    assert m[1].num_batches_tracked.dtype == np.int64
    assert isinstance(m[0].weight, nn.Parameter)
    m.half()
    assert m[0].weight.dtype == F16


@pytest.mark.parametrize("make", [optim.sgd, optim.adam, optim.adamw, optim.rmsprop,
                                  optim.adagrad, optim.lion], ids=lambda f: f.__name__)
def test_master_weights_follow_the_float32_trajectory(make):
    # float32 params and their bf16 copies, the same float32 gradients: with float32 master
    # weights the bf16 run is the float32 run rounded (its state is float32 throughout)
    p32 = {"w": _rng.normal(size=8).astype(np.float32)}
    opt32, optm = make(lr=1e-3), make(lr=1e-3, master_dtype=np.float32)
    s32 = opt32.init(p32)
    pb = {"w": p32["w"].astype(BF16)}
    sm = optm.init({"w": p32["w"]})      # the master copy starts from the float32 values
    for i in range(20):
        g = {"w": np.sin(np.arange(8) + i).astype(np.float32)}
        p32, s32 = opt32.update(g, s32, p32)
        pb, sm = optm.update(g, sm, pb)
    assert pb["w"].dtype == BF16 and sm["master"]["w"].dtype == F32
    np.testing.assert_allclose(sm["master"]["w"], p32["w"], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(pb["w"], p32["w"].astype(BF16))


def test_without_master_weights_small_bf16_updates_are_lost():
    p = {"w": np.ones(4, BF16)}
    for md, moved in ((None, False), (np.float32, True)):
        opt = optim.sgd(lr=1e-3, master_dtype=md)
        s, q = opt.init(p), p
        for _ in range(100):
            q, s = opt.update({"w": np.ones(4, BF16)}, s, q)
        assert (float(q["w"][0]) < 1.0) == moved      # 1e-3 < half of bf16's ulp at 1


def test_master_dtype_must_be_a_float():
    with pytest.raises(TypeError, match="adam: master_dtype must be a float dtype, got int32"):
        optim.adam(master_dtype=np.int32)
