"""Callable iter pipes (TorchData's mapping family): Mapper (``map``), Collator
(``collate``), BatchMapper (``map_batches``), ThreadPoolMapper (``threadpool_map``),
FlatMapper (``flatmap``) and ShuffledFlatMapper (``shuffled_flatmap``)."""

from __future__ import annotations

import collections
import concurrent.futures
import copy

from ..collation import default_collate
from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import (
    ShuffleSwitch,
    apply_on_cols,
    check_fn,
    check_positive,
    fn_name,
    no_op_fn,
)

__all__ = ["BatchMapper", "Collator", "FlatMapper", "Mapper", "ShuffledFlatMapper",
           "ThreadPoolMapper"]


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


def check_cols(cls_name, input_col, output_col):
    if input_col is None and output_col is not None:
        raise ValueError(f"{cls_name}: output_col must be None when input_col is None, got "
                         f"output_col={output_col!r}")
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
    _len_source = "datapipe"

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        check_fn(type(self).__name__, "fn", fn, input_col)
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


def _iterable_result(pipe, fn, out):
    try:
        return iter(out)
    except TypeError:
        raise TypeError(f"{pipe}: fn {fn_name(fn)} must return an iterable, got "
                        f"{type(out).__name__}") from None


@functional_datapipe("map_batches")
class BatchMapper(IterDataPipe):
    """Apply ``fn`` to lists of ``batch_size`` items and yield the items of its result
    (functional name: ``map_batches``).

    Args:
        datapipe (IterDataPipe): the source.
        fn (callable): takes a list of up to ``batch_size`` items (or of their
            ``input_col`` parts) and returns an iterable of output items.
        batch_size (int): items per call; the last call may get fewer.
        input_col (int, str, list or None): default ``None`` (whole items);
            otherwise ``fn`` gets ``[item[input_col] ...]`` or, for a list of
            columns, ``[[item[c] for c in input_col] ...]``.

    Example::

        >>> def fn(batch):
        ...     return [d + 1 for d in batch]
        >>> list(IterableWrapper(range(5)).map_batches(fn, batch_size=2))
        [1, 2, 3, 4, 5]
    """

    def __init__(self, datapipe, fn, batch_size: int, input_col=None) -> None:
        check_positive("BatchMapper", "batch_size", batch_size)
        check_fn("BatchMapper", "fn", fn)
        self.datapipe = datapipe
        self.fn = fn
        self.batch_size = batch_size
        self.input_col = input_col

    def _call(self, batch):
        col = self.input_col
        if col is None:
            args = batch
        elif isinstance(col, (list, tuple)):
            args = [[d[c] for c in col] for d in batch]
        else:
            args = [d[col] for d in batch]
        return _iterable_result("BatchMapper", self.fn, self.fn(args))

    def __iter__(self):
        batch = []
        for d in self.datapipe:
            batch.append(d)
            if len(batch) == self.batch_size:
                yield from self._call(batch)
                batch = []
        if batch:
            yield from self._call(batch)

    def __len__(self) -> int:
        raise TypeError("BatchMapper's length relies on the output of its function")

    def __repr__(self) -> str:
        fn = getattr(self.fn, "__name__", self.fn)
        return f"BatchMapper(fn={fn}, batch_size={self.batch_size})"


@functional_datapipe("threadpool_map")
class ThreadPoolMapper(IterDataPipe):
    """Map ``fn`` over the items in a thread pool, keeping the input order
    (functional name: ``threadpool_map``). Good for I/O-bound functions.

    Args:
        source_datapipe (IterDataPipe): the source.
        fn (callable): applied to each item (or its ``input_col`` parts).
        input_col (int, str, list or None): default ``None``; as ``map``.
        output_col (int, str or None): default ``None`` (replace ``input_col``);
            ``-1`` appends. Must be ``None`` when ``input_col`` is ``None``.
        scheduled_tasks (int): default ``128``; items submitted ahead of the
            one being yielded.
        max_workers (int or None): default ``None`` (the executor's default).
        **threadpool_kwargs: passed to ``concurrent.futures.ThreadPoolExecutor``.

    Example::

        >>> def ten_times(x):
        ...     return 10 * x
        >>> list(IterableWrapper(range(4)).threadpool_map(ten_times, max_workers=2))
        [0, 10, 20, 30]
    """

    _len_source = "datapipe"

    def __init__(self, source_datapipe, fn, input_col=None, output_col=None,
                 scheduled_tasks: int = 128, max_workers: int | None = None,
                 **threadpool_kwargs) -> None:
        check_positive("ThreadPoolMapper", "scheduled_tasks", scheduled_tasks)
        if max_workers is not None:
            check_positive("ThreadPoolMapper", "max_workers", max_workers)
        check_fn("ThreadPoolMapper", "fn", fn, input_col)
        self.datapipe = source_datapipe
        self.fn = fn
        self.input_col = input_col
        self.output_col = check_cols("ThreadPoolMapper", input_col, output_col)
        self.scheduled_tasks = scheduled_tasks
        self.max_workers = max_workers
        self.threadpool_kwargs = threadpool_kwargs

    def _apply(self, data):
        res = apply_on_cols(self.fn, data, self.input_col)
        if self.input_col is None:
            return res
        return put_result(data, res, self.input_col, self.output_col)

    def __iter__(self):
        pending = collections.deque()
        with concurrent.futures.ThreadPoolExecutor(
                max_workers=self.max_workers, **self.threadpool_kwargs) as pool:
            try:
                for d in self.datapipe:
                    pending.append(pool.submit(self._apply, d))
                    if len(pending) >= self.scheduled_tasks:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for f in pending:
                    f.cancel()

    def __repr__(self) -> str:
        return (f"ThreadPoolMapper(fn={getattr(self.fn, '__name__', self.fn)}, "
                f"max_workers={self.max_workers})")


