"""Archives and compressed files: ``load_from_tar``, ``load_from_zip``,
``load_from_bz2``, ``load_from_xz`` and ``decompress``.

Each takes ``(path, stream)`` pairs. Archive members are yielded as
``(archive_path/member_name, stream)`` and must be read before the next member
is requested (the member streams read from the archive's stream). A corrupt
archive or compressed stream raises an error naming the pipe and the file.

``decompress`` yields a ``tarfile.TarFile`` or ``zipfile.ZipFile`` for an
archive; ``load_from_tar`` and ``load_from_zip`` take those as they are, so
``open_files("b").decompress().load_from_tar()`` reads a ``.tar.gz``. A tar
stream that cannot seek (a decompressed ``.tar.bz2``, an HTTP body) is read in
``tarfile``'s streaming mode (``"r:*"`` becomes ``"r|*"``), as in TorchData.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import pathlib
import tarfile
import warnings
import zipfile
import zlib

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import close_quietly

__all__ = ["Bz2FileLoader", "Decompressor", "Extractor", "TarArchiveLoader", "XzFileLoader",
           "ZipArchiveLoader"]

_CORRUPT = (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError,
            zlib.error)


class _CheckedStream(io.RawIOBase):
    """A read-only stream whose read errors name the pipe and the file."""

    def __init__(self, pipe: str, path: str, what: str, inner, outer=None,
                 on_close=None) -> None:
        super().__init__()
        self._pipe, self._path, self._what = pipe, path, what
        self._inner, self._outer, self._on_close = inner, outer, on_close

    def _fail(self, e):
        keep = isinstance(e, (EOFError, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError,
                              zlib.error))
        return (type(e) if keep else OSError)(
            f"{self._pipe}: {self._path!r} is not a valid {self._what}: {e}")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            data = self._inner.read(len(b))
        except _CORRUPT as e:
            raise self._fail(e) from e
        b[:len(data)] = data
        return len(data)

    def read(self, size=-1) -> bytes:
        try:
            return self._inner.read(-1 if size is None else size)
        except _CORRUPT as e:
            raise self._fail(e) from e

    def readline(self, size=-1) -> bytes:
        try:
            return self._inner.readline(size)
        except _CORRUPT as e:
            raise self._fail(e) from e

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
                if self._outer is not None:
                    self._outer.close()
            finally:
                if self._on_close is not None:
                    self._on_close()
        super().close()


class _Members:
    """An archive's member streams and what they read from (the archive, its source
    stream): those close when the archive has no member left to give AND every member
    stream handed out is closed, as TorchData's streams close their parent. A pipe that
    reads one item ahead (``batch``, ``webdataset``, ``groupby``) still reads the last
    members of an archive."""

    def __init__(self, *sources) -> None:
        self.sources, self.open, self.done = list(sources), 0, False

    def hand_out(self, pipe, path, what, inner) -> _CheckedStream:
        self.open += 1
        return _CheckedStream(pipe, path, what, inner, on_close=self._closed_one)

    def _closed_one(self) -> None:
        self.open -= 1
        self._maybe_close()

    def finish(self) -> None:
        self.done = True
        self._maybe_close()

    def close_now(self) -> None:
        self.done, self.open = True, 0
        self._maybe_close()

    def _maybe_close(self) -> None:
        if self.done and self.open <= 0:
            while self.sources:
                close_quietly(self.sources.pop())


def _seekable(stream) -> bool:
    seekable = getattr(stream, "seekable", None)
    return bool(seekable()) if seekable is not None else hasattr(stream, "seek")


class _OwnsSource:
    """An archive (what ``decompress`` yields) that closes its source stream with itself."""

    _source = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            close_quietly(self._source)


class _OwningTarFile(_OwnsSource, tarfile.TarFile):
    pass


class _OwningZipFile(_OwnsSource, zipfile.ZipFile):
    pass


def _open_tar(stream, mode: str, cls=tarfile.TarFile):
    """``cls.open`` on ``stream``; a stream that cannot seek is read in streaming mode."""
    if not _seekable(stream):
        # TorchData's rule ("r:gz" -> "r|gz"); a bare "r" means "r:*"
        mode = mode.replace(":", "|") if ":" in mode else ("r|*" if mode == "r" else mode)
    return cls.open(fileobj=stream, mode=mode)


class _ArchiveLoader(IterDataPipe):
    """Each archive's members out, by the subclass's ``_members(path, stream)``
    generator; the archive's stream is closed after them."""

    def __init__(self, datapipe, length: int = -1) -> None:
        self.datapipe = datapipe
        self.length = length

    def __iter__(self):
        for path, stream in self.datapipe:
            members = _Members(stream)
            try:
                yield from self._members(path, stream, members)
            except Exception:
                members.close_now()
                raise
            finally:
                members.finish()    # on exhaustion, or when the consumer stops early

    def __len__(self) -> int:
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length "
                            "(pass length=)")
        return self.length


