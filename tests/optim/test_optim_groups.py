"""Stateful optimizers with PyTorch-style param groups (per-group hyper-parameters, lr changed
between steps, add_param_group, state_dict with groups) and the RMSprop/Adagrad wrappers:
against the functional optimizers without torch, against torch.optim trajectories (float64,
1e-12) with it."""

import numpy as np
import pytest

from functorch_core import optim

STEPS = 6
rng = np.random.default_rng(0)
P0 = {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4),
      "h": rng.standard_normal((2, 3))}
GRADS = [{k: rng.standard_normal(v.shape) for k, v in P0.items()} for _ in range(STEPS)]

OPTS = [("SGD", optim.sgd, dict(lr=0.1, momentum=0.9), dict(lr=0.02, weight_decay=0.1)),
        ("Adam", optim.adam, dict(lr=0.1), dict(lr=0.01, amsgrad=True)),
        ("AdamW", optim.adamw, dict(lr=0.1), dict(weight_decay=0.3)),
        ("RMSprop", optim.rmsprop, dict(lr=0.01, momentum=0.5), dict(lr=0.03, alpha=0.9)),
        ("Adagrad", optim.adagrad, dict(lr=0.1, lr_decay=0.01), dict(lr=0.3, eps=1e-6))]
IDS = [o[0] for o in OPTS]


def _copy(names):
    return {k: P0[k].copy() for k in names}


def _functional(factory, hp, names, grads, lr_after=None):
    """One group's trajectory through the pure optimizer (lr switched after step 3)."""
    p, opt = _copy(names), factory(**hp)
    state = opt.init(p)
    for t, g in enumerate(grads):
        if t == 3 and lr_after is not None:
            opt = factory(**{**hp, "lr": lr_after})
        p, state = opt.update({k: g[k] for k in names}, state, p)
    return p


@pytest.mark.parametrize("cls, factory, defaults, group2", OPTS, ids=IDS)
def test_groups_are_independent_optimizers_and_lr_changes(cls, factory, defaults, group2):
    a, b = _copy(["w", "b"]), _copy(["h"])
    opt = getattr(optim, cls)([{"params": a}, {"params": b, **group2}], **defaults)
    assert [g["param_names"] for g in opt.param_groups] == [["w", "b"], ["h"]]
    assert opt.param_groups[1]["params"][0] is b["h"]
    for t, g in enumerate(GRADS):
        if t == 3:
            opt.param_groups[0]["lr"] = 0.5 * opt.param_groups[0]["lr"]
        opt.step(g)
    want_a = _functional(factory, defaults, ["w", "b"], GRADS, 0.5 * defaults["lr"])
    want_b = _functional(factory, {**defaults, **group2}, ["h"], GRADS)
    for k in a:
        np.testing.assert_allclose(a[k], want_a[k], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(b["h"], want_b["h"], rtol=1e-13, atol=1e-15)


def test_add_param_group_and_state_dict_round_trip():
    a, b = _copy(["w", "b"]), _copy(["h"])
    opt = optim.Adam(a, lr=0.1)
    opt.step({k: GRADS[0][k] for k in a})
    opt.add_param_group({"params": b, "lr": 0.01, "note": "head"})
    assert opt.param_groups[1]["betas"] == (0.9, 0.999) and opt.param_groups[1]["note"] == "head"
    opt.step(GRADS[1])
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert float(sd["state"][0]["step"]) == 2 and float(sd["state"][2]["step"]) == 1
    a2, b2 = {k: v.copy() for k, v in a.items()}, {k: v.copy() for k, v in b.items()}
    opt2 = optim.Adam([{"params": a2}, {"params": b2}], lr=0.7)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.01 and opt2.param_groups[0]["lr"] == 0.1
    for g in GRADS[2:]:
        opt.step(g)
        opt2.step(g)
    for k in a:
        np.testing.assert_array_equal(a[k], a2[k])
    np.testing.assert_array_equal(b["h"], b2["h"])


def test_list_groups_number_across_groups():
    arrays = [P0["w"].copy(), P0["b"].copy(), P0["h"].copy()]
    opt = optim.SGD([{"params": arrays[:2]}, {"params": arrays[2:], "lr": 1.0}], lr=0.1)
    opt.step([GRADS[0]["w"], GRADS[0]["b"], GRADS[0]["h"]])
    np.testing.assert_allclose(arrays[2], P0["h"] - GRADS[0]["h"], rtol=1e-15)
    np.testing.assert_allclose(arrays[0], P0["w"] - 0.1 * GRADS[0]["w"], rtol=1e-15)
    assert [g["params"] for g in opt.state_dict()["param_groups"]] == [[0, 1], [2]]


def test_group_errors_leave_arrays_untouched():
    a, b = _copy(["w", "b"]), _copy(["h"])
    with pytest.raises(ValueError, match=r"parameter 'w' appears in more than one group"):
        optim.SGD([{"params": a}, {"params": {"w": a["w"]}}], lr=0.1)
    with pytest.raises(ValueError, match="either every group names its parameters or none"):
        optim.SGD([{"params": a}, {"params": [b["h"]]}], lr=0.1)
    with pytest.raises(TypeError, match="a dict with a 'params' entry"):
        optim.SGD(a, lr=0.1).add_param_group([b["h"]])
    opt = optim.SGD([{"params": a}, {"params": b, "lr": 0.01}], lr=0.1)
    opt.param_groups[1]["momentum"] = 0.9
    with pytest.raises(ValueError, match=r"changing group 1's hyper-parameters .* changes its "
                                         r"state \(\) -> \('momentum_buffer',\)"):
        opt.step(GRADS[0])
    opt.param_groups[1]["momentum"] = 0.0
    opt.param_groups[0]["lr"] = -1.0
    with pytest.raises(ValueError, match="lr must be >= 0"):
        opt.step(GRADS[0])
    for k in a:
        np.testing.assert_array_equal(a[k], P0[k])
    np.testing.assert_array_equal(b["h"], P0["h"])
    with pytest.raises(ValueError, match=r"expected 2 param group\(s\)"):
        opt.load_state_dict(optim.SGD(_copy(["w"]), lr=0.1).state_dict())


# ---------------------------------------------------------------------------- against torch

def _torch_run(torch, cls, defaults, group2, grads, change_lr_at=3, add_at=None):
    tp = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in P0.items()}
    g1 = {"params": [tp["w"], tp["b"]]}
    g2 = {"params": [tp["h"]], **group2}
    topt = getattr(torch.optim, cls)([g1] if add_at else [g1, g2], **defaults)
    for t, g in enumerate(grads):
        if t == add_at:
            topt.add_param_group(g2)
        if t == change_lr_at:
            topt.param_groups[0]["lr"] *= 0.5
        for k, p in tp.items():
            p.grad = torch.tensor(g[k])
        topt.step()
    return tp, topt


