"""Deterministic mode: results that do not depend on thread count or scheduling.

PyTorch's names and contract. What the cpu backend does (an audit, kernel by kernel):

- fused kernels split only their outermost *kept* loop over threads: every output
  element, a reduction's included, is computed by one thread in an order fixed by the
  shape; full, leading-axis and scanning reductions and kernels with scatters (scatter,
  scatter-add, select_and_scatter_add) are never split. Always deterministic.
- sorts are stable and split by rows, each row sorted by one thread. Always.
- ``threefry2x32`` is counter based: elementwise. Always.
- interpreter fallbacks and control-flow loops run on the calling thread. Always.
- ``dot_general`` and ``conv_general_dilated`` call OpenBLAS, whose results depend on its
  own thread count for common shapes (a 300x700 by 700x500 f32 product: two thirds of
  the elements differ between 1 and 2 threads): deterministic mode holds NumPy's
  OpenBLAS at one thread.
- ``conv_general_dilated``'s "features" strategy sums per-thread partial results:
  deterministic mode splits it into a fixed number of parts whatever the thread count.

Where the BLAS is not NumPy's OpenBLAS (SciPy's fallback, e.g. NumPy on Accelerate)
its thread count cannot be held, and enabling the mode raises naming ``dot_general``
and ``conv_general_dilated`` (warns instead with ``warn_only=True``).
"""

from __future__ import annotations

import warnings

from functorch_core.backends import determinism

__all__ = ["are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "use_deterministic_algorithms"]

_UNHELD = ("dot_general", "conv_general_dilated")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make every primitive give bit-identical results whatever the thread count, or
    refuse.

    In this mode NumPy's OpenBLAS (which the cpu backend's ``dot_general`` and
    ``conv_general_dilated`` call, as does NumPy's own ``@``) is held at one thread,
    process-wide, until the mode is switched off, and a conv split over threads is split
    into a fixed number of parts. Every other kernel is deterministic in any mode (see
    the module's docstring). Results then match bit for bit across thread counts
    (``FUNCTORCH_CORE_NUM_THREADS``), runs and processes on one machine; they may still
    differ from NumPy's, and between machines with other CPU features.

    Args:
        mode (bool): switch the mode on (``True``) or off (``False``).
        warn_only (bool, default ``False``): when a primitive cannot be made
            deterministic here (the BLAS is not NumPy's OpenBLAS, so its thread count
            cannot be held), warn instead of raising.

    Raises:
        RuntimeError: ``mode`` is True, ``warn_only`` False, and the BLAS's thread count
            cannot be held; the message names the primitives concerned.

    Example::

        >>> functorch_core.use_deterministic_algorithms(True)
        >>> functorch_core.are_deterministic_algorithms_enabled()
        True
        >>> functorch_core.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms: warn_only must be a bool, got "
                        f"{type(warn_only).__name__}")
    held = determinism.hold_blas_threads(mode)
    if mode and not held:
        message = (f"use_deterministic_algorithms(True): {' and '.join(_UNHELD)} have no "
                   "deterministic implementation here: they call a BLAS that is not NumPy's "
                   "OpenBLAS, whose thread count functorch_core cannot hold at one (set its "
                   "own variable, e.g. OPENBLAS_NUM_THREADS=1, before starting Python)")
        if not warn_only:
            raise RuntimeError(message + "; pass warn_only=True to warn instead")
        warnings.warn(message, UserWarning, stacklevel=2)
    determinism.state.update(enabled=mode, warn_only=warn_only and mode)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether deterministic mode is on (see :func:`use_deterministic_algorithms`)."""
    return determinism.state["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode is on with ``warn_only=True``."""
    return determinism.state["warn_only"]
