"""Small helpers shared by the pipes of this package (not public)."""

from __future__ import annotations

import hashlib

HASHES = {"sha256": hashlib.sha256, "md5": hashlib.md5}


def apply_on_cols(fn, data, input_col):
    """``fn(data)``, ``fn(data[col])`` or ``fn(*(data[c] for c in cols))``."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, (list, tuple)):
        return fn(*(data[c] for c in input_col))
    return fn(data[input_col])


def check_hash_type(pipe: str, hash_type) -> None:
    if hash_type not in HASHES:
        raise ValueError(f"{pipe}: hash_type must be one of {list(HASHES)}, got {hash_type!r}")


def check_positive(pipe: str, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{pipe}: {name} must be a positive int, got {value!r}")


class ShuffleSwitch:
    """For a shuffling pipe: ``set_shuffle(False)`` makes it pass its items through in
    order (the DataLoader's ``shuffle=`` reaches every such pipe of the graph)."""

    _enabled = True

    def set_shuffle(self, shuffle: bool = True):
        """Turn shuffling on or off (off: items pass through in order). Returns the pipe."""
        self._enabled = bool(shuffle)
        return self
