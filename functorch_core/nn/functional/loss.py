"""Losses with PyTorch's names, arguments and reductions."""

from __future__ import annotations

import numpy as np

import functorch_core.numpy as fnp
from functorch_core._internal import autocast
from functorch_core.ir.dtypes import dtype_kind

from ..module import shape_of
from .activation import log_softmax

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
           "cross_entropy", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss",
           "mse_loss", "nll_loss", "smooth_l1_loss", "triplet_margin_loss"]


def _reduce(name, loss, reduction):
    if reduction == "mean":
        return fnp.mean(loss)
    if reduction == "sum":
        return fnp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _same_shape(name, input, target):
    if shape_of(input) != shape_of(target):
        raise ValueError(f"{name}: input of shape {tuple(shape_of(input))} and target of "
                         f"shape {tuple(shape_of(target))} differ")


@autocast.float32_op
def mse_loss(input, target, reduction="mean"):
    """``(input - target) ** 2``, reduced (``'mean'``, ``'sum'`` or ``'none'``)."""
    _same_shape("mse_loss", input, target)
    return _reduce("mse_loss", fnp.square(input - target), reduction)


@autocast.float32_op
def l1_loss(input, target, reduction="mean"):
    """``|input - target|``, reduced."""
    _same_shape("l1_loss", input, target)
    return _reduce("l1_loss", fnp.abs(input - target), reduction)


@autocast.float32_op
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    """``-(pos_weight * target * log sigmoid(input) + (1 - target) * log(1 - sigmoid(input)))``,
    times ``weight``, reduced; computed stably from the logits."""
    _same_shape("binary_cross_entropy_with_logits", input, target)
    log_sig = -fnp.logaddexp(0.0, -input)        # log sigmoid(x)
    log_1m = -fnp.logaddexp(0.0, input)          # log(1 - sigmoid(x))
    pos = target * log_sig if pos_weight is None else pos_weight * target * log_sig
    loss = -(pos + (1 - target) * log_1m)
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


def _class_axis_last(x):
    return fnp.moveaxis(x, 1, -1) if len(shape_of(x)) > 2 else x


@autocast.float32_op
def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """``-input[n, target[n]] * weight[target[n]]`` for log-probabilities ``input`` of shape
    ``(N, C, ...)`` or ``(C,)`` and integer ``target`` of shape ``(N, ...)`` or ``()``;
    ``'mean'`` divides by the summed weights of the non-ignored targets."""
    shape, tshape = tuple(shape_of(input)), tuple(shape_of(target))
    expected = () if len(shape) == 1 else (shape[0],) + shape[2:]
    if len(shape) < 1 or tshape != expected:
        raise ValueError(f"nll_loss: input of shape {shape} needs target of shape {expected}, "
                         f"got {tshape}")
    t = fnp.asarray(target)
    if t.dtype.kind not in "iu":
        raise TypeError(f"nll_loss: target must hold class indices (integers), got {t.dtype}")
    c = shape[0] if len(shape) == 1 else shape[1]
    valid = t != ignore_index
    safe = fnp.where(valid, t, 0)
    logp = _class_axis_last(input)
    picked = fnp.squeeze(fnp.take_along_axis(logp, fnp.expand_dims(safe, -1), axis=-1), -1)
    w = fnp.ones(c, dtype=fnp.asarray(input).dtype) if weight is None else weight
    wt = fnp.where(valid, fnp.take(w, safe), 0.0)
    loss = -picked * wt
    if reduction == "mean":
        return fnp.sum(loss) / fnp.sum(wt)
    return _reduce("nll_loss", loss, reduction)


