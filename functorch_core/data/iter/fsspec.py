"""Files on any fsspec filesystem (local, ``memory://``, ``s3://``, ...):
``list_files_by_fsspec``, ``open_files_by_fsspec`` and ``save_by_fsspec``.

These need the optional ``fsspec`` package (``pip install functorch_core[fsspec]``).
"""

from __future__ import annotations

import fnmatch
import posixpath

from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["FSSpecFileLister", "FSSpecFileOpener", "FSSpecSaver"]


def _fsspec(pipe: str):
    try:
        import fsspec
    except ImportError:
        raise ImportError(f"{pipe} needs the optional package fsspec "
                          "(pip install 'functorch_core[fsspec]')") from None
    return fsspec


def _has_protocol(url: str) -> bool:
    return "://" in url


@functional_datapipe("list_files_by_fsspec")
class FSSpecFileLister(IterDataPipe):
    """List the files directly under each ``root`` URL whose names match ``masks``
    (functional name: ``list_files_by_fsspec``). Names are sorted per root.

    Args:
        root (str, list of str or IterDataPipe): URLs or paths of directories
            (or files, yielded as given).
        masks (str or list of str): default ``""`` (every file); shell patterns.
        **kwargs: passed to ``fsspec.core.url_to_fs`` (credentials, options).

    Example::

        >>> list(FSSpecFileLister("memory://data", masks="*.csv"))  # doctest: +SKIP
        ['memory://data/a.csv']
    """

    _repr_args = ("masks",)

    def __init__(self, root, masks="", **kwargs) -> None:
        _fsspec("FSSpecFileLister")
        if isinstance(root, str):
            root = (root,)
        elif not isinstance(root, IterDataPipe):
            root = tuple(root)
        self.datapipe = root
        self.masks = [masks] if isinstance(masks, str) and masks else (
            [] if isinstance(masks, str) else list(masks))
        self.kwargs_for_connection = kwargs

    def __iter__(self):
        fsspec = _fsspec("FSSpecFileLister")
        for root in self.datapipe:
            fs, path = fsspec.core.url_to_fs(root, **self.kwargs_for_connection)
            if fs.isfile(path):
                yield root
                continue
            if not fs.isdir(path):
                raise FileNotFoundError(f"FSSpecFileLister: root {root!r} is neither a file "
                                        "nor a directory")
            for name in sorted(fs.ls(path, detail=False)):
                if fs.isdir(name):
                    continue
                if self.masks and not any(fnmatch.fnmatch(posixpath.basename(name), m)
                                          for m in self.masks):
                    continue
                yield fs.unstrip_protocol(name) if _has_protocol(root) else name


class _FSSpecIO(IterDataPipe):
    """Opens URLs of ``source_datapipe`` with fsspec in ``mode``: the opener and the saver."""

    _len_source = "source_datapipe"
    _repr_args = ("mode",)

    def __init__(self, source_datapipe, mode: str, kwargs_for_open, kwargs_for_connection):
        _fsspec(type(self).__name__)
        self.source_datapipe = source_datapipe
        self.mode = mode
        self.kwargs_for_open = dict(kwargs_for_open or {})
        self.kwargs_for_connection = kwargs_for_connection

    def _open(self, url: str):
        fs, path = _fsspec(type(self).__name__).core.url_to_fs(
            url, **self.kwargs_for_connection)
        return fs.open(path, self.mode, **self.kwargs_for_open)


@functional_datapipe("open_files_by_fsspec")
class FSSpecFileOpener(_FSSpecIO):
    """Open each URL with fsspec and yield ``(url, stream)``
    (functional name: ``open_files_by_fsspec``).

    Args:
        source_datapipe (IterDataPipe): yields URLs.
        mode (str): default ``"r"``; or ``"rb"``.
        kwargs_for_open (dict or None): default ``None``; passed to ``fs.open``.
        **kwargs: passed to ``fsspec.core.url_to_fs``.

    Example::

        >>> FSSpecFileLister("memory://data").open_files_by_fsspec(mode="rb")  # doctest: +SKIP
    """

    def __init__(self, source_datapipe, mode: str = "r", *, kwargs_for_open=None,
                 **kwargs) -> None:
        super().__init__(source_datapipe, mode, kwargs_for_open, kwargs)

    def __iter__(self):
        for url in self.source_datapipe:
            try:
                stream = self._open(url)
            except FileNotFoundError as e:
                raise FileNotFoundError(f"FSSpecFileOpener: cannot open {url!r} (mode "
                                        f"{self.mode!r}): no such file") from e
            yield url, stream


@functional_datapipe("save_by_fsspec")
class FSSpecSaver(_FSSpecIO):
    """Write each ``(meta, data)`` with fsspec and yield the URL
    (functional name: ``save_by_fsspec``).

    Args:
        source_datapipe (IterDataPipe): yields ``(meta, data)``.
        mode (str): default ``"w"``; ``"wb"`` for bytes.
        filepath_fn (callable or None): default ``None`` (``meta`` is the URL).
        kwargs_for_open (dict or None): default ``None``; passed to ``fs.open``.
        **kwargs: passed to ``fsspec.core.url_to_fs``.

    Example::

        >>> IterableWrapper([("memory://o/a.txt", "hi")]).save_by_fsspec()  # doctest: +SKIP
    """

    def __init__(self, source_datapipe, mode: str = "w", filepath_fn=None, *,
                 kwargs_for_open=None, **kwargs) -> None:
        super().__init__(source_datapipe, mode, kwargs_for_open, kwargs)
        self.filepath_fn = filepath_fn

    def __iter__(self):
        for meta, data in self.source_datapipe:
            url = meta if self.filepath_fn is None else self.filepath_fn(meta)
            with self._open(url) as f:
                f.write(data)
            yield url
