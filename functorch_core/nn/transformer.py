"""``TransformerEncoderLayer`` and ``TransformerEncoder`` with PyTorch's structure and names."""

from __future__ import annotations

import copy

from . import functional as F
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and layer
    norm (after, or before with ``norm_first``), as ``torch.nn.TransformerEncoderLayer``.

    Args:
        d_model (int): model width.
        nhead (int): attention heads.
        dim_feedforward (int): hidden width of the feed-forward block. Default ``2048``.
        dropout (float): dropout in attention, after it and in the feed-forward block.
            Default ``0.1``.
        activation (str or callable): ``'relu'``, ``'gelu'`` or a function. Default ``'relu'``.
        layer_norm_eps (float): default ``1e-5``.
        batch_first (bool): ``(N, L, E)`` inputs instead of ``(L, N, E)``. Default ``False``.
        norm_first (bool): pre-norm (``x + sa(norm1(x))``) instead of post-norm. Default False.
        bias (bool): biases in the linear layers, attention and layer norms. Default ``True``.
        device: accepted and ignored. dtype: parameter dtype (default float32).

    Submodules (PyTorch's names): ``self_attn``, ``linear1``, ``dropout``, ``linear2``,
    ``norm1``, ``norm2``, ``dropout1``, ``dropout2``.

    Example::

        >>> layer = TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32)
        >>> layer(np.ones((5, 2, 16), np.float32)).shape
        (5, 2, 16)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerEncoderLayer: activation should be relu/gelu, "
                                 f"not {activation}")
            activation = _ACTIVATIONS[activation]
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """Encode ``src`` (``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or ``(L, E)``).

        Args:
            src (array): the sequence.
            src_mask (array, optional): ``attn_mask`` of the self-attention. Default None.
            src_key_padding_mask (array, optional): ``(N, S)`` keys to ignore. Default None.
            is_causal (bool): hint that ``src_mask`` is causal. Default ``False``.
        """
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ...) and an
    optional final ``norm``, as ``torch.nn.TransformerEncoder``.

    Args:
        encoder_layer (TransformerEncoderLayer): the layer to copy.
        num_layers (int): how many copies.
        norm (Module, optional): applied to the last layer's output. Default ``None``.
        enable_nested_tensor, mask_check: accepted for PyTorch compatibility (no effect).

    Example::

        >>> enc = TransformerEncoder(TransformerEncoderLayer(16, 4, 32), num_layers=2)
        >>> enc(np.ones((5, 2, 16), np.float32)).shape
        (5, 2, 16)
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Run ``src`` through every layer (arguments as
        :meth:`TransformerEncoderLayer.forward`; ``is_causal=None`` means ``False``)."""
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)