@autocast.float32_op
def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy of logits ``input`` (``(N, C, ...)`` or ``(C,)``) against class indices
    or class probabilities ``target``, as ``torch.nn.functional.cross_entropy``.

    Args:
        input (array): unnormalised logits, classes on axis 1 (axis 0 when 1-D).
        target (array): integer class indices of shape ``(N, ...)``, or probabilities of
            ``input``'s shape.
        weight (array, optional): per-class weights of shape ``(C,)``.
        ignore_index (int): index targets equal to it contribute nothing. Default ``-100``.
        reduction (str): ``'mean'`` (weighted mean for indices), ``'sum'`` or ``'none'``.
        label_smoothing (float in [0, 1]): mixes the target with the uniform distribution.

    Example::

        >>> cross_entropy(np.zeros((2, 3)), np.array([0, 2]))   # log 3
        1.0986...
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    shape = tuple(shape_of(input))
    cdim = 0 if len(shape) == 1 else 1
    c = shape[cdim]
    logp = log_softmax(input, dim=cdim)
    if shape_of(target) == shape and dtype_kind(fnp.asarray(target).dtype) == "f":
        tgt = target
        if label_smoothing > 0:
            tgt = tgt * (1 - label_smoothing) + label_smoothing / c
        wl = logp if weight is None else logp * fnp.reshape(weight, (c,) + (1,) * (len(shape)
                                                                                    - cdim - 1))
        loss = -fnp.sum(wl * tgt, axis=cdim)
        if reduction == "mean":
            n = 1 if len(shape) == 1 else int(np.prod(shape)) // c
            return fnp.sum(loss) / n
        return _reduce("cross_entropy", loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    t = fnp.asarray(target)
    valid = t != ignore_index
    wl = logp if weight is None else logp * fnp.reshape(weight, (c,) + (1,) * (len(shape)
                                                                                - cdim - 1))
    smooth = fnp.where(valid, -fnp.sum(wl, axis=cdim), 0.0)
    if reduction == "mean":
        if weight is None:
            smooth = fnp.sum(smooth) / fnp.sum(valid)
        else:
            smooth = fnp.sum(smooth) / fnp.sum(fnp.where(valid, fnp.take(weight, fnp.where(
                valid, t, 0)), 0.0))
    else:
        smooth = _reduce("cross_entropy", smooth, reduction)
    return (1 - label_smoothing) * nll + label_smoothing / c * smooth


@autocast.float32_op
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input -
    target``), reduced; ``beta=0`` is :func:`l1_loss`.

    Example::

        >>> smooth_l1_loss(np.array([0.5, 3.0]), np.zeros(2))   # (0.125 + 2.5) / 2
        1.3125
    """
    reject_legacy_reduction("smooth_l1_loss", size_average, reduce)
    _same_shape("smooth_l1_loss", input, target)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = fnp.abs(input - target)
    if beta == 0:
        return _reduce("smooth_l1_loss", d, reduction)
    loss = fnp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce("smooth_l1_loss", loss, reduction)


@autocast.float32_op
def huber_loss(input, target, reduction="mean", delta=1.0):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``, reduced
    (``delta * smooth_l1_loss(beta=delta)``).

    Example::

        >>> huber_loss(np.array([0.5, 3.0]), np.zeros(2), delta=2.0)   # (0.125 + 4) / 2
        2.0625
    """
    _same_shape("huber_loss", input, target)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = fnp.abs(input - target)
    loss = fnp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce("huber_loss", loss, reduction)


@autocast.float32_op
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-(target * log(input) + (1 - target) * log(1 - input))`` for probabilities
    ``input`` in ``[0, 1]``, each log clamped at ``-100`` as PyTorch does, times ``weight``
    (broadcast against ``input``), reduced.

    Example::

        >>> binary_cross_entropy(np.array([0.5]), np.array([1.0]))   # log 2
        0.6931...
    """
    reject_legacy_reduction("binary_cross_entropy", size_average, reduce)
    _same_shape("binary_cross_entropy", input, target)
    log_p = fnp.maximum(fnp.log(input), -100.0)
    log_1mp = fnp.maximum(fnp.log(1 - input), -100.0)
    loss = -(target * log_p + (1 - target) * log_1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy", loss, reduction)


@autocast.float32_op
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence ``target * (log(target) - input)`` of log-probabilities
    ``input`` from ``target`` (log-probabilities too when ``log_target=True``; a zero target
    contributes 0), reduced by ``'mean'`` (over all elements, PyTorch's default), ``'sum'``,
    ``'none'`` or ``'batchmean'`` (sum divided by ``input.shape[0]``, the mathematical KL).
    ``size_average``/``reduce`` are PyTorch's deprecated arguments and must stay ``None``.

    Example::

        >>> p = np.array([[0.25, 0.75]])
        >>> kl_div(np.log(p), p, reduction="batchmean")
        0.0
    """
    reject_legacy_reduction("kl_div", size_average, reduce)
    _same_shape("kl_div", input, target)
    if log_target:
        loss = fnp.exp(target) * (target - input)
    else:
        t_log_t = fnp.where(target > 0, target * fnp.log(fnp.where(target > 0, target, 1.0)),
                            0.0)
        loss = t_log_t - target * input
    if reduction == "batchmean":
        shape = tuple(shape_of(input))
        return fnp.sum(loss) / (shape[0] if shape else 1)
    return _reduce("kl_div", loss, reduction)


