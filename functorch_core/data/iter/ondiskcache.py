"""Caching a pipeline's output files on disk: ``on_disk_cache`` ... ``end_caching``.

``source.on_disk_cache(filepath_fn)`` marks where caching starts: each source
item names a file (``filepath_fn(item)``). ``end_caching`` runs the pipes in
between only for the items whose file is missing (or fails its hash or check),
writes what they produce to disk and yields the file paths: first the files
written now, then the files found cached (TorchData's order). One file per
source item.
"""

from __future__ import annotations

import os
import tempfile

from ..datapipe import IterDataPipe, functional_datapipe
from ..graph import list_datapipes
from ._pipeutil import HASHES, check_hash_type, close_quietly
from .fileio import _write_mode

__all__ = ["EndOnDiskCacheHolder", "OnDiskCacheHolder"]

def _file_hash(path: str, hash_type: str) -> str:
    h = HASHES[hash_type]()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@functional_datapipe("on_disk_cache")
class OnDiskCacheHolder(IterDataPipe):
    """Start a section whose output files are cached on disk
    (functional name: ``on_disk_cache``); close it with ``end_caching``.

    Args:
        source_datapipe (IterDataPipe): yields items that each name one file.
        filepath_fn (callable or None): default ``None`` (the item is the path);
            item to the cached file's path.
        hash_dict (dict or None): default ``None``; ``{path: hex digest}``: a cached
            file with another hash is produced again (and a new one is checked).
        hash_type (str): default ``"sha256"``; or ``"md5"``.
        extra_check_fn (callable or None): default ``None``; ``fn(path) -> bool``,
            ``False`` means the cached file is stale.

    Example::

        >>> def local(url):
        ...     return os.path.join("cache", os.path.basename(url))
        >>> dp = IterableWrapper(urls).on_disk_cache(filepath_fn=local)  # doctest: +SKIP
        >>> dp = dp.read_from_http().end_caching(mode="wb", same_filepath_fn=True)
    """

    def __init__(self, source_datapipe, filepath_fn=None, hash_dict: dict | None = None,
                 hash_type: str = "sha256", extra_check_fn=None) -> None:
        check_hash_type("OnDiskCacheHolder", hash_type)
        self.source_datapipe = source_datapipe
        self.filepath_fn = filepath_fn
        self.hash_dict = hash_dict
        self.hash_type = hash_type
        self.extra_check_fn = extra_check_fn
        self._end_caching_flag = False
        self._cached: list[str] = []

    def filepath(self, item) -> str:
        path = item if self.filepath_fn is None else self.filepath_fn(item)
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"OnDiskCacheHolder: filepath_fn must return one path (str), got "
                            f"{type(path).__name__} for {item!r}")
        return os.fspath(path)

    def is_cached(self, path: str) -> bool:
        if not os.path.isfile(path):
            return False
        if self.hash_dict is not None:
            if path not in self.hash_dict:
                raise RuntimeError(f"OnDiskCacheHolder: no expected hash for {path!r} in "
                                   "hash_dict")
            if _file_hash(path, self.hash_type) != self.hash_dict[path]:
                return False
        return self.extra_check_fn is None or bool(self.extra_check_fn(path))

    def __iter__(self):
        """Yield the items whose file is not cached; note the paths of those that are."""
        if not self._end_caching_flag:
            raise RuntimeError("OnDiskCacheHolder: call .end_caching() on the pipeline "
                               "before iterating it")
        self._cached = []
        for item in self.source_datapipe:
            path = self.filepath(item)
            if self.is_cached(path):
                self._cached.append(path)
            else:
                yield item

    def __getstate__(self):
        state = dict(vars(self))
        state["_cached"] = []
        return state


def _read_all(data, text: bool, path: str, mode: str):
    if isinstance(data, (bytes, bytearray, str)):
        return data
    try:
        return ("" if text else b"").join(data)
    except TypeError:
        raise TypeError(f"EndOnDiskCacheHolder: the stream for {path!r} gives "
                        f"{'bytes' if text else 'str'}, which mode {mode!r} cannot write "
                        f"(use mode={'b' if text else 't'!r})") from None
    finally:
        close_quietly(data)


