"""Samplers for map-style datasets, as ``torch.utils.data``'s: indices, or lists of indices.

``SequentialSampler`` and ``RandomSampler`` are the ones the iter ``Sampler``
pipe uses; ``SubsetRandomSampler``, ``WeightedRandomSampler`` and
``BatchSampler`` complete torch's set. A ``generator`` is a
``numpy.random.Generator`` (or an int seed); ``None`` draws fresh entropy at
each iteration, as torch does without a generator.
"""

from __future__ import annotations

import numpy as np

from .iter.combinatorics import RandomSampler, SequentialSampler

__all__ = ["BatchSampler", "RandomSampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]


def _count(call: str, name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{call}: {name} should be a positive integer value, but got "
                         f"{name}={value!r}")
    return value


def _flag(call: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{call}: {name} should be a boolean value, but got {name}={value!r}")
    return value


class SubsetRandomSampler:
    """Yield the given indices in a random order, a new one at each iteration.

    Args:
        indices (sequence of int): the indices to permute.
        generator (numpy.random.Generator or int, optional): the source of
            randomness. Default: ``None`` (fresh entropy each iteration).

    Example::

        >>> sorted(SubsetRandomSampler([5, 1, 7], generator=0))
        [1, 5, 7]
    """

    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        self.generator = generator

    def __iter__(self):
        order = np.random.default_rng(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler:
    """Yield ``num_samples`` indices in ``[0, len(weights))`` drawn with the given weights.

    Index ``i`` is drawn with probability ``weights[i] / sum(weights)``.

    Args:
        weights (sequence of float): non-negative weights, one per index (1-D).
        num_samples (int): how many indices to draw.
        replacement (bool): draw with replacement. Default: ``True``. Without
            it, ``num_samples`` may not exceed the number of non-zero weights.
        generator (numpy.random.Generator or int, optional): the source of
            randomness. Default: ``None`` (fresh entropy each iteration).

    Example::

        >>> list(WeightedRandomSampler([0.0, 0.0, 1.0], 3, generator=0))
        [2, 2, 2]
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        call = "WeightedRandomSampler"
        self.num_samples = _count(call, "num_samples", num_samples)
        self.replacement = _flag(call, "replacement", replacement)
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"{call}: weights should be a 1d sequence but given weights have "
                             f"shape {tuple(w.shape)}")
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"{call}: weights must be finite, non-negative and not all zero")
        nonzero = int(np.count_nonzero(w))
        if not replacement and num_samples > nonzero:
            raise ValueError(f"{call}: num_samples={num_samples} without replacement, but only "
                             f"{nonzero} weights are non-zero")
        self.weights = w
        self.generator = generator

    def __iter__(self):
        rng = np.random.default_rng(self.generator)
        p = self.weights / self.weights.sum()
        drawn = rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p)
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler:
    """Group a sampler's indices into lists of ``batch_size``.

    Args:
        sampler (iterable of int): the indices, e.g. a ``SequentialSampler``.
        batch_size (int): indices per list.
        drop_last (bool): drop the last list if it is short.

    Example::

        >>> list(BatchSampler(range(5), 2, drop_last=False))
        [[0, 1], [2, 3], [4]]
        >>> len(BatchSampler(range(5), 2, drop_last=True))
        2
    """

    def __init__(self, sampler, batch_size, drop_last):
        self.batch_size = _count("BatchSampler", "batch_size", batch_size)
        self.drop_last = _flag("BatchSampler", "drop_last", drop_last)
        self.sampler = sampler

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
