"""Text formats: ``readlines``, ``lines_to_paragraphs``, ``parse_csv``,
``parse_csv_as_dict`` and ``parse_json_files``. Each takes ``(path, stream)``
pairs, reads a stream to its end and closes it."""

from __future__ import annotations

import csv
import itertools
import json

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import close_quietly

__all__ = ["CSVDictParser", "CSVParser", "JsonParser", "LineReader", "ParagraphAggregator"]


def _lines(stream, skip_lines, strip_newline, decode, encoding, errors):
    """The stream's lines, after ``skip_lines``, stripped and decoded as asked."""
    lines = itertools.islice(stream, skip_lines, None)
    for line in lines:
        if decode and isinstance(line, (bytes, bytearray)):
            line = line.decode(encoding, errors)
        if strip_newline:
            line = line.rstrip(b"\r\n" if isinstance(line, bytes) else "\r\n")
        yield line


def _closing(stream, gen):
    try:
        yield from gen
    finally:
        close_quietly(stream)


@functional_datapipe("readlines")
class LineReader(IterDataPipe):
    """Yield the lines of each ``(path, stream)`` (functional name: ``readlines``).

    Args:
        source_datapipe (IterDataPipe): yields ``(path, stream)``.
        skip_lines (int): default ``0``; lines skipped at the top of each file.
        strip_newline (bool): default ``True``; remove the trailing ``\\r\\n``.
        decode (bool): default ``False``; decode bytes lines with ``encoding``.
        encoding (str): default ``"utf-8"``.
        errors (str): default ``"ignore"``; the decoding error handler.
        return_path (bool): default ``True``: yield ``(path, line)``; else ``line``.

    Example::

        >>> list(FileOpener(["a.txt"]).readlines())   # doctest: +SKIP
        [('a.txt', 'first line'), ('a.txt', 'second line')]
    """

    _repr_args = ("skip_lines", "decode")

    def __init__(self, source_datapipe, *, skip_lines: int = 0, strip_newline: bool = True,
                 decode: bool = False, encoding: str = "utf-8", errors: str = "ignore",
                 return_path: bool = True) -> None:
        self.source_datapipe = source_datapipe
        self.skip_lines = skip_lines
        self.strip_newline = strip_newline
        self.decode = decode
        self.encoding = encoding
        self.errors = errors
        self.return_path = return_path

    def __iter__(self):
        for path, stream in self.source_datapipe:
            lines = _lines(stream, self.skip_lines, self.strip_newline, self.decode,
                           self.encoding, self.errors)
            for line in _closing(stream, lines):
                yield (path, line) if self.return_path else line


def _join_lines(lines):
    return "\n".join(lines)


@functional_datapipe("lines_to_paragraphs")
class ParagraphAggregator(IterDataPipe):
    """Join consecutive non-empty ``(path, line)`` items of one file into
    ``(path, paragraph)`` (functional name: ``lines_to_paragraphs``).

    Args:
        source_datapipe (IterDataPipe): yields ``(path, line)``; an empty line or a
            new path ends a paragraph.
        joiner (callable): default ``"\\n".join``; list of lines to paragraph.

    Example::

        >>> lines = IterableWrapper([("f", "a"), ("f", "b"), ("f", ""), ("f", "c")])
        >>> list(lines.lines_to_paragraphs())
        [('f', 'a\\nb'), ('f', 'c')]
    """

    def __init__(self, source_datapipe, joiner=_join_lines) -> None:
        self.source_datapipe = source_datapipe
        self.joiner = joiner

    def __iter__(self):
        buf, prev = [], None
        for path, line in self.source_datapipe:
            if prev is None:
                prev = path
            if line and path == prev:
                buf.append(line)
                continue
            if buf:
                yield prev, self.joiner(buf)
            buf = [line] if line else []
            prev = path
        if buf:
            yield prev, self.joiner(buf)


class _CSVBase(IterDataPipe):
    _repr_args = ("skip_lines", "fmtparams")

    def __init__(self, source_datapipe, *, skip_lines: int = 0, decode: bool = True,
                 encoding: str = "utf-8", errors: str = "ignore", return_path: bool = False,
                 **fmtparams) -> None:
        self.source_datapipe = source_datapipe
        self.skip_lines = skip_lines
        self.decode = decode
        self.encoding = encoding
        self.errors = errors
        self.return_path = return_path
        self.fmtparams = fmtparams

    def _rows(self, path, lines):
        raise NotImplementedError

    def __iter__(self):
        for path, stream in self.source_datapipe:
            lines = _lines(stream, self.skip_lines, False, self.decode, self.encoding,
                           self.errors)
            for row in _closing(stream, self._rows(path, lines)):
                yield (path, row) if self.return_path else row

    def _width_error(self, path, line_num, got, expected, what):
        return ValueError(f"{type(self).__name__}: {path!r} line {line_num + self.skip_lines} "
                          f"has {got} fields, expected {expected} ({what})")


