"""Grouping map pipes: Batcher (batch)."""

from __future__ import annotations

from ..datapipe import DataChunk, MapDataPipe, functional_datapipe
from .util import check_index

__all__ = ["Batcher"]


@functional_datapipe("batch")
class Batcher(MapDataPipe):
    """Index batches of consecutive items (functional name: ``batch``).

    Args:
        datapipe (MapDataPipe): the source.
        batch_size (int): items per batch.
        drop_last (bool): leave out the last batch if it is short. Default: ``False``.
        wrapper_class (type): what a batch is built as. Default: ``DataChunk``.

    Example::

        >>> SequenceWrapper(range(5)).batch(2)[2]
        DataChunk([4])
    """

    _repr_args = ("batch_size", "drop_last")

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False,
                 wrapper_class=DataChunk):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"Batcher: batch_size={batch_size!r}; expected a positive int")
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index):
        index = check_index(self, index, len(self))
        lo = index * self.batch_size
        hi = min(lo + self.batch_size, len(self.datapipe))
        return self.wrapper_class([self.datapipe[i] for i in range(lo, hi)])

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
