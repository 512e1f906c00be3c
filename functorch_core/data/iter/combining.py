"""Pipes that join several sources: ``concat``, ``mux``, ``mux_longest``,
``SampleMultiplexer``, ``zip``, ``zip_longest``, ``zip_with_iter`` and
``zip_with_map`` (torch's ``combining.py`` and TorchData's ``util/combining.py``)."""

from __future__ import annotations

import warnings

import numpy as np

from ..datapipe import IterDataPipe, MapDataPipe, functional_datapipe
from ._pipeutil import check_fn

__all__ = ["Concater", "IterKeyZipper", "MapKeyZipper", "Multiplexer", "MultiplexerLongest",
           "SampleMultiplexer", "Zipper", "ZipperLongest"]


def _check_pipes(pipe: str, datapipes, base=IterDataPipe) -> tuple:
    if not datapipes:
        raise ValueError(f"{pipe}: expected at least one DataPipe")
    for i, dp in enumerate(datapipes):
        if not isinstance(dp, base):
            raise TypeError(f"{pipe}: argument {i} must be an {base.__name__}, got "
                            f"{type(dp).__name__}")
    return tuple(datapipes)


class _ManyPipe(IterDataPipe):
    def __init__(self, *datapipes) -> None:
        self.datapipes = _check_pipes(type(self).__name__, datapipes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.datapipes)} datapipes)"


@functional_datapipe("concat")
class Concater(_ManyPipe):
    """Yield all items of the first pipe, then of the second, ... (functional name: ``concat``).

    Args:
        *datapipes (IterDataPipe): the pipes, in order.

    Example::

        >>> list(IterableWrapper(range(2)).concat(IterableWrapper(range(3))))
        [0, 1, 0, 1, 2]
    """

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("mux")
class Multiplexer(_ManyPipe):
    """Yield one item from each pipe in turn; stop (dropping the partial round) as soon
    as any pipe is exhausted (functional name: ``mux``).

    Args:
        *datapipes (IterDataPipe): the pipes.

    Example::

        >>> a, b = IterableWrapper(range(3)), IterableWrapper(range(10, 15))
        >>> list(a.mux(b))
        [0, 10, 1, 11, 2, 12]
    """

    def __iter__(self):
        its = [iter(dp) for dp in self.datapipes]
        while True:
            round_ = []
            for it in its:
                try:
                    round_.append(next(it))
                except StopIteration:
                    return
            yield from round_

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes) * len(self.datapipes)


@functional_datapipe("mux_longest")
class MultiplexerLongest(_ManyPipe):
    """Yield one item from each pipe in turn, skipping pipes that are exhausted, until
    all are (functional name: ``mux_longest``).

    Args:
        *datapipes (IterDataPipe): the pipes.

    Example::

        >>> a, b = IterableWrapper(range(3)), IterableWrapper(range(10, 12))
        >>> list(a.mux_longest(b))
        [0, 10, 1, 11, 2]
    """

    def __iter__(self):
        its = [iter(dp) for dp in self.datapipes]
        while its:
            alive = []
            for it in its:
                try:
                    x = next(it)
                except StopIteration:
                    continue
                alive.append(it)
                yield x
            its = alive

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)


class SampleMultiplexer(IterDataPipe):
    """Yield the next item of a pipe drawn at random with the given weights; an
    exhausted pipe leaves the draw (no functional name).

    Args:
        pipes_to_weights_dict (dict): ``{IterDataPipe: weight}``, weights > 0.
        seed (int or None): default ``None``: fresh entropy per iteration unless
            ``set_seed`` is called; an int makes every iteration draw the same way
            (``set_seed``, which the DataLoader calls per epoch, overrides it).

    Example::

        >>> a, b = IterableWrapper([0] * 3), IterableWrapper([1] * 2)
        >>> sorted(SampleMultiplexer({a: 0.5, b: 0.5}, seed=0))
        [0, 0, 0, 1, 1]
    """

    _is_random = True

    def __init__(self, pipes_to_weights_dict: dict, seed: int | None = None) -> None:
        if not pipes_to_weights_dict:
            raise ValueError("SampleMultiplexer: pipes_to_weights_dict is empty")
        for dp, w in pipes_to_weights_dict.items():
            if not isinstance(dp, IterDataPipe):
                raise TypeError(f"SampleMultiplexer: keys must be IterDataPipes, got "
                                f"{type(dp).__name__}")
            if not w > 0:
                raise ValueError(f"SampleMultiplexer: weights must be > 0, got {w!r} for {dp!r}")
        self.datapipes = tuple(pipes_to_weights_dict)
        self.weights = tuple(float(w) for w in pipes_to_weights_dict.values())
        self.seed = seed

    def __iter__(self):
        # a seed from set_seed (the DataLoader's, per epoch) wins over the constructor's
        rng = self._rng() if self._seed is not None or self.seed is None else \
            np.random.default_rng(self.seed)
        its = [iter(dp) for dp in self.datapipes]
        weights = list(self.weights)
        while its:
            p = np.asarray(weights) / sum(weights)
            i = int(rng.choice(len(its), p=p))
            try:
                yield next(its[i])
            except StopIteration:
                del its[i], weights[i]

    def __len__(self) -> int:
        return sum(len(dp) for dp in self.datapipes)

    def __repr__(self) -> str:
        return f"SampleMultiplexer(weights={list(self.weights)})"


