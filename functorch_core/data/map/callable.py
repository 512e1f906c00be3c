"""Callable map pipes: Mapper (map)."""

from __future__ import annotations

from ..datapipe import MapDataPipe, functional_datapipe
from ..iter.callable import check_fn, no_op_fn

__all__ = ["Mapper"]


@functional_datapipe("map")
class Mapper(MapDataPipe):
    """Apply a function to each item on access (functional name: ``map``).

    Args:
        datapipe (MapDataPipe): the source.
        fn (callable): the function. Default: the identity (as TorchData's).

    Example::

        >>> SequenceWrapper([1, 2]).map(str)[1]
        '2'
        >>> SequenceWrapper([1, 2]).map()[0]
        1
    """

    _repr_args = ("fn",)
    _len_source = "datapipe"

    def __init__(self, datapipe, fn=no_op_fn):
        check_fn("Mapper", "fn", fn)
        self.datapipe = datapipe
        self.fn = fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])
