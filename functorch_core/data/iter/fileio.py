"""Files on the local disk: ``list_files``, ``open_files``, ``save_to_disk``,
``read_from_stream`` and ``check_hash``.

File handles are opened in ``__iter__`` (never held by a pipe) and yielded as
``(path, stream)`` pairs; the pipe that reads a stream to its end closes it.
"""

from __future__ import annotations

import fnmatch
import os

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import HASHES, check_hash_type

__all__ = ["FileLister", "FileOpener", "HashChecker", "Saver", "StreamReader"]


def _masks(masks) -> list[str]:
    if isinstance(masks, str):
        return [masks] if masks else []
    return list(masks)


def _matches(name: str, masks: list[str]) -> bool:
    return not masks or any(fnmatch.fnmatch(name, m) for m in masks)


def _walk(pipe: str, root: str, masks, recursive, abspath, non_deterministic):
    if os.path.isfile(root):
        path = os.path.abspath(root) if abspath else root
        if _matches(os.path.basename(path), masks):
            yield path
        return
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{pipe}: root {root!r} is neither a file nor a directory")

    def onerror(err):
        raise OSError(f"{pipe}: cannot list {err.filename!r}: {err.strerror}") from err

    for path, dirs, files in os.walk(root, onerror=onerror):
        if abspath:
            path = os.path.abspath(path)
        if not non_deterministic:
            files.sort()
            dirs.sort()
        for f in files:
            if _matches(f, masks):
                yield os.path.join(path, f)
        if not recursive:
            break


@functional_datapipe("list_files")
class FileLister(IterDataPipe):
    """Yield the paths of the files under ``root`` whose names match ``masks``
    (functional name: ``list_files``).

    Args:
        root (str, list of str or IterDataPipe): default ``"."``; directories
            (or files) to list.
        masks (str or list of str): default ``""`` (every file); Unix shell-style
            patterns matched against file names, e.g. ``"*.csv"``.
        recursive (bool): default ``False``; descend into subdirectories.
        abspath (bool): default ``False``; yield absolute paths.
        non_deterministic (bool): default ``False``: names are sorted per
            directory (so an epoch is reproducible); ``True`` keeps ``os.walk``'s order.
        length (int): default ``-1`` (no ``len()``); the declared length.

    Example::

        >>> list(FileLister("data", masks="*.csv"))   # doctest: +SKIP
        ['data/a.csv', 'data/b.csv']
    """

    def __init__(self, root="." , masks="", *, recursive: bool = False, abspath: bool = False,
                 non_deterministic: bool = False, length: int = -1) -> None:
        if isinstance(root, str):
            root = (root,)
        elif not isinstance(root, IterDataPipe):
            root = tuple(root)
        self.datapipe = root
        self.masks = _masks(masks)
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self):
        for r in self.datapipe:
            yield from _walk("FileLister", r, self.masks, self.recursive, self.abspath,
                             self.non_deterministic)

    def __len__(self) -> int:
        if self.length == -1:
            raise TypeError("FileLister instance doesn't have valid length (pass length=)")
        return self.length

    def __repr__(self) -> str:
        root = self.datapipe if isinstance(self.datapipe, IterDataPipe) else list(self.datapipe)
        return f"FileLister(root={root!r}, masks={self.masks!r}, recursive={self.recursive})"


# TorchData's accepted set: the one-letter "b" and "t" mean "rb" and "rt"
_OPEN_MODES = ("r", "rb", "rt", "b", "t")


@functional_datapipe("open_files")
class FileOpener(IterDataPipe):
    """Open each path and yield ``(path, stream)`` (functional name: ``open_files``).

    Args:
        datapipe (IterDataPipe): yields file paths.
        mode (str): default ``"r"`` (text); one of ``"r"``, ``"rt"``, ``"t"``
            (text) or ``"rb"``, ``"b"`` (binary), as in TorchData.
        encoding (str or None): default ``None`` (``open``'s default); for text
            modes only.
        length (int): default ``-1`` (the source's length, if any).

    Example::

        >>> dp = FileLister("data", "*.txt").open_files()   # doctest: +SKIP
        >>> for path, stream in dp:
        ...     print(path, stream.read())
    """

    _repr_args = ("mode", "encoding")

    def __init__(self, datapipe, mode: str = "r", encoding: str | None = None,
                 length: int = -1) -> None:
        if mode not in _OPEN_MODES:
            raise ValueError(f"FileOpener: mode must be one of {_OPEN_MODES}, got {mode!r}")
        if encoding is not None and "b" in mode:
            raise ValueError(f"FileOpener: encoding={encoding!r} needs a text mode, got {mode!r}")
        self.datapipe = datapipe
        self.mode = "r" + mode if mode in ("b", "t") else mode
        self.encoding = encoding
        self.length = length

    def __iter__(self):
        for path in self.datapipe:
            try:
                stream = open(path, self.mode, encoding=self.encoding)
            except OSError as e:
                raise type(e)(e.errno, f"FileOpener: cannot open {path!r} (mode "
                              f"{self.mode!r}): {e.strerror}") from e
            yield path, stream

    def __len__(self) -> int:
        return len(self.datapipe) if self.length == -1 else self.length


