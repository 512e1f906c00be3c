"""Amazon S3: ``S3FileLister`` (``list_files_by_s3``) and ``S3FileLoader`` (``load_files_by_s3``).

TorchData's S3 pipes ran on a C++ AWS SDK extension; these run on ``fsspec`` +
``s3fs`` (``pip install 'functorch_core[s3]'``), so any S3-compatible endpoint
works (``endpoint_url=``). Credentials come from the usual AWS places (the
environment, ``~/.aws``) or from ``key=``/``secret=``.
"""

from __future__ import annotations

import fnmatch
import io

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import LazyModule

s3fs = LazyModule("s3fs")       # the optional s3 extra

__all__ = ["S3FileLister", "S3FileLoader"]


def _connection(pipe, call: str, source, request_timeout_ms, region, kwargs: dict) -> None:
    """Check that s3fs is there and keep what a pipe connects with (not a connection)."""
    if not s3fs.available():
        raise ModuleNotFoundError(f"{call} needs the optional packages fsspec and s3fs "
                                  "(pip install 'functorch_core[s3]')")
    pipe.source_datapipe = source
    pipe.request_timeout_ms = request_timeout_ms
    pipe.region = region
    pipe.kwargs = kwargs


def _filesystem(request_timeout_ms, region, options: dict):
    """A new S3 filesystem, made in the process that iterates: s3fs's event loop and
    connections are not fork-safe, so a pipe holds only the options (it may be copied
    into worker processes)."""
    options = dict(options)
    client = dict(options.pop("client_kwargs", None) or {})
    config = dict(options.pop("config_kwargs", None) or {})
    if region:
        client.setdefault("region_name", region)
    if request_timeout_ms is not None and request_timeout_ms > 0:
        seconds = request_timeout_ms / 1000
        config.setdefault("connect_timeout", seconds)
        config.setdefault("read_timeout", seconds)
    # a fresh instance: fsspec's cache would share one across differently-set pipes
    return s3fs.S3FileSystem(client_kwargs=client, config_kwargs=config, skip_instance_cache=True,
                             **options)


def _split(call: str, url: str) -> tuple[str, str]:
    if not isinstance(url, str) or not url.startswith("s3://") or len(url) <= 5:
        raise ValueError(f"{call}: expected an S3 URL 's3://bucket[/key]', got {url!r}")
    bucket, _, key = url[5:].partition("/")
    return bucket, key


def _masks(masks) -> list[str]:
    if isinstance(masks, str):
        return [masks] if masks else []
    return list(masks)


@functional_datapipe("list_files_by_s3")
class S3FileLister(IterDataPipe):
    """List the object URLs under S3 prefixes (functional name: ``list_files_by_s3``).

    A prefix is ``s3://bucket``, ``s3://bucket/`` or ``s3://bucket/folder``;
    every object whose key starts with it is yielded as ``s3://bucket/key``, in
    key order, at any depth (as S3's own listing by prefix does).

    Args:
        source_datapipe (IterDataPipe): the prefixes.
        length (int): the nominal ``len()``; ``-1`` (default) means unknown.
        request_timeout_ms (int): the connect and read timeout of each request,
            in milliseconds; ``-1`` (default) keeps botocore's.
        region (str): the AWS region. Default: ``""`` (from the configuration).
        masks (str or list of str): shell patterns the whole URL must match
            (one of them). Default: ``""`` (every object).
        **kwargs: passed to ``s3fs.S3FileSystem`` (``endpoint_url``, ``key``,
            ``secret``, ``anon``, ...).

    Example::

        >>> urls = IterableWrapper(["s3://bucket/train/"]).list_files_by_s3()  # doctest: +SKIP
    """

    _repr_args = ("masks",)

    def __init__(self, source_datapipe, length=-1, request_timeout_ms=-1, region="", masks="",
                 **kwargs):
        _connection(self, "S3FileLister", source_datapipe, request_timeout_ms, region, kwargs)
        self.length = length
        self.masks = _masks(masks)

    def __iter__(self):
        fs = _filesystem(self.request_timeout_ms, self.region, self.kwargs)
        for prefix in self.source_datapipe:
            bucket, key = _split("S3FileLister", prefix)
            folder = key.rpartition("/")[0]
            try:
                found = fs.find(f"{bucket}/{folder}" if folder else bucket)
            except FileNotFoundError:
                found = []
            for path in sorted(found):
                url = f"s3://{path}"
                if path[len(bucket) + 1:].startswith(key) and (
                        not self.masks or any(fnmatch.fnmatch(url, m) for m in self.masks)):
                    yield url

    def __len__(self) -> int:
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} has no length (pass length=)")
        return self.length


@functional_datapipe("load_files_by_s3")
class S3FileLoader(IterDataPipe):
    """Read S3 objects into ``(url, BytesIO)`` pairs (functional name: ``load_files_by_s3``).

    Args:
        source_datapipe (IterDataPipe): object URLs ``s3://bucket/key``.
        request_timeout_ms (int): the connect and read timeout of each request,
            in milliseconds; ``-1`` (default) keeps botocore's.
        region (str): the AWS region. Default: ``""`` (from the configuration).
        buffer_size (int, optional): bytes fetched per request while reading an
            object. Default: ``None`` (s3fs's block size).
        multi_part_download (bool, optional): accepted for TorchData's signature;
            s3fs decides how each object is fetched. Default: ``None``.
        **kwargs: passed to ``s3fs.S3FileSystem``.

    Raises:
        FileNotFoundError: an object does not exist (the error names its URL).

    Example::

        >>> files = IterableWrapper(["s3://bucket/a.csv"]).load_files_by_s3()  # doctest: +SKIP
    """

    def __init__(self, source_datapipe, request_timeout_ms=-1, region="", buffer_size=None,
                 multi_part_download=None, **kwargs):
        if buffer_size is not None and (not isinstance(buffer_size, int) or buffer_size <= 0):
            raise ValueError(f"S3FileLoader(buffer_size={buffer_size!r}): expected a positive "
                             "int or None")
        _connection(self, "S3FileLoader", source_datapipe, request_timeout_ms, region, kwargs)
        self.buffer_size = buffer_size
        self.multi_part_download = multi_part_download

    def __iter__(self):
        fs = _filesystem(self.request_timeout_ms, self.region, self.kwargs)
        for url in self.source_datapipe:
            bucket, key = _split("S3FileLoader", url)
            try:
                with fs.open(f"{bucket}/{key}", "rb", block_size=self.buffer_size) as f:
                    data = f.read()
            except FileNotFoundError:
                raise FileNotFoundError(f"S3FileLoader: {url} does not exist") from None
            yield url, io.BytesIO(data)
