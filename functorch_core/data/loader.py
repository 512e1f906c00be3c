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
import inspect
import multiprocessing as mp
import os
import pickle
import queue
import traceback
import warnings

import numpy as np

from . import distributed, loader_state, mapstyle
from .collation import default_collate
from .datapipe import IterDataPipe, MapDataPipe, _DataPipeBase
from .graph import list_datapipes, sharding_pipes, sources
from .iter.callable import Mapper
from .iter.combinatorics import Shuffler
from .iter.grouping import Batcher
from .iter.sharding import SHARDING_PRIORITIES, ShardingFilter
from .iter.util import FullSync
from .workers import (
    DataLoaderWorkerError,
    Epoch,
    WorkerInfo,
    enter_worker,
    get_worker_info,
    main_is_gone,
    next_command,
    receive,
    seed_of,
    stop,
)

__all__ = ["DataLoader", "DataLoaderWorkerError", "WorkerInfo", "get_worker_info"]

def _copy(pipe):
    """A deep copy of a pipeline, or the pipeline itself if it holds something uncopyable."""
    try:
        return copy.deepcopy(pipe)
    except (TypeError, pickle.PicklingError):
        return pipe


def _is_user_sharding(node) -> bool:
    """A pipe of the user's with an ``apply_sharding`` method (torch and TorchData accept it)."""
    return not isinstance(node, ShardingFilter) and inspect.ismethod(
        getattr(node, "apply_sharding", None))


def _shard_user_pipe(node, instances: int, instance: int) -> None:
    """One ``apply_sharding`` call over every instance, as torch's DataLoader makes it."""
    if len(inspect.signature(node.apply_sharding).parameters) < 3:
        node.apply_sharding(instances, instance)
    else:
        node.apply_sharding(instances, instance, sharding_group=SHARDING_PRIORITIES.DEFAULT)


def _before_sharding(sink) -> set[int]:
    """Ids of the pipes that feed some sharding pipe (their output is shared by instances)."""
    out: set[int] = set()
    for node in list_datapipes(sink):
        if isinstance(node, ShardingFilter) or _is_user_sharding(node):
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
        elif _is_user_sharding(node):
            _shard_user_pipe(node, world_size * max(num_workers, 1),
                             rank * max(num_workers, 1) + worker_id)
    shared = _before_sharding(pipe)
    instance = rank * max(num_workers, 1) + worker_id
    k = 0
    for node in nodes:
        if node._is_random:
            words = (seed, epoch, k) if id(node) in shared else (seed, epoch, k, instance + 1)
            node.set_seed(seed_of(*words))
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
    initialized = False  # worker_init_fn runs once per process, as in torch
    parent = os.getppid()
    while (cmd := next_command(commands, parent)) is not None:
        gen, epoch, seed, skip = cmd
        local = pipe
        _prepare_instance(local, rank=rank, world_size=world_size, worker_id=worker_id,
                          num_workers=num_workers, seed=seed, epoch=epoch)
        enter_worker(seed_of(seed, epoch, rank * num_workers + worker_id + 1), id=worker_id,
                     num_workers=num_workers, rank=rank, world_size=world_size, dataset=local)

        def put(msg, gen=gen):
            while generation.value == gen:
                try:
                    results.put(msg, timeout=0.1)
                    return True
                except queue.Full:
                    if main_is_gone(parent):
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


