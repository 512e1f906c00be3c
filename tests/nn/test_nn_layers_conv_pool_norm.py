"""The second batch of nn layers and functionals without PyTorch: NumPy references,
check_grads, vmap against a loop, jit against eager, and errors naming the shapes."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F
from functorch_core.testing import check_grads

rng = np.random.default_rng(2)


def np_conv_transpose1d(x, w, b, stride, pad, out_pad, groups, dil):
    n, cin, length = x.shape
    cout_g, k = w.shape[1], w.shape[2]
    full = (length - 1) * stride + dil * (k - 1) + 1 + out_pad
    out = np.zeros((n, cout_g * groups, full))
    cin_g = cin // groups
    for g in range(groups):
        for ci in range(g * cin_g, (g + 1) * cin_g):
            for co in range(cout_g):
                for i in range(length):
                    for j in range(k):
                        out[:, g * cout_g + co, i * stride + j * dil] += (
                            x[:, ci, i] * w[ci, co, j])
    out = out[:, :, pad:full - pad]
    return out + (0 if b is None else b[:, None])


@pytest.mark.parametrize("stride,pad,out_pad,groups,dil",
                         [(1, 0, 0, 1, 1), (2, 1, 1, 2, 1), (3, 2, 0, 1, 2), (2, 0, 1, 4, 3)])
def test_conv_transpose1d_matches_numpy(stride, pad, out_pad, groups, dil):
    x, w = rng.standard_normal((2, 4, 5)), rng.standard_normal((4, 2, 3))
    b = rng.standard_normal(2 * groups)
    got = F.conv_transpose1d(x, w, b, stride, pad, out_pad, groups, dil)
    np.testing.assert_allclose(got, np_conv_transpose1d(x, w, b, stride, pad, out_pad, groups, dil),
                               rtol=1e-12, atol=1e-12)


def test_conv_transpose_is_the_adjoint_of_conv():
    x, w = rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((4, 3, 3, 2))
    y = rng.standard_normal((2, 3, 11, 10))
    kw = dict(stride=2, padding=1, dilation=(1, 2))
    lhs = np.sum(F.conv_transpose2d(x, w, output_padding=(0, 1), **kw) * y)
    rhs = np.sum(x * F.conv2d(y, w, **kw))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


def test_conv3d_is_a_sum_of_conv2d_slices():
    x, w = rng.standard_normal((1, 2, 4, 5, 5)), rng.standard_normal((3, 2, 2, 3, 3))
    got = F.conv3d(x, w, padding=(0, 1, 1))
    want = np.stack([sum(F.conv2d(x[:, :, d + i], w[:, :, i], padding=1) for i in range(2))
                     for d in range(3)], axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap"), ("constant", "constant")])
def test_pad_matches_numpy(mode, np_mode):
    x = rng.standard_normal((2, 3, 5, 4))
    got = F.pad(x, (1, 3, 2, 0), mode=mode)
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (0, 0), (2, 0), (1, 3)], np_mode))
    np.testing.assert_array_equal(F.pad(x, (-1, 2), value=7.0)[..., :3], x[..., 1:])
    np.testing.assert_array_equal(F.pad(x, (-1, 2), value=7.0)[..., 3:], 7.0)


def test_padding_mode_conv_equals_pad_then_conv():
    conv = nn.Conv2d(3, 2, 3, padding=(2, 1), padding_mode="reflect", dtype=np.float64)
    x = rng.standard_normal((1, 3, 6, 5))
    want = F.conv2d(np.pad(x, [(0, 0), (0, 0), (2, 2), (1, 1)], "reflect"), conv.weight,
                    conv.bias)
    np.testing.assert_allclose(conv(x), want, rtol=1e-12)


def test_interpolate_numpy_references():
    x = rng.standard_normal((1, 2, 3, 4))
    np.testing.assert_array_equal(F.interpolate(x, scale_factor=2),
                                  x.repeat(2, axis=2).repeat(2, axis=3))
    y = F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(y[..., ::2, ::2], x, rtol=1e-12)     # corners stay on samples
    np.testing.assert_allclose(y[..., 1, :][..., ::2], (x[..., 0, :] + x[..., 1, :]) / 2,
                               rtol=1e-12)
    # align_corners=False, factor 2: interior samples at 1/4 and 3/4 between neighbours
    z = F.interpolate(x[:, :, 0], scale_factor=2, mode="linear")
    np.testing.assert_allclose(z[..., 1:-1:2], 0.75 * x[:, :, 0, :-1] + 0.25 * x[:, :, 0, 1:],
                               rtol=1e-12)


def test_grads_vmap_jit():
    x = rng.standard_normal((2, 2, 4))
    w = rng.standard_normal((2, 3, 3))
    check_grads(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1), (x, w), order=2)
    check_grads(lambda x: F.pad(x, (2, 1), mode="reflect"), (x,), order=1)
    check_grads(lambda x: F.interpolate(x, size=7, mode="linear"), (x,), order=1)
    check_grads(lambda a, b: F.cosine_similarity(a, b, dim=-1), (x, x[::-1] + 1), order=2)

    def f(x):
        return F.interpolate(F.pad(x, (1, 1), mode="circular"), scale_factor=1.5,
                             mode="linear")
    xs = rng.standard_normal((3, 2, 2, 4))
    np.testing.assert_allclose(fc.vmap(f)(xs), np.stack([f(v) for v in xs]), rtol=1e-12)
    np.testing.assert_allclose(fc.jit(f)(x), f(x), rtol=1e-12)
    up = nn.ConvTranspose2d(2, 3, 3, stride=2, dtype=np.float64)
    xi = rng.standard_normal((3, 2, 4, 4))
    np.testing.assert_allclose(fc.vmap(up)(xi[:, None])[:, 0], up(xi), rtol=1e-12)
    np.testing.assert_allclose(fc.jit(up)(xi), up(xi), rtol=1e-12)


def test_distance_numpy_references():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(F.normalize(a), a / np.linalg.norm(a, axis=1, keepdims=True))
    np.testing.assert_allclose(F.cosine_similarity(a, b),
                               np.sum(a * b, 1) / np.linalg.norm(a, axis=1)
                               / np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(F.pairwise_distance(a, b, eps=0.0),
                               np.linalg.norm(a - b, axis=-1))


def test_conv_layer_errors():
    with pytest.raises(ValueError, match=r"ConvTranspose2d\(in_channels=4\).*\(2, 3, 5, 5\)"):
        nn.ConvTranspose2d(4, 2, 3)(np.ones((2, 3, 5, 5), np.float32))
    with pytest.raises(ValueError, match=r"Conv3d\(in_channels=2\).*\(2, 2, 5\)"):
        nn.Conv3d(2, 2, 3)(np.ones((2, 2, 5), np.float32))
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="valid sizes of dimension 0 range from 9 to 10"):
        nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1)(np.ones((1, 2, 5, 5), np.float32),
                                                        output_size=(11, 10))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose1d(np.ones((1, 1, 3)), np.ones((1, 1, 2)), output_padding=1)
    with pytest.raises(ValueError, match=r"should be less than.*reflect"):
        F.pad(np.ones((1, 2, 3)), (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="last 1 to 3 dimensions"):
        F.pad(np.ones((1, 2, 3, 4)), (1, 1), mode="replicate")
    with pytest.raises(ValueError, match="bilinear mode needs 4D input"):
        F.interpolate(np.ones((1, 2, 3)), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(np.ones((1, 2, 3)), size=4, scale_factor=2)


def np_max_pool1d(x, k, s, p, d, ceil):
    length = x.shape[-1]
    span = length + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= length + p:
        out -= 1
    xp = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p + k * d)], constant_values=-np.inf)
    vals = np.stack([xp[..., o * s: o * s + d * (k - 1) + 1: d] for o in range(out)], -2)
    return vals.max(-1), vals.argmax(-1) + np.arange(out) * s - p + 0 * d


@pytest.mark.parametrize("k,s,p,d,ceil", [(2, 2, 0, 1, False), (3, 2, 1, 1, True),
                                          (2, 1, 1, 2, False), (3, 3, 1, 1, True)])
def test_max_pool1d_matches_numpy(k, s, p, d, ceil):
    x = rng.standard_normal((2, 3, 10))
    want, _ = np_max_pool1d(x, k, s, p, d, ceil)
    got, idx = F.max_pool1d(x, k, s, p, d, ceil, return_indices=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.take_along_axis(x, idx, -1), got)   # indices point at it
    np.testing.assert_array_equal(nn.MaxPool1d(k, s, p, d, ceil_mode=ceil)(x), want)


def test_avg_pool_and_adaptive_numpy_references():
    x = rng.standard_normal((2, 3, 7))
    np.testing.assert_allclose(F.avg_pool1d(x, 2), (x[..., 0:6:2] + x[..., 1:6:2]) / 2)
    # ceil_mode: the last window holds x[6] alone (count_include_pad does not count the
    # overhang beyond the padding)
    np.testing.assert_allclose(F.avg_pool1d(x, 2, ceil_mode=True)[..., -1], x[..., 6])
    np.testing.assert_allclose(F.avg_pool1d(x, 3, 2, 1)[..., 0], (x[..., 0] + x[..., 1]) / 3)
    np.testing.assert_allclose(F.avg_pool1d(x, 3, 2, 1, count_include_pad=False)[..., 0],
                               (x[..., 0] + x[..., 1]) / 2)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 3),
                               np.stack([x[..., 0:3].mean(-1), x[..., 2:5].mean(-1),
                                         x[..., 4:7].mean(-1)], -1))
    vals, idx = F.adaptive_max_pool2d(x[None], (2, 3), return_indices=True)
    flat = x[None].reshape(1, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.reshape(1, 2, -1), -1),
                                  vals.reshape(1, 2, -1))


def test_pool_grads_vmap_jit_errors():
    x = rng.standard_normal((2, 2, 6))
    check_grads(lambda a: F.max_pool1d(a, 3, 2, 1, ceil_mode=True, return_indices=True)[0],
                (x,), order=1)
    check_grads(lambda a: F.avg_pool1d(a, 3, 2, 1, ceil_mode=True), (x,), order=2)
    check_grads(lambda a: F.adaptive_max_pool1d(a, 4), (x,), order=1)
    pool = nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True)
    xs = rng.standard_normal((3, 2, 5, 5))
    vv, vi = fc.vmap(pool)(xs)
    for i in range(3):
        np.testing.assert_array_equal(vv[i], pool(xs[i])[0])
        np.testing.assert_array_equal(vi[i], pool(xs[i])[1])
    jv, ji = fc.jit(pool)(xs)
    np.testing.assert_array_equal(jv, pool(xs)[0])
    np.testing.assert_array_equal(ji, pool(xs)[1])
    with pytest.raises(ValueError, match=r"max_pool1d: expected a 2-D \(C, L\).*\(5,\)"):
        F.max_pool1d(np.ones(5), 2)
    with pytest.raises(ValueError, match=r"MaxPool1d\(kernel_size=2.*expected a 2-D.*\(5,\)"):
        nn.MaxPool1d(2)(np.ones(5))
    with pytest.raises(ValueError, match=r"AdaptiveAvgPool2d\(output_size=3\).*\(2, 5\)"):
        nn.AdaptiveAvgPool2d(3)(np.ones((2, 5)))
    with pytest.raises(ValueError, match="pad should be at most half"):
        F.avg_pool2d(np.ones((1, 4, 4)), 2, padding=2)
    with pytest.raises(ValueError, match="too small"):
        F.max_pool1d(np.ones((1, 2)), 3)


def test_group_and_instance_norm_numpy_references():
    x = rng.standard_normal((3, 6, 4, 5))
    g = x.reshape(3, 2, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(F.group_norm(x, 2), want.reshape(x.shape), rtol=1e-12)
    m, v = x.mean((2, 3), keepdims=True), x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(F.instance_norm(x), (x - m) / np.sqrt(v + 1e-5), rtol=1e-12)
    norm = nn.InstanceNorm2d(6, momentum=0.5, track_running_stats=True, dtype=np.float64)
    norm(x)
    np.testing.assert_allclose(norm.running_mean, 0.5 * m.reshape(3, 6).mean(0))
    np.testing.assert_allclose(norm.running_var,
                               0.5 + 0.5 * (v.reshape(3, 6) * 20 / 19).mean(0))
    # GroupNorm with one group per channel is InstanceNorm
    np.testing.assert_allclose(F.group_norm(x, 6), F.instance_norm(x), rtol=1e-12)


def test_norm_grads_vmap_jit_errors():
    x = rng.standard_normal((2, 4, 5))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    check_grads(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b), order=2)
    check_grads(lambda x: F.instance_norm(x), (x,), order=2)
    gn = nn.GroupNorm(2, 4, dtype=np.float64)
    np.testing.assert_allclose(fc.vmap(gn)(x[:, None])[:, 0], gn(x), rtol=1e-12)
    np.testing.assert_allclose(fc.jit(gn)(x), gn(x), rtol=1e-12)
    inorm = nn.InstanceNorm1d(4, affine=True, dtype=np.float64)
    np.testing.assert_allclose(fc.vmap(inorm)(x), inorm(x), rtol=1e-12)   # unbatched rows
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"GroupNorm\(num_groups=2, num_channels=4\).*\(2, 3, 5\)"):
        gn(np.ones((2, 3, 5)))
    with pytest.raises(ValueError, match=r"InstanceNorm1d\(num_features=4\).*\(2, 3, 5\)"):
        inorm(np.ones((2, 3, 5)))
    with pytest.raises(ValueError, match=r"InstanceNorm1d.*expected a 2-D.*\(5,\)"):
        inorm(np.ones(5))
    with pytest.warns(UserWarning, match="affine=False"):
        nn.InstanceNorm1d(4)(np.ones((2, 3, 5)))


def test_feature_dropout_masks_whole_channels():
    from functorch_core import random
    x = np.ones((64, 32, 5))
    y = F.dropout1d(x, 0.25, key=random.key(3))
    kept = y[..., 0] != 0
    np.testing.assert_array_equal(y, np.where(kept[..., None], x / 0.75, 0.0))
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_array_equal(F.dropout1d(x, 0.25, key=random.key(3)), y)   # keyed
    y2 = F.dropout2d(np.ones((8, 16, 3, 4)), 0.5, key=random.key(1))
    assert set(np.unique(y2.reshape(8, 16, -1).std(-1))) == {0.0}
    u = F.dropout1d(x[0], 0.5, key=random.key(2))                          # unbatched (C, L)
    assert set(np.unique(u.std(-1))) == {0.0} and u.shape == (32, 5)
    with pytest.warns(UserWarning, match=r"3-D input.*\(N, C, L\)"):
        F.dropout2d(x, 0.5, key=random.key(0))
    drop = nn.Dropout2d(0.4)
    drop.eval()
    np.testing.assert_array_equal(drop(y2), y2)
    g = fc.grad(lambda a: F.dropout1d(a, 0.5, key=random.key(4)).sum())(x[:4])
    np.testing.assert_array_equal(g, F.dropout1d(x[:4], 0.5, key=random.key(4)))
    with pytest.raises(ValueError, match=r"dropout1d: expected a 2-D.*\(2, 3, 4, 5\)"):
        nn.Dropout1d()(np.ones((2, 3, 4, 5)))
    out = fc.vmap(lambda a: nn.Dropout1d(0.5)(a), randomness="different")(x[:6])
    assert out.shape == (6, 32, 5)


def test_prelu_bilinear_numpy_references():
    x = rng.standard_normal((2, 3, 4))
    prelu = nn.PReLU(3, init=0.2, dtype=np.float64)
    np.testing.assert_allclose(prelu(x), np.where(x > 0, x, 0.2 * x))
    check_grads(lambda a, w: F.prelu(a, w), (x, np.array([0.3, -0.2, 0.5])), order=1)
    with pytest.raises(ValueError, match=r"prelu: mismatch.*\(4,\).*\(2, 3, 4\)"):
        nn.PReLU(4)(x)
    bil = nn.Bilinear(3, 4, 2, dtype=np.float64)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(bil(a, b), np.einsum("bi,oij,bj->bo", a, bil.weight, b)
                               + bil.bias, rtol=1e-12)
    check_grads(lambda a, b, w: F.bilinear(a, b, w), (a, b, np.array(bil.weight)), order=2)
    np.testing.assert_allclose(fc.jit(bil)(a, b), bil(a, b), rtol=1e-12)
    np.testing.assert_allclose(fc.vmap(bil)(a, b), bil(a, b), rtol=1e-12)
    assert bil.weight.shape == (2, 3, 4) and np.all(np.abs(bil.weight) <= 1 / np.sqrt(3))
    with pytest.raises(ValueError, match=r"Bilinear\(in1_features=3, in2_features=4\).*"
                                         r"input2 of shape \(5, 3\)"):
        bil(a, a)


def np_embedding_bag(idx, w, offsets, mode, psw=None, pad=None):
    ends = list(offsets[1:]) + [len(idx)]
    out = []
    for s, e in zip(offsets, ends, strict=True):
        keep = [i for i in range(s, e) if idx[i] != pad]
        rows = w[idx[keep]] * (1 if psw is None else psw[keep][:, None])
        if not keep:
            out.append(np.zeros(w.shape[1]))
        else:
            out.append({"sum": rows.sum, "mean": rows.mean, "max": rows.max}[mode](0))
    return np.stack(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_numpy_reference(mode):
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5])
    bag = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=4, dtype=np.float64)
    assert np.all(bag.weight[4] == 0)
    np.testing.assert_allclose(bag(idx, offsets), np_embedding_bag(idx, bag.weight, offsets,
                                                                   mode, pad=4), rtol=1e-12)
    np.testing.assert_allclose(fc.jit(bag)(idx, offsets), bag(idx, offsets), rtol=1e-12)
    psw = rng.standard_normal(8)
    if mode == "sum":
        np.testing.assert_allclose(
            F.embedding_bag(idx, bag.weight, offsets, mode="sum", per_sample_weights=psw),
            np_embedding_bag(idx, bag.weight, offsets, "sum", psw), rtol=1e-12)
        check_grads(lambda w, p: F.embedding_bag(idx, w, offsets, mode="sum",
                                                 per_sample_weights=p),
                    (np.array(bag.weight), psw), order=1)
    else:
        with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
            bag(idx, offsets, psw)
    with pytest.raises(ValueError, match=r"\(2, 4\).*offsets has to be None"):
        bag(idx.reshape(2, 4), offsets)


def test_embedding_max_norm_renormalises_in_place():
    emb = nn.Embedding(6, 4, max_norm=1.0, dtype=np.float64)
    emb.weight[...] = rng.standard_normal((6, 4)) * 3
    untouched = np.array(emb.weight[[0, 5]])
    out = emb(np.array([[1, 2], [2, 3]]))
    norms = np.linalg.norm(emb.weight, axis=1)
    np.testing.assert_allclose(norms[1:4], 1.0, rtol=1e-6)
    np.testing.assert_array_equal(emb.weight[[0, 5]], untouched)
    np.testing.assert_array_equal(out[0, 1], emb.weight[2])
    w = np.array(emb.weight) * 5
    fc.jit(lambda w, i: F.embedding(i, w, max_norm=2.0))(w, np.array([0, 1]))
    np.testing.assert_allclose(np.linalg.norm(w[:2], axis=1), 2.0, rtol=1e-6)   # written back


def test_in_place_writes_into_a_closed_over_array_are_refused():
    # a traced value cannot be written into a concrete array the function closes over:
    # the error names the call, the array and its shape; nothing is written
    w = rng.standard_normal((5, 3)) * 3
    before = w.copy()
    with pytest.raises(TypeError, match=r"embedding: max_norm.*weight \(shape \(5, 3\)\) "
                                        r"in place.*closes over"):
        fc.jit(lambda i: F.embedding(i, w, max_norm=1.0))(np.array([0, 2]))
    np.testing.assert_array_equal(w, before)
    mean, var = np.zeros(3), np.ones(3)
    with pytest.raises(TypeError, match=r"batch_norm: training mode.*running_mean \(shape "
                                        r"\(3,\)\) in place.*closes over.*model.eval"):
        fc.jit(lambda x: F.batch_norm(x, mean, var, training=True))(rng.standard_normal((4, 3)))
    np.testing.assert_array_equal(mean, 0.0)


def test_default_init_and_state_dict_shapes():
    up = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert up.weight.shape == (4, 3, 3, 3) and up.bias.shape == (6,)
    bound = 1 / np.sqrt(3 * 9)                    # fan_in = out / groups * kernel area
    assert np.abs(up.weight).max() <= bound and np.abs(up.weight).max() > 0.8 * bound
    assert np.abs(up.bias).max() <= bound
    assert sorted(nn.InstanceNorm2d(3, track_running_stats=True).state_dict()) == [
        "num_batches_tracked", "running_mean", "running_var"]
    assert sorted(nn.GroupNorm(1, 3).state_dict()) == ["bias", "weight"]
    assert nn.PReLU(3).weight.tolist() == [0.25] * 3
    assert "ConvTranspose1d(2, 3, kernel_size=(3,), stride=(2,), output_padding=(1,))" in repr(
        nn.Sequential(nn.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1)))


def test_padding_mode_conv_under_jit_vmap_grad():
    conv = nn.Conv1d(2, 3, 3, padding=2, padding_mode="circular", dtype=np.float64)
    x = rng.standard_normal((4, 2, 6))
    np.testing.assert_allclose(fc.jit(conv)(x), conv(x), rtol=1e-12)
    np.testing.assert_allclose(fc.vmap(conv)(x), conv(x), rtol=1e-12)   # unbatched rows
    g = fc.grad(lambda m, x: (m(x) ** 2).sum())(conv, x)
    def loss(w):
        return (F.conv1d(F.pad(x, (2, 2), mode="circular"), w, conv.bias) ** 2).sum()
    check_grads(loss, (np.array(conv.weight),), order=1)
    np.testing.assert_allclose(g.weight, fc.grad(loss)(np.array(conv.weight)), rtol=1e-12)


@pytest.mark.parametrize("name", ["functional.vision", "functional.distance",
                                  "functional.pooling", "functional.normalization",
                                  "functional.conv", "functional.linear", "conv", "pooling",
                                  "normalization", "upsampling", "embedding", "linear"])
def test_docstring_examples(name):
    import doctest
    import importlib
    mod = importlib.import_module(f"functorch_core.nn.{name}")
    names = {"np": np, **{k: getattr(mod, k) for k in mod.__all__}}
    result = doctest.testmod(mod, extraglobs=names, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0, name


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(stride=st.integers(1, 3), pad=st.integers(0, 2), dil=st.integers(1, 2),
       groups=st.sampled_from([1, 2]), k=st.integers(1, 3), length=st.integers(3, 6),
       extra=st.integers(0, 2))
def test_conv_transpose_is_adjoint_of_conv_property(stride, pad, dil, groups, k, length,
                                                    extra):
    """<conv_transpose(x, w), y> == <x, conv(y, w)> for every geometry the pair accepts."""
    out_pad = extra % max(stride, dil)
    full = (length - 1) * stride - 2 * pad + dil * (k - 1) + out_pad + 1
    if full < 1:
        return
    r = np.random.default_rng(stride * 100 + pad * 10 + k)
    x, w = r.standard_normal((2, 2 * groups, length)), r.standard_normal((2 * groups, 3, k))
    y = r.standard_normal((2, 3 * groups, full))
    up = F.conv_transpose1d(x, w, None, stride, pad, out_pad, groups, dil)
    assert up.shape == y.shape
    down = F.conv1d(y, w, None, stride, pad, dil, groups)
    down = down[..., :length]          # output_padding's extra samples feed no x position
    np.testing.assert_allclose(np.sum(up * y), np.sum(x * down), rtol=1e-10)


@given(pads=st.lists(st.integers(-2, 3), min_size=2, max_size=7),
       mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]))
def test_pad_then_crop_is_identity_property(pads, mode):
    m = min(len(pads) // 2, 3)
    pads = tuple(pads[:2 * m])
    x = np.arange(2 * 5 ** (m + 1), dtype=np.float64).reshape((2,) + (5,) * (m + 1))
    grow = tuple(abs(p) for p in pads)
    np.testing.assert_array_equal(F.pad(F.pad(x, grow, mode=mode), tuple(-p for p in grow)), x)
    # constant mode: negative pads crop what slicing crops, positive ones pad as np.pad
    pairs = list(reversed(list(zip(pads[::2], pads[1::2], strict=True))))
    want = np.pad(x, [(0, 0)] * (x.ndim - m) + [(max(a, 0), max(b, 0)) for a, b in pairs])
    crop = [slice(None)] * (x.ndim - m) + [slice(max(-a, 0), n - max(-b, 0)) for (a, b), n
                                            in zip(pairs, want.shape[x.ndim - m:], strict=True)]
    np.testing.assert_array_equal(F.pad(x, pads), want[tuple(crop)])
