"""Map pipe utilities: SequenceWrapper and the iter <-> map converters."""

from __future__ import annotations

import copy

from ..datapipe import IterDataPipe, MapDataPipe

__all__ = ["IterToMapConverter", "MapToIterConverter", "SequenceWrapper"]


def check_index(pipe, index, n):
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"{type(pipe).__name__}[{index!r}]: expected an int index")
    if not -n <= index < n:
        raise IndexError(f"{type(pipe).__name__}[{index}]: index out of range for length {n}")
    return index % n if n else index


class SequenceWrapper(MapDataPipe):
    """Wrap a sequence as a MapDataPipe.

    Args:
        sequence: anything with ``__getitem__`` and ``__len__``.
        deepcopy (bool): hold a deep copy, so in-place changes to the original
            do not leak in. Default: ``True``.

    Example::

        >>> SequenceWrapper(["a", "b"])[1]
        'b'
    """

    _len_source = "sequence"

    def __init__(self, sequence, deepcopy: bool = True):
        self.sequence = copy.deepcopy(sequence) if deepcopy else sequence

    def __getitem__(self, index):
        try:
            return self.sequence[index]
        except (IndexError, KeyError) as e:
            raise type(e)(f"SequenceWrapper[{index!r}]: no such index in a sequence of length "
                          f"{len(self.sequence)}") from None


class IterToMapConverter(MapDataPipe):
    """Read ``(key, value)`` pairs into a map (functional name on iter pipes:
    ``to_map_datapipe``).

    The source is read in full at the first ``[key]`` or ``len()``.

    Args:
        datapipe (IterDataPipe): the source.
        key_value_fn (callable, optional): turns an item into a ``(key, value)``
            pair. Default: ``None`` (the items are pairs already).

    Example::

        >>> IterableWrapper([("a", 1), ("b", 2)]).to_map_datapipe()["b"]
        2
    """

    def __init__(self, datapipe, key_value_fn=None):
        if not isinstance(datapipe, IterDataPipe):
            raise TypeError(f"IterToMapConverter: expected an IterDataPipe, got "
                            f"{type(datapipe).__name__}")
        self.datapipe = datapipe
        self.key_value_fn = key_value_fn
        self._map: dict | None = None

    def _load(self) -> dict:
        if self._map is None:
            out = {}
            for i, item in enumerate(self.datapipe):
                pair = item if self.key_value_fn is None else self.key_value_fn(item)
                try:
                    k, v = pair
                except (TypeError, ValueError):
                    raise ValueError(f"IterToMapConverter: item {i} is {pair!r}; expected a "
                                     "(key, value) pair") from None
                out[k] = v
            self._map = out
        return self._map

    def __getitem__(self, index):
        try:
            return self._load()[index]
        except KeyError:
            raise IndexError(f"IterToMapConverter[{index!r}]: no such key") from None

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self):
        yield from self._load()

    def __getstate__(self):
        state = dict(vars(self))
        state["_map"] = None
        return state


class MapToIterConverter(IterDataPipe):
    """Iterate a map pipe in index order (functional name on map pipes: ``to_iter_datapipe``).

    Args:
        datapipe (MapDataPipe): the source.
        indices (list, optional): the keys to read, in order. Default:
            ``range(len(datapipe))``.

    Example::

        >>> list(SequenceWrapper("ab").to_iter_datapipe())
        ['a', 'b']
    """

    def __init__(self, datapipe, indices=None):
        if not isinstance(datapipe, MapDataPipe):
            raise TypeError(f"MapToIterConverter: expected a MapDataPipe, got "
                            f"{type(datapipe).__name__}")
        self.datapipe = datapipe
        self.indices = list(indices) if indices is not None else None
        self._start = 0

    def __iter__(self):
        start, self._start = self._start, 0
        keys = self.indices if self.indices is not None else range(len(self.datapipe))
        for k in keys[start:]:
            yield self.datapipe[k]

    def _skip(self, n: int) -> bool:
        self._start += n
        return True

    def __len__(self) -> int:
        return len(self.indices) if self.indices is not None else len(self.datapipe)


# Each converter is a method of the other base, the one its source has (as in TorchData).
IterDataPipe.register_datapipe_as_function("to_map_datapipe", IterToMapConverter)
MapDataPipe.register_datapipe_as_function("to_iter_datapipe", MapToIterConverter)
