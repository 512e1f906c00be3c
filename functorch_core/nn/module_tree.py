"""A module as a pytree: its parameters and buffers are the leaves; its class, names,
other attributes and submodule structure the static part (``Module`` registers these)."""

from __future__ import annotations

import numpy as np

from functorch_core.numpy.internal import is_tracer
from functorch_core.transforms import stop_gradient

from .epoch import Table
from .parameter import _plain

# a module's own tables: its parameters, buffers and children
OWN = ("_parameters", "_buffers", "_modules")


class _Static:
    """A module's static part: its class, names and other attributes, hashable."""

    __slots__ = ("attrs", "cls", "frozen", "hash", "key", "names")

    def __init__(self, cls, names, attrs, frozen):
        self.cls, self.names, self.attrs, self.frozen = cls, names, attrs, frozen
        self.key = (cls, names, frozen, tuple((k, _freeze(v)) for k, v in attrs))
        self.hash = hash(self.key)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Static) and self.hash == other.hash and self.key == other.key


class _Ident:
    """Compares by identity (arrays and other unhashable attribute values)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Ident) and other.obj is self.obj


def _freeze(v):
    if isinstance(v, dict):
        return (dict, tuple((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, np.ndarray):
        return _Ident(v)
    try:
        hash(v)
    except TypeError:
        return _Ident(v)
    return (type(v), v)


class _Tree:
    """The static part of a module hierarchy: one ``(_Static, param slots, buffer slots,
    child slots)`` per distinct module (a submodule registered twice is one node). A
    param/buffer slot is the index of its leaf, a child slot the index of its node; -1
    stands for ``None``. An array registered under several names (tied weights) is one
    leaf, so transforms see one input and its gradient sums every use."""

    __slots__ = ("hash", "nodes")

    def __init__(self, nodes):
        self.nodes = nodes
        self.hash = hash(nodes)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Tree) and self.hash == other.hash and self.nodes == other.nodes


def module_flatten(root):
    leaves, leaf_at, node_at, nodes = [], {}, {}, []

    def leaf(v):
        if v is None:
            return -1
        if isinstance(v, _SCALARS):      # immutable (and interned): never a tie
            leaves.append(v)
            return len(leaves) - 1
        j = leaf_at.get(id(v))
        if j is None:
            j = leaf_at[id(v)] = len(leaves)
            leaves.append(_plain(v))
        return j

    def visit(m):
        i = node_at.get(id(m))
        if i is not None:
            return i
        i = node_at[id(m)] = len(nodes)
        nodes.append(None)
        d = m.__dict__
        params, bufs, mods = d["_parameters"], d["_buffers"], d["_modules"]
        frozen = d.get("_frozen", frozenset()) | frozenset(
            k for k, v in params.items() if getattr(v, "requires_grad", True) is False)
        attrs = tuple((k, v) for k, v in d.items() if k not in OWN and k != "_frozen")
        static = _Static(type(m), (tuple(params), tuple(bufs), tuple(mods)), attrs,
                         frozenset(frozen))
        pslots = tuple(leaf(v) for v in params.values())
        bslots = tuple(leaf(v) for v in bufs.values())
        mslots = tuple(-1 if c is None else visit(c) for c in mods.values())
        nodes[i] = (static, pslots, bslots, mslots)
        return i

    visit(root)
    return leaves, _Tree(tuple(nodes))


_SCALARS = (bool, int, float, complex, np.generic)


def _unaliased(children):
    """``children`` with a copy of each array that already appeared: distinct leaves are
    distinct arrays (a compiled call may return one array for two equal outputs), so the
    module flattens back to the same structure and ties only what was tied."""
    seen, out = set(), []
    for v in children:
        if not isinstance(v, _SCALARS) and id(v) in seen and hasattr(v, "copy"):
            v = v.copy()
        seen.add(id(v))
        out.append(v)
    return out


def module_unflatten(tree, children):
    leaves = _unaliased(children)
    built = []
    for static, *_ in tree.nodes:
        m = static.cls.__new__(static.cls)
        m.__dict__.update(static.attrs)
        built.append(m)
    for m, (static, pslots, bslots, mslots) in zip(built, tree.nodes, strict=True):
        pn, bn, mn = static.names
        d = m.__dict__
        d["_parameters"] = Table(
            (k, None if j < 0 else leaves[j]) for k, j in zip(pn, pslots, strict=True))
        d["_buffers"] = Table(
            (k, None if j < 0 else leaves[j]) for k, j in zip(bn, bslots, strict=True))
        d["_modules"] = Table(
            (k, None if j < 0 else built[j]) for k, j in zip(mn, mslots, strict=True))
        d["_frozen"] = static.frozen
        for k in static.frozen:
            v = d["_parameters"].get(k)
            if v is not None and is_tracer(v):
                d["_parameters"][k] = stop_gradient(v)
    return built[0]
