"""Dict key order: leaves follow sorted keys, every rebuilt dict follows the caller's order."""

from __future__ import annotations

import logging
from collections import OrderedDict, defaultdict

import numpy as np
import pytest
from functorch_core.ir.pytree import tree_flatten, tree_leaves, tree_structure, tree_unflatten

import functorch_core as fc
import functorch_core.numpy as fnp

W, B = np.arange(3.0), np.array([10.0, 20.0])


def loss(p):
    return (p["w"] ** 2).sum() + 3.0 * p["b"].sum()


def test_flatten_sorts_leaves_and_unflatten_restores_the_insertion_order():
    d = {"w": W, "b": B, "a": 1.0}
    leaves, td = tree_flatten(d)
    assert leaves[0] == 1.0 and leaves[1] is B and leaves[2] is W   # a, b, w
    back = tree_unflatten(td, leaves)
    assert list(back) == ["w", "b", "a"]
    assert repr(td) == "{'w': *, 'b': *, 'a': *}"


def test_key_order_is_not_part_of_the_structure():
    wb, bw = tree_structure({"w": W, "b": B}), tree_structure({"b": B, "w": W})
    assert wb == bw and hash(wb) == hash(bw)
    assert wb.orders != bw.orders
    out = fc.tree_map(lambda x, y: x + y, {"w": 1.0, "b": 2.0}, {"b": 3.0, "w": 4.0})
    assert out == {"w": 5.0, "b": 5.0} and list(out) == ["w", "b"]   # the first tree's order


def test_nested_dicts_keep_their_orders():
    tree = [{"z": 1.0, "a": {"y": 2.0, "c": 3.0}}, {"m": 4.0}]
    assert tree_leaves(tree) == [3.0, 2.0, 1.0, 4.0]
    back = tree_unflatten(tree_structure(tree), tree_leaves(tree))
    assert list(back[0]) == ["z", "a"] and list(back[0]["a"]) == ["y", "c"]


def test_grad_returns_the_params_in_the_callers_order():
    params = {"w": W, "b": B}
    g = fc.grad(loss)(params)
    assert list(g) == ["w", "b"]
    # torch.func's habit: pair the gradients with the parameters by position
    for (name, p), gv in zip(params.items(), g.values(), strict=True):
        assert gv.shape == p.shape, name
    np.testing.assert_allclose(g["w"], 2 * W)
    np.testing.assert_allclose(g["b"], [3.0, 3.0])


@pytest.mark.parametrize("transform", [
    lambda f: fc.jit(f),
    lambda f: fc.vmap(f),
    lambda f: fc.functionalize(f),
    lambda f: (lambda x: fc.jvp(f, (x,), (x,))[0]),
    lambda f: (lambda x: fc.vjp(f, x)[0]),
])
def test_outputs_keep_the_order_the_function_wrote(transform):
    def f(x):
        return {"zeta": x * 2.0, "alpha": x + 1.0, "mu": x}
    out = transform(f)(np.ones(3))
    assert list(out) == ["zeta", "alpha", "mu"]
    np.testing.assert_allclose(out["zeta"], np.full(3, 2.0))


def test_jit_retraces_for_a_new_key_order_the_function_can_observe():
    f = fc.jit(lambda d: fnp.concatenate(list(d.values())))
    np.testing.assert_array_equal(f({"w": W, "b": B}), np.concatenate([W, B]))
    np.testing.assert_array_equal(f({"b": B, "w": W}), np.concatenate([B, W]))
    g = fc.jit(lambda d: d)
    assert list(g({"w": W, "b": B})) == ["w", "b"]
    assert list(g({"b": B, "w": W})) == ["b", "w"]
    assert list(g({"w": W, "b": B})) == ["w", "b"]     # each cached signature its own order


def test_retrace_log_says_the_key_order_changed(caplog):
    old = fc.config.log_retraces
    fc.config.log_retraces = True
    try:
        f = fc.jit(lambda d: d["w"].sum() + d["b"].sum())
        with caplog.at_level(logging.WARNING, logger="functorch_core.jit"):
            f({"w": W, "b": B})
            f({"b": B, "w": W})
    finally:
        fc.config.log_retraces = old
    msgs = [r.getMessage() for r in caplog.records if "tracing again" in r.getMessage()]
    assert len(msgs) == 1 and "a dict's key order changed from (({'w': *, 'b': *},), {}) " \
        "to (({'b': *, 'w': *},), {})" in msgs[0]


def test_grad_cache_keeps_each_calls_order():
    h = fc.grad(lambda d: fnp.concatenate(list(d.values()))[0])
    np.testing.assert_array_equal(h({"w": W, "b": B})["w"], [1.0, 0.0, 0.0])
    gb = h({"b": B, "w": W})
    assert list(gb) == ["b", "w"]
    np.testing.assert_array_equal(gb["b"], [1.0, 0.0])
    np.testing.assert_array_equal(gb["w"], [0.0, 0.0, 0.0])


def test_ordereddict_is_a_container_whose_order_is_its_structure():
    od = OrderedDict([("w", W), ("b", B)])
    leaves, td = tree_flatten(od)
    assert leaves[0] is W and leaves[1] is B
    assert td != tree_structure(OrderedDict([("b", B), ("w", W)]))
    assert td != tree_structure({"w": W, "b": B})
    g = fc.grad(loss)(od)
    assert type(g) is OrderedDict and list(g) == ["w", "b"]
    np.testing.assert_allclose(g["w"], 2 * W)


def test_defaultdict_keeps_its_factory_and_order():
    dd = defaultdict(list, [("w", W), ("b", B)])
    out = fc.tree_map(lambda x: x * 2, dd)
    assert type(out) is defaultdict and out.default_factory is list
    assert list(out) == ["w", "b"]
    np.testing.assert_allclose(out["b"], 2 * B)
    assert tree_structure(dd) == tree_structure(defaultdict(list, [("b", B), ("w", W)]))
    assert tree_structure(dd) != tree_structure(defaultdict(set, [("b", B), ("w", W)]))
    g = fc.grad(loss)(dd)
    assert type(g) is defaultdict and list(g) == ["w", "b"]


def test_export_round_trip_keeps_the_output_key_order(tmp_path):
    def f(x):
        return {"zeta": x * 2.0, "alpha": x + 1.0}
    x = np.ones(3)
    fc.export(f, x).save(tmp_path / "k.fcx")
    out = fc.load_exported(tmp_path / "k.fcx")(x)
    assert list(out) == ["zeta", "alpha"]
    np.testing.assert_allclose(out["alpha"], 2.0 * x)


def test_jacobians_hessians_and_scan_keep_the_order():
    p = {"w": W[:2], "b": B}
    f = lambda p: (p["w"] ** 2 * p["b"]).sum()     # noqa: E731
    for out in (fc.jacrev(f)(p), fc.jacfwd(f)(p), fc.value_and_grad(f)(p)[1]):
        assert list(out) == ["w", "b"]
    h = fc.hessian(f)(p)
    assert list(h) == ["w", "b"] and list(h["w"]) == ["w", "b"]
    np.testing.assert_allclose(h["w"]["b"], np.diag(2 * W[:2]))
    carry, ys = fc.lax.scan(lambda c, x: ({"z": c["z"] + x, "a": c["a"]}, {"q": x, "c": -x}),
                            {"z": 0.0, "a": 1.0}, np.arange(3.0))
    assert list(carry) == ["z", "a"] and list(ys) == ["q", "c"]
    assert float(carry["z"]) == 3.0
