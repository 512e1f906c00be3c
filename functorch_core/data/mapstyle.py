"""The DataLoader for map-style datasets, as torch's: the main process samples, workers fetch.

The main process iterates the (batch) sampler, takes this rank's share
(every ``world_size``-th index, or batch with a user ``batch_sampler``) and
sends each list of indices to the workers in turn, at most ``prefetch_factor``
per worker ahead. A worker fetches ``[dataset[i] for i in indices]`` and
collates it; the main process delivers the results in sampler order. So only
the last batch of an epoch is short, whatever ``num_workers`` is.

The default samplers are seeded from ``(seed, epoch)``, so an epoch is
reproducible and resuming (``state_dict``) skips the delivered batches'
indices without fetching them.
"""

from __future__ import annotations

import itertools
import pickle
import traceback

from .distributed import DistributedSampler
from .iter.util import progress_bar
from .loader_state import remaining
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .workers import (
    DataLoaderWorkerError,
    Epoch,
    enter_worker,
    main_is_gone,
    next_command,
    receive,
    seed_of,
    stop,
)

__all__: list[str] = []


def progress(loader):
    """The epoch's progress bar, or ``None`` without ``progress=True``."""
    if not loader.progress:
        return None
    try:
        total = len(loader)
    except TypeError:
        total = None
    return progress_bar("DataLoader", total)


def samplers(dataset, shuffle, sampler, batch_sampler, batch_size, drop_last):
    """The loader's ``(sampler, batch_sampler)``, torch's defaults filled in."""
    if sampler is None:
        sampler = RandomSampler(dataset) if shuffle else SequentialSampler(dataset)
    if batch_sampler is None and batch_size is not None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    return sampler, batch_sampler


def epoch_sampler(loader, epoch: int):
    """The sampler for ``epoch``: the loader's own RandomSampler gets that epoch's seed."""
    s = loader.sampler
    if loader._seeded_sampler:
        return RandomSampler(s.data_source, generator=seed_of(loader.seed, epoch, 0))
    return s


def _share(loader) -> tuple[int, int]:
    """``(rank, world_size)`` to split the sampler's indices by: ``(0, 1)`` when the
    sampler is a ``DistributedSampler``, which gives this rank's share already."""
    inner = getattr(loader.batch_sampler, "sampler", None) if loader._user_batches else None
    if isinstance(loader.sampler, DistributedSampler) or isinstance(inner, DistributedSampler):
        return 0, 1
    return loader.rank, loader.world_size


def index_lists(loader, epoch: int, reshards=()):
    """This rank's index lists (or single indices without auto-batching) for ``epoch``;
    after a re-shard (``reshards``, see ``loader_state.reshard``) only of what the ranks
    before it left of the epoch."""
    r, ws = _share(loader)
    if reshards and (loader._user_batches or ws != loader.world_size):
        raise ValueError("DataLoader.load_state_dict: a state re-sharded to another world "
                         "size needs the loader's own sampling (no batch_sampler, no "
                         "DistributedSampler): the indices left are split by the loader")
    if loader._user_batches:
        return itertools.islice(iter(loader.batch_sampler), r, None, ws)
    if reshards:
        indices = iter(remaining(epoch_sampler(loader, epoch), reshards)[r::ws])
    else:
        indices = itertools.islice(iter(epoch_sampler(loader, epoch)), r, None, ws)
    if loader.batch_size is None:
        return indices
    return iter(BatchSampler(indices, loader.batch_size, loader.drop_last))


def num_batches(loader) -> int:
    """``len(loader)`` for a map-style dataset: this rank's batches (or samples)."""
    r, ws = _share(loader)
    if loader._user_batches:
        n = len(loader.batch_sampler)
        return n // ws + (r < n % ws)
    n = len(loader.sampler)
    n = n // ws + (r < n % ws)
    if loader.batch_size is None:
        return n
    return n // loader.batch_size if loader.drop_last else -(-n // loader.batch_size)


def fetch(dataset, index, batched: bool, collate_fn):
    data = [dataset[i] for i in index] if batched else dataset[index]
    return data if collate_fn is None else collate_fn(data)


