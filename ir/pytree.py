"""Pytrees: nested containers of arrays, flattened to leaves and a hashable structure.

Containers: tuple, list, dict, ``collections.OrderedDict``, ``collections.defaultdict``,
namedtuple, None (no leaves), and any class registered with ``register_pytree_node`` or
``pytree_dataclass``. Everything else is a leaf.

Key order: a dict's (and a defaultdict's) leaves come in sorted-key order, and two dicts
with the same keys have the same structure whatever order their keys were inserted in;
``tree_unflatten`` rebuilds each dict in the key order of the dict that was flattened
(so ``grad`` of a function of ``{'w': w, 'b': b}`` returns ``{'w': ..., 'b': ...}``). An
``OrderedDict``'s order is part of its structure, and its leaves follow it.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any, NamedTuple


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple[list, Any]]
    unflatten: Callable[[Any, list], Any]


_registry: dict[type, _NodeType] = {}
# cls -> its fast_flatten, for the classes registered with one (read by jit's fast path)
FAST_FLATTEN: dict[type, Callable[[Any], Any]] = {}


def register_pytree_node(cls, flatten, unflatten, fast_flatten=None):
    """Register ``cls`` as a container.

    Args:
        cls: the class.
        flatten: ``obj -> (children, aux)``; ``aux`` must be hashable and comparable.
        unflatten: ``(aux, children) -> obj``.
        fast_flatten: optional, for ``jit``'s fast call path: ``obj -> (part, leaves,
            owners)`` or ``None`` (take the general path). ``leaves`` are ``obj``'s leaves
            in ``flatten``'s order, C-contiguous NumPy arrays; ``part`` is hashable
            and equal for two objects only when their structures and leaves' shapes and
            dtypes are; ``owners`` are distinct arrays that own their data, one per leaf:
            the memory each leaf lies in. Default ``None``.
    """
    if cls in _registry:
        raise ValueError(f"{cls.__name__} is already registered as a pytree node")
    _registry[cls] = _NodeType(flatten, unflatten)
    if fast_flatten is not None:
        FAST_FLATTEN[cls] = fast_flatten
    return cls


register_pytree_node(tuple, lambda t: (list(t), None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda _, c: list(c))
register_pytree_node(type(None), lambda _: ([], None), lambda _, c: None)


def dict_keys(d):
    """A dict's keys in flattening order: sorted when they sort, else insertion order."""
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _flatten_dict(d):
    keys = tuple(dict_keys(d))
    return [d[k] for k in keys], keys


register_pytree_node(dict, _flatten_dict, lambda keys, c: dict(zip(keys, c, strict=True)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: OrderedDict(zip(keys, c, strict=True)))


def _flatten_defaultdict(d):
    keys = tuple(dict_keys(d))
    return [d[k] for k in keys], (d.default_factory, keys)


register_pytree_node(defaultdict, _flatten_defaultdict,
                     lambda aux, c: defaultdict(aux[0], zip(aux[1], c, strict=True)))


def _sorted_keys(node, aux):
    """The keys a dict-like node's children follow, or None for other nodes."""
    if node is dict:
        return aux
    if node is defaultdict:
        return aux[1]
    return None


def _insertion_order(x, node, aux):
    """``x``'s keys as inserted, when a sorting node's children follow another order."""
    keys = _sorted_keys(node, aux)
    if keys is None or len(keys) < 2:
        return None
    order = tuple(x)
    return None if order == keys else order


def dict_def(items) -> PyTreeDef:
    """The structure of a dict given its ``(key, child structure)`` pairs in insertion order."""
    by_key = dict(items)
    keys = tuple(dict_keys(by_key))
    return PyTreeDef(dict, keys, [by_key[k] for k in keys], _insertion_order(by_key, dict, keys))


_NAMEDTUPLE = _NodeType(lambda t: (list(t), None), lambda _, c: c)   # rebuilt in _unflatten


def _node_type(x):
    nt = _registry.get(type(x))
    if nt is None and isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return _NAMEDTUPLE
    return nt


class PyTreeDef:
    """The structure of a pytree: hashable, comparable, printable.

    ``order`` is, for a dict whose keys were not inserted in sorted order, the keys in
    insertion order (``tree_unflatten`` rebuilds the dict in it); it is not part of the
    structure (equality and hash ignore it). ``orders`` gathers every node's order, or is
    None when no dict in the tree has one: caches whose traced function may observe key
    order (``jit``, the transforms) key on it as well.
    """

    __slots__ = ("_hash", "aux", "children", "node", "num_leaves", "order", "orders")

    def __init__(self, node, aux, children, order=None):
        self.node, self.aux, self.children = node, aux, tuple(children)
        self.order = order
        self.num_leaves = 1 if node is None else sum(c.num_leaves for c in self.children)
        self._hash = hash(self._key())      # immutable, and hashed on every jit call
        self.orders = None
        if order is not None or any(c.orders is not None for c in self.children):
            self.orders = (order, tuple(c.orders for c in self.children))

    def _key(self):
        return (self.node, self.aux, self.children)

    def __eq__(self, other):
        if self is other:
            return True
        return (isinstance(other, PyTreeDef) and self._hash == other._hash
                and self._key() == other._key())

    def __hash__(self):
        return self._hash

    def __repr__(self):
        if self.node is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        keys = _sorted_keys(self.node, self.aux)
        if keys is not None:
            by_key = dict(zip(keys, self.children, strict=True))
            inner = ", ".join(f"{k!r}: {by_key[k]!r}" for k in self.order or keys)
            if self.node is dict:
                return "{" + inner + "}"
            return f"defaultdict({self.aux[0]!r}, {{{inner}}})"
        if self.node is OrderedDict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children,
                                                                 strict=True))
            return f"OrderedDict({{{inner}}})"
        if self.node is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node is list:
            return f"[{inner}]"
        if self.node is type(None):
            return "None"
        return f"{self.node.__name__}({inner})"


