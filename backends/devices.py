"""Device arrays, as the layers above the backends see them: which arrays are on the GPU,
moving arrays between the host and the GPU, whether a GPU backend can run here, and eager
evaluation of one equation on the device.

This is the API layer's one window on ``backends.cuda``: what lies behind it (CuPy arrays on
a GPU, ``SimArray`` under numba-cuda's simulator, the per-primitive kernel cache) may change
without the API noticing.
"""

from __future__ import annotations

import numpy as np

from .cuda import availability
from .cuda.arrays import SimArray, is_device_array, maybe_present, to_device, to_host
from .cuda.availability import INSTALL, require
from .cuda.eager import evaluate

__all__ = ["INSTALL", "copy_into", "evaluate", "is_device_array", "maybe_present", "missing",
           "require", "to_device", "to_host"]


def missing() -> str | None:
    """What the cuda backend lacks here, in words (None: it can run)."""
    return availability.missing()


def copy_into(target, value, index=Ellipsis):
    """``target[index] = value`` for a device array (CuPy's, or the simulator's SimArray)."""
    if type(target) is SimArray:
        np.copyto(target._a[index], value._a if type(value) is SimArray else value,
                  casting="unsafe")
    else:
        target[index] = value
