"""WebDataset-style samples and shard names: ``webdataset``, ``shard_expand``
and ``routed_decode``."""

from __future__ import annotations

import io
import json
import os
import pickle
import re

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["RoutedDecoder", "ShardExpander", "WebDataset", "basichandlers",
           "extension_extract_fn"]

_SUFFIX = re.compile(r"^(.*?)(\.[^/]*)$")


def _pathsplit(path: str) -> tuple[str, str]:
    """``("dir/sample", ".cls.txt")``: the sample key and the field suffix."""
    path = path.replace("\\", "/")
    m = _SUFFIX.match(path)
    return (path, "") if m is None else (m.group(1), m.group(2))


@functional_datapipe("webdataset")
class WebDataset(IterDataPipe):
    """Group consecutive ``(path, data)`` files of one sample into a dict
    (functional name: ``webdataset``).

    A sample's files share the path up to the first ``.`` of the file name
    (``shard.tar/000017.png``, ``shard.tar/000017.cls``); the dict holds
    ``"__key__"`` (that prefix) and one entry per suffix (``".png"``, ``".cls"``).
    Files without a suffix are skipped.

    Args:
        source_datapipe (IterDataPipe): yields ``(path, data)``, a sample's files
            next to each other (as ``load_from_tar`` yields a WebDataset shard).

    Example::

        >>> files = IterableWrapper([("s/0.x", 1), ("s/0.y", 2), ("s/1.x", 3)])
        >>> list(files.webdataset())
        [{'__key__': 's/0', '.x': 1, '.y': 2}, {'__key__': 's/1', '.x': 3}]
    """

    def __init__(self, source_datapipe) -> None:
        self.source_datapipe = source_datapipe

    def __iter__(self):
        sample, current = None, None
        for path, data in self.source_datapipe:
            if not isinstance(path, str):
                raise TypeError(f"WebDataset: expected (path, data) pairs with a str path, got "
                                f"{type(path).__name__}")
            key, suffix = _pathsplit(path)
            if not suffix:
                continue
            if key != current:
                if sample is not None:
                    yield sample
                sample, current = {"__key__": key}, key
            if suffix in sample:
                raise ValueError(f"WebDataset: sample {key!r} has two {suffix!r} files; a "
                                 "sample's files must have distinct suffixes")
            sample[suffix] = data
        if sample is not None:
            yield sample


_BRACES = re.compile(r"\{([0-9]+)\.\.([0-9]+)\}")


def _expand(spec: str) -> list[str]:
    m = _BRACES.search(spec)
    if m is None:
        return [spec]
    lo_s, hi_s = m.groups()
    if len(lo_s) == len(hi_s) and lo_s.startswith("0"):
        width = len(hi_s)
    elif len(lo_s) <= len(hi_s):
        if lo_s.startswith("0") and lo_s != "0":
            raise ValueError(f"ShardExpander: in {spec!r} the low bound {lo_s!r} has a leading "
                             "zero but is shorter than the high bound")
        width = 0
    else:
        raise ValueError(f"ShardExpander: in {spec!r} the low bound {lo_s!r} is longer than "
                         f"the high bound {hi_s!r}")
    lo, hi = int(lo_s), int(hi_s)
    if lo >= hi:
        raise ValueError(f"ShardExpander: bad range {{{lo_s}..{hi_s}}} in {spec!r} (need "
                         "low < high)")
    rest = _expand(spec[m.end():])
    head = spec[:m.start()]
    return [f"{head}{i:0{width}d}{r}" if width else f"{head}{i}{r}"
            for i in range(lo, hi + 1) for r in rest]


@functional_datapipe("shard_expand")
class ShardExpander(IterDataPipe):
    """Expand brace ranges in shard names: ``"data-{000..002}.tar"`` yields
    ``data-000.tar``, ``data-001.tar``, ``data-002.tar`` (functional name: ``shard_expand``).

    Several ranges expand as nested loops; a low bound with leading zeros and the
    same width as the high bound pads every number to that width.

    Args:
        source_datapipe (IterDataPipe): yields shard specs (str).

    Example::

        >>> list(IterableWrapper(["s-{0..2}.tar"]).shard_expand())
        ['s-0.tar', 's-1.tar', 's-2.tar']
    """

    def __init__(self, source_datapipe) -> None:
        self.source_datapipe = source_datapipe

    def __iter__(self):
        for spec in self.source_datapipe:
            yield from _expand(spec)


def extension_extract_fn(pathname: str) -> str:
    """The extension of ``pathname`` without the dot (``"a/b.json"`` -> ``"json"``)."""
    ext = os.path.splitext(pathname)[1]
    return ext[1:] if ext else ext


def _npy(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


_BASIC = {}
for _exts, _fn in ((("txt", "text", "transcript"), lambda d: d.decode("utf-8")),
                   (("cls", "cls2", "class", "count", "index", "inx", "id"), lambda d: int(d)),
                   (("json", "jsn"), lambda d: json.loads(d)),
                   (("pyd", "pickle"), lambda d: pickle.loads(d)),
                   (("npy",), _npy)):
    for _e in _exts:
        _BASIC[_e] = _fn


def basichandlers(extension: str, data: bytes):
    """Decode bytes by extension: text (``txt``, ``text``, ``transcript``), integers
    (``cls``, ``cls2``, ``class``, ``count``, ``index``, ``inx``, ``id``), JSON (``json``,
    ``jsn``), pickles (``pyd``, ``pickle``) and NumPy arrays (``npy``); ``None`` for
    any other extension."""
    fn = _BASIC.get(extension.lower())
    return None if fn is None else fn(data)


@functional_datapipe("routed_decode")
class RoutedDecoder(IterDataPipe):
    """Decode each ``(path, stream or bytes)`` with the first handler that accepts its
    extension and yield ``(path, decoded)`` (functional name: ``routed_decode``).

    A handler is ``handler(extension, data) -> value or None``; data no handler
    accepts is yielded as bytes.

    Args:
        datapipe (IterDataPipe): yields ``(path, stream or bytes)``.
        *handlers (callable): tried in order; default: ``basichandlers``.
        key_fn (callable): default ``extension_extract_fn``; path to extension.

    Example::

        >>> files = IterableWrapper([("a.txt", b"hi"), ("a.cls", b"3")])
        >>> list(files.routed_decode())
        [('a.txt', 'hi'), ('a.cls', 3)]
    """

    _len_source = "datapipe"

    def __init__(self, datapipe, *handlers, key_fn=extension_extract_fn) -> None:
        self.datapipe = datapipe
        self.handlers = list(handlers) if handlers else [basichandlers]
        self.key_fn = key_fn

    def add_handler(self, *handler) -> None:
        """Put ``handler`` (one or more) before the existing handlers."""
        self.handlers[:0] = handler

    def __iter__(self):
        for path, data in self.datapipe:
            if not isinstance(data, (bytes, bytearray)):
                stream = data
                try:
                    data = stream.read()
                finally:
                    stream.close()
            key = self.key_fn(path)
            for h in self.handlers:
                try:
                    value = h(key, data)
                except Exception as e:
                    raise ValueError(f"RoutedDecoder: handler "
                                     f"{getattr(h, '__name__', h)} failed on {path!r} "
                                     f"(extension {key!r}): {e}") from e
                if value is not None:
                    data = value
                    break
            yield path, data

    def __repr__(self) -> str:
        names = [getattr(h, "__name__", repr(h)) for h in self.handlers]
        return f"RoutedDecoder(handlers={names})"
