"""Atomic checkpoints of a distributed job: ``save(state, step, dir)`` / ``load_latest(dir)``.

One folder per step, ``step-00000042/``: ``rank-00000.part`` (rank 0: the shared ``state``
and its own part), ``rank-<r>.part`` (every other rank's part: its DataLoader state and RNG
state) and ``manifest.json``, which holds every file's size and sha256. The ranks write
into a temporary folder ``.step-00000042.partial``; once every rank's part is in (the
ranks exchange sizes and hashes), rank 0 writes the manifest and renames the folder: a
step folder exists only complete. A job killed at any moment leaves the previous complete
checkpoint as it was, and ``load_latest`` refuses a truncated or altered file by name.
A part file is the magic ``FCPART02``, its header's length (8 bytes, little-endian), the
JSON header (the pytree as ``functorch_core.checkpoint.encode`` describes it, and each
array's dtype, shape, offset and size), zeros to a multiple of 64 bytes, then the arrays'
bytes, each at its offset and padded to 64: no pickle, written by one ``writev`` from views
of the arrays. Format 1 checkpoints (``rank-<r>.npz``, ``functorch_core.save`` archives)
still load. ``dir`` must be a folder every rank sees (one machine, or a shared file system).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import secrets
import shutil
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from functorch_core import checkpoint as single
from functorch_core import random as fc_random
from functorch_core.backends import mpi
from functorch_core.data.loader_state import reshard

__all__ = ["Checkpoint", "CheckpointError", "complete_steps", "load_latest", "save",
           "wait_for_cleanup"]

FORMAT = "functorch_core.distributed.checkpoint/2"
FORMAT_1 = "functorch_core.distributed.checkpoint/1"    # rank-<r>.npz parts: still loaded
PART_FORMAT = "functorch_core.distributed.checkpoint.part/2"
_MAGIC = b"FCPART02"
_ALIGN = 64
_PAD = memoryview(bytes(_ALIGN))
_WRITEV = getattr(os, "writev", None)
_IOV_MAX = 1024
MANIFEST = "manifest.json"
_STEP = re.compile(r"step-(\d{8,})")


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: a damaged or altered file (named), another
    world size, a manifest that is not this format's."""


@dataclass(frozen=True)
class Checkpoint:
    """What ``load_latest`` found.

    Attributes:
        state: the pytree given to ``save`` (rank 0's).
        step (int): the step it was saved at.
        loader (dict | None): this rank's ``DataLoader.state_dict()`` to load, re-sharded
            when the world size changed; ``None`` if ``save`` was given no loader.
        rng (dict | None): this rank's random states (``"functorch_core"``, ``"numpy"``)
            at the save; ``None`` for a rank the saving job did not have.
        world_size (int): how many ranks saved it.
        path (str): its folder.
    """

    state: object
    step: int
    loader: dict | None
    rng: dict | None
    world_size: int
    path: str


def _folder(step: int) -> str:
    return f"step-{step:08d}"


def _part(rank: int, fmt: str = FORMAT) -> str:
    return f"rank-{rank:05d}.npz" if fmt == FORMAT_1 else f"rank-{rank:05d}.part"


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _aligned(n: int) -> int:
    return n + (-n % _ALIGN)


def _layout(obj) -> list:
    """The buffers of ``obj``'s part file, in order: the header (magic, its length, the JSON
    header) and each array's bytes, each padded to ``_ALIGN`` bytes. The arrays' buffers are
    views of the arrays (a copy only of a non-contiguous one)."""
    tree, arrays = single.encode(obj)
    body, table, offset = [], {}, 0
    for name, a in arrays.items():
        table[name] = [a.dtype.str, list(a.shape), offset, a.nbytes]
        if a.nbytes:
            flat = a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1)
            body.append(memoryview(flat.view(np.uint8)))
            body.append(_PAD[:-a.nbytes % _ALIGN])
        offset += _aligned(a.nbytes)
    head = json.dumps({"format": PART_FORMAT, "tree": tree, "arrays": table}).encode()
    start = _aligned(16 + len(head))
    first = _MAGIC + len(head).to_bytes(8, "little") + head + bytes(start - 16 - len(head))
    return [memoryview(first), *body]


def _write_all(fd: int, bufs: list) -> None:
    """Write ``bufs`` to ``fd`` in as few calls as the system allows (``writev``)."""
    if _WRITEV is None:
        for b in bufs:
            while b:
                b = b[os.write(fd, b):]
        return
    pending, i = list(bufs), 0
    while i < len(pending):
        n = _WRITEV(fd, pending[i:i + _IOV_MAX])
        while i < len(pending) and n >= len(pending[i]):
            n -= len(pending[i])
            i += 1
        if n:
            pending[i] = pending[i][n:]


