"""The process world: MPI through mpi4py when it is installed, else a world of one.

This is the layer that moves array buffers between processes; ``functorch_core.distributed``
builds the user API (pytrees, checks, aliases) on it, and the interpreter's implementations
of the collective primitives call it. Every function takes and returns host NumPy arrays.

``init()`` is idempotent. Without mpi4py, or in a process not started by ``mpiexec``
(MPI's singleton start), the world has one rank and every collective is a copy.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass

import numpy as np

REDUCE_OPS = ("sum", "prod", "max", "min")
WORLD = "world"     # the reserved axis name of the process axis (``fc.distributed.WORLD``)


class DistributedError(RuntimeError):
    """A collective could not complete (mismatched inputs across ranks, a failed rank)."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within the world's timeout."""


@dataclass(frozen=True)
class World:
    """The processes of this job: ``comm`` is an mpi4py communicator, or None for one rank."""

    comm: object
    rank: int
    size: int
    local_rank: int
    local_size: int
    timeout: float | None = None


_lock = threading.Lock()
_world: World | None = None


def _mpi():
    """mpi4py's MPI module, or None when mpi4py is not installed."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI


def init(timeout: float | None = None) -> World:
    """Join the MPI world (once per process); later calls return the same world.

    ``timeout`` (seconds) bounds every collective; None waits as long as MPI does.
    """
    global _world
    with _lock:
        if _world is None:
            _world = _connect(timeout)
        elif timeout is not None and timeout != _world.timeout:
            _world = World(_world.comm, _world.rank, _world.size, _world.local_rank,
                           _world.local_size, float(timeout))
        return _world


def _connect(timeout) -> World:
    mpi = _mpi() if os.environ.get("FUNCTORCH_CORE_NO_MPI") != "1" else None
    timeout = None if timeout is None else float(timeout)
    if mpi is None:
        return World(None, 0, 1, 0, 1, timeout)
    comm = mpi.COMM_WORLD
    node = comm.Split_type(mpi.COMM_TYPE_SHARED)
    return World(comm, comm.Get_rank(), comm.Get_size(), node.Get_rank(), node.Get_size(),
                 timeout)


def is_initialized() -> bool:
    return _world is not None


def world() -> World:
    """The world, joining it first if need be."""
    return _world if _world is not None else init()


def _op(op: str):
    mpi = _mpi()
    return {"sum": mpi.SUM, "prod": mpi.PROD, "max": mpi.MAX, "min": mpi.MIN}[op]


def barrier() -> None:
    w = world()
    if w.comm is not None:
        w.comm.Barrier()


def all_reduce(x: np.ndarray, op: str = "sum") -> np.ndarray:
    """The elementwise reduction of ``x`` over every rank (a new array)."""
    x = np.ascontiguousarray(x)
    w = world()
    if w.comm is None or w.size == 1:
        return x.copy()
    out = np.empty_like(x)
    w.comm.Allreduce(x, out, op=_op(op))
    return out


def broadcast(x: np.ndarray, src: int = 0) -> np.ndarray:
    """Rank ``src``'s ``x`` on every rank (``x`` gives the shape and dtype elsewhere)."""
    out = np.array(x, order="C", copy=True)
    w = world()
    if w.comm is not None and w.size > 1:
        w.comm.Bcast(out, root=src)
    return out


def all_gather(x: np.ndarray) -> np.ndarray:
    """Every rank's ``x`` stacked along a new leading axis, in rank order."""
    x = np.ascontiguousarray(x)
    w = world()
    out = np.empty((w.size, *x.shape), x.dtype)
    if w.comm is None or w.size == 1:
        out[0] = x
    else:
        w.comm.Allgather(x, out)
    return out


def reduce_scatter(x: np.ndarray, op: str = "sum") -> np.ndarray:
    """``all_reduce(x, op)[rank]``: ``x`` has a leading axis of the world's size."""
    x = np.ascontiguousarray(x)
    w = world()
    if x.ndim == 0 or x.shape[0] != w.size:
        raise ValueError(f"reduce_scatter: the leading axis must be the world size {w.size}, "
                         f"got shape {x.shape}")
    if w.comm is None or w.size == 1:
        return x[0].copy()
    out = np.empty(x.shape[1:], x.dtype)
    w.comm.Reduce_scatter_block(x, out, op=_op(op))
    return out


