"""nn.Module: registration, traversal, state_dict, modes, hooks, repr, and the module pytree."""

from collections import OrderedDict

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.testing import check_grads


class Affine(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(np.arange(1.0, n + 1))
        self.b = nn.Parameter(np.zeros(n))
        self.register_buffer("count", np.zeros(()))
        self.register_buffer("scratch", np.zeros(n), persistent=False)

    def forward(self, x):
        self.count[...] = self.count + 1
        return x * self.w + self.b


def make_net():
    fc.manual_seed(0)
    return nn.Sequential(OrderedDict(fc=nn.Linear(3, 4, dtype=np.float64), act=nn.Tanh(),
                                     head=nn.Linear(4, 2, dtype=np.float64)))


def test_registration_and_traversal():
    m = nn.Sequential(Affine(3), nn.ReLU(), Affine(3))
    assert [k for k, _ in m.named_parameters()] == ["0.w", "0.b", "2.w", "2.b"]
    assert [k for k, _ in m.named_buffers()] == ["0.count", "0.scratch", "2.count",
                                                 "2.scratch"]
    assert list(m.state_dict()) == ["0.w", "0.b", "0.count", "2.w", "2.b", "2.count"]
    assert [k for k, _ in m.named_children()] == ["0", "1", "2"]
    assert [k for k, _ in m.named_modules()] == ["", "0", "1", "2"]
    assert len(list(m.parameters())) == 4 and len(list(m.modules())) == 4
    assert isinstance(m[0].w, nn.Parameter) and type(m[0].w * 2) is np.ndarray


def test_shared_parameter_listed_once():
    a = nn.Linear(2, 2)
    b = nn.Linear(2, 2)
    b.weight = a.weight
    m = nn.ModuleList([a, b])
    assert [k for k, _ in m.named_parameters()] == ["0.weight", "0.bias", "1.bias"]


def test_assigning_non_parameter_to_parameter_name_raises():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.weight = 3
    with pytest.raises(AttributeError, match=r"before Module\.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.p = nn.Parameter(np.ones(2))
        Bad()


def test_load_state_dict_roundtrip_and_errors():
    src, dst = make_net(), make_net()
    fc.manual_seed(1)
    src = nn.Sequential(OrderedDict(fc=nn.Linear(3, 4, dtype=np.float64), act=nn.Tanh(),
                                    head=nn.Linear(4, 2, dtype=np.float64)))
    w_before = dst.fc.weight
    res = dst.load_state_dict({k: np.array(v) for k, v in src.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert dst.fc.weight is w_before                       # copied in place
    np.testing.assert_array_equal(dst.fc.weight, src.fc.weight)

    saved = {k: np.array(v) for k, v in dst.state_dict().items()}
    bad = dict(saved)
    del bad["head.bias"]
    bad["extra.w"] = np.zeros(1)
    bad["fc.weight"] = np.zeros((5, 3))
    with pytest.raises(RuntimeError) as e:
        dst.load_state_dict(bad)
    msg = str(e.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "head.bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra.w".' in msg
    assert "size mismatch for fc.weight: copying a param with shape (5, 3)" in msg
    assert "the shape in current model is (4, 3)" in msg
    for k, v in dst.state_dict().items():                   # untouched
        np.testing.assert_array_equal(v, saved[k])
    bad.pop("fc.weight")
    res = dst.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc.weight", "head.bias"] and res.unexpected_keys == ["extra.w"]


def test_train_eval_apply_to_requires_grad():
    m = make_net()
    assert all(x.training for x in m.modules())
    m.eval()
    assert not any(x.training for x in m.modules())
    seen = []
    m.apply(lambda x: seen.append(type(x).__name__))
    assert seen == ["Linear", "Tanh", "Linear", "Sequential"]
    m.to(np.float32)
    assert all(p.dtype == np.float32 for p in m.parameters())
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())


def test_requires_grad_false_gives_zero_gradient():
    m = make_net()
    m.fc.requires_grad_(False)
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    g = fc.grad(lambda m, x: (m(x) ** 2).sum())(m, x)
    assert np.all(g.fc.weight == 0) and np.all(g.fc.bias == 0)
    assert np.any(g.head.weight != 0)


def test_forward_hooks():
    m = nn.Linear(2, 2, dtype=np.float64)
    calls = []
    h = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out * 2)
    x = np.ones((1, 2))
    y = m(x)
    np.testing.assert_allclose(y, 2 * (x @ m.weight.T + m.bias))
    h.remove()
    np.testing.assert_allclose(m(x), x @ m.weight.T + m.bias)
    assert calls == [(1, 2)]
    m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    np.testing.assert_allclose(m(x), (x + 1) @ m.weight.T + m.bias)


def test_repr_like_pytorch():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Dropout(0.1)))
    assert repr(m) == ("Sequential(\n"
                       "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
                       "  (1): ReLU()\n"
                       "  (2): Sequential(\n"
                       "    (0): Dropout(p=0.1, inplace=False)\n"
                       "  )\n"
                       ")")


def test_module_is_a_pytree():
    m = make_net()
    leaves, tree = fc.tree_flatten(m)
    assert len(leaves) == 4
    m2 = fc.tree_unflatten(tree, leaves)
    assert type(m2) is nn.Sequential and m2.fc.in_features == 3
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    np.testing.assert_allclose(m2(x), m(x))
    # structure, not values, in the treedef: same-shaped modules share jit entries
    assert fc.tree_structure(make_net()) == tree
    assert fc.tree_structure(make_net().eval()) != tree


def test_jit_and_grad_of_module_argument():
    m = make_net()
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    np.testing.assert_allclose(fc.jit(lambda m, x: m(x))(m, x), m(x), rtol=1e-12)
    g = fc.grad(lambda m, x: (m(x) ** 2).sum())(m, x)
    assert type(g) is nn.Sequential
    params = {k: np.array(v) for k, v in m.named_parameters()}

    def loss_of(p):
        return (fc.functional_call(m, p, (x,)) ** 2).sum()
    gd = fc.grad(loss_of)(params)
    for k, v in g.named_parameters():
        np.testing.assert_allclose(v, gd[k], rtol=1e-12)
    check_grads(loss_of, (params,), order=2, modes=("rev",))


def test_jit_writes_buffers_back():
    m = Affine(3)
    x = np.ones(3)
    fc.jit(lambda m, x: m(x))(m, x)
    fc.jit(lambda m, x: m(x))(m, x)
    assert m.count == 2
    m(x)
    assert m.count == 3


def test_vmap_over_input_matches_loop():
    m = make_net()
    xs = np.linspace(-2, 2, 15).reshape(5, 3)
    out = fc.vmap(lambda x: m(x))(xs)
    np.testing.assert_allclose(out, np.stack([m(x) for x in xs]), rtol=1e-12)


def test_containers():
    ml = nn.ModuleList([nn.Linear(2, 2)]).append(nn.ReLU())
    assert len(ml) == 2 and isinstance(ml[-1], nn.ReLU)
    md = nn.ModuleDict({"a": nn.Linear(2, 3)})
    md["b"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([np.ones(2), np.zeros(3)])
    assert [k for k, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"x": np.ones(2)})
    assert isinstance(pd["x"], nn.Parameter)
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert len(seq[1:]) == 2 and isinstance(seq[0], nn.Linear)
    with pytest.raises(IndexError, match="Sequential: index 3"):
        seq[3]


def test_grad_of_module_with_integer_buffer_in_training_mode():
    fc.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.BatchNorm1d(4, dtype=np.float64))
    x = np.linspace(-1, 1, 15).reshape(5, 3)
    g = fc.grad(lambda m, x: (m(x) ** 2).sum())(m, x)
    assert g[1].num_batches_tracked == 0 and np.all(g[1].running_mean == 0)
    assert np.any(g[0].weight != 0)
    assert m[1].num_batches_tracked == 1          # grad writes back, as the eager call
    assert np.any(m[1].running_mean != 0)
    with pytest.raises(TypeError, match="dtype int64"):   # plain pytrees still refuse ints
        fc.grad(lambda d: d["w"].sum())({"w": np.ones(2), "n": np.zeros((), np.int64)})


