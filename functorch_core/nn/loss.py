"""Loss modules over the ``nn.functional`` losses."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "L1Loss", "MSELoss", "NLLLoss"]


class MSELoss(Module):
    """Mean squared error (``reduction`` ``'mean'``, ``'sum'`` or ``'none'``)."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(MSELoss):
    """Mean absolute error."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(Module):
    """Negative log-likelihood of log-probabilities (``weight``, ``ignore_index``)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(Module):
    """Cross entropy of logits against indices or probabilities (see
    :func:`functional.cross_entropy`)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)


class BCEWithLogitsLoss(Module):
    """Binary cross entropy of logits (``weight``, ``pos_weight``)."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.reduction = reduction

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)
