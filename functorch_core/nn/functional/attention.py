"""``scaled_dot_product_attention`` (PyTorch's math, masks and fully-masked rows)."""

from __future__ import annotations

import math

import numpy as np

import functorch_core.numpy as fnp
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.transforms import stop_gradient

from ..module import shape_of
from .linear import dropout as _dropout

__all__ = ["scaled_dot_product_attention"]


def masked_softmax(scores):
    """Softmax over the last axis where a row that is ``-inf`` throughout (every key masked)
    gives zeros instead of NaN, as PyTorch's attention kernels do."""
    m = stop_gradient(fnp.max(scores, axis=-1, keepdims=True))
    m = fnp.where(m == -np.inf, 0.0, m)
    e = fnp.exp(scores - m)
    s = fnp.sum(e, axis=-1, keepdims=True)
    return e / fnp.where(s == 0, 1.0, s)


def as_additive_mask(who, mask, dtype):
    """A boolean mask (``True`` = take part) as ``0`` / ``-inf``; a float mask as it is."""
    m = fnp.asarray(mask)
    if m.dtype == np.bool_:
        return fnp.where(m, 0.0, -np.inf).astype(dtype)
    if dtype_kind(m.dtype) != "f":
        raise TypeError(f"{who}: attn_mask must be boolean or floating, got dtype {m.dtype}")
    return m


def attention(query, key, value, bias, scale, dropout_p, key_rng=None):
    """``softmax(query @ key^T * scale + bias) @ value`` and the weights (after dropout)."""
    scores = fnp.matmul(query, fnp.swapaxes(key, -1, -2)) * scale
    if bias is not None:
        scores = scores + bias
    weights = masked_softmax(scores)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, True, key=key_rng)
    return fnp.matmul(weights, value), weights


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *, key_rng=None):
    """``softmax(query @ key^T * scale + mask) @ value``, as
    ``torch.nn.functional.scaled_dot_product_attention``.

    Args:
        query (array): ``(..., L, E)``.
        key (array): ``(..., S, E)``.
        value (array): ``(..., S, Ev)``.
        attn_mask (array, optional): broadcastable to ``(..., L, S)``; boolean (``True``: the
            query may attend to the key) or floating (added to the scores). Default ``None``.
        dropout_p (float): dropout on the attention weights, drawn from the global
            generator (or ``key_rng``). Default ``0.0``.
        is_causal (bool): mask with the lower-triangular ``(L, S)`` mask (aligned top-left);
            exclusive with ``attn_mask``. Default ``False``.
        scale (float, optional): default ``1 / sqrt(E)``.
        enable_gqa (bool): grouped-query attention: ``key``/``value`` with fewer heads (axis
            -3) are repeated to ``query``'s head count. Default ``False``.
        key_rng: a ``functorch_core.random`` key for the dropout (keyword only).

    A query row whose keys are all masked gives zeros (not NaN), as in PyTorch.

    Returns:
        ``(..., L, Ev)``.

    Example::

        >>> q = k = v = np.ones((2, 3, 4))
        >>> scaled_dot_product_attention(q, k, v, is_causal=True).shape
        (2, 3, 4)
    """
    who = "scaled_dot_product_attention"
    qs, ks, vs = (tuple(shape_of(t)) for t in (query, key, value))
    if min(len(qs), len(ks), len(vs)) < 2 or qs[-1] != ks[-1] or ks[-2] != vs[-2]:
        raise ValueError(f"{who}: query {qs}, key {ks} and value {vs} must be (..., L, E), "
                         "(..., S, E) and (..., S, Ev)")
    if enable_gqa and len(qs) >= 3 and len(ks) >= 3 and qs[-3] != ks[-3]:
        if qs[-3] % ks[-3] or ks[-3] != vs[-3]:
            raise ValueError(f"{who}: with enable_gqa, query's {qs[-3]} heads must be a "
                             f"multiple of key's and value's ({ks[-3]}, {vs[-3]})")
        key = fnp.repeat(key, qs[-3] // ks[-3], axis=-3)
        value = fnp.repeat(value, qs[-3] // ks[-3], axis=-3)
    dtype = fnp.asarray(query).dtype
    L, S = qs[-2], ks[-2]
    bias = None
    if is_causal:
        if attn_mask is not None:
            raise ValueError(f"{who}: pass either attn_mask or is_causal=True, not both")
        bias = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf).astype(dtype)
    elif attn_mask is not None:
        bias = as_additive_mask(who, attn_mask, dtype)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{who}: dropout_p must be in [0, 1], got {dropout_p}")
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else scale
    return attention(query, key, value, bias, scale, dropout_p, key_rng)[0]
