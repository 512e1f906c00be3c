"""Deployment: ``export`` (a saved, self-contained graph), ``load_exported``."""

from .export import Exported, export, load_exported

__all__ = ["Exported", "export", "load_exported"]
