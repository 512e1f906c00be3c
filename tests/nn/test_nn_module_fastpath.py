"""jit's fast call path for modules (``nn/module_fast.py``): a module argument is cached
per module while the structure epoch stands still; every mutation of a module's static
part must reach the general path again. The reference is the eager call ``model(x)``."""

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import nn


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _x(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _no_general_path(f):
    def fail(*args):
        raise AssertionError("the call took the general path")
    f._call = fail


def test_a_module_argument_takes_the_fast_path():
    model, x = _mlp(), _x(2, 4)
    f = fc.jit(lambda m, x: m(x))
    want = f(model, x)
    _no_general_path(f)
    np.testing.assert_array_equal(f(model, x), want)
    model[0].weight[...] = 0.5          # in place: the same arrays, read at each call
    np.testing.assert_allclose(f(model, x), model(x), rtol=1e-6, atol=1e-6)


def test_an_unchanged_module_stays_on_the_fast_path_across_many_calls():
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 2))
    x = _x(2, 1, 4, 4)
    f = fc.jit(lambda m, x: m(x))
    f(cnn, x)
    _no_general_path(f)
    before = np.array(cnn[1].running_mean)
    for _ in range(3):
        f(cnn, x)           # training: BatchNorm's running statistics written in place
    assert not np.array_equal(cnn[1].running_mean, before)
    assert int(cnn[1].num_batches_tracked) == 4


def _check(model, mutate, x, fn=lambda m, x: m(x)):
    f = fc.jit(fn)
    f(model, x)
    f(model, x)
    mutate(model)
    got = f(model, x)
    want = fn(model, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got.dtype == want.dtype
    return got


def _new_weight(m):
    m[0].weight = nn.Parameter(np.full((8, 4), 0.25, np.float32))


def _new_weight_through_the_table(m):
    m[2]._parameters["bias"] = nn.Parameter(np.full(3, 7.0, np.float32))


def _appended_layer(m):
    m.append(nn.Tanh())


def _replaced_layer(m):
    m._modules["1"] = nn.Sigmoid()      # torch's idiom: a write into the table


def _deleted_parameter(m):
    del m[2].bias
    m[2].register_parameter("bias", None)


def _hyperparameter(m):
    m[1].negative_slope = 0.9           # a new attribute: ReLU's forward ignores it
    setattr(m, "1", nn.LeakyReLU(0.9))


def _hook(m):
    m[2].register_forward_hook(lambda mod, args, out: out * 3)


def _dtype(m):
    m.to(np.float64)


MUTATIONS = [_new_weight, _new_weight_through_the_table, _appended_layer, _replaced_layer,
             _deleted_parameter, _hyperparameter, _hook, _dtype]


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda f: f.__name__.strip("_"))
def test_every_structural_mutation_is_seen(mutate):
    model, x = _mlp(), _x(2, 4)
    before = model(x)
    got = _check(model, mutate, x)
    # the mutation changes the answer
    assert got.dtype != before.dtype or not np.allclose(got, before)


def test_a_removed_hook_is_seen():
    model, x = _mlp(), _x(2, 4)
    handle = model[2].register_forward_hook(lambda mod, args, out: out * 3)
    before = model(x)
    got = _check(model, lambda m: handle.remove(), x)
    np.testing.assert_allclose(got * 3, before, rtol=1e-5, atol=1e-6)


def _bn_model():
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    m[1].running_mean[...] = 0.5
    m[1].running_var[...] = 2.0
    return m


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_training_mode_changes_are_seen(mode):
    model, x = _bn_model(), _x(5, 4)
    if mode == "train":
        model.eval()
    got = _check(model, lambda m: getattr(m, mode)(), x)
    assert (mode == "eval") == (not model[1].training)
    assert np.isfinite(got).all()


def test_a_replaced_buffer_is_seen():
    model, x = _bn_model().eval(), _x(5, 4)
    before = model(x)

    def replace(m):
        m[1].running_mean = np.full(3, -4.0, np.float32)
    got = _check(model, replace, x)
    assert not np.allclose(got, before)


def test_load_state_dict_in_place_is_seen():
    model, other, x = _mlp(), _mlp(), _x(2, 4)
    got = _check(model, lambda m: m.load_state_dict(other.state_dict()), x)
    np.testing.assert_allclose(got, other(x), rtol=1e-5, atol=1e-6)


def test_freezing_a_parameter_is_seen_by_grad():
    model, x = _mlp(), _x(2, 4)
    g = fc.jit(fc.grad(lambda m, x: m(x).sum()))
    assert np.abs(g(model, x)[0].weight).sum() > 0
    g(model, x)
    model[0].weight.requires_grad = False
    np.testing.assert_array_equal(g(model, x)[0].weight, 0)
    model.requires_grad_(True)
    assert np.abs(g(model, x)[0].weight).sum() > 0


def test_a_list_attribute_keeps_the_module_on_the_general_path():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = [1.0]
            self.lin = nn.Linear(4, 2)

        def forward(self, x):
            return self.lin(x) * sum(self.scales)

    model, x = Scaled(), _x(2, 4)
    got = _check(model, lambda m: m.scales.append(2.0), x)   # in place: no epoch bump
    np.testing.assert_allclose(got, model.lin(x) * 3, rtol=1e-5, atol=1e-6)


def test_parameters_lying_in_one_array_keep_the_general_path():
    base = nn.Parameter(np.arange(12, dtype=np.float32).reshape(3, 4))
    lin = nn.Linear(4, 2)
    lin.weight = base[:2]           # two views of one array: the signature records them
    lin.bias = base[2, :2]
    x = _x(2, 4)
    f = fc.jit(lambda m, x: m(x))
    for _ in range(2):
        np.testing.assert_allclose(f(lin, x), lin(x), rtol=1e-5, atol=1e-6)


def test_an_argument_aliasing_a_parameter_keeps_the_general_path():
    lin = nn.Linear(4, 4)
    f = fc.jit(lambda m, x: m(x))
    x = _x(4, 4)
    f(lin, x)
    alias = lin.weight.base             # the array the Parameter views
    np.testing.assert_allclose(f(lin, alias), lin(alias), rtol=1e-5, atol=1e-6)


def test_a_dead_module_leaves_the_cache():
    from functorch_core.nn import module_fast
    f = fc.jit(lambda m, x: m(x))
    model = _mlp()
    f(model, _x(1, 4))
    f(model, _x(1, 4))
    key = id(model)
    assert key in module_fast._CACHE
    del model
    assert key not in module_fast._CACHE
