"""The two DataPipe bases and the registry that chains them by name.

``functional_datapipe("map")`` on an ``IterDataPipe`` subclass makes
``pipe.map(fn)`` build that class with ``pipe`` as its first argument. The
registry is an explicit dict per base; nothing is looked up through
``__getattr__``.

Conventions every pipe follows (the DataLoader relies on them):

* **Sources** are the DataPipes held in the pipe's attributes (directly, or
  inside a list, tuple or dict attribute). ``graph.traverse`` finds them there;
  a pipe that hides a source elsewhere overrides ``_datapipe_sources``.
* **Randomness**: a random pipe sets the class attribute ``_is_random = True``
  and draws only from ``self._rng()``, a ``numpy.random.Generator`` made at
  ``__iter__`` time from the seed given to ``set_seed`` (fresh entropy when no
  seed was given). As in TorchData, a seed serves the next iteration only; the
  same seed gives the same epoch.
* **Resumability**: an epoch is a deterministic function of the sources and of
  the seeds; the loader resumes by replaying to the saved position. A pipe
  whose iteration cannot be replayed sets ``self._resume_blocker = "<why>"``.
  ``_skip(n)`` may arrange for the next ``__iter__`` to start after the first
  ``n`` outputs without producing them (return ``True``) when that is exact;
  it returns ``False`` having changed nothing otherwise. A pending skip is used
  when the pipe's generator starts (its first ``next``), so a pipe delegates
  it only to sources it starts at once.
* **Pickling**: a pipe holds no open file, generator or thread between
  ``__iter__`` calls, so it pickles for spawned workers.
* **Typing**: both bases are ``typing.Generic`` in the type of their items, as
  torch's are: ``class Pipe(IterDataPipe[T])`` and ``IterDataPipe[int]`` work
  and change nothing at run time (no item is checked against the type).
"""

from __future__ import annotations

import functools
from typing import Generic, TypeVar

import numpy as np

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe"]

T_co = TypeVar("T_co", covariant=True)


class DataChunk(list):
    """A batch: a ``list`` subclass, so ``unbatch`` can tell batches from samples.

    ``str`` shows it as the list it is, as torch's ``DataChunk``; ``repr`` names
    the class; ``as_str`` is torch's ``str`` of each item between brackets.

    Example::

        >>> chunk = DataChunk(["a", 1])
        >>> str(chunk), repr(chunk), chunk.as_str()
        ("['a', 1]", "DataChunk(['a', 1])", '[a, 1]')
    """

    def __repr__(self) -> str:
        return f"DataChunk({list.__repr__(self)})"

    def __str__(self) -> str:
        return list.__repr__(self)

    def as_str(self, indent: str = "") -> str:
        """``indent`` then the items' ``str`` between brackets (torch's ``DataChunk.as_str``)."""
        return indent + "[" + ", ".join(str(i) for i in self) + "]"

    def raw_iterator(self):
        """Iterate the items (torch's ``DataChunk.raw_iterator``)."""
        yield from list.__iter__(self)


