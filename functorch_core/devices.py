"""Which backends can run here, and moving arrays between the host and the GPU."""

from __future__ import annotations

import numpy as np

from functorch_core.backends import devices as backend
from functorch_core.ir import eager as ir_eager
from functorch_core.ir.pytree import tree_map

ir_eager.register_device(backend.evaluate)   # eager equations over device arrays run there


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
    if backend.missing() is None:
        names.append("cuda")
    return names


def device_put(x, device="cuda"):
    """Copy every array of the pytree ``x`` to ``device``.

    Args:
        x: a pytree of arrays (NumPy, CuPy, or anything ``np.asarray`` accepts).
        device (str, default ``'cuda'``): ``'cuda'`` (CuPy arrays; under numba-cuda's
            simulator ``backends.cuda.arrays.SimArray``, which stands in for them) or
            ``'cpu'`` (NumPy arrays, as ``device_get``).

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
    backend.require("device_put(x, device='cuda')")
    return tree_map(backend.to_device, x)


def device_get(x):
    """Copy every array of the pytree ``x`` to the host as NumPy arrays.

    Args:
        x: a pytree of arrays (CuPy arrays are copied back; NumPy arrays pass through).

    Example::

        >>> fc.device_get(fc.device_put(np.arange(3.0)))
        array([0., 1., 2.])
    """
    return tree_map(backend.to_host, x)


def placement(leaves, paths, what) -> str | None:
    """``'cuda'`` when the array leaves of one call are on the GPU, None when on the host.

    Scalars go anywhere. ``paths()`` names the leaves (``arg_paths``); a call whose
    arrays are on two devices raises a ValueError naming ``what``, one argument on each
    and both devices.
    """
    dev = host = None
    for i, x in enumerate(leaves):
        if backend.is_device_array(x):
            dev = i if dev is None else dev
        elif isinstance(x, np.ndarray) and host is None:
            host = i
        if dev is not None and host is not None:
            names = paths()
            raise ValueError(
                f"{what}: argument {names[dev]} is on cuda (shape {tuple(leaves[dev].shape)}) "
                f"and argument {names[host]} on the cpu (shape {leaves[host].shape}); arrays "
                "of one call must be on one device: move them with "
                "functorch_core.device_put(x, device='cuda') or functorch_core.device_get(x)")
    return None if dev is None else "cuda"