@functional_datapipe("load_from_tar")
class TarArchiveLoader(_ArchiveLoader):
    """Yield ``(path/member, stream)`` for each regular file in each tar archive
    (functional name: ``load_from_tar``).

    Args:
        datapipe (IterDataPipe): yields ``(path, binary stream)`` or, from
            ``decompress``, ``(path, tarfile.TarFile)``.
        mode (str): default ``"r:*"`` (any compression); see ``tarfile.open``.
            On a stream that cannot seek, ``":"`` becomes ``"|"`` (streaming).
        length (int): default ``-1`` (no ``len()``).

    Example::

        >>> dp = FileLister("shards", "*.tar").open_files("b").load_from_tar()  # doctest: +SKIP
        >>> dp = FileOpener(["x.tar.gz"], mode="b").decompress().load_from_tar()  # doctest: +SKIP
    """

    _repr_args = ("mode",)

    def __init__(self, datapipe, mode: str = "r:*", length: int = -1) -> None:
        if not mode.startswith("r"):
            raise ValueError(f"TarArchiveLoader: mode must be a read mode, got {mode!r}")
        super().__init__(datapipe, length)
        self.mode = mode

    def _members(self, path, stream, members):
        try:
            tar = stream if isinstance(stream, tarfile.TarFile) else _open_tar(stream, self.mode)
        except _CORRUPT as e:
            raise tarfile.ReadError(f"TarArchiveLoader: {path!r} is not a valid tar "
                                    f"archive (mode {self.mode!r}): {e}") from e
        members.sources.append(tar)
        while True:
            try:
                member = tar.next()
            except _CORRUPT as e:
                where = (f"after its member {tar.members[-1].name!r}"
                         if tar.members else "at its first member")
                raise tarfile.ReadError(f"TarArchiveLoader: {path!r} is corrupt "
                                        f"{where}: {e}") from e
            if member is None:
                break
            if member.isfile():
                f = tar.extractfile(member)
                yield (os.path.join(path, os.path.normpath(member.name)),
                       members.hand_out("TarArchiveLoader", path, "tar archive", f))


@functional_datapipe("load_from_zip")
class ZipArchiveLoader(_ArchiveLoader):
    """Yield ``(path/member, stream)`` for each file in each zip archive
    (functional name: ``load_from_zip``). The archive's stream must be seekable.

    Args:
        datapipe (IterDataPipe): yields ``(path, binary stream)`` or, from
            ``decompress``, ``(path, zipfile.ZipFile)``.
        length (int): default ``-1`` (no ``len()``).

    Example::

        >>> dp = FileLister("data", "*.zip").open_files("rb").load_from_zip()  # doctest: +SKIP
    """

    def _members(self, path, stream, members):
        if isinstance(stream, zipfile.ZipFile):
            archive = stream
        elif not _seekable(stream):
            raise ValueError(f"ZipArchiveLoader: the stream of {path!r} cannot seek; a "
                             "zip archive is read from its end (open it from a file)")
        else:
            try:
                archive = zipfile.ZipFile(stream)
            except _CORRUPT as e:
                raise zipfile.BadZipFile(f"ZipArchiveLoader: {path!r} is not a valid "
                                         f"zip archive: {e}") from e
        members.sources.append(archive)
        for info in archive.infolist():
            if not info.is_dir():
                yield (os.path.join(path, info.filename),
                       members.hand_out("ZipArchiveLoader", path, "zip archive",
                                        archive.open(info)))


def _strip_suffix(path: str, suffix: str) -> str:
    return path[:-len(suffix)] if path.endswith(suffix) else path


class _SingleFileLoader(IterDataPipe):
    """One compressed file in, ``(path without the suffix, decompressed stream)`` out;
    the formats differ only in the rows of ``_single_file_loader`` below."""

    _suffix = ""
    _what = ""
    _opener = None

    def __init__(self, datapipe, length: int = -1) -> None:
        self.datapipe = datapipe
        self.length = length

    def __iter__(self):
        pipe, opener = type(self).__name__, type(self)._opener
        for path, stream in self.datapipe:
            yield (_strip_suffix(path, self._suffix),
                   _CheckedStream(pipe, path, self._what, opener(stream), stream))

    def __len__(self) -> int:
        return len(self.datapipe) if self.length == -1 else self.length


def _single_file_loader(name: str, functional: str, suffix: str, what: str, opener):
    """Define and register the loader ``name`` of ``suffix`` files opened by ``opener``."""
    doc = f"""Yield ``(path without {suffix}, decompressed stream)`` for each {what}
    (functional name: ``{functional}``).

    Args:
        datapipe (IterDataPipe): yields ``(path, binary stream)``.
        length (int): default ``-1`` (the source's length).

    Example::

        >>> dp = FileLister("data", "*{suffix}").open_files("rb").{functional}()  # doctest: +SKIP
    """
    cls = type(name, (_SingleFileLoader,), {
        "__doc__": doc, "__module__": __name__, "__qualname__": name,
        "_suffix": suffix, "_what": what, "_opener": staticmethod(opener)})
    return functional_datapipe(functional)(cls)


