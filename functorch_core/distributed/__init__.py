"""Many processes, one job: the MPI world and collectives on pytrees of arrays.

Start the job with ``python -m functorch_core.distributed.run -n 4 train.py`` (or
``mpiexec -n 4 python train.py``); a script started plainly is a world of one rank, so the
same code runs single-process.

Example::

    >>> import functorch_core.distributed as dist
    >>> dist.init()
    >>> grads = dist.all_reduce(grads, op="mean")
"""

from . import checkpoint
from .collectives import all_gather, all_reduce, broadcast, recv, reduce_scatter, send
from .world import (
    WORLD,
    DistributedError,
    DistributedTimeoutError,
    ReduceOp,
    abort,
    barrier,
    get_rank,
    get_world_size,
    init,
    init_process_group,
    is_initialized,
    local_rank,
    local_world_size,
    rank,
    world_size,
)

__all__ = ["WORLD", "DistributedError", "DistributedTimeoutError", "ReduceOp", "abort",
           "all_gather", "all_reduce", "barrier", "broadcast", "checkpoint", "get_rank",
           "get_world_size",
           "init", "init_process_group", "is_initialized", "local_rank", "local_world_size",
           "rank", "recv", "reduce_scatter", "send", "world_size"]
