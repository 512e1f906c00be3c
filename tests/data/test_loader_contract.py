"""torch's DataLoader contract for map-style datasets, and TorchData's for custom sharding pipes.

What torch does is written down here (torch is not needed): for a map-style dataset the main
process iterates the batch sampler and the workers only fetch, so only the last batch is short;
the argument checks and their messages; ``get_worker_info()`` in ``worker_init_fn``.
Every test runs under an alarm, so a hung worker fails the test instead of the run.
"""

import doctest
import multiprocessing as mp
import os
import signal
import sys
import warnings

import numpy as np
import pytest

import functorch_core.data.loader as loader_module
import functorch_core.data.sampler as sampler_module
import functorch_core.data.workers as workers_module
from functorch_core.data import (
    DataLoader,
    DataLoaderWorkerError,
    IterableWrapper,
    IterDataPipe,
    get_worker_info,
)
from functorch_core.data.sampler import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

FORK = "fork" if sys.platform != "win32" else "spawn"


@pytest.fixture(autouse=True)
def bounded():
    def expire(signum, frame):
        raise TimeoutError("the test ran past its 60 s bound")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def lists(loader):
    return [b.tolist() if isinstance(b, np.ndarray) else b for b in loader]


class Squares:
    """A map-style dataset: ``ds[i] == i * i``."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Tagged(Squares):
    """``ds[i] == (worker id, i)``."""

    def __getitem__(self, i):
        info = get_worker_info()
        return (-1 if info is None else info.id, i)


# -- batching in the main process ---------------------------------------------------------


@pytest.mark.parametrize("num_workers", [0, 1, 2, 3])
def test_map_style_batches_like_torch_only_the_last_is_short(num_workers):
    ctx = {"multiprocessing_context": FORK} if num_workers else {}
    loader = DataLoader(list(range(10)), batch_size=4, num_workers=num_workers, timeout=30, **ctx)
    assert lists(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3
    dropped = DataLoader(list(range(10)), batch_size=4, drop_last=True, num_workers=num_workers,
                         timeout=30, **ctx)
    assert lists(dropped) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(dropped) == 2
    single = DataLoader(Squares(5), num_workers=num_workers, timeout=30, **ctx)
    assert lists(single) == [0, 1, 4, 9, 16] and len(single) == 5


def test_workers_take_batches_in_turn_and_delivery_keeps_sampler_order():
    loader = DataLoader(Tagged(9), batch_size=2, num_workers=3, timeout=30,
                        collate_fn=list, multiprocessing_context=FORK)
    batches = list(loader)
    assert [[i for _, i in b] for b in batches] == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    assert [b[0][0] for b in batches] == [0, 1, 2, 0, 1]  # batch k from worker k % 3


def test_shuffle_draws_indices_in_the_main_process_so_workers_do_not_change_the_order():
    def make(num_workers, **kw):
        ctx = {"multiprocessing_context": FORK} if num_workers else {}
        return DataLoader(list(range(23)), batch_size=5, shuffle=True, num_workers=num_workers,
                          timeout=30, **ctx, **kw)

    e0 = lists(make(0, seed=3))
    assert lists(make(2, seed=3)) == e0
    flat = [x for b in e0 for x in b]
    assert sorted(flat) == list(range(23)) and flat != list(range(23))
    assert [len(b) for b in e0] == [5, 5, 5, 5, 3]
    loader = make(2, seed=3)
    first, second = lists(loader), lists(loader)
    assert first == e0 and second != first
    loader.set_epoch(1)
    assert lists(loader) == second
    # generator= draws the seed: the same generator state gives the same order
    g1 = lists(make(0, generator=np.random.default_rng(7)))
    assert g1 == lists(make(0, generator=np.random.default_rng(7)))
    assert g1 != lists(make(0, generator=np.random.default_rng(8)))


def test_sampler_and_batch_sampler():
    ds = Squares(8)
    assert lists(DataLoader(ds, sampler=[3, 1, 2], batch_size=2)) == [[9, 1], [4]]
    got = lists(DataLoader(ds, sampler=SubsetRandomSampler([1, 5, 6], generator=0)))
    assert sorted(got) == [1, 25, 36]
    custom = [[0, 1, 2], [5], [3, 4]]
    for num_workers in (0, 2):
        ctx = {"multiprocessing_context": FORK} if num_workers else {}
        loader = DataLoader(ds, batch_sampler=custom, num_workers=num_workers, timeout=30, **ctx)
        assert lists(loader) == [[0, 1, 4], [25], [9, 16]] and len(loader) == 3
    # batch_size=1 is torch's default and goes with a batch_sampler
    assert lists(DataLoader(ds, batch_sampler=custom, batch_size=1))[1] == [25]
    assert len(DataLoader(ds, sampler=SequentialSampler(range(5)), batch_size=2)) == 3


def test_torch_argument_errors():
    ds, it = Squares(4), IterableWrapper(range(4))
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0, 1], shuffle=True)
    bad = [dict(batch_size=2), dict(shuffle=True), dict(sampler=[0]), dict(drop_last=True)]
    for kw in bad:
        with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with "
                                             "batch_size, shuffle, sampler, and drop_last"):
            DataLoader(ds, batch_sampler=[[0]], **kw)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching and "
                                         "is mutually exclusive with drop_last"):
        DataLoader(ds, drop_last=True)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in "
                                         "multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(ds, timeout=-1)
    for name in ("sampler", "batch_sampler"):
        with pytest.raises(ValueError, match=f"DataLoader with IterableDataset: expected "
                                             f"unspecified {name} option"):
            DataLoader(it, **{name: [0]})
    with pytest.raises(TypeError, match=r"DataLoader\(dataset\): expected an IterDataPipe"):
        DataLoader(42)
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2
    assert DataLoader(ds).prefetch_factor is None


def test_prefetch_factor_bounds_the_batches_sent_ahead():
    loader = DataLoader(list(range(40)), batch_size=2, num_workers=2, prefetch_factor=3,
                        timeout=30, multiprocessing_context=FORK)
    it = iter(loader)
    for _ in range(4):
        next(it)
        assert it.sent - it.count == 6  # prefetch_factor * num_workers in flight
    assert len([next(it) for _ in range(16)]) == 16
    with pytest.raises(StopIteration):
        next(it)


def test_pin_memory_is_accepted_and_says_it_does_not_pin():
    with pytest.warns(UserWarning, match="not pinned"):
        loader = DataLoader(list(range(4)), batch_size=2, pin_memory=True)
    assert lists(loader) == [[0, 1], [2, 3]]


# -- workers: init, info, persistence, errors ---------------------------------------------


def check_info(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    assert isinstance(info.dataset, Tagged) and len(info.dataset) == 6
    np.random.seed(0)  # user code may touch the global RNG


def seed_of_worker(i):
    info = get_worker_info()
    return (info.id, info.seed)


class WorkerSeeds(Squares):
    def __getitem__(self, i):
        return seed_of_worker(i)


def test_worker_init_fn_and_get_worker_info_for_map_style():
    loader = DataLoader(Tagged(6), batch_size=3, num_workers=2, worker_init_fn=check_info,
                        collate_fn=list, timeout=30, multiprocessing_context=FORK)
    assert [b[0][0] for b in loader] == [0, 1]
    assert get_worker_info() is None
    seeds = [b[0] for b in DataLoader(WorkerSeeds(4), batch_size=1, num_workers=2, seed=5,
                                      collate_fn=list, timeout=30,
                                      multiprocessing_context=FORK)]
    (w0, s0), (w1, s1) = seeds[0], seeds[1]
    assert (w0, w1) == (0, 1) and s1 == s0 + 1  # torch: base_seed + worker id


def test_persistent_workers_keep_their_processes_and_an_abandoned_epoch_is_dropped():
    loader = DataLoader(list(range(30)), batch_size=4, num_workers=2, persistent_workers=True,
                        timeout=30, multiprocessing_context=mp.get_context(FORK))
    it = iter(loader)
    next(it)
    pids = [p.pid for p in loader._pool.procs]
    full = lists(loader)
    assert [x for b in full for x in b] == list(range(30))
    assert [p.pid for p in loader._pool.procs] == pids
    loader.close()
    assert all(not p.is_alive() for p in mp.active_children() if p.pid in pids)


class FailsAt7(Squares):
    def __getitem__(self, i):
        if i == 7:
            raise KeyError("no seven")
        return i


def die(worker_id):
    if worker_id == 1:
        os._exit(4)


def test_worker_errors_name_the_worker_batch_and_traceback():
    loader = DataLoader(FailsAt7(10), batch_size=2, num_workers=2, timeout=30,
                        multiprocessing_context=FORK)
    with pytest.raises(DataLoaderWorkerError) as info:
        lists(loader)
    msg = str(info.value)
    assert "worker 1 (rank 0) raised fetching batch 3 of the epoch: KeyError" in msg
    assert "Original traceback in the worker" in msg and "__getitem__" in msg
    with pytest.raises(DataLoaderWorkerError, match=r"worker 1 \(rank 0\), pid \d+, exited "
                                                    r"unexpectedly with exit code 4"):
        lists(DataLoader(Squares(10), batch_size=2, num_workers=2, worker_init_fn=die,
                         timeout=30, multiprocessing_context=FORK))


# -- ranks and resuming --------------------------------------------------------------------


def test_ranks_split_the_sampler_and_each_batches_its_share():
    got = []
    for rank in range(3):
        loader = DataLoader(list(range(20)), batch_size=3, shuffle=True, seed=2, rank=rank,
                            world_size=3)
        batches = lists(loader)
        assert len(batches) == len(loader)
        assert all(len(b) == 3 for b in batches[:-1])
        got += [x for b in batches for x in b]
    assert sorted(got) == list(range(20))
    with pytest.raises(ValueError, match="ranks must share a seed"):
        DataLoader(list(range(4)), shuffle=True, world_size=2)


class Counted(Squares):
    fetched = 0

    def __getitem__(self, i):
        Counted.fetched += 1
        return i


@pytest.mark.parametrize("num_workers", [0, 2])
def test_map_style_resume_continues_with_the_rest_without_refetching(num_workers):
    ctx = {"multiprocessing_context": FORK} if num_workers else {}

    def make():
        return DataLoader(Counted(21), batch_size=4, shuffle=True, seed=9,
                          num_workers=num_workers, timeout=30, **ctx)

    full = lists(make())
    loader = make()
    it = iter(loader)
    first = [next(it).tolist() for _ in range(2)]
    state = loader.state_dict()
    loader.close()
    resumed = make()
    resumed.load_state_dict(state)
    Counted.fetched = 0
    assert first + lists(resumed) == full
    if num_workers == 0:
        assert Counted.fetched == 21 - 8  # the delivered batches' indices are skipped, not read
    # between epochs the state names the start of the next one
    assert resumed.state_dict()["epoch"] == 1


# -- iterable DataPipes: custom sharding, shuffle=True ----------------------------------------


class TwoArgSharding(IterDataPipe):
    """A user-written sharding pipe, as in torch's tests: ``apply_sharding(n, i)``."""

    def __init__(self, dp):
        self.dp, self.n, self.i = dp, 1, 0

    def apply_sharding(self, num_of_instances, instance_id):
        self.n, self.i = num_of_instances, instance_id

    def __iter__(self):
        for k, x in enumerate(self.dp):
            if k % self.n == self.i:
                yield x