def _hash_all(sha, bufs) -> None:
    for b in bufs:
        sha.update(b)


def _write(path: str, bufs: list, durable: bool) -> tuple[int, bytes]:
    """Write the part ``bufs`` (``_layout``'s) to the new file ``path``; its size and sha256.
    A big part is hashed in a thread while it is written (hashlib and ``writev`` let go of
    the GIL), from the same buffers: no copy."""
    size = sum(len(b) for b in bufs)
    sha = hashlib.sha256()
    hasher = threading.Thread(target=_hash_all, args=(sha, bufs), name="checkpoint-hash")
    if size >= 1 << 20:
        hasher.start()
    else:
        hasher.run()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            _write_all(fd, bufs)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        if hasher.ident is not None:
            hasher.join()
    return size, sha.digest()


def _rng_state() -> dict:
    return {"functorch_core": fc_random.get_rng_state(),
            "numpy": np.random.get_state(legacy=True)}


def save(state, step: int, dir, *, loader=None, keep: int = 2, durable: bool = True,
         sharded: bool = False) -> str:
    """Save a checkpoint of step ``step`` from every rank (a collective: every rank calls it).

    Rank 0 writes ``state`` (model and optimizer state: it must be the same on every rank,
    as after DDP's all-reduce; other ranks' ``state`` is not read); every rank writes its
    ``loader.state_dict()`` and its random states (``functorch_core.random``'s global
    generator and NumPy's legacy global one). The checkpoint appears, complete, only once
    every rank's part is written; then the oldest complete checkpoints beyond ``keep`` are
    removed.

    Args:
        state: a pytree ``functorch_core.save`` takes (dicts, lists, arrays, scalars).
        step (int): the training step, ``>= 0``; names the folder ``step-<step>``.
        dir (str | os.PathLike): the checkpoint folder (created if need be), seen by every
            rank.
        loader (DataLoader, optional): this rank's DataLoader, whose position is saved.
            Default: ``None``.
        keep (int): how many complete checkpoints to keep, ``>= 1``. Default: ``2``.
        durable (bool): ``fsync`` every file and folder, so that the checkpoint also
            survives a power loss or an OS crash. Without it the save is as atomic against
            a killed process (the rename is) and saves the fsyncs (milliseconds each on
            many disks: four on rank 0, one on every other rank). Default: ``True``.
        sharded (bool): every rank writes its own ``state`` (a shard of the model or of
            the optimizer state), and ``load_latest`` gives each rank its own back; such a
            checkpoint loads only at the same world size. Default: ``False`` (rank 0's).

    Returns:
        str: the checkpoint's folder.

    Example::

        >>> if step % 100 == 0:
        ...     dist.checkpoint.save({"model": model.state_dict(),
        ...                           "optim": opt.state_dict()}, step, "ckpt", loader=loader)
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"checkpoint.save(step={step!r}): expected an int >= 0")
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"checkpoint.save(keep={keep!r}): expected an int >= 1")
    w = mpi.world()
    root = os.fspath(dir)
    final = os.path.join(root, _folder(step))
    tmp = os.path.join(root, f".{_folder(step)}.partial")
    part = {"rank": w.rank, "world_size": w.size, "step": step, "rng": _rng_state(),
            "loader": None if loader is None else loader.state_dict()}
    obj = {"state": state, "part": part} if w.rank == 0 or sharded else {"part": part}
    bufs = _layout(obj)     # raises for what cannot be saved, before any folder or collective
    if w.rank == 0:
        os.makedirs(root, exist_ok=True)
        for name in os.listdir(root):   # killed saves' temporary folders
            if _PARTIAL.fullmatch(name):
                _discard(root, name)
        os.mkdir(tmp)
    mpi.barrier(f" (checkpoint.save(step={step}): the folder {tmp!r} is made)")
    size, digest = _write(os.path.join(tmp, _part(w.rank)), bufs, durable)
    mine = np.frombuffer(np.int64(size).tobytes() + digest, np.uint8)
    every = mpi.all_gather(mine, f" (checkpoint.save(step={step}): the parts' hashes)")
    if w.rank == 0:
        files = {_part(r): {"size": int(row[:8].view(np.int64)[0]),
                            "sha256": row[8:].tobytes().hex()} for r, row in enumerate(every)}
        _commit(root, tmp, final, {"format": FORMAT, "step": step, "world_size": w.size,
                                   "sharded": bool(sharded), "files": files}, durable)
        _prune(root, keep)
    mpi.barrier(f" (checkpoint.save(step={step}): the manifest is written)")
    return final


def _commit(root, tmp, final, manifest, durable) -> None:
    """Write the manifest into ``tmp`` and rename ``tmp`` onto ``final``."""
    path = os.path.join(tmp, MANIFEST)
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        if durable:
            os.fsync(f.fileno())
    if durable:
        _fsync(tmp)
    if os.path.exists(final):       # the same step saved again (a resumed run)
        _discard(root, os.path.basename(final))
    os.replace(tmp, final)
    if durable:
        _fsync(root)


def _prune(root, keep) -> None:
    for old in complete_steps(root)[:-keep]:
        _discard(root, _folder(old))
    _sweep(root)


class _Sweeper:
    """The thread that deletes discarded folders: started by the first sweep, it then waits
    for the next (starting a thread per save costs a fraction of a millisecond)."""

    cond = threading.Condition()
    thread: threading.Thread | None = None
    asks: list = []     # the folders to sweep
    busy = False        # a sweep is asked for or running


def _discard(root, name) -> None:
    """Take the folder ``name`` out of ``root``'s checkpoints at once (a rename); a thread
    deletes it later (deleting folders is slow on some file systems: ext4 with ``discard``
    takes milliseconds per folder)."""
    os.replace(os.path.join(root, name),
               os.path.join(root, f".{name.lstrip('.')}.{secrets.token_hex(4)}.old"))


_PARTIAL = re.compile(r"\.step-(\d{8,})\.partial")


def _sweep_now(root) -> None:
    try:
        names = os.listdir(root)
    except OSError:     # the checkpoint folder itself was removed
        return
    for name in names:
        if name.startswith(".step-") and name.endswith(".old"):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _sweeping() -> None:
    while True:
        with _Sweeper.cond:
            while not _Sweeper.asks:
                _Sweeper.busy = False
                _Sweeper.cond.notify_all()
                _Sweeper.cond.wait()
            root = _Sweeper.asks.pop(0)
        _sweep_now(root)


def _sweep(root) -> None:
    """Delete, in a thread, the discarded folders of ``root`` (also a killed process's)."""
    with _Sweeper.cond:
        if root not in _Sweeper.asks:
            _Sweeper.asks.append(root)
        _Sweeper.busy = True
        if _Sweeper.thread is None or not _Sweeper.thread.is_alive():   # or a forked child
            _Sweeper.thread = threading.Thread(target=_sweeping, name="checkpoint-sweeper",
                                               daemon=True)
            _Sweeper.thread.start()
        _Sweeper.cond.notify_all()


def wait_for_cleanup() -> None:
    """Wait until the folders earlier saves removed are deleted (a thread deletes them).

    Example::

        >>> dist.checkpoint.wait_for_cleanup()
    """
    with _Sweeper.cond:
        while _Sweeper.busy and _Sweeper.thread is not None and _Sweeper.thread.is_alive():
            _Sweeper.cond.wait()


def complete_steps(dir) -> list[int]:
    """The steps of ``dir``'s complete checkpoints (a folder with its manifest), ascending.

    Args:
        dir (str | os.PathLike): the checkpoint folder; a missing one has none.

    Example::

        >>> dist.checkpoint.complete_steps("ckpt")
        [400, 500]
    """
    root = os.fspath(dir)
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for n in names if (m := _STEP.fullmatch(n))
                  and os.path.isfile(os.path.join(root, n, MANIFEST)))


