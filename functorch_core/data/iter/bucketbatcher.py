"""Batching by similarity: ``bucketbatch``, ``max_token_bucketize`` and
``in_batch_shuffle`` (TorchData's ``transform/bucketbatcher.py`` family)."""

from __future__ import annotations

import heapq
import itertools

from ..datapipe import DataChunk, IterDataPipe, functional_datapipe
from ._pipeutil import ShuffleSwitch, check_positive

__all__ = ["BucketBatcher", "InBatchShuffler", "MaxTokenBucketizer"]


@functional_datapipe("in_batch_shuffle")
class InBatchShuffler(ShuffleSwitch, IterDataPipe):
    """Shuffle the items inside each batch (list) of the source
    (functional name: ``in_batch_shuffle``).

    Args:
        datapipe (IterDataPipe): yields lists.

    ``set_seed(seed)`` makes the order reproducible; ``set_shuffle(False)`` passes
    the batches through.

    Example::

        >>> dp = IterableWrapper([[0, 1, 2], [3, 4]]).in_batch_shuffle().set_seed(0)
        >>> [sorted(b) for b in dp]
        [[0, 1, 2], [3, 4]]
    """

    _is_random = True
    _len_source = "datapipe"

    def __init__(self, datapipe) -> None:
        self.datapipe = datapipe

    def _shuffled(self, rng):
        for batch in self.datapipe:
            yield DataChunk([batch[i] for i in rng.permutation(len(batch))])


def _chunks(it, size):
    it = iter(it)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _buffer_shuffle(it, size, rng):
    buf = []
    for x in it:
        if len(buf) == size:
            i = int(rng.integers(size))
            yield buf[i]
            buf[i] = x
        else:
            buf.append(x)
    while buf:
        i = int(rng.integers(len(buf)))
        buf[i], buf[-1] = buf[-1], buf[i]
        yield buf.pop()


