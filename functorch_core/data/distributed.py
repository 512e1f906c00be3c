"""Data across the ranks of a distributed job: ``DistributedSampler`` (torch's), the
DataLoader's default rank and world size, and ``FullSync``'s agreement between ranks."""

from __future__ import annotations

import math

import numpy as np

from functorch_core.backends import mpi

__all__ = ["DistributedSampler"]


def ranks(rank, world_size) -> tuple[int, int]:
    """``(rank, world_size)``: the arguments given, else the initialised world's, else
    ``(0, 1)``. Never joins the world itself (a DataLoader must not start MPI)."""
    w = mpi.world() if mpi.is_initialized() else None
    if world_size is None:
        world_size = 1 if w is None else w.size
    if rank is None:
        rank = 0 if w is None or w.size != world_size else w.rank
    return rank, world_size


def spans(world_size: int) -> bool:
    """Whether the processes of an initialised world are the loader's ``world_size`` ranks
    (then ``FullSync`` agrees through collectives, else it counts each rank's ``len()``)."""
    return world_size > 1 and mpi.is_initialized() and mpi.world().size == world_size


def all_have(has_item: bool) -> bool:
    """Whether every rank has a next item (one all-reduce of a flag)."""
    flag = np.array(bool(has_item))
    return bool(mpi.all_reduce(flag, "min", " (FullSync: has every rank a next item?)"))


class DistributedSampler:
    """This rank's share of a map-style dataset's indices (torch's ``DistributedSampler``).

    The indices ``0 .. len(dataset) - 1`` (shuffled when ``shuffle``, by a permutation
    that ``seed + epoch`` fixes, the same on every rank) are made a multiple of
    ``num_replicas`` long, by repeating the first ones (or, with ``drop_last``, by
    dropping the last ones); rank ``r`` takes every ``num_replicas``-th from ``r``. So every
    rank has ``len(sampler)`` indices and, without ``drop_last``, a few samples are seen
    twice per epoch. The shuffle is NumPy's (``default_rng(seed + epoch).permutation``),
    not torch's ``randperm``: the same algorithm, another order. A DataLoader given this
    sampler does not split its indices between the ranks again.

    Args:
        dataset: a map-style dataset (``__len__``).
        num_replicas (int, optional): how many ranks share it. Default: ``None`` (the
            initialised world's size, else 1).
        rank (int, optional): this rank. Default: ``None`` (the world's rank, else 0).
        shuffle (bool): permute the indices each epoch. Default: ``True``.
        seed (int): the permutation's seed, the same on every rank. Default: ``0``.
        drop_last (bool): drop the tail instead of padding. Default: ``False``.

    Example::

        >>> sampler = DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
        >>> list(sampler)
        [1, 4, 7, 0]
        >>> loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
        >>> for epoch in range(3):
        ...     sampler.set_epoch(epoch)          # a new shuffle each epoch
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        rank, num_replicas = ranks(rank, num_replicas)
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler(num_replicas={num_replicas!r}): expected a "
                             f"positive int")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler(rank={rank!r}): Invalid rank {rank}, rank "
                             f"should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, int(seed), drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif indices:
            pad = self.total_size - n
            indices += (indices * math.ceil(pad / n))[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle by ``seed + epoch`` from the next iteration on (call it each epoch)."""
        self.epoch = int(epoch)

    def __repr__(self):
        return (f"DistributedSampler(num_replicas={self.num_replicas}, rank={self.rank}, "
                f"shuffle={self.shuffle}, seed={self.seed}, drop_last={self.drop_last})")