def _write_mode(mode: str) -> str:
    """TorchData's write modes: "b" and "t" (no w or a) mean "wb" and "wt"."""
    return "w" + mode if mode in ("b", "t") else mode


@functional_datapipe("save_to_disk")
class Saver(IterDataPipe):
    """Write each ``(metadata, data)`` pair to a file and yield its path
    (functional name: ``save_to_disk``).

    Args:
        source_datapipe (IterDataPipe): yields ``(metadata, data)``; ``data`` is
            ``str`` or ``bytes``.
        mode (str): default ``"w"`` (text); ``"wb"`` for bytes; ``"a"``/``"ab"``
            append. As in TorchData, a mode without ``w`` or ``a`` is a write
            mode: ``"b"`` is ``"wb"`` and ``"t"`` is ``"wt"``.
        filepath_fn (callable or None): default ``None`` (the metadata is the
            path); maps metadata to a path. Missing directories are created.

    Example::

        >>> def name(i):
        ...     return f"/tmp/out/{i}.txt"
        >>> list(IterableWrapper([(0, "a")]).save_to_disk(filepath_fn=name))  # doctest: +SKIP
        ['/tmp/out/0.txt']
    """

    _len_source = "source_datapipe"
    _repr_args = ("mode",)

    def __init__(self, source_datapipe, mode: str = "w", filepath_fn=None) -> None:
        mode = _write_mode(mode)
        if mode not in ("w", "wb", "wt", "a", "ab", "at"):
            raise ValueError(f"Saver: mode must be a write or append mode, got {mode!r}")
        self.source_datapipe = source_datapipe
        self.mode = mode
        self.filepath_fn = filepath_fn

    def __iter__(self):
        for meta, data in self.source_datapipe:
            path = meta if self.filepath_fn is None else self.filepath_fn(meta)
            folder = os.path.dirname(path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            if isinstance(data, bytes) != ("b" in self.mode):
                raise TypeError(f"Saver: data for {path!r} is {type(data).__name__}, which mode "
                                f"{self.mode!r} cannot write")
            with open(path, self.mode) as f:
                f.write(data)
            yield path


@functional_datapipe("read_from_stream")
class StreamReader(IterDataPipe):
    """Read each ``(path, stream)`` in chunks and yield ``(path, chunk)``; the stream is
    closed at its end (functional name: ``read_from_stream``).

    Args:
        datapipe (IterDataPipe): yields ``(path, stream)``.
        chunk (int or None): default ``None``: the whole stream at once.

    Example::

        >>> list(FileOpener(["a.bin"], mode="rb").read_from_stream(2))  # doctest: +SKIP
        [('a.bin', b'ab'), ('a.bin', b'c')]
    """

    _repr_args = ("chunk",)

    def __init__(self, datapipe, chunk: int | None = None) -> None:
        if chunk is not None and chunk <= 0:
            raise ValueError(f"StreamReader: chunk must be > 0 or None, got {chunk!r}")
        self.datapipe = datapipe
        self.chunk = chunk

    def __iter__(self):
        for path, stream in self.datapipe:
            try:
                while d := stream.read(-1 if self.chunk is None else self.chunk):
                    yield path, d
            finally:
                stream.close()


@functional_datapipe("check_hash")
class HashChecker(IterDataPipe):
    """Check each ``(path, data)``'s hash against ``hash_dict[path]`` and pass it on
    (functional name: ``check_hash``).

    Args:
        source_datapipe (IterDataPipe): yields ``(path, stream or bytes)``.
        hash_dict (dict): ``{path: hex digest}``.
        hash_type (str): default ``"sha256"``; or ``"md5"``.
        rewind (bool): default ``True``; seek a stream back to its start after
            hashing it (a stream that cannot seek needs ``rewind=False``).

    Raises ``RuntimeError`` naming the file on a missing or wrong hash.

    Example::

        >>> dp = FileOpener(["a.bin"], mode="rb").check_hash({"a.bin": "ba78..."})  # doctest: +SKIP
    """

    _len_source = "source_datapipe"

    def __init__(self, source_datapipe, hash_dict: dict, hash_type: str = "sha256",
                 rewind: bool = True) -> None:
        check_hash_type("HashChecker", hash_type)
        self.source_datapipe = source_datapipe
        self.hash_dict = hash_dict
        self.hash_type = hash_type
        self.rewind = rewind

    def __iter__(self):
        for path, data in self.source_datapipe:
            if path not in self.hash_dict:
                raise RuntimeError(f"HashChecker: no expected hash for {path!r} in hash_dict")
            h = HASHES[self.hash_type]()
            if isinstance(data, (bytes, bytearray)):
                h.update(data)
            elif isinstance(data, str):
                h.update(data.encode())
            else:
                while block := data.read(1 << 20):
                    h.update(block.encode() if isinstance(block, str) else block)
                if self.rewind:
                    data.seek(0)
            if h.hexdigest() != self.hash_dict[path]:
                raise RuntimeError(f"HashChecker: the {self.hash_type} of {path!r} is "
                                   f"{h.hexdigest()}, expected {self.hash_dict[path]}")
            yield path, data

    def __repr__(self) -> str:
        return f"HashChecker(hash_type={self.hash_type!r}, {len(self.hash_dict)} files)"
