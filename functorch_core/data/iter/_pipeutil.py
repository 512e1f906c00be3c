"""Small helpers shared by the pipes of this package (not public)."""

from __future__ import annotations


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
