"""Loss modules over the ``nn.functional`` losses."""

from __future__ import annotations

from . import functional as F
from .functional.loss import reject_legacy_reduction
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "HuberLoss",
           "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss", "NLLLoss", "SmoothL1Loss",
           "TripletMarginLoss"]


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


class _Loss(Module):
    """Holds ``reduction``; PyTorch's deprecated ``size_average``/``reduce`` must be None."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        reject_legacy_reduction(self._get_name(), size_average, reduce)
        self.reduction = reduction


class SmoothL1Loss(_Loss):
    """:func:`functional.smooth_l1_loss` (``beta``, default 1.0)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """:func:`functional.huber_loss` (``delta``, default 1.0)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_Loss):
    """:func:`functional.binary_cross_entropy` of probabilities (``weight`` a buffer)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class KLDivLoss(_Loss):
    """:func:`functional.kl_div` (``reduction`` incl. ``'batchmean'``, ``log_target``)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """:func:`functional.cosine_embedding_loss` (``margin``, default 0)."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(CosineEmbeddingLoss):
    """:func:`functional.margin_ranking_loss` (``margin``, default 0)."""

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """:func:`functional.triplet_margin_loss` (``margin=1.0``, ``p=2.0``, ``eps=1e-6``,
    ``swap=False``)."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps,
                                     self.swap, reduction=self.reduction)