def test_module_argument_to_jit_sees_updated_parameters():
    m = nn.Linear(3, 2, dtype=np.float64)
    x = np.ones((1, 3))
    f = fc.jit(lambda m, x: m(x))
    np.testing.assert_allclose(f(m, x), m(x))
    m.weight[...] = 0.5
    np.testing.assert_allclose(f(m, x), 1.5 + m.bias[None])
    m.load_state_dict({"weight": np.ones((2, 3)), "bias": np.zeros(2)})
    np.testing.assert_allclose(f(m, x), [[3.0, 3.0]])


def test_parameter_array_behaviour():
    p = nn.Parameter(np.ones(3))
    assert type(np.stack([p, p])) is np.ndarray and type(np.concatenate([p, p])) is np.ndarray
    assert type(p + 1) is np.ndarray and type(np.sum(p)) is np.float64
    m = nn.Linear(2, 2)
    w = m.weight
    m.weight += 1                                  # in place: still the same Parameter
    assert m.weight is w and isinstance(m.weight, nn.Parameter)
    out = np.zeros(3)
    assert np.add(p, p, out=out) is out
    import copy
    q = copy.deepcopy(nn.Parameter(np.ones(2), requires_grad=False))
    assert isinstance(q, nn.Parameter) and q.requires_grad is False