def _read(folder: str, name: str, entry, fmt: str) -> object:
    """The part ``name`` of ``folder``, checked against its manifest ``entry``."""
    path = os.path.join(folder, name)
    try:
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if size != entry["size"]:
                raise CheckpointError(f"load_latest: {path!r} has {size} bytes, its manifest "
                                      f"says {entry['size']} (truncated or altered)")
            data = bytearray(size)
            got = f.readinto(data)
    except FileNotFoundError:
        raise CheckpointError(f"load_latest: {path!r} is missing; its manifest lists "
                              f"it") from None
    if got != size or hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise CheckpointError(f"load_latest: {path!r} does not match its manifest's sha256 "
                              f"(damaged or altered)")
    try:
        if fmt == FORMAT_1:
            return single.load(io.BytesIO(data))
        return _parse(data, path)
    except ValueError as e:
        raise CheckpointError(f"load_latest: {path!r}: {e}") from None


def _parse(data: bytearray, path: str) -> object:
    """The pytree of a part file (``_layout``'s buffers, read back)."""
    n = int.from_bytes(data[8:16], "little")
    try:
        if data[:8] != _MAGIC or len(data) < 16 + n:
            raise ValueError("no part header")
        head = json.loads(data[16:16 + n].decode("utf-8"))
        if head.get("format") != PART_FORMAT:
            raise ValueError(f"format {head.get('format')!r}")
        start, arrays = _aligned(16 + n), {}
        for key, (dtype, shape, offset, nbytes) in head["arrays"].items():
            dt = np.dtype(dtype)
            count = math.prod(shape)
            if (dt.hasobject or dt.fields is not None or min(shape, default=0) < 0
                    or nbytes != count * dt.itemsize or not 0 <= offset
                    or start + offset + nbytes > len(data)):
                raise ValueError(f"array {key!r}: {dtype} {shape} at {offset}")
            arrays[key] = (np.frombuffer(data, np.uint8, nbytes, start + offset).view(dt)
                           .reshape(shape) if nbytes else np.zeros(shape, dt))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        raise CheckpointError(f"load_latest: {path!r} is not a part of {PART_FORMAT!r} "
                              f"({type(e).__name__}: {e})") from None
    return single.decode(head["tree"], arrays, repr(path))


