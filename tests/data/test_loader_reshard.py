"""Re-sharding a map-style DataLoader's epoch to another world size: the samples the old
ranks had not consumed are delivered exactly once across the new ranks."""

from collections import Counter

import numpy as np
import pytest

from functorch_core.data import DataLoader, IterableWrapper
from functorch_core.data.loader_state import reshard


def _loaders(n, world, shuffle=True, batch_size=3, num_workers=0):
    return [DataLoader(np.arange(n), batch_size=batch_size, shuffle=shuffle, seed=7,
                       rank=r, world_size=world, num_workers=num_workers)
            for r in range(world)]


def _consume(loaders, steps, epoch_states=None):
    """Each rank takes ``steps[r]`` batches (or all, for None); their ids and states."""
    seen = []
    states = []
    for loader, k, state in zip(loaders, steps, epoch_states or [None] * len(loaders),
                                strict=True):
        if state is not None:
            loader.load_state_dict(state)
        it = iter(loader)
        for i, batch in enumerate(it):
            seen.extend(int(x) for x in batch)
            if k is not None and i + 1 == k:
                break
        states.append(loader.state_dict())
    return seen, states


@pytest.mark.parametrize(("n", "old", "new", "seed"), [(31, 3, 2, 0), (40, 4, 3, 1),
                                                       (17, 2, 3, 2), (25, 3, 1, 3)])
def test_reshard_delivers_the_rest_of_the_epoch_exactly_once(n, old, new, seed):
    rng = np.random.default_rng(seed)
    steps = [int(rng.integers(0, 4)) for _ in range(old)]
    steps[0] = max(steps[0], 1)
    before, states = _consume(_loaders(n, old), steps)
    resumed = [reshard(states, r, new) for r in range(new)]
    after, later = _consume(_loaders(n, new), [None] * new, resumed)
    assert Counter(before + after) == Counter(range(n))
    # the next epoch is the new world size's own, whole
    nxt, _ = _consume(_loaders(n, new), [None] * new, later)
    assert Counter(nxt) == Counter(range(n))


def test_two_reshards_in_one_epoch_and_a_rank_already_done():
    n = 29
    before, states = _consume(_loaders(n, 3), [2, None, 1])      # rank 1 ended its share
    assert states[1]["epoch"] == 1
    mid = [reshard(states, r, 2) for r in range(2)]
    more, states2 = _consume(_loaders(n, 2), [1, 2], mid)
    last = [reshard(states2, r, 4) for r in range(4)]
    rest, _ = _consume(_loaders(n, 4), [None] * 4, last)
    assert Counter(before + more + rest) == Counter(range(n))


def test_reshard_between_epochs_starts_the_next_epoch_whole():
    _, states = _consume(_loaders(12, 2, batch_size=2), [None, None])
    new = [reshard(states, r, 3) for r in range(3)]
    assert all(s["epoch"] == 1 and s["reshards"] == [] for s in new)
    seen, _ = _consume(_loaders(12, 3, batch_size=2), [None] * 3, new)
    assert Counter(seen) == Counter(range(12))


def test_reshard_refuses_states_of_different_jobs_and_datapipes():
    _, states = _consume(_loaders(12, 2), [1, 1])
    with pytest.raises(ValueError, match=r"state 1 is rank 0 of 2, expected rank 1 of 2"):
        reshard([states[0], states[0]], 0, 3)
    bad = [states[0], {**states[1], "seed": 3}]
    with pytest.raises(ValueError, match=r"rank 1's state has seed=3"):
        reshard(bad, 0, 3)
    far = [states[0], {**states[1], "epoch": 3}]
    with pytest.raises(ValueError, match=r"not in one epoch"):
        reshard(far, 0, 3)
    pipe = DataLoader(IterableWrapper(range(12)), batch_size=3, rank=0, world_size=3)
    with pytest.raises(ValueError, match=r"only a map-style dataset"):
        pipe.load_state_dict({**reshard(states, 0, 3), "num_workers": 0})
