"""nn layers, functionals and losses against PyTorch (skipped without torch): a converted
state_dict gives the same outputs and gradients, in train and eval mode."""

import numpy as np
import pytest
from against_torch import assert_parameter_grads

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F

torch = pytest.importorskip("torch")
tnn, tF = torch.nn, torch.nn.functional


def _load_from_torch(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _pair(make_ours, make_theirs, x, train=True, rtol=1e-10):
    torch.manual_seed(0)
    theirs = make_theirs().double()
    ours = make_ours().double()
    _load_from_torch(ours, theirs)
    ours.train(train)
    theirs.train(train)
    xt = torch.tensor(x, requires_grad=True)
    yt = theirs(xt)
    (yt ** 2).sum().backward()
    y = ours(x)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=rtol, atol=1e-12)

    params = {k: np.array(v) for k, v in ours.named_parameters()}
    buffers = {k: np.array(v) for k, v in ours.named_buffers()}

    def loss(p, x, b):      # buffers passed in: training-mode writes go into them
        return (fc.functional_call(ours, (p, b), (x,)) ** 2).sum()
    gp, gx = fc.grad(loss, argnums=(0, 1))(params, x, buffers)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert_parameter_grads(gp, theirs, rtol=1e-9, atol=1e-11)
    if not buffers:         # the module-pytree route gives the same module-shaped gradient
        gm = fc.grad(lambda m, x: (m(x) ** 2).sum())(ours, x)
        for k, g in gm.named_parameters():
            np.testing.assert_allclose(g, gp[k], rtol=1e-12, err_msg=k)
    return ours, theirs


rng = np.random.default_rng(0)
X2 = rng.standard_normal((4, 6))
X4 = rng.standard_normal((2, 4, 7, 7))

LAYERS = [
    ("linear", lambda: nn.Linear(6, 3), lambda: tnn.Linear(6, 3), X2),
    ("linear_nobias", lambda: nn.Linear(6, 3, bias=False), lambda: tnn.Linear(6, 3, bias=False),
     X2),
    ("layernorm", lambda: nn.LayerNorm(6), lambda: tnn.LayerNorm(6), X2),
    ("conv2d", lambda: nn.Conv2d(4, 6, 3, stride=2, padding=1),
     lambda: tnn.Conv2d(4, 6, 3, stride=2, padding=1), X4),
    ("conv2d_same_dil_groups", lambda: nn.Conv2d(4, 6, (3, 2), padding="same", dilation=2,
                                                 groups=2),
     lambda: tnn.Conv2d(4, 6, (3, 2), padding="same", dilation=2, groups=2), X4),
    ("conv1d", lambda: nn.Conv1d(4, 2, 3, padding=2), lambda: tnn.Conv1d(4, 2, 3, padding=2),
     X4[:, :, 0]),
    ("maxpool", lambda: nn.MaxPool2d(3, 2, 1), lambda: tnn.MaxPool2d(3, 2, 1), X4),
    ("avgpool", lambda: nn.AvgPool2d(2, 1, 1, count_include_pad=False),
     lambda: tnn.AvgPool2d(2, 1, 1, count_include_pad=False), X4),
    ("adaptive", lambda: nn.AdaptiveAvgPool2d((3, 2)), lambda: tnn.AdaptiveAvgPool2d((3, 2)),
     X4),
    ("flatten", lambda: nn.Flatten(), lambda: tnn.Flatten(), X4),
    ("unflatten", lambda: nn.Unflatten(1, (2, 3)), lambda: tnn.Unflatten(1, (2, 3)), X2),
] + [(name, getattr(nn, name), getattr(tnn, name), X2 * 3) for name in
     ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "SiLU", "Mish", "Softplus", "Tanh",
      "Sigmoid", "Hardtanh", "Hardswish"]] + [
    ("GELU", nn.GELU, tnn.GELU, X2 * 3),
    ("GELU_tanh", lambda: nn.GELU("tanh"), lambda: tnn.GELU("tanh"), X2 * 3),
    ("Softmax", lambda: nn.Softmax(1), lambda: tnn.Softmax(1), X2),
    ("LogSoftmax", lambda: nn.LogSoftmax(-1), lambda: tnn.LogSoftmax(-1), X2),
]


