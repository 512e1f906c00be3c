"""Callable iter pipes: Mapper (map) and Collator (collate)."""

from __future__ import annotations

import copy
import inspect

from .._collate import default_collate
from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["Collator", "Mapper"]


def _fn_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def apply_fn_cols(pipe, fn, data, input_col, output_col):
    """Apply ``fn`` as torch's ``Mapper`` does: whole sample, or chosen columns."""
    if input_col is None:
        return fn(data)
    is_tuple = isinstance(data, tuple)
    if not (is_tuple or isinstance(data, (list, dict))):
        raise TypeError(f"{type(pipe).__name__}: input_col={input_col!r} needs a list, tuple "
                        f"or dict sample, got {type(data).__name__}")
    try:
        if isinstance(input_col, (list, tuple)):
            res = fn(*(data[c] for c in input_col))
        else:
            res = fn(data[input_col])
    except (KeyError, IndexError) as e:
        raise type(e)(f"{type(pipe).__name__}: input_col={input_col!r} is not in the sample "
                      f"{data!r}") from None
    return put_result(data, res, input_col, output_col)


def put_result(data, res, input_col, output_col):
    """Mapper's ``input_col``/``output_col`` placement of ``res``, on a shallow copy."""
    is_tuple = isinstance(data, tuple)
    data = list(data) if is_tuple else copy.copy(data)
    if output_col is None:
        if isinstance(input_col, (list, tuple)):
            data[input_col[0]] = res
            for c in sorted(input_col[1:], reverse=True):
                del data[c]
        else:
            data[input_col] = res
    elif output_col == -1 and isinstance(data, list):
        data.append(res)
    else:
        data[output_col] = res
    return tuple(data) if is_tuple else data


def check_arity(cls_name, fn, input_col) -> None:
    """Raise if ``fn`` cannot take one argument per column of ``input_col``."""
    if not isinstance(input_col, (list, tuple)):
        return
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = {p.kind for p in params}
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(positional) < len(input_col):
        raise ValueError(f"{cls_name}: {_fn_name(fn)} takes {len(positional)} positional "
                         f"parameters, but {len(input_col)} are required by "
                         f"input_col={input_col!r}")


def check_cols(cls_name, input_col, output_col):
    if input_col is None and output_col is not None:
        raise ValueError(f"{cls_name}: output_col={output_col!r} must be None when input_col "
                         "is None")
    if isinstance(output_col, (list, tuple)):
        if len(output_col) > 1:
            raise ValueError(f"{cls_name}: output_col={output_col!r} must be a single column")
        output_col = output_col[0]
    return output_col


@functional_datapipe("map")
class Mapper(IterDataPipe):
    """Apply a function to each item (functional name: ``map``).

    Args:
        datapipe (IterDataPipe): the source.
        fn (callable): the function; a module-level function or callable
            object if the pipe goes to spawned workers (lambdas do not pickle).
        input_col: ``None`` (default) applies ``fn`` to the whole item; a key or
            index applies it to ``item[input_col]``; a list of them passes those
            columns as arguments.
        output_col: where the result goes: ``None`` (default) replaces the
            (first) input column and drops the others, ``-1`` appends to a
            list/tuple item, a key or index writes there.

    Example::

        >>> list(IterableWrapper([(1, 2), (3, 4)]).map(str, input_col=1, output_col=-1))
        [(1, 2, '2'), (3, 4, '4')]
    """

    _repr_args = ("fn", "input_col", "output_col")

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}: fn={fn!r} is not callable")
        check_arity(type(self).__name__, fn, input_col)
        self.datapipe = datapipe
        self.fn = fn
        self.input_col = input_col
        self.output_col = check_cols(type(self).__name__, input_col, output_col)

    def __iter__(self):
        fn, icol, ocol = self.fn, self.input_col, self.output_col
        if icol is None:
            for data in self.datapipe:
                yield fn(data)
        else:
            for data in self.datapipe:
                yield apply_fn_cols(self, fn, data, icol, ocol)

    def _skip(self, n: int) -> bool:
        return self.datapipe._skip(n)

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("collate")
class Collator(Mapper):
    """Collate each batch into stacked NumPy arrays (functional name: ``collate``).

    Args:
        datapipe (IterDataPipe): a pipe of batches (e.g. after ``batch``).
        conversion (callable): the collate function. Default: ``default_collate``
            (a batch of pytrees -> a pytree of NumPy arrays).
        collate_fn (callable, optional): if given, used instead of ``conversion``.

    Example::

        >>> next(iter(IterableWrapper([(0, 1.0), (1, 2.0)]).batch(2).collate()))
        (array([0, 1]), array([1., 2.]))
    """

    _repr_args = ("fn",)

    def __init__(self, datapipe, conversion=default_collate, collate_fn=None):
        fn = collate_fn if collate_fn is not None else conversion
        if not callable(fn):
            raise TypeError(f"Collator: conversion={fn!r} is not callable (a dict of "
                            "column-wise conversions is not supported)")
        super().__init__(datapipe, fn)
