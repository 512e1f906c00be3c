"""Utility iter pipes: IterableWrapper, Prefetcher, FullSync, InMemoryCacheHolder, Progress,
Rows2Columnar."""

from __future__ import annotations

import copy
import queue
import sys
import threading
import time
import warnings
from collections.abc import Sequence

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["FullSync", "InMemoryCacheHolder", "IterableWrapper", "Prefetcher", "Progress",
           "Rows2Columnar"]


class IterableWrapper(IterDataPipe):
    """Wrap an iterable as an IterDataPipe.

    Args:
        iterable: any iterable; a sequence or a re-iterable object can be
            iterated once per epoch, a one-shot iterator only once (and then
            cannot be resumed by ``DataLoader.load_state_dict``).
        deepcopy (bool): iterate a deep copy of ``iterable`` each epoch, so
            in-place changes to the original do not leak in. Default: ``True``.

    Example::

        >>> list(IterableWrapper(range(3)))
        [0, 1, 2]
    """

    def __init__(self, iterable, deepcopy: bool = True):
        self.iterable = iterable
        self.deepcopy = deepcopy
        self._start = 0
        if iter(iterable) is iterable:
            self._resume_blocker = (f"IterableWrapper wraps a one-shot iterator "
                                    f"({type(iterable).__name__}) that cannot be replayed")

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(source)
            except TypeError:
                warnings.warn("IterableWrapper: the iterable cannot be deep-copied; in-place "
                              "changes to it will show in the pipeline", stacklevel=2)
        start, self._start = self._start, 0
        if start:
            if isinstance(source, (Sequence, range, np.ndarray)):
                source = source[start:]
            else:
                it = iter(source)
                for _ in range(start):
                    next(it, None)
                source = it
        yield from source

    def _skip(self, n: int) -> bool:
        if isinstance(self.iterable, (Sequence, range, np.ndarray)):
            self._start += n
            return True
        return False

    def __len__(self) -> int:
        try:
            return len(self.iterable)
        except TypeError:
            raise TypeError(f"IterableWrapper instance doesn't have valid length: "
                            f"{type(self.iterable).__name__} has no len()") from None


_DONE = object()


@functional_datapipe("prefetch")
class Prefetcher(IterDataPipe):
    """Read ahead of the consumer in a background thread (functional name: ``prefetch``).

    Args:
        source_datapipe (IterDataPipe): the pipe to read ahead.
        buffer_size (int): how many items to hold ready. Default: ``10``.

    Example::

        >>> list(IterableWrapper(range(4)).prefetch(2))
        [0, 1, 2, 3]
    """

    _repr_args = ("buffer_size",)
    _len_source = "source_datapipe"

    def __init__(self, source_datapipe, buffer_size: int = 10):
        if buffer_size <= 0:
            raise ValueError(f"Prefetcher(buffer_size={buffer_size}): expected a positive int")
        self.source_datapipe = source_datapipe
        self.buffer_size = buffer_size

    def __iter__(self):
        q: queue.Queue = queue.Queue(self.buffer_size)
        stop = threading.Event()

        def fill():
            try:
                for item in self.source_datapipe:
                    while not stop.is_set():
                        try:
                            q.put((True, item), timeout=0.05)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put((True, _DONE))
            except BaseException as e:  # handed to the consumer, raised there
                q.put((False, e))

        thread = threading.Thread(target=fill, daemon=True, name="Prefetcher")
        thread.start()
        try:
            while True:
                ok, item = q.get()
                if not ok:
                    raise item
                if item is _DONE:
                    return
                yield item
        finally:
            stop.set()
            while thread.is_alive():
                try:
                    q.get_nowait()
                except queue.Empty:
                    thread.join(0.05)

    def _skip(self, n: int) -> bool:
        return self.source_datapipe._skip(n)


@functional_datapipe("fullsync")
class FullSync(IterDataPipe):
    """Keep every rank's epoch the same length (functional name: ``fullsync``).

    In one process it passes items through. Under a ``DataLoader`` with
    ``world_size > 1`` every rank stops after the number of items the shortest
    rank yields, so collective training steps stay in step; the loader finds
    each rank's count from ``len()`` of the pipe with that rank's sharding.

    Args:
        datapipe (IterDataPipe): the pipe to synchronise.
        timeout (int): seconds to wait for the other ranks (kept for
            TorchData's signature; ranks here need no messages). Default: ``1800``.
    """

    _repr_args = ("timeout",)

    def __init__(self, datapipe, timeout: int = 1800):
        self.datapipe = datapipe
        self.timeout = timeout
        self._limit: int | None = None

    def __iter__(self):
        limit = self._limit
        for i, item in enumerate(self.datapipe):
            if limit is not None and i >= limit:
                return
            yield item

    def _skip(self, n: int) -> bool:
        if self._limit is not None:
            return False
        return self.datapipe._skip(n)

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n if self._limit is None else min(n, self._limit)


def _nbytes(item) -> int:
    if isinstance(item, np.ndarray):
        return item.nbytes
    if isinstance(item, (list, tuple)):
        return sys.getsizeof(item) + sum(_nbytes(x) for x in item)
    if isinstance(item, dict):
        return sys.getsizeof(item) + sum(_nbytes(x) for x in item.values())
    return sys.getsizeof(item)


