"""smooth_l1 / huber / binary_cross_entropy / kl_div / cosine_embedding / margin_ranking /
triplet_margin losses: NumPy references, check_grads, vmap vs loop, modules, and PyTorch
(values and gradients, float64) when it is installed."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F
from functorch_core.testing import check_grads

rng = np.random.default_rng(3)
A, B = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
A[0, 0], B[0, 0] = 0.3, 0.3 + 2.5          # a large and a tiny difference in every case
P = rng.uniform(0.05, 0.95, (5, 4))
T01 = rng.uniform(0, 1, (5, 4))
PM1 = np.array([1, -1, 1, -1, 1])
LOGQ = np.log(rng.dirichlet(np.ones(4), 5))
TGT = rng.dirichlet(np.ones(4), 5)
TGT[1, 2] = 0.0                             # a zero target contributes 0, not nan


def _ref_pdist(x, y, p, eps):
    return np.sum(np.abs(x - y + eps) ** p, axis=-1) ** (1 / p)


def _np_reduce(x, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](x)


# (name, our call, NumPy reference without reduction, args)
CASES = [
    ("smooth_l1", lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.7),
     lambda a, b: np.where(np.abs(a - b) < 0.7, 0.5 * (a - b) ** 2 / 0.7, np.abs(a - b) - 0.35),
     (A, B)),
    ("huber", lambda a, b, r: F.huber_loss(a, b, reduction=r, delta=1.3),
     lambda a, b: np.where(np.abs(a - b) < 1.3, 0.5 * (a - b) ** 2,
                           1.3 * (np.abs(a - b) - 0.65)), (A, B)),
    ("bce", lambda p, t, r: F.binary_cross_entropy(p, t, reduction=r),
     lambda p, t: -(t * np.log(p) + (1 - t) * np.log(1 - p)), (P, T01)),
    ("kl_div", lambda q, t, r: F.kl_div(q, t, reduction=r),
     lambda q, t: np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - q), -t * q),
     (LOGQ, TGT)),
    ("kl_div_log_target", lambda q, t, r: F.kl_div(q, t, reduction=r, log_target=True),
     lambda q, t: np.exp(t) * (t - q), (LOGQ, LOGQ[::-1].copy())),
    ("cosine_embedding", lambda a, b, r: F.cosine_embedding_loss(a, b, PM1, 0.1, reduction=r),
     lambda a, b: (lambda c: np.where(PM1 == 1, 1 - c, np.maximum(c - 0.1, 0)))(
         np.sum(a * b, -1) / np.sqrt((np.sum(a * a, -1) + 1e-12) * (np.sum(b * b, -1) + 1e-12))),
     (A, B)),
    ("margin_ranking", lambda a, b, r: F.margin_ranking_loss(a[:, 0], b[:, 0], PM1 * 1.0, 0.2,
                                                             reduction=r),
     lambda a, b: np.maximum(-PM1 * (a[:, 0] - b[:, 0]) + 0.2, 0), (A, B)),
    ("triplet", lambda a, b, r: F.triplet_margin_loss(a, b, a[::-1] * 0.5, margin=1.5,
                                                      reduction=r),
     lambda a, b: np.maximum(1.5 + _ref_pdist(a, b, 2, 1e-6)
                             - _ref_pdist(a, a[::-1] * 0.5, 2, 1e-6), 0), (A, B)),
    ("triplet_p3_swap", lambda a, b, r: F.triplet_margin_loss(a, b, a[::-1] * 0.5, margin=2.0,
                                                              p=3, swap=True, reduction=r),
     lambda a, b: np.maximum(2.0 + _ref_pdist(a, b, 3, 1e-6) - np.minimum(
         _ref_pdist(a, a[::-1] * 0.5, 3, 1e-6), _ref_pdist(b, a[::-1] * 0.5, 3, 1e-6)), 0),
     (A, B)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name, ours, ref, args", CASES, ids=IDS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_matches_numpy(name, ours, ref, args, reduction):
    want = _np_reduce(ref(*args), reduction)
    np.testing.assert_allclose(ours(*args, reduction), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fc.jit(lambda *a: ours(*a, reduction))(*args), want,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, ours, ref, args", CASES, ids=IDS)
def test_loss_check_grads(name, ours, ref, args):
    check_grads(lambda a: ours(a, args[1], "sum"), (args[0],), order=1)


@pytest.mark.parametrize("name, ours, ref, args", CASES, ids=IDS)
def test_loss_vmap_matches_loop(name, ours, ref, args):
    xs = np.stack([args[0], args[0] * 0.9 + 0.01, args[0] * 1.1 - 0.01])
    if name in ("bce",):
        xs = np.clip(xs, 0.01, 0.99)
    got = fc.vmap(lambda a: ours(a, args[1], "mean"))(xs)
    want = np.stack([ours(x, args[1], "mean") for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_kl_div_batchmean_and_bce_clamp():
    assert np.isclose(F.kl_div(LOGQ, TGT, reduction="batchmean"),
                      np.sum(F.kl_div(LOGQ, TGT, reduction="none")) / 5, rtol=1e-14)
    # log(0) is clamped at -100: a confident wrong prediction costs 100, not inf
    assert F.binary_cross_entropy(np.array([0.0, 1.0]), np.array([1.0, 0.0])) == 100.0
    w = np.array([2.0, 0.5, 1, 1])
    np.testing.assert_allclose(F.binary_cross_entropy(P, T01, weight=w, reduction="none"),
                               F.binary_cross_entropy(P, T01, reduction="none") * w)
    assert F.smooth_l1_loss(A, B, beta=0.0) == F.l1_loss(A, B)
    np.testing.assert_allclose(F.huber_loss(A, B, delta=0.6),
                               0.6 * F.smooth_l1_loss(A, B, beta=0.6), rtol=1e-14)


def test_loss_errors():
    with pytest.raises(ValueError, match=r"smooth_l1_loss: input of shape \(5, 4\) and target "
                                         r"of shape \(4,\) differ"):
        F.smooth_l1_loss(A, B[0])
    with pytest.raises(ValueError, match="kl_div: reduction must be"):
        F.kl_div(LOGQ, TGT, reduction="avg")
    with pytest.raises(ValueError, match=r"cosine_embedding_loss: target of shape \(4,\)"):
        F.cosine_embedding_loss(A, B, np.ones(4))
    with pytest.raises(ValueError, match=r"triplet_margin_loss: anchor \(5, 4\), positive "
                                         r"\(5, 4\) and negative \(4,\)"):
        F.triplet_margin_loss(A, B, B[0])
    with pytest.raises(ValueError, match="size_average and reduce are deprecated"):
        nn.BCELoss(size_average=True)
    with pytest.raises(ValueError, match="huber_loss: delta must be positive"):
        F.huber_loss(A, B, delta=0.0)


MODULES = [
    (lambda: nn.SmoothL1Loss(beta=0.5), "SmoothL1Loss", dict(beta=0.5), (A, B)),
    (lambda: nn.HuberLoss(delta=2.0), "HuberLoss", dict(delta=2.0), (A, B)),
    (lambda: nn.BCELoss(weight=np.linspace(0.5, 2, 4)), "BCELoss", None, (P, T01)),
    (lambda: nn.KLDivLoss(reduction="batchmean"), "KLDivLoss", dict(reduction="batchmean"),
     (LOGQ, TGT)),
    (lambda: nn.KLDivLoss(reduction="sum", log_target=True), "KLDivLoss",
     dict(reduction="sum", log_target=True), (LOGQ, np.log(TGT + 0.1))),
    (lambda: nn.CosineEmbeddingLoss(margin=0.2), "CosineEmbeddingLoss", dict(margin=0.2),
     (A, B, PM1)),
    (lambda: nn.MarginRankingLoss(margin=0.3), "MarginRankingLoss", dict(margin=0.3),
     (A[:, 0], B[:, 0], PM1 * 1.0)),
    (lambda: nn.TripletMarginLoss(margin=0.5, p=1.5, swap=True), "TripletMarginLoss",
     dict(margin=0.5, p=1.5, swap=True), (A, B, A[::-1] * 0.3)),
    (lambda: nn.TripletMarginLoss(), "TripletMarginLoss", {}, (A[0], B[0], B[1])),
    (lambda: nn.CosineEmbeddingLoss(), "CosineEmbeddingLoss", {}, (A[0], B[0], np.array(-1))),
]


@pytest.mark.parametrize("make, tname, tkw, args", MODULES,
                         ids=[f"{m[1]}{i}" for i, m in enumerate(MODULES)])
def test_loss_modules_against_torch(make, tname, tkw, args):
    torch = pytest.importorskip("torch")
    tkw = dict(weight=torch.tensor(np.linspace(0.5, 2, 4))) if tkw is None else tkw
    theirs = getattr(torch.nn, tname)(**tkw)
    targs = [torch.tensor(a, requires_grad=((i < 2 and a.dtype.kind == "f"
                                            and tname != "BCELoss") or i == 0))
             for i, a in enumerate(args)]
    yt = theirs(*targs)
    yt.backward()
    np.testing.assert_allclose(make()(*args), yt.detach().numpy(), rtol=1e-12, atol=1e-15)
    diff = [i for i, t in enumerate(targs) if t.requires_grad]
    grads = fc.grad(lambda *a: make()(*a), argnums=tuple(diff))(*args)
    for i, g in zip(diff, grads, strict=True):
        tg = targs[i].grad.numpy()
        ok = np.isfinite(tg)         # d/dt t log t at t = 0: torch's nan, our finite limit
        assert ok.sum() >= tg.size - 1
        np.testing.assert_allclose(g[ok], tg[ok], rtol=1e-10, atol=1e-13,
                                   err_msg=f"{tname} argument {i}")