def reject_legacy_reduction(name, size_average, reduce):
    if size_average is not None or reduce is not None:
        raise ValueError(f"{name}: size_average and reduce are deprecated in PyTorch and not "
                         "supported; pass reduction='mean'|'sum'|'none'")


def _pm1_target(name, target, shape):
    if tuple(shape_of(target)) != shape:
        raise ValueError(f"{name}: target of shape {tuple(shape_of(target))} must have shape "
                         f"{shape}")


@autocast.float32_op
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1``, for ``(N, D)`` inputs and ``(N,)`` targets (or ``(D,)`` and ``()``);
    the cosine is ``x1 . x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))`` as in PyTorch.

    Example::

        >>> cosine_embedding_loss(np.eye(2), np.eye(2), np.array([1, -1]))   # (0 + 1) / 2
        0.5
    """
    reject_legacy_reduction("cosine_embedding_loss", size_average, reduce)
    s1, s2 = tuple(shape_of(input1)), tuple(shape_of(input2))
    if s1 != s2 or len(s1) not in (1, 2):
        raise ValueError(f"cosine_embedding_loss: input1 {s1} and input2 {s2} must have the "
                         "same (N, D) or (D,) shape")
    _pm1_target("cosine_embedding_loss", target, s1[:-1])
    prod = fnp.sum(input1 * input2, axis=-1)
    mag1 = fnp.sum(input1 * input1, axis=-1) + 1e-12
    mag2 = fnp.sum(input2 * input2, axis=-1) + 1e-12
    cos = prod / fnp.sqrt(mag1 * mag2)
    loss = fnp.where(target == 1, 1 - cos, 0.0) + \
        fnp.where(target == -1, fnp.maximum(cos - margin, 0.0), 0.0)
    return _reduce("cosine_embedding_loss", loss, reduction)


@autocast.float32_op
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``, reduced (all three of one shape).

    Example::

        >>> margin_ranking_loss(np.array([1.0]), np.array([2.0]), np.array([1.0]))
        1.0
    """
    reject_legacy_reduction("margin_ranking_loss", size_average, reduce)
    s = tuple(shape_of(input1))
    if tuple(shape_of(input2)) != s or tuple(shape_of(target)) != s:
        raise ValueError(f"margin_ranking_loss: input1 {s}, input2 "
                         f"{tuple(shape_of(input2))} and target {tuple(shape_of(target))} "
                         "must have one shape")
    loss = fnp.maximum(-target * (input1 - input2) + margin, 0.0)
    return _reduce("margin_ranking_loss", loss, reduction)


def _pairwise_distance(x1, x2, p, eps):
    d = x1 - x2 + eps
    if p == 2:
        return fnp.sqrt(fnp.sum(d * d, axis=-1))
    if p == 1:
        return fnp.sum(fnp.abs(d), axis=-1)
    if p == float("inf"):
        return fnp.max(fnp.abs(d), axis=-1)
    return fnp.sum(fnp.abs(d) ** p, axis=-1) ** (1.0 / p)


@autocast.float32_op
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d(x, y) = ||x - y + eps||_p`` over the
    last axis of ``(N, D)`` or ``(D,)`` inputs; ``swap=True`` uses ``min(d(a, n), d(p, n))``
    as the negative distance (Balntas et al.).

    Example::

        >>> a = np.zeros((1, 2)); triplet_margin_loss(a, a, a + 3.0, eps=0.0)
        0.0
    """
    shapes = [tuple(shape_of(x)) for x in (anchor, positive, negative)]
    if len(set(shapes)) != 1 or len(shapes[0]) not in (1, 2):
        raise ValueError(f"triplet_margin_loss: anchor {shapes[0]}, positive {shapes[1]} and "
                         f"negative {shapes[2]} must have one (N, D) or (D,) shape")
    reject_legacy_reduction("triplet_margin_loss", size_average, reduce)
    if not p > 0:
        raise ValueError(f"triplet_margin_loss: p must be positive, got {p}")
    d_ap = _pairwise_distance(anchor, positive, p, eps)
    d_an = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = fnp.minimum(d_an, _pairwise_distance(positive, negative, p, eps))
    return _reduce("triplet_margin_loss", fnp.maximum(margin + d_ap - d_an, 0.0), reduction)
