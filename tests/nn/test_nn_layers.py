"""nn layers and functionals against NumPy references (no torch needed), check_grads,
vmap-vs-loop, and the errors for bad input."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F
from functorch_core.testing import check_grads

rng = np.random.default_rng(1)


def np_conv2d(x, w, b, stride, pad, dil, groups):
    x = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * cg:(g + 1) * cg,
                          i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                          j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, oc, i, j] = (patch * w[oc]).sum((1, 2, 3))
    return out + b[None, :, None, None]


@pytest.mark.parametrize("kw,pads", [
    (dict(stride=1, padding=0), ((0, 0), (0, 0))),
    (dict(stride=2, padding=1), ((1, 1), (1, 1))),
    (dict(padding="same", dilation=2), ((2, 2), (1, 1))),   # kernel (3, 2): total 4 and 2
    (dict(padding=(1, 0), groups=2), ((1, 1), (0, 0))),
])
def test_conv2d_matches_numpy(kw, pads):
    fc.manual_seed(0)
    conv = nn.Conv2d(4, 6, (3, 2), dtype=np.float64, **kw)
    x = rng.standard_normal((2, 4, 6, 5))
    stride = (kw.get("stride", 1),) * 2
    dil = (kw.get("dilation", 1),) * 2
    ref = np_conv2d(x, np.asarray(conv.weight), np.asarray(conv.bias), stride, pads, dil,
                    kw.get("groups", 1))
    np.testing.assert_allclose(conv(x), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fc.jit(lambda m, x: m(x))(conv, x), ref, rtol=1e-10,
                               atol=1e-12)


def test_conv2d_same_even_kernel_pads_right():
    x = rng.standard_normal((1, 1, 5, 5))
    w = rng.standard_normal((1, 1, 2, 2))
    ref = np_conv2d(x, w, np.zeros(1), (1, 1), ((0, 1), (0, 1)), (1, 1), 1)
    np.testing.assert_allclose(F.conv2d(x, w, padding="same"), ref, rtol=1e-12)


def test_pooling_matches_numpy():
    x = rng.standard_normal((2, 3, 6, 6))
    ref_max = x.reshape(2, 3, 3, 2, 3, 2).max((3, 5))
    np.testing.assert_allclose(nn.MaxPool2d(2)(x), ref_max)
    np.testing.assert_allclose(nn.AvgPool2d(2)(x), x.reshape(2, 3, 3, 2, 3, 2).mean((3, 5)))
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(x), x.mean((2, 3), keepdims=True))
    np.testing.assert_allclose(F.avg_pool2d(x, 2, divisor_override=3),
                               x.reshape(2, 3, 3, 2, 3, 2).sum((3, 5)) / 3)


def test_batchnorm_numpy_reference_train_and_eval():
    bn = nn.BatchNorm2d(3, dtype=np.float64)
    bn.weight[...] = [1.0, 2.0, 0.5]
    bn.bias[...] = [0.0, 1.0, -1.0]
    x = rng.standard_normal((4, 3, 2, 2)) * 3 + 1
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    ref = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    ref = ref * np.array([1.0, 2.0, 0.5])[:, None, None] + np.array([0, 1, -1.0])[:, None, None]
    np.testing.assert_allclose(bn(x), ref, rtol=1e-12)
    np.testing.assert_allclose(bn.running_mean, 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var, 0.9 + 0.1 * x.var((0, 2, 3), ddof=1))
    bn.eval()
    ev = (x - bn.running_mean[:, None, None]) / np.sqrt(bn.running_var[:, None, None] + 1e-5)
    ev = ev * np.array([1.0, 2.0, 0.5])[:, None, None] + np.array([0, 1, -1.0])[:, None, None]
    np.testing.assert_allclose(bn(x), ev, rtol=1e-12)
    # eval-mode gradient does not flow into the running statistics
    g = fc.grad(lambda m: m(x).sum())(bn)
    assert np.all(g.running_mean == 0) and np.all(g.running_var == 0)


def test_batchnorm_momentum_none_is_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None, dtype=np.float64)
    xs = [rng.standard_normal((5, 2)) for _ in range(3)]
    for x in xs:
        bn(x)
    np.testing.assert_allclose(bn.running_mean, np.mean([x.mean(0) for x in xs], 0),
                               rtol=1e-12)
    assert bn.num_batches_tracked == 3


def test_layer_norm_and_check_grads():
    x = rng.standard_normal((3, 4, 5))
    ln = nn.LayerNorm((4, 5), dtype=np.float64)
    ref = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln(x), ref, rtol=1e-10)
    check_grads(lambda x: F.layer_norm(x, (5,)), (x,), order=2)


@pytest.mark.parametrize("fn", [F.relu6, F.leaky_relu, F.elu, F.selu, F.sigmoid, F.silu,
                                F.mish, F.softplus, F.hardswish, F.tanh, F.gelu,
                                lambda x: F.gelu(x, approximate="tanh"),
                                lambda x: F.softmax(x, -1), lambda x: F.log_softmax(x, 0)])
def test_activations_check_grads_and_vmap(fn):
    x = rng.standard_normal((3, 4)) * 2
    x[np.abs(x) < 0.05] += 0.2         # away from kinks
    x[np.abs(np.abs(x) - 3) < 0.05] += 0.2
    check_grads(fn, (x,), order=1)
    np.testing.assert_allclose(fc.vmap(fn)(x), np.stack([fn(r) for r in x]), rtol=1e-12)


def test_activation_values():
    x = np.array([-30.0, -2.0, -0.5, 0.5, 2.0, 30.0])
    np.testing.assert_allclose(F.sigmoid(x), 1 / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(F.softplus(x), np.log1p(np.exp(x)), rtol=1e-12)
    np.testing.assert_allclose(F.elu(x), np.where(x > 0, x, np.expm1(x)))
    np.testing.assert_allclose(F.hardswish(x), x * np.clip(x + 3, 0, 6) / 6)
    np.testing.assert_allclose(F.softmax(x, 0), np.exp(x) / np.exp(x).sum(), rtol=1e-12)


def test_erf_and_gelu_against_scipy():
    special = pytest.importorskip("scipy.special")
    from functorch_core.nn.functional._erf import erf, erfc
    x = np.concatenate([np.linspace(-9, 9, 3001), [0.0, 1.0, -1.0, 8.0, 30.0, 1e-200]])
    np.testing.assert_allclose(erf(x), special.erf(x), rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(fc.jit(erf)(x), special.erf(x), rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(erfc(x), special.erfc(x), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(F.gelu(x), x * special.ndtr(x), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(fc.vmap(fc.grad(erf))(x[:50]),
                               2 / np.sqrt(np.pi) * np.exp(-x[:50] ** 2), rtol=1e-13)


def test_cross_entropy_numpy_reference_and_grads():
    x = rng.standard_normal((6, 4))
    t = np.array([0, 1, 2, 3, -100, 1])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    keep = t != -100
    ref = -logp[np.arange(6)[keep], t[keep]].mean()
    np.testing.assert_allclose(F.cross_entropy(x, t), ref, rtol=1e-12)
    np.testing.assert_allclose(nn.CrossEntropyLoss()(x, t), ref, rtol=1e-12)
    check_grads(lambda x: F.cross_entropy(x, t, label_smoothing=0.1), (x,), order=2)
    np.testing.assert_allclose(F.one_hot(np.array([0, 2]), 3), [[1, 0, 0], [0, 0, 1]])
    p = np.exp(logp[::-1])
    check_grads(lambda x: F.cross_entropy(x, p), (x,), order=1)


def test_embedding_and_padding_idx_gradient():
    fc.manual_seed(0)
    emb = nn.Embedding(5, 3, padding_idx=0, dtype=np.float64)
    assert np.all(emb.weight[0] == 0)
    idx = np.array([0, 2, 2, 4])
    np.testing.assert_array_equal(emb(idx), np.asarray(emb.weight)[idx])
    g = fc.grad(lambda m: m(idx).sum())(emb)
    np.testing.assert_array_equal(g.weight[:, 0], [0, 0, 2, 0, 1])


def test_bad_input_errors_name_module_and_shapes():
    with pytest.raises(ValueError, match=r"Linear\(in_features=3\): input of shape \(2, 4\)"):
        nn.Linear(3, 2)(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"Conv2d\(in_channels=3\).*got \(1, 2, 5, 5\)"):
        nn.Conv2d(3, 4, 3)(np.ones((1, 2, 5, 5)))
    with pytest.raises(ValueError, match=r"BatchNorm2d\(num_features=3\).*\(2, 3, 4\)"):
        nn.BatchNorm2d(3)(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"nll_loss: input of shape \(3, 4\) needs target of "
                                         r"shape \(3,\), got \(2,\)"):
        F.cross_entropy(np.zeros((3, 4)), np.array([0, 1]))
    with pytest.raises(ValueError, match="reduction must be"):
        F.mse_loss(np.ones(2), np.ones(2), reduction="avg")
    with pytest.raises(ValueError, match=r"LayerNorm\(normalized_shape=\(4,\)\)"):
        nn.LayerNorm(4)(np.ones((2, 3)))


def test_conv_net_end_to_end_jit_grad():
    fc.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, dtype=np.float64),
                        nn.BatchNorm2d(4, dtype=np.float64), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(4 * 4 * 4, 3, dtype=np.float64))
    x = rng.standard_normal((5, 1, 8, 8))
    t = np.array([0, 1, 2, 1, 0])
    params = {k: np.array(v) for k, v in net.named_parameters()}
    buffers = {k: np.array(v) for k, v in net.named_buffers()}

    def loss(p, b, x, t):
        return F.cross_entropy(fc.functional_call(net, (p, b), (x,)), t)
    lv, g = fc.jit(fc.value_and_grad(loss))(params, buffers, x, t)
    np.testing.assert_allclose(lv, loss(params, dict(buffers), x, t), rtol=1e-10)
    assert sorted(g) == sorted(params)
    with pytest.raises(TypeError, match=r"running_mean \(shape \(4,\)\).*Pass the buffers"):
        fc.grad(lambda p: loss(p, buffers, x, t))(params)       # buffers closed over
    net.eval()
    check_grads(lambda p: loss(p, buffers, x, t), (params,), order=1, modes=("rev",))
    out = fc.jit(lambda m, x: m(x))(net, x)
    assert out.shape == (5, 3)
