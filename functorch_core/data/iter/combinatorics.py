"""Random-order iter pipes: Shuffler (shuffle) and Sampler, with their samplers."""

from __future__ import annotations

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import ShuffleSwitch

__all__ = ["RandomSampler", "Sampler", "SequentialSampler", "Shuffler"]


@functional_datapipe("shuffle")
class Shuffler(ShuffleSwitch, IterDataPipe):
    """Shuffle through a buffer (functional name: ``shuffle``).

    Fills a buffer of ``buffer_size`` items, then yields a random item of the
    buffer for each item read; a buffer as large as the data gives a full
    shuffle. Draws come from the seed given to ``set_seed`` (the DataLoader
    gives one per epoch, the same on every rank and worker, before sharding).

    Args:
        datapipe (IterDataPipe): the source.
        buffer_size (int): the buffer's size. Default: ``10000``.
        unbatch_level (int): unbatch the source this many levels first. Default: ``0``.

    Example::

        >>> dp = IterableWrapper(range(5)).shuffle().set_seed(0)
        >>> sorted(dp)
        [0, 1, 2, 3, 4]
    """

    _is_random = True
    _repr_args = ("buffer_size",)
    _len_source = "datapipe"

    def __init__(self, datapipe, *, buffer_size: int = 10000, unbatch_level: int = 0):
        if buffer_size <= 0:
            raise ValueError(f"Shuffler: buffer_size={buffer_size}; expected a positive int")
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(
            unbatch_level=unbatch_level)
        self.buffer_size = buffer_size

    def _shuffled(self, rng):
        size, buf = self.buffer_size, []
        # draws in blocks: one call to the generator per 1024 items
        draws, k = rng.random(1024), 0
        for x in self.datapipe:
            if len(buf) == size:
                if k == len(draws):
                    draws, k = rng.random(1024), 0
                j = int(draws[k] * size)
                k += 1
                buf[j], x = x, buf[j]
                yield x
            else:
                buf.append(x)
        order = rng.permutation(len(buf))
        for j in order:
            yield buf[j]


class SequentialSampler:
    """Yield ``0, 1, ..., len(data_source) - 1``.

    Args:
        data_source: anything with ``len()``.
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler:
    """Yield random indices into ``data_source``.

    Args:
        data_source: anything with ``len()``.
        replacement (bool): draw with replacement. Default: ``False`` (a permutation).
        num_samples (int, optional): how many indices. Default: ``len(data_source)``.
        generator (numpy.random.Generator or int, optional): the source of
            randomness. Default: fresh entropy each iteration.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples=None,
                 generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if num_samples is not None and num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples={num_samples}; expected a positive int")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def draw(self, rng: np.random.Generator):
        n, k = len(self.data_source), self.num_samples
        if self.replacement:
            return rng.integers(0, n, size=k).tolist()
        reps = -(-k // n) if n else 0
        return np.concatenate([rng.permutation(n) for _ in range(reps)])[:k].tolist()

    def __iter__(self):
        return iter(self.draw(np.random.default_rng(self.generator)))

    def __len__(self) -> int:
        return self.num_samples


class Sampler(IterDataPipe):
    """Yield what a sampler over the source yields (no functional name, as in torch).

    As in torch, the sampler is built as ``sampler(*sampler_args,
    data_source=datapipe, **sampler_kwargs)`` and its output (indices, for the
    samplers here) is what this pipe yields.

    Args:
        datapipe (IterDataPipe): a source with ``len()``.
        sampler (type): the sampler class. Default: ``SequentialSampler``.
        sampler_args (tuple, optional): positional arguments for it.
        sampler_kwargs (dict, optional): keyword arguments for it.
    """

    _repr_args = ("sampler",)
    _len_source = "sampler"

    def __init__(self, datapipe, sampler=SequentialSampler, sampler_args=None,
                 sampler_kwargs=None):
        len(datapipe)  # TypeError naming the source if it has no length
        self.datapipe = datapipe
        self.sampler_args = () if sampler_args is None else tuple(sampler_args)
        self.sampler_kwargs = {} if sampler_kwargs is None else dict(sampler_kwargs)
        self.sampler = sampler(*self.sampler_args, data_source=datapipe, **self.sampler_kwargs)
        self._is_random = isinstance(self.sampler, RandomSampler)

    def __iter__(self):
        if self._is_random and self._seed is not None:
            yield from self.sampler.draw(self._rng())
        else:
            yield from self.sampler
