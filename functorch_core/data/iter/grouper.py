"""Grouping by key and rows-to-columns: ``groupby`` and ``rows2columnar``."""

from __future__ import annotations

from ..datapipe import DataChunk, IterDataPipe, functional_datapipe

__all__ = ["Grouper", "Rows2Columnar"]


@functional_datapipe("groupby")
class Grouper(IterDataPipe):
    """Group items by ``group_key_fn`` and yield each group as a list
    (functional name: ``groupby``).

    A group is yielded when it reaches ``group_size``; when ``buffer_size`` items
    are held, the largest group is yielded (or dropped/refused, see below); at the
    end the remaining groups are yielded in the order their keys first appeared.

    Args:
        datapipe (IterDataPipe): the source.
        group_key_fn (callable): an item's key.
        keep_key (bool): default ``False``; yield ``(key, group)``.
        buffer_size (int): default ``10000``; the most items held.
        group_size (int or None): default ``None``; yield a group at this size.
        guaranteed_group_size (int or None): default ``None`` (``group_size``); when
            the buffer is full, a largest group smaller than this raises
            ``RuntimeError`` unless ``drop_remaining``.
        drop_remaining (bool): default ``False``; drop such a group instead.

    Example::

        >>> def parity(x):
        ...     return x % 2
        >>> list(IterableWrapper(range(7)).groupby(parity, group_size=2))
        [[0, 2], [1, 3], [4, 6], [5]]
    """

    def __init__(self, datapipe, group_key_fn, *, keep_key: bool = False,
                 buffer_size: int = 10000, group_size: int | None = None,
                 guaranteed_group_size: int | None = None, drop_remaining: bool = False) -> None:
        self.guaranteed_group_size = None
        if group_size is not None:
            if not 0 < group_size <= buffer_size:
                raise ValueError(f"Grouper: need 0 < group_size <= buffer_size, got "
                                 f"group_size={group_size}, buffer_size={buffer_size}")
            self.guaranteed_group_size = group_size
        if guaranteed_group_size is not None:
            if group_size is None or not 0 < guaranteed_group_size <= group_size:
                raise ValueError("Grouper: guaranteed_group_size needs group_size and "
                                 "0 < guaranteed_group_size <= group_size, got "
                                 f"{guaranteed_group_size} and group_size={group_size}")
            self.guaranteed_group_size = guaranteed_group_size
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.buffer_size = buffer_size
        self.group_size = group_size
        self.drop_remaining = drop_remaining

    def _out(self, key, group):
        group = DataChunk(group)
        return (key, group) if self.keep_key else group

    def __iter__(self):
        groups: dict = {}
        held = 0
        for x in self.datapipe:
            key = self.group_key_fn(x)
            group = groups.setdefault(key, [])
            group.append(x)
            held += 1
            if self.group_size is not None and len(group) == self.group_size:
                del groups[key]
                held -= len(group)
                yield self._out(key, group)
            if held == self.buffer_size:
                big = max(groups, key=lambda k: len(groups[k]))
                group = groups.pop(big)
                held -= len(group)
                small = (self.guaranteed_group_size is not None
                         and len(group) < self.guaranteed_group_size)
                if small and not self.drop_remaining:
                    raise RuntimeError(
                        f"Grouper: the buffer is full ({self.buffer_size} items) and its "
                        f"largest group (key {big!r}) has {len(group)} items, fewer than "
                        f"guaranteed_group_size={self.guaranteed_group_size}")
                if not small:
                    yield self._out(big, group)
        for key, group in groups.items():
            yield self._out(key, group)

    def __repr__(self) -> str:
        return (f"Grouper(group_size={self.group_size}, buffer_size={self.buffer_size}, "
                f"keep_key={self.keep_key})")


@functional_datapipe("rows2columnar")
class Rows2Columnar(IterDataPipe):
    """Turn each batch of rows (dicts or lists) into a dict of columns
    (functional name: ``rows2columnar``).

    Args:
        source_datapipe (IterDataPipe): yields lists of rows.
        column_names (list or None): default ``None``: dict rows keep their keys
            (list rows need names); with names, dict rows keep only those columns
            and list rows are named by position.

    Example::

        >>> batch = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
        >>> list(IterableWrapper([batch]).rows2columnar())
        [{'a': [1, 3], 'b': [2, 4]}]
    """

    def __init__(self, source_datapipe, column_names=None) -> None:
        self.source_datapipe = source_datapipe
        self.column_names = [] if column_names is None else list(column_names)

    def __iter__(self):
        names = self.column_names
        for b, batch in enumerate(self.source_datapipe):
            cols: dict = {}
            for row in batch:
                if isinstance(row, dict):
                    pairs = ((n, row[n]) for n in names) if names else row.items()
                else:
                    if len(row) > len(names):
                        raise ValueError(
                            f"Rows2Columnar: a row of batch {b} has {len(row)} values but "
                            f"column_names has {len(names)} names")
                    pairs = zip(names[:len(row)], row, strict=True)
                for k, v in pairs:
                    cols.setdefault(k, []).append(v)
            yield cols

    def __len__(self) -> int:
        return len(self.source_datapipe)

    def __repr__(self) -> str:
        return f"Rows2Columnar(column_names={self.column_names or None})"