def _manifest(folder: str) -> dict:
    path = os.path.join(folder, MANIFEST)
    try:
        with open(path) as f:
            doc = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"load_latest: {path!r} is not JSON: {e}") from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    ok = (fmt in (FORMAT, FORMAT_1)
          and isinstance(doc.get("world_size"), int) and isinstance(doc.get("files"), dict)
          and all(isinstance(e, dict) and isinstance(e.get("size"), int)
                  and isinstance(e.get("sha256"), str) for e in doc["files"].values())
          and set(doc["files"]) == {_part(r, fmt) for r in range(doc["world_size"])})
    if not ok:
        raise CheckpointError(f"load_latest: {path!r} is not a manifest of {FORMAT!r} "
                              f"listing one part per rank")
    return doc


def _load(root: str, step: int, any_world_size: bool) -> Checkpoint:
    folder = os.path.join(root, _folder(step))
    doc = _manifest(folder)
    w = mpi.world()
    old, sharded = doc["world_size"], doc.get("sharded") is True
    if old != w.size and sharded:
        raise CheckpointError(f"load_latest: {folder!r} holds a state sharded over {old} "
                              f"ranks, this job has {w.size}: a sharded state loads only at "
                              f"its world size")
    if old != w.size and not any_world_size:
        raise CheckpointError(f"load_latest: {folder!r} was saved by {old} ranks, this job "
                              f"has {w.size}; pass any_world_size=True to re-shard the data")
    # every rank checks every part, so that all reach the same verdict without a collective
    parts = [_read(folder, _part(r, doc["format"]), doc["files"][_part(r, doc["format"])],
                   doc["format"]) for r in range(old)]
    holders = parts if sharded else parts[:1]
    if not all(isinstance(p, dict) and isinstance(p.get("part"), dict) for p in parts) \
            or not all("state" in p for p in holders):
        raise CheckpointError(f"load_latest: {folder!r}: a part is not a checkpoint part")
    state = parts[w.rank]["state"] if sharded else parts[0]["state"]
    mine = [p["part"] for p in parts]
    loaders = [p.get("loader") for p in mine]
    if any(s is None for s in loaders):
        loader = None
    elif old == w.size:
        loader = loaders[w.rank]
    else:
        loader = reshard(loaders, w.rank, w.size)
    rng = mine[w.rank]["rng"] if w.rank < old else None
    return Checkpoint(state, step, loader, rng, old, folder)


def load_latest(dir, *, fallback: bool = False, any_world_size: bool = False,
                restore_rng: bool = True) -> Checkpoint | None:
    """The newest complete checkpoint of ``dir``, or ``None`` when it has none.

    Every file is checked against the manifest (size and sha256): a truncated or altered
    one raises ``CheckpointError`` naming it. Folders without a manifest (a save that was
    killed) are ignored.

    Args:
        dir (str | os.PathLike): the checkpoint folder.
        fallback (bool): on a damaged checkpoint, warn and try the next older one instead
            of raising. Default: ``False``.
        any_world_size (bool): accept a checkpoint saved by another number of ranks: each
            rank gets the DataLoader state that delivers the rest of the saved epoch exactly
            once across the new ranks (map-style datasets; see
            ``functorch_core.data.loader_state.reshard``). Default: ``False`` (refused).
        restore_rng (bool): set this rank's random states to the saved ones. Default:
            ``True``.

    Returns:
        Checkpoint | None

    Example::

        >>> ckpt = dist.checkpoint.load_latest("ckpt")
        >>> if ckpt is not None:
        ...     model.load_state_dict(ckpt.state["model"]); loader.load_state_dict(ckpt.loader)
        ...     start = ckpt.step + 1
    """
    root = os.fspath(dir)
    for step in reversed(complete_steps(root)):
        try:
            ckpt = _load(root, step, any_world_size)
        except CheckpointError as e:
            if not fallback:
                raise
            warnings.warn(f"{e}; trying the previous checkpoint", stacklevel=2)
            continue
        if restore_rng and ckpt.rng is not None:
            fc_random.set_rng_state(ckpt.rng["functorch_core"])
            np.random.set_state(ckpt.rng["numpy"])
        return ckpt
    return None
