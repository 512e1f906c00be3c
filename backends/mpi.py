"""The process world: MPI through mpi4py when it is installed, else a world of one.

This is the layer that moves array buffers between processes; ``functorch_core.distributed``
builds the user API (pytrees, checks, aliases) on it, and the interpreter's implementations
of the collective primitives call it. Every function takes and returns host NumPy arrays.

``init()`` is idempotent. Without mpi4py, or in a process not started by ``mpiexec``
(MPI's singleton start), the world has one rank and every collective is a copy.

Dtypes: reductions keep the input's dtype and equal NumPy's ufunc reduced over the ranks'
copies in that dtype (``np.add`` for sum: integers wrap, bool sum is logical or, bool prod
logical and). MPI has no float16 arithmetic: float16 (and bfloat16) is reduced in float32
and rounded once; complex max/min (NumPy's lexicographic order, which MPI lacks) gather and
reduce locally.

Timeouts: with ``init(timeout=...)`` every collective is MPI's non-blocking call polled until
the deadline; past it ``DistributedTimeoutError`` is raised and the world is unusable (MPI
cannot cancel a collective): later collectives raise ``DistributedError``. The message names
the ranks that did not reach the collective: on a timeout each rank tells the others on a
side communicator (a ``Dup`` of the world's) which collective it waits in, and those that do
not answer within a short grace are the missing ones. In a job of several ranks an uncaught
exception on one rank is sent to the others the same way before ``MPI_Abort``: a rank waiting
in a bounded collective raises ``DistributedError`` with that message. A compiled graph's
collectives do the same polling in native code (``backends/llvm/bounded.py``, sharing
this module's state through :func:`native_state`) and come back here only to raise.
"""

from __future__ import annotations

import ctypes
import datetime
import os
import pickle
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
from functorch_core.ir import dtypes

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
    side: object = None     # a Dup of ``comm`` for timeout and failure reports, or None


_yield = getattr(os, "sched_yield", lambda: None)
_lock = threading.Lock()
_world: World | None = None
_broken: str | None = None      # why the world is unusable (a collective timed out), or None
# what native code reads and writes too (backends/llvm/bounded.py): the world's timeout in
# ns (0: none), whether it is unusable, how many collectives this rank has entered, the
# watchdog counters' address, this rank, the side communicator, MPI_ANY_SOURCE, the failed
# rank's tag, and a native bounded call's outcome (its status and MPI's error code)
STATE_FIELDS = ("timeout_ns", "broken", "calls", "beats", "rank", "side", "any_source",
                "tag_failed", "status", "error", "kind")
_state = np.zeros(len(STATE_FIELDS), np.int64)
_calls = _state[2:3]            # how many collectives this rank has entered
_TAG_WAITING, _TAG_FAILED, _TAG_ACK = 31001, 31002, 31003
_GRACE_S = 1.0                  # how long a timed-out rank waits for the others' reports
_state[STATE_FIELDS.index("tag_failed")] = _TAG_FAILED


def _publish(w: World) -> World:
    """``w`` as the world, its timeout where native code reads it."""
    global _world
    _world = w
    _state[0] = 0 if w.timeout is None else max(1, int(w.timeout * 1e9))
    return w


def _break(why: str) -> None:
    """Mark the world unusable (for Python and native code): ``why`` says since when."""
    global _broken
    _broken = why
    _state[1] = 1


def _mpi():
    """mpi4py's MPI module, or None when mpi4py is not installed."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI


def seconds(timeout) -> float | None:
    """``timeout`` (seconds, a ``datetime.timedelta`` or None) as float seconds or None."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"init(timeout={timeout!r}): expected None, a positive number of "
                         f"seconds or a datetime.timedelta")
    return float(timeout)


def init(timeout=None) -> World:
    """Join the MPI world (once per process); later calls return the same world.

    ``timeout`` (seconds or a ``datetime.timedelta``) bounds every collective; None waits
    as long as MPI does. A later call with another timeout changes it.
    """
    timeout = seconds(timeout)
    with _lock:
        if _world is None:
            _publish(_connect(timeout))
        elif timeout is not None and timeout != _world.timeout:
            _publish(World(_world.comm, _world.rank, _world.size, _world.local_rank,
                           _world.local_size, timeout, _world.side))
        return _world


