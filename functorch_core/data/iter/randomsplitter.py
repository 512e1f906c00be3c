"""``random_split``: split a source at random into named parts with given weights."""

from __future__ import annotations

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe

__all__ = ["RandomSplitter"]


class _SplitDraws(IterDataPipe):
    """The shared part: the source and the seeded draw of each item's split.

    Its seed is part of its definition (every split and every process must draw
    the same way), so it is not ``_is_random``: the DataLoader does not reseed it.
    """

    def __init__(self, source_datapipe, total_length: int, weights: dict, seed) -> None:
        self.source_datapipe = source_datapipe
        self.total_length = total_length
        self.keys = list(weights)
        w = np.array([float(weights[k]) for k in self.keys])
        if len(w) == 0 or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"RandomSplitter: weights must be >= 0 with a positive sum, got "
                             f"{weights!r}")
        self.norm_weights = w * total_length / w.sum()
        self.seed = seed

    def draws(self):
        """Yield each item's split key, with a replayable seeded stream.

        Each draw takes one unit from the chosen split's budget, so with weights
        that sum to ``total_length`` every split gets exactly its weight.
        """
        rng = np.random.default_rng(self.seed)
        w = self.norm_weights.copy()
        remaining = float(self.total_length)
        while True:
            total = w.sum()
            p = w / total if total > 0 else np.full(len(w), 1 / len(w))
            i = int(rng.choice(len(w), p=p))
            w[i] -= 1
            remaining -= 1
            if w[i] < 0:
                w[i] = 0
                if w.sum() > 0 and remaining > 0:
                    w = w * remaining / w.sum()
            yield self.keys[i]

    def length_of(self, target) -> int:
        w = self.norm_weights
        if np.all(w == np.round(w)) and round(w.sum()) == self.total_length:
            return int(w[self.keys.index(target)])
        raise TypeError("RandomSplitter: split lengths are known only for integer weights "
                        "summing to total_length; use .set_length(n) to declare one")


class _Split(IterDataPipe):
    def __init__(self, main_datapipe: _SplitDraws, target) -> None:
        self.main_datapipe = main_datapipe
        self.target = target

    def override_seed(self, seed: int):
        """Use ``seed`` from the next iteration on (for every split of this source)."""
        self.main_datapipe.seed = seed
        return self

    def __iter__(self):
        draws = self.main_datapipe.draws()
        for x in self.main_datapipe.source_datapipe:
            if next(draws) == self.target:
                yield x

    def __len__(self) -> int:
        return self.main_datapipe.length_of(self.target)

    def __repr__(self) -> str:
        return f"RandomSplitter[{self.target!r}]"


@functional_datapipe("random_split")
class RandomSplitter(IterDataPipe):
    """Split the source at random into parts with the given weights
    (functional name: ``random_split``).

    Every split replays the same seeded draws over the source, so the splits are
    disjoint and together hold each item once; the same ``seed`` gives the same
    split in every process.

    Args:
        source_datapipe (IterDataPipe): the source.
        weights (dict): ``{name: weight}``; with integer weights summing to the
            length, each split gets exactly its weight.
        seed (int): the seed of the draws (``override_seed`` changes it).
        total_length (int or None): default ``None`` (``len(source_datapipe)``).
        target (key or None): default ``None``: return a list of all splits in
            ``weights`` order; otherwise only that split.

    Example::

        >>> train, valid = IterableWrapper(range(10)).random_split(
        ...     weights={"train": 8, "valid": 2}, seed=0)
        >>> len(list(train)), len(list(valid))
        (8, 2)
    """

    def __new__(cls, source_datapipe, weights: dict, seed, total_length: int | None = None,
                target=None):
        if total_length is None:
            try:
                total_length = len(source_datapipe)
            except TypeError:
                raise TypeError(f"RandomSplitter: needs total_length, and the source "
                                f"{source_datapipe!r} has no len()") from None
        main = _SplitDraws(source_datapipe, total_length, weights, seed)
        if target is None:
            return [_Split(main, k) for k in main.keys]
        if target not in weights:
            raise KeyError(f"RandomSplitter: target={target!r} is not a key of weights "
                           f"{list(weights)}")
        return _Split(main, target)
