"""``Dropout``, ``Dropout1d``, ``Dropout2d``: masks from the global generator in training
mode."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d"]


class Dropout(Module):
    """Zero elements with probability ``p`` in training mode (scaling the rest by
    ``1 / (1 - p)``); the identity in eval mode. Under ``jit``/``grad`` each call draws a
    fresh key; under ``vmap`` pass ``randomness='different'`` or ``'same'``.

    Args:
        p (float): drop probability. Default ``0.5``.
        inplace (bool): accepted; results are new arrays.
    """

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class _FeatureDropout(Dropout):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training)


class Dropout1d(_FeatureDropout):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` with probability ``p`` in
    training mode (scaling the rest by ``1 / (1 - p)``), as ``torch.nn.Dropout1d``.

    Args:
        p (float): drop probability. Default ``0.5``.
        inplace (bool): accepted; results are new arrays.
    """
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_FeatureDropout):
    """Zero whole channels of ``(N, C, H, W)`` with probability ``p`` in training mode,
    as ``torch.nn.Dropout2d`` (a 3-D input is taken as ``(N, C, L)``, with a warning, as
    PyTorch does).

    Args:
        p (float): drop probability. Default ``0.5``.
        inplace (bool): accepted; results are new arrays.
    """
    _fn = staticmethod(F.dropout2d)