def set_timeout(timeout) -> World:
    """Set (or, with None, lift) the world's timeout; it joins the world if need be."""
    timeout = seconds(timeout)
    w = init()
    with _lock:
        return _publish(World(w.comm, w.rank, w.size, w.local_rank, w.local_size, timeout,
                              w.side))


def _connect(timeout) -> World:
    mpi = _mpi() if os.environ.get("FUNCTORCH_CORE_NO_MPI") != "1" else None
    if mpi is None:
        return World(None, 0, 1, 0, 1, timeout)
    comm = mpi.COMM_WORLD
    node = comm.Split_type(mpi.COMM_TYPE_SHARED)
    side = comm.Dup() if comm.Get_size() > 1 else None
    if side is not None:
        _report_uncaught(side, comm)
    return World(comm, comm.Get_rank(), comm.Get_size(), node.Get_rank(), node.Get_size(),
                 timeout, side)


def _report_uncaught(side, comm) -> None:
    """Make an uncaught exception on this rank reach the others, then end the job: its
    traceback is printed, its one-line summary sent to every other rank, and once they have
    acknowledged it (or after a second) ``MPI_Abort`` ends them all, so none hangs waiting.
    An exception that is itself the consequence of another rank's failure or of a timeout
    (every waiting rank learns of those itself) only aborts."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if _broken is None:
            rank, size = comm.Get_rank(), comm.Get_size()
            text = f"{kind.__name__}: {value}".splitlines()[0][:2000]
            data = np.frombuffer(text.encode("utf-8", "replace"), np.uint8).copy()
            for r in range(size):
                if r != rank:
                    side.Isend(data, dest=r, tag=_TAG_FAILED)
            acks, deadline = 0, time.monotonic() + 1.0
            while acks < size - 1 and time.monotonic() < deadline:
                if side.Iprobe(tag=_TAG_ACK):
                    side.Recv(np.empty(1, np.uint8), tag=_TAG_ACK)
                    acks += 1
                else:
                    time.sleep(1e-3)
        elif _broken.startswith("rank "):
            time.sleep(2.0)     # the failed rank aborts the job once all have acknowledged
        sys.stderr.flush()
        comm.Abort(1)
    sys.excepthook = hook


def is_initialized() -> bool:
    return _world is not None


def world() -> World:
    """The world, joining it first if need be."""
    return _world if _world is not None else init()


def abort(code: int = 1) -> None:
    """End every rank of the job now (MPI_Abort): the way out after a timeout."""
    w = world()
    if w.comm is not None:
        w.comm.Abort(code)
    os._exit(code)


def _op(op: str):
    mpi = _mpi()
    return {"sum": mpi.SUM, "prod": mpi.PROD, "max": mpi.MAX, "min": mpi.MIN}[op]


def _usable(w: World, name: str, what: str) -> None:
    if _broken is not None:
        raise DistributedError(f"{name}{what}: the world is unusable since {_broken}; MPI "
                               f"cannot cancel a collective, so end the job (abort())")


_beats: list = []       # [the launcher's watchdog counters (an int64 memmap) or None]


def _heartbeat(w: World) -> None:
    """Count this collective in the launcher's watchdog file, when the launcher runs with
    ``--watchdog`` (``FUNCTORCH_CORE_WATCHDOG``: one int64 per rank); the launcher names
    a rank whose count lags the others' for too long."""
    if not _beats:
        path = os.environ.get("FUNCTORCH_CORE_WATCHDOG")
        try:
            _beats.append(np.memmap(path, np.int64, "r+") if path else None)
        except (OSError, ValueError):
            _beats.append(None)
    if _beats[0] is not None and w.rank < _beats[0].size:
        _beats[0][w.rank] = _calls[0]


def native_state() -> np.ndarray:
    """The state native bounded collectives share with this module (:data:`STATE_FIELDS`),
    its watchdog, rank and side-communicator fields filled in (after :func:`native`)."""
    w = world()
    _heartbeat(w)       # opens the watchdog's counters, if the launcher keeps them
    f = STATE_FIELDS.index
    beats = _beats[0]
    _state[f("beats")] = beats.ctypes.data if beats is not None and w.rank < beats.size else 0
    _state[f("rank")] = w.rank
    mpi = _mpi()
    if w.side is not None:
        _state[f("side")] = ctypes.c_int64(mpi._handleof(w.side)).value     # 2**64 wraps
    _state[f("any_source")] = mpi.ANY_SOURCE
    return _state


