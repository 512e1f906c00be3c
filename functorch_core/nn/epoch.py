"""The structure epoch: one counter that every change to a module's static part bumps.

``jit``'s fast call path caches, per module, its flattened structure and leaves, valid
while the epoch has not moved (one integer compare per call). Every way the nn package
changes a module's parameters, buffers, submodules, hooks or other attributes bumps it:
``Module.__setattr__``/``__delattr__``, writes into the module's own tables (which are
:class:`Table`\\ s), ``Parameter.requires_grad``, and the methods that write a module's
``__dict__`` directly (``train``/``eval``, ``requires_grad_``, ``to``, buffers' persistence).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

# the current epoch, read directly on the fast path (one list item, no call)
EPOCH = [0]
_TICKS = itertools.count(1)


def bump():
    """Move the epoch: every cached module structure is stale from now on.

    Call it after the change: a cache filled from the epoch it sets then holds the new
    structure. Each value is drawn once (``next`` of a counter is atomic), so concurrent
    bumps never restore a value some cache was filled at."""
    EPOCH[0] = next(_TICKS)


class Table(OrderedDict):
    """A module's own table (parameters, buffers, submodules, hooks): an ``OrderedDict``
    whose every change bumps the structure epoch."""

    __slots__ = ()

    def __setitem__(self, key, value):
        OrderedDict.__setitem__(self, key, value)
        bump()

    def __delitem__(self, key):
        OrderedDict.__delitem__(self, key)
        bump()

    def pop(self, *args):
        try:
            return OrderedDict.pop(self, *args)
        finally:
            bump()

    def popitem(self, last=True):
        try:
            return OrderedDict.popitem(self, last)
        finally:
            bump()

    def setdefault(self, key, default=None):
        try:
            return OrderedDict.setdefault(self, key, default)
        finally:
            bump()

    def update(self, *args, **kwargs):
        OrderedDict.update(self, *args, **kwargs)
        bump()

    def clear(self):
        OrderedDict.clear(self)
        bump()

    def move_to_end(self, key, last=True):
        OrderedDict.move_to_end(self, key, last)
        bump()
