"""``normalize``, ``cosine_similarity``, ``pairwise_distance`` (PyTorch's formulas)."""

from __future__ import annotations

import math

import numpy as np

import functorch_core.numpy as fnp
from functorch_core._internal import autocast

from ..module import shape_of

__all__ = ["cosine_similarity", "normalize", "pairwise_distance"]


def _norm(x, p, axis, keepdims):
    if p == 2:
        return fnp.sqrt(fnp.sum(x * x, axis=axis, keepdims=keepdims))
    if p == 1:
        return fnp.sum(fnp.abs(x), axis=axis, keepdims=keepdims)
    if p == math.inf:
        return fnp.max(fnp.abs(x), axis=axis, keepdims=keepdims)
    if p == 0:
        return fnp.sum((x != 0).astype(fnp.asarray(x).dtype), axis=axis, keepdims=keepdims)
    return fnp.sum(fnp.abs(x) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _check_dim(name, shape, dim):
    if not -max(len(shape), 1) <= dim < max(len(shape), 1):
        raise ValueError(f"{name}: dim {dim} is out of range for input of shape {shape}")


@autocast.float32_op
def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``input / max(||input||_p, eps)`` along ``dim``.

    Args:
        input (array): the input.
        p (float): the norm's exponent (``math.inf`` for the max norm). Default ``2``.
        dim (int): the axis normalised over. Default ``1``.
        eps (float): the smallest divisor. Default ``1e-12``.

    Example::

        >>> normalize(np.array([[3.0, 4.0]]))
        array([[0.6, 0.8]])
    """
    _check_dim("normalize", tuple(shape_of(input)), dim)
    return input / fnp.maximum(_norm(input, p, dim, True), eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast first).

    Each side is divided by its norm clamped to ``eps`` before the dot product, as
    PyTorch computes it.

    Args:
        x1, x2 (array): broadcastable inputs.
        dim (int): the axis of the vectors. Default ``1``.
        eps (float): the smallest norm. Default ``1e-8``.

    Example::

        >>> cosine_similarity(np.array([[1.0, 0.0]]), np.array([[1.0, 1.0]]))
        array([0.70710678])
    """
    s1, s2 = tuple(shape_of(x1)), tuple(shape_of(x2))
    try:
        shape = np.broadcast_shapes(s1, s2)
    except ValueError:
        raise ValueError(f"cosine_similarity: x1 of shape {s1} and x2 of shape {s2} do not "
                         "broadcast") from None
    _check_dim("cosine_similarity", shape, dim)
    n1 = fnp.maximum(_norm(x1, 2, dim, True), eps)
    n2 = fnp.maximum(_norm(x2, 2, dim, True), eps)
    return fnp.sum((x1 / n1) * (x2 / n2), axis=dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` along the last axis.

    Args:
        x1, x2 (array): broadcastable inputs ``(N, D)`` or ``(D,)``.
        p (float): the norm's exponent. Default ``2``.
        eps (float): added to the difference (keeps the norm differentiable).
            Default ``1e-6``.
        keepdim (bool): keep the reduced axis. Default ``False``.

    Example::

        >>> pairwise_distance(np.zeros((1, 2)), np.array([[3.0, 4.0]]), eps=0.0)
        array([5.])
    """
    s1, s2 = tuple(shape_of(x1)), tuple(shape_of(x2))
    try:
        np.broadcast_shapes(s1, s2)
    except ValueError:
        raise ValueError(f"pairwise_distance: x1 of shape {s1} and x2 of shape {s2} do not "
                         "broadcast") from None
    return _norm(x1 - x2 + eps, p, -1, keepdim)
