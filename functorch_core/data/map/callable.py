"""Callable map pipes: Mapper (map)."""

from __future__ import annotations

from ..datapipe import MapDataPipe, functional_datapipe

__all__ = ["Mapper"]


@functional_datapipe("map")
class Mapper(MapDataPipe):
    """Apply a function to each item on access (functional name: ``map``).

    Args:
        datapipe (MapDataPipe): the source.
        fn (callable): the function.

    Example::

        >>> SequenceWrapper([1, 2]).map(str)[1]
        '2'
    """

    _repr_args = ("fn",)
    _len_source = "datapipe"

    def __init__(self, datapipe, fn):
        if not callable(fn):
            raise TypeError(f"Mapper: fn={fn!r} is not callable")
        self.datapipe = datapipe
        self.fn = fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])
