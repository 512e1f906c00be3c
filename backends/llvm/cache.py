"""On-disk cache of the object code MCJIT generates for a graph's kernels.

An entry is keyed by a digest of the module's unoptimized LLVM IR together with
everything else that shapes the machine code: the llvmlite and LLVM versions, the
target triple, the host CPU name and features, the optimization pipeline and a format
version. A second process that builds the same IR loads the object code instead of
optimizing and compiling it again.

Where entries live: ``$FUNCTORCH_CORE_CACHE_DIR`` when set (an empty value disables the
cache), else ``$XDG_CACHE_HOME/functorch_core`` or ``~/.cache/functorch_core``; objects go
in its ``llvm`` folder. The folder is read at every compilation, so changing the
variable takes effect for the next graph compiled.

Robustness: an entry is written to a temporary file and renamed into place, so readers
never see half an entry; each entry carries its key, length and SHA-256, and one that
does not check out (truncated, corrupt, from another format) is ignored and compiled
again; so is one whose object code would make LLVM abort (checked by ``objcheck`` before
LLVM sees it). An entry is opened without blocking and without following a symbolic link, and
read only when it is a regular file of at most :data:`MAX_ENTRY_BYTES`; anything else at
its name (a FIFO, a folder, a device, a huge file) is removed and compiled again. Any
error reading or writing the folder only costs a recompilation, never the call.
The folder is bounded to :data:`MAX_BYTES`: after a write that takes it past the bound,
the least recently used entries (by modification time, refreshed on every hit) are
removed until it is back under three quarters of it.

Entries are machine code that runs in the process: point the cache only at a folder
that no one else can write (the default is per user; entries are created mode 0600).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import struct
import tempfile
import threading
import time
from collections import Counter

import llvmlite
from llvmlite import binding as llvm

FORMAT = 1
MAX_BYTES = 256 << 20
MAX_ENTRY_BYTES = 64 << 20      # no module's object code comes near: bigger is not ours
_MAGIC = b"FCOBJ%03d" % FORMAT
_HEADER = struct.Struct(f"<{len(_MAGIC)}s32sQ32s")   # magic, key, payload length, sha256
_SUFFIX = ".o"
_STALE_TMP_S = 3600

#: What happened so far in this process: ``hits`` (objects loaded from disk), ``misses``
#: (no usable entry), ``compiled`` (modules LLVM optimized and compiled), ``writes``,
#: ``corrupt`` (entries ignored), ``errors`` (reads or writes that failed), ``evicted``.
stats: Counter = Counter()
_lock = threading.Lock()


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()    # a thread of the parent may have held it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def directory() -> str | None:
    """The cache folder, or None when caching is disabled (``FUNCTORCH_CORE_CACHE_DIR=""``).

    Example::

        >>> os.environ["FUNCTORCH_CORE_CACHE_DIR"] = "/tmp/fc-cache"
        >>> directory()
        '/tmp/fc-cache'
    """
    configured = os.environ.get("FUNCTORCH_CORE_CACHE_DIR")
    if configured is not None:
        return configured or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "functorch_core")


def key(ir_text: str, target: str) -> str:
    """The hex digest naming the object code of ``ir_text`` compiled for ``target`` (a
    description of the target machine and pipeline, see ``runtime.target_description``)."""
    h = hashlib.sha256()
    for part in (f"format {FORMAT}", f"llvmlite {llvmlite.__version__}",
                 "llvm " + ".".join(map(str, llvm.llvm_version_info)), target, ir_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _folder() -> str | None:
    root = directory()
    return None if root is None else os.path.join(root, "llvm")


def _path(folder: str, digest: str) -> str:
    return os.path.join(folder, digest + _SUFFIX)


def load(digest: str) -> bytes | None:
    """The cached object code for ``digest``, or None (absent, disabled, unreadable or
    failing its checks); never raises."""
    try:
        folder = _folder()
        if folder is None:
            return None
        return _load(_path(folder, digest), digest)
    except Exception:  # a cache problem only costs a recompilation
        stats["errors"] += 1
        stats["misses"] += 1
        return None


def _load(path: str, digest: str) -> bytes | None:
    try:
        data = _read_entry(path)
    except FileNotFoundError:
        stats["misses"] += 1
        return None
    except (OSError, MemoryError):
        stats["errors"] += 1
        stats["misses"] += 1
        return None
    payload = None if data is None else _check(data, digest)
    if payload is None:
        stats["corrupt"] += 1
        stats["misses"] += 1
        _remove(path)
        return None
    try:
        os.utime(path)      # least recently used eviction goes by modification time
    except OSError:
        pass
    stats["hits"] += 1
    return payload


def _read_entry(path: str) -> bytes | None:
    """The bytes of the entry at ``path``, or None when it is not a regular file of at
    most MAX_ENTRY_BYTES. Opened non-blocking (a FIFO does not wait for a writer) and
    not through a symbolic link."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        return None
    except OSError:
        if os.path.islink(path) or os.path.isdir(path):     # O_NOFOLLOW's ELOOP, or a folder
            return None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, left = [], st.st_size + 1     # one more byte: growing while read is corrupt
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def discard(digest: str):
    """Count the entry for ``digest`` as corrupt (a hit that turned out unusable: see
    ``objcheck``) and remove it; never raises."""
    stats["hits"] -= 1
    stats["corrupt"] += 1
    stats["misses"] += 1
    try:
        folder = _folder()
        if folder is not None:
            _remove(_path(folder, digest))
    except Exception:  # a cache problem only costs a recompilation
        stats["errors"] += 1


