"""The second batch of nn layers and functionals against PyTorch (skipped without torch):
converted state_dicts give the same outputs and gradients, float64, train and eval mode."""

import numpy as np
import pytest
from against_torch import assert_parameter_grads

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F

torch = pytest.importorskip("torch")
tnn, tF = torch.nn, torch.nn.functional

rng = np.random.default_rng(1)
X3 = rng.standard_normal((2, 4, 9))
X4 = rng.standard_normal((2, 4, 7, 6))
X5 = rng.standard_normal((2, 4, 5, 4, 6))


def _compare(make_ours, make_theirs, x, train, forward_kw=None):
    kw = forward_kw or {}
    torch.manual_seed(0)
    theirs = make_theirs().double()
    ours = make_ours().double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    ours.train(train)
    theirs.train(train)
    xt = torch.tensor(x, requires_grad=True)
    yt = theirs(xt, **kw)
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(ours(x, **kw), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    params = {k: np.array(v) for k, v in ours.named_parameters()}
    buffers = {k: np.array(v) for k, v in ours.named_buffers()}

    def loss(p, x, b):
        return (fc.functional_call(ours, (p, b), (x,), kw) ** 2).sum()
    gp, gx = fc.grad(loss, argnums=(0, 1))(params, x, buffers)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert_parameter_grads(gp, theirs, rtol=1e-12, atol=1e-11)
    for k, b in ours.named_buffers():
        np.testing.assert_allclose(b, theirs.get_buffer(k).numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=k)
    return ours, theirs


def _both(ours, theirs):
    return lambda: ours, lambda: theirs


LAYERS = [
    ("conv3d", lambda: nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=1, groups=2),
     lambda: tnn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=1, groups=2), X5),
    ("conv3d_same_dil", lambda: nn.Conv3d(4, 2, 3, padding="same", dilation=2, bias=False),
     lambda: tnn.Conv3d(4, 2, 3, padding="same", dilation=2, bias=False), X5),
    ("conv_transpose1d", lambda: nn.ConvTranspose1d(4, 3, 3, stride=3, padding=2, dilation=2),
     lambda: tnn.ConvTranspose1d(4, 3, 3, stride=3, padding=2, dilation=2), X3),
    ("conv_transpose2d_groups",
     lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2),
     lambda: tnn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1,
                                 groups=2), X4),
    ("conv_transpose3d", lambda: nn.ConvTranspose3d(4, 2, 2, stride=2, bias=False),
     lambda: tnn.ConvTranspose3d(4, 2, 2, stride=2, bias=False), X5),
    ("conv_transpose1d_unbatched", lambda: nn.ConvTranspose1d(4, 2, 2),
     lambda: tnn.ConvTranspose1d(4, 2, 2), X3[0]),
] + [
    (f"conv{n}d_{mode}", (lambda n=n, mode=mode, pad=pad: getattr(nn, f"Conv{n}d")(
        4, 3, 3, padding=pad, padding_mode=mode)),
     (lambda n=n, mode=mode, pad=pad: getattr(tnn, f"Conv{n}d")(
         4, 3, 3, padding=pad, padding_mode=mode)),
     x)
    for n, x, pad in ((1, X3, 2), (2, X4, (1, 2)), (3, X5, 1))
    for mode in ("reflect", "replicate", "circular")
] + [
    ("conv2d_same_circular", lambda: nn.Conv2d(4, 3, (4, 3), padding="same",
                                               padding_mode="circular"),
     lambda: tnn.Conv2d(4, 3, (4, 3), padding="same", padding_mode="circular"), X4),
    ("upsample_bilinear", lambda: nn.Upsample(scale_factor=1.5, mode="bilinear"),
     lambda: tnn.Upsample(scale_factor=1.5, mode="bilinear"), X4),
    ("upsample_nearest", lambda: nn.Upsample(size=(9, 4)),
     lambda: tnn.Upsample(size=(9, 4)), X4),
    ("upsample_linear_ac", lambda: nn.Upsample(size=13, mode="linear", align_corners=True),
     lambda: tnn.Upsample(size=13, mode="linear", align_corners=True), X3),
    ("upsample_trilinear", lambda: nn.Upsample(scale_factor=(2, 0.5, 1.3), mode="trilinear"),
     lambda: tnn.Upsample(scale_factor=(2, 0.5, 1.3), mode="trilinear"), X5),
]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name,ours,theirs,x", LAYERS, ids=[t[0] for t in LAYERS])
def test_layer2_matches_torch(name, ours, theirs, x, train):
    _compare(ours, theirs, x, train)


