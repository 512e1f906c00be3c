"""Grouping iter pipes: Batcher (``batch``), UnBatcher (``unbatch``) and Grouper
(``groupby``)."""

from __future__ import annotations

from ..datapipe import DataChunk, IterDataPipe, functional_datapipe

__all__ = ["Batcher", "Grouper", "UnBatcher"]


@functional_datapipe("batch")
class Batcher(IterDataPipe):
    """Group consecutive items into batches (functional name: ``batch``).

    Args:
        datapipe (IterDataPipe): the source.
        batch_size (int): items per batch.
        drop_last (bool): drop the last batch if it is short. Default: ``False``.
        wrapper_class (type): what a batch is built as. Default: ``DataChunk``
            (a ``list`` subclass).

    Example::

        >>> list(IterableWrapper(range(5)).batch(2))
        [DataChunk([0, 1]), DataChunk([2, 3]), DataChunk([4])]
    """

    _repr_args = ("batch_size", "drop_last")

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False,
                 wrapper_class=DataChunk):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"{type(self).__name__}: batch_size={batch_size!r}; expected a "
                             "positive int")
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self):
        batch, size, wrap = [], self.batch_size, self.wrapper_class
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == size:
                yield wrap(batch)
                batch = []
        if batch and not self.drop_last:
            yield wrap(batch)

    def _skip(self, n: int) -> bool:
        return self.datapipe._skip(n * self.batch_size)

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcher(IterDataPipe):
    """Undo batching: yield the items of each batch (functional name: ``unbatch``).

    Args:
        datapipe (IterDataPipe): a pipe of batches (lists).
        unbatch_level (int): how many levels of nesting to open; ``-1`` opens
            every level, ``0`` passes items through. Default: ``1``.

    Example::

        >>> list(IterableWrapper([[[0, 1], [2]], [[3]]]).unbatch(unbatch_level=2))
        [0, 1, 2, 3]
    """

    _repr_args = ("unbatch_level",)

    def __init__(self, datapipe, unbatch_level: int = 1):
        if unbatch_level < -1:
            raise ValueError(f"UnBatcher: unbatch_level={unbatch_level}; expected -1 or >= 0")
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def _open(self, element, level):
        # an explicit stack of iterators: no recursion however deep the nesting
        stack = [(iter([element]), level)]
        while stack:
            it, lvl = stack[-1]
            item = next(it, stack)
            if item is stack:
                stack.pop()
                continue
            if lvl == 0 or (lvl == -1 and not isinstance(item, list)):
                yield item
            elif isinstance(item, list):
                stack.append((iter(item), lvl - 1 if lvl > 0 else -1))
            else:
                raise IndexError(f"UnBatcher: unbatch_level {self.unbatch_level} exceeds the "
                                 f"depth of the DataPipe (at {item!r})")

    def __iter__(self):
        level = self.unbatch_level
        for element in self.datapipe:
            if level == 1 and isinstance(element, list):
                yield from element
            else:
                yield from self._open(element, level)


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

    _repr_args = ("group_size", "buffer_size", "keep_key")

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
