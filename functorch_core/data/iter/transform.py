"""Callable pipes beyond map/filter: ``map_batches``, ``threadpool_map``,
``flatmap``, ``shuffled_flatmap``, ``flatten``, ``drop``, ``slice``
(TorchData's ``transform/callable.py`` family)."""

from __future__ import annotations

import collections
import concurrent.futures
import warnings

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import apply_on_cols, check_positive
from .callable import put_result

__all__ = ["BatchMapper", "Dropper", "FlatMapper", "Flattener", "ShuffledFlatMapper",
           "Slicer", "ThreadPoolMapper"]


def _identity(data):
    return data


def _iterable_result(pipe, fn, out):
    try:
        return iter(out)
    except TypeError:
        name = getattr(fn, "__name__", repr(fn))
        raise TypeError(f"{pipe}: fn {name} must return an iterable, got "
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

    def __init__(self, source_datapipe, fn, input_col=None, output_col=None,
                 scheduled_tasks: int = 128, max_workers: int | None = None,
                 **threadpool_kwargs) -> None:
        check_positive("ThreadPoolMapper", "scheduled_tasks", scheduled_tasks)
        if input_col is None and output_col is not None:
            raise ValueError("ThreadPoolMapper: output_col must be None when input_col is None")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) != 1:
                raise ValueError("ThreadPoolMapper: output_col must be a single column, got "
                                 f"{output_col!r}")
            output_col = output_col[0]
        self.datapipe = source_datapipe
        self.fn = fn
        self.input_col = input_col
        self.output_col = output_col
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

    def __len__(self) -> int:
        return len(self.datapipe)

    def __repr__(self) -> str:
        return (f"ThreadPoolMapper(fn={getattr(self.fn, '__name__', self.fn)}, "
                f"max_workers={self.max_workers})")


@functional_datapipe("flatmap")
class FlatMapper(IterDataPipe):
    """Apply ``fn`` to each item and yield the items of the iterable it returns
    (functional name: ``flatmap``).

    Args:
        datapipe (IterDataPipe): the source.
        fn (callable or None): default ``None``: the items themselves are iterables.
        input_col (int, str, list or None): default ``None``; ``fn`` gets
            ``item[input_col]`` or ``*(item[c] for c in input_col)``.

    Example::

        >>> def twice(x):
        ...     return [x, x]
        >>> list(IterableWrapper([1, 2]).flatmap(twice))
        [1, 1, 2, 2]
    """

    def __init__(self, datapipe, fn=None, input_col=None) -> None:
        self.datapipe = datapipe
        self.fn = _identity if fn is None else fn
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
class ShuffledFlatMapper(IterDataPipe):
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

    def __init__(self, datapipe, fn=None, input_col=None, buffer_size: int = 100) -> None:
        check_positive("ShuffledFlatMapper", "buffer_size", buffer_size)
        self.datapipe = datapipe
        self.fn = _identity if fn is None else fn
        self.input_col = input_col
        self.buffer_size = buffer_size
        self._enabled = True

    def set_shuffle(self, shuffle: bool = True):
        self._enabled = shuffle
        return self

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

    def __len__(self) -> int:
        if self.fn is _identity and self.input_col is None:
            return sum(len(d) for d in self.datapipe)  # as TorchData: known without fn
        raise TypeError("ShuffledFlatMapper's length relies on the output of its function")

    def __repr__(self) -> str:
        return f"ShuffledFlatMapper(buffer_size={self.buffer_size})"


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

    def __len__(self) -> int:
        return len(self.datapipe)


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

    def __repr__(self) -> str:
        return f"Slicer(index={self.index!r}, stop={self.stop!r}, step={self.step!r})"