def send(x: np.ndarray, dst: int, tag: int = 0) -> None:
    w = world()
    if w.comm is None:
        raise DistributedError(f"send: there is no rank {dst} in a world of one")
    w.comm.Send(np.ascontiguousarray(x), dest=dst, tag=tag)


def recv(like: np.ndarray, src: int, tag: int = 0) -> np.ndarray:
    """An array shaped and typed as ``like``, received from rank ``src``."""
    w = world()
    if w.comm is None:
        raise DistributedError(f"recv: there is no rank {src} in a world of one")
    out = np.empty(np.shape(like), np.asarray(like).dtype)
    w.comm.Recv(out, source=src, tag=tag)
    return out


def all_gather_object(obj) -> list:
    """Every rank's small Python value (a description of its inputs), in rank order."""
    w = world()
    if w.comm is None or w.size == 1:
        return [obj]
    return w.comm.allgather(obj)


# --- native interface ------------------------------------------------------------------
# What compiled code needs to call the MPI library that mpi4py loaded, without Python: the
# library, MPI_Allreduce's address and the handles (ints in MPICH's ABI, pointers in Open
# MPI's). All of it is of this process: compiled code refers to it by symbol names bound
# when the code is loaded (backends/llvm/collectives.py), never by a baked-in address.

NATIVE_DTYPES = {"f": "FLOAT", "d": "DOUBLE", "F": "C_FLOAT_COMPLEX", "D": "C_DOUBLE_COMPLEX",
                 "b": "INT8_T", "h": "INT16_T", "i": "INT32_T", "l": "INT64_T", "q": "INT64_T",
                 "B": "UINT8_T", "H": "UINT16_T", "I": "UINT32_T", "L": "UINT64_T",
                 "Q": "UINT64_T", "?": "C_BOOL"}
NATIVE_OPS = ("sum", "max", "min", "prod")
NATIVE_FUNCTIONS = ("MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block")


@dataclass(frozen=True)
class NativeMPI:
    """The MPI library of this process: its path, the addresses of the functions of
    :data:`NATIVE_FUNCTIONS` (by name), the width of a handle in bits, and the handles of
    ``MPI_COMM_WORLD``, ``MPI_IN_PLACE``, each op of :data:`NATIVE_OPS` and each datatype
    of :data:`NATIVE_DTYPES` (by dtype char) this library has."""

    library: str
    functions: dict
    handle_bits: int
    comm: int
    in_place: int
    ops: dict
    datatypes: dict


_native: list = []


def native() -> NativeMPI | None:
    """The native handles of the world's MPI library, or None in a world without MPI (no
    mpi4py, or ``FUNCTORCH_CORE_NO_MPI=1``), where a collective over the world is a copy.
    Joins the world first if need be."""
    w = world()
    if w.comm is None:
        return None
    if not _native:
        _native.append(_resolve_native())
    return _native[0]


def _loaded_libmpi() -> str | None:
    """The path of the libmpi this process has mapped (the one mpi4py linked), if any."""
    try:
        with open("/proc/self/maps") as f:
            paths = [line.split(None, 5)[-1].strip() for line in f]
    except OSError:
        return None
    names = [(p, os.path.basename(p)) for p in paths]
    return next((p for p, b in names if b.startswith("libmpi.so")
                 or (b.startswith("libmpi_") and ".so" in b)), None)


def _resolve_native() -> NativeMPI:
    mpi = _mpi()
    path = _loaded_libmpi()
    lib = ctypes.CDLL(path) if path else ctypes.CDLL(None)
    functions = {}
    for name in NATIVE_FUNCTIONS:
        try:
            functions[name] = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            raise DistributedError(f"the MPI library {path or '(the process)'} has no "
                                   f"{name}") from None
    bits = 8 * mpi._sizeof(mpi.Comm)
    datatypes = {}
    for char, name in NATIVE_DTYPES.items():
        t = getattr(mpi, name, None)
        if t is not None and t != mpi.DATATYPE_NULL and t.Get_size() == np.dtype(char).itemsize:
            datatypes[char] = mpi._handleof(t)
    ops = {op: mpi._handleof(_op(op)) for op in NATIVE_OPS}
    return NativeMPI(path or "", functions, bits, mpi._handleof(world().comm),
                     int(mpi.IN_PLACE), ops, datatypes)
