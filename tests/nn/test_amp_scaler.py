"""fc.amp.GradScaler: float16 loss scaling as torch.amp.GradScaler's rules."""

from __future__ import annotations

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import nn, optim

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 8)).astype(np.float32)
W0 = RNG.standard_normal((8, 4)).astype(np.float32)
TINY = 1e-8         # below float16's smallest subnormal (2**-24 ~ 6e-8): flushes to zero


def loss(w, x=X):
    return TINY * fnp.sum(x @ w)    # x @ w runs in float16 under autocast, the sum in float32


def grads_of(scaler):
    with fc.autocast(dtype=np.float16):
        return fc.grad(lambda w: scaler.scale(loss(w)))(W0)


def test_unscaled_float16_gradients_flush_to_zero_and_scaled_ones_do_not():
    plain = fc.amp.GradScaler(enabled=False)
    assert not np.any(grads_of(plain))          # the cotangent 1e-8 rounds to 0 in float16
    scaler = fc.amp.GradScaler()                # 2**16: the cotangent is 6.6e-4 in float16
    g = scaler.unscale_(grads_of(scaler))
    want = TINY * X.sum(0)[:, None] * np.ones((1, 4), np.float32)
    # the float16 product rounds x and the scaled cotangent (2**-11 relative each) and
    # its result (2**-11 of at most TINY * sum|x|); unscaling by 2**-16 is exact
    bound = 3 * 2.0 ** -11 * TINY * np.abs(X).sum(0)[:, None]
    assert np.all(np.abs(g - want) <= bound)
    assert g.dtype == np.float32


def test_a_step_with_an_inf_gradient_is_skipped_and_the_scale_backs_off():
    model = nn.Linear(8, 4)
    before = {k: v.copy() for k, v in model.state_dict().items()}
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = fc.amp.GradScaler(init_scale=2.0 ** 40)    # 2**40 * 1e-8 > float16's max
    with fc.autocast(dtype=np.float16):
        g = fc.grad(lambda m: scaler.scale(TINY * fnp.sum(m(fnp.asarray(X)))))(model)
    assert scaler.step(opt, g) is None
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 39


def test_clean_steps_apply_the_unscaled_gradients_and_grow_the_scale_on_schedule():
    model = nn.Linear(8, 4)
    ref = {k: v.copy() for k, v in model.state_dict().items()}
    opt = optim.SGD(model.parameters(), lr=0.5)
    scaler = fc.amp.GradScaler(init_scale=4.0, growth_interval=3)
    scales = []

    def f(m):
        return fnp.mean(m(fnp.asarray(X)) ** 2)
    for _ in range(7):
        g = fc.grad(lambda m: scaler.scale(f(m)))(model)
        scaler.step(opt, g)
        scaler.update()
        scales.append(scaler.get_scale())
        gref = fc.grad(lambda p: fnp.mean(fc.functional_call(model, p, (fnp.asarray(X),)) ** 2)
                       )(ref)
        ref = {k: ref[k] - 0.5 * gref[k] for k in ref}
    assert scales == [4.0, 4.0, 8.0, 8.0, 8.0, 16.0, 16.0]
    for k, v in model.state_dict().items():     # powers of two: unscaling is exact
        np.testing.assert_allclose(v, ref[k], rtol=1e-6, atol=1e-7)


def test_unscale_then_clip_then_step_does_not_unscale_twice():
    model = nn.Linear(8, 4)
    opt = optim.SGD(model.parameters(), lr=1.0)
    scaler = fc.amp.GradScaler(init_scale=1024.0)
    w = model.weight.copy()
    g = fc.grad(lambda m: scaler.scale(fnp.sum(m(fnp.asarray(X)))))(model)
    clipped = fc.tree_map(lambda a: a * 1.0, scaler.unscale_(g))    # new arrays
    scaler.step(opt, clipped)
    np.testing.assert_allclose(model.weight, w - np.ones((4, 1)) * X.sum(0)[None, :], rtol=1e-5)


def test_state_dict_round_trip_and_disabled_scaler():
    a = fc.amp.GradScaler(init_scale=8.0, growth_interval=5)
    a._growth_tracker = 2
    b = fc.amp.GradScaler()
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict() == {
        "scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
        "_growth_tracker": 2}
    off = fc.amp.GradScaler(enabled=False)
    x = np.float32(3.0)
    assert off.scale(x) is x and off.get_scale() == 1.0 and off.state_dict() == {}


def test_bad_arguments_and_misuse_are_refused_by_name():
    with pytest.raises(ValueError, match="backoff_factor"):
        fc.amp.GradScaler(backoff_factor=2.0)
    with pytest.raises(ValueError, match="growth_interval"):
        fc.amp.GradScaler(growth_interval=0)
    s = fc.amp.GradScaler()
    with pytest.raises(RuntimeError, match="update: no gradients were unscaled"):
        s.update()
    with pytest.raises(TypeError, match=r"GradScaler\.step: optimizer"):
        s.step(object(), {})
    with pytest.raises(TypeError, match="traced gradients"):
        fc.jit(lambda g: s.unscale_(g))(np.ones(2, np.float32))
