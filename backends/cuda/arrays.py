"""Device arrays: ``cupy.ndarray`` on a GPU; :class:`SimArray` under numba-cuda's simulator.

In the simulator the device's memory is the host's, so a plain NumPy array could not say
where it lives. ``SimArray`` wraps one and behaves as a CuPy array does where the
placement rules look: it has a shape and a dtype, ``get()`` copies it to the host, and
an implicit conversion to NumPy (``np.asarray``) raises, so a path that would copy a
device array to the host silently fails the tests in the simulator as it would on a GPU.
"""

from __future__ import annotations

import sys

import numpy as np

from .availability import array_module, simulated

_made = False       # whether a SimArray was ever made (the jit dispatch looks only then)


class SimArray:
    """An array "on the device" in numba-cuda's simulator (the stand-in for CuPy's)."""

    __slots__ = ("_a",)
    _fc_device = "cuda"         # what ir.core.aval_of and the placement checks look for

    def __init__(self, array):
        global _made
        _made = True
        self._a = array

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)

    def __len__(self):
        return len(self._a)

    def get(self):
        """A NumPy copy on the host (as ``cupy.ndarray.get``)."""
        return self._a.copy()

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed (a simulated "
                        "cuda array, as CuPy's): use functorch_core.device_get(x) or x.get()")

    def __repr__(self):
        return f"SimArray({self._a!r})"


def maybe_present() -> bool:
    """Whether any device array can exist in this process (CuPy imported, or a SimArray
    made): the jit's slow path checks its arguments' placement only then."""
    return _made or "cupy" in sys.modules


def is_device_array(x) -> bool:
    """True for an array on the GPU: a CuPy array, or a :class:`SimArray`."""
    if type(x) is SimArray:
        return True
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(x, cupy.ndarray)


def to_device(x):
    """``x`` (NumPy, CuPy, SimArray or a scalar) as a device array (a copy)."""
    if simulated():
        return SimArray(np.array(x._a if type(x) is SimArray else x, copy=True))
    return array_module().array(x, copy=True)


def to_host(x):
    """``x`` as a NumPy array (a copy when it is on the device)."""
    if type(x) is SimArray:
        return x.get()
    return x.get() if is_device_array(x) else np.asarray(x)


def buffer(x, xp):
    """The array kernels read for argument ``x``: its device buffer (no copy), or ``x``
    moved there."""
    if type(x) is SimArray:
        return x._a
    return xp.asarray(x)


def result(x, on_device, xp):
    """A kernel result handed to the caller: on the device when the call's inputs were."""
    if on_device:
        return SimArray(x) if simulated() else x
    return x if xp is np else xp.asnumpy(x)