def test_conv_transpose_output_size_matches_torch():
    x = X4[:, :, :5, :5]
    for size in [(9, 9), (10, 10), (1, 4, 10, 9)]:
        _compare(lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1),
                 lambda: tnn.ConvTranspose2d(4, 2, 3, stride=2, padding=1), x, True,
                 {"output_size": size})


def _grad_pair(f, tf, *arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    yt = tf(*ts)
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(f(*arrays), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    gs = fc.grad(lambda *a: (f(*a) ** 2).sum(), argnums=tuple(range(len(arrays))))(*arrays)
    for g, t in zip(gs, ts, strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-11, atol=1e-12)


PADS = [(1, 2), (2, 1, 1, 3), (-1, 2, 3, -1), (0, 0, 2, 2, 1, 1)]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", PADS, ids=str)
def test_pad_matches_torch(mode, pad):
    x = X5[0] if len(pad) == 6 else X4
    if mode != "constant" and len(pad) == 2:
        x = X3
    _grad_pair(lambda a: F.pad(a, pad, mode=mode), lambda a: tF.pad(a, pad, mode=mode), x)
    if mode == "constant":
        _grad_pair(lambda a: F.pad(a, pad, value=2.5), lambda a: tF.pad(a, pad, value=2.5), x)


INTERP = [dict(scale_factor=2), dict(size=(5, 7)), dict(size=(3, 3)), dict(scale_factor=1.7),
          dict(scale_factor=(0.5, 3)), dict(scale_factor=1.7, recompute_scale_factor=True)]


@pytest.mark.parametrize("mode,ac", [("nearest", None), ("nearest-exact", None),
                                     ("bilinear", False), ("bilinear", True)])
@pytest.mark.parametrize("kw", INTERP, ids=str)
def test_interpolate_matches_torch(kw, mode, ac):
    _grad_pair(lambda a: F.interpolate(a, mode=mode, align_corners=ac, **kw),
               lambda a: tF.interpolate(a, mode=mode, align_corners=ac, **kw), X4)


def test_distance_functionals_match_torch():
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    for p in (1, 2, 3, float("inf")):
        _grad_pair(lambda x, y, p=p: F.pairwise_distance(x, y, p=p),
                   lambda x, y, p=p: tF.pairwise_distance(x, y, p=p), a, b)
        _grad_pair(lambda x, p=p: F.normalize(x, p=p, dim=0),
                   lambda x, p=p: tF.normalize(x, p=p, dim=0), a)
    _grad_pair(lambda x, y: F.pairwise_distance(x, y, keepdim=True),
               lambda x, y: tF.pairwise_distance(x, y, keepdim=True), a, b[0])
    _grad_pair(F.cosine_similarity, tF.cosine_similarity, a, b)
    _grad_pair(lambda x, y: F.cosine_similarity(x, y, dim=-1),
               lambda x, y: tF.cosine_similarity(x, y, dim=-1), a[:, None], b[None])


def _pool_cases():
    import itertools
    for k, s, p, d, ceil in itertools.product([2, 3], [1, 2, 3], [0, 1], [1, 2], [False, True]):
        try:
            tF.max_pool2d(torch.tensor(X4), k, s, p, d, ceil)
        except RuntimeError:        # torch rejects it (output too small): ours must too
            continue
        yield k, s, p, d, ceil


POOLS = list(_pool_cases())


@pytest.mark.parametrize("k,s,p,d,ceil", POOLS, ids=str)
def test_pools_match_torch(k, s, p, d, ceil):
    for ri in (False, True):
        _grad_pair(lambda a, ri=ri: F.max_pool2d(a, k, s, p, d, ceil, ri)[0] if ri
                   else F.max_pool2d(a, k, s, p, d, ceil),
                   lambda a, ri=ri: tF.max_pool2d(a, k, s, p, d, ceil, ri)[0] if ri
                   else tF.max_pool2d(a, k, s, p, d, ceil), X4)
        _grad_pair(lambda a, ri=ri: F.max_pool1d(a, k, s, p, d, ceil, ri)[0] if ri
                   else F.max_pool1d(a, k, s, p, d, ceil),
                   lambda a, ri=ri: tF.max_pool1d(a, k, s, p, d, ceil, ri)[0] if ri
                   else tF.max_pool1d(a, k, s, p, d, ceil), X3)
    for fn, tfn, x in ((F.max_pool2d, tF.max_pool2d, X4), (F.max_pool1d, tF.max_pool1d, X3)):
        np.testing.assert_array_equal(fn(x, k, s, p, d, ceil, True)[1],
                                      tfn(torch.tensor(x), k, s, p, d, ceil, True)[1].numpy())
    if d == 1:
        for cip in (False, True):
            _grad_pair(lambda a, cip=cip: F.avg_pool2d(a, k, s, p, ceil, cip),
                       lambda a, cip=cip: tF.avg_pool2d(a, k, s, p, ceil, cip), X4)
            _grad_pair(lambda a, cip=cip: F.avg_pool1d(a, k, s, p, ceil, cip),
                       lambda a, cip=cip: tF.avg_pool1d(a, k, s, p, ceil, cip), X3)


@pytest.mark.parametrize("size", [1, 3, 4, 5, (2, 7), (None, 3)], ids=str)
def test_adaptive_pools_match_torch(size):
    _grad_pair(lambda a: F.adaptive_max_pool2d(a, size),
               lambda a: tF.adaptive_max_pool2d(a, size), X4)
    _, idx = F.adaptive_max_pool2d(X4, size, True)
    _, tidx = tF.adaptive_max_pool2d(torch.tensor(X4), size, True)
    np.testing.assert_array_equal(idx, tidx.numpy())
    if isinstance(size, int):
        _grad_pair(lambda a: F.adaptive_max_pool1d(a, size),
                   lambda a: tF.adaptive_max_pool1d(a, size), X3)
        _grad_pair(lambda a: F.adaptive_max_pool1d(a, size, True)[0],
                   lambda a: tF.adaptive_max_pool1d(a, size, True)[0], X3)
        np.testing.assert_array_equal(F.adaptive_max_pool1d(X3, size, True)[1],
                                      tF.adaptive_max_pool1d(torch.tensor(X3), size, True)[1])
        _grad_pair(lambda a: F.adaptive_avg_pool1d(a, size),
                   lambda a: tF.adaptive_avg_pool1d(a, size), X3)


POOL_LAYERS = [
    ("MaxPool1d", lambda: nn.MaxPool1d(3, 2, 1, ceil_mode=True),
     lambda: tnn.MaxPool1d(3, 2, 1, ceil_mode=True), X3),
    ("MaxPool2d_dil_unbatched", lambda: nn.MaxPool2d(2, 1, 1, dilation=2),
     lambda: tnn.MaxPool2d(2, 1, 1, dilation=2), X4[0]),
    ("AvgPool1d", lambda: nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False),
     lambda: tnn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False), X3),
    ("AvgPool2d_divisor", lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, divisor_override=5),
     lambda: tnn.AvgPool2d(3, 2, 1, ceil_mode=True, divisor_override=5), X4),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(4), lambda: tnn.AdaptiveAvgPool1d(4),
     X3),
    ("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(4), lambda: tnn.AdaptiveMaxPool1d(4),
     X3[0]),
    ("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((3, None)),
     lambda: tnn.AdaptiveMaxPool2d((3, None)), X4),
]


