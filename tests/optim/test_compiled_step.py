"""The stateful optimizers' ``step`` runs one compiled update (optim/_compiled.py): the same
bits as the functional update run eagerly, the user's arrays written in place, and a learning
rate changed between steps without recompiling."""

import numpy as np
import pytest

from functorch_core import optim
from functorch_core.optim import _compiled

FAMILIES = [
    (optim.SGD, {"momentum": 0.9, "nesterov": True}),
    (optim.Adam, {"amsgrad": True}),
    (optim.AdamW, {"weight_decay": 0.1}),
    (optim.RMSprop, {"momentum": 0.5, "centered": True}),
    (optim.Adagrad, {"lr_decay": 0.01}),
]


def _problem(dtype, seed=0):
    rng = np.random.default_rng(seed)
    shapes = {"w": (7, 5), "b": (5,), "s": ()}
    params = {k: rng.standard_normal(s).astype(dtype) for k, s in shapes.items()}
    grads = [{k: rng.standard_normal(s).astype(dtype) for k, s in shapes.items()}
             for _ in range(4)]
    return params, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw", FAMILIES, ids=[c.__name__ for c, _ in FAMILIES])
def test_step_has_the_eager_update_bits_and_writes_in_place(cls, kw, dtype):
    params, grads = _problem(dtype)
    mine = {k: v.copy() for k, v in params.items()}
    ids = {k: id(v) for k, v in mine.items()}
    opt = cls(mine, lr=0.05, **kw)
    ref = cls._factory(lr=0.05, **kw)
    p, st = params, ref.init(params)
    for g in grads:
        opt.step(g)
        p, st = ref.update(g, st, p)
    assert _compiled.compiled_update(cls._factory, opt._groups[0][2]) is not None
    for k in params:
        assert id(mine[k]) == ids[k] and mine[k].dtype == dtype
        np.testing.assert_array_equal(mine[k], p[k], err_msg=k)


def test_a_changed_lr_is_used_without_recompiling():
    params, grads = _problem(np.float32)
    mine = {k: v.copy() for k, v in params.items()}
    opt = optim.Adam(mine, lr=0.1)
    ref = optim.adam(lr=0.1)
    p, st = params, ref.init(params)
    update = _compiled.compiled_update(optim.adam, opt._groups[0][2])
    for i, g in enumerate(grads):
        lr = 0.1 / (i + 1)
        opt.param_groups[0]["lr"] = lr
        opt.step(g)
        p, st = optim.adam(lr=lr).update(g, st, p)
    assert len(update.cache) == 1
    for k in params:
        np.testing.assert_array_equal(mine[k], p[k], err_msg=k)


def test_a_schedule_takes_the_eager_update():
    params, grads = _problem(np.float64)
    assert _compiled.compiled_update(optim.sgd, {"lr": optim.cosine(0.1, 10)}) is None
    mine = {k: v.copy() for k, v in params.items()}
    opt = optim.SGD(mine, lr=optim.cosine(0.1, 10), momentum=0.9)
    ref = optim.sgd(lr=optim.cosine(0.1, 10), momentum=0.9)
    p, st = params, ref.init(params)
    for g in grads:
        opt.step(g)
        p, st = ref.update(g, st, p)
    for k in params:
        np.testing.assert_array_equal(mine[k], p[k], err_msg=k)
    assert not _compiled.arrays_only({"w": np.zeros(3)}, {"w": 1.0})


def test_state_dict_round_trip_after_compiled_steps():
    params, grads = _problem(np.float32)
    a = {k: v.copy() for k, v in params.items()}
    opt = optim.Adam(a, lr=0.01)
    for g in grads[:2]:
        opt.step(g)
    saved = opt.state_dict()
    b = {k: v.copy() for k, v in a.items()}
    other = optim.Adam(b, lr=0.01)
    other.load_state_dict(saved)
    for g in grads[2:]:
        opt.step(g)
        other.step(g)
    for k in params:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    # the saved dict is a copy: later steps (whose state buffers are reused) leave it alone
    again = optim.Adam({k: v.copy() for k, v in params.items()}, lr=0.01)
    again.load_state_dict(saved)
    assert all(np.array_equal(x, y) for x, y in (
        (again.state_dict()["state"][0]["exp_avg"], saved["state"][0]["exp_avg"]),))
