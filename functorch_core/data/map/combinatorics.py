"""Random-order map pipes: Shuffler (shuffle), an iter pipe over shuffled indices."""

from __future__ import annotations

from ..datapipe import IterDataPipe, MapDataPipe

__all__ = ["Shuffler"]


class Shuffler(IterDataPipe):
    """Iterate a map pipe in a random order of its indices (functional name: ``shuffle``).

    As in torch, ``map_dp.shuffle()`` is an IterDataPipe.

    Args:
        datapipe (MapDataPipe): the source.
        indices (list, optional): the keys to shuffle. Default: ``range(len(datapipe))``.

    Example::

        >>> sorted(SequenceWrapper("abc").shuffle().set_seed(0))
        ['a', 'b', 'c']
    """

    _is_random = True
    _len_source = "indices"

    def __init__(self, datapipe, *, indices=None):
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else list(indices)
        self._enabled = True

    def set_shuffle(self, shuffle: bool = True):
        """Turn shuffling on or off (off: index order). Returns the pipe."""
        self._enabled = bool(shuffle)
        return self

    def __iter__(self):
        keys = self.indices
        if self._enabled:
            keys = [keys[i] for i in self._rng().permutation(len(keys))]
        for k in keys:
            yield self.datapipe[k]


MapDataPipe.register_datapipe_as_function("shuffle", Shuffler)