# ---- tied parameters ----------------------------------------------------------------------

class TinyLM(nn.Module):
    """Embedding, a hidden layer and an output layer; ``tie`` makes ``out.weight`` the very
    array ``emb.weight`` is (weight tying, as language models do)."""

    def __init__(self, tie=True):
        super().__init__()
        fc.manual_seed(5)
        self.emb = nn.Embedding(6, 4, dtype=np.float64)
        self.mid = nn.Linear(4, 4, dtype=np.float64)
        self.out = nn.Linear(4, 6, bias=False, dtype=np.float64)
        if tie:
            self.out.weight = self.emb.weight

    def forward(self, idx):
        return self.out(np.tanh(self.mid(self.emb(idx))))


IDX = np.array([0, 3, 5, 3])


def _lm_loss(m, idx):
    return (m(idx) ** 2).sum()


def _untied_copy(tied):
    u = TinyLM(tie=False)
    for k, v in tied.state_dict().items():
        u.state_dict()[k][...] = v
    return u


def test_tied_parameter_is_listed_once_under_its_first_name():
    m = TinyLM()
    assert [k for k, _ in m.named_parameters()] == ["emb.weight", "mid.weight", "mid.bias"]
    assert len(list(m.parameters())) == 3
    assert [k for k, _ in m.named_parameters(remove_duplicate=False)] == [
        "emb.weight", "mid.weight", "mid.bias", "out.weight"]
    sd = m.state_dict()                      # torch keeps both keys, one array
    assert list(sd) == ["emb.weight", "mid.weight", "mid.bias", "out.weight"]
    assert sd["out.weight"] is sd["emb.weight"]
    new = {k: np.full(v.shape, 0.5) for k, v in sd.items()}
    m.load_state_dict(new)
    assert m.out.weight is m.emb.weight and np.all(m.emb.weight == 0.5)


def test_tied_parameter_is_one_pytree_leaf_and_unflatten_reties_it():
    m = TinyLM()
    leaves, tree = fc.tree_flatten(m)
    assert len(leaves) == 3
    assert tree != fc.tree_structure(TinyLM(tie=False))
    m2 = fc.tree_unflatten(tree, [np.array(v) for v in leaves])
    assert m2.out.weight is m2.emb.weight
    shared = nn.Linear(2, 2)                  # a submodule registered twice: one node
    seq = nn.Sequential(shared, nn.Tanh(), shared)
    assert len(fc.tree_leaves(seq)) == 2
    s2 = fc.tree_map(lambda v: v * 2, seq)
    assert s2[0] is s2[2]