_LEAF = None
_LEAF_DEF = PyTreeDef(_LEAF, None, ())


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """Return ``(leaves, treedef)``; ``is_leaf`` may stop the descent early."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _flatten(x, leaves, is_leaf):
    if is_leaf is None and type(x) in (tuple, list):     # the common containers, directly
        return PyTreeDef(type(x), None, [_flatten(c, leaves, None) for c in x])
    nt = None if (is_leaf is not None and is_leaf(x)) else _node_type(x)
    if nt is None:
        leaves.append(x)
        return _LEAF_DEF
    children, aux = nt.flatten(x)
    node = type(x)
    return PyTreeDef(node, aux, [_flatten(c, leaves, is_leaf) for c in children],
                     _insertion_order(x, node, aux))


def tree_unflatten(treedef: PyTreeDef, leaves):
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree structure {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    it = iter(leaves)
    return _unflatten(treedef, it)


def _unflatten(td, it):
    if td.node is _LEAF:
        return next(it)
    children = [_unflatten(c, it) for c in td.children]
    nt = _registry.get(td.node)
    if nt is None:     # a namedtuple
        return td.node(*children)
    if td.order is not None:
        by_key = dict(zip(_sorted_keys(td.node, td.aux), children, strict=True))
        items = [(k, by_key[k]) for k in td.order]
        return dict(items) if td.node is dict else defaultdict(td.aux[0], items)
    return nt.unflatten(td.aux, children)


def leaf_paths(treedef: PyTreeDef) -> list[str]:
    """Where each leaf sits, as Python would index it: ``[0]['w']``, ``.bias``, ``''``."""
    paths: list[str] = []
    _paths(treedef, "", paths)
    return paths


def _paths(td, prefix, out):
    if td.node is _LEAF:
        out.append(prefix)
        return
    keys = _sorted_keys(td.node, td.aux)
    if keys is not None or td.node is OrderedDict:
        steps = [f"[{k!r}]" for k in (td.aux if keys is None else keys)]
    elif hasattr(td.node, "_fields") and len(td.node._fields) == len(td.children):
        steps = [f".{f}" for f in td.node._fields]
    else:
        steps = [f"[{i}]" for i in range(len(td.children))]
    for step, child in zip(steps, td.children, strict=True):
        _paths(child, prefix + step, out)


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(fn, tree, *rest, is_leaf=None):
    """Apply ``fn`` to the leaves of ``tree`` (and the matching leaves of ``rest``).

    The trees in ``rest`` must have ``tree``'s structure (a dict's key order aside); the
    result has ``tree``'s, its dicts in ``tree``'s key order.
    """
    leaves, td = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r, is_leaf)
        if rtd != td:
            raise ValueError(f"tree_map: structures differ: {td} and {rtd}")
        others.append(rl)
    return tree_unflatten(td, [fn(*xs) for xs in zip(leaves, *others, strict=True)])


def pytree_dataclass(cls=None, *, static: tuple[str, ...] = ()):
    """Make a dataclass a pytree node; fields named in ``static`` go in the structure.

    Example::

        @pytree_dataclass(static=("activation",))
        class Layer:
            w: np.ndarray
            b: np.ndarray
            activation: str = "tanh"
    """
    def wrap(c):
        if not dataclasses.is_dataclass(c):
            c = dataclasses.dataclass(c)
        names = [f.name for f in dataclasses.fields(c)]
        unknown = set(static) - set(names)
        if unknown:
            raise ValueError(f"pytree_dataclass: static fields {sorted(unknown)} are not fields "
                             f"of {c.__name__}")
        dynamic = [n for n in names if n not in static]

        def flatten(obj):
            return ([getattr(obj, n) for n in dynamic],
                    tuple((n, getattr(obj, n)) for n in static))

        def unflatten(aux, children):
            return c(**dict(zip(dynamic, children, strict=True)), **dict(aux))

        register_pytree_node(c, flatten, unflatten)
        return c
    return wrap if cls is None else wrap(cls)