def _map_worker_loop(dataset, batched, collate_fn, worker_id, num_workers, rank, world_size,
                     tasks, results, generation, worker_init_fn, parent):
    """A worker: on ``("epoch", gen, seed)`` reseed; on ``("task", gen, k, index)`` fetch."""
    initialized = False  # worker_init_fn runs once per process, as in torch
    while (cmd := next_command(tasks, parent)) is not None:
        if cmd[0] == "epoch":
            enter_worker(cmd[2] + worker_id, id=worker_id, num_workers=num_workers, rank=rank,
                         world_size=world_size, dataset=dataset)
            continue
        _, gen, k, index = cmd
        if generation.value != gen:
            continue  # an abandoned epoch's task
        try:
            if not initialized:
                initialized = True
                if worker_init_fn is not None:
                    worker_init_fn(worker_id)
            item = fetch(dataset, index, batched, collate_fn)
            try:
                payload = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                raise TypeError(f"the batch cannot be pickled to send it to the main process: "
                                f"{e}") from None
            msg = ("item", gen, k, payload)
        except Exception as e:
            msg = ("error", gen, k, f"{type(e).__name__}: {e}", traceback.format_exc())
        results.put(msg)
        if main_is_gone(parent):
            return


class MapWorkerPool:
    """``num_workers`` processes, each with a task queue; one result queue for all."""

    def __init__(self, loader, ctx, parent: int):
        self.loader = loader
        n = loader.num_workers
        self.generation = ctx.Value("q", 0, lock=False)
        self.tasks = [ctx.Queue() for _ in range(n)]
        self.results = ctx.Queue()
        batched = loader.batch_size is not None or loader.batch_sampler is not None
        self.procs = []
        for w in range(n):
            p = ctx.Process(target=_map_worker_loop, daemon=True, name=f"DataLoaderWorker-{w}",
                            args=(loader.dataset, batched, loader.collate_fn, w, n, loader.rank,
                                  loader.world_size, self.tasks[w], self.results,
                                  self.generation, loader.worker_init_fn, parent))
            p.start()
            self.procs.append(p)

    def alive(self) -> bool:
        return all(p.is_alive() for p in self.procs)

    def start_epoch(self, base_seed: int) -> int:
        self.generation.value += 1
        for q in self.tasks:
            q.put(("epoch", self.generation.value, base_seed))
        return self.generation.value

    def cancel(self) -> None:
        self.generation.value += 1

    def shutdown(self) -> None:
        self.generation.value += 1
        stop(self.procs, self.tasks, [self.results])


class MapEpoch(Epoch):
    """One pass over a map-style dataset; the iterator ``iter(loader)`` returns."""

    def __init__(self, loader, state: dict):
        self.loader = loader
        self.epoch = state["epoch"]
        self.count = sum(state["delivered"])
        self.finished = False
        self.reshards = state.get("reshards", [])
        self.indices = itertools.islice(index_lists(loader, self.epoch, self.reshards),
                                        self.count, None)
        self.batched = loader.batch_size is not None or loader.batch_sampler is not None
        self.pool = None
        self.bar = progress(loader)
        if loader.num_workers:
            self.pool = loader._workers()
            self.gen = self.pool.start_epoch(seed_of(loader.seed, self.epoch, 1))
            self.sent = self.count
            self.owner: dict[int, int] = {}  # task number -> worker
            self.ready: dict[int, bytes] = {}
            self.turn = itertools.cycle(range(loader.num_workers))
            for _ in range(loader.prefetch_factor * loader.num_workers):
                self._send()

    def position(self) -> dict:
        n = max(self.loader.num_workers, 1)
        return {"epoch": self.epoch, "delivered": [self.count] + [0] * (n - 1),
                "active": list(range(n)), "pointer": 0, "reshards": self.reshards}

    def _send(self) -> None:
        index = next(self.indices, None)
        if index is None:
            return
        w = next(self.turn)
        self.pool.tasks[w].put(("task", self.gen, self.sent, index))
        self.owner[self.sent] = w
        self.sent += 1

    def _receive(self):
        k = self.count
        while k not in self.ready:
            w = self.owner[k]
            try:
                msg = receive(self.pool.results, self.pool.procs[w], self.loader.timeout,
                              f"worker {w} (rank {self.loader.rank})",
                              lambda m: m[1] == self.gen)
            except DataLoaderWorkerError:
                self.close()
                raise
            if msg[0] == "error":
                self.close()
                raise DataLoaderWorkerError(
                    f"DataLoader worker {self.owner[msg[2]]} (rank {self.loader.rank}) raised "
                    f"fetching batch {msg[2]} of the epoch: {msg[3]}\n\nOriginal traceback "
                    f"in the worker:\n{msg[4]}")
            self.ready[msg[2]] = msg[3]
        del self.owner[k]
        return pickle.loads(self.ready.pop(k))

    def __next__(self):
        if not self.finished:
            if self.pool is None:
                index = next(self.indices, None)
                if index is not None:
                    item = fetch(self.loader.dataset, index, self.batched,
                                 self.loader.collate_fn)
                    return self._delivered(item)
            elif self.count < self.sent:
                item = self._receive()
                self._send()
                return self._delivered(item)
        self.close()
        raise StopIteration
