"""The process world seen from the API: joining it, this process's place in it, and
torch.distributed's names for the same things."""

from __future__ import annotations

import enum

from functorch_core.backends import mpi

WORLD = mpi.WORLD
DistributedError = mpi.DistributedError
DistributedTimeoutError = mpi.DistributedTimeoutError

__all__ = ["WORLD", "DistributedError", "DistributedTimeoutError", "ReduceOp", "abort",
           "barrier", "get_rank", "get_world_size", "init", "init_process_group",
           "is_initialized", "local_rank", "local_world_size", "rank", "world_size"]


def init(timeout=None) -> None:
    """Join the job's process world; every later call is a no-op (or sets the timeout).

    Under ``mpiexec`` (or ``python -m functorch_core.distributed.run``) the world is MPI's;
    without mpi4py, or in a process started plainly, it is a world of one rank, so the same
    script runs single-process.

    Args:
        timeout (float | datetime.timedelta | None): how long any collective may wait for
            the other ranks before raising ``DistributedTimeoutError``. ``None``
            (default) waits as long as MPI does, with MPI's blocking calls.

    Example::

        >>> import functorch_core.distributed as dist
        >>> dist.init(timeout=30)
        >>> dist.rank(), dist.world_size()      # (0, 1) outside mpiexec
        (0, 1)
    """
    mpi.init(timeout)


def is_initialized() -> bool:
    """Whether ``init()`` (or a collective, which joins the world) has run in this process.

    Example::

        >>> dist.is_initialized()
        True
    """
    return mpi.is_initialized()


def _accessor(name, field, doc, example):
    def get() -> int:
        return getattr(mpi.world(), field)
    get.__name__ = get.__qualname__ = name
    get.__doc__ = f"""{doc}

    Example::

        >>> dist.{name}()
        {example}
    """
    return get


rank = _accessor("rank", "rank", "This process's rank, ``0 <= rank() < world_size()`` "
                 "(joins the world if need be).", 0)
world_size = _accessor("world_size", "size",
                       "How many processes the job has (joins the world if need be).", 1)
local_rank = _accessor("local_rank", "local_rank",
                       "This process's rank among the job's processes on the same machine.", 0)
local_world_size = _accessor("local_world_size", "local_size",
                             "How many of the job's processes run on this machine.", 1)


def barrier() -> None:
    """Wait until every rank has called ``barrier()`` (bounded by ``init``'s timeout).

    Example::

        >>> dist.barrier()
    """
    mpi.barrier()


def abort(code: int = 1) -> None:
    """End every process of the job now with exit status ``code`` (``MPI_Abort``).

    After a ``DistributedTimeoutError`` the world cannot be used again (MPI cannot cancel
    a collective); this is the way out that does not wait on the missing ranks.

    Args:
        code (int): the exit status. Default: ``1``.

    Example::

        >>> try:
        ...     dist.all_reduce(x)
        ... except dist.DistributedTimeoutError:
        ...     dist.abort(3)
    """
    mpi.abort(code)


class ReduceOp(str, enum.Enum):
    """torch.distributed's reduction names; each equals the string the collectives take.

    Example::

        >>> dist.all_reduce(np.ones(2), op=dist.ReduceOp.AVG)    # the same as op="mean"
        array([1., 1.])
    """

    SUM = "sum"
    PRODUCT = "prod"
    MAX = "max"
    MIN = "min"
    AVG = "mean"


get_rank = rank
get_world_size = world_size


def init_process_group(backend: str = "mpi", init_method=None, timeout=None, world_size=-1,
                       rank=-1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """torch.distributed's entry point: ``init(timeout)`` under torch's signature.

    MPI decides the ranks and how they meet: ``init_method``, ``store``, ``group_name``,
    ``pg_options`` and ``device_id`` are accepted and ignored, and ``world_size``/``rank``,
    when given, must equal what MPI says.

    Args:
        backend (str): ``"mpi"`` (default); ``"gloo"`` and ``"nccl"`` are taken to mean MPI.
        init_method: ignored. Default: ``None``.
        timeout (float | datetime.timedelta | None): as ``init``'s. Default: ``None``.
        world_size (int): ``-1`` (default) or MPI's world size.
        rank (int): ``-1`` (default) or MPI's rank of this process.
        store, group_name, pg_options, device_id: ignored.

    Example::

        >>> dist.init_process_group("mpi")
        >>> dist.get_rank(), dist.get_world_size()
        (0, 1)
    """
    if backend not in ("mpi", "gloo", "nccl", None):
        raise ValueError(f"init_process_group(backend={backend!r}): functorch_core runs on "
                         f"MPI; expected 'mpi' (or 'gloo'/'nccl', taken as MPI)")
    w = mpi.init(timeout)
    for name, given, actual in (("world_size", world_size, w.size), ("rank", rank, w.rank)):
        if given not in (-1, None) and given != actual:
            raise ValueError(f"init_process_group({name}={given}): MPI started this process "
                             f"with {name} {actual}")
