"""functional_call, stack_module_state, make_functional(+_with_buffers),
combine_state_for_ensemble, and ensembling under vmap."""

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import nn
from functorch_core.testing import check_grads


def mlp(seed=0):
    fc.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5, dtype=np.float64), nn.Tanh(),
                         nn.Linear(5, 2, dtype=np.float64))


X = np.linspace(-1, 1, 12).reshape(4, 3)


def ref_mlp(p, x):
    h = np.tanh(x @ p["0.weight"].T + p["0.bias"])
    return h @ p["2.weight"].T + p["2.bias"]


def test_functional_call_replaces_and_restores():
    m = mlp()
    p = {k: np.array(v) * 2 for k, v in m.named_parameters()}
    before = {k: v for k, v in m.named_parameters()}
    np.testing.assert_allclose(fc.functional_call(m, p, (X,)), ref_mlp(p, X), rtol=1e-12)
    np.testing.assert_allclose(fc.functional_call(m, p, X), ref_mlp(p, X), rtol=1e-12)
    assert all(v is before[k] for k, v in m.named_parameters())
    # a subset: the rest keeps the module's values; a tuple of dicts is merged
    part = {"0.weight": p["0.weight"]}
    mixed = dict(before, **part)
    np.testing.assert_allclose(fc.functional_call(m, part, (X,)), ref_mlp(mixed, X))
    np.testing.assert_allclose(fc.functional_call(m, ({"0.weight": p["0.weight"]},
                                                      {"2.bias": p["2.bias"]}), (X,)),
                               ref_mlp(dict(before, **{"0.weight": p["0.weight"],
                                                       "2.bias": p["2.bias"]}), X))
    with pytest.raises(ValueError, match="multiple dictionaries"):
        fc.functional_call(m, ({"0.bias": p["0.bias"]}, {"0.bias": p["0.bias"]}), (X,))


def test_functional_call_strict():
    m = mlp()
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): '0.bias', '2.bias', "
                                           r"'2.weight'"):
        fc.functional_call(m, {"0.weight": np.zeros((5, 3))}, (X,), strict=True)
    p = dict(m.named_parameters(), extra=np.ones(1))
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\): 'extra'"):
        fc.functional_call(m, p, (X,), strict=True)
    with pytest.raises(AttributeError, match=r"'nope\.w' names no submodule"):
        fc.functional_call(m, {"nope.w": np.ones(1)}, (X,))


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        fc.manual_seed(0)
        self.a = nn.Linear(3, 3, bias=False, dtype=np.float64)
        self.b = nn.Linear(3, 3, bias=False, dtype=np.float64)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def test_tied_weights():
    m = Tied()
    assert [k for k, _ in m.named_parameters()] == ["a.weight"]
    w = np.eye(3) * 2
    np.testing.assert_allclose(fc.functional_call(m, {"a.weight": w}, (X,)), X * 4)
    untied = fc.functional_call(m, {"a.weight": w}, (X,), tie_weights=False)
    np.testing.assert_allclose(untied, (X * 2) @ m.a.weight.T)
    with pytest.raises(ValueError, match="which are tied"):
        fc.functional_call(m, {"a.weight": w, "b.weight": w * 2}, (X,))
    # the gradient of a tied weight sums both uses
    g = fc.grad(lambda p: fc.functional_call(m, p, (X,)).sum())({"a.weight": w})
    eps = 1e-6
    num = np.zeros_like(w)
    for i in range(3):
        for j in range(3):
            d = np.zeros_like(w)
            d[i, j] = eps
            num[i, j] = (((X @ (w + d).T) @ (w + d).T).sum()
                         - ((X @ (w - d).T) @ (w - d).T).sum()) / (2 * eps)
    np.testing.assert_allclose(g["a.weight"], num, rtol=1e-6, atol=1e-8)


def test_grad_of_functional_call_check_grads():
    m = mlp()
    p = {k: np.array(v) for k, v in m.named_parameters()}
    check_grads(lambda p: fc.functional_call(m, p, (X,)).sum(), (p,), order=2)


def test_per_sample_grads_vmap_matches_loop():
    m = mlp()
    p = {k: np.array(v) for k, v in m.named_parameters()}
    y = np.arange(4.0)

    def loss(p, x, t):
        return (fc.functional_call(m, p, (x[None],))[0, 0] - t) ** 2
    per = fc.vmap(fc.grad(loss), in_dims=(None, 0, 0))(p, X, y)
    for i in range(4):
        one = fc.grad(loss)(p, X[i], y[i])
        for k in p:
            np.testing.assert_allclose(per[k][i], one[k], rtol=1e-12)