def _run(w: World, name: str, what: str, blocking, nonblocking, args) -> None:
    """One MPI call: ``blocking(*args)`` without a timeout, else ``nonblocking(*args)``
    polled with a short backoff until the world's deadline."""
    _usable(w, name, what)
    _calls[0] += 1
    _heartbeat(w)
    if w.timeout is None:
        blocking(*args)
        return
    start = time.monotonic()
    deadline = start + w.timeout
    req = nonblocking(*args)
    pause = 0.0
    while not req.Test():
        now = time.monotonic()
        # spin (each Test progresses MPI's transfers) for the first 10 ms, as MPI's blocking
        # calls do, yielding the core to ranks that share it; then back off up to 1 ms
        # between polls, looking for a failed rank's report: the other ranks are late
        if now - start > 0.01:
            time.sleep(pause)
            pause = min(max(pause * 2, 5e-5), 1e-3)
            _raise_if_failed(w, name, what)
        else:
            _yield()
        if now > deadline:
            _timed_out(w, name, what)


def _timed_out(w: World, name: str, what: str):
    _break(f"{name}{what} timed out after {w.timeout:g} s on rank {w.rank} of {w.size}")
    raise DistributedTimeoutError(
        f"{name}{what} did not complete within {w.timeout:g} s on rank {w.rank} of "
        f"{w.size}: {_missing(w)}; the world is unusable from now on: MPI cannot "
        f"cancel a collective, so end the job")


# a native bounded call's outcomes (backends/llvm/bounded.py): done, past the deadline, a
# failed rank's report waits on the side communicator, the world was unusable, MPI failed
NATIVE_DONE, NATIVE_TIMEOUT, NATIVE_FAILED, NATIVE_BROKEN, NATIVE_ERROR = range(5)


def native_failure(status: int, name: str, what: str = ""):
    """Raise what a native bounded collective's ``status`` (not NATIVE_DONE) means, as the
    Python path would have: the timeout naming the missing ranks, the failed rank's
    message, the unusable world, or MPI's error code."""
    w = world()
    if status == NATIVE_BROKEN:
        _usable(w, name, what)
    elif status == NATIVE_TIMEOUT:
        _timed_out(w, name, what)
    elif status == NATIVE_FAILED:
        _raise_if_failed(w, name, what)
    raise DistributedError(f"{name}{what} on rank {w.rank} of {w.size}: MPI returned error "
                           f"code {int(_state[STATE_FIELDS.index('error')])} (status {status})")


def _raise_if_failed(w: World, name: str, what: str) -> None:
    """Raise the report of a rank whose uncaught exception ended it, if one came."""
    if w.side is None:
        return
    mpi = _mpi()
    status = mpi.Status()
    if not w.side.Iprobe(source=mpi.ANY_SOURCE, tag=_TAG_FAILED, status=status):
        return
    data = np.empty(status.Get_count(mpi.BYTE), np.uint8)
    w.side.Recv(data, source=status.Get_source(), tag=_TAG_FAILED)
    w.side.Isend(np.zeros(1, np.uint8), dest=status.Get_source(), tag=_TAG_ACK)
    _break(f"rank {status.Get_source()} failed")     # the hook's test: "rank " starts it
    raise DistributedError(f"{name}{what} on rank {w.rank} of {w.size}: rank "
                           f"{status.Get_source()} failed with "
                           f"{data.tobytes().decode('utf-8', 'replace')}")


def _missing(w: World) -> str:
    """Which ranks did not reach this collective: each rank that times out sends the
    others the number of its collective; those that send none within the grace (or
    another number) are missing."""
    if w.side is None:
        return "no rank is missing"
    mpi = _mpi()
    mine = np.array([_calls[0]], np.int64)
    reqs = [w.side.Isend(mine, dest=r, tag=_TAG_WAITING) for r in range(w.size) if r != w.rank]
    heard: dict[int, int] = {}
    deadline = time.monotonic() + _GRACE_S
    status = mpi.Status()
    while len(heard) < w.size - 1 and time.monotonic() < deadline:
        if w.side.Iprobe(source=mpi.ANY_SOURCE, tag=_TAG_WAITING, status=status):
            got = np.empty(1, np.int64)
            w.side.Recv(got, source=status.Get_source(), tag=_TAG_WAITING)
            heard[status.Get_source()] = int(got[0])
        else:
            time.sleep(1e-3)
    for r in reqs:
        r.Test()
    elsewhere = sorted(r for r, c in heard.items() if c != mine[0])
    missing = sorted(set(range(w.size)) - {w.rank} - set(heard))
    parts = []
    if missing:
        parts.append(f"rank{'s' * (len(missing) > 1)} {', '.join(map(str, missing))} did not "
                     f"reach it (slow, stopped or failed)")
    if elsewhere:
        parts.append(f"rank{'s' * (len(elsewhere) > 1)} {', '.join(map(str, elsewhere))} "
                     f"waited in another collective")
    return "; ".join(parts) or "every rank reached it (MPI did not complete it)"