def _remove(path: str):
    """Remove whatever is at an entry's name (file, link, FIFO or folder); never raises."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _check(data: bytes, digest: str) -> bytes | None:
    if len(data) < _HEADER.size:
        return None
    magic, stored_key, length, sha = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if (magic != _MAGIC or stored_key != bytes.fromhex(digest) or length != len(payload)
            or hashlib.sha256(payload).digest() != sha):
        return None
    return payload


def store(digest: str, obj: bytes) -> bool:
    """Write ``obj`` as the entry for ``digest`` (atomically); False when it could not be
    written (disabled, unwritable folder, full disk...), which callers may ignore; never
    raises."""
    try:
        return _store(digest, obj)
    except Exception:  # a cache problem only costs the next process a recompilation
        stats["errors"] += 1
        return False


def _store(digest: str, obj: bytes) -> bool:
    folder = _folder()
    if folder is None:
        return False
    header = _HEADER.pack(_MAGIC, bytes.fromhex(digest), len(obj), hashlib.sha256(obj).digest())
    tmp = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=_SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(obj)
        path = _path(folder, digest)
        if os.path.isdir(path) and not os.path.islink(path):
            _remove(path)       # a folder in an entry's place: repaired
        os.replace(tmp, path)
        tmp = None
    except OSError:
        stats["errors"] += 1
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    stats["writes"] += 1
    _evict(folder)
    return True


def _evict(folder: str, limit: int | None = None):
    """Remove least recently used entries while the folder holds more than ``limit``
    bytes (:data:`MAX_BYTES` by default), down to three quarters of it; also remove
    temporary files that a crashed writer left behind."""
    limit = MAX_BYTES if limit is None else limit
    with _lock:
        try:
            entries = []
            now = time.time()
            with os.scandir(folder) as it:
                for e in it:
                    st = e.stat()
                    if e.name.startswith(".tmp-"):
                        if now - st.st_mtime > _STALE_TMP_S:
                            _unlink(e.path)
                    elif e.name.endswith(_SUFFIX):
                        entries.append((st.st_mtime, st.st_size, e.path))
        except OSError:
            stats["errors"] += 1
            return
        total = sum(size for _, size, _ in entries)
        if total <= limit:
            return
        for _, size, path in sorted(entries):
            if total <= limit * 3 // 4:
                break
            if _unlink(path):
                total -= size
                stats["evicted"] += 1


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


def clear() -> int:
    """Remove every entry of the current cache folder; returns how many were removed.

    Example::

        >>> from functorch_core.backends.llvm import cache
        >>> cache.clear()
        3
    """
    folder = _folder()
    if folder is None or not os.path.isdir(folder):
        return 0
    removed = 0
    for name in os.listdir(folder):
        if name.endswith(_SUFFIX) and not name.startswith(".tmp-"):
            removed += _unlink(os.path.join(folder, name))
    return removed