def _check_arguments(iterable, batch_size, shuffle, sampler, batch_sampler, num_workers,
                     drop_last, timeout, prefetch_factor, persistent_workers, rank, world_size):
    """torch's argument checks, with its messages (prefixed by the call)."""
    call = f"DataLoader(num_workers={num_workers}, rank={rank}, world_size={world_size})"
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"{call}: num_workers option should be non-negative; use "
                         "num_workers=0 to disable multiprocessing.")
    if not isinstance(world_size, int) or world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"{call}: expected 0 <= rank < world_size")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
        raise ValueError(f"DataLoader(batch_size={batch_size!r}): expected a positive int")
    if timeout < 0:
        raise ValueError(f"DataLoader(timeout={timeout}): timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(f"DataLoader(num_workers=0, prefetch_factor={prefetch_factor}): "
                         "prefetch_factor option could only be specified in multiprocessing. "
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or
                                        prefetch_factor < 1):
        raise ValueError(f"DataLoader(prefetch_factor={prefetch_factor!r}): expected an int >= 1")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader(persistent_workers=True, num_workers=0): "
                         "persistent_workers option needs num_workers > 0")
    if iterable:
        for name, value in (("sampler", sampler), ("batch_sampler", batch_sampler)):
            if value is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                                 f"option, but got {name}={value!r}")
        return
    if sampler is not None and shuffle:
        raise ValueError("DataLoader(sampler=..., shuffle=True): sampler option is mutually "
                         "exclusive with shuffle")
    if batch_sampler is not None and (batch_size not in (None, 1) or shuffle or
                                      sampler is not None or drop_last):
        raise ValueError("DataLoader(batch_sampler=...): batch_sampler option is mutually "
                         "exclusive with batch_size, shuffle, sampler, and drop_last")
    if batch_sampler is None and batch_size is None and drop_last:
        raise ValueError("DataLoader(batch_size=None, drop_last=True): batch_size=None option "
                         "disables auto-batching and is mutually exclusive with drop_last")


def _build_pipeline(loader, data):
    """The iterable pipeline of a loader: shuffle settings, sharding, batching, collation."""
    pipe = _copy(data)
    if loader.shuffle is not None:
        shufflers = [n for n in list_datapipes(pipe) if hasattr(n, "set_shuffle")]
        if loader.shuffle and not shufflers:
            warnings.warn("DataLoader(shuffle=True): the datapipe has no Shuffler; one is "
                          "added at the end (its default buffer_size may be too small)",
                          stacklevel=3)
            pipe = Shuffler(pipe)
            shufflers = [pipe]
        for node in shufflers:
            node.set_shuffle(loader.shuffle)
    needed = set()
    if loader.world_size > 1:
        needed.add(SHARDING_PRIORITIES.DISTRIBUTED)
    if loader.num_workers > 1:
        needed.add(SHARDING_PRIORITIES.MULTIPROCESSING)
    for node in list_datapipes(pipe):
        if isinstance(node, ShardingFilter) or _is_user_sharding(node):
            flt = getattr(node, "sharding_group_filter", None)
            needed -= set(SHARDING_PRIORITIES) if flt is None else {flt}
    for group in sorted(needed):
        pipe = ShardingFilter(pipe, sharding_group_filter=group)
    for group in (SHARDING_PRIORITIES.DISTRIBUTED, SHARDING_PRIORITIES.MULTIPROCESSING):
        try:
            sharding_pipes(pipe, group)
        except RuntimeError as e:
            raise ValueError(f"DataLoader(datapipe): {e}") from None
    if loader.batch_size is not None:
        pipe = Batcher(pipe, loader.batch_size, drop_last=loader.drop_last)
    if loader.collate_fn is not None:
        pipe = Mapper(pipe, loader.collate_fn)
    return pipe


def _fullsync_limit(loader):
    """With FullSync across ranks: the least count of outputs any rank has; else None.
    Across the processes of the initialised world the ranks agree item by item instead
    (``loader._sync``: an all-reduce of "I have an item" flags), and no length is needed."""
    loader._sync = False
    if loader.pipeline is None or loader.world_size == 1 or not any(
            isinstance(p, FullSync) for p in list_datapipes(loader.pipeline)):
        return None
    if distributed.spans(loader.world_size):
        loader._sync = True
        return None
    counts = []
    for r in range(loader.world_size):
        try:
            counts.append(sum(len(loader._instance(r, w, 0))
                              for w in range(max(loader.num_workers, 1))))
        except TypeError as e:
            raise TypeError(f"DataLoader(world_size={loader.world_size}) with FullSync: every "
                            f"rank's length is needed to stop the ranks together: {e}"
                            ) from None
    return min(counts)