def barrier(what: str = "") -> None:
    w = world()
    if w.comm is not None and w.size > 1:
        _run(w, "barrier", what, w.comm.Barrier, w.comm.Ibarrier, ())


def agree(key: int, name: str = "collective", what: str = "") -> bool:
    """Whether every rank passed the same 63-bit ``key`` (one 16-byte all-reduce)."""
    w = world()
    if w.comm is None or w.size == 1:
        return True
    buf = np.array([key, -key], np.int64)
    out = np.empty(2, np.int64)
    _run(w, name, what, w.comm.Allreduce, w.comm.Iallreduce, (buf, out, _op("max")))
    return int(out[0]) == -int(out[1])


def _bits(x: np.ndarray) -> np.ndarray:
    """``x`` as MPI can move it: bfloat16 has no buffer format, so its bits go as uint16."""
    return x.view(np.uint16) if x.dtype == dtypes.bfloat16 else x


_BOOL_OPS = {"sum": "max", "max": "max", "prod": "min", "min": "min"}


def all_reduce(x: np.ndarray, op: str = "sum", what: str = "") -> np.ndarray:
    """The elementwise reduction of ``x`` over every rank (a new array, ``x``'s dtype)."""
    if op not in REDUCE_OPS:
        raise ValueError(f"all_reduce{what}: op must be one of {REDUCE_OPS}, got {op!r}")
    x = np.ascontiguousarray(x)
    w = world()
    if w.comm is None or w.size == 1:
        return x.copy()
    if x.dtype == np.bool_:
        return all_reduce(x.view(np.uint8), _BOOL_OPS[op], what).view(np.bool_)
    if x.dtype in dtypes.NARROW_FLOATS:
        return all_reduce(x.astype(np.float32), op, what).astype(x.dtype)
    if x.dtype.kind == "c" and op in ("max", "min"):
        ufunc = np.maximum if op == "max" else np.minimum
        return ufunc.reduce(all_gather(x, what), axis=0)
    out = np.empty_like(x)
    _run(w, "all_reduce", what, w.comm.Allreduce, w.comm.Iallreduce, (x, out, _op(op)))
    return out


def broadcast(x: np.ndarray, src: int = 0, what: str = "") -> np.ndarray:
    """Rank ``src``'s ``x`` on every rank (``x`` gives the shape and dtype elsewhere)."""
    w = world()
    if not 0 <= src < w.size:
        raise ValueError(f"broadcast{what}: src={src} is not a rank of a world of {w.size}")
    if w.comm is not None and w.size > 1 and w.rank != src:
        out = np.empty(np.shape(x), np.asarray(x).dtype)
    else:
        out = np.array(x, order="C", copy=True)
    if w.comm is not None and w.size > 1:
        _run(w, "broadcast", what, w.comm.Bcast, w.comm.Ibcast, (_bits(out), src))
    return out


def all_gather(x: np.ndarray, what: str = "") -> np.ndarray:
    """Every rank's ``x`` stacked along a new leading axis, in rank order."""
    x = np.ascontiguousarray(x)
    w = world()
    out = np.empty((w.size, *x.shape), x.dtype)
    if w.comm is None or w.size == 1:
        out[0] = x
    else:
        _run(w, "all_gather", what, w.comm.Allgather, w.comm.Iallgather,
             (_bits(x), _bits(out)))
    return out


