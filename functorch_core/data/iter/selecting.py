"""Selecting iter pipes: Filter (filter)."""

from __future__ import annotations

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe
from .callable import check_arity

__all__ = ["Filter"]


def _as_bool(res, data) -> bool:
    if isinstance(res, (bool, np.bool_)):
        return bool(res)
    raise ValueError(f"Filter: filter_fn must return a bool, got {type(res).__name__} "
                     f"for the item {data!r}")


@functional_datapipe("filter")
class Filter(IterDataPipe):
    """Keep the items for which ``filter_fn`` returns ``True`` (functional name: ``filter``).

    Args:
        datapipe (IterDataPipe): the source.
        filter_fn (callable): returns a ``bool`` for an item (or its columns).
        input_col: ``None`` (default) passes the whole item; a key or index
            passes ``item[input_col]``; a list of them passes those columns.

    Example::

        >>> list(IterableWrapper(range(6)).filter(lambda x: x % 2 == 0))
        [0, 2, 4]
    """

    _repr_args = ("filter_fn", "input_col")

    def __init__(self, datapipe, filter_fn, input_col=None):
        if not callable(filter_fn):
            raise TypeError(f"Filter: filter_fn={filter_fn!r} is not callable")
        check_arity("Filter", filter_fn, input_col)
        self.datapipe = datapipe
        self.filter_fn = filter_fn
        self.input_col = input_col

    def _keep(self, data) -> bool:
        col = self.input_col
        if col is None:
            res = self.filter_fn(data)
        elif isinstance(col, (list, tuple)):
            res = self.filter_fn(*(data[c] for c in col))
        else:
            res = self.filter_fn(data[col])
        return _as_bool(res, data)

    def __iter__(self):
        if self.input_col is None:
            fn = self.filter_fn
            for data in self.datapipe:
                res = fn(data)
                if res is True:
                    yield data
                elif res is not False and _as_bool(res, data):
                    yield data
        else:
            for data in self.datapipe:
                if self._keep(data):
                    yield data
