"""``Embedding``: a lookup table of ``num_embeddings`` rows."""

from __future__ import annotations

from . import functional as F
from ._init_draw import normal_parameter
from .module import Module, Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` ``(num_embeddings, embedding_dim)``, drawn from ``N(0, 1)``
    (``padding_idx``'s row zeroed and given no gradient).

    Args:
        num_embeddings (int), embedding_dim (int): the table's shape.
        padding_idx (int, optional): a row that stays zero and gets no gradient.
        _weight (array, optional): an initial table instead of the random draw.
        dtype: default float32. ``max_norm`` and sparse options are not supported.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse "
                                      "are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} must be within "
                                 f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = normal_parameter((num_embeddings, embedding_dim), dtype)
            if padding_idx is not None:
                self.weight[padding_idx] = 0
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