def test_stack_module_state_and_ensemble_vmap():
    models = [mlp(s) for s in range(4)]
    params, buffers = fc.stack_module_state(models)
    assert params["0.weight"].shape == (4, 5, 3) and buffers == {}
    base = models[0]

    def run(p, b, x):
        return fc.functional_call(base, (p, b), (x,))
    out = fc.vmap(run, in_dims=(0, 0, None))(params, buffers, X)
    for i, mod in enumerate(models):
        np.testing.assert_allclose(out[i], mod(X), rtol=1e-12)
    # one batched graph: its size does not grow with the number of models
    g4 = fc.make_graph(fc.vmap(run, in_dims=(0, 0, None)))(params, buffers, X)
    p8, b8 = fc.stack_module_state([mlp(s) for s in range(8)])
    g8 = fc.make_graph(fc.vmap(run, in_dims=(0, 0, None)))(p8, b8, X)
    assert len(g4.eqns) == len(g8.eqns) < 20


def test_stack_module_state_mismatch_errors():
    with pytest.raises(ValueError, match=r"models\[1\]'s parameters"):
        fc.stack_module_state([nn.Linear(2, 3), nn.Linear(2, 4)])
    with pytest.raises(ValueError, match="same type"):
        fc.stack_module_state([nn.Linear(2, 3), nn.Tanh()])


def test_make_functional_and_combine_state():
    m = mlp()
    fmodel, params = fc.make_functional(m)
    assert len(params) == 4
    np.testing.assert_allclose(fmodel(params, X), m(X), rtol=1e-12)
    g = fc.grad(lambda ps: fmodel(ps, X).sum())(params)
    assert isinstance(g, tuple) and g[0].shape == (5, 3)
    bn = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.BatchNorm1d(4, dtype=np.float64))
    with pytest.raises(RuntimeError, match="make_functional_with_buffers"):
        fc.make_functional(bn)
    fmodel, params, buffers = fc.make_functional_with_buffers(bn.eval())
    np.testing.assert_allclose(fmodel(params, buffers, X), bn(X), rtol=1e-12)
    models = [mlp(s) for s in range(3)]
    fmodel, params, buffers = fc.combine_state_for_ensemble(models)
    out = fc.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, X)
    np.testing.assert_allclose(out, np.stack([mm(X) for mm in models]), rtol=1e-12)


def test_batchnorm_buffers_written_through_functional_call_under_jit():
    fc.manual_seed(0)
    bn = nn.BatchNorm1d(3, dtype=np.float64)
    params = {k: np.array(v) for k, v in bn.named_parameters()}
    buffers = {k: np.array(v) for k, v in bn.named_buffers()}
    step = fc.jit(lambda p, b, x: fc.functional_call(bn, (p, b), (x,)))
    step(params, buffers, X)
    np.testing.assert_allclose(buffers["running_mean"], 0.1 * X.mean(0), rtol=1e-12)
    np.testing.assert_allclose(buffers["running_var"], 0.9 + 0.1 * X.var(0, ddof=1),
                               rtol=1e-12)
    assert buffers["num_batches_tracked"] == 1
    assert bn.num_batches_tracked == 0 and np.all(bn.running_mean == 0)   # module untouched


def test_dropout_global_generator_jit_and_vmap():
    d = nn.Dropout(0.5)
    x = np.ones((200,))
    fc.manual_seed(0)
    eager = d(x)
    fc.manual_seed(0)
    jitted = fc.jit(lambda x: d(x))
    first = jitted(x)
    np.testing.assert_array_equal(first, eager)
    assert not np.array_equal(jitted(x), first)          # a fresh key per call
    assert set(np.unique(eager)) <= {0.0, 2.0} and 50 < (eager == 0).sum() < 150
    d.eval()
    np.testing.assert_array_equal(d(x), x)
    d.train()
    xs = np.ones((3, 50))
    out = fc.vmap(lambda x: d(x), randomness="different")(xs)
    assert not np.array_equal(out[0], out[1])
    same = fc.vmap(lambda x: d(x), randomness="same")(xs)
    np.testing.assert_array_equal(same[0], same[1])


def test_module_grad_with_traced_forward_uses_fnp():
    m = nn.Sequential(nn.Linear(3, 2, dtype=np.float64), nn.LogSoftmax(1))
    t = np.array([0, 1, 1, 0])
    g = fc.grad(lambda m: -fnp.mean(fnp.take_along_axis(m(X), t[:, None], axis=1)))(m)
    assert type(g) is nn.Sequential and g[0].weight.shape == (2, 3)


