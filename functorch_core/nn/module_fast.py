"""``jit``'s fast call path for modules: a module's flattened structure and leaves,
cached per module while the structure epoch (``epoch.py``) stands still, so that a call
``jit(lambda m, x: m(x))(model, x)`` revalidates them with one integer compare instead of
walking the hierarchy."""

from __future__ import annotations

import functools
import weakref

import numpy as np

from .epoch import EPOCH, Table
from .module_tree import OWN, module_flatten

# a module's tables the epoch watches: its own, and its hooks (attributes of the static part)
_TABLES = (*OWN, "_forward_hooks", "_forward_pre_hooks")
# id(module) -> (epoch when filled, weak reference to the module, module_fast_flatten's answer)
_CACHE: dict[int, tuple] = {}


class _Part:
    """A module hierarchy's static structure with its leaves' shapes and dtypes (what the
    general path's signature reads of it), hashed once."""

    __slots__ = ("hash", "key")

    def __init__(self, tree, leaves):
        self.key = (tree, tuple((a.shape, a.dtype) for a in leaves))
        self.hash = hash(self.key)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return isinstance(other, _Part) and self.hash == other.hash and self.key == other.key


def module_fast_flatten(m):
    """``(part, leaves, owners)`` of module ``m`` for ``jit``'s fast path (see
    ``register_pytree_node``), or None when the fast path cannot vouch for ``m``: a leaf
    that is not a C-contiguous array owning its memory alone, a table the epoch does not
    watch, or an attribute holding a list or dict (whose contents the static part copies,
    and whose changes nothing would notice)."""
    hit = _CACHE.get(id(m))
    if hit is not None and hit[0] == EPOCH[0] and hit[1]() is m:
        return hit[2]
    epoch = EPOCH[0]        # read first: a change while flattening leaves the entry stale
    found = _flattened(m)
    _CACHE[id(m)] = (epoch, weakref.ref(m, functools.partial(_drop, id(m))), found)
    return found


def _drop(key, ref):
    hit = _CACHE.get(key)
    if hit is not None and hit[1] is ref:
        del _CACHE[key]


def _flattened(m):
    if not _watched(m, set()):
        return None
    leaves, tree = module_flatten(m)
    owners = []
    for a in leaves:
        if type(a) is not np.ndarray or not a.flags.c_contiguous:
            return None
        owner = a if a.flags.owndata else a.base
        if type(owner) is not np.ndarray or not owner.flags.owndata:
            return None
        owners.append(owner)
    if len({id(o) for o in owners}) < len(owners):    # two leaves in one array
        return None
    return _Part(tree, leaves), leaves, owners


def _watched(m, seen):
    """Whether every change to the static part of ``m``'s hierarchy bumps the epoch."""
    if id(m) in seen:
        return True
    seen.add(id(m))
    d = m.__dict__
    if any(type(d.get(t)) is not Table for t in _TABLES):
        return False
    if not all(_immutable(v) for k, v in d.items() if k not in _TABLES):
        return False
    return all(c is None or _watched(c, seen) for c in d["_modules"].values())


def _immutable(v):
    if isinstance(v, list | dict):
        return False
    if isinstance(v, tuple):
        return all(_immutable(x) for x in v)
    return True
