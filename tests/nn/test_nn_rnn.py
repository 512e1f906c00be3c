"""nn.RNN / GRU / LSTM and their cells: against PyTorch with converted state dicts when torch
is installed (outputs and gradients for every option combination), and without it against a
NumPy loop, finite differences (check_grads), vmap-vs-loop and jit-vs-eager."""

import itertools

import numpy as np
import pytest
from against_torch import assert_parameter_grads

import functorch_core as fc
from functorch_core import nn
from functorch_core.nn.rnn import RNNBase
from functorch_core.testing import check_grads

rng = np.random.default_rng(0)


def _sig(x):
    return 1 / (1 + np.exp(-x))


# --- a NumPy reference: PyTorch's equations as a plain loop ------------------------------------

def np_cell(mode, x, state, w):
    """One step; ``state`` is ``(h,)`` or ``(h, c)``; ``w`` the layer-direction's weights."""
    h = state[0]
    gi = x @ w["weight_ih"].T + w.get("bias_ih", 0)
    gh = h @ w["weight_hh"].T + w.get("bias_hh", 0)
    if mode in ("tanh", "relu"):
        a = gi + gh
        return (np.tanh(a) if mode == "tanh" else np.maximum(a, 0),)
    n = w["weight_hh"].shape[0] // (4 if mode == "LSTM" else 3)
    if mode == "GRU":
        r = _sig(gi[:, :n] + gh[:, :n])
        z = _sig(gi[:, n:2 * n] + gh[:, n:2 * n])
        new = np.tanh(gi[:, 2 * n:] + r * gh[:, 2 * n:])
        return ((1 - z) * new + z * h,)
    g = gi + gh
    i, f, gg, o = _sig(g[:, :n]), _sig(g[:, n:2 * n]), np.tanh(g[:, 2 * n:3 * n]), \
        _sig(g[:, 3 * n:])
    c = f * state[1] + i * gg
    h = o * np.tanh(c)
    if "weight_hr" in w:
        h = h @ w["weight_hr"].T
    return h, c


def np_rnn(mode, sd, x, states, num_layers, bidirectional):
    """Sequence-first batched reference: ``x`` ``(T, B, F)``, ``states`` ``[(L*D, B, H)...]``."""
    dirs = 2 if bidirectional else 1
    finals = [[] for _ in states]
    for layer in range(num_layers):
        outs = []
        for d, suffix in enumerate(["", "_reverse"][:dirs]):
            w = {k[:-len(f"_l{layer}{suffix}")]: v for k, v in sd.items()
                 if k.endswith(f"_l{layer}{suffix}")}
            st = tuple(s[layer * dirs + d] for s in states)
            ys = [None] * len(x)
            for t in (reversed(range(len(x))) if d else range(len(x))):
                st = np_cell(mode, x[t], st, w)
                ys[t] = st[0]
            outs.append(np.stack(ys))
            for f, s in zip(finals, st, strict=True):
                f.append(s)
        x = np.concatenate(outs, axis=-1)
    return x, [np.stack(f) for f in finals]


def make(mode, *args, **kw):
    if mode in ("tanh", "relu"):
        return nn.RNN(*args, nonlinearity=mode, **kw)
    return getattr(nn, mode)(*args, **kw)


MODES = ["tanh", "relu", "GRU", "LSTM"]


@pytest.mark.parametrize("mode,num_layers,bidirectional,proj",
                         [(m, 1, False, 0) for m in MODES] + [(m, 2, True, 0) for m in MODES]
                         + [("LSTM", 2, False, 3), ("LSTM", 2, True, 2)])
