"""Reading from the network with the standard library: ``read_from_http`` and
``read_from_remote``."""

from __future__ import annotations

import urllib.error
import urllib.request
import warnings

from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["HttpReader", "OnlineReader"]

_NETWORK = "it reads from the network, and a URL's content may change between runs"


@functional_datapipe("read_from_http")
class HttpReader(IterDataPipe):
    """Open each http(s) URL and yield ``(url, response stream)``
    (functional name: ``read_from_http``).

    A DataLoader cannot save its position in a pipeline with this pipe (its
    source may change); cache the files with ``on_disk_cache`` for that.

    Args:
        source_datapipe (IterDataPipe): yields URLs.
        timeout (float or None): default ``None``; seconds to wait for the server.
        skip_on_error (bool): default ``False``: an HTTP or network error raises;
            ``True`` warns and skips the URL.
        **kwargs: ``headers`` (dict), sent with every request.

    Example::

        >>> dp = IterableWrapper(["https://example.com/a.csv"]).read_from_http()  # doctest: +SKIP
        >>> dp.readlines()
    """

    _resume_blocker = f"HttpReader: {_NETWORK}"
    _len_source = "source_datapipe"
    _repr_args = ("timeout", "skip_on_error")

    def __init__(self, source_datapipe, timeout: float | None = None,
                 skip_on_error: bool = False, **kwargs) -> None:
        unknown = set(kwargs) - {"headers"}
        if unknown:
            raise TypeError(f"{type(self).__name__}: unsupported keyword arguments "
                            f"{sorted(unknown)} (only headers=)")
        self.source_datapipe = source_datapipe
        self.timeout = timeout
        self.skip_on_error = skip_on_error
        self.headers = dict(kwargs.get("headers") or {})

    def _open(self, url: str):
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            raise ValueError(f"{type(self).__name__}: {url!r} is not an http(s) URL")
        request = urllib.request.Request(url, headers=self.headers)
        return urllib.request.urlopen(request, timeout=self.timeout)

    def __iter__(self):
        for url in self.source_datapipe:
            try:
                response = self._open(url)
            except (urllib.error.URLError, OSError) as e:
                reason = getattr(e, "reason", e)
                code = f"HTTP {e.code} " if isinstance(e, urllib.error.HTTPError) else ""
                msg = f"{type(self).__name__}: could not read {url!r}: {code}{reason}"
                if self.skip_on_error:
                    warnings.warn(msg + " (skipped)", stacklevel=2)
                    continue
                raise OSError(msg) from e
            yield url, response


@functional_datapipe("read_from_remote")
class OnlineReader(HttpReader):
    """Open each URL and yield ``(url, stream)`` (functional name: ``read_from_remote``).

    This version reads http(s) URLs as ``HttpReader`` does; TorchData's special
    handling of Google Drive links (confirmation pages) is not implemented.

    Args:
        source_datapipe (IterDataPipe): yields URLs.
        timeout (float or None): default ``None``.
        skip_on_error (bool): default ``False``.
        **kwargs: ``headers`` (dict).

    Example::

        >>> dp = IterableWrapper(["https://example.com/a.txt"]).read_from_remote()  # doctest: +SKIP
    """

    _resume_blocker = f"OnlineReader: {_NETWORK}"

    def __init__(self, source_datapipe, *, timeout: float | None = None,
                 skip_on_error: bool = False, **kwargs) -> None:
        super().__init__(source_datapipe, timeout=timeout, skip_on_error=skip_on_error,
                         **kwargs)