@pytest.mark.parametrize("name,ours,theirs,x", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(name, ours, theirs, x):
    _pair(ours, theirs, x)


@pytest.mark.parametrize("cls,x", [("BatchNorm1d", X2), ("BatchNorm2d", X4)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_train_then_eval(cls, x, momentum):
    ours, theirs = _pair(lambda: getattr(nn, cls)(x.shape[1], momentum=momentum),
                         lambda: getattr(tnn, cls)(x.shape[1], momentum=momentum), x)
    # the eager forward of _pair updated our running stats once; torch's once too
    for _ in range(2):
        ours(x * 2 + 1)
        theirs(torch.tensor(x * 2 + 1))
    fc.jit(lambda m, x: m(x))(ours, x - 1)          # jit writes the stats back
    theirs(torch.tensor(x - 1))
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-12, err_msg=k)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(x), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10)


def test_embedding_matches_torch():
    torch.manual_seed(0)
    theirs = tnn.Embedding(10, 4, padding_idx=1).double()
    ours = nn.Embedding(10, 4, padding_idx=1, dtype=np.float64)
    _load_from_torch(ours, theirs)
    idx = np.array([[1, 2, 3], [1, 9, 0]])
    out = theirs(torch.tensor(idx))
    (out ** 2).sum().backward()
    np.testing.assert_allclose(ours(idx), out.detach().numpy())
    g = fc.grad(lambda m: (m(idx) ** 2).sum())(ours)
    np.testing.assert_allclose(g.weight, theirs.weight.grad.numpy())


LOGITS = rng.standard_normal((5, 4))
TARGET = np.array([0, 3, 1, -100, 2])
PROBS = np.exp(LOGITS[::-1]) / np.exp(LOGITS[::-1]).sum(1, keepdims=True)
W = np.array([1.0, 2.0, 0.5, 1.5])


@pytest.mark.parametrize("kw", [{}, {"weight": W}, {"label_smoothing": 0.2},
                                {"weight": W, "label_smoothing": 0.1, "reduction": "sum"},
                                {"reduction": "none"}])
@pytest.mark.parametrize("probs", [False, True])
def test_cross_entropy_matches_torch(kw, probs):
    target = PROBS if probs else TARGET
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    xt = torch.tensor(LOGITS, requires_grad=True)
    ref = tF.cross_entropy(xt, torch.tensor(target), **tkw)
    ref.sum().backward()
    ours = F.cross_entropy(LOGITS, target, **kw)
    np.testing.assert_allclose(ours, ref.detach().numpy(), rtol=1e-12)
    g = fc.grad(lambda x: fc.numpy.sum(F.cross_entropy(x, target, **kw)))(LOGITS)
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_cross_entropy_spatial_and_nll_matches_torch():
    x = rng.standard_normal((2, 3, 4, 5))
    t = rng.integers(0, 3, (2, 4, 5))
    np.testing.assert_allclose(F.cross_entropy(x, t, weight=W[:3]),
                               tF.cross_entropy(torch.tensor(x), torch.tensor(t),
                                                weight=torch.tensor(W[:3])).numpy(), rtol=1e-12)
    logp = np.log(PROBS)
    np.testing.assert_allclose(nn.NLLLoss(weight=W)(logp, TARGET),
                               tnn.NLLLoss(weight=torch.tensor(W))(torch.tensor(logp),
                                                                   torch.tensor(TARGET)).numpy())


def test_other_losses_match_torch():
    a, b = rng.standard_normal((3, 4)), rng.random((3, 4))
    ta, tb = torch.tensor(a), torch.tensor(b)
    for red in ("mean", "sum", "none"):
        np.testing.assert_allclose(F.mse_loss(a, b, reduction=red),
                                   tF.mse_loss(ta, tb, reduction=red).numpy(), rtol=1e-12)
        np.testing.assert_allclose(nn.L1Loss(red)(a, b), tF.l1_loss(ta, tb, reduction=red))
        pw = np.array([1.0, 2.0, 3.0, 0.5])
        np.testing.assert_allclose(
            nn.BCEWithLogitsLoss(weight=b[0], reduction=red, pos_weight=pw)(a * 30, b),
            tF.binary_cross_entropy_with_logits(ta * 30, tb, weight=tb[0], reduction=red,
                                                pos_weight=torch.tensor(pw)).numpy(),
            rtol=1e-12)


def test_default_init_distribution_bounds():
    fc.manual_seed(3)
    lin = nn.Linear(100, 50)
    assert lin.weight.dtype == np.float32 and lin.weight.shape == (50, 100)
    assert np.abs(lin.weight).max() <= 0.1 and np.abs(lin.weight).max() > 0.09
    conv = nn.Conv2d(4, 8, 3, groups=2)
    bound = 1 / np.sqrt(2 * 9)
    assert np.abs(conv.weight).max() <= bound and conv.weight.shape == (8, 2, 3, 3)
    t = tnn.Conv2d(4, 8, 3, groups=2)
    assert {k: tuple(v.shape) for k, v in t.state_dict().items()} == \
        {k: v.shape for k, v in conv.state_dict().items()}
