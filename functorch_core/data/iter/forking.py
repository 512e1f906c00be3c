"""Pipes that split one source into several children: ``fork``, ``demux``,
``round_robin_demux`` and ``unzip``.

The children share one container that reads the source once per epoch and
buffers what a child has not read yet. An epoch starts when a child that
already began the current one (or any child, when none is running) calls
``iter``; the other children then join that epoch and read their buffers.
"""

from __future__ import annotations

import collections
import copy as copymod
import warnings

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import check_fn, check_positive

__all__ = ["Demultiplexer", "Forker", "RoundRobinDemultiplexer", "UnZipper"]


class _Splitter(IterDataPipe):
    """The shared container: reads ``datapipe`` and routes each item to children."""

    #: the TorchData function named in the unlimited-buffer warning
    _functional = "fork"

    def __init__(self, owner: str, datapipe, num_instances: int, buffer_size: int) -> None:
        check_positive(owner, "num_instances", num_instances)
        if buffer_size < 0:
            warnings.warn(f"{owner}: Unlimited buffer size is set for `{self._functional}`, "
                          "please be aware of OOM at random places", UserWarning, stacklevel=4)
        self.owner = owner
        self.datapipe = datapipe
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        self._reset_state()

    def _reset_state(self) -> None:
        self._it = None
        self._active = False
        self._epoch = 0
        self._count = 0
        self._bufs = [collections.deque() for _ in range(self.num_instances)]
        self._started = [False] * self.num_instances

    def __getstate__(self):
        state = dict(self.__dict__)
        for k in ("_it", "_active", "_epoch", "_count", "_bufs", "_started"):
            state.pop(k)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_state()

    def route(self, index: int, item) -> list[int]:
        """The children (indices) that receive ``item``, the ``index``-th of the epoch."""
        raise NotImplementedError

    def view(self, child: int, item):
        return item

    def _buffered(self) -> int:
        return sum(len(b) for b in self._bufs)

    def child_iter(self, child: int):
        if not self._active or self._started[child]:
            epoch = self._epoch + 1
            self._reset_state()
            self._epoch, self._active = epoch, True
            self._it = iter(self.datapipe)
        self._started[child] = True
        epoch, buf = self._epoch, self._bufs[child]
        while True:
            if epoch != self._epoch:
                raise RuntimeError(f"{self.owner}: child {child}'s iterator was invalidated "
                                   "because a sibling started a new epoch")
            if buf:
                yield self.view(child, buf.popleft())
                continue
            if self._it is None:
                return
            try:
                item = next(self._it)
            except StopIteration:
                self._it = None
                return
            index, self._count = self._count, self._count + 1
            mine = False
            for j in self.route(index, item):
                if j == child:
                    mine = True
                else:
                    self._bufs[j].append(item)
            if 0 <= self.buffer_size < self._buffered():
                raise BufferError(
                    f"{self.owner}: more than buffer_size={self.buffer_size} items are buffered "
                    f"for children that have not read them (child {child} is ahead); read the "
                    "children more evenly or increase buffer_size (-1: unlimited)")
            if mine:
                yield self.view(child, item)


class _Child(IterDataPipe):
    def __init__(self, main_datapipe: _Splitter, instance_id: int) -> None:
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id

    def __iter__(self):
        return self.main_datapipe.child_iter(self.instance_id)

    def __len__(self) -> int:
        return self.main_datapipe.child_len(self.instance_id)

    def __repr__(self) -> str:
        return f"{self.main_datapipe.owner}[{self.instance_id}]"


_COPIERS = {None: None, "shallow": copymod.copy, "deep": copymod.deepcopy}


class _Fork(_Splitter):
    def __init__(self, datapipe, num_instances, buffer_size, copy):
        super().__init__("Forker", datapipe, num_instances, buffer_size)
        self.copy = copy

    def route(self, index, item):
        return range(self.num_instances)

    def view(self, child, item):
        fn = _COPIERS[self.copy]
        return item if fn is None else fn(item)

    def child_len(self, child):
        return len(self.datapipe)


@functional_datapipe("fork")
class Forker(IterDataPipe):
    """Make ``num_instances`` children that each yield every item of the source
    (functional name: ``fork``). Returns a list of pipes (one if ``num_instances == 1``).

    Args:
        datapipe (IterDataPipe): the source, read once per epoch.
        num_instances (int): the number of children.
        buffer_size (int): default ``1000``; the most items held for children that
            lag behind (``-1``: unlimited). Exceeding it raises ``BufferError``.
        copy (str or None): default ``None``: children share the items;
            ``"shallow"`` or ``"deep"`` copies them per child.

    Example::

        >>> a, b = IterableWrapper(range(3)).fork(2)
        >>> list(a.zip(b))
        [(0, 0), (1, 1), (2, 2)]
    """

    def __new__(cls, datapipe, num_instances: int, buffer_size: int = 1000, copy=None):
        if copy not in _COPIERS:
            raise ValueError(f"Forker: copy must be None, 'shallow' or 'deep', got {copy!r}")
        if num_instances == 1:
            return datapipe
        main = _Fork(datapipe, num_instances, buffer_size, copy)
        return [_Child(main, i) for i in range(num_instances)]


