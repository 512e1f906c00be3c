"""Gradient clipping over pytrees, ``torch.nn.utils.clip_grad_norm_``/``clip_grad_value_``."""

from __future__ import annotations

import math

from functorch_core.ir.pytree import tree_flatten, tree_unflatten

from .. import numpy as fnp


def clip_grad_norm(grads, max_norm, norm_type=2.0):
    """Scale ``grads`` so that their total norm is at most ``max_norm`` (PyTorch's formula).

    The total norm is the ``norm_type``-norm of the per-leaf norms; every leaf is multiplied
    by ``min(1, max_norm / (total_norm + 1e-6))``.

    Args:
        grads: a pytree of arrays.
        max_norm (float): the largest allowed total norm.
        norm_type (float): the p of the p-norm; ``inf`` for the max norm. Default 2.

    Returns:
        ``(clipped_grads, total_norm)``; the total norm is of the grads before clipping.

    Example::

        >>> grads, norm = optim.clip_grad_norm(grads, max_norm=1.0)
    """
    leaves, td = tree_flatten(grads)
    if not leaves:
        return grads, fnp.asarray(0.0)
    p = float(norm_type)
    if p <= 0:
        raise ValueError(f"clip_grad_norm: norm_type must be positive, got {norm_type}")
    if math.isinf(p):
        norms = [fnp.max(fnp.abs(g)) for g in leaves]
        total = norms[0]
        for n in norms[1:]:
            total = fnp.maximum(total, n)
    else:
        norms = [fnp.sum(fnp.abs(g) ** p) ** (1.0 / p) for g in leaves]
        total = sum(n ** p for n in norms) ** (1.0 / p)
    coef = fnp.minimum(max_norm / (total + 1e-6), 1.0)
    return tree_unflatten(td, [g * coef.astype(g.dtype) for g in leaves]), total


def clip_grad_value(grads, clip_value):
    """Clamp every gradient entry to ``[-clip_value, clip_value]``.

    Args:
        grads: a pytree of arrays.
        clip_value (float): the bound.

    Example::

        >>> grads = optim.clip_grad_value(grads, 0.5)
    """
    leaves, td = tree_flatten(grads)
    return tree_unflatten(td, [fnp.clip(g, -clip_value, clip_value) for g in leaves])