@pytest.mark.parametrize("cls, factory, defaults, group2", OPTS, ids=IDS)
@pytest.mark.parametrize("add_at", [None, 2])
def test_group_trajectories_match_torch(cls, factory, defaults, group2, add_at):
    torch = pytest.importorskip("torch")
    tp, topt = _torch_run(torch, cls, defaults, group2, GRADS, add_at=add_at)
    a, b = _copy(["w", "b"]), _copy(["h"])
    opt = getattr(optim, cls)([{"params": a}] if add_at else
                              [{"params": a}, {"params": b, **group2}], **defaults)
    for t, g in enumerate(GRADS):
        if t == add_at:
            opt.add_param_group({"params": b, **group2})
        if t == 3:
            opt.param_groups[0]["lr"] *= 0.5
        # before the group is added torch leaves its parameter alone
        opt.step(g if t >= (add_at or 0) else {k: g[k] for k in ("w", "b")})
    for k, v in {**a, **b}.items():
        np.testing.assert_allclose(v, tp[k].detach().numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=k)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in
                                                         tsd["param_groups"]]
    for i, entry in tsd["state"].items():
        for key, value in entry.items():
            if value is not None:
                np.testing.assert_allclose(sd["state"][i][key], value.numpy(), rtol=1e-12,
                                           err_msg=f"{cls} state {i} {key}")
    for g, tg in zip(sd["param_groups"], tsd["param_groups"], strict=True):
        for key, value in g.items():
            if key in tg and key not in ("params", "param_names"):
                assert tg[key] == value, (cls, key)


@pytest.mark.parametrize("cls, factory, defaults, group2", OPTS, ids=IDS)
def test_load_torch_group_state_continues_its_trajectory(cls, factory, defaults, group2):
    torch = pytest.importorskip("torch")
    tp, topt = _torch_run(torch, cls, defaults, group2, GRADS[:3], change_lr_at=1)
    tsd = topt.state_dict()
    sd = {"state": {i: {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in e.items()
                        if v is not None} for i, e in tsd["state"].items()},
          "param_groups": tsd["param_groups"]}
    a = {k: tp[k].detach().numpy().copy() for k in ("w", "b")}
    b = {"h": tp["h"].detach().numpy().copy()}
    opt = getattr(optim, cls)([{"params": a}, {"params": b}], **defaults)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.5 * defaults["lr"]
    for g in GRADS[3:]:
        for k, p in tp.items():
            p.grad = torch.tensor(g[k])
        topt.step()
        opt.step(g)
    for k, v in {**a, **b}.items():
        np.testing.assert_allclose(v, tp[k].detach().numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=k)
