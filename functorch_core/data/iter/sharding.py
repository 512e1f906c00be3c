"""Sharding iter pipes: ShardingFilter (sharding_filter) and ShardingRoundRobinDispatcher."""

from __future__ import annotations

from enum import IntEnum

from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["SHARDING_PRIORITIES", "ShardingFilter", "ShardingRoundRobinDispatcher"]


class SHARDING_PRIORITIES(IntEnum):
    """Sharding groups, as torch's: the loader shards ranks (DISTRIBUTED), then workers."""

    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


@functional_datapipe("sharding_filter")
class ShardingFilter(IterDataPipe):
    """Keep one instance's share of the items (functional name: ``sharding_filter``).

    Instance ``i`` of ``n`` keeps the items at positions ``i, i + n, i + 2n, ...``.
    ``apply_sharding`` sets ``n`` and ``i``; the DataLoader calls it with the
    ``DISTRIBUTED`` group (ranks) and the ``MULTIPROCESSING`` group (workers),
    which combine into ``n = world_size * num_workers`` instances.

    Args:
        source_datapipe (IterDataPipe): the source.
        sharding_group_filter (SHARDING_PRIORITIES, optional): shard only by
            this group and ignore the others. Default: ``None`` (every group).

    Example::

        >>> dp = IterableWrapper(range(7)).sharding_filter()
        >>> dp.apply_sharding(3, 1)
        >>> list(dp)
        [1, 4]
    """

    _repr_args = ("num_of_instances", "instance_id")

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups: dict = {}
        self.num_of_instances = 1
        self.instance_id = 0

    def is_shardable(self) -> bool:
        return True

    def apply_sharding(self, num_of_instances: int, instance_id: int,
                       sharding_group=SHARDING_PRIORITIES.DEFAULT) -> None:
        """Make this pipe keep instance ``instance_id``'s share of ``num_of_instances``.

        Args:
            num_of_instances (int): how many instances share the items in this group.
            instance_id (int): which one this is, ``0 <= instance_id < num_of_instances``.
            sharding_group (SHARDING_PRIORITIES): the group. Default: ``DEFAULT``
                (which cannot be mixed with the other groups).
        """
        if not 0 <= instance_id < num_of_instances:
            raise ValueError(f"{type(self).__name__}.apply_sharding(num_of_instances="
                             f"{num_of_instances}, instance_id={instance_id}): expected "
                             "0 <= instance_id < num_of_instances")
        default = SHARDING_PRIORITIES.DEFAULT
        if self.groups and (sharding_group == default) != (default in self.groups):
            raise RuntimeError(f"{type(self).__name__}.apply_sharding: the DEFAULT sharding "
                               "group cannot be mixed with the other groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self.num_of_instances, self.instance_id = 1, 0
        for key in sorted(self.groups, reverse=True):
            if self.sharding_group_filter is None or key == self.sharding_group_filter:
                n, i = self.groups[key]
                self.instance_id += self.num_of_instances * i
                self.num_of_instances *= n

    def __iter__(self):
        n, k = self.num_of_instances, self.instance_id
        if n == 1:
            yield from self.source_datapipe
            return
        for i, item in enumerate(self.source_datapipe):
            if i % n == k:
                yield item

    def _skip(self, n: int) -> bool:
        # the n-th kept item comes before source position n * num_of_instances, and
        # that position is a multiple of num_of_instances, so counting restarts in phase
        return self.source_datapipe._skip(n * self.num_of_instances)

    def __len__(self) -> int:
        total = len(self.source_datapipe)
        n, k = self.num_of_instances, self.instance_id
        return total // n + (1 if k < total % n else 0)


@functional_datapipe("sharding_round_robin_dispatch")
class ShardingRoundRobinDispatcher(ShardingFilter):
    """Deal items to the workers in turn (functional name: ``sharding_round_robin_dispatch``).

    Worker ``w`` of ``n`` gets the items at positions ``w, w + n, ...``: the
    same split as TorchData's dispatching process, but here each worker runs
    the pipes before this one itself and keeps its share (there is no
    dispatching process). In one process it passes items through.

    Args:
        source_datapipe (IterDataPipe): the source.
        sharding_group_filter (SHARDING_PRIORITIES, optional): the group to deal
            over. Default: ``None``, which means ``MULTIPROCESSING`` (workers).
    """

    def __init__(self, source_datapipe, sharding_group_filter=None):
        if sharding_group_filter is None:
            sharding_group_filter = SHARDING_PRIORITIES.MULTIPROCESSING
        super().__init__(source_datapipe, sharding_group_filter)