@pytest.mark.parametrize("name,ours,theirs,x", POOL_LAYERS, ids=[t[0] for t in POOL_LAYERS])
def test_pool_layers_match_torch(name, ours, theirs, x):
    _compare(ours, theirs, x, True)


NORM_LAYERS = [
    ("GroupNorm", lambda: nn.GroupNorm(2, 4), lambda: tnn.GroupNorm(2, 4), X4),
    ("GroupNorm_noaffine_1d", lambda: nn.GroupNorm(4, 4, affine=False, eps=1e-3),
     lambda: tnn.GroupNorm(4, 4, affine=False, eps=1e-3), X3),
    ("GroupNorm_5d", lambda: nn.GroupNorm(1, 4), lambda: tnn.GroupNorm(1, 4), X5),
    ("InstanceNorm1d", lambda: nn.InstanceNorm1d(4), lambda: tnn.InstanceNorm1d(4), X3),
    ("InstanceNorm1d_unbatched_affine", lambda: nn.InstanceNorm1d(4, affine=True),
     lambda: tnn.InstanceNorm1d(4, affine=True), X3[0]),
    ("InstanceNorm2d_tracked", lambda: nn.InstanceNorm2d(4, affine=True,
                                                         track_running_stats=True),
     lambda: tnn.InstanceNorm2d(4, affine=True, track_running_stats=True), X4),
    ("InstanceNorm2d_tracked_momentum_none",
     lambda: nn.InstanceNorm2d(4, momentum=None, track_running_stats=True),
     lambda: tnn.InstanceNorm2d(4, momentum=None, track_running_stats=True), X4),
]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name,ours,theirs,x", NORM_LAYERS, ids=[t[0] for t in NORM_LAYERS])
def test_norm_layers_match_torch(name, ours, theirs, x, train):
    _compare(ours, theirs, x, train)