def test_matches_numpy_loop(mode, num_layers, bidirectional, proj):
    kw = {"proj_size": proj} if proj else {}
    fc.manual_seed(1)
    m = make(mode, 4, 5, num_layers=num_layers, bidirectional=bidirectional, dtype=np.float64,
             **kw)
    sd = {k: np.asarray(v) for k, v in m.state_dict().items()}
    x = rng.standard_normal((6, 3, 4))
    dirs = 2 if bidirectional else 1
    h0 = rng.standard_normal((num_layers * dirs, 3, proj or 5))
    c0 = rng.standard_normal((num_layers * dirs, 3, 5))
    states = [h0, c0] if mode == "LSTM" else [h0]
    out, fin = m(x, tuple(states) if mode == "LSTM" else h0)
    fin = list(fin) if mode == "LSTM" else [fin]
    ref_out, ref_fin = np_rnn(mode, sd, x, states, num_layers, bidirectional)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-13)
    for a, b in zip(fin, ref_fin, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    assert out.dtype == np.float64


@pytest.mark.parametrize("mode", MODES)
def test_cells_match_numpy_and_the_layer(mode):
    fc.manual_seed(2)
    cell = (nn.RNNCell(4, 5, nonlinearity=mode) if mode in ("tanh", "relu") else
            getattr(nn, mode + "Cell")(4, 5)).double()
    w = {k: np.asarray(v) for k, v in cell.state_dict().items()}
    x = rng.standard_normal((7, 3, 4))
    init = tuple(rng.standard_normal((3, 5)) for _ in range(2 if mode == "LSTM" else 1))
    ref, st, hs = init, init, []
    for t in range(len(x)):
        ref = np_cell(mode, x[t], ref, w)
        st = cell(x[t], st) if mode == "LSTM" else (cell(x[t], st[0]),)
        for a, b in zip(st, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        hs.append(st[0])
    # the sequence layer with the cell's weights gives the same outputs
    layer = make(mode, 4, 5, dtype=np.float64)
    layer.load_state_dict({f"{k}_l0": v for k, v in w.items()})
    out, _ = layer(x, tuple(s[None] for s in init) if mode == "LSTM" else init[0][None])
    np.testing.assert_allclose(out, np.stack(hs), rtol=1e-12, atol=1e-13)
    one = cell(x[0, 0])         # unbatched
    assert fc.tree_leaves(one)[0].shape == (5,)


def test_state_dict_keys_shapes_and_order():
    m = nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=2)
    names = [(k, v.shape) for k, v in m.state_dict().items()]
    expect = []
    for layer, sfx in itertools.product(range(2), ["", "_reverse"]):
        fan = 3 if layer == 0 else 4
        expect += [(f"weight_ih_l{layer}{sfx}", (32, fan)), (f"weight_hh_l{layer}{sfx}", (32, 2)),
                   (f"bias_ih_l{layer}{sfx}", (32,)), (f"bias_hh_l{layer}{sfx}", (32,)),
                   (f"weight_hr_l{layer}{sfx}", (2, 8))]
    assert names == expect
    g = nn.GRU(3, 4, bias=False)
    assert [(k, v.shape) for k, v in g.state_dict().items()] == [("weight_ih_l0", (12, 3)),
                                                                  ("weight_hh_l0", (12, 4))]
    cell = nn.LSTMCell(3, 4)
    assert [(k, v.shape) for k, v in cell.state_dict().items()] == [
        ("weight_ih", (16, 3)), ("weight_hh", (16, 4)), ("bias_ih", (16,)), ("bias_hh", (16,))]
    assert all(v.dtype == np.float32 for v in m.state_dict().values())


def test_default_init_is_uniform_in_bound_and_seeded():
    fc.manual_seed(3)
    a = nn.GRU(10, 64, num_layers=2)
    fc.manual_seed(3)
    b = nn.GRU(10, 64, num_layers=2)
    bound = 1 / np.sqrt(64)
    for (k, v), w in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        np.testing.assert_array_equal(v, w)
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.9 * bound, k
    assert abs(np.asarray(a.weight_hh_l1).std() - bound / np.sqrt(3)) < 0.05 * bound


@pytest.mark.parametrize("mode", MODES)
def test_batch_first_unbatched_and_default_h0(mode):
    fc.manual_seed(4)
    m = make(mode, 4, 5, num_layers=2, bidirectional=True, dtype=np.float64)
    x = rng.standard_normal((6, 3, 4))
    out, fin = m(x)
    m.batch_first = True
    out_bf, fin_bf = m(np.swapaxes(x, 0, 1))
    np.testing.assert_allclose(np.swapaxes(out_bf, 0, 1), out, rtol=1e-13)
    for a, b in zip(fc.tree_leaves(fin_bf), fc.tree_leaves(fin), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)      # h_n stays (L*D, B, H)
    m.batch_first = False
    out1, fin1 = m(x[:, 1])         # unbatched: (T, F)
    np.testing.assert_allclose(out1, out[:, 1], rtol=1e-12, atol=1e-14)
    for a, b in zip(fc.tree_leaves(fin1), fc.tree_leaves(fin), strict=True):
        assert a.shape == b.shape[:1] + b.shape[2:]
        np.testing.assert_allclose(a, b[:, 1], rtol=1e-12, atol=1e-14)
    zeros = np.zeros((4, 3, 5))
    out0, _ = m(x, (zeros, zeros) if mode == "LSTM" else zeros)
    np.testing.assert_allclose(out0, out, rtol=1e-13)


def test_float32_stays_float32_and_float64_input_promotes():
    m = nn.LSTM(3, 4)
    out, (h, c) = m(np.ones((2, 1, 3), np.float32))
    assert out.dtype == h.dtype == c.dtype == np.float32
    out, (h, c) = m(np.ones((2, 1, 3)), (np.zeros((1, 1, 4), np.float32),
                                          np.zeros((1, 1, 4), np.float32)))
    assert out.dtype == h.dtype == np.float64


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_check_grads_small(mode):
    fc.manual_seed(5)
    m = make(mode, 2, 3, num_layers=2, bidirectional=True, dtype=np.float64)
    params = {k: np.asarray(v) for k, v in m.named_parameters()}
    x = rng.standard_normal((3, 2, 2))
    h0 = rng.standard_normal((4, 2, 3)) * 0.5

    def f(p, x, h0):
        hx = (h0, h0 * 0.5) if mode == "LSTM" else h0
        out, fin = fc.functional_call(m, p, (x, hx))
        return out, fc.tree_leaves(fin)[0]
    check_grads(f, (params, x, h0), order=1)


@pytest.mark.parametrize("mode", MODES)
def test_vmap_matches_loop_and_jit_matches_eager(mode):
    fc.manual_seed(6)
    m = make(mode, 4, 5, num_layers=2, bidirectional=mode != "relu", batch_first=True,
             dtype=np.float64)
    xs = rng.standard_normal((3, 2, 6, 4))       # 3 batches of (B=2, T=6, F=4)

    def f(m, x):
        out, fin = m(x)
        return out, fin
    got = fc.vmap(f, in_dims=(None, 0))(m, xs)
    want = [f(m, x) for x in xs]
    for g, leaves in zip(fc.tree_leaves(got), zip(*[fc.tree_leaves(w) for w in want],
                                                   strict=True), strict=True):
        np.testing.assert_allclose(g, np.stack(leaves), rtol=1e-12, atol=1e-13)
    # vmap over unbatched sequences equals the batched layer
    out_b, _ = m(xs[0])
    out_v, _ = fc.vmap(f, in_dims=(None, 0))(m, xs[0])
    np.testing.assert_allclose(out_v, out_b, rtol=1e-12, atol=1e-13)

    jf = fc.jit(f)
    for g, w in zip(fc.tree_leaves(jf(m, xs[1])), fc.tree_leaves(f(m, xs[1])), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
    loss = lambda m, x: (f(m, x)[0] ** 2).sum()   # noqa: E731
    ge = fc.grad(loss)(m, xs[1])
    gj = fc.jit(fc.grad(loss))(m, xs[1])
    for (k, a), b in zip(ge.state_dict().items(), gj.state_dict().values(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=k)


def test_ensemble_vmap_over_stacked_parameters():
    fc.manual_seed(7)
    models = [nn.GRU(3, 4, dtype=np.float64) for _ in range(3)]
    params, _ = fc.stack_module_state(models)
    x = rng.standard_normal((5, 2, 3))
    got = fc.vmap(lambda p, x: fc.functional_call(models[0], p, (x,))[0],
                  in_dims=(0, None))(params, x)
    np.testing.assert_allclose(got, np.stack([m(x)[0] for m in models]), rtol=1e-12)


def test_time_loop_is_one_scan_per_layer_and_direction():
    m = nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    text = str(fc.make_graph(lambda m, x: m(x))(m, np.ones((50, 2, 4), np.float32)))
    assert text.count("scan[") == 4
    assert text.count("tanh") <= 2 * 4 + 2          # the step is not unrolled over 50 steps


def test_module_gradient_keeps_both_biases():
    """The gradients of bias_ih and bias_hh are one value; the module-shaped gradient still
    has two distinct arrays, so named_parameters() lists both (it skips repeated objects)."""
    m = nn.RNN(2, 3)
    g = fc.grad(lambda m, x: (m(x)[0] ** 2).sum())(m, np.ones((4, 1, 2), np.float32))
    assert [k for k, _ in g.named_parameters()] == list(m.state_dict())
    assert g.bias_ih_l0 is not g.bias_hh_l0


def test_eager_graph_outputs_are_distinct_arrays():
    g = fc.grad(lambda p, x: (np.tanh(x @ p["w"] + p["a"] + p["b"]) ** 2).sum())(
        {"w": np.ones((3, 3)), "a": np.ones(3), "b": np.ones(3)}, np.ones((5, 3)))
    assert g["a"] is not g["b"]
    np.testing.assert_array_equal(g["a"], g["b"])


def test_dropout_between_layers_in_training_mode_only():
    fc.manual_seed(8)
    m = nn.LSTM(3, 6, num_layers=2, dropout=0.5, dtype=np.float64)
    x = rng.standard_normal((5, 2, 3))
    train_a, _ = m(x)
    train_b, _ = m(x)
    assert not np.allclose(train_a, train_b)     # a fresh mask per call
    m.eval()
    ev, _ = m(x)
    m0 = nn.LSTM(3, 6, num_layers=2, dtype=np.float64)
    m0.load_state_dict(m.state_dict())
    np.testing.assert_allclose(ev, m0(x)[0], rtol=1e-13)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        one = nn.GRU(3, 6, dropout=0.5, dtype=np.float64)
    # no dropout after the last layer: a single layer is the same in training mode
    np.testing.assert_allclose(one.train()(x)[0], one.eval()(x)[0], rtol=1e-13)


def test_errors_name_the_module_and_shapes():
    m = nn.LSTM(4, 5, num_layers=2)
    with pytest.raises(ValueError, match=r"LSTM\(4, 5, num_layers=2\).*2D or 3D, got 4D"):
        m(np.ones((1, 2, 3, 4), np.float32))
    with pytest.raises(RuntimeError, match=r"input_size. Expected 4, got 3.*\(6, 2, 3\)"):
        m(np.ones((6, 2, 3), np.float32))
    h = np.zeros((1, 2, 5), np.float32)
    with pytest.raises(RuntimeError, match=r"hidden\[0\] size \(2, 2, 5\), got \(1, 2, 5\)"):
        m(np.ones((6, 2, 4), np.float32), (h, np.zeros((2, 2, 5), np.float32)))
    with pytest.raises(RuntimeError, match=r"hidden\[1\] size \(2, 2, 5\), got \(2, 5\)"):
        m(np.ones((6, 2, 4), np.float32), (np.zeros((2, 2, 5), np.float32),
                                           np.zeros((2, 5), np.float32)))
    with pytest.raises(RuntimeError, match=r"GRU\(4, 5\): Expected hidden size \(1, 5\)"):
        nn.GRU(4, 5)(np.ones((6, 4), np.float32), np.zeros((1, 2, 5), np.float32))
    with pytest.raises(TypeError, match="pair"):
        m(np.ones((6, 2, 4), np.float32), np.zeros((2, 2, 5), np.float32))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match=r"proj_size .* smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    cell = nn.GRUCell(4, 5)
    with pytest.raises(ValueError, match=r"GRUCell\(4, 5\).*1D or 2D, got 3D"):
        cell(np.ones((1, 2, 4), np.float32))
    with pytest.raises(RuntimeError, match="inconsistent input_size: got 3, expected 4"):
        cell(np.ones((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="batch size 2 doesn't match hidden batch size 3"):
        cell(np.ones((2, 4), np.float32), np.zeros((3, 5), np.float32))
    with pytest.raises(RuntimeError, match=r"hx\[1\] has inconsistent hidden_size: got 4"):
        nn.LSTMCell(4, 5)(np.ones((2, 4), np.float32), (np.zeros((2, 5), np.float32),
                                                        np.zeros((2, 4), np.float32)))


def test_repr_like_pytorch():
    assert repr(nn.LSTM(10, 20, 2, batch_first=True, bidirectional=True)) == \
        "LSTM(10, 20, num_layers=2, batch_first=True, bidirectional=True)"
    assert repr(nn.GRU(3, 4, bias=False, dropout=0.5, num_layers=2)) == \
        "GRU(3, 4, num_layers=2, bias=False, dropout=0.5)"
    assert repr(nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4, bias=False)) == "LSTMCell(3, 4, bias=False)"


# --- against PyTorch ------------------------------------------------------------------------

def _torch_layer(torch, mode, *args, **kw):
    if mode in ("tanh", "relu"):
        return torch.nn.RNN(*args, nonlinearity=mode, **kw)
    return getattr(torch.nn, mode)(*args, **kw)


COMBOS = [(mode, layers, bf, bi, proj, h0, unbatched)
          for mode in MODES for layers in (1, 2) for bf in (False, True) for bi in (False, True)
          for proj in (0, 2) for h0 in (False, True) for unbatched in (False, True)
          if not (proj and mode != "LSTM") and not (bf and unbatched)]


@pytest.mark.parametrize("mode,layers,batch_first,bidirectional,proj,h0,unbatched", COMBOS)
def test_matches_torch_outputs_and_gradients(mode, layers, batch_first, bidirectional, proj,
                                             h0, unbatched):
    torch = pytest.importorskip("torch")
    kw = dict(num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
    if proj:
        kw["proj_size"] = proj
    torch.manual_seed(0)
    theirs = _torch_layer(torch, mode, 3, 4, **kw).double()
    ours = make(mode, 3, 4, dtype=np.float64, **kw)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    r = np.random.default_rng(1)
    T, B, D = 5, 2, 2 if bidirectional else 1
    x = r.standard_normal((T, 3) if unbatched else (B, T, 3) if batch_first else (T, B, 3))
    sizes = [proj or 4, 4] if mode == "LSTM" else [4]
    states = [r.standard_normal((layers * D, s) if unbatched else (layers * D, B, s))
              for s in sizes] if h0 else None
    w_out = r.standard_normal(x.shape[:-1] + (D * (proj or 4),))

    def hx_of(st):
        if st is None:
            return None
        return tuple(st) if mode == "LSTM" else st[0]

    def loss_terms(out, fin, xp_sum, asarray):
        fin = list(fin) if mode == "LSTM" else [fin]
        total = xp_sum(out * asarray(w_out))
        for f in fin:
            total = total + xp_sum(f * f)
        return total

    xt = torch.tensor(x, requires_grad=True)
    st_t = [torch.tensor(s, requires_grad=True) for s in states] if h0 else None
    out_t, fin_t = theirs(xt, hx_of(st_t))
    loss_t = loss_terms(out_t, fin_t, torch.sum, torch.tensor)
    loss_t.backward()

    out, fin = ours(x, hx_of(states))
    np.testing.assert_allclose(out, out_t.detach().numpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(fc.tree_leaves(fin), (list(fin_t) if mode == "LSTM" else [fin_t]),
                    strict=True):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-12, atol=1e-12)

    params = {k: np.asarray(v) for k, v in ours.named_parameters()}

    def loss(p, x, st):
        out, fin = fc.functional_call(ours, p, (x, hx_of(st)))
        return loss_terms(out, fin, np.sum, np.asarray)
    gp, gx, gs = fc.grad(loss, argnums=(0, 1, 2))(params, x, states)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    if h0:
        for a, b in zip(gs, st_t, strict=True):
            np.testing.assert_allclose(a, b.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert_parameter_grads(gp, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_matches_torch_float32_jit(mode):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    kw = dict(num_layers=2, bidirectional=True, batch_first=True)
    theirs = _torch_layer(torch, mode, 6, 16, **kw)
    ours = make(mode, 6, 16, **kw)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((4, 20, 6)).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    out_t, _ = theirs(xt)
    (out_t ** 2).mean().backward()
    loss = lambda m, x: (m(x)[0] ** 2).mean()   # noqa: E731
    out = fc.jit(lambda m, x: m(x)[0])(ours, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, out_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = fc.jit(fc.grad(loss))(ours, x)
    for k, p in theirs.named_parameters():
        np.testing.assert_allclose(g.state_dict()[k], p.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=k)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("unbatched", [False, True])
def test_cells_match_torch(mode, unbatched):
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    if mode in ("tanh", "relu"):
        theirs, ours = torch.nn.RNNCell(3, 4, nonlinearity=mode), nn.RNNCell(
            3, 4, nonlinearity=mode)
    else:
        theirs, ours = getattr(torch.nn, mode + "Cell")(3, 4), getattr(nn, mode + "Cell")(3, 4)
    theirs, ours = theirs.double(), ours.double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    r = np.random.default_rng(3)
    x = r.standard_normal((3,) if unbatched else (2, 3))
    hs = [r.standard_normal(x.shape[:-1] + (4,)) for _ in range(2 if mode == "LSTM" else 1)]
    hx = tuple(hs) if mode == "LSTM" else hs[0]
    hxt = tuple(torch.tensor(h) for h in hs) if mode == "LSTM" else torch.tensor(hs[0])
    for args, targs in (((x,), (torch.tensor(x),)), ((x, hx), (torch.tensor(x), hxt))):
        got, want = ours(*args), theirs(*targs)
        for a, b in zip(fc.tree_leaves(got), (want if mode == "LSTM" else [want]), strict=True):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-12, atol=1e-13)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    for args, kw in [((10, 20, 2), dict(batch_first=True, bidirectional=True)),
                     ((3, 4), dict(bias=False, dropout=0.5, num_layers=2)),
                     ((3, 4), dict(proj_size=2))]:
        assert repr(nn.LSTM(*args, **kw)) == repr(torch.nn.LSTM(*args, **kw))
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == \
        repr(torch.nn.RNNCell(3, 4, nonlinearity="relu"))


def test_docstring_examples():
    import doctest

    from functorch_core.nn import rnn
    names = {"np": np, **{k: getattr(rnn, k) for k in rnn.__all__}}
    result = doctest.testmod(rnn, extraglobs=names, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
