"""``pin_memory`` (TorchData's ``PinMemory``): move each item to pinned host memory.

NumPy arrays live in ordinary host memory and the CPU needs no pinning, so on
this backend the pipe rebuilds containers and leaves arrays as they are; an item
with its own ``pin_memory(device)`` method (as torch tensors have) is given to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import check_fn

__all__ = ["PinMemory", "pin_memory_fn"]


def pin_memory_fn(data, device=None):
    """The default of ``PinMemory``: ``data.pin_memory(device)`` where ``data`` has it,
    containers rebuilt around their pinned items, anything else returned as is.

    Args:
        data: an item (a pytree of arrays, numbers, strings ...).
        device: default ``None``; passed to ``pin_memory`` methods.

    Example::

        >>> pin_memory_fn({"x": [1, 2], "name": "a"})
        {'x': [1, 2], 'name': 'a'}
    """
    if hasattr(data, "pin_memory"):
        return data.pin_memory(device)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        pinned = {k: pin_memory_fn(v, device) for k, v in data.items()}
        try:
            return type(data)(pinned)
        except TypeError:  # a mapping type without a dict constructor
            return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(pin_memory_fn(v, device) for v in data))
    if isinstance(data, Sequence):
        pinned = [pin_memory_fn(v, device) for v in data]
        try:
            return type(data)(pinned)
        except TypeError:  # e.g. range
            return pinned
    return data


@functional_datapipe("pin_memory")
class PinMemory(IterDataPipe):
    """Yield each item moved to pinned memory by ``pin_memory_fn``
    (functional name: ``pin_memory``).

    On the CPU (NumPy arrays) this copies the containers and passes arrays through.

    Args:
        source_datapipe (IterDataPipe): the source.
        device: default ``None``; handed to ``pin_memory_fn``.
        pin_memory_fn (callable): default ``pin_memory_fn``; ``(item, device) -> item``.

    Example::

        >>> list(IterableWrapper([(1, "a"), (2, "b")]).pin_memory())
        [(1, 'a'), (2, 'b')]
    """

    _len_source = "source_datapipe"
    _repr_args = ("device",)

    def __init__(self, source_datapipe, device=None, pin_memory_fn=pin_memory_fn) -> None:
        check_fn("PinMemory", "pin_memory_fn", pin_memory_fn, (0, 1))
        self.source_datapipe = source_datapipe
        self.device = device
        self.pin_memory_fn = pin_memory_fn

    def is_replicable(self) -> bool:
        """``False``: TorchData keeps this pipe in the main process."""
        return False

    def __iter__(self):
        fn, device = self.pin_memory_fn, self.device
        for item in self.source_datapipe:
            yield fn(item, device)

    def _skip(self, n: int) -> bool:
        return self.source_datapipe._skip(n)