def reduce_scatter(x: np.ndarray, op: str = "sum", what: str = "") -> np.ndarray:
    """``all_reduce(x, op)[rank]``: ``x`` has a leading axis of the world's size."""
    if op not in REDUCE_OPS:
        raise ValueError(f"reduce_scatter{what}: op must be one of {REDUCE_OPS}, got {op!r}")
    x = np.ascontiguousarray(x)
    w = world()
    if x.ndim == 0 or x.shape[0] != w.size:
        raise ValueError(f"reduce_scatter{what}: the leading axis must be the world size "
                         f"{w.size}, got shape {x.shape}")
    if w.comm is None or w.size == 1:
        return x[0].copy()
    if x.dtype == np.bool_:
        return reduce_scatter(x.view(np.uint8), _BOOL_OPS[op], what).view(np.bool_)
    if x.dtype in dtypes.NARROW_FLOATS:
        return reduce_scatter(x.astype(np.float32), op, what).astype(x.dtype)
    if x.dtype.kind == "c" and op in ("max", "min"):
        return all_reduce(x, op, what)[w.rank]
    out = np.empty(x.shape[1:], x.dtype)
    _run(w, "reduce_scatter", what, w.comm.Reduce_scatter_block,
         w.comm.Ireduce_scatter_block, (x, out, _op(op)))
    return out


def send(x: np.ndarray, dst: int, tag: int = 0, what: str = "") -> None:
    w = world()
    if w.comm is None or not 0 <= dst < w.size or dst == w.rank:
        raise DistributedError(f"send{what}: dst={dst} is not another rank of a world of "
                               f"{w.size} (this is rank {w.rank})")
    _run(w, "send", what, w.comm.Send, w.comm.Isend,
         (_bits(np.ascontiguousarray(x)), dst, tag))


def recv(like: np.ndarray, src: int, tag: int = 0, what: str = "") -> np.ndarray:
    """An array shaped and typed as ``like``, received from rank ``src``."""
    w = world()
    if w.comm is None or not 0 <= src < w.size or src == w.rank:
        raise DistributedError(f"recv{what}: src={src} is not another rank of a world of "
                               f"{w.size} (this is rank {w.rank})")
    out = np.empty(np.shape(like), np.asarray(like).dtype)
    _run(w, "recv", what, w.comm.Recv, w.comm.Irecv, (_bits(out), src, tag))
    return out


def send_object(obj, dst: int, tag: int = 0, what: str = "") -> None:
    """A small picklable value to rank ``dst`` (a description of what follows)."""
    w = world()
    _usable(w, "send", what)
    if w.timeout is None:
        w.comm.send(obj, dest=dst, tag=tag)
    else:
        _run(w, "send", what, None, lambda: w.comm.isend(obj, dest=dst, tag=tag), ())


def recv_object(src: int, tag: int = 0, what: str = ""):
    """The small value rank ``src`` sent with ``send_object``."""
    w = world()
    _usable(w, "recv", what)
    if w.timeout is None:
        return w.comm.recv(source=src, tag=tag)
    box = []

    def irecv():
        req = w.comm.irecv(source=src, tag=tag)
        return _Keep(req, box)
    _run(w, "recv", what, None, irecv, ())
    return box[0]


class _Keep:
    """An mpi4py object request whose ``Test`` keeps the received value in ``box``."""

    def __init__(self, req, box):
        self.req, self.box = req, box

    def Test(self):     # mpi4py's name
        done, value = self.req.test()
        if done:
            self.box.append(value)
        return done


def all_gather_object(obj, what: str = "") -> list:
    """Every rank's small Python value (a description of its inputs), in rank order."""
    w = world()
    if w.comm is None or w.size == 1:
        return [obj]
    _usable(w, "all_gather", what)
    if w.timeout is None:
        return w.comm.allgather(obj)
    # pickled values of any length: their lengths first, then the bytes (both bounded)
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = all_gather(np.array([data.size], np.int64), what)[:, 0]
    out = np.empty(int(sizes.sum()), np.uint8)
    _run(w, "all_gather", what, None, lambda: w.comm.Iallgatherv(data, (out, sizes)), ())
    ends = np.cumsum(sizes)
    return [pickle.loads(out[e - s:e].tobytes()) for s, e in zip(sizes, ends, strict=True)]


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
NATIVE_FUNCTIONS = ("MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block",
                    "MPI_Iallreduce", "MPI_Iallgather", "MPI_Ireduce_scatter_block",
                    "MPI_Test", "MPI_Iprobe")


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