class _DataPipeBase:
    _functions: dict[str, type]
    #: class attribute: True for pipes whose output depends on a seed
    _is_random: bool = False
    #: why this pipe's iteration cannot be replayed (``None``: it can)
    _resume_blocker: str | None = None
    #: attribute names shown by ``repr`` as ``name=value``
    _repr_args: tuple[str, ...] = ()
    #: the attribute holding the source whose length this pipe has (one output per
    #: input); ``None``: the pipe has no length unless it defines ``__len__``
    _len_source: str | None = None
    _seed: int | None = None

    @classmethod
    def register_datapipe_as_function(cls, name: str, pipe_cls: type) -> None:
        if name in cls._functions:
            raise ValueError(
                f"functional_datapipe({name!r}): the name is taken by "
                f"{cls._functions[name].__name__}")
        cls._functions[name] = pipe_cls

        @functools.wraps(pipe_cls, assigned=("__doc__",), updated=())
        def method(self, *args, **kwargs):
            return pipe_cls(self, *args, **kwargs)

        method.__name__ = name
        method.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, method)

    # -- the seeding and resume protocol ------------------------------------------------
    def set_seed(self, seed: int):
        """Seed this pipe's random draws for its next iteration.

        As in TorchData the seed is used once: the iteration after the next one
        draws fresh entropy unless ``set_seed`` is called again.

        Args:
            seed (int): a non-negative integer; the same seed gives the same
                output for the same input.

        Returns:
            the pipe itself, so calls chain.
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise TypeError(f"{type(self).__name__}.set_seed(seed={seed!r}): expected a "
                            "non-negative int")
        self._seed = int(seed)
        return self

    def _rng(self) -> np.random.Generator:
        """A fresh generator for one iteration: from the seed (used up), or entropy."""
        seed, self._seed = self._seed, None
        return np.random.default_rng(seed)

    def _skip(self, n: int) -> bool:
        """Make the next ``__iter__`` start after its first ``n`` outputs.

        Returns ``True`` if this pipe arranged that exactly, ``False`` (changing
        nothing) if it cannot; the loader then replays and discards instead.
        """
        return False

    def __len__(self) -> int:
        if self._len_source is None:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return len(getattr(self, self._len_source))

    def _datapipe_sources(self) -> list:
        """The DataPipes this pipe reads from, in attribute order."""
        found = []
        for value in vars(self).values():
            if isinstance(value, _DataPipeBase):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(v for v in value if isinstance(v, _DataPipeBase))
            elif isinstance(value, dict):
                found.extend(v for v in value.values() if isinstance(v, _DataPipeBase))
        return found

    # -- display ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        args = []
        for name in self._repr_args:
            value = getattr(self, name, None)
            shown = getattr(value, "__qualname__", None) if callable(value) else None
            args.append(f"{name}={shown or repr(value)}")
        return f"{type(self).__name__}({', '.join(args)})" if args else type(self).__name__

    def __str__(self) -> str:
        return repr(self)


class IterDataPipe(_DataPipeBase, Generic[T_co]):
    """An iterable building block: ``__iter__`` yields samples.

    Subclasses define ``__iter__``, and ``__len__`` where the length is known
    (``_len_source = "attr"`` where it is the length of the source in ``attr``).
    The class is generic in its item type, for type checkers only:

    Example::

        >>> T = TypeVar("T")
        >>> class Twice(IterDataPipe[T]):
        ...     def __init__(self, source: IterDataPipe[T]):
        ...         self.source = source
        ...     def __iter__(self):
        ...         for x in self.source:
        ...             yield x
        ...             yield x
        >>> list(Twice(IterableWrapper([1, 2])))
        [1, 1, 2, 2]
    """

    _functions: dict[str, type] = {}

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")


class MapDataPipe(_DataPipeBase, Generic[T_co]):
    """An indexable building block: ``__getitem__`` and ``__len__``.

    Generic in its item type, as ``IterDataPipe`` is: ``class Table(MapDataPipe[str])``.
    """

    _functions: dict[str, type] = {}

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __iter__(self):
        # iterating a map pipe walks its indices in order, as a Python sequence does
        for i in range(len(self)):
            yield self[i]


def functional_datapipe(name: str):
    """Register a DataPipe class under ``name`` as a method of its base.

    Args:
        name (str): the method name, e.g. ``"map"``.

    Example::

        >>> @functional_datapipe("double")
        ... class Doubler(IterDataPipe):
        ...     def __init__(self, source):
        ...         self.source = source
        ...     def __iter__(self):
        ...         for x in self.source:
        ...             yield 2 * x
        >>> list(IterableWrapper([1, 2]).double())
        [2, 4]
    """

    def register(cls):
        if issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(name, cls)
        elif issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(name, cls)
        else:
            raise TypeError(
                f"functional_datapipe({name!r}): {cls.__name__} is neither an "
                "IterDataPipe nor a MapDataPipe")
        return cls

    return register
