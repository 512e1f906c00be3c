"""Which backends can run here, and moving arrays between the host and the GPU."""

from __future__ import annotations

import numpy as np

from backends.cuda import availability
from ir.pytree import tree_map


def backends_available() -> list[str]:
    """The backends ``jit(..., backend=...)`` can use on this machine.

    ``'cpu'`` and ``'interpreter'`` always; ``'cuda'`` when numba-cuda, CuPy and a GPU
    with its driver are there, or when numba-cuda's simulator is on
    (``NUMBA_ENABLE_CUDASIM=1``).

    Example::

        >>> fc.backends_available()
        ['cpu', 'interpreter']
    """
    names = ["cpu", "interpreter"]
    if availability.missing() is None:
        names.append("cuda")
    return names


def device_put(x, device="cuda"):
    """Copy every array of the pytree ``x`` to ``device``.

    Args:
        x: a pytree of arrays (NumPy, CuPy, or anything ``np.asarray`` accepts).
        device (str, default ``'cuda'``): ``'cuda'`` (CuPy arrays; NumPy arrays under
            numba-cuda's simulator) or ``'cpu'`` (NumPy arrays, as ``device_get``).

    Returns:
        ``x`` with each leaf on ``device``.

    Example::

        >>> xs = fc.device_put({"w": np.ones(3)}, device="cuda")
        >>> fc.jit(lambda t: t["w"] * 2, backend="cuda")(xs)   # stays on the GPU
    """
    if device == "cpu":
        return device_get(x)
    if device != "cuda":
        raise ValueError(f"device_put(x, device={device!r}): device must be 'cuda' or 'cpu'")
    availability.require("device_put(x, device='cuda')")
    xp = availability.array_module()
    return tree_map(lambda a: xp.array(a, copy=True), x)


def device_get(x):
    """Copy every array of the pytree ``x`` to the host as NumPy arrays.

    Args:
        x: a pytree of arrays (CuPy arrays are copied back; NumPy arrays pass through).

    Example::

        >>> fc.device_get(fc.device_put(np.arange(3.0)))
        array([0., 1., 2.])
    """
    return tree_map(lambda a: a.get() if hasattr(a, "__cuda_array_interface__")
                    and hasattr(a, "get") else np.asarray(a), x)
