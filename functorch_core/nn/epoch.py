"""The structure epoch: one counter that every change to a module's static part bumps.

``jit``'s fast call path caches, per module, its flattened structure and leaves, valid
while the epoch has not moved (one integer compare per call). Every way the nn package
changes a module's parameters, buffers, submodules, hooks or other attributes bumps it:
``Module.__setattr__``/``__delattr__``, writes into the module's own tables (which are
:class:`Table`\\ s), ``Parameter.requires_grad``, and the methods that write a module's
``__dict__`` directly (``train``/``eval``, ``requires_grad_``, ``to``, buffers' persistence).
"""

from __future__ import annotations

from collections import OrderedDict

# the current epoch, read directly on the fast path (one list item, no call)
EPOCH = [0]


def bump():
    """Move the epoch: every cached module structure is stale from now on."""
    EPOCH[0] += 1


class Table(OrderedDict):
    """A module's own table (parameters, buffers, submodules, hooks): an ``OrderedDict``
    whose every change bumps the structure epoch."""

    __slots__ = ()

    def __setitem__(self, key, value):
        EPOCH[0] += 1
        OrderedDict.__setitem__(self, key, value)

    def __delitem__(self, key):
        EPOCH[0] += 1
        OrderedDict.__delitem__(self, key)

    def pop(self, *args):
        EPOCH[0] += 1
        return OrderedDict.pop(self, *args)

    def popitem(self, last=True):
        EPOCH[0] += 1
        return OrderedDict.popitem(self, last)

    def setdefault(self, key, default=None):
        EPOCH[0] += 1
        return OrderedDict.setdefault(self, key, default)

    def update(self, *args, **kwargs):
        EPOCH[0] += 1
        OrderedDict.update(self, *args, **kwargs)

    def clear(self):
        EPOCH[0] += 1
        OrderedDict.clear(self)

    def move_to_end(self, key, last=True):
        EPOCH[0] += 1
        OrderedDict.move_to_end(self, key, last)
