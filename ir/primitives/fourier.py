"""Discrete Fourier transforms.
"""

from __future__ import annotations

import numpy as np

from ..catalogue import complex_of
from ..catalogue import fail as _fail
from ..catalogue import kinds_check as _kinds_check
from ..catalogue import real_of as _real_of
from ..catalogue import register as _register
from ..core import AbstractArray

__all__ = [
    "fft", "FFT_TYPES"
]


# --- discrete Fourier transforms ----------------------------------------------

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")


def _fft_rule(x, *, fft_type, fft_lengths):
    """fft(x): the ``len(fft_lengths)``-dimensional DFT over the trailing axes of ``x``.
    ``ifft`` and ``irfft`` carry NumPy's default 1/n scaling; ``rfft`` keeps the
    non-negative frequencies of the last axis (n // 2 + 1), ``irfft`` inverts it."""
    if fft_type not in FFT_TYPES:
        _fail(f"fft: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    lengths = tuple(fft_lengths)
    k = len(lengths)
    if not 1 <= k <= x.ndim or any(not isinstance(n, int | np.integer) or n < 1
                                   for n in lengths):
        _fail(f"fft: fft_lengths {lengths} must be 1 to {x.ndim} positive sizes for an "
              f"operand of shape {x.shape}")
    lead, trailing = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    if fft_type == "rfft":
        _kinds_check("fft (rfft)", [x], "f")
        want, out = lengths, lengths[:-1] + (lengths[-1] // 2 + 1,)
        dtype = complex_of(x.dtype)
    elif fft_type == "irfft":
        _kinds_check("fft (irfft)", [x], "c")
        want, out = lengths[:-1] + (lengths[-1] // 2 + 1,), lengths
        dtype = _real_of(x.dtype)
    else:
        _kinds_check(f"fft ({fft_type})", [x], "c")
        want, out, dtype = lengths, lengths, x.dtype
    if trailing != want:
        _fail(f"fft ({fft_type}): the trailing axes of an operand of shape {x.shape} must "
              f"be {want} for fft_lengths {lengths}")
    return [AbstractArray(lead + out, dtype)]


fft = _register("fft", _fft_rule, "fft")