class GroupedSharding(TwoArgSharding):

    def apply_sharding(self, num_of_instances, instance_id, sharding_group=None):
        super().apply_sharding(num_of_instances, instance_id)


@pytest.mark.parametrize("kind", [TwoArgSharding, GroupedSharding])
def test_a_user_sharding_pipe_is_accepted_and_shards_exactly_once(kind):
    got = []
    for rank in range(2):
        dp = kind(IterableWrapper(range(25))).map(int)
        loader = DataLoader(dp, num_workers=3, rank=rank, world_size=2, timeout=30,
                            multiprocessing_context=FORK)
        got += lists(loader)
    assert sorted(got) == list(range(25))
    assert sorted(lists(DataLoader(kind(IterableWrapper(range(7)))))) == list(range(7))


def test_shuffle_true_without_a_shuffler_appends_one_and_warns():
    with pytest.warns(UserWarning, match="no Shuffler; one is added"):
        loader = DataLoader(IterableWrapper(range(30)), shuffle=True, seed=1)
    out = lists(loader)
    assert sorted(out) == list(range(30)) and out != list(range(30))
    with pytest.warns(UserWarning, match="no Shuffler"):
        ranks = [lists(DataLoader(IterableWrapper(range(30)), shuffle=True, seed=1, rank=r,
                                  world_size=2, num_workers=2, timeout=30,
                                  multiprocessing_context=FORK)) for r in range(2)]
    assert sorted(ranks[0] + ranks[1]) == list(range(30))  # one shuffled order, split once
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(IterableWrapper(range(30)).shuffle(), shuffle=True)
        DataLoader(IterableWrapper(range(30)), shuffle=False)


