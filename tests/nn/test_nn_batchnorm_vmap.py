"""Training-mode BatchNorm under vmap: a running-stat update with statistics that differ
across the batch into a buffer shared by the batch is an error naming the buffer (as in
torch.func); batched buffers (an ensemble) and eval / track_running_stats=False work."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn
from functorch_core.transforms.vmap import is_batched


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4, dtype=np.float64)
        self.bn1 = nn.BatchNorm1d(4, dtype=np.float64)

    def forward(self, x):
        return self.bn1(self.fc1(x)).sum()


X = np.random.default_rng(0).standard_normal((5, 2, 3))
NAMED = r"functional_call\(Net\): under vmap, training-mode BatchNorm would update buffer " \
    r"'bn1.running_mean' \(shape \(4,\)\).*replace_all_batch_norm_modules_.*" \
    r"track_running_stats=False"


def _state(m):
    return ({k: np.array(v) for k, v in m.named_parameters()},
            {k: np.array(v) for k, v in m.named_buffers()})


def test_per_sample_grads_with_running_stats_name_the_buffer():
    m = Net()
    p, b = _state(m)

    def loss(p, b, x):
        return fc.functional_call(m, (p, b), (x,))
    with pytest.raises(ValueError, match=NAMED):
        fc.vmap(fc.grad(loss), in_dims=(None, None, 0))(p, b, X)
    with pytest.raises(ValueError, match=NAMED):
        fc.vmap(loss, in_dims=(None, None, 0))(p, b, X)
    with pytest.raises(ValueError, match=NAMED):          # buffers closed over, not passed
        fc.vmap(lambda x: fc.functional_call(m, (p, b), (x,)))(X)
    with pytest.raises(ValueError, match=r"batch_norm: .* running_mean \(shape \(4,\)\) is "
                                         r"shared by the whole batch"):
        fc.vmap(m)(X)
    assert np.all(b["bn1.running_mean"] == 0) and np.all(m.bn1.running_mean == 0)
    # batched parameters, shared input: the statistics still differ per example
    pp = {k: np.stack([v, 2 * v]) for k, v in p.items()}
    with pytest.raises(ValueError, match=NAMED):
        fc.vmap(loss, in_dims=(0, None, None))(pp, b, X[0])


def test_what_works_under_vmap():
    m = Net()
    p, b = _state(m)
    b0 = {k: v.copy() for k, v in b.items()}
    # the same statistics for every example (x not batched) may update a shared buffer
    out = fc.vmap(lambda bb, x, y: fc.functional_call(m, (p, bb), (x,)) + y.sum(),
                  in_dims=(None, None, 0))(b0, X[0], X)
    assert out.shape == (5,)
    m.eval()                                         # running stats are only read
    g = fc.vmap(fc.grad(lambda p, x: fc.functional_call(m, (p, b), (x,))),
                in_dims=(None, 0))(p, X)
    m.train()
    fc.replace_all_batch_norm_modules_(m)
    loop = [fc.grad(lambda p, x: fc.functional_call(m, p, (x,)))(p, x) for x in X]
    g = fc.vmap(fc.grad(lambda p, x: fc.functional_call(m, p, (x,))), in_dims=(None, 0))(p, X)
    for k in p:
        np.testing.assert_allclose(g[k], np.stack([gl[k] for gl in loop]), rtol=1e-12,
                                   atol=1e-14)
    # an ensemble: one buffer per model, updated per model
    ens = [Net() for _ in range(3)]
    ps, bs = fc.stack_module_state(ens)
    fc.vmap(lambda p, b, x: (fc.functional_call(ens[0], (p, b), (x,)), b))(ps, bs, X[:3])


def test_is_batched_follows_dependence_through_nested_transforms():
    seen = {}

    def f(x, y, z):
        seen["x"], seen["y"], seen["xy"] = is_batched(x), is_batched(y), is_batched(x * y)
        seen["z"], seen["y+z"] = is_batched(z), is_batched(y + z)
        inner = fc.grad(lambda a, c: (seen.__setitem__("a", is_batched(a)),
                                      seen.__setitem__("c", is_batched(c)),
                                      (a * c).sum())[-1])
        return inner(y, x)
    fc.vmap(f, in_dims=(0, None, None))(np.ones((3, 2)), np.ones(2), np.ones(2))
    assert seen == {"x": True, "y": False, "xy": True, "z": False, "y+z": False, "a": False,
                    "c": True}
    assert not is_batched(np.ones(2))
    fc.jit(lambda x: seen.__setitem__("jit", is_batched(x)) or x)(np.ones(2))
    assert seen["jit"] is False
