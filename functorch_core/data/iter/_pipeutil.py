"""Small helpers shared by the pipes of this package (not public)."""

from __future__ import annotations

import numpy as np


def apply_on_cols(fn, data, input_col):
    """``fn(data)``, ``fn(data[col])`` or ``fn(*(data[c] for c in cols))``."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, (list, tuple)):
        return fn(*(data[c] for c in input_col))
    return fn(data[input_col])


def check_positive(pipe: str, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{pipe}: {name} must be a positive int, got {value!r}")


class SeededPipe:
    """The randomness protocol: ``_is_random``, ``set_seed`` and ``_new_rng``.

    A pipe draws only from the ``numpy.random.Generator`` that ``_new_rng()``
    returns at the start of each ``__iter__``: seeded by the last ``set_seed``
    (so an epoch replays exactly), or from fresh entropy when none was given.
    """

    _is_random = True
    _seed: int | None = None

    def set_seed(self, seed: int):
        self._seed = int(seed)
        return self

    def _new_rng(self) -> np.random.Generator:
        return np.random.default_rng(self._seed)