# -- samplers ----------------------------------------------------------------------------


def test_samplers():
    assert doctest.testmod(sampler_module).failed == 0
    assert list(SequentialSampler("abc")) == [0, 1, 2]
    perm = list(RandomSampler(range(6), generator=1))
    assert sorted(perm) == list(range(6))
    w = WeightedRandomSampler([1.0, 0.0, 3.0, 0.0], 4000, generator=0)
    drawn = np.bincount(list(w), minlength=4)
    assert drawn[1] == drawn[3] == 0 and len(w) == 4000
    # index 2 has probability 3/4: the binomial standard deviation is sqrt(4000 * 3/16) ~ 27
    assert abs(drawn[2] - 3000) < 5 * 27.4
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False, generator=0)) == [0, 1, 2]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)
    with pytest.raises(ValueError, match="only 1 weights are non-zero"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 1)
    assert [len(b) for b in BatchSampler(range(7), 3, False)] == [3, 3, 1]


def test_loader_docstrings_run():
    result = doctest.testmod(loader_module, extraglobs={"IterableWrapper": IterableWrapper})
    assert result.attempted == 6 and result.failed == 0
    assert doctest.testmod(workers_module).failed == 0


class UnpicklableAt3(Squares):
    def __getitem__(self, i):
        return (lambda: i) if i == 3 else i


def test_spawned_workers_deliver_what_forked_ones_do_and_unpicklable_batches_are_errors():
    def make(ctx):
        return DataLoader(Squares(11), batch_size=3, shuffle=True, seed=4, num_workers=2,
                          timeout=30, multiprocessing_context=ctx)

    assert lists(make("spawn")) == lists(make(FORK))
    with pytest.raises(DataLoaderWorkerError, match="raised fetching batch 1 of the epoch: "
                                                    "TypeError: the batch cannot be pickled"):
        lists(DataLoader(UnpicklableAt3(6), batch_size=2, num_workers=2, collate_fn=list,
                         timeout=30, multiprocessing_context=FORK))
