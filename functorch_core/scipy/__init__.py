"""SciPy's names over the traceable NumPy layer: ``functorch_core.scipy.integrate``,
``functorch_core.scipy.linalg``, ``functorch_core.scipy.signal``,
``functorch_core.scipy.special`` and ``functorch_core.scipy.stats`` (as ``jax.scipy``)."""

from . import integrate, linalg, signal, special, stats

__all__ = ["integrate", "linalg", "signal", "special", "stats"]
