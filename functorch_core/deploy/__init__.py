"""Deployment: ``export`` (a saved, self-contained graph), ``load_exported`` and ``freeze``
(parameters as constants, BatchNorm folded into the preceding conv/linear)."""

from .export import Exported, export, load_exported
from .freeze import Frozen, freeze

__all__ = ["Exported", "Frozen", "export", "freeze", "load_exported"]