@functional_datapipe("end_caching")
class EndOnDiskCacheHolder(IterDataPipe):
    """End the section started by the nearest ``on_disk_cache`` above: write each
    ``(meta, data)`` to a file and yield the paths, then the cached paths
    (functional name: ``end_caching``).

    Files are written to a temporary name and renamed, so a reader never sees a
    partial file and concurrent workers at worst write the same file twice.

    Args:
        datapipe (IterDataPipe): yields ``(meta, data)``; ``data`` is bytes/str or
            a stream (read to its end unless ``skip_read``).
        mode (str): default ``"wb"`` (bytes); ``"w"``/``"wt"`` for text. As in
            TorchData, ``"b"`` is ``"wb"`` and ``"t"`` is ``"wt"``.
        filepath_fn (callable or None): default ``None`` (``meta`` is the path).
        same_filepath_fn (bool): default ``False``; use ``on_disk_cache``'s
            ``filepath_fn`` on ``meta`` (exclusive with ``filepath_fn``).
        skip_read (bool): default ``False``; ``data`` is written as given.
        timeout (int): default ``300``; accepted for TorchData compatibility (no
            cross-process waiting is done).

    Example::

        >>> dp = IterableWrapper(["a.txt"]).on_disk_cache()  # doctest: +SKIP
        >>> dp = dp.map(make_contents).end_caching(mode="w")
    """

    _resume_blocker = ("EndOnDiskCacheHolder: its output order depends on which files were "
                       "already cached when the epoch began")
    _repr_args = ("mode", "same_filepath_fn")

    def __init__(self, datapipe, mode: str = "wb", filepath_fn=None, *,
                 same_filepath_fn: bool = False, skip_read: bool = False,
                 timeout: int = 300) -> None:
        if filepath_fn is not None and same_filepath_fn:
            raise ValueError("EndOnDiskCacheHolder: filepath_fn and same_filepath_fn=True "
                             "exclude each other")
        mode = _write_mode(mode)
        if mode not in ("w", "wb", "wt"):
            raise ValueError("EndOnDiskCacheHolder: mode must be 'w', 'wt', 'wb', 't' or 'b', "
                             f"got {mode!r}")
        holders = [p for p in list_datapipes(datapipe) if isinstance(p, OnDiskCacheHolder)]
        if not holders:
            raise RuntimeError("EndOnDiskCacheHolder: no on_disk_cache() above "
                               f"{datapipe!r} in the pipeline")
        holder = holders[0]
        if holder._end_caching_flag:
            raise RuntimeError("EndOnDiskCacheHolder: end_caching() was already called for "
                               f"{holder!r}")
        holder._end_caching_flag = True
        self.datapipe = datapipe
        self.cache_holder = holder
        self.mode = mode
        self.filepath_fn = filepath_fn
        self.same_filepath_fn = same_filepath_fn
        self.skip_read = skip_read
        self.timeout = timeout

    def _path(self, meta) -> str:
        if self.same_filepath_fn:
            return self.cache_holder.filepath(meta)
        return os.fspath(meta if self.filepath_fn is None else self.filepath_fn(meta))

    def _write(self, path: str, data) -> None:
        binary = "b" in self.mode
        if isinstance(data, str) == binary:
            raise TypeError(f"EndOnDiskCacheHolder: data for {path!r} is "
                            f"{type(data).__name__}, which mode {self.mode!r} cannot write")
        folder = os.path.dirname(path) or "."
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".partial-")
        try:
            with os.fdopen(fd, "wb" if binary else "w") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

    def __iter__(self):
        holder = self.cache_holder
        text = "b" not in self.mode
        for meta, data in self.datapipe:
            path = self._path(meta)
            if not self.skip_read:
                data = _read_all(data, text, path, self.mode)
            if holder.hash_dict is not None:
                got = HASHES[holder.hash_type](
                    data.encode() if isinstance(data, str) else data).hexdigest()
                if holder.hash_dict.get(path) != got:
                    raise RuntimeError(f"EndOnDiskCacheHolder: the {holder.hash_type} of the "
                                       f"data for {path!r} is {got}, expected "
                                       f"{holder.hash_dict.get(path)}")
            self._write(path, data)
            yield path
        yield from holder._cached
