"""``TransformerEncoderLayer``/``TransformerEncoder``, ``TransformerDecoderLayer``/
``TransformerDecoder`` and ``Transformer`` with PyTorch's structure and names."""

from __future__ import annotations

import copy

import numpy as np

from . import functional as F
from . import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module, shape_of
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(who, activation):
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{who}: activation should be relu/gelu, not {activation}")
        return _ACTIVATIONS[activation]
    return activation


def _build_layer(layer, attentions, norms, d_model, nhead, dim_feedforward, dropout,
                 activation, layer_norm_eps, batch_first, norm_first, bias, dtype):
    """Give an encoder or decoder layer its submodules, in PyTorch's order and names:
    the ``attentions``, the feed-forward block, ``norms`` layer norms and as many dropouts."""
    activation = _activation(layer._get_name(), activation)
    for name in attentions:
        setattr(layer, name, MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                batch_first=batch_first, dtype=dtype))
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
    layer.norm_first = norm_first
    for i in range(1, norms + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
    for i in range(1, norms + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))
    layer.activation = activation


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
        _build_layer(self, ("self_attn",), 2, d_model, nhead, dim_feedforward, dropout,
                     activation, layer_norm_eps, batch_first, norm_first, bias, dtype)

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


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's ``memory``, then a feed-forward block,
    each with a residual connection and layer norm (after, or before with ``norm_first``),
    as ``torch.nn.TransformerDecoderLayer``.

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
        norm_first, bias, device, dtype: as :class:`TransformerEncoderLayer`.

    Submodules (PyTorch's names): ``self_attn``, ``multihead_attn``, ``linear1``,
    ``dropout``, ``linear2``, ``norm1``-``norm3``, ``dropout1``-``dropout3``.

    Example::

        >>> layer = TransformerDecoderLayer(d_model=16, nhead=4, dim_feedforward=32)
        >>> layer(np.ones((5, 2, 16), np.float32), np.ones((7, 2, 16), np.float32)).shape
        (5, 2, 16)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        _build_layer(self, ("self_attn", "multihead_attn"), 3, d_model, nhead, dim_feedforward,
                     dropout, activation, layer_norm_eps, batch_first, norm_first, bias, dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        """Decode ``tgt`` (``(T, N, E)``, batch first, or unbatched) attending to ``memory``
        (``(S, N, E)``).

        Args:
            tgt (array): the target sequence.
            memory (array): the encoder's output.
            tgt_mask, memory_mask (array, optional): ``attn_mask`` of the self-attention
                and of the attention over ``memory``. Default None.
            tgt_key_padding_mask, memory_key_padding_mask (array, optional): keys to ignore.
            tgt_is_causal, memory_is_causal (bool): hints that the masks are causal.
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` and an optional final
    ``norm``, as ``torch.nn.TransformerDecoder``.

    Args:
        decoder_layer (TransformerDecoderLayer): the layer to copy.
        num_layers (int): how many copies.
        norm (Module, optional): applied to the last layer's output. Default ``None``.

    Example::

        >>> dec = TransformerDecoder(TransformerDecoderLayer(16, 4, 32), num_layers=2)
        >>> dec(np.ones((5, 2, 16), np.float32), np.ones((7, 2, 16), np.float32)).shape
        (5, 2, 16)
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """Run ``tgt`` through every layer (arguments as
        :meth:`TransformerDecoderLayer.forward`; ``tgt_is_causal=None`` means ``False``)."""
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need", as
    ``torch.nn.Transformer``: ``encoder`` (a :class:`TransformerEncoder` with a final
    LayerNorm) and ``decoder`` (a :class:`TransformerDecoder` with a final LayerNorm);
    every parameter with more than one dimension is re-drawn with ``xavier_uniform_``.

    Args:
        d_model (int): default 512. nhead (int): default 8.
        num_encoder_layers, num_decoder_layers (int): default 6 each.
        dim_feedforward (int): default 2048. dropout (float): default 0.1.
        activation (str or callable): default ``'relu'``.
        custom_encoder, custom_decoder (Module, optional): used instead of the stacks.
        layer_norm_eps, batch_first, norm_first, bias, device, dtype: as the layers.

    Example::

        >>> model = Transformer(d_model=16, nhead=4, num_encoder_layers=1,
        ...                     num_decoder_layers=1, dim_feedforward=32)
        >>> model(np.ones((7, 2, 16), np.float32), np.ones((5, 2, 16), np.float32)).shape
        (5, 2, 16)
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                  batch_first=batch_first, norm_first=norm_first, bias=bias, dtype=dtype)

        def stack(custom, layer, stack_of, num_layers):
            if custom is not None:
                return custom
            return stack_of(layer(d_model, nhead, dim_feedforward, **kw), num_layers,
                            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self.encoder = stack(custom_encoder, TransformerEncoderLayer, TransformerEncoder,
                             num_encoder_layers)
        self.decoder = stack(custom_decoder, TransformerDecoderLayer, TransformerDecoder,
                             num_decoder_layers)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        """Encode ``src`` (``(S, N, E)``, batch first, or unbatched) and decode ``tgt``
        (``(T, N, E)``) against it; the masks and hints go to the encoder
        (``src_*``), the decoder's self-attention (``tgt_*``) and its attention over the
        memory (``memory_*``)."""
        ss, ts = tuple(shape_of(src)), tuple(shape_of(tgt))
        b = 0 if self.batch_first else 1
        if len(ss) != len(ts) or (len(ss) == 3 and ss[b] != ts[b]):
            raise ValueError(f"Transformer: the batch number of src {ss} and tgt {ts} must "
                             "be equal")
        if ss[-1] != self.d_model or ts[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature number of src {ss} and tgt {ts} must "
                             f"be equal to d_model ({self.d_model})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The ``(sz, sz)`` causal float mask: ``-inf`` above the diagonal, ``0`` elsewhere."""
        return np.triu(np.full((sz, sz), -np.inf, np.float32 if dtype is None else dtype), 1)