@functional_datapipe("bucketbatch")
class BucketBatcher(IterDataPipe):
    """Batch items that sort close together, from a shuffled pool
    (functional name: ``bucketbatch``).

    A pool of ``batch_size * batch_num * bucket_num`` items is shuffled (when
    ``bucket_num > 1`` or no ``sort_key``), each bucket of ``batch_size *
    batch_num`` items is passed through ``sort_key``, the result is cut into
    batches of ``batch_size``, and (with a ``sort_key``) the batches are shuffled
    in groups of ``bucket_num`` (``use_in_batch_shuffle=True``) or through a
    buffer of ``batch_size * batch_num`` batches.

    Args:
        datapipe (IterDataPipe): the source.
        batch_size (int): items per batch.
        drop_last (bool): default ``False``; drop a last, short batch.
        batch_num (int): default ``100``; batches per bucket.
        bucket_num (int): default ``1``; buckets per shuffling pool.
        sort_key (callable or None): default ``None``; takes a bucket (list) and
            returns it sorted, e.g. ``lambda b: sorted(b, key=len)``.
        use_in_batch_shuffle (bool): default ``True``: shuffle whole pools (and
            groups of batches); ``False``: shuffle through a buffer.

    ``set_seed(seed)`` makes the order reproducible.

    Example::

        >>> def sort_bucket(b):
        ...     return sorted(b)
        >>> dp = IterableWrapper(range(9)).bucketbatch(3, batch_num=3, sort_key=sort_bucket)
        >>> sorted(map(sorted, dp.set_seed(0)))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    _is_random = True
    _repr_args = ("batch_size", "drop_last", "batch_num", "bucket_num")

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False, batch_num: int = 100,
                 bucket_num: int = 1, sort_key=None, use_in_batch_shuffle: bool = True) -> None:
        for name, value in (("batch_size", batch_size), ("batch_num", batch_num),
                            ("bucket_num", bucket_num)):
            check_positive("BucketBatcher", name, value)
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.batch_num = batch_num
        self.bucket_num = bucket_num
        self.sort_key = sort_key
        self.use_in_batch_shuffle = use_in_batch_shuffle

    def _shuffled(self, it, size, rng):
        if self.use_in_batch_shuffle:
            for chunk in _chunks(it, size):
                yield from (chunk[i] for i in rng.permutation(len(chunk)))
        else:
            yield from _buffer_shuffle(it, size, rng)

    def __iter__(self):
        rng = self._rng()
        bucket_size = self.batch_size * self.batch_num
        items = iter(self.datapipe)
        if self.bucket_num > 1 or self.sort_key is None:
            items = self._shuffled(items, bucket_size * self.bucket_num, rng)
        if self.sort_key is not None:
            items = itertools.chain.from_iterable(
                self.sort_key(b) for b in _chunks(items, bucket_size))
        batches = (DataChunk(b) for b in _chunks(items, self.batch_size)
                   if not (self.drop_last and len(b) < self.batch_size))
        if self.sort_key is not None:
            group = self.bucket_num if self.use_in_batch_shuffle else bucket_size
            batches = self._shuffled(batches, group, rng)
        yield from batches

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _default_len_fn(token):
    return len(token)


class _ByLength:
    """A heap entry ordered by length alone, so that items of one length leave the heap in
    the order heapq's sift gives them, the order TorchData's batches have."""

    __slots__ = ("item", "length")

    def __init__(self, length, item) -> None:
        self.length, self.item = length, item

    def __lt__(self, other: _ByLength) -> bool:
        return self.length < other.length


@functional_datapipe("max_token_bucketize")
class MaxTokenBucketizer(IterDataPipe):
    """Batch items of similar length so each batch's total length stays within
    ``max_token_count`` (functional name: ``max_token_bucketize``).

    Items go through a min-heap of ``buffer_size`` keyed by ``len_fn`` alone; batches
    are filled from the shortest item up, items of one length in the heap's order (as in
    TorchData, not always their arrival order). Items outside ``[min_len, max_len]`` are
    dropped.

    Args:
        datapipe (IterDataPipe): the source.
        max_token_count (int): the most total length per batch.
        len_fn (callable): default ``len``; an item's length.
        min_len (int): default ``0``.
        max_len (int or None): default ``None`` (``max_token_count``).
        buffer_size (int): default ``1000``; items held in the heap.
        include_padding (bool): default ``False``; count a batch as
            ``len(batch) * longest`` (its size once padded).

    Example::

        >>> dp = IterableWrapper(["1", "11", "1", "111", "11"])
        >>> list(dp.max_token_bucketize(max_token_count=4))
        [['1', '1', '11'], ['11'], ['111']]
    """

    _repr_args = ("max_token_count", "buffer_size")

    def __init__(self, datapipe, max_token_count: int, len_fn=_default_len_fn, min_len: int = 0,
                 max_len: int | None = None, buffer_size: int = 1000,
                 include_padding: bool = False) -> None:
        if max_len is None:
            max_len = max_token_count
        if min_len < 0 or min_len > max_len:
            raise ValueError(f"MaxTokenBucketizer: need 0 <= min_len <= max_len, got "
                             f"min_len={min_len}, max_len={max_len}")
        if max_len > max_token_count:
            raise ValueError(f"MaxTokenBucketizer: max_len={max_len} exceeds "
                             f"max_token_count={max_token_count}")
        check_positive("MaxTokenBucketizer", "buffer_size", buffer_size)
        self.datapipe = datapipe
        self.max_token_count = max_token_count
        self.len_fn = len_fn
        self.min_len = min_len
        self.max_len = max_len
        self.buffer_size = buffer_size
        self.include_padding = include_padding

    def __iter__(self):
        heap = []
        batch, total, longest = [], 0, 0

        def pop():
            nonlocal batch, total, longest
            entry = heapq.heappop(heap)
            length, item = entry.length, entry.item
            if self.include_padding:
                longest = max(longest, length)
                new_total = (len(batch) + 1) * longest
            else:
                new_total = total + length
            if new_total > self.max_token_count:
                done, batch, total, longest = DataChunk(batch), [item], length, length
                return done
            batch.append(item)
            total = new_total
            return None

        for item in self.datapipe:
            length = self.len_fn(item)
            if not self.min_len <= length <= self.max_len:
                continue
            heapq.heappush(heap, _ByLength(length, item))
            if len(heap) == self.buffer_size and (done := pop()) is not None:
                yield done
        while heap:
            if (done := pop()) is not None:
                yield done
        if batch:
            yield DataChunk(batch)