Bz2FileLoader = _single_file_loader("Bz2FileLoader", "load_from_bz2", ".bz2", "bz2 file",
                                    bz2.BZ2File)
XzFileLoader = _single_file_loader("XzFileLoader", "load_from_xz", ".xz", "xz/lzma file",
                                   lzma.LZMAFile)


_FILE_TYPES = {"gzip": "gzip", "gz": "gzip", "lzma": "lzma", "xz": "lzma", "tar": "tar",
               "zip": "zip", "bz2": "bz2"}
_BY_SUFFIX = {".tar": "tar", ".xz": "lzma", ".gz": "gzip", ".zip": "zip", ".bz2": "bz2"}


@functional_datapipe("decompress")
class Decompressor(IterDataPipe):
    """Decompress each ``(path, stream)``: yield ``(path, decompressed)``, where
    ``decompressed`` is a stream (gzip, lzma/xz, bz2), a ``tarfile.TarFile`` or a
    ``zipfile.ZipFile`` (functional name: ``decompress``).

    Args:
        source_datapipe (IterDataPipe): yields ``(path, binary stream)``.
        file_type (str or None): default ``None``: from the path's suffix
            (``.tar``, ``.tar.gz``, ``.tar.xz``, ``.gz``, ``.xz``, ``.bz2``, ``.zip``);
            otherwise one of ``"gzip"``, ``"lzma"``, ``"bz2"``, ``"tar"``, ``"zip"``.

    A ``.tar.bz2`` is a bz2 file here (as in TorchData): its stream goes on to
    ``load_from_tar``, which reads it in streaming mode. An archive closes the
    source stream when it is closed (``load_from_tar``/``load_from_zip`` do).

    Example::

        >>> dp = FileOpener(["a.txt.gz"], mode="b").decompress()  # doctest: +SKIP
        >>> [(p, s.read()) for p, s in dp]
        [('a.txt.gz', b'...')]
        >>> dp = FileOpener(["x.tar.gz"], mode="b").decompress().load_from_tar()  # doctest: +SKIP
    """

    _len_source = "source_datapipe"
    _repr_args = ("file_type",)

    def __init__(self, source_datapipe, file_type: str | None = None) -> None:
        if file_type is not None:
            key = getattr(file_type, "value", file_type).lower()
            if key not in _FILE_TYPES:
                raise ValueError(f"Decompressor: file_type must be one of "
                                 f"{sorted(set(_FILE_TYPES))}, got {file_type!r}")
            file_type = _FILE_TYPES[key]
        self.source_datapipe = source_datapipe
        self.file_type = file_type

    def _type_of(self, path: str) -> str:
        if self.file_type is not None:
            return self.file_type
        if "".join(pathlib.Path(path).suffixes[-2:]) in (".tar.gz", ".tar.xz"):
            return "tar"
        ext = os.path.splitext(path)[1]
        if ext not in _BY_SUFFIX:
            raise ValueError(f"Decompressor: cannot tell the compression of {path!r} from its "
                             f"suffix {ext!r}; expected one of {sorted(_BY_SUFFIX)} or "
                             "file_type=")
        return _BY_SUFFIX[ext]

    def __iter__(self):
        for path, stream in self.source_datapipe:
            kind = self._type_of(path)
            try:
                if kind in ("tar", "zip"):
                    if kind == "tar":
                        archive = _open_tar(stream, "r:*", _OwningTarFile)
                    else:
                        archive = _OwningZipFile(stream)
                    archive._source = stream
                    yield path, archive
                else:
                    if kind == "gzip":
                        inner = gzip.GzipFile(fileobj=stream)
                    elif kind == "lzma":
                        inner = lzma.LZMAFile(stream)
                    else:
                        inner = bz2.BZ2File(stream)
                    yield path, _CheckedStream("Decompressor", path, f"{kind} file", inner,
                                               stream)
            except (tarfile.TarError, zipfile.BadZipFile) as e:
                close_quietly(stream)
                raise type(e)(f"Decompressor: {path!r} is not a valid {kind} archive: "
                              f"{e}") from e


@functional_datapipe("extract")
class Extractor(IterDataPipe):
    """Deprecated alias of ``Decompressor`` (functional name: ``extract``), as in TorchData.

    Building one warns (``DeprecationWarning``) and returns a ``Decompressor``.

    Args:
        source_datapipe (IterDataPipe): yields ``(path, binary stream)``.
        file_type (str or None): default ``None``; as ``Decompressor``.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     dp = IterableWrapper([]).extract(file_type="gzip")
        >>> type(dp).__name__
        'Decompressor'
    """

    def __new__(cls, source_datapipe, file_type: str | None = None):
        warnings.warn("Extractor (extract) is deprecated: use Decompressor (decompress), "
                      "which it returns", DeprecationWarning, stacklevel=3)
        return Decompressor(source_datapipe, file_type)