@functional_datapipe("zip")
class Zipper(_ManyPipe):
    """Yield tuples of one item from each pipe; stop at the shortest
    (functional name: ``zip``).

    Args:
        *datapipes (IterDataPipe): the pipes.

    Example::

        >>> list(IterableWrapper(range(3)).zip(IterableWrapper("ab")))
        [(0, 'a'), (1, 'b')]
    """

    def __iter__(self):
        yield from zip(*self.datapipes, strict=False)  # stops at the shortest

    def __len__(self) -> int:
        return min(len(dp) for dp in self.datapipes)


_NOTHING = object()


@functional_datapipe("zip_longest")
class ZipperLongest(_ManyPipe):
    """Yield tuples of one item from each pipe until all are exhausted, filling the
    missing ones with ``fill_value`` (functional name: ``zip_longest``).

    Args:
        *datapipes (IterDataPipe): the pipes.
        fill_value: default ``None``.

    Example::

        >>> list(IterableWrapper(range(3)).zip_longest(IterableWrapper("ab"), fill_value="-"))
        [(0, 'a'), (1, 'b'), (2, '-')]
    """

    def __init__(self, *datapipes, fill_value=None) -> None:
        super().__init__(*datapipes)
        self.fill_value = fill_value

    def __iter__(self):
        its = [iter(dp) for dp in self.datapipes]
        while True:
            row = [next(it, _NOTHING) for it in its]
            if all(x is _NOTHING for x in row):
                return
            yield tuple(self.fill_value if x is _NOTHING else x for x in row)

    def __len__(self) -> int:
        return max(len(dp) for dp in self.datapipes)


