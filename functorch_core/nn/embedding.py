"""``Embedding`` and ``EmbeddingBag``: lookup tables of ``num_embeddings`` rows."""

from __future__ import annotations

from . import functional as F
from ._init_draw import normal_parameter
from .module import Module, Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(who, padding_idx, num_embeddings):
    """``padding_idx`` made non-negative (``None`` stays); raises when out of range."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"{who}: padding_idx {padding_idx} must be within "
                         f"num_embeddings ({num_embeddings})")
    return padding_idx % num_embeddings


class Embedding(Module):
    """Rows of ``weight`` ``(num_embeddings, embedding_dim)``, drawn from ``N(0, 1)``
    (``padding_idx``'s row zeroed and given no gradient).

    Args:
        num_embeddings (int), embedding_dim (int): the table's shape.
        padding_idx (int, optional): a row that stays zero and gets no gradient.
        max_norm (float, optional): each forward first renormalises the looked-up rows
            whose ``norm_type``-norm exceeds it, in place in ``weight`` (as PyTorch).
        norm_type (float): the norm for ``max_norm``. Default ``2``.
        _weight (array, optional): an initial table instead of the random draw.
        dtype: default float32. ``scale_grad_by_freq`` and ``sparse`` are not supported.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        if scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: scale_grad_by_freq and sparse are not "
                                      "supported")
        padding_idx = _padding_index("Embedding", padding_idx, num_embeddings)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        if _weight is None:
            self.weight = normal_parameter((num_embeddings, embedding_dim), dtype)
            if padding_idx is not None:
                self.weight[padding_idx] = 0
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        s += f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return s + (f", max_norm={self.max_norm}" if self.max_norm is not None else "")


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows, as ``torch.nn.EmbeddingBag``.

    Args:
        num_embeddings (int), embedding_dim (int): the table's shape; ``weight`` is drawn
            from ``N(0, 1)`` (``padding_idx``'s row zeroed).
        max_norm (float, optional), norm_type (float): renormalise looked-up rows in
            place, as :class:`Embedding`.
        mode (str): ``'sum'``, ``'mean'`` or ``'max'``. Default ``'mean'``.
        include_last_offset (bool): ``offsets`` ends with the end of the last bag.
            Default ``False``.
        padding_idx (int, optional): entries with this index are left out of their bag.
        _weight (array, optional): an initial table instead of the random draw.
        dtype: default float32. ``scale_grad_by_freq`` and ``sparse`` are not supported.

    ``forward(input, offsets=None, per_sample_weights=None)``: ``input`` ``(B, N)`` or
    1-D with ``offsets`` (see :func:`~functorch_core.nn.functional.embedding_bag`).

    Example::

        >>> bag = EmbeddingBag(10, 3, mode='sum')
        >>> bag(np.array([1, 2, 4, 5, 4]), np.array([0, 2])).shape
        (2, 3)
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if scale_grad_by_freq or sparse:
            raise NotImplementedError("EmbeddingBag: scale_grad_by_freq and sparse are not "
                                      "supported")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got "
                             f"{mode!r}")
        padding_idx = _padding_index("EmbeddingBag", padding_idx, num_embeddings)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.mode = max_norm, norm_type, mode
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            self.weight = normal_parameter((num_embeddings, embedding_dim), dtype)
            if padding_idx is not None:
                self.weight[padding_idx] = 0
        else:
            self.weight = Parameter(_weight)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               False, self.mode, False, per_sample_weights,
                               self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")
