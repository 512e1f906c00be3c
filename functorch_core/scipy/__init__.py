"""SciPy's names over the traceable NumPy layer: ``functorch_core.scipy.linalg`` and
``functorch_core.scipy.special`` (as ``jax.scipy``)."""

from . import linalg, special

__all__ = ["linalg", "special"]
