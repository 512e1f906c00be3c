"""Pipes that count or number items: ``header``, ``set_length``, ``cycle``,
``repeat``, ``enumerate`` and ``add_index``."""

from __future__ import annotations

import itertools
import warnings

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import check_positive, known_len

__all__ = ["Cycler", "Enumerator", "Header", "IndexAdder", "LengthSetter", "Repeater"]


@functional_datapipe("header")
class Header(IterDataPipe):
    """Yield at most the first ``limit`` items (functional name: ``header``).

    Args:
        source_datapipe (IterDataPipe): the source.
        limit (int or None): default ``10``; ``None`` yields everything. When the
            source has no length, ``len`` is ``limit`` with a warning (TorchData's rule).

    Example::

        >>> list(IterableWrapper(range(10)).header(3))
        [0, 1, 2]
    """

    _repr_args = ("limit",)

    def __init__(self, source_datapipe, limit: int | None = 10) -> None:
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ValueError(f"Header: limit must be a non-negative int or None, got {limit!r}")
        self.source_datapipe = source_datapipe
        self.limit = limit

    def __iter__(self):
        if self.limit is None:
            yield from self.source_datapipe
        elif self.limit > 0:
            # islice would read one item past the limit from a generator-like source
            for i, x in enumerate(self.source_datapipe, 1):
                yield x
                if i >= self.limit:
                    return

    def __len__(self) -> int:
        n = known_len(self.source_datapipe)
        if n is not None:
            return n if self.limit is None else min(n, self.limit)
        if self.limit is None:
            raise TypeError("Header instance doesn't have valid length")
        warnings.warn(f"Header: the length of this Header (limit={self.limit}) is inferred to be "
                      "equal to its limit; the actual value may be smaller if the source "
                      "(which has no length) yields fewer items", UserWarning, stacklevel=2)
        return self.limit


@functional_datapipe("set_length")
class LengthSetter(IterDataPipe):
    """Declare the length of a pipe whose length is not known (functional name:
    ``set_length``). The items pass through unchanged, as in TorchData; use
    ``header`` to cut the stream.

    Args:
        source_datapipe (IterDataPipe): the source.
        length (int): what ``len()`` returns, >= 0.

    Example::

        >>> dp = IterableWrapper(x for x in range(3)).set_length(3)
        >>> len(dp), list(dp)
        (3, [0, 1, 2])
    """

    _repr_args = ("length",)

    def __init__(self, source_datapipe, length: int) -> None:
        if not isinstance(length, int) or length < 0:
            raise ValueError(f"LengthSetter: length must be a non-negative int, got {length!r}")
        self.source_datapipe = source_datapipe
        self.length = length

    def __iter__(self):
        yield from self.source_datapipe

    def __len__(self) -> int:
        return self.length


@functional_datapipe("cycle")
class Cycler(IterDataPipe):
    """Iterate the source ``count`` times, or forever (functional name: ``cycle``).

    Args:
        source_datapipe (IterDataPipe): the source, iterated afresh each time.
        count (int or None): default ``None`` (forever).

    Example::

        >>> list(IterableWrapper(range(2)).cycle(3))
        [0, 1, 0, 1, 0, 1]
    """

    _repr_args = ("count",)

    def __init__(self, source_datapipe, count: int | None = None) -> None:
        if count is not None and (not isinstance(count, int) or count < 0):
            raise ValueError(f"Cycler: count must be a non-negative int or None, got {count!r}")
        self.source_datapipe = source_datapipe
        self.count = count

    def __iter__(self):
        rounds = itertools.count() if self.count is None else range(self.count)
        for _ in rounds:
            yield from self.source_datapipe

    def __len__(self) -> int:
        if self.count is None:
            raise TypeError("Cycler with count=None has no length (it cycles forever)")
        return self.count * len(self.source_datapipe)


@functional_datapipe("repeat")
class Repeater(IterDataPipe):
    """Yield each item ``times`` times in a row (functional name: ``repeat``).

    Args:
        source_datapipe (IterDataPipe): the source.
        times (int): repetitions, > 1.

    Example::

        >>> list(IterableWrapper(range(2)).repeat(3))
        [0, 0, 0, 1, 1, 1]
    """

    _repr_args = ("times",)

    def __init__(self, source_datapipe, times: int) -> None:
        if not isinstance(times, int) or times <= 1:
            raise ValueError(f"Repeater: times must be an int > 1, got {times!r}")
        self.source_datapipe = source_datapipe
        self.times = times

    def __iter__(self):
        for x in self.source_datapipe:
            for _ in range(self.times):
                yield x

    def __len__(self) -> int:
        return self.times * len(self.source_datapipe)


@functional_datapipe("enumerate")
class Enumerator(IterDataPipe):
    """Yield ``(index, item)`` pairs (functional name: ``enumerate``).

    Args:
        source_datapipe (IterDataPipe): the source.
        starting_index (int): default ``0``.

    Example::

        >>> list(IterableWrapper("ab").enumerate(1))
        [(1, 'a'), (2, 'b')]
    """

    _len_source = "source_datapipe"
    _repr_args = ("starting_index",)

    def __init__(self, source_datapipe, starting_index: int = 0) -> None:
        self.source_datapipe = source_datapipe
        self.starting_index = starting_index

    def __iter__(self):
        yield from enumerate(self.source_datapipe, self.starting_index)


@functional_datapipe("add_index")
class IndexAdder(IterDataPipe):
    """Add the item's position under ``index_name`` to each dict item
    (functional name: ``add_index``).

    Args:
        source_datapipe (IterDataPipe): yields dicts (updated in place, as TorchData does).
        index_name (str): default ``"index"``.

    Example::

        >>> list(IterableWrapper([{"a": 1}, {"a": 2}]).add_index("i"))
        [{'a': 1, 'i': 0}, {'a': 2, 'i': 1}]
    """

    _len_source = "source_datapipe"
    _repr_args = ("index_name",)

    def __init__(self, source_datapipe, index_name: str = "index") -> None:
        check_positive("IndexAdder", "len(index_name)", len(index_name) if index_name else 0)
        self.source_datapipe = source_datapipe
        self.index_name = index_name

    def __iter__(self):
        for i, d in enumerate(self.source_datapipe):
            if not isinstance(d, dict):
                raise TypeError(f"IndexAdder: item {i} is a {type(d).__name__}, expected a dict")
            d[self.index_name] = i
            yield d
