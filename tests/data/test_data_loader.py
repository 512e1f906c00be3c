"""The DataLoader: exactly-once sharding, seeds, resumable state, worker errors, progress."""

import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functorch_core.data import (
    DataLoader,
    DataLoaderWorkerError,
    IterableWrapper,
    SequenceWrapper,
    get_worker_info,
)
from functorch_core.data.iter.sharding import SHARDING_PRIORITIES

FORK = "fork" if sys.platform != "win32" else "spawn"


def ident(x):
    return x


def pipeline(n, shuffle=True):
    dp = IterableWrapper(range(n))
    if shuffle:
        dp = dp.shuffle(buffer_size=5)
    return dp.sharding_filter().map(ident)


def run(loader):
    out = []
    for item in loader:
        out.append(item.tolist() if isinstance(item, np.ndarray) else item)
    return out


def flat(batches):
    return [x for b in batches for x in (b if isinstance(b, list) else [b])]


# -- exactly once --------------------------------------------------------------------------


def test_exactly_once_grid():
    """Workers 0-4 x ranks 1-4 x shuffle x drop_last, uneven sizes: no sample twice, none lost
    (with drop_last each instance drops only its own short tail)."""
    case = 0
    for num_workers in range(5):
        for world_size in range(1, 5):
            for shuffle in (False, True):
                for drop_last in (False, True):
                    case += 1
                    n = 17 + case % 6  # uneven against every batch size and instance count
                    instances = world_size * max(num_workers, 1)
                    got = []
                    for rank in range(world_size):
                        loader = DataLoader(pipeline(n), batch_size=3, shuffle=shuffle,
                                            num_workers=num_workers, rank=rank,
                                            world_size=world_size, seed=5, drop_last=drop_last,
                                            multiprocessing_context=FORK)
                        batches = run(loader)
                        if drop_last:
                            assert all(len(b) == 3 for b in batches)
                        got += flat(batches)
                    where = (num_workers, world_size, shuffle, drop_last, n)
                    assert len(got) == len(set(got)), where
                    if drop_last:
                        assert set(got) <= set(range(n)), where
                        per = [n // instances + (i < n % instances) for i in range(instances)]
                        assert len(got) == sum(k - k % 3 for k in per), where
                    else:
                        assert sorted(got) == list(range(n)), where


def test_exactly_once_without_a_sharding_filter_and_for_map_datasets():
    # no sharding_filter in the pipe: the loader appends one, so nothing is duplicated
    got = flat(run(DataLoader(IterableWrapper(range(11)).map(ident), num_workers=3,
                              multiprocessing_context=FORK)))
    assert sorted(got) == list(range(11))
    data = [i * i for i in range(14)]
    got = []
    for rank in range(2):
        got += flat(run(DataLoader(data, batch_size=4, shuffle=True, num_workers=2, rank=rank,
                                   world_size=2, seed=1, multiprocessing_context=FORK)))
    assert sorted(got) == data
    seq = SequenceWrapper(data).map(ident)
    assert sorted(flat(run(DataLoader(seq, num_workers=2, multiprocessing_context=FORK)))) == data


def test_spawn_delivers_what_fork_does():
    def make(ctx):
        return DataLoader(pipeline(19), batch_size=4, num_workers=2, rank=1, world_size=2,
                          seed=3, multiprocessing_context=ctx)

    assert run(make("spawn")) == run(make(FORK))


def test_rank_filter_and_worker_dispatcher_split_once_and_double_sharding_is_refused():
    got = []
    for rank in range(2):
        dp = (IterableWrapper(range(21)).shuffle()
              .sharding_filter(SHARDING_PRIORITIES.DISTRIBUTED)
              .sharding_round_robin_dispatch(SHARDING_PRIORITIES.MULTIPROCESSING).map(ident))
        got += run(DataLoader(dp, num_workers=2, rank=rank, world_size=2, seed=4,
                              multiprocessing_context=FORK))
    assert sorted(got) == list(range(21))
    twice = IterableWrapper(range(8)).sharding_filter().map(ident).sharding_filter()
    with pytest.raises(ValueError, match="sharding twice on one path loses samples"):
        DataLoader(twice, num_workers=2)


def test_ranks_must_share_a_seed_to_shuffle():
    with pytest.raises(ValueError, match="ranks must share a seed"):
        DataLoader(pipeline(8), world_size=2)
    DataLoader(pipeline(8, shuffle=False), world_size=2)


# -- seeds and epochs --------------------------------------------------------------------


def test_epochs_differ_and_set_epoch_reproduces():
    loader = DataLoader(pipeline(40), num_workers=2, seed=11, multiprocessing_context=FORK)
    e0, e1 = run(loader), run(loader)
    assert e0 != e1 and sorted(e0) == sorted(e1) == list(range(40))
    loader.set_epoch(0)
    assert run(loader) == e0
    other = DataLoader(pipeline(40), num_workers=0, seed=11)
    assert sorted(run(other)) == sorted(e0)
    assert run(DataLoader(pipeline(40), shuffle=False)) == list(range(40))


def test_persistent_workers_across_epochs_and_abandoned_epochs():
    loader = DataLoader(pipeline(30), batch_size=2, num_workers=2, seed=2,
                        persistent_workers=True, multiprocessing_context=FORK)
    it = iter(loader)
    next(it)  # abandon epoch 0 after one batch
    pids = [p.pid for p in loader._pool.procs]
    loader.set_epoch(0)
    full = run(loader)
    assert sorted(flat(full)) == list(range(30))
    assert [p.pid for p in loader._pool.procs] == pids
    loader.close()


def init_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    np.random.seed(worker_id)  # user code may touch the global RNG


def tag_worker(x):
    return (get_worker_info().id, x)


def test_worker_init_fn_and_worker_info():
    out = run(DataLoader(IterableWrapper(range(6)).sharding_filter().map(tag_worker),
                         num_workers=2, worker_init_fn=init_worker,
                         multiprocessing_context=FORK))
    assert out == [(0, 0), (1, 1), (0, 2), (1, 3), (0, 4), (1, 5)]
    assert get_worker_info() is None


# -- resumable state ---------------------------------------------------------------------


def take(loader, k):
    it = iter(loader)
    first = [next(it) for _ in range(k)]
    return first, it


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_state_dict_mid_epoch_resumes_with_the_rest(num_workers):
    def make():
        return DataLoader(pipeline(37), batch_size=3, num_workers=num_workers, rank=1,
                          world_size=2, seed=9, multiprocessing_context=FORK)

    full = run(make())
    loader = make()
    first, it = take(loader, 4)
    time.sleep(0.05)  # let the workers prefetch past what was delivered
    state = loader.state_dict()
    rest = [b.tolist() for b in it]
    assert [b.tolist() for b in first] + rest == full
    resumed = make()
    resumed.load_state_dict(json.loads(json.dumps(state)))
    assert run(resumed) == rest
    # after the epoch ends, the state names the start of the next one
    state2 = resumed.state_dict()
    assert state2["epoch"] == state["epoch"] + 1 and sum(state2["delivered"]) == 0
    again = make()
    again.load_state_dict(state2)
    loader.set_epoch(1)
    assert run(again) == run(loader)


CALLS = []


def counted(x):
    CALLS.append(x)
    return x


def test_resume_skips_without_replaying_where_pipes_can():
    def make():
        return DataLoader(IterableWrapper(list(range(100))).sharding_filter().map(counted),
                          batch_size=10, world_size=2, rank=1)

    loader = make()
    first, _it = take(loader, 3)
    resumed = make()
    resumed.load_state_dict(loader.state_dict())
    CALLS.clear()
    rest = run(resumed)
    assert flat([b.tolist() for b in first]) + flat(rest) == list(range(1, 100, 2))
    assert CALLS == list(range(61, 100, 2))  # the first 30 samples of the shard were not made


def test_a_resumed_epoch_abandoned_before_its_first_item_leaves_no_pending_skip():
    loader = DataLoader(IterableWrapper(list(range(10))).map(ident))
    _first, _it = take(loader, 4)
    state = loader.state_dict()
    fresh = DataLoader(IterableWrapper(list(range(10))).map(ident))
    fresh.load_state_dict(state)
    iter(fresh)  # started, never advanced, abandoned
    fresh.set_epoch(1)
    assert run(fresh) == list(range(10))


_SUBPROCESS = """
import json, sys
from functorch_core.data import DataLoader, IterableWrapper
dp = IterableWrapper(range(41)).shuffle(buffer_size=7).sharding_filter().map(abs)
loader = DataLoader(dp, batch_size=4, num_workers=2, seed=4, multiprocessing_context="{ctx}")
loader.load_state_dict(json.loads(sys.argv[1]))
print(json.dumps([b.tolist() for b in loader]))
"""


@pytest.mark.parametrize("ctx", [FORK, "spawn"])
def test_load_state_dict_in_a_new_process(ctx):
    dp = IterableWrapper(range(41)).shuffle(buffer_size=7).sharding_filter().map(abs)
    loader = DataLoader(dp, batch_size=4, num_workers=2, seed=4, multiprocessing_context=ctx)
    first, it = take(loader, 3)
    state = loader.state_dict()
    rest = [b.tolist() for b in it]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", _SUBPROCESS.format(ctx=ctx), json.dumps(state)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == rest
    assert sorted(flat([b.tolist() for b in first]) + flat(rest)) == list(range(41))


@settings(max_examples=15)
@given(st.integers(0, 3), st.integers(1, 3), st.data())
def test_resume_anywhere_equals_an_uninterrupted_run(num_workers, world_size, data):
    rank = data.draw(st.integers(0, world_size - 1))
    n = data.draw(st.integers(0, 30))
    batch = data.draw(st.sampled_from([None, 1, 4]))

    def make():
        return DataLoader(pipeline(n), batch_size=batch, num_workers=num_workers, rank=rank,
                          world_size=world_size, seed=7, multiprocessing_context=FORK)

    full = run(make())
    stop = data.draw(st.integers(0, len(full)))
    loader = make()
    it = iter(loader)
    head = [next(it) for _ in range(stop)]
    state = loader.state_dict()
    del it
    resumed = make()
    resumed.load_state_dict(state)
    head = [h.tolist() if isinstance(h, np.ndarray) else h for h in head]
    assert head + run(resumed) == full
    loader.close()


def test_state_dict_refuses_unreplayable_pipes_and_mismatched_loaders():
    loader = DataLoader(IterableWrapper(iter(range(5))))
    with pytest.raises(RuntimeError, match=r"IterableWrapper cannot be resumed: IterableWrapper "
                                           r"wraps a one-shot iterator \(range_iterator\)"):
        loader.state_dict()
    state = DataLoader(pipeline(5), num_workers=2, seed=0).state_dict()
    with pytest.raises(ValueError, match="saved with num_workers=2 but this loader has "
                                         "num_workers=1"):
        DataLoader(pipeline(5), num_workers=1, seed=0).load_state_dict(state)


@pytest.mark.parametrize("field, value, why", [
    ("delivered", [-1, 0], "a list of 2 counts >= 0"),
    ("delivered", [1], "a list of 2 counts >= 0"),
    ("delivered", [1.5, 0], "a list of 2 counts >= 0"),
    ("active", [1, 0], "an increasing list of distinct workers in \\[0, 2\\)"),
    ("active", [0, 2], "an increasing list of distinct workers"),
    ("pointer", 2, "an int in \\[0, 2\\)"),
    ("pointer", -1, "an int in"),
    ("epoch", -3, "an int >= 0"),
    ("seed", True, "an int in \\[0, 2\\*\\*62\\)"),
    ("version", 99, "this loader reads version"),
])
def test_load_state_dict_refuses_a_corrupt_state_by_field(field, value, why):
    state = DataLoader(pipeline(5), num_workers=2, seed=0).state_dict()
    state[field] = value
    loader = DataLoader(pipeline(5), num_workers=2, seed=0)
    with pytest.raises(ValueError, match=f"field '{field}' is {re.escape(repr(value))}: "
                                         f"it must be {why}" if field != "version" else why):
        loader.load_state_dict(state)
    assert loader._resume is None                   # nothing was taken from it
    with pytest.raises(ValueError, match="the state has no field 'pointer'"):
        loader.load_state_dict({k: v for k, v in state.items() if k != "pointer"})
    with pytest.raises(TypeError, match="state must be a dict"):
        loader.load_state_dict([("epoch", 0)])


# -- worker errors -----------------------------------------------------------------------


def fail_on_7(x):
    if x == 7:
        raise ValueError("seven is not allowed")
    return x


def test_worker_error_names_worker_pipe_index_and_traceback():
    dp = IterableWrapper(range(20)).sharding_filter().map(fail_on_7)
    loader = DataLoader(dp, num_workers=2, multiprocessing_context=FORK)
    with pytest.raises(DataLoaderWorkerError) as info:
        run(loader)
    msg = str(info.value)
    assert "worker 1 (rank 0) raised in Mapper(fn=fail_on_7" in msg
    assert "at output 3 of its shard: ValueError: seven is not allowed" in msg
    assert "Original traceback in the worker" in msg and "fail_on_7" in msg.split("worker:")[1]
    with pytest.raises(ValueError, match="seven") as info:
        run(DataLoader(dp))
    assert "raised in Mapper(fn=fail_on_7" in "".join(info.value.__notes__)


class Unpicklable:
    def __reduce__(self):
        raise TypeError("no pickling here")


def make_unpicklable(x):
    return Unpicklable() if x == 2 else x


def test_unpicklable_output_is_an_error_not_a_hang():
    dp = IterableWrapper(range(5)).map(make_unpicklable)
    with pytest.raises(DataLoaderWorkerError, match=r"worker 0 \(rank 0\) raised in "
                                                    r"Mapper\(fn=make_unpicklable.*at output 2.*"
                                                    r"cannot be pickled"):
        run(DataLoader(dp, num_workers=1, multiprocessing_context=FORK))


def shuffle_after_sharding(n):
    return IterableWrapper(range(n)).sharding_filter().shuffle(buffer_size=4).map(ident)


def test_random_pipes_after_the_sharding_keep_exactly_once_and_resume():
    def make(rank):
        return DataLoader(shuffle_after_sharding(23), batch_size=2, num_workers=2, rank=rank,
                          world_size=2, seed=8, multiprocessing_context=FORK)

    got = flat(run(make(0))) + flat(run(make(1)))
    assert sorted(got) == list(range(23))
    loader = make(1)
    full = run(make(1))
    first, _it = take(loader, 3)
    resumed = make(1)
    resumed.load_state_dict(loader.state_dict())
    assert [b.tolist() for b in first] + run(resumed) == full
    loader.close()


def die_in_worker_1(worker_id):
    if worker_id == 1:
        os._exit(3)


def slow(x):
    time.sleep(60)
    return x


def test_dead_worker_and_timeout_are_reported_not_waited_on():
    loader = DataLoader(pipeline(10), num_workers=2, seed=0, worker_init_fn=die_in_worker_1,
                        multiprocessing_context=FORK)
    with pytest.raises(DataLoaderWorkerError, match=r"worker 1 .* exited unexpectedly with "
                                                    r"exit code 3"):
        run(loader)
    start = time.monotonic()
    loader = DataLoader(IterableWrapper(range(4)).map(slow), num_workers=1, timeout=0.3,
                        multiprocessing_context=FORK)
    with pytest.raises(DataLoaderWorkerError, match=r"timed out after 0\.3 s waiting for worker 0"):
        run(loader)
    assert time.monotonic() - start < 20  # the worker sleeps 60 s: not waited on


_ORPHAN = """
import os
from functorch_core.data import DataLoader, IterableWrapper
loader = DataLoader(IterableWrapper(range(100)), num_workers=2, persistent_workers=True,
                    multiprocessing_context="fork")
it = iter(loader)
next(it)
print(" ".join(str(p.pid) for p in loader._pool.procs), flush=True)
os._exit(0)  # the main process dies without cleaning up
"""


def test_workers_exit_when_the_main_process_dies():
    # the workers inherit the stdout pipe: run() returns only once they have all exited
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", _ORPHAN], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0 and len(proc.stdout.split()) == 2, proc.stderr


def test_spawn_names_the_unpicklable_function():
    dp = IterableWrapper(range(4)).map(lambda x: x)
    with pytest.raises(TypeError, match=r"Mapper\(fn=.*<lambda>.*\)\.fn cannot be pickled"):
        run(DataLoader(dp, num_workers=1, multiprocessing_context="spawn"))


# -- FullSync and progress ---------------------------------------------------------------


def test_fullsync_makes_ranks_deliver_the_same_count():
    # 10 items over 3 ranks x 2 workers: the ranks hold 4, 4 and 2; FullSync stops all at 2
    counts = []
    for rank in range(3):
        dp = IterableWrapper(range(10)).sharding_filter().fullsync()
        loader = DataLoader(dp, rank=rank, world_size=3, num_workers=2,
                            multiprocessing_context=FORK)
        counts.append(len(run(loader)))
        assert len(loader) == 2
        plain = DataLoader(IterableWrapper(range(10)).sharding_filter(), rank=rank,
                           world_size=3, num_workers=2, multiprocessing_context=FORK)
        assert len(run(plain)) == len(plain) == [4, 4, 2][rank]
    assert counts == [2, 2, 2]


def test_progress_plain_text(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the fallback, whether tqdm is installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert run(DataLoader(pipeline(5, shuffle=False), progress=True)) == [0, 1, 2, 3, 4]
    assert "DataLoader: 5/5 items" in capsys.readouterr().err
