"""The DataLoader: worker processes, exactly-once sharding, per-epoch seeds, resumable state.

How an epoch is made (every process derives the same plan from the same inputs):

1. The pipeline is the user's DataPipe (or, for a map-style dataset, its
   indices -> optional shuffle -> sharding -> ``dataset[i]``), then a
   ``sharding_filter`` at the end if no pipe shards the ranks/workers, then
   ``batch`` + ``collate_fn`` when ``batch_size`` is given.
2. There are ``world_size * max(num_workers, 1)`` instances; instance
   ``rank * num_workers + worker_id`` applies that sharding to a copy.
3. Random pipes get seeds from ``(seed, epoch, position in the graph)``:
   the same on every rank and worker for pipes before the sharding (so every
   instance shuffles the same way and the shards partition one order), mixed
   with the instance id for pipes after it.
4. The main process takes outputs from the workers in turn (a worker that
   ends leaves the rotation), so the delivered order is a function of the
   workers' streams.

Resuming replays: a worker skips (``_skip``, else iterates and drops) the
outputs of its stream that were already delivered, so outputs a worker had
prefetched but the main process had not delivered come again.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing as mp
import os
import pickle
import queue
import random
import time
import traceback

import numpy as np

from .collation import default_collate
from .datapipe import IterDataPipe, MapDataPipe, _DataPipeBase
from .graph import list_datapipes, sharding_pipes, sources
from .iter.callable import Mapper
from .iter.combinatorics import Shuffler
from .iter.grouping import Batcher
from .iter.sharding import SHARDING_PRIORITIES, ShardingFilter
from .iter.util import FullSync, IterableWrapper, progress_bar

__all__ = ["DataLoader", "DataLoaderWorkerError", "WorkerInfo", "get_worker_info"]

_DEFAULT = object()
_STATE_VERSION = 1


class DataLoaderWorkerError(RuntimeError):
    """A worker process raised; the message holds the worker's traceback."""


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process.

    Attributes: ``id``, ``num_workers``, ``seed`` (this worker's seed for the
    epoch), ``rank``, ``world_size``, ``dataset`` (the worker's pipeline copy).
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's ``WorkerInfo``, or ``None`` in the main process."""
    return _worker_info


class _Fetch:
    """``dataset[i]`` as a picklable callable (a map-style dataset behind an index pipe)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __call__(self, index):
        return self.dataset[index]


class _MapSource(Mapper):
    """Indices -> ``dataset[i]``; holds the dataset as a source when it is a MapDataPipe."""

    def _datapipe_sources(self) -> list:
        found = super()._datapipe_sources()
        ds = self.fn.dataset
        return [*found, ds] if isinstance(ds, _DataPipeBase) else found


def _copy(pipe):
    """A deep copy of a pipeline, or the pipeline itself if it holds something uncopyable."""
    try:
        return copy.deepcopy(pipe)
    except (TypeError, pickle.PicklingError):
        return pipe


def _seed_of(*words) -> int:
    return int(np.random.SeedSequence([int(w) for w in words]).generate_state(1, np.uint64)[0]
               >> np.uint64(1))


def _before_sharding(sink) -> set[int]:
    """Ids of the pipes that feed some sharding filter (their output is shared by instances)."""
    out: set[int] = set()
    for node in list_datapipes(sink):
        if isinstance(node, ShardingFilter):
            out.update(id(p) for p in list_datapipes(node) if p is not node)
    return out


def _prepare_instance(pipe, *, rank, world_size, worker_id, num_workers, seed, epoch):
    """Shard and seed ``pipe`` (a private copy) for one instance and epoch."""
    nodes = list_datapipes(pipe)
    for node in nodes:
        if isinstance(node, ShardingFilter):
            node.groups = {}
            node.apply_sharding(world_size, rank, SHARDING_PRIORITIES.DISTRIBUTED)
            node.apply_sharding(max(num_workers, 1), worker_id,
                                SHARDING_PRIORITIES.MULTIPROCESSING)
    shared = _before_sharding(pipe)
    instance = rank * max(num_workers, 1) + worker_id
    k = 0
    for node in nodes:
        if node._is_random:
            words = (seed, epoch, k) if id(node) in shared else (seed, epoch, k, instance + 1)
            node.set_seed(_seed_of(*words))
            k += 1
    return pipe


def _failing_pipe(tb):
    """The innermost DataPipe whose method is on the traceback, or None."""
    found = None
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        if isinstance(obj, _DataPipeBase):
            found = obj
        tb = tb.tb_next
    return found


def _advance(pipe, skip: int):
    """An iterator over ``pipe`` that starts after its first ``skip`` outputs."""
    if skip and pipe._skip(skip):
        return iter(pipe)
    it = iter(pipe)
    for _ in range(skip):
        next(it)
    return it


def _worker_loop(pipe, worker_id, num_workers, rank, world_size, results, commands, generation,
                 worker_init_fn):
    """A worker process: run one epoch per command, put tagged outputs on ``results``."""
    global _worker_info
    initialized = False  # worker_init_fn runs once per process, as in torch
    parent = os.getppid()
    while True:
        try:
            cmd = commands.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() != parent:  # the main process is gone: do not linger
                return
            continue
        if cmd is None:
            return
        gen, epoch, seed, skip = cmd
        instance_seed = _seed_of(seed, epoch, rank * num_workers + worker_id + 1)
        random.seed(instance_seed)
        np.random.seed(instance_seed % 2**32)
        local = pipe
        _prepare_instance(local, rank=rank, world_size=world_size, worker_id=worker_id,
                          num_workers=num_workers, seed=seed, epoch=epoch)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=instance_seed,
                                  rank=rank, world_size=world_size, dataset=local)

        def put(msg, gen=gen):
            while generation.value == gen:
                try:
                    results.put(msg, timeout=0.1)
                    return True
                except queue.Full:
                    if os.getppid() != parent:
                        os._exit(0)  # the main process is gone: do not linger
            return False

        index, stage = skip, "worker_init_fn"
        try:
            if worker_init_fn is not None and not initialized:
                worker_init_fn(worker_id)
            initialized, stage = True, repr(local)
            for item in _advance(local, skip):
                try:
                    payload = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as e:
                    raise TypeError(f"the output cannot be pickled to send it to the main "
                                    f"process: {e}") from None
                if not put(("item", gen, payload)):
                    break
                index += 1
            else:
                put(("end", gen, index))
        except Exception as e:
            where = _failing_pipe(e.__traceback__)
            put(("error", gen, index, repr(where) if where is not None else stage,
                 f"{type(e).__name__}: {e}", traceback.format_exc()))


class DataLoader:
    """Load a DataPipe (or a map-style dataset) in batches, in worker processes, resumably.

    Every sample of an epoch is delivered exactly once across ``world_size``
    ranks and ``num_workers`` workers per rank: the pipeline is sharded at its
    ``sharding_filter`` (one is appended at the end if none shards the ranks
    and workers), and random pipes before the sharding get the same seed in
    every instance, so the shards split one shuffled order. With
    ``batch_size`` each worker batches its own shard, so with
    ``drop_last=True`` each instance drops its own short tail.

    Args:
        datapipe (IterDataPipe, MapDataPipe or a map-style dataset): the data.
            A dataset with ``__getitem__`` and ``__len__`` is read by index.
        batch_size (int, optional): batch this many outputs and collate them.
            Default: ``None`` (outputs as the pipeline yields them).
        shuffle (bool, optional): turn the pipeline's shuffle pipes on
            (``True``) or off (``False``); ``None`` (default) leaves them as they
            are. For a map-style dataset ``True`` shuffles the indices.
        num_workers (int): worker processes per rank; ``0`` (default) loads in
            this process.
        collate_fn (callable, optional): merges a batch. Default:
            ``default_collate`` (a pytree of NumPy arrays) when ``batch_size`` is
            given, none otherwise.
        worker_init_fn (callable, optional): called as ``fn(worker_id)`` in each
            worker before it loads. Default: ``None``.
        prefetch_factor (int): outputs each worker may hold ready. Default: ``2``.
        persistent_workers (bool): keep the worker processes between epochs.
            Default: ``False``.
        timeout (float): seconds to wait for one output from a worker before
            raising; ``0`` (default) waits as long as the worker is alive.
        seed (int, optional): the base seed; with ``set_epoch`` it fixes every
            random draw of the pipeline. Default: ``None`` (drawn once at
            construction; ranks > 1 that shuffle must pass one).
        rank (int): this process's rank. Default: ``0``.
        world_size (int): how many ranks share the data. Default: ``1``.
        progress (bool): show a progress bar (tqdm if importable, else plain
            text on stderr). Default: ``False``.
        drop_last (bool): drop each instance's short last batch. Default: ``False``.
        multiprocessing_context (str, optional): ``"fork"``, ``"spawn"`` or
            ``"forkserver"``. Default: ``None`` (the platform's default).

    Example::

        >>> dp = IterableWrapper(range(10)).shuffle().sharding_filter().map(float)
        >>> loader = DataLoader(dp, batch_size=4, num_workers=2, seed=0)
        >>> for batch in loader:
        ...     state = loader.state_dict()     # at any point
        ...     break
        >>> resumed = DataLoader(dp, batch_size=4, num_workers=2, seed=0)
        >>> resumed.load_state_dict(state)      # the rest of that epoch, same order
    """

    def __init__(self, datapipe, batch_size=None, shuffle=None, num_workers=0,
                 collate_fn=_DEFAULT, worker_init_fn=None, prefetch_factor=2,
                 persistent_workers=False, timeout=0, seed=None, rank=0, world_size=1,
                 progress=False, drop_last=False, multiprocessing_context=None):
        call = f"DataLoader(num_workers={num_workers}, rank={rank}, world_size={world_size})"
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"{call}: num_workers must be an int >= 0")
        if not isinstance(world_size, int) or world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"{call}: expected 0 <= rank < world_size")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"DataLoader(batch_size={batch_size!r}): expected a positive int")
        if timeout < 0:
            raise ValueError(f"DataLoader(timeout={timeout}): expected a value >= 0")
        if prefetch_factor < 1:
            raise ValueError(f"DataLoader(prefetch_factor={prefetch_factor}): expected >= 1")
        self.dataset = datapipe
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.num_workers = num_workers
        self.collate_fn = (default_collate if batch_size is not None else None) \
            if collate_fn is _DEFAULT else collate_fn
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers and num_workers > 0
        self.timeout = timeout
        self.rank = rank
        self.world_size = world_size
        self.progress = progress
        self.drop_last = drop_last
        self.multiprocessing_context = multiprocessing_context
        self.pipeline = self._build(datapipe)
        randoms = [p for p in list_datapipes(self.pipeline) if p._is_random and
                   getattr(p, "_enabled", True)]
        if seed is None and world_size > 1 and randoms:
            raise ValueError(f"{call}: the pipeline has random pipes ({randoms[0]!r}); ranks "
                             "must share a seed to shuffle the same way, so pass seed=")
        self.seed = int(np.random.SeedSequence().entropy % 2**62) if seed is None else int(seed)
        self._epoch = 0
        self._resume: dict | None = None
        self._live: _Epoch | None = None
        self._pool: _WorkerPool | None = None
        self._local_pipe = None  # the pipeline copy iterated when num_workers == 0
        self._limit = self._fullsync_limit()

    # -- the pipeline ----------------------------------------------------------------------
    def _build(self, data):
        if isinstance(data, IterDataPipe):
            pipe = data
        elif isinstance(data, MapDataPipe) or (hasattr(data, "__getitem__") and
                                               hasattr(data, "__len__")):
            pipe = IterableWrapper(range(len(data)), deepcopy=False)
            if self.shuffle:
                pipe = Shuffler(pipe, buffer_size=max(len(data), 1))
            pipe = _MapSource(ShardingFilter(pipe), _Fetch(data))
        else:
            raise TypeError(f"DataLoader(datapipe): expected an IterDataPipe, a MapDataPipe or a "
                            f"dataset with __getitem__ and __len__, got {type(data).__name__}")
        pipe = _copy(pipe)
        if self.shuffle is not None:
            for node in list_datapipes(pipe):
                if hasattr(node, "set_shuffle"):
                    node.set_shuffle(self.shuffle)
        needed = set()
        if self.world_size > 1:
            needed.add(SHARDING_PRIORITIES.DISTRIBUTED)
        if self.num_workers > 1:
            needed.add(SHARDING_PRIORITIES.MULTIPROCESSING)
        for node in list_datapipes(pipe):
            if isinstance(node, ShardingFilter):
                flt = node.sharding_group_filter
                needed -= set(SHARDING_PRIORITIES) if flt is None else {flt}
        for group in sorted(needed):
            pipe = ShardingFilter(pipe, sharding_group_filter=group)
        for group in (SHARDING_PRIORITIES.DISTRIBUTED, SHARDING_PRIORITIES.MULTIPROCESSING):
            try:
                sharding_pipes(pipe, group)
            except RuntimeError as e:
                raise ValueError(f"DataLoader(datapipe): {e}") from None
        if self.batch_size is not None:
            pipe = Batcher(pipe, self.batch_size, drop_last=self.drop_last)
        if self.collate_fn is not None:
            pipe = Mapper(pipe, self.collate_fn)
        return pipe

    def _instance(self, rank, worker_id, epoch, pipe=None):
        pipe = _copy(self.pipeline) if pipe is None else pipe
        return _prepare_instance(pipe, rank=rank,
                                 world_size=self.world_size, worker_id=worker_id,
                                 num_workers=self.num_workers, seed=self.seed, epoch=epoch)

    def _fullsync_limit(self):
        if self.world_size == 1 or not any(isinstance(p, FullSync)
                                           for p in list_datapipes(self.pipeline)):
            return None
        counts = []
        for r in range(self.world_size):
            try:
                counts.append(sum(len(self._instance(r, w, 0))
                                  for w in range(max(self.num_workers, 1))))
            except TypeError as e:
                raise TypeError(f"DataLoader(world_size={self.world_size}) with FullSync: every "
                                f"rank's length is needed to stop the ranks together: {e}"
                                ) from None
        return min(counts)

    def __len__(self) -> int:
        if self._limit is not None:
            return self._limit
        return sum(len(self._instance(self.rank, w, self._epoch))
                   for w in range(max(self.num_workers, 1)))

    # -- epochs and state ------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` for the next iteration (its shuffles and seeds)."""
        self._epoch = int(epoch)
        self._resume = None

    def __iter__(self):
        if self._live is not None:
            self._live.close()
        n = max(self.num_workers, 1)
        state = self._resume or {"epoch": self._epoch, "delivered": [0] * n,
                                 "active": list(range(n)), "pointer": 0}
        self._resume = None
        self._epoch = state["epoch"] + 1
        self._live = _Epoch(self, state)
        return self._live

    def _fresh_state(self):
        n = max(self.num_workers, 1)
        return {"epoch": self._epoch, "delivered": [0] * n, "active": list(range(n)),
                "pointer": 0}

    def state_dict(self) -> dict:
        """Where the loader is: load it into a new loader to continue from here.

        Inside an epoch it names the outputs delivered so far (outputs the
        workers had prefetched but not delivered are not counted, so they come
        again); between epochs it names the start of the next one.

        Raises:
            RuntimeError: a pipe cannot replay its iteration (it names the pipe
                and why).
        """
        for node in list_datapipes(self.pipeline):
            if node._resume_blocker:
                raise RuntimeError(f"DataLoader.state_dict(): {node!r} cannot be resumed: "
                                   f"{node._resume_blocker}")
        if self._resume is not None:
            pos = self._resume
        elif self._live is not None and not self._live.finished:
            pos = self._live.position()
        else:
            pos = self._fresh_state()
        return {"version": _STATE_VERSION, "seed": self.seed, "rank": self.rank,
                "world_size": self.world_size, "num_workers": self.num_workers,
                "batch_size": self.batch_size, "drop_last": self.drop_last,
                "epoch": pos["epoch"], "delivered": list(pos["delivered"]),
                "active": list(pos["active"]), "pointer": pos["pointer"]}

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state`` (from ``state_dict``) at the next iteration.

        The loader must be built like the one that saved the state (same
        pipeline, ``num_workers``, ``rank``, ``world_size``, ``batch_size``).
        """
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"DataLoader.load_state_dict: unknown state version "
                             f"{state.get('version')!r}")
        for key in ("rank", "world_size", "num_workers", "batch_size", "drop_last"):
            if state[key] != getattr(self, key):
                raise ValueError(f"DataLoader.load_state_dict: the state was saved with "
                                 f"{key}={state[key]!r} but this loader has "
                                 f"{key}={getattr(self, key)!r}")
        self.seed = state["seed"]
        self._epoch = state["epoch"]
        self._resume = {k: copy.deepcopy(state[k])
                        for k in ("epoch", "delivered", "active", "pointer")}

    def _workers(self):
        if self._pool is None or not self._pool.alive():
            ctx = mp.get_context(self.multiprocessing_context)
            self._pool = _WorkerPool(self, ctx)
        return self._pool

    def close(self) -> None:
        """Stop the worker processes (also done when the loader is collected)."""
        if self._live is not None:
            self._live.close()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()


def _pickle_check(pipe, call):
    """Name the pipe and attribute that stop the pipeline from pickling (spawned workers)."""
    try:
        pickle.dumps(pipe)
    except Exception as e:
        for node in list_datapipes(pipe):
            for name, value in vars(node).items():
                if isinstance(value, _DataPipeBase) or any(value is s for s in sources(node)):
                    continue
                try:
                    pickle.dumps(value)
                except Exception:
                    raise TypeError(f"{call}: {node!r}.{name} cannot be pickled for the worker "
                                    f"processes ({e}); use a module-level function or a "
                                    "picklable object") from None
        raise TypeError(f"{call}: the pipeline cannot be pickled for the worker processes: "
                        f"{e}") from None


class _WorkerPool:
    """One process per worker, each with a bounded result queue and a command queue."""

    def __init__(self, loader: DataLoader, ctx):
        self.loader = loader
        n = loader.num_workers
        if ctx.get_start_method() != "fork":
            _pickle_check(loader.pipeline, f"DataLoader(num_workers={n})")
        self.generation = ctx.Value("q", 0, lock=False)
        self.results = [ctx.Queue(loader.prefetch_factor) for _ in range(n)]
        self.commands = [ctx.Queue() for _ in range(n)]
        self.procs = []
        for w in range(n):
            p = ctx.Process(target=_worker_loop, daemon=True, name=f"DataLoaderWorker-{w}",
                            args=(loader.pipeline, w, n, loader.rank, loader.world_size,
                                  self.results[w], self.commands[w], self.generation,
                                  loader.worker_init_fn))
            p.start()
            self.procs.append(p)

    def alive(self) -> bool:
        return all(p.is_alive() for p in self.procs)

    def start_epoch(self, epoch, state) -> int:
        self.generation.value += 1
        gen = self.generation.value
        for w in range(len(self.procs)):
            if w in state["active"]:
                self.commands[w].put((gen, epoch, self.loader.seed, state["delivered"][w]))
        return gen

    def get(self, w, gen):
        """The next message of worker ``w`` for generation ``gen``."""
        timeout = self.loader.timeout
        start = time.monotonic()
        while True:
            try:
                msg = self.results[w].get(timeout=0.1)
            except queue.Empty:
                proc = self.procs[w]
                if not proc.is_alive():
                    try:
                        msg = self.results[w].get(timeout=0.5)
                    except queue.Empty:
                        raise DataLoaderWorkerError(
                            f"DataLoader worker {w} (rank {self.loader.rank}, pid {proc.pid}) "
                            f"exited unexpectedly with exit code {proc.exitcode}") from None
                elif timeout and time.monotonic() - start > timeout:
                    raise DataLoaderWorkerError(
                        f"DataLoader timed out after {timeout} s waiting for worker {w} "
                        f"(rank {self.loader.rank}, pid {proc.pid})") from None
                else:
                    continue
            if msg[1] == gen:
                return msg

    def cancel(self) -> None:
        self.generation.value += 1

    def shutdown(self) -> None:
        self.generation.value += 1
        for q in self.commands:
            with contextlib.suppress(Exception):
                q.put(None)
        deadline = time.monotonic() + 0.5
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(1.0)
        for q in self.results + self.commands:
            q.close()
            q.cancel_join_thread()


class _Epoch:
    """One pass over the data; the iterator ``iter(loader)`` returns."""

    def __init__(self, loader: DataLoader, state: dict):
        self.loader = loader
        self.epoch = state["epoch"]
        self.delivered = list(state["delivered"])
        self.active = list(state["active"])
        self.pointer = state["pointer"]
        self.finished = False
        self.count = sum(self.delivered)
        self.bar = None
        if loader.progress:
            try:
                total = len(loader)
            except TypeError:
                total = None
            self.bar = progress_bar("DataLoader", total)
        if loader.num_workers == 0:
            if loader._local_pipe is None:
                loader._local_pipe = _copy(loader.pipeline)
            pipe = loader._instance(loader.rank, 0, self.epoch, loader._local_pipe)
            self.local_pipe, self.it = pipe, None  # started at the first next()
            self.pool = None
        else:
            self.pool = loader._workers()
            self.gen = self.pool.start_epoch(self.epoch, state)

    def position(self) -> dict:
        return {"epoch": self.epoch, "delivered": list(self.delivered),
                "active": list(self.active), "pointer": self.pointer}

    def __iter__(self):
        return self

    def _next_local(self):
        try:
            if self.it is None:
                self.it = _advance(self.local_pipe, self.delivered[0])
            return True, next(self.it)
        except StopIteration:
            return False, None
        except Exception as e:
            where = _failing_pipe(e.__traceback__)
            e.add_note(f"DataLoader (main process, rank {self.loader.rank}): raised in "
                       f"{where!r} at output {self.delivered[0]} of the epoch")
            raise

    def _next_worker(self, w):
        msg = self.pool.get(w, self.gen)
        kind = msg[0]
        if kind == "item":
            return True, pickle.loads(msg[2])
        if kind == "end":
            return False, None
        _, _, index, where, summary, text = msg
        self.close()
        raise DataLoaderWorkerError(
            f"DataLoader worker {w} (rank {self.loader.rank}) raised in {where} at output "
            f"{index} of its shard: {summary}\n\nOriginal traceback in the worker:\n{text}")

    def __next__(self):
        limit = self.loader._limit
        while self.active and not self.finished:
            if limit is not None and self.count >= limit:
                break
            w = self.active[self.pointer]
            ok, item = self._next_local() if self.pool is None else self._next_worker(w)
            if not ok:
                del self.active[self.pointer]
                if self.active:
                    self.pointer %= len(self.active)
                continue
            self.delivered[w] += 1
            self.count += 1
            self.pointer = (self.pointer + 1) % len(self.active)
            if self.bar is not None:
                self.bar.update(1)
            return item
        self.close()
        raise StopIteration

    def close(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.bar is not None:
            self.bar.close()
        if self.pool is not None:
            if self.loader.persistent_workers:
                self.pool.cancel()
            else:
                self.pool.shutdown()
                if self.loader._pool is self.pool:
                    self.loader._pool = None
        if self.loader._live is self:
            # the state after a finished epoch is the start of the next one
            self.loader._live = None

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()

