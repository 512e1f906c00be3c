"""Map pipes that join or split: ``concat``, ``zip``, ``unzip`` and
``in_memory_cache`` (TorchData's map ``combining`` and ``util/cacheholder``)."""

from __future__ import annotations

from ..datapipe import MapDataPipe, functional_datapipe
from .util import check_index

__all__ = ["Concater", "InMemoryCacheHolder", "UnZipper", "Zipper"]


def _check_map_pipes(pipe: str, datapipes) -> tuple:
    if not datapipes:
        raise ValueError(f"{pipe}: expected at least one MapDataPipe")
    for i, dp in enumerate(datapipes):
        if not isinstance(dp, MapDataPipe):
            raise TypeError(f"{pipe}: argument {i} must be a MapDataPipe, got "
                            f"{type(dp).__name__}")
    return tuple(datapipes)


@functional_datapipe("concat")
class Concater(MapDataPipe):
    """Index the pipes one after another (functional name: ``concat``).

    Args:
        *datapipes (MapDataPipe): the pipes, in order.

    Example::

        >>> dp = SequenceWrapper(range(2)).concat(SequenceWrapper(range(10, 13)))
        >>> dp[3], len(dp)
        (11, 5)
    """

    def __init__(self, *datapipes) -> None:
        self.datapipes = _check_map_pipes("Concater", datapipes)

    def __getitem__(self, index):
        index = check_index(self, index, len(self))
        for dp in self.datapipes:
            if index < len(dp):
                return dp[index]
            index -= len(dp)
        raise AssertionError("unreachable: index checked against the total length")

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)

    def __repr__(self) -> str:
        return f"Concater({len(self.datapipes)} datapipes)"


@functional_datapipe("zip")
class Zipper(MapDataPipe):
    """``dp[i]`` is the tuple of every pipe's ``[i]``; the length is the shortest's
    (functional name: ``zip``).

    Args:
        *datapipes (MapDataPipe): the pipes.

    Example::

        >>> SequenceWrapper(range(3)).zip(SequenceWrapper("ab"))[1]
        (1, 'b')
    """

    def __init__(self, *datapipes) -> None:
        self.datapipes = _check_map_pipes("Zipper", datapipes)

    def __getitem__(self, index):
        index = check_index(self, index, len(self))
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)

    def __repr__(self) -> str:
        return f"Zipper({len(self.datapipes)} datapipes)"


class _Column(MapDataPipe):
    _len_source = "main_datapipe"

    def __init__(self, main_datapipe, column: int) -> None:
        self.main_datapipe = main_datapipe
        self.column = column

    def __getitem__(self, index):
        return self.main_datapipe[index][self.column]

    def __repr__(self) -> str:
        return f"UnZipper[{self.column}]"


@functional_datapipe("unzip")
class UnZipper(MapDataPipe):
    """Split a pipe of sequences into one pipe per position
    (functional name: ``unzip``). Returns a list of pipes.

    Args:
        source_datapipe (MapDataPipe): items are sequences of ``sequence_length``.
        sequence_length (int): the length of each item.
        columns_to_skip (list or None): default ``None``; positions with no pipe.

    Example::

        >>> a, b = SequenceWrapper([(0, "a"), (1, "b")]).unzip(sequence_length=2)
        >>> a[1], b[1]
        (1, 'b')
    """

    def __new__(cls, source_datapipe, sequence_length: int, columns_to_skip=None):
        if not isinstance(sequence_length, int) or sequence_length <= 0:
            raise ValueError(f"UnZipper: sequence_length must be a positive int, got "
                             f"{sequence_length!r}")
        skip = set(columns_to_skip or ())
        columns = [i for i in range(sequence_length) if i not in skip]
        if not columns:
            raise ValueError("UnZipper: columns_to_skip leaves no column of "
                             f"sequence_length={sequence_length}")
        return [_Column(source_datapipe, c) for c in columns]


@functional_datapipe("in_memory_cache")
class InMemoryCacheHolder(MapDataPipe):
    """Keep each item after its first access (functional name: ``in_memory_cache``).

    Args:
        source_dp (MapDataPipe): the source (e.g. one that decodes files).

    Example::

        >>> dp = SequenceWrapper([1, 2]).map(str).in_memory_cache()
        >>> dp[0], dp[0]
        ('1', '1')
    """

    _len_source = "source_dp"

    def __init__(self, source_dp) -> None:
        self.source_dp = source_dp
        self._cache: dict = {}

    def __getitem__(self, index):
        try:
            return self._cache[index]
        except KeyError:
            pass
        except TypeError:  # an unhashable key is not cached
            return self.source_dp[index]
        value = self._cache[index] = self.source_dp[index]
        return value

    def __getstate__(self):
        state = dict(vars(self))
        state["_cache"] = {}  # each worker fills its own cache
        return state