@functional_datapipe("in_memory_cache")
class InMemoryCacheHolder(IterDataPipe):
    """Hold the items in memory after the first epoch (functional name: ``in_memory_cache``).

    Args:
        source_dp (IterDataPipe): the pipe to cache.
        size (int, optional): the most megabytes to hold; past it the cache is
            dropped (with a warning) and later epochs read the source again.
            Default: ``None`` (no limit).

    Example::

        >>> dp = IterableWrapper(range(3)).in_memory_cache()
        >>> list(dp), list(dp)
        ([0, 1, 2], [0, 1, 2])
    """

    _repr_args = ("size",)

    def __init__(self, source_dp, size: int | None = None):
        self.source_dp = source_dp
        self.size = size
        self._cache: list | None = None
        self._start = 0

    def __iter__(self):
        start, self._start = self._start, 0
        if self._cache is not None:
            yield from self._cache[start:]
            return
        limit = None if self.size is None else self.size * 1024 * 1024
        cache, used = [], 0
        for item in self.source_dp:
            if cache is not None:
                used += _nbytes(item)
                if limit is not None and used > limit:
                    warnings.warn(f"InMemoryCacheHolder: the source exceeds size={self.size} "
                                  "MB; it is not cached", stacklevel=2)
                    cache = None
                else:
                    cache.append(item)
            yield item
        if cache is not None:
            self._cache = cache

    def _skip(self, n: int) -> bool:
        if self._cache is None:
            return False
        self._start += n
        return True

    def __len__(self) -> int:
        return len(self._cache) if self._cache is not None else len(self.source_dp)

    def __getstate__(self):
        state = dict(vars(self))
        state["_cache"] = None  # workers fill their own cache
        return state


class _TextBar:
    """A plain-text progress line on stderr, used when tqdm is not importable."""

    def __init__(self, desc, total, every=1.0):
        self.desc, self.total, self.every = desc, total, every
        self.n, self.t0, self.last = 0, time.perf_counter(), 0.0

    def update(self, k=1):
        self.n += k
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            self._write(now)

    def _write(self, now):
        rate = self.n / max(now - self.t0, 1e-9)
        of = f"/{self.total}" if self.total is not None else ""
        sys.stderr.write(f"{self.desc}: {self.n}{of} items, {rate:.1f} items/s\n")

    def close(self):
        self._write(time.perf_counter())


def progress_bar(desc, total):
    """A tqdm bar when tqdm is importable, else a plain-text one (both have update/close)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _TextBar(desc, total)
    return tqdm(desc=desc, total=total, unit="it")


@functional_datapipe("progress")
class Progress(IterDataPipe):
    """Show a progress bar with items/s while iterating (functional name: ``progress``).

    Uses tqdm when it is importable, otherwise prints a plain line to stderr
    about once a second.

    Args:
        source_datapipe (IterDataPipe): the pipe to watch.
        desc (str): the bar's label. Default: ``"data"``.
    """

    _repr_args = ("desc",)
    _len_source = "source_datapipe"

    def __init__(self, source_datapipe, desc: str = "data"):
        self.source_datapipe = source_datapipe
        self.desc = desc

    def __iter__(self):
        try:
            total = len(self.source_datapipe)
        except TypeError:
            total = None
        bar = progress_bar(self.desc, total)
        try:
            for item in self.source_datapipe:
                yield item
                bar.update(1)
        finally:
            bar.close()

    def _skip(self, n: int) -> bool:
        return self.source_datapipe._skip(n)


@functional_datapipe("rows2columnar")
class Rows2Columnar(IterDataPipe):
    """Turn each batch of rows (dicts or lists) into a dict of columns
    (functional name: ``rows2columnar``).

    Args:
        source_datapipe (IterDataPipe): yields lists of rows.
        column_names (list or None): default ``None``: dict rows keep their keys
            (list rows need names); with names, dict rows keep only those columns
            and list rows are named by position.

    Example::

        >>> batch = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
        >>> list(IterableWrapper([batch]).rows2columnar())
        [{'a': [1, 3], 'b': [2, 4]}]
    """

    _len_source = "source_datapipe"

    def __init__(self, source_datapipe, column_names=None) -> None:
        self.source_datapipe = source_datapipe
        self.column_names = [] if column_names is None else list(column_names)

    def __iter__(self):
        names = self.column_names
        for b, batch in enumerate(self.source_datapipe):
            cols: dict = {}
            for row in batch:
                if isinstance(row, dict):
                    pairs = ((n, row[n]) for n in names) if names else row.items()
                else:
                    if len(row) > len(names):
                        raise ValueError(
                            f"Rows2Columnar: a row of batch {b} has {len(row)} values but "
                            f"column_names has {len(names)} names")
                    pairs = zip(names[:len(row)], row, strict=True)
                for k, v in pairs:
                    cols.setdefault(k, []).append(v)
            yield cols

    def __repr__(self) -> str:
        return f"Rows2Columnar(column_names={self.column_names or None})"