def test_instance_norm_running_stats_train_then_eval():
    ours, theirs = _compare(lambda: nn.InstanceNorm1d(4, momentum=0.3, track_running_stats=True),
                            lambda: tnn.InstanceNorm1d(4, momentum=0.3,
                                                       track_running_stats=True), X3, True)
    for _ in range(2):
        ours(X3 * 2 + 1)
        theirs(torch.tensor(X3 * 2 + 1))
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(ours, k), getattr(theirs, k).numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(X3), theirs(torch.tensor(X3)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)


def test_norm_functionals_match_torch():
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    _grad_pair(lambda x, w, b: F.group_norm(x, 2, w, b, 1e-3),
               lambda x, w, b: tF.group_norm(x, 2, w, b, 1e-3), X4, w, b)
    _grad_pair(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
               lambda x, w, b: tF.instance_norm(x, weight=w, bias=b), X5, w, b)
    rm, rv = rng.standard_normal(4), rng.random(4) + 0.5
    _grad_pair(lambda x: F.instance_norm(x, rm, rv, use_input_stats=False),
               lambda x: tF.instance_norm(x, torch.tensor(rm), torch.tensor(rv),
                                          use_input_stats=False), X3)


MISC_LAYERS = [
    ("PReLU", lambda: nn.PReLU(), lambda: tnn.PReLU(), X4),
    ("PReLU_channels", lambda: nn.PReLU(4, init=0.1), lambda: tnn.PReLU(4, init=0.1), X3),
    ("PReLU_1d", lambda: nn.PReLU(init=-0.3), lambda: tnn.PReLU(init=-0.3), X3[0, 0]),
]


@pytest.mark.parametrize("name,ours,theirs,x", MISC_LAYERS, ids=[t[0] for t in MISC_LAYERS])
def test_misc_layers_match_torch(name, ours, theirs, x):
    _compare(ours, theirs, x, True)


@pytest.mark.parametrize("cls,x", [("Dropout1d", X3), ("Dropout1d", X3[0]),
                                   ("Dropout2d", X4)])
def test_feature_dropout_eval_is_identity_like_torch(cls, x):
    _compare(lambda: getattr(nn, cls)(0.3), lambda: getattr(tnn, cls)(0.3), x, False)


def test_bilinear_matches_torch():
    torch.manual_seed(0)
    theirs = tnn.Bilinear(3, 4, 5).double()
    ours = nn.Bilinear(3, 4, 5).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    a, b = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6, 4))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    yt = theirs(ta, tb)
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(ours(a, b), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = fc.grad(lambda m, a, b: (m(a, b) ** 2).sum(), argnums=(0, 1, 2))(ours, a, b)
    np.testing.assert_allclose(g[0].weight, theirs.weight.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g[0].bias, theirs.bias.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g[1], ta.grad.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g[2], tb.grad.numpy(), rtol=1e-12, atol=1e-13)


IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9])
OFFSETS = np.array([0, 2, 2, 5])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_matches_torch(mode, padding_idx, last):
    offsets = np.append(OFFSETS, len(IDX)) if last else OFFSETS
    torch.manual_seed(0)
    theirs = tnn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx,
                              include_last_offset=last).double()
    ours = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx,
                           include_last_offset=last).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    yt = theirs(torch.tensor(IDX), torch.tensor(offsets))
    (yt ** 2).sum().backward()
    np.testing.assert_allclose(ours(IDX, offsets), yt.detach().numpy(), rtol=1e-12)
    g = fc.grad(lambda m: (m(IDX, offsets) ** 2).sum())(ours)
    np.testing.assert_allclose(g.weight, theirs.weight.grad.numpy(), rtol=1e-12, atol=1e-14)
    idx2 = IDX.reshape(2, 4)
    np.testing.assert_allclose(ours(idx2), theirs(torch.tensor(idx2)).detach().numpy(),
                               rtol=1e-12)


