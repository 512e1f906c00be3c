"""Losses with PyTorch's names, arguments and reductions."""

from __future__ import annotations

import numpy as np

import functorch_core.numpy as fnp

from ..module import shape_of
from .activation import log_softmax

__all__ = ["binary_cross_entropy_with_logits", "cross_entropy", "l1_loss", "mse_loss",
           "nll_loss"]


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


def mse_loss(input, target, reduction="mean"):
    """``(input - target) ** 2``, reduced (``'mean'``, ``'sum'`` or ``'none'``)."""
    _same_shape("mse_loss", input, target)
    return _reduce("mse_loss", fnp.square(input - target), reduction)


def l1_loss(input, target, reduction="mean"):
    """``|input - target|``, reduced."""
    _same_shape("l1_loss", input, target)
    return _reduce("l1_loss", fnp.abs(input - target), reduction)


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
    if shape_of(target) == shape and fnp.asarray(target).dtype.kind == "f":
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