@functional_datapipe("parse_csv")
class CSVParser(_CSVBase):
    """Parse each ``(path, stream)`` as CSV and yield its rows as lists
    (functional name: ``parse_csv``).

    Every row of a file must have as many fields as its first row; a row that
    does not raises ``ValueError`` naming the file and line.

    Args:
        source_datapipe (IterDataPipe): yields ``(path, stream)``.
        skip_lines (int): default ``0``; lines skipped at the top of each file.
        decode (bool): default ``True``; decode bytes with ``encoding``.
        encoding (str): default ``"utf-8"``.
        errors (str): default ``"ignore"``.
        return_path (bool): default ``False``; yield ``(path, row)``.
        as_tuple (bool): default ``False``; rows as tuples.
        **fmtparams: passed to ``csv.reader`` (``delimiter``, ``quotechar``, ...).

    Example::

        >>> list(FileOpener(["a.csv"]).parse_csv(skip_lines=1))   # doctest: +SKIP
        [['1', '2'], ['3', '4']]
    """

    def __init__(self, source_datapipe, *, skip_lines: int = 0, decode: bool = True,
                 encoding: str = "utf-8", errors: str = "ignore", return_path: bool = False,
                 as_tuple: bool = False, **fmtparams) -> None:
        super().__init__(source_datapipe, skip_lines=skip_lines, decode=decode,
                         encoding=encoding, errors=errors, return_path=return_path, **fmtparams)
        self.as_tuple = as_tuple

    def _rows(self, path, lines):
        reader = csv.reader(lines, **self.fmtparams)
        width = None
        for row in reader:
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise self._width_error(path, reader.line_num, len(row), width,
                                        "the width of its first row")
            yield tuple(row) if self.as_tuple else row


@functional_datapipe("parse_csv_as_dict")
class CSVDictParser(_CSVBase):
    """Parse each ``(path, stream)`` as CSV with a header row and yield dicts
    (functional name: ``parse_csv_as_dict``).

    A row with more or fewer fields than the header raises ``ValueError`` naming
    the file and line.

    Args:
        source_datapipe (IterDataPipe): yields ``(path, stream)``.
        skip_lines (int): default ``0``; lines skipped before the header.
        decode (bool): default ``True``.
        encoding (str): default ``"utf-8"``.
        errors (str): default ``"ignore"``.
        return_path (bool): default ``False``; yield ``(path, row)``.
        **fmtparams: passed to ``csv.DictReader``.

    Example::

        >>> list(FileOpener(["a.csv"]).parse_csv_as_dict())   # doctest: +SKIP
        [{'x': '1', 'y': '2'}]
    """

    def _rows(self, path, lines):
        reader = csv.DictReader(lines, **self.fmtparams)
        for row in reader:
            n = len(reader.fieldnames)
            if None in row or any(v is None for v in row.values()):
                got = n + len(row.get(None, ())) - sum(v is None for v in row.values())
                raise self._width_error(path, reader.line_num, got, n, "the header's width")
            yield row


@functional_datapipe("parse_json_files")
class JsonParser(IterDataPipe):
    """Parse each ``(path, stream)`` as one JSON document and yield ``(path, value)``
    (functional name: ``parse_json_files``).

    Args:
        source_datapipe (IterDataPipe): yields ``(path, stream)``.
        **kwargs: passed to ``json.loads``.

    Example::

        >>> list(FileOpener(["a.json"]).parse_json_files())   # doctest: +SKIP
        [('a.json', {'x': 1})]
    """

    _len_source = "source_datapipe"

    def __init__(self, source_datapipe, **kwargs) -> None:
        self.source_datapipe = source_datapipe
        self.kwargs = kwargs

    def __iter__(self):
        for path, stream in self.source_datapipe:
            try:
                text = stream.read()
            finally:
                stream.close()
            try:
                value = json.loads(text, **self.kwargs)
            except ValueError as e:
                raise ValueError(f"JsonParser: {path!r} is not valid JSON: {e}") from e
            yield path, value
