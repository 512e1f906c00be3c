"""``MultiheadAttention`` with PyTorch's parameters, masks and layouts."""

from __future__ import annotations

import math

import numpy as np

import functorch_core.numpy as fnp

from . import functional as F
from . import init
from .functional.attention import as_additive_mask, attention
from .linear import Linear
from .module import Module, Parameter, shape_of

__all__ = ["MultiheadAttention"]


def _pad_last(mask):
    """A zero (nothing masked) column appended to an additive mask's last axis."""
    s = tuple(shape_of(mask))
    return fnp.concatenate([mask, fnp.zeros(s[:-1] + (1,), fnp.asarray(mask).dtype)], axis=-1)


class MultiheadAttention(Module):
    """Multi-head attention ``concat(head_1, ..., head_h) @ W_o`` with
    ``head_i = attention(q W_q^i, k W_k^i, v W_v^i)``, as ``torch.nn.MultiheadAttention``.

    Args:
        embed_dim (int): model width ``E`` (query width and output width).
        num_heads (int): ``H``; ``E`` must be divisible by it.
        dropout (float): dropout on the attention weights in training mode. Default ``0.0``.
        bias (bool): ``in_proj_bias`` and ``out_proj.bias``. Default ``True``.
        add_bias_kv (bool): learned ``bias_k``/``bias_v`` rows appended to the keys/values.
            Default ``False``.
        add_zero_attn (bool): a zero key/value appended (after the head split). Default False.
        kdim (int, optional): key width (default ``E``).
        vdim (int, optional): value width (default ``E``).
        batch_first (bool): inputs ``(N, L, E)`` instead of ``(L, N, E)``. Default ``False``.
        device: accepted and ignored. dtype: parameter dtype (default float32).

    Parameters (PyTorch's names, so torch checkpoints load): ``in_proj_weight`` ``(3E, E)``
    (or ``q_proj_weight``, ``k_proj_weight`` ``(E, kdim)``, ``v_proj_weight`` ``(E, vdim)``
    when ``kdim``/``vdim`` differ from ``E``), ``in_proj_bias`` ``(3E,)``, ``out_proj``
    (a :class:`Linear`), ``bias_k``/``bias_v`` ``(1, 1, E)``; initialised as PyTorch does
    (xavier-uniform projections, zero biases) from the global generator.

    Example::

        >>> mha = MultiheadAttention(8, 2, batch_first=True)
        >>> x = np.ones((3, 5, 8), np.float32)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        ((3, 5, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads}), both positive")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.kdim = self.embed_dim if kdim is None else int(kdim)
        self.vdim = self.embed_dim if vdim is None else int(vdim)
        self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self.head_dim = self.embed_dim // self.num_heads
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.zeros((3 * e, e), dtype))
            for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(n, None)
        else:
            self.q_proj_weight = Parameter(np.zeros((e, e), dtype))
            self.k_proj_weight = Parameter(np.zeros((e, self.kdim), dtype))
            self.v_proj_weight = Parameter(np.zeros((e, self.vdim), dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * e, dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(e, e, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(np.zeros((1, 1, e), dtype))
            self.bias_v = Parameter(np.zeros((1, 1, e), dtype))
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None,) * 3 if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return ws, bs

    def _check(self, query, key, value, key_padding_mask, attn_mask):
        qs, ks, vs = (tuple(shape_of(t)) for t in (query, key, value))
        who = (f"MultiheadAttention(embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
               f"batch_first={self.batch_first})")
        if len(qs) not in (2, 3) or len(ks) != len(qs) or len(vs) != len(qs):
            raise ValueError(f"{who}: query {qs}, key {ks} and value {vs} must all be 3-D "
                             "(batched) or all 2-D (unbatched)")
        b = 1 if self.batch_first and len(qs) == 3 else 0
        if (qs[-1], ks[-1], vs[-1]) != (self.embed_dim, self.kdim, self.vdim) \
                or ks[:-1] != vs[:-1] or (len(qs) == 3 and qs[1 - b] != ks[1 - b]):
            raise ValueError(f"{who}: query {qs}, key {ks} and value {vs} do not fit: last "
                             f"dims must be {self.embed_dim}, {self.kdim}, {self.vdim}, key "
                             "and value must agree, batch sizes must match")
        batched = len(qs) == 3
        n = qs[1 - b] if batched else None
        src = ks[b] if batched else ks[0]
        tgt = qs[b] if batched else qs[0]
        if key_padding_mask is not None:
            want = (n, src) if batched else (src,)
            if tuple(shape_of(key_padding_mask)) != want:
                raise ValueError(f"{who}: key_padding_mask of shape "
                                 f"{tuple(shape_of(key_padding_mask))} must have shape {want}")
        if attn_mask is not None:
            ms = tuple(shape_of(attn_mask))
            heads = self.num_heads * (n if batched else 1)
            if ms not in ((tgt, src), (heads, tgt, src)):
                raise ValueError(f"{who}: attn_mask of shape {ms} must be {(tgt, src)} or "
                                 f"{(heads, tgt, src)}")
        return batched

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query (array): ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or ``(L, E)``.
            key (array): ``(S, N, kdim)`` (or batch first) or ``(S, kdim)``.
            value (array): ``(S, N, vdim)`` (or batch first) or ``(S, vdim)``.
            key_padding_mask (array, optional): ``(N, S)`` or ``(S,)``; boolean (``True``:
                ignore that key) or floating (added). Default ``None``.
            need_weights (bool): also return the attention weights. Default ``True``.
            attn_mask (array, optional): ``(L, S)`` or ``(N * H, L, S)``; boolean (``True``:
                not allowed to attend) or floating (added). Default ``None``.
            average_attn_weights (bool): average the returned weights over heads. Default True.
            is_causal (bool): a hint that ``attn_mask`` is the causal mask (PyTorch requires
                the mask with it; the mask is what is applied). Default ``False``.

        Returns:
            ``(attn_output, attn_weights)``: ``attn_output`` shaped like ``query`` with width
            ``E``; ``attn_weights`` ``(N, L, S)`` (``(N, H, L, S)`` unaveraged, no ``N`` when
            unbatched) or ``None`` when ``need_weights=False``.
        """
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True needs attn_mask (it is only a "
                             "hint that attn_mask is the causal mask, as in PyTorch)")
        batched = self._check(query, key, value, key_padding_mask, attn_mask)
        if not batched:
            query, key, value = (fnp.expand_dims(t, 0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = fnp.expand_dims(key_padding_mask, 0)
        elif not self.batch_first:
            query, key, value = (fnp.swapaxes(t, 0, 1) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, attn_mask,
                                    need_weights)
        if not batched:
            out = out[0]
        elif not self.batch_first:
            out = fnp.swapaxes(out, 0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = fnp.mean(weights, axis=1)
        return out, (weights[0] if not batched else weights)

    def _attend(self, query, key, value, key_padding_mask, attn_mask, need_weights):
        # batch-first throughout: (N, L, E), (N, S, kdim), (N, S, vdim)
        (wq, wk, wv), (bq, bk, bv) = self._projections()
        q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        n, tgt, e = tuple(shape_of(q))
        dtype = fnp.asarray(q).dtype
        h, hd = self.num_heads, self.head_dim
        bias = None
        if attn_mask is not None:
            bias = as_additive_mask("MultiheadAttention", fnp.logical_not(attn_mask)
                                    if fnp.asarray(attn_mask).dtype == np.bool_ else attn_mask,
                                    dtype)
            if len(shape_of(bias)) == 3:
                bias = fnp.reshape(bias, (n, h) + tuple(shape_of(bias))[1:])
        kpm = None
        if key_padding_mask is not None:
            kpm = as_additive_mask("MultiheadAttention", fnp.logical_not(key_padding_mask)
                                   if fnp.asarray(key_padding_mask).dtype == np.bool_
                                   else key_padding_mask, dtype)
        if self.bias_k is not None:
            k = fnp.concatenate([k, fnp.broadcast_to(self.bias_k[0], (n, 1, e))], axis=1)
            v = fnp.concatenate([v, fnp.broadcast_to(self.bias_v[0], (n, 1, e))], axis=1)
            bias = None if bias is None else _pad_last(bias)
            kpm = None if kpm is None else _pad_last(kpm)
        src = tuple(shape_of(k))[1]
        q = fnp.swapaxes(fnp.reshape(q, (n, tgt, h, hd)), 1, 2)
        k = fnp.swapaxes(fnp.reshape(k, (n, src, h, hd)), 1, 2)
        v = fnp.swapaxes(fnp.reshape(v, (n, src, h, hd)), 1, 2)
        if self.add_zero_attn:
            k = fnp.concatenate([k, fnp.zeros((n, h, 1, hd), dtype)], axis=2)
            v = fnp.concatenate([v, fnp.zeros((n, h, 1, hd), dtype)], axis=2)
            bias = None if bias is None else _pad_last(bias)
            kpm = None if kpm is None else _pad_last(kpm)
        if kpm is not None:
            kpm = fnp.reshape(kpm, (n, 1, 1, tuple(shape_of(kpm))[-1]))
            bias = kpm if bias is None else bias + kpm
        p = self.dropout if self.training else 0.0
        out, weights = attention(q, k, v, bias, 1.0 / math.sqrt(hd), p)
        out = fnp.reshape(fnp.swapaxes(out, 1, 2), (n, tgt, e))
        return self.out_proj(out), (weights if need_weights else None)

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
