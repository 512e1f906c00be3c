"""Collation to NumPy: a batch of samples becomes one sample of stacked arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Number

import numpy as np

__all__ = ["default_collate"]


def _stack(batch: Sequence, where: str):
    shapes = {np.shape(x) for x in batch}
    if len(shapes) > 1:
        raise ValueError(f"default_collate: the arrays at {where} have different shapes "
                         f"{sorted(shapes)}; a batch stacks arrays of one shape")
    return np.stack([np.asarray(x) for x in batch])


def _collate(batch: Sequence, where: str):
    elem = batch[0]
    if isinstance(elem, (np.ndarray, np.generic)):
        return _stack(batch, where)
    if isinstance(elem, (str, bytes)) or elem is None:
        return list(batch)
    if isinstance(elem, (bool, Number)):
        try:
            out = np.asarray(batch)
        except ValueError:
            out = None
        if out is None or out.dtype.kind not in "biufc" or out.ndim != 1:
            raise TypeError(f"default_collate: {where} mixes numbers with "
                            f"{sorted({type(x).__name__ for x in batch})}")
        return out
    if isinstance(elem, Mapping):
        keys = list(elem)
        for x in batch:
            if not isinstance(x, Mapping) or set(x) != set(keys):
                raise ValueError(f"default_collate: the dicts at {where} have different keys "
                                 f"({sorted(map(str, keys))} vs "
                                 f"{sorted(map(str, x)) if isinstance(x, Mapping) else x!r})")
        out = {k: _collate([x[k] for x in batch], f"{where}[{k!r}]") for k in keys}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, (tuple, list)):
        sizes = {len(x) for x in batch}
        if len(sizes) > 1:
            raise ValueError(f"default_collate: the sequences at {where} have different "
                             f"lengths {sorted(sizes)}; each element in a batch must have "
                             "the same size")
        cols = [_collate(list(col), f"{where}[{i}]")
                for i, col in enumerate(zip(*batch, strict=True))]
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*cols)
        return tuple(cols) if isinstance(elem, tuple) else cols
    raise TypeError(f"default_collate: {where} holds a {type(elem).__name__}; expected "
                    "numbers, NumPy arrays, strings, or dicts/lists/tuples/namedtuples of them")


def default_collate(batch):
    """Merge a batch of samples into one pytree of stacked NumPy arrays.

    Samples are pytrees of numbers and arrays: dicts, lists, tuples and
    namedtuples are merged key by key and position by position; numbers
    become one array (``int`` -> ``int64``, ``float`` -> ``float64``,
    ``bool`` -> ``bool``, NumPy scalars keep their dtype); arrays of one shape
    are stacked on a new leading axis; strings and bytes stay a list. Unlike
    torch, tuples stay tuples (ready to feed a ``jit``-compiled step).

    Args:
        batch (sequence): the samples of one batch (not empty).

    Returns:
        the collated batch.

    Example::

        >>> out = default_collate([{"x": np.zeros(2), "y": 1}, {"x": np.ones(2), "y": 0}])
        >>> out["x"].shape, out["y"]
        ((2, 2), array([1, 0]))
    """
    if isinstance(batch, np.ndarray):
        return batch
    if not isinstance(batch, Sequence) or isinstance(batch, (str, bytes)):
        raise TypeError(f"default_collate(batch): expected a list of samples, got "
                        f"{type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError("default_collate(batch): the batch is empty")
    return _collate(batch, "batch")