def test_batchnorm_training_step_returns_updated_buffers_through_aux():
    fc.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.BatchNorm1d(4, dtype=np.float64))
    params = {k: np.array(v) for k, v in m.named_parameters()}
    buffers = {k: np.array(v) for k, v in m.named_buffers()}

    def loss(p, b, x):
        return (fc.functional_call(m, (p, b), (x,)) ** 2).sum(), b
    (_, new_b), g = fc.jit(fc.value_and_grad(loss, has_aux=True))(params, buffers, X)
    assert sorted(g) == sorted(params)
    m(X)                                                  # the eager module, one step
    for k, v in m.named_buffers():
        np.testing.assert_allclose(new_b[k], v, rtol=1e-12, err_msg=k)
        np.testing.assert_allclose(buffers[k], v, rtol=1e-12, err_msg=k)   # written back
    # an ensemble in training mode: the vmapped function returns the stacked new buffers
    models = [nn.BatchNorm1d(3, dtype=np.float64) for _ in range(2)]
    p, b = fc.stack_module_state(models)
    xs = np.stack([X, 2 * X + 1])

    def run(p, b, x):
        return fc.functional_call(models[0], (p, b), (x,)), b
    _, nb = fc.vmap(run)(p, b, xs)
    for i, mod in enumerate(models):
        mod(xs[i])
        np.testing.assert_allclose(nb["running_var"][i], mod.running_var, rtol=1e-12)


@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2 ** 31))
@settings(max_examples=10)
def test_functional_call_laws(n_in, n_hidden, batch, seed):
    """functional_call with the module's own state is the module; loading another module's
    state_dict makes the outputs equal; stack_module_state + vmap is the per-model loop."""
    fc.manual_seed(seed)
    make = lambda: nn.Sequential(nn.Linear(n_in, n_hidden, dtype=np.float64), nn.SiLU(),  # noqa: E731
                                 nn.Linear(n_hidden, 2, dtype=np.float64))
    a, b = make(), make()
    x = np.random.default_rng(seed).standard_normal((batch, n_in))
    own = {k: v for k, v in a.named_parameters()}
    np.testing.assert_array_equal(fc.functional_call(a, own, (x,)), a(x))
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(b(x), a(x))
    p, bufs = fc.stack_module_state([a, make()])
    out = fc.vmap(lambda p, bb: fc.functional_call(a, (p, bb), (x,)))(p, bufs)
    np.testing.assert_allclose(out[0], a(x), rtol=1e-13, atol=1e-15)


def test_replace_all_batch_norm_modules_():
    net = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.BatchNorm1d(4, dtype=np.float64))
    assert fc.replace_all_batch_norm_modules_(net) is net
    assert [k for k, _ in net.named_buffers()] == [] and not net[1].track_running_stats
    h = X @ np.asarray(net[0].weight).T + net[0].bias
    ref = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5)
    net.eval()                                       # batch statistics even in eval mode
    np.testing.assert_allclose(net(X), ref, rtol=1e-10)
    p, b = fc.stack_module_state([net, net])
    assert b == {}
    out = fc.vmap(lambda p, x: fc.functional_call(net, p, (x,)))(p, np.stack([X, X]))
    np.testing.assert_allclose(out[1], ref, rtol=1e-10)


class _SlowScale(nn.Module):
    """Reads its weight twice with a thread switch between (as a long forward would)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones(3))

    def forward(self, x):
        first = x * self.w
        time.sleep(0)
        return first + x * self.w


def test_functional_call_from_many_threads_sees_its_own_state():
    m = _SlowScale()
    x = np.arange(1.0, 4.0)
    states = [{"w": np.full(3, float(i))} for i in range(8)]

    def call(i):
        return i, fc.functional_call(m, states[i % 8], (x,))
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(call, range(400)))
    for i, out in results:
        np.testing.assert_array_equal(out, 2 * x * (i % 8))
    assert np.all(m.w == 1.0) and m.w is m._parameters["w"]


def test_functional_call_leaves_the_module_alone_and_ties_by_tie_weights():
    m = Tied()
    w, before = np.eye(3) * 3, m.a.weight
    seen = []
    h = m.b.register_forward_hook(lambda mod, args, out: seen.append(mod.weight))
    np.testing.assert_allclose(fc.functional_call(m, {"b.weight": w}, (X,)), X * 9)
    assert seen[-1] is w and m.a.weight is before and m.b.weight is before
    untied = fc.functional_call(m, {"b.weight": w}, (X,), tie_weights=False)
    np.testing.assert_allclose(untied, (X @ before.T) * 3)
    h.remove()