def test_embedding_bag_per_sample_weights_matches_torch():
    w, psw = rng.standard_normal((10, 3)), rng.standard_normal(len(IDX))
    _grad_pair(lambda w, p: F.embedding_bag(IDX, w, OFFSETS, mode="sum",
                                            per_sample_weights=p),
               lambda w, p: tF.embedding_bag(torch.tensor(IDX), w, torch.tensor(OFFSETS),
                                             mode="sum", per_sample_weights=p), w, psw)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_matches_torch(norm_type):
    torch.manual_seed(0)
    theirs = tnn.Embedding(10, 3, max_norm=1.2, norm_type=norm_type).double()
    ours = nn.Embedding(10, 3, max_norm=1.2, norm_type=norm_type).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    idx = np.array([[1, 2, 4], [4, 9, 1]])
    yt = theirs(torch.tensor(idx))
    (yt ** 2).sum().backward()
    before = np.array(ours.weight)
    g = fc.grad(lambda m: (m(idx) ** 2).sum())(ours)     # traced: ours.weight untouched
    np.testing.assert_array_equal(ours.weight, before)
    np.testing.assert_allclose(ours(idx), yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.weight, theirs.weight.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.weight, theirs.weight.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_matches_torch(mode):
    w, psw = rng.standard_normal((10, 3)), rng.standard_normal((2, 4))
    idx = IDX.reshape(2, 4)
    _grad_pair(lambda w: F.embedding_bag(idx, w, mode=mode, padding_idx=4),
               lambda w: tF.embedding_bag(torch.tensor(idx), w, mode=mode, padding_idx=4), w)
    if mode == "sum":
        _grad_pair(lambda w, p: F.embedding_bag(idx, w, mode="sum", per_sample_weights=p),
                   lambda w, p: tF.embedding_bag(torch.tensor(idx), w, mode="sum",
                                                 per_sample_weights=p), w, psw)


def test_embedding_bag_max_norm_matches_torch():
    w = rng.standard_normal((10, 3)) * 2
    tw = torch.tensor(w, requires_grad=True)
    yt = tF.embedding_bag(torch.tensor(IDX), tw, torch.tensor(OFFSETS), max_norm=1.5)
    (yt ** 2).sum().backward()
    g = fc.grad(lambda w: (F.embedding_bag(IDX, w, OFFSETS, max_norm=1.5) ** 2).sum())(w)
    np.testing.assert_allclose(g, tw.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(F.embedding_bag(IDX, w, OFFSETS, max_norm=1.5),
                               yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-12)      # renormed in place


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
def test_interpolate_1d_index_sweep_matches_torch(mode):
    """Source indices in PyTorch's own arithmetic (a float64 product floored as float32),
    including sizes where a plain float64 or float32 computation picks another neighbour
    (6 -> 74 and 18 -> 66 nearest, 2 -> 49 nearest-exact) and a kept size under a scale
    factor (linear copies it)."""
    sizes = [(6, 74), (18, 66), (2, 49), (2, 41)] + [(n, m) for n in range(1, 20, 4)
                                                     for m in range(1, 45, 3)]
    for n_in, n_out in sizes:
        x = np.arange(n_in, dtype=np.float64)[None, None] ** 1.5
        for kw in ({"size": n_out}, {"scale_factor": n_out / 7}):
            if int(n_in * kw.get("scale_factor", 1)) < 1:
                continue
            want = tF.interpolate(torch.tensor(x), mode=mode, **kw).numpy()
            np.testing.assert_allclose(F.interpolate(x, mode=mode, **kw), want, rtol=1e-12,
                                       atol=1e-12, err_msg=f"{n_in} {kw}")