class DataLoader:
    """Load a DataPipe or a map-style dataset in batches, in worker processes, resumably.

    **Iterable DataPipes.** Every sample of an epoch is delivered exactly once
    across ``world_size`` ranks and ``num_workers`` workers per rank: the
    pipeline is sharded at its ``sharding_filter`` (or a pipe of the user's
    with ``apply_sharding``; one ``sharding_filter`` is appended at the end if
    none shards the ranks and workers), and random pipes before the sharding
    get the same seed in every instance, so the shards split one shuffled
    order. With ``batch_size`` each worker batches its own shard, so with
    ``drop_last=True`` each instance drops its own short tail.

    **Map-style datasets** (``__getitem__`` and ``__len__``, or a
    ``MapDataPipe``) are read as torch's ``DataLoader`` reads them: the main
    process draws indices from ``sampler`` (this rank's every
    ``world_size``-th), groups them with ``batch_sampler`` and the workers
    fetch and collate each batch, delivered in sampler order (only the last
    batch is short).

    Args:
        dataset (IterDataPipe, MapDataPipe or a map-style dataset): the data.
        batch_size (int, optional): batch this many samples and collate them.
            Default: ``None`` (no batching; torch's default is ``1``).
        shuffle (bool, optional): for a DataPipe, turn its shuffle pipes on or
            off (``True`` with none appends a ``Shuffler`` and warns); for a
            map-style dataset, sample in a random order. Default: ``None``
            (leave them as they are; sequential order).
        sampler (iterable of int, optional): the indices of a map-style
            dataset, e.g. a ``RandomSampler``. Default: ``None`` (sequential,
            or random with ``shuffle=True``, seeded by ``seed`` and the epoch).
        batch_sampler (iterable of lists of int, optional): the batches of
            indices of a map-style dataset; excludes ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``. Default: ``None``.
        num_workers (int): worker processes per rank; ``0`` (default) loads in
            this process.
        collate_fn (callable, optional): merges a batch. Default: ``None``,
            which is ``default_collate`` (a pytree of NumPy arrays) when batching
            and no conversion otherwise, as in torch; ``collate_fn=list`` keeps
            a batch a list.
        pin_memory (bool): accepted for torch's signature; outputs are NumPy
            arrays in ordinary host memory, so ``True`` only warns. Default: ``False``.
        drop_last (bool): drop the short last batch (of each instance, for a
            DataPipe). Default: ``False``.
        timeout (float): seconds to wait for one output from a worker before
            raising; ``0`` (default) waits as long as the worker is alive.
        worker_init_fn (callable, optional): called as ``fn(worker_id)`` once
            in each worker process, after seeding, before it loads; inside it
            ``get_worker_info()`` gives the id, ``num_workers``, seed and
            dataset. Default: ``None``.
        multiprocessing_context (str or context, optional): ``"fork"``,
            ``"spawn"``, ``"forkserver"`` or a ``multiprocessing`` context.
            Default: ``None`` (the platform's default).
        generator (numpy.random.Generator or int, optional): draws ``seed``
            when ``seed`` is ``None``. Default: ``None`` (fresh entropy).
        prefetch_factor (int, optional): outputs each worker may hold ready;
            only with ``num_workers > 0``. Default: ``None`` (``2``).
        persistent_workers (bool): keep the worker processes between epochs
            (needs ``num_workers > 0``). Default: ``False``.
        pin_memory_device (str): accepted for torch's signature. Default: ``""``.
        seed (int, optional): the base seed; with ``set_epoch`` it fixes every
            random draw. Default: ``None`` (drawn once at construction; ranks
            > 1 that shuffle must pass one).
        rank (int, optional): this process's rank. Default: ``None`` (the rank of
            ``functorch_core.distributed``'s world once ``init()`` ran, else ``0``).
        world_size (int, optional): how many ranks share the data. Default:
            ``None`` (the initialised world's size, else ``1``).
        progress (bool): show a progress bar (tqdm if importable, else plain
            text on stderr). Default: ``False``.

    Example::

        >>> dp = IterableWrapper(range(10)).shuffle().sharding_filter().map(float)
        >>> loader = DataLoader(dp, batch_size=4, num_workers=2, seed=0)
        >>> for batch in loader:
        ...     state = loader.state_dict()     # at any point
        ...     break
        >>> resumed = DataLoader(dp, batch_size=4, num_workers=2, seed=0)
        >>> resumed.load_state_dict(state)      # the rest of that epoch, same order
        >>> [len(b) for b in DataLoader(list(range(10)), batch_size=4, num_workers=2)]
        [4, 4, 2]
    """

    def __init__(self, dataset, batch_size=None, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 seed=None, rank=None, world_size=None, progress=False):
        rank, world_size = distributed.ranks(rank, world_size)
        iterable = isinstance(dataset, IterDataPipe)
        if not iterable and not (isinstance(dataset, MapDataPipe) or (
                hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__"))):
            raise TypeError(f"DataLoader(dataset): expected an IterDataPipe, a MapDataPipe or a "
                            f"dataset with __getitem__ and __len__, got {type(dataset).__name__}")
        _check_arguments(iterable, batch_size, shuffle, sampler, batch_sampler, num_workers,
                         drop_last, timeout, prefetch_factor, persistent_workers, rank,
                         world_size)
        if pin_memory:
            warnings.warn("DataLoader(pin_memory=True): the outputs are NumPy arrays in host "
                          "memory and are not pinned", stacklevel=2)
        self.dataset = dataset
        self.batch_size = None if batch_sampler is not None else batch_size
        self.shuffle, self.num_workers = shuffle, num_workers
        batching = self.batch_size is not None or batch_sampler is not None
        # as torch: None collates batches with default_collate and passes samples as they are
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batching else None)
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.persistent_workers = persistent_workers
        self.timeout = timeout
        self.rank = rank
        self.world_size = world_size
        self.progress = progress
        self.drop_last = drop_last
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self._user_batches = batch_sampler is not None
        self._seeded_sampler = not iterable and sampler is None and bool(shuffle)
        if iterable:
            self.sampler = self.batch_sampler = None
            self.pipeline = _build_pipeline(self, dataset)
            randoms = [p for p in list_datapipes(self.pipeline) if p._is_random and
                       getattr(p, "_enabled", True)]
        else:
            self.pipeline = None
            self.sampler, self.batch_sampler = mapstyle.samplers(
                dataset, shuffle, sampler, batch_sampler, batch_size, drop_last)
            randoms = [self.sampler] if self._seeded_sampler else []
        if seed is None and world_size > 1 and randoms:
            raise ValueError(f"DataLoader(world_size={world_size}): the pipeline has random "
                             f"pipes ({randoms[0]!r}); ranks must share a seed to shuffle the "
                             "same way, so pass seed=")
        if seed is None:
            seed = (np.random.SeedSequence().entropy if generator is None else
                    np.random.default_rng(generator).integers(2**62))
        self.seed = int(seed) % 2**62
        self._epoch = 0
        self._resume: dict | None = None
        self._live = None
        self._pool = None
        self._local_pipe = None  # the pipeline copy iterated when num_workers == 0
        self._limit = _fullsync_limit(self)

    def _instance(self, rank, worker_id, epoch, pipe=None):
        pipe = _copy(self.pipeline) if pipe is None else pipe
        return _prepare_instance(pipe, rank=rank,
                                 world_size=self.world_size, worker_id=worker_id,
                                 num_workers=self.num_workers, seed=self.seed, epoch=epoch)

    def __len__(self) -> int:
        if self._limit is not None:
            return self._limit
        if self.pipeline is None:
            return mapstyle.num_batches(self)
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
        state = self._resume or self._fresh_state()
        self._resume = None
        self._epoch = state["epoch"] + 1
        self._live = (_Epoch if self.pipeline is not None else mapstyle.MapEpoch)(self, state)
        return self._live

    def _fresh_state(self):
        n = max(self.num_workers, 1)
        return {"epoch": self._epoch, "delivered": [0] * n, "active": list(range(n)),
                "pointer": 0}

    def state_dict(self) -> dict:
        """Where the loader is: load it into a new loader to continue from here.

        Inside an epoch it names the outputs delivered so far (outputs the
        workers had prefetched but not delivered are not counted, so they come
        again); between epochs it names the start of the next one. A map-style
        dataset resumes by skipping the delivered batches of the sampler's
        order, so it is exact when the sampler repeats its order (the default
        samplers do: they are seeded by ``seed`` and the epoch).

        Raises:
            RuntimeError: a pipe cannot replay its iteration (it names the pipe
                and why).
        """
        for node in [] if self.pipeline is None else list_datapipes(self.pipeline):
            if node._resume_blocker:
                raise RuntimeError(f"DataLoader.state_dict(): {node!r} cannot be resumed: "
                                   f"{node._resume_blocker}")
        if self._resume is not None:
            pos = self._resume
        elif self._live is not None and not self._live.finished:
            pos = self._live.position()
        else:
            pos = self._fresh_state()
        return {"version": loader_state.VERSION, "seed": self.seed, "rank": self.rank,
                "world_size": self.world_size, "num_workers": self.num_workers,
                "batch_size": self.batch_size, "drop_last": self.drop_last,
                "epoch": pos["epoch"], "delivered": list(pos["delivered"]),
                "active": list(pos["active"]), "pointer": pos["pointer"],
                "reshards": copy.deepcopy(pos.get("reshards", []))}

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state`` (from ``state_dict``) at the next iteration.

        The loader must be built like the one that saved the state (same
        pipeline, ``num_workers``, ``rank``, ``world_size``, ``batch_size``).
        """
        loader_state.check_fields(state)
        for key in ("rank", "world_size", "num_workers", "batch_size", "drop_last"):
            if state[key] != getattr(self, key):
                raise ValueError(f"DataLoader.load_state_dict: the state was saved with "
                                 f"{key}={state[key]!r} but this loader has "
                                 f"{key}={getattr(self, key)!r}")
        loader_state.check_progress(state, max(self.num_workers, 1))
        if state.get("reshards") and self.pipeline is not None:
            raise ValueError("DataLoader.load_state_dict: the state was re-sharded from "
                             "another world size, which only a map-style dataset resumes")
        self.seed = state["seed"]
        self._epoch = state["epoch"]
        self._resume = {k: copy.deepcopy(state[k])
                        for k in ("epoch", "delivered", "active", "pointer")}
        self._resume["reshards"] = copy.deepcopy(state.get("reshards", []))

    def _workers(self):
        if self._pool is None or not self._pool.alive():
            ctx = self.multiprocessing_context
            ctx = mp.get_context(ctx) if ctx is None or isinstance(ctx, str) else ctx
            self._pool = (_WorkerPool(self, ctx) if self.pipeline is not None else
                          mapstyle.MapWorkerPool(self, ctx, os.getpid()))
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
        return receive(self.results[w], self.procs[w], self.loader.timeout,
                       f"worker {w} (rank {self.loader.rank})", lambda m: m[1] == gen)

    def cancel(self) -> None:
        self.generation.value += 1

    def shutdown(self) -> None:
        self.generation.value += 1
        stop(self.procs, self.commands, self.results)


class _Epoch(Epoch):
    """One pass over the data; the iterator ``iter(loader)`` returns."""

    def __init__(self, loader: DataLoader, state: dict):
        self.loader = loader
        self.epoch = state["epoch"]
        self.delivered = list(state["delivered"])
        self.active = list(state["active"])
        self.pointer = state["pointer"]
        self.finished = False
        self.count = sum(self.delivered)
        self.bar = mapstyle.progress(loader)
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
        synced = not self.loader._sync or self.finished   # FullSync's flag sent this step
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
            if not synced and not distributed.all_have(True):
                synced = True
                break
            self.delivered[w] += 1
            self.pointer = (self.pointer + 1) % len(self.active)
            return self._delivered(item)
        if not synced:
            distributed.all_have(False)
        self.close()
        raise StopIteration
