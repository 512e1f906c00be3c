"""Whether the cuda backend can run here: a GPU (numba-cuda, CuPy and a driver) or the
numba-cuda simulator (``NUMBA_ENABLE_CUDASIM=1``, NumPy arrays standing in for CuPy's)."""

from __future__ import annotations

import importlib.util
import os

INSTALL = "pip install functorch_core[cuda]"


def simulated() -> bool:
    """True when numba-cuda runs kernels in its simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def missing() -> str | None:
    """What the cuda backend lacks here, in words (None: it can run)."""
    if importlib.util.find_spec("numba") is None or \
            importlib.util.find_spec("numba.cuda") is None:
        return "numba-cuda is not installed"
    if simulated():
        return None
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed"
    try:
        from numba import cuda
        if not cuda.is_available():
            return "no CUDA driver or GPU was found (numba.cuda.is_available() is False)"
    except Exception as e:      # a broken driver install raises from inside numba
        return f"the CUDA driver could not be loaded ({type(e).__name__}: {e})"
    return None


def require(what="backend='cuda'"):
    """Raise a RuntimeError naming ``what`` and the missing piece unless cuda can run."""
    why = missing()
    if why is not None:
        raise RuntimeError(
            f"{what}: the cuda backend cannot run here: {why}. Install it with "
            f"`{INSTALL}` on a machine with an NVIDIA GPU and driver, or set "
            f"NUMBA_ENABLE_CUDASIM=1 to run it in numba-cuda's simulator (slow; for tests).")


def array_module():
    """The array namespace of device buffers: CuPy on a GPU, NumPy in the simulator."""
    if simulated():
        import numpy
        return numpy
    import cupy
    return cupy
