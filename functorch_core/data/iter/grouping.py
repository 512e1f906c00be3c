"""Grouping iter pipes: Batcher (batch) and UnBatcher (unbatch)."""

from __future__ import annotations

from ..datapipe import DataChunk, IterDataPipe, functional_datapipe

__all__ = ["Batcher", "UnBatcher"]


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