@pytest.mark.parametrize("jit", [False, True])
def test_grad_of_a_tied_parameter_sums_every_use(jit):
    m = TinyLM()
    grad = fc.grad(_lm_loss)
    g = (fc.jit(grad) if jit else grad)(m, IDX)
    assert g.out.weight is g.emb.weight
    gu = fc.grad(_lm_loss)(_untied_copy(m), IDX)
    np.testing.assert_allclose(g.emb.weight, gu.emb.weight + gu.out.weight, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(g.mid.weight, gu.mid.weight, rtol=1e-12, atol=1e-14)
    assert [k for k, _ in g.named_parameters()] == ["emb.weight", "mid.weight", "mid.bias"]


def test_optimizer_from_parameters_applies_the_whole_tied_gradient():
    m, lr = TinyLM(), 0.1
    u = _untied_copy(m)
    opt = fc.optim.SGD(m.parameters(), lr=lr)
    gu = fc.grad(_lm_loss)(u, IDX)
    want = np.array(m.emb.weight) - lr * (gu.emb.weight + gu.out.weight)
    opt.step(fc.grad(_lm_loss)(m, IDX))
    assert m.out.weight is m.emb.weight
    np.testing.assert_allclose(m.emb.weight, want, rtol=1e-12, atol=1e-14)


def test_equal_gradients_of_distinct_parameters_stay_distinct_leaves():
    """A compiled call may return one array for two equal outputs; unflatten copies it, so
    the gradient module keeps the model's structure (nothing is tied that was not)."""
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(np.ones(3))
            self.b = nn.Parameter(np.ones(3))

        def forward(self, x):
            return (x * self.a).sum() + (x * self.b).sum()
    m = Two()
    g = fc.jit(fc.grad(lambda m, x: m(x)))(m, np.arange(3.0))
    assert g.a is not g.b and fc.tree_structure(g) == fc.tree_structure(m)
    assert len(list(g.parameters())) == 2
    z = fc.tree_map(lambda v: 0.0, m)         # scalars are never ties
    assert fc.tree_structure(z) == fc.tree_structure(m)


# ---- Module.to(device / dtype) --------------------------------------------------------------

def test_to_takes_devices_and_dtypes_as_torch():
    m = make_net()
    w = m.fc.weight
    assert m.to("cpu") is m and m.fc.weight is w            # already there: kept
    assert m.to(device="cpu") is m and m.cpu() is m and m.fc.weight is w
    m.to(np.float32)
    assert m.fc.weight.dtype == np.float32 and isinstance(m.fc.weight, nn.Parameter)
    m.to("cpu", np.float64)
    assert m.fc.weight.dtype == np.float64
    m.to(device="cpu", dtype="float32")
    assert all(p.dtype == np.float32 for p in m.parameters())
    bn = nn.BatchNorm1d(3)
    bn.to(np.float64)
    assert bn.running_mean.dtype == np.float64 and bn.num_batches_tracked.dtype == np.int64


def test_to_keeps_tied_parameters_tied_and_requires_grad():
    m = TinyLM()
    m.mid.bias.requires_grad = False
    m.to(np.float32)
    assert m.out.weight is m.emb.weight and m.emb.weight.dtype == np.float32
    assert m.mid.bias.requires_grad is False and m.mid.weight.requires_grad is True


def test_to_bad_arguments_and_cuda_without_a_gpu_name_the_call(monkeypatch):
    from functorch_core.backends.cuda import availability
    m = make_net()
    monkeypatch.setattr(availability, "missing", lambda: "no CUDA driver or GPU was found")
    with pytest.raises(RuntimeError, match=r"Sequential\.to\('cuda'\): no GPU backend is "
                                           r"available here \(no CUDA driver"):
        m.to("cuda")
    with pytest.raises(RuntimeError, match=r"no GPU backend is available"):
        m.cuda()
    with pytest.raises(TypeError, match=r"Sequential\.to\('tpu'\): 'tpu' is neither a device "
                                        r"\('cpu', 'cuda'\) nor a dtype"):
        m.to("tpu")
    with pytest.raises(ValueError, match=r"to\(device='gpu'\): the device must be 'cpu' or "
                                         r"'cuda'"):
        m.to(device="gpu")
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())     # nothing moved


def test_to_cuda_places_arrays_with_device_put_and_back(monkeypatch):
    """With the cuda backend available (here numba-cuda's simulator stands in: its
    SimArray is the device array), to('cuda') places every array, to('cpu') brings back
    Parameters with their requires_grad."""
    from functorch_core.backends.cuda import arrays, availability
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setattr(availability, "missing", lambda: None)
    m = TinyLM()
    m.mid.bias.requires_grad = False
    want = np.array(m.mid.weight)
    m.to("cuda")
    assert all(arrays.is_device_array(v) for v in m.state_dict().values())
    assert m.out.weight is m.emb.weight
    m.to("cpu")
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())
    assert m.mid.bias.requires_grad is False and m.out.weight is m.emb.weight
    np.testing.assert_array_equal(m.mid.weight, want)
    m.mid.bias.requires_grad = True          # the flag, not a leftover, decides
    g = fc.grad(_lm_loss)(m, IDX)
    assert np.any(g.mid.bias != 0)
