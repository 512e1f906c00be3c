"""Deterministic mode's switch, read by the backends; set through
``functorch_core.use_deterministic_algorithms``."""

state = {"enabled": False, "warn_only": False}


def hold_blas_threads(hold: bool) -> bool:
    """Keep NumPy's OpenBLAS at one thread while ``hold`` is the last value given (a product
    split over threads may round differently); False when that BLAS is not the one in use."""
    from .llvm import blas  # the BLAS bindings load only when the mode is set
    return blas.hold_one_thread(hold)
