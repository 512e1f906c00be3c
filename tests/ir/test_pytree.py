"""Pytrees: flatten/unflatten round trips, registration, dataclasses, tree_map."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
from functorch_core.ir.pytree import (
    pytree_dataclass,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

import functorch_core as fc

Point = namedtuple("Point", ["x", "y"])

TREES = [
    1.0,
    np.arange(3),
    None,
    (),
    [],
    {},
    (1, 2),
    [1, (2, 3)],
    {"b": 1, "a": [2, 3]},
    Point(1, np.ones(2)),
    {"p": Point(x=[1, None], y={"z": (2,)}), "n": None},
    [[[[1]]], (((2,),),)],
    (None, [None, {"k": None}]),
]


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_round_trip(tree):
    leaves, td = tree_flatten(tree)
    back = tree_unflatten(td, leaves)
    assert _same(back, tree)
    assert td.num_leaves == len(leaves)
    assert tree_structure(back) == td
    assert hash(tree_structure(back)) == hash(td)


def test_leaf_order_and_none():
    leaves = tree_leaves({"b": 2, "a": (1, None, [3, 4]), "c": None})
    assert leaves == [1, 3, 4, 2]      # dict keys sorted, None has no leaves
    assert tree_leaves(None) == []
    assert tree_structure(None) != tree_structure(())


def test_namedtuple_keeps_its_type():
    td = tree_structure(Point(1, 2))
    back = tree_unflatten(td, [5, 6])
    assert type(back) is Point and back == Point(5, 6)
    assert td != tree_structure((1, 2))


def test_structures_differ_by_container_and_keys():
    assert tree_structure([1, 2]) != tree_structure((1, 2))
    assert tree_structure({"a": 1}) != tree_structure({"b": 1})
    assert tree_structure([1, [2]]) != tree_structure([1, 2])
    assert tree_structure({"a": 1, "b": 2}) == tree_structure({"b": 5, "a": 6})


def test_unflatten_wrong_leaf_count():
    td = tree_structure([1, (2, 3)])
    with pytest.raises(ValueError, match="3 leaves, got 2"):
        tree_unflatten(td, [1, 2])


def test_is_leaf_stops_descent():
    tree = {"a": (1, 2), "b": [3]}
    leaves, td = tree_flatten(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3]
    assert tree_unflatten(td, leaves) == tree


class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label


register_pytree_node(Box, lambda b: ([b.value], b.label), lambda label, c: Box(c[0], label))


def test_register_pytree_node():
    tree = [Box(np.ones(2), "w"), Box((1, 2), "b")]
    leaves, td = tree_flatten(tree)
    assert len(leaves) == 3
    back = tree_unflatten(td, [10, 20, 30])
    assert back[0].value == 10 and back[0].label == "w"
    assert back[1].value == (20, 30) and back[1].label == "b"
    # the aux data is part of the structure
    assert tree_structure(Box(1, "w")) != tree_structure(Box(1, "v"))


def test_register_twice_is_an_error():
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(Box, lambda b: ([], None), lambda a, c: Box(None, None))


@pytree_dataclass(static=("activation",))
class Layer:
    w: np.ndarray
    b: np.ndarray
    activation: str = "tanh"


def test_pytree_dataclass_static_fields():
    layer = Layer(np.ones((2, 3)), np.zeros(3), "relu")
    leaves, td = tree_flatten(layer)
    assert len(leaves) == 2
    back = tree_unflatten(td, [np.full((2, 3), 2.0), np.ones(3)])
    assert isinstance(back, Layer) and back.activation == "relu"
    assert np.array_equal(back.w, np.full((2, 3), 2.0))
    assert td != tree_structure(Layer(np.ones((2, 3)), np.zeros(3), "tanh"))
    assert td == tree_structure(Layer(np.zeros((2, 3)), np.ones(3), "relu"))


def test_pytree_dataclass_unknown_static_field():
    with pytest.raises(ValueError, match="nope"):
        @pytree_dataclass(static=("nope",))
        class Bad:
            a: int


def test_pytree_dataclass_through_jit():
    """A static field selects code while tracing; the arrays are traced."""
    calls = []

    @fc.jit
    def apply(layer, x):
        calls.append(layer.activation)
        y = x @ layer.w + layer.b
        return np.tanh(y) if layer.activation == "tanh" else np.maximum(y, 0)

    x = np.ones((4, 2))
    relu = Layer(np.ones((2, 3)), -np.ones(3) * 3, "relu")
    np.testing.assert_allclose(apply(relu, x), np.zeros((4, 3)))
    np.testing.assert_allclose(apply(Layer(relu.w, relu.b), x), np.tanh(-np.ones((4, 3))))
    assert calls == ["relu", "tanh"]


def test_tree_map_several_trees():
    a = {"x": 1, "y": (2, 3)}
    b = {"x": 10, "y": (20, 30)}
    c = {"x": 100, "y": (200, 300)}
    assert tree_map(lambda p, q, r: p + q + r, a, b, c) == {"x": 111, "y": (222, 333)}
    assert tree_map(lambda p: p * 2, [1, None, Point(1, 2)]) == [2, None, Point(2, 4)]


def test_tree_map_structure_mismatch():
    with pytest.raises(ValueError, match="structures differ"):
        tree_map(lambda p, q: p + q, {"x": 1, "y": 2}, {"x": 1, "z": 2})
    with pytest.raises(ValueError, match="structures differ"):
        tree_map(lambda p, q: p + q, [1, 2], (1, 2))
    with pytest.raises(ValueError, match="structures differ"):
        tree_map(lambda p, q: p + q, [1, [2]], [1, 2])


def test_tree_map_is_leaf():
    out = tree_map(lambda t: len(t), [(1, 2), (3,)], is_leaf=lambda x: isinstance(x, tuple)
                   and all(isinstance(e, int) for e in x))
    assert out == [2, 1]


def test_deep_tree():
    tree = 0
    for i in range(200):
        tree = [tree, i]
    leaves, td = tree_flatten(tree)
    assert len(leaves) == 201
    assert tree_unflatten(td, leaves) == tree


def test_treedef_repr_is_readable():
    text = repr(tree_structure({"a": [1, (2,)], "b": None}))
    assert text == "{'a': [*, (*,)], 'b': None}"
