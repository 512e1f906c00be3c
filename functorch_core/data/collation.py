"""Collation to NumPy: a batch of samples becomes one sample of stacked arrays.

``collate`` is torch's ``collate(batch, *, collate_fn_map)``: the recursion over
dicts, sequences and namedtuples, with leaf handlers looked up by type;
``default_collate`` is ``collate`` with no extra handlers. (The module is not
named ``collate`` so that ``functorch_core.data.collate`` is the function.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Number

import numpy as np

from functorch_core.ir.dtypes import dtype_kind

__all__ = ["collate", "default_collate"]


def _stack(batch: Sequence, where: str, call: str):
    shapes = {np.shape(x) for x in batch}
    if len(shapes) > 1:
        raise ValueError(f"{call}: the arrays at {where} have different shapes "
                         f"{sorted(shapes)}; a batch stacks arrays of one shape")
    return np.stack([np.asarray(x) for x in batch])


def _handler(elem, fns: dict | None):
    if not fns:
        return None
    if type(elem) in fns:
        return fns[type(elem)]
    for kind, fn in fns.items():
        if isinstance(elem, kind):
            return fn
    return None


def _collate(batch: Sequence, where: str, fns: dict | None, call: str):
    elem = batch[0]
    fn = _handler(elem, fns)
    if fn is not None:
        return fn(batch, collate_fn_map=fns)
    if isinstance(elem, (np.ndarray, np.generic)):
        return _stack(batch, where, call)
    if isinstance(elem, (str, bytes)) or elem is None:
        return list(batch)
    if isinstance(elem, (bool, Number)):
        try:
            out = np.asarray(batch)
        except ValueError:
            out = None
        if out is None or dtype_kind(out.dtype) not in "biufc" or out.ndim != 1:
            raise TypeError(f"{call}: {where} mixes numbers with "
                            f"{sorted({type(x).__name__ for x in batch})}")
        return out
    if isinstance(elem, Mapping):
        keys = list(elem)
        for x in batch:
            if not isinstance(x, Mapping) or set(x) != set(keys):
                raise ValueError(f"{call}: the dicts at {where} have different keys "
                                 f"({sorted(map(str, keys))} vs "
                                 f"{sorted(map(str, x)) if isinstance(x, Mapping) else x!r})")
        out = {k: _collate([x[k] for x in batch], f"{where}[{k!r}]", fns, call) for k in keys}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, (tuple, list)):
        sizes = {len(x) for x in batch}
        if len(sizes) > 1:
            raise ValueError(f"{call}: the sequences at {where} have different "
                             f"lengths {sorted(sizes)}; each element in a batch must have "
                             "the same size")
        cols = [_collate(list(col), f"{where}[{i}]", fns, call)
                for i, col in enumerate(zip(*batch, strict=True))]
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*cols)
        return tuple(cols) if isinstance(elem, tuple) else cols
    raise TypeError(f"{call}: {where} holds a {type(elem).__name__}; expected numbers, NumPy "
                    "arrays, strings, or dicts/lists/tuples/namedtuples of them"
                    + ("" if fns is None else ", or a type in collate_fn_map"))


def _check_batch(batch, call: str) -> None:
    if not isinstance(batch, Sequence) or isinstance(batch, (str, bytes)):
        raise TypeError(f"{call}(batch): expected a list of samples, got "
                        f"{type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError(f"{call}(batch): the batch is empty")


def collate(batch, *, collate_fn_map: dict | None = None):
    """Merge a batch of samples into one, torch's ``collate`` with NumPy leaves.

    The samples are walked as pytrees (dicts key by key, lists, tuples and
    namedtuples position by position). At each level the first sample's type is
    looked up in ``collate_fn_map`` (its exact type, then ``isinstance`` in the
    dict's order); a handler found there collates that level. Otherwise the
    ``default_collate`` rules apply, so ``collate(batch)`` is
    ``default_collate(batch)`` (torch's bare ``collate`` has no leaf rules and
    raises on numbers instead).

    Args:
        batch (sequence): the samples of one batch (not empty).
        collate_fn_map (dict or None): default ``None``; ``{type or tuple of
            types: fn}``, each ``fn(batch, *, collate_fn_map)`` collating a list
            of samples of that type.

    Returns:
        the collated batch.

    Example::

        >>> collate([(1, "a"), (2, "b")])
        (array([1, 2]), ['a', 'b'])
        >>> def join(batch, *, collate_fn_map=None):
        ...     return "".join(batch)
        >>> collate([{"s": "a", "n": 1}, {"s": "b", "n": 2}], collate_fn_map={str: join})
        {'s': 'ab', 'n': array([1, 2])}
    """
    if collate_fn_map is not None and not isinstance(collate_fn_map, dict):
        raise TypeError(f"collate(collate_fn_map=...): expected a dict of type -> function, "
                        f"got {type(collate_fn_map).__name__}")
    if isinstance(batch, np.ndarray):
        return batch
    _check_batch(batch, "collate")
    return _collate(batch, "batch", collate_fn_map, "collate")


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
    _check_batch(batch, "default_collate")
    return _collate(batch, "batch", None, "default_collate")
