"""The two DataPipe bases and the registry that chains them by name.

``functional_datapipe("map")`` on an ``IterDataPipe`` subclass makes
``pipe.map(fn)`` build that class with ``pipe`` as its first argument. The
registry is an explicit dict per base; nothing is looked up through
``__getattr__``.
"""

from __future__ import annotations

import functools

__all__ = ["IterDataPipe", "MapDataPipe", "functional_datapipe"]


class _DataPipeBase:
    _functions: dict[str, type]


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

    def __repr__(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return repr(self)


class IterDataPipe(_DataPipeBase):
    """An iterable building block: ``__iter__`` yields samples.

    Subclasses define ``__iter__`` (and ``__len__`` where the length is known).
    """

    _functions: dict[str, type] = {}

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


class MapDataPipe(_DataPipeBase):
    """An indexable building block: ``__getitem__`` and ``__len__``."""

    _functions: dict[str, type] = {}

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


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
