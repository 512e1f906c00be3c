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
again. Any error reading or writing the folder only costs a recompilation, never the call.
The folder is bounded to :data:`MAX_BYTES`: after a write that takes it past the bound,
the least recently used entries (by modification time, refreshed on every hit) are
removed until it is back under three quarters of it.

Entries are machine code that runs in the process: point the cache only at a folder
that no one else can write (the default is per user; entries are created mode 0600).
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import time
from collections import Counter

import llvmlite
from llvmlite import binding as llvm

FORMAT = 1
MAX_BYTES = 256 << 20
_MAGIC = b"FCOBJ%03d" % FORMAT
_HEADER = struct.Struct(f"<{len(_MAGIC)}s32sQ32s")   # magic, key, payload length, sha256
_SUFFIX = ".o"
_STALE_TMP_S = 3600

#: What happened so far in this process: ``hits`` (objects loaded from disk), ``misses``
#: (no usable entry), ``compiled`` (modules LLVM optimized and compiled), ``writes``,
#: ``corrupt`` (entries ignored), ``errors`` (reads or writes that failed), ``evicted``.
stats: Counter = Counter()
_lock = threading.Lock()


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
    failing its checks)."""
    folder = _folder()
    if folder is None:
        return None
    path = _path(folder, digest)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        stats["misses"] += 1
        return None
    except OSError:
        stats["errors"] += 1
        stats["misses"] += 1
        return None
    payload = _check(data, digest)
    if payload is None:
        stats["corrupt"] += 1
        stats["misses"] += 1
        return None
    try:
        os.utime(path)      # least recently used eviction goes by modification time
    except OSError:
        pass
    stats["hits"] += 1
    return payload


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
    written (disabled, unwritable folder, full disk...), which callers may ignore."""
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
        os.replace(tmp, _path(folder, digest))
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

        >>> from backends.llvm import cache
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
