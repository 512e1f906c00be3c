"""``async_map_batches`` (TorchData's ``BatchAsyncMapper``): a coroutine function over
the items of each batch, at most ``max_concurrency`` awaiting at once."""

from __future__ import annotations

import asyncio
import inspect

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import apply_on_cols, check_positive, known_len
from .callable import check_cols, put_result

__all__ = ["BatchAsyncMapper"]


class _BatchAsyncMapper(IterDataPipe):
    """Batches in, batches out: ``async_fn`` awaited on each item of a batch."""

    _len_source = "datapipe"

    def __init__(self, datapipe, async_fn, input_col, output_col, max_concurrency):
        self.datapipe = datapipe
        self.async_fn = async_fn
        self.input_col = input_col
        self.output_col = output_col
        self.max_concurrency = max_concurrency

    async def _batch(self, batch):
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(data):
            async with gate:
                return await apply_on_cols(self.async_fn, data, self.input_col)

        results = await asyncio.gather(*(one(d) for d in batch))
        if self.input_col is None:
            return list(results)
        return [put_result(d, r, self.input_col, self.output_col)
                for d, r in zip(batch, results, strict=True)]

    def __iter__(self):
        # one event loop per iteration, owned by this generator (none is held
        # between iterations, so the pipe pickles)
        loop = asyncio.new_event_loop()
        try:
            for batch in self.datapipe:
                yield loop.run_until_complete(self._batch(batch))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


@functional_datapipe("async_map_batches")
class BatchAsyncMapper(IterDataPipe):
    """Await a coroutine function on every item, ``batch_size`` items at a time with
    at most ``max_concurrency`` in flight, keeping the input order
    (functional name: ``async_map_batches``).

    Builds ``source.batch(batch_size)``, the concurrent map over each batch and,
    with ``flatten``, ``flatmap()`` back to items (with the source's length when
    it has one), as TorchData does.

    Args:
        source_datapipe (IterDataPipe): the source.
        async_fn (coroutine function): an ``async def`` function of one item (or
            of its ``input_col`` columns).
        batch_size (int): items gathered per round.
        input_col (int, str, list or None): default ``None``; as ``map``.
        output_col (int, str or None): default ``None``; as ``map``.
        max_concurrency (int): default ``32``; calls awaiting at once.
        flatten (bool): default ``True``; ``False`` yields the batches (lists).

    Example::

        >>> async def ten_times(x):
        ...     await asyncio.sleep(0)
        ...     return 10 * x
        >>> list(IterableWrapper(range(5)).async_map_batches(ten_times, 2))
        [0, 10, 20, 30, 40]
        >>> list(IterableWrapper([(0, 1), (2, 3)]).async_map_batches(
        ...     ten_times, 2, input_col=1, output_col=-1, flatten=False))
        [[(0, 1, 10), (2, 3, 30)]]
    """

    def __new__(cls, source_datapipe, async_fn, batch_size: int, input_col=None,
                output_col=None, max_concurrency: int = 32, flatten: bool = True):
        if not inspect.iscoroutinefunction(async_fn):
            raise ValueError(f"BatchAsyncMapper: async_fn={async_fn!r} must be a coroutine "
                             "function (defined with async def)")
        check_positive("BatchAsyncMapper", "max_concurrency", max_concurrency)
        output_col = check_cols("BatchAsyncMapper", input_col, output_col)
        dp = _BatchAsyncMapper(source_datapipe.batch(batch_size), async_fn, input_col,
                               output_col, max_concurrency)
        if not flatten:
            return dp
        dp = dp.flatmap()
        n = known_len(source_datapipe)
        return dp if n is None else dp.set_length(n)
