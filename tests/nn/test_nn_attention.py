"""scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer/Encoder: NumPy
references, check_grads and vmap vs loop without torch; converted torch state dicts give the
same outputs, weights and gradients (float64) when torch is installed."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn import functional as F
from functorch_core.testing import check_grads

rng = np.random.default_rng(0)
Q, K, V = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 6, 5)), \
    rng.standard_normal((2, 3, 6, 7))
BOOL = rng.random((4, 6)) > 0.4
BOOL[:, 0] = True                           # every query row keeps a key
FLOAT = rng.standard_normal((3, 4, 6))


def _np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_sdpa(q, k, v, bias=0.0, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    return _np_softmax(q @ np.swapaxes(k, -1, -2) * scale + bias) @ v


SDPA = [
    ("plain", {}, 0.0),
    ("bool_mask", dict(attn_mask=BOOL), np.where(BOOL, 0.0, -np.inf)),
    ("float_mask", dict(attn_mask=FLOAT, scale=0.3), FLOAT),
    ("causal", dict(is_causal=True), np.where(np.tril(np.ones((4, 6), bool)), 0.0, -np.inf)),
]


@pytest.mark.parametrize("name, kw, bias", SDPA, ids=[s[0] for s in SDPA])
def test_sdpa_matches_numpy_grads_and_vmap(name, kw, bias):
    want = _np_sdpa(Q, K, V, bias, kw.get("scale"))
    np.testing.assert_allclose(F.scaled_dot_product_attention(Q, K, V, **kw), want,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fc.jit(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, **kw))(Q, K, V), want, rtol=1e-10, atol=1e-12)
    check_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw),
                (Q[0, :1], K[0, :1], V[0, :1]), order=1)
    got = fc.vmap(lambda q: F.scaled_dot_product_attention(q, K[0], V[0], **kw))(Q[:, 0])
    np.testing.assert_allclose(got, np.stack([F.scaled_dot_product_attention(q, K[0], V[0],
                                                                             **kw)
                                              for q in Q[:, 0]]), rtol=1e-12)


def test_sdpa_fully_masked_row_is_zero_and_gqa_and_errors():
    m = BOOL.copy()
    m[2] = False
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=m)
    assert np.all(out[..., 2, :] == 0) and np.all(np.isfinite(out))
    g = fc.grad(lambda q: F.scaled_dot_product_attention(q, K, V, attn_mask=m).sum())(Q)
    assert np.all(np.isfinite(g)) and np.all(g[..., 2, :] == 0)
    kv_heads = F.scaled_dot_product_attention(np.tile(Q, (1, 2, 1, 1)), K, V, enable_gqa=True)
    np.testing.assert_allclose(kv_heads[:, 1], _np_sdpa(Q[:, 1], K[:, 0], V[:, 0]), rtol=1e-12)
    with pytest.raises(ValueError, match=r"query \(2, 3, 4, 5\), key \(2, 3, 6, 4\)"):
        F.scaled_dot_product_attention(Q, K[..., :4], V)
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(Q, K, V, attn_mask=BOOL, is_causal=True)


def test_sdpa_dropout_draws_and_keeps_expectation():
    fc.manual_seed(0)
    a = F.scaled_dot_product_attention(Q, K, V, dropout_p=0.5)
    b = F.scaled_dot_product_attention(Q, K, V, dropout_p=0.5)
    assert not np.allclose(a, b)
    key = fc.random.PRNGKey(3)
    np.testing.assert_array_equal(F.scaled_dot_product_attention(Q, K, V, dropout_p=0.5,
                                                                 key_rng=key),
                                  F.scaled_dot_product_attention(Q, K, V, dropout_p=0.5,
                                                                 key_rng=key))


def _np_mha(m, x, kpm=None):
    """NumPy reference for a batch-first self-attention MultiheadAttention."""
    e, h = m.embed_dim, m.num_heads
    w, b = np.asarray(m.in_proj_weight), np.asarray(m.in_proj_bias)
    n, L, _ = x.shape
    q, k, v = (x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e] for i in range(3))
    split = lambda t: t.reshape(n, L, h, e // h).transpose(0, 2, 1, 3)  # noqa: E731
    bias = 0.0 if kpm is None else np.where(kpm, -np.inf, 0.0)[:, None, None, :]
    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(e // h) + bias
    wts = _np_softmax(scores)
    out = (wts @ split(v)).transpose(0, 2, 1, 3).reshape(n, L, e)
    return out @ np.asarray(m.out_proj.weight).T + np.asarray(m.out_proj.bias), wts.mean(1)


def test_mha_matches_numpy_unbatched_vmap_and_grads():
    fc.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, batch_first=True).double()
    nn.init.normal_(m.in_proj_bias)
    x = rng.standard_normal((3, 5, 8))
    kpm = rng.random((3, 5)) > 0.7
    kpm[:, 0] = False
    out, w = m(x, x, x, key_padding_mask=kpm)
    want, want_w = _np_mha(m, x, kpm)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(w, want_w, rtol=1e-12, atol=1e-14)
    # unbatched input is the batch of one; seq-first is the transpose
    o1, w1 = m(x[1], x[1], x[1], key_padding_mask=kpm[1])
    np.testing.assert_allclose(o1, out[1], rtol=1e-12)
    np.testing.assert_allclose(w1, w[1], rtol=1e-12)
    m.batch_first = False
    xs = np.swapaxes(x, 0, 1)
    np.testing.assert_allclose(m(xs, xs, xs, key_padding_mask=kpm)[0], np.swapaxes(out, 0, 1),
                               rtol=1e-12)
    got = fc.vmap(lambda t: m(t, t, t, need_weights=False)[0])(x)
    np.testing.assert_allclose(got, np.stack([m(t, t, t)[0] for t in x]), rtol=1e-12)
    params = {k: np.array(v) for k, v in m.named_parameters()}
    check_grads(lambda p, t: fc.functional_call(m, p, (t, t, t))[0], (params, x[:1, :3]),
                order=1)


def test_mha_parameters_init_and_errors():
    fc.manual_seed(0)
    m = nn.MultiheadAttention(12, 3, kdim=4, vdim=6, add_bias_kv=True)
    assert [(k, v.shape) for k, v in m.named_parameters()] == [
        ("q_proj_weight", (12, 12)), ("k_proj_weight", (12, 4)), ("v_proj_weight", (12, 6)),
        ("in_proj_bias", (36,)), ("bias_k", (1, 1, 12)), ("bias_v", (1, 1, 12)),
        ("out_proj.weight", (12, 12)), ("out_proj.bias", (12,))]
    assert np.all(m.in_proj_bias == 0) and np.all(m.out_proj.bias == 0)
    assert np.abs(m.k_proj_weight).max() <= np.sqrt(6 / 16)
    same = nn.MultiheadAttention(8, 2, bias=False)
    assert list(same.state_dict()) == ["in_proj_weight", "out_proj.weight"]
    assert np.abs(same.in_proj_weight).max() <= np.sqrt(6 / 32)
    with pytest.raises(ValueError, match=r"embed_dim \(10\) must be divisible by num_heads "
                                         r"\(3\)"):
        nn.MultiheadAttention(10, 3)
    x = np.zeros((5, 2, 8))
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(5, 2\) must have shape "
                                         r"\(2, 5\)"):
        same(x, x, x, key_padding_mask=np.zeros((5, 2), bool))
    with pytest.raises(ValueError, match=r"query \(5, 2, 8\), key \(5, 2, 7\)"):
        same(x, x[..., :7], x)
    with pytest.raises(ValueError, match="is_causal=True needs attn_mask"):
        same(x, x, x, is_causal=True)


def test_encoder_layer_numpy_structure_and_vmap():
    fc.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                       batch_first=True).double()
    assert [k for k, _ in layer.named_parameters()] == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
        "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    x = rng.standard_normal((3, 5, 8))

    def ln(t):
        return (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-5)
    h = ln(x + _np_mha(layer.self_attn, x)[0])
    ff = np.maximum(h @ np.asarray(layer.linear1.weight).T + layer.linear1.bias, 0) \
        @ np.asarray(layer.linear2.weight).T + layer.linear2.bias
    np.testing.assert_allclose(layer(x), ln(h + ff), rtol=1e-11, atol=1e-12)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8).double())
    assert enc.layers[0] is not layer and len(list(enc.named_parameters())) == 26
    got = fc.vmap(enc)(x)
    np.testing.assert_allclose(got, np.stack([enc(t[None])[0] for t in x]), rtol=1e-11)
    np.testing.assert_allclose(fc.jit(enc)(x), enc(x), rtol=1e-10)
    with pytest.raises(ValueError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


# ----------------------------------------------------------------------- against PyTorch

def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name, kw, bias", SDPA, ids=[s[0] for s in SDPA])
def test_sdpa_against_torch(name, kw, bias):
    torch = _torch()
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (Q, K, V))
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **tkw)
    (out ** 2).sum().backward()
    np.testing.assert_allclose(F.scaled_dot_product_attention(Q, K, V, **kw),
                               out.detach().numpy(), rtol=1e-12, atol=1e-14)
    grads = fc.grad(lambda q, k, v: (F.scaled_dot_product_attention(q, k, v, **kw) ** 2).sum(),
                    argnums=(0, 1, 2))(Q, K, V)
    for g, t in zip(grads, (tq, tk, tv), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def _converted(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours


MHA = [
    dict(), dict(batch_first=True), dict(kdim=3, vdim=5), dict(bias=False),
    dict(add_bias_kv=True, add_zero_attn=True),
]


@pytest.mark.parametrize("kw", MHA, ids=lambda kw: ",".join(kw) or "default")
@pytest.mark.parametrize("call", ["plain", "masks", "no_weights", "float_3d_mask_per_head"])
def test_mha_against_torch(kw, call):
    torch = _torch()
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, **kw).double()
    ours = _converted(nn.MultiheadAttention(8, 2, **kw).double(), theirs)
    r = np.random.default_rng(1)
    x, k, v = r.standard_normal((5, 3, 8)), r.standard_normal((6, 3, kw.get("kdim", 8))), \
        r.standard_normal((6, 3, kw.get("vdim", 8)))
    if kw.get("batch_first"):
        x, k, v = (np.ascontiguousarray(np.swapaxes(a, 0, 1)) for a in (x, k, v))
    kpm, am = r.random((3, 6)) > 0.7, r.random((5, 6)) > 0.8
    kpm[:, 0] = am[:, 0] = False               # no query row loses every key
    extra = {"plain": {}, "masks": dict(key_padding_mask=kpm, attn_mask=am),
             "no_weights": dict(need_weights=False, attn_mask=r.standard_normal((5, 6))),
             "float_3d_mask_per_head": dict(average_attn_weights=False,
                                            attn_mask=r.standard_normal((6, 5, 6)))}[call]
    textra = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
    tx, tk, tv = (torch.tensor(a, requires_grad=True) for a in (x, k, v))
    t_out, t_w = theirs(tx, tk, tv, **textra)
    loss = (t_out ** 2).sum() + (0 if t_w is None else (t_w ** 3).sum())
    loss.backward()
    out, w = ours(x, k, v, **extra)
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-12, atol=1e-13)
    assert (w is None) == (t_w is None)
    if w is not None:
        np.testing.assert_allclose(w, t_w.detach().numpy(), rtol=1e-12, atol=1e-13)
    params = {n: np.array(p) for n, p in ours.named_parameters()}

    def f(p, x, k, v):
        o, w = fc.functional_call(ours, p, (x, k, v), extra)
        return (o ** 2).sum() + (0 if w is None else (w ** 3).sum())
    gp, gx, gk, gv = fc.grad(f, argnums=(0, 1, 2, 3))(params, x, k, v)
    for g, t in zip((gx, gk, gv), (tx, tk, tv), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    tp = dict(theirs.named_parameters())
    assert sorted(gp) == sorted(tp)
    for n, g in gp.items():
        np.testing.assert_allclose(g, tp[n].grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=n)


def test_mha_unbatched_against_torch():
    torch = _torch()
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 4).double()
    ours = _converted(nn.MultiheadAttention(8, 4).double(), theirs)
    x = rng.standard_normal((5, 8))
    am = rng.standard_normal((4, 5, 5))
    t_out, t_w = theirs(*(torch.tensor(x),) * 3, attn_mask=torch.tensor(am),
                        average_attn_weights=False)
    out, w = ours(x, x, x, attn_mask=am, average_attn_weights=False)
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(w, t_w.detach().numpy(), rtol=1e-12, atol=1e-13)


ENCODER = [
    dict(), dict(activation="gelu", norm_first=True), dict(batch_first=True, bias=False),
    dict(activation="callable", layer_norm_eps=1e-3),
]


@pytest.mark.parametrize("kw", ENCODER, ids=lambda kw: ",".join(kw) or "default")
def test_transformer_encoder_against_torch(kw):
    torch = _torch()
    tkw, okw = dict(kw), dict(kw)
    if kw.get("activation") == "callable":
        tkw["activation"], okw["activation"] = torch.tanh, fc.numpy.tanh
    torch.manual_seed(0)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **tkw)
    theirs = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8),
                                         enable_nested_tensor=False).double()
    o_layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **okw)
    ours = _converted(nn.TransformerEncoder(o_layer, 2, norm=nn.LayerNorm(8)).double(), theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    r = np.random.default_rng(2)
    x = r.standard_normal((3, 5, 8) if kw.get("batch_first") else (5, 3, 8))
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    kpm = r.random((3, 5)) > 0.7
    kpm[:, 0] = False
    tx = torch.tensor(x, requires_grad=True)
    t_out = theirs(tx, mask=torch.tensor(mask), src_key_padding_mask=torch.tensor(kpm))
    (t_out ** 2).sum().backward()
    args = dict(mask=mask, src_key_padding_mask=kpm)
    np.testing.assert_allclose(ours(x, **args), t_out.detach().numpy(), rtol=1e-11, atol=1e-12)
    params = {n: np.array(p) for n, p in ours.named_parameters()}
    gp, gx = fc.grad(lambda p, x: (fc.functional_call(ours, p, (x,), args) ** 2).sum(),
                     argnums=(0, 1))(params, x)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    for n, p in theirs.named_parameters():
        np.testing.assert_allclose(gp[n], p.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=n)


def test_decoder_and_transformer_structure_vmap_and_masks():
    fc.manual_seed(0)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                           dim_feedforward=16, dropout=0.0, batch_first=True).double()
    names = [k for k, _ in model.named_parameters()]
    assert names[:2] == ["encoder.layers.0.self_attn.in_proj_weight",
                         "encoder.layers.0.self_attn.in_proj_bias"]
    assert "decoder.layers.1.multihead_attn.out_proj.weight" in names
    assert names[-2:] == ["decoder.norm.weight", "decoder.norm.bias"]
    assert np.all(model.decoder.layers[1].multihead_attn.in_proj_bias == 0)
    src, tgt = rng.standard_normal((3, 6, 8)), rng.standard_normal((3, 4, 8))
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=np.float64)
    assert mask[0, 1] == -np.inf and mask[1, 0] == 0 and mask[2, 2] == 0
    out = model(src, tgt, tgt_mask=mask)
    assert out.shape == (3, 4, 8)
    # causal: the first target position does not see the later ones
    tgt2 = tgt.copy()
    tgt2[:, 2:] += 1.0
    np.testing.assert_allclose(model(src, tgt2, tgt_mask=mask)[:, :2], out[:, :2], rtol=1e-12)
    got = fc.vmap(lambda s, t: model(s[None], t[None], tgt_mask=mask)[0])(src, tgt)
    np.testing.assert_allclose(got, out, rtol=1e-11)
    with pytest.raises(ValueError, match=r"the batch number of src \(3, 6, 8\) and tgt "
                                         r"\(2, 4, 8\) must be equal"):
        model(src, tgt[:2])


DECODER = [dict(), dict(norm_first=True, activation="gelu"), dict(batch_first=True, bias=False)]


@pytest.mark.parametrize("kw", DECODER, ids=lambda kw: ",".join(kw) or "default")
def test_transformer_against_torch(kw):
    torch = _torch()
    torch.manual_seed(0)
    theirs = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                                  dim_feedforward=16, dropout=0.0, **kw).double()
    ours = _converted(nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2,
                                     num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                                     **kw).double(), theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    r = np.random.default_rng(3)
    bf = kw.get("batch_first")
    src = r.standard_normal((3, 6, 8) if bf else (6, 3, 8))
    tgt = r.standard_normal((3, 4, 8) if bf else (4, 3, 8))
    tmask = nn.Transformer.generate_square_subsequent_mask(4, dtype=np.float64)
    mkpm = r.random((3, 6)) > 0.7
    mkpm[:, 0] = False
    ts, tt = (torch.tensor(a, requires_grad=True) for a in (src, tgt))
    t_out = theirs(ts, tt, tgt_mask=torch.tensor(tmask),
                   memory_key_padding_mask=torch.tensor(mkpm))
    (t_out ** 2).sum().backward()
    args = dict(tgt_mask=tmask, memory_key_padding_mask=mkpm)
    np.testing.assert_allclose(ours(src, tgt, **args), t_out.detach().numpy(), rtol=1e-11,
                               atol=1e-12)
    params = {n: np.array(p) for n, p in ours.named_parameters()}
    gp, gs, gt = fc.grad(lambda p, s, t: (fc.functional_call(ours, p, (s, t), args) ** 2).sum(),
                         argnums=(0, 1, 2))(params, src, tgt)
    np.testing.assert_allclose(gs, ts.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(gt, tt.grad.numpy(), rtol=1e-9, atol=1e-11)
    for n, p in theirs.named_parameters():
        np.testing.assert_allclose(gp[n], p.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=n)