class _Demux(_Splitter):
    _functional = "demux"

    def __init__(self, datapipe, num_instances, buffer_size, classifier_fn, drop_none):
        check_fn("Demultiplexer", "classifier_fn", classifier_fn)
        super().__init__("Demultiplexer", datapipe, num_instances, buffer_size)
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none

    def route(self, index, item):
        j = self.classifier_fn(item)
        if j is None and self.drop_none:
            return ()
        if not isinstance(j, int) or not 0 <= j < self.num_instances:
            raise ValueError(f"Demultiplexer: classifier_fn returned {j!r} for item {item!r} "
                             f"(index {index}); expected an int in [0, {self.num_instances})"
                             + ("" if self.drop_none else " or None with drop_none=True"))
        return (j,)

    def child_len(self, child):
        raise TypeError("Demultiplexer's children have no length (it depends on classifier_fn)")


@functional_datapipe("demux")
class Demultiplexer(IterDataPipe):
    """Split the source into ``num_instances`` children by ``classifier_fn``
    (functional name: ``demux``). Returns a list of pipes.

    Args:
        datapipe (IterDataPipe): the source, read once per epoch.
        num_instances (int): the number of children.
        classifier_fn (callable): an item's child index in ``[0, num_instances)``
            (or ``None``, see ``drop_none``).
        drop_none (bool): default ``False``; drop items classified ``None``.
        buffer_size (int): default ``1000``; the most items held for children not
            being read (``-1``: unlimited). Exceeding it raises ``BufferError``.

    Example::

        >>> def odd(x):
        ...     return x % 2
        >>> even, odd_ = IterableWrapper(range(5)).demux(2, odd)
        >>> list(even), list(odd_)
        ([0, 2, 4], [1, 3])
    """

    def __new__(cls, datapipe, num_instances: int, classifier_fn, drop_none: bool = False,
                buffer_size: int = 1000):
        main = _Demux(datapipe, num_instances, buffer_size, classifier_fn, drop_none)
        return [_Child(main, i) for i in range(num_instances)]


class _RoundRobin(_Splitter):
    _functional = "demux"

    def __init__(self, datapipe, num_instances, buffer_size):
        super().__init__("RoundRobinDemultiplexer", datapipe, num_instances, buffer_size)

    def route(self, index, item):
        return (index % self.num_instances,)

    def child_len(self, child):
        n, k = len(self.datapipe), self.num_instances
        return n // k + (child < n % k)


@functional_datapipe("round_robin_demux")
class RoundRobinDemultiplexer(IterDataPipe):
    """Deal the source's items to ``num_instances`` children in turn
    (functional name: ``round_robin_demux``). Returns a list of pipes (``[datapipe]``
    for one instance).

    Args:
        datapipe (IterDataPipe): the source, read once per epoch.
        num_instances (int): the number of children.
        buffer_size (int): default ``1000``; as ``demux``.

    Example::

        >>> a, b = IterableWrapper(range(5)).round_robin_demux(2)
        >>> list(a), list(b)
        ([0, 2, 4], [1, 3])
    """

    def __new__(cls, datapipe, num_instances: int, buffer_size: int = 1000):
        if num_instances == 1:
            return [datapipe]  # a list even for one instance, as TorchData
        main = _RoundRobin(datapipe, num_instances, buffer_size)
        return [_Child(main, i) for i in range(num_instances)]


class _Unzip(_Splitter):
    def __init__(self, datapipe, columns, buffer_size):
        super().__init__("UnZipper", datapipe, len(columns), buffer_size)
        self.columns = columns

    def route(self, index, item):
        return range(self.num_instances)

    def view(self, child, item):
        return item[self.columns[child]]

    def child_len(self, child):
        return len(self.datapipe)


@functional_datapipe("unzip")
class UnZipper(IterDataPipe):
    """Split a source of sequences into one child per position
    (functional name: ``unzip``). Returns a list of pipes.

    Args:
        source_datapipe (IterDataPipe): yields sequences of ``sequence_length``.
        sequence_length (int): the length of each item.
        buffer_size (int): default ``1000``; as ``fork``.
        columns_to_skip (list or None): default ``None``; positions with no child.

    Example::

        >>> a, b = IterableWrapper([(0, "a"), (1, "b")]).unzip(sequence_length=2)
        >>> list(a), list(b)
        ([0, 1], ['a', 'b'])
    """

    def __new__(cls, source_datapipe, sequence_length: int, buffer_size: int = 1000,
                columns_to_skip=None):
        check_positive("UnZipper", "sequence_length", sequence_length)
        skip = set(columns_to_skip or ())
        columns = [i for i in range(sequence_length) if i not in skip]
        if not columns:
            raise ValueError("UnZipper: columns_to_skip leaves no column of "
                             f"sequence_length={sequence_length}")
        main = _Unzip(source_datapipe, columns, buffer_size)
        return [_Child(main, i) for i in range(len(columns))]