@functional_datapipe("zip_with_iter")
class IterKeyZipper(IterDataPipe):
    """Pair each item of the source with the item of ``ref_datapipe`` that has the same
    key (functional name: ``zip_with_iter``).

    Reference items read ahead wait in a buffer keyed by ``ref_key_fn``.

    Args:
        source_datapipe (IterDataPipe): drives the order of the output.
        ref_datapipe (IterDataPipe): the items to match; keys must be unique.
        key_fn (callable): a source item's key.
        ref_key_fn (callable or None): default ``None`` (``key_fn``); a reference
            item's key.
        keep_key (bool): default ``False``; yield ``(key, merged)``.
        buffer_size (int or None): default ``10000``; the most reference items held
            (``None``: no limit). When it is full the oldest is dropped, with a
            warning (once per iteration), as TorchData.
        merge_fn (callable or None): default ``None``: yield ``(item, ref_item)``;
            otherwise ``merge_fn(item, ref_item)``.

    Example::

        >>> def key(x):
        ...     return x[0]
        >>> src = IterableWrapper([("a", 1), ("b", 2)])
        >>> ref = IterableWrapper([("b", 20), ("a", 10)])
        >>> list(src.zip_with_iter(ref, key_fn=key))
        [(('a', 1), ('a', 10)), (('b', 2), ('b', 20))]
    """

    _len_source = "source_datapipe"
    _repr_args = ("buffer_size", "keep_key")

    def __init__(self, source_datapipe, ref_datapipe, key_fn, ref_key_fn=None,
                 keep_key: bool = False, buffer_size: int | None = 10000,
                 merge_fn=None) -> None:
        if not isinstance(ref_datapipe, IterDataPipe):
            raise TypeError(f"IterKeyZipper: ref_datapipe must be an IterDataPipe, got "
                            f"{type(ref_datapipe).__name__}")
        if buffer_size is not None and buffer_size <= 0:
            raise ValueError(f"IterKeyZipper: buffer_size must be > 0 or None, got {buffer_size}")
        check_fn("IterKeyZipper", "key_fn", key_fn)
        check_fn("IterKeyZipper", "ref_key_fn", ref_key_fn, optional=True)
        check_fn("IterKeyZipper", "merge_fn", merge_fn, (0, 1), optional=True)
        self.source_datapipe = source_datapipe
        self.ref_datapipe = ref_datapipe
        self.key_fn = key_fn
        self.ref_key_fn = key_fn if ref_key_fn is None else ref_key_fn
        self.keep_key = keep_key
        self.buffer_size = buffer_size
        self.merge_fn = merge_fn

    def __iter__(self):
        buf, warned = {}, False
        ref = iter(self.ref_datapipe)
        for data in self.source_datapipe:
            key = self.key_fn(data)
            while key not in buf:
                try:
                    r = next(ref)
                except StopIteration:
                    raise BufferError(
                        f"IterKeyZipper: no item of ref_datapipe has the key {key!r} of "
                        f"source item {data!r} (the reference is exhausted; "
                        f"{len(buf)} unmatched reference items are buffered)") from None
                rkey = self.ref_key_fn(r)
                if rkey in buf:
                    raise ValueError(f"IterKeyZipper: duplicate key {rkey!r} in ref_datapipe")
                full = self.buffer_size is not None and len(buf) >= self.buffer_size
                if full and rkey != key:  # the match is taken at once: it never waits
                    if not warned:
                        warned = True
                        warnings.warn(
                            f"IterKeyZipper: buffer_size={self.buffer_size} reached looking "
                            f"for key {key!r}: Buffer reaches the upper limit, so reference "
                            "key-data pair begins to be removed from buffer in FIFO order. "
                            "Please consider increase buffer size.", UserWarning, stacklevel=2)
                    del buf[next(iter(buf))]  # the oldest: dicts keep insertion order
                buf[rkey] = r
            r = buf.pop(key)
            res = (data, r) if self.merge_fn is None else self.merge_fn(data, r)
            yield (key, res) if self.keep_key else res


@functional_datapipe("zip_with_map")
class MapKeyZipper(IterDataPipe):
    """Pair each item of the source with ``map_datapipe[key_fn(item)]``
    (functional name: ``zip_with_map``).

    Args:
        source_iterdatapipe (IterDataPipe): drives the output.
        map_datapipe (MapDataPipe): looked up by key.
        key_fn (callable): a source item's key.
        merge_fn (callable or None): default ``None``: ``(item, value)``.
        keep_key (bool): default ``False``; yield ``(key, merged)``.

    Example::

        >>> def key(x):
        ...     return x[0]
        >>> m = SequenceWrapper([10, 11, 12])
        >>> list(IterableWrapper([(2, "c"), (0, "a")]).zip_with_map(m, key))
        [((2, 'c'), 12), ((0, 'a'), 10)]
    """

    _len_source = "source_iterdatapipe"
    _repr_args = ("keep_key",)

    def __init__(self, source_iterdatapipe, map_datapipe, key_fn, merge_fn=None,
                 keep_key: bool = False) -> None:
        if not isinstance(map_datapipe, MapDataPipe):
            raise TypeError(f"MapKeyZipper: map_datapipe must be a MapDataPipe, got "
                            f"{type(map_datapipe).__name__}")
        check_fn("MapKeyZipper", "key_fn", key_fn)
        check_fn("MapKeyZipper", "merge_fn", merge_fn, (0, 1), optional=True)
        self.source_iterdatapipe = source_iterdatapipe
        self.map_datapipe = map_datapipe
        self.key_fn = key_fn
        self.merge_fn = merge_fn
        self.keep_key = keep_key

    def __iter__(self):
        for data in self.source_iterdatapipe:
            key = self.key_fn(data)
            try:
                value = self.map_datapipe[key]
            except (KeyError, IndexError) as e:
                raise KeyError(f"MapKeyZipper: key {key!r} of source item {data!r} is not in "
                               f"map_datapipe {self.map_datapipe!r}") from e
            res = (data, value) if self.merge_fn is None else self.merge_fn(data, value)
            yield (key, res) if self.keep_key else res