@functional_datapipe("flatmap")
class FlatMapper(IterDataPipe):
    """Apply ``fn`` to each item and yield the items of the iterable it returns
    (functional name: ``flatmap``).

    Args:
        datapipe (IterDataPipe): the source.
        fn (callable or None): default ``None``: the items themselves (or their
            ``input_col`` column; for a list of columns, the tuple of them) are
            the iterables flattened.
        input_col (int, str, list or None): default ``None``; ``fn`` gets
            ``item[input_col]`` or ``*(item[c] for c in input_col)``.

    Example::

        >>> def twice(x):
        ...     return [x, x]
        >>> list(IterableWrapper([1, 2]).flatmap(twice))
        [1, 1, 2, 2]
        >>> list(IterableWrapper([(1, 2, 3), (4, 5, 6)]).flatmap(input_col=(0, 2)))
        [1, 3, 4, 6]
    """

    def __init__(self, datapipe, fn=None, input_col=None) -> None:
        self.datapipe = datapipe
        self.fn = no_op_fn if fn is None else fn
        check_fn("FlatMapper", "fn", self.fn, input_col)
        self.input_col = input_col

    def __iter__(self):
        for d in self.datapipe:
            yield from _iterable_result(
                "FlatMapper", self.fn, apply_on_cols(self.fn, d, self.input_col))

    def __len__(self) -> int:
        raise TypeError("FlatMapper's length relies on the output of its function")

    def __repr__(self) -> str:
        return f"FlatMapper(fn={getattr(self.fn, '__name__', self.fn)})"


@functional_datapipe("shuffled_flatmap")
class ShuffledFlatMapper(ShuffleSwitch, IterDataPipe):
    """Like ``flatmap``, but keeps up to ``buffer_size`` of the returned iterables
    open and yields the next item of a randomly chosen one
    (functional name: ``shuffled_flatmap``).

    Args:
        datapipe (IterDataPipe): the source.
        fn (callable or None): default ``None``: the items themselves are iterables.
        input_col (int, str, list or None): default ``None``; as ``flatmap``.
        buffer_size (int): default ``100``; iterables held open at once.

    Call ``set_seed(seed)`` for a reproducible order and ``set_shuffle(False)``
    to behave exactly like ``flatmap``.

    Example::

        >>> dp = IterableWrapper([[1, 2], [3, 4]]).shuffled_flatmap(buffer_size=2)
        >>> sorted(dp.set_seed(0))
        [1, 2, 3, 4]
    """

    _is_random = True
    _repr_args = ("buffer_size",)

    def __init__(self, datapipe, fn=None, input_col=None, buffer_size: int = 100) -> None:
        check_positive("ShuffledFlatMapper", "buffer_size", buffer_size)
        self.datapipe = datapipe
        self.fn = no_op_fn if fn is None else fn
        check_fn("ShuffledFlatMapper", "fn", self.fn, input_col)
        self.input_col = input_col
        self.buffer_size = buffer_size

    def _open(self, d):
        return _iterable_result("ShuffledFlatMapper", self.fn,
                                apply_on_cols(self.fn, d, self.input_col))

    def __iter__(self):
        if not self._enabled:
            for d in self.datapipe:
                yield from self._open(d)
            return
        rng = self._rng()
        buf = []

        def draw():
            i = int(rng.integers(len(buf)))
            try:
                return True, next(buf[i])
            except StopIteration:
                buf[i] = buf[-1]
                buf.pop()
                return False, None

        for d in self.datapipe:
            while len(buf) == self.buffer_size:
                ok, item = draw()
                if ok:
                    yield item
            buf.append(self._open(d))
        while buf:
            ok, item = draw()
            if ok:
                yield item

    def _skip(self, n: int) -> bool:
        return False  # n outputs are not n inputs, shuffled or not

    def __len__(self) -> int:
        if self.fn is no_op_fn and self.input_col is None:
            return sum(len(d) for d in self.datapipe)  # as TorchData: known without fn
        raise TypeError("ShuffledFlatMapper's length relies on the output of its function")
