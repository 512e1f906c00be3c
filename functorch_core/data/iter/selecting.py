"""Selecting iter pipes: Filter (``filter``) and the column pipes Flattener (``flatten``),
Dropper (``drop``) and Slicer (``slice``)."""

from __future__ import annotations

import warnings

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import apply_on_cols, check_fn

__all__ = ["Dropper", "Filter", "Flattener", "Slicer"]


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
        check_fn("Filter", "filter_fn", filter_fn, input_col)
        self.datapipe = datapipe
        self.filter_fn = filter_fn
        self.input_col = input_col

    def _keep(self, data) -> bool:
        return _as_bool(apply_on_cols(self.filter_fn, data, self.input_col), data)

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


def _as_index_set(indices):
    if indices is None:
        return set()
    return set(indices) if isinstance(indices, list) else {indices}


def _warn_missing(item, indices):
    try:
        for i in indices:
            item[i]
    except (IndexError, KeyError):
        warnings.warn("At least one index is not present in the item; expected columns/keys "
                      "may be missing", stacklevel=3)


class _ColumnPipe(IterDataPipe):
    """One output per input: ``len`` follows the source."""

    _len_source = "datapipe"


@functional_datapipe("flatten")
class Flattener(_ColumnPipe):
    """Flatten, one level, the nested lists/tuples (or dicts) at ``indices`` of each item
    (functional name: ``flatten``).

    Args:
        datapipe (IterDataPipe): items are lists, tuples or dicts.
        indices (int, key, list or None): default ``None``: flatten every nested
            element; otherwise only those at these positions (keys for dicts; a
            nested dict's pairs are merged into the outer dict).

    Example::

        >>> list(IterableWrapper([(0, (1, 2)), (3, (4, 5))]).flatten())
        [(0, 1, 2), (3, 4, 5)]
    """

    def __init__(self, datapipe, indices=None) -> None:
        self.datapipe = datapipe
        self.indices = _as_index_set(indices)

    def _flatten(self, item):
        pick = self.indices
        if isinstance(item, dict):
            out = {}
            for k, v in item.items():
                if (not pick or k in pick) and isinstance(v, dict):
                    for k2, v2 in v.items():
                        if k2 in item or k2 in out:
                            warnings.warn(f"Flattener: key {k2!r} already present; the "
                                          "nested pair was dropped", stacklevel=3)
                        else:
                            out[k2] = v2
                elif k in out:
                    warnings.warn(f"Flattener: key {k!r} already present; the second pair "
                                  "was dropped", stacklevel=3)
                else:
                    out[k] = v
            return out
        out = []
        for i, v in enumerate(item):
            if (not pick or i in pick) and isinstance(v, (list, tuple)):
                out.extend(v)
            else:
                out.append(v)
        return tuple(out) if isinstance(item, tuple) else out

    def __iter__(self):
        for item in self.datapipe:
            out = self._flatten(item)
            if self.indices:
                _warn_missing(item, self.indices)
            yield out

    def __repr__(self) -> str:
        return f"Flattener(indices={sorted(self.indices, key=repr) or None})"


@functional_datapipe("drop")
class Dropper(_ColumnPipe):
    """Drop columns (positions of tuples/lists, keys of dicts) from each item
    (functional name: ``drop``).

    Args:
        datapipe (IterDataPipe): items are tuples, lists or dicts.
        indices (int, key or list): the column(s) to drop.

    Example::

        >>> list(IterableWrapper([(0, 10), (1, 11)]).drop(1))
        [(0,), (1,)]
    """

    def __init__(self, datapipe, indices) -> None:
        self.datapipe = datapipe
        self.indices = _as_index_set(indices)

    def __iter__(self):
        drop = self.indices
        for item in self.datapipe:
            if isinstance(item, tuple):
                out = tuple(x for i, x in enumerate(item) if i not in drop)
            elif isinstance(item, list):
                out = [x for i, x in enumerate(item) if i not in drop]
            elif isinstance(item, dict):
                out = {k: v for k, v in item.items() if k not in drop}
            else:
                warnings.warn(f"Dropper: item of type {type(item).__name__} has no columns; "
                              "yielded unchanged", stacklevel=2)
                out = item
            _warn_missing(item, drop)
            yield out

    def __repr__(self) -> str:
        return f"Dropper(indices={sorted(self.indices, key=repr)})"


@functional_datapipe("slice")
class Slicer(_ColumnPipe):
    """Keep a slice ``[index:stop:step]`` of each tuple/list item, or the columns in a
    list ``index`` (keys for dicts) (functional name: ``slice``).

    Args:
        datapipe (IterDataPipe): items are tuples, lists or dicts.
        index (int or list): the slice start, or a list of columns to keep.
        stop (int or None): default ``None``; the slice stop (ignored for a list).
        step (int or None): default ``None``; the slice step (ignored for a list).

    Example::

        >>> list(IterableWrapper([(0, 10, 100), (1, 11, 111)]).slice(1))
        [(10, 100), (11, 111)]
    """

    _repr_args = ("index", "stop", "step")

    def __init__(self, datapipe, index, stop=None, step=None) -> None:
        if isinstance(index, list) and (stop or step):
            warnings.warn("Slicer: a list of indices ignores stop and step", stacklevel=3)
        self.datapipe = datapipe
        self.index = index
        self.stop = stop
        self.step = step

    def _slice(self, item):
        idx = self.index
        if isinstance(item, (tuple, list)):
            if isinstance(idx, list):
                out = [x for i, x in enumerate(item) if i in idx]
                return tuple(out) if isinstance(item, tuple) else out
            return item[idx:self.stop:self.step]
        if isinstance(item, dict):
            if isinstance(idx, list):
                return {k: v for k, v in item.items() if k in idx}
            if idx in item:
                return {idx: item[idx]}
            warnings.warn("Slicer: dicts are sliced by key only; item yielded unchanged",
                          stacklevel=3)
            return item
        warnings.warn(f"Slicer: item of type {type(item).__name__} has no columns; "
                      "yielded unchanged", stacklevel=3)
        return item

    def __iter__(self):
        for item in self.datapipe:
            out = self._slice(item)
            if isinstance(self.index, list):
                _warn_missing(item, self.index)
            yield out
