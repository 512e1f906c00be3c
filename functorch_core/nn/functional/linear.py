"""``linear``, ``bilinear``, ``dropout`` (1d, 2d), ``embedding``, ``embedding_bag``,
``one_hot``, ``layer_norm``, ``batch_norm``."""

from __future__ import annotations

import math
import warnings

import numpy as np

import functorch_core.numpy as fnp
from functorch_core import random
from functorch_core._internal import autocast
from functorch_core.numpy.internal import is_tracer
from functorch_core.transforms import stop_gradient
from functorch_core.transforms.vmap import is_batched

from ..module import shape_of
from ._batch_norm import train_norm

__all__ = ["batch_norm", "bilinear", "dropout", "dropout1d", "dropout2d", "embedding",
           "embedding_bag", "layer_norm", "linear", "one_hot"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (``weight`` of shape ``(out_features, in_features)``).

    Example::

        >>> linear(np.ones((2, 3)), np.ones((4, 3))).shape
        (2, 4)
    """
    if len(shape_of(input)) < 1 or shape_of(input)[-1] != shape_of(weight)[-1]:
        raise ValueError(f"linear: input of shape {tuple(shape_of(input))} does not match "
                         f"weight of shape {tuple(shape_of(weight))} (in_features = "
                         f"{shape_of(weight)[-1]} expected in input's last dimension)")
    # tensordot contracts weight's axis 1 in place: no transposed copy, and under vmap
    # one dot_general (a 10-model ensemble forward: 0.71 ms vs 1.65 ms with matmul(x, w.T))
    out = fnp.tensordot(input, weight, axes=([len(shape_of(input)) - 1], [1]))
    return out if bias is None else out + autocast.lowered(bias)[0]


@autocast.lowered_op
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Args:
        input1 (array): ``(*, in1_features)``.
        input2 (array): ``(*, in2_features)`` with the same leading shape.
        weight (array): ``(out_features, in1_features, in2_features)``.
        bias (array, optional): ``(out_features,)``.

    Example::

        >>> bilinear(np.ones((2, 3)), np.ones((2, 4)), np.ones((5, 3, 4))).shape
        (2, 5)
    """
    s1, s2, sw = tuple(shape_of(input1)), tuple(shape_of(input2)), tuple(shape_of(weight))
    if (len(sw) != 3 or not s1 or not s2 or s1[:-1] != s2[:-1] or s1[-1] != sw[1]
            or s2[-1] != sw[2]):
        raise ValueError(f"bilinear: input1 of shape {s1} and input2 of shape {s2} do not "
                         f"match weight of shape {sw} (expected (*, {sw[1:2]}) and (*, "
                         f"{sw[2:3]}) with equal leading shapes)")
    t = fnp.tensordot(input1, weight, axes=([len(s1) - 1], [1]))     # (*, out, in2)
    out = fnp.sum(t * fnp.expand_dims(input2, -2), axis=-1)
    return out if bias is None else out + bias


def _feature_dropout(name, input, p, training, key):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    shape = tuple(shape_of(input))
    if p == 1.0:
        return input * 0.0
    mask_shape = shape[:2] + (1,) * (len(shape) - 2)
    keep = random.dropout_mask(random.next_key() if key is None else key, p, mask_shape)
    return fnp.where(keep, input / (1.0 - p), 0.0)


def dropout1d(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` with probability ``p``, scale
    the rest by ``1 / (1 - p)``.

    Args:
        input (array): ``(N, C, L)`` or unbatched ``(C, L)``.
        p (float): drop probability. Default ``0.5``.
        training (bool): identity when ``False``. Default ``True``.
        inplace (bool): accepted; the result is always a new array.
        key: a ``functorch_core.random`` key; default a fresh global one.
    """
    shape = tuple(shape_of(input))
    if len(shape) not in (2, 3):
        raise ValueError(f"dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input, but "
                         f"received input of shape {shape}")
    if len(shape) == 2:
        return _feature_dropout("dropout1d", input[None], p, training, key)[0]
    return _feature_dropout("dropout1d", input, p, training, key)


def dropout2d(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero whole channels of ``(N, C, H, W)`` with probability ``p``, scale the rest by
    ``1 / (1 - p)``.

    As PyTorch's: a 3-D input is taken as ``(N, C, L)`` (with a warning), other ranks
    than 4 warn and drop along axes 0 and 1.

    Args:
        input (array): ``(N, C, H, W)``.
        p, training, inplace, key: as :func:`dropout1d`.
    """
    shape = tuple(shape_of(input))
    if len(shape) == 3:
        warnings.warn(f"dropout2d: received a 3-D input of shape {shape}; it is treated as "
                      "(N, C, L) and whole (n, c) rows are dropped (1-D channel-wise "
                      "dropout; use dropout1d for that)", stacklevel=2)
    elif len(shape) != 4:
        warnings.warn(f"dropout2d: received a {len(shape)}-D input of shape {shape}; "
                      "expected (N, C, H, W)", stacklevel=2)
    if len(shape) < 2:
        raise ValueError(f"dropout2d: expected at least a 2-D input, got shape {shape}")
    return _feature_dropout("dropout2d", input, p, training, key)


def dropout(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero elements with probability ``p``, scale the rest by ``1 / (1 - p)``.

    Args:
        input (array): the input.
        p (float): drop probability in ``[0, 1]``. Default ``0.5``.
        training (bool): identity when ``False``. Default ``True``.
        inplace (bool): accepted; the result is always a new array.
        key: a ``functorch_core.random`` key; default a fresh key from the global generator.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = random.dropout_mask(random.next_key() if key is None else key, p, shape_of(input))
    return fnp.where(keep, input / (1.0 - p), 0.0)


def _vector_norm(x, p):
    if p == 2:
        return fnp.sqrt(fnp.sum(x * x, axis=-1))
    if p == math.inf:
        return fnp.max(fnp.abs(x), axis=-1)
    return fnp.sum(fnp.abs(x) ** p, axis=-1) ** (1.0 / p)


def _write_in_place(target, index, value, what, advice):
    """``target[index] = value``; a TypeError, saying ``what`` is written and the ``advice``,
    where ``target`` is a concrete array the traced function closes over and ``value`` is
    traced (the array would keep a tracer)."""
    if isinstance(target, np.ndarray) and is_tracer(value):
        raise TypeError(f"{what} (shape {target.shape}) in place, but it is a concrete array "
                        f"the traced function closes over. {advice}")
    target[index] = value


def _renorm_rows(weight, flat, max_norm, norm_type):
    """PyTorch's ``embedding_renorm_``: rows ``flat`` of ``weight`` whose norm exceeds
    ``max_norm`` are scaled to ``max_norm / (norm + 1e-7)`` of themselves, in place."""
    rows = fnp.take(weight, flat, axis=0)
    norm = stop_gradient(_vector_norm(rows, norm_type))
    scale = fnp.where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)
    new = stop_gradient(rows * fnp.expand_dims(scale, -1).astype(fnp.asarray(rows).dtype))
    _write_in_place(weight, flat, new, "embedding: max_norm renormalises the looked-up rows "
                    "of weight", "Pass the weight to the transform, e.g. functional_call("
                    "model, params, args) with params an argument")
    # the value of the renormalised rows, the gradient of a plain lookup (as PyTorch's)
    return new + (rows - stop_gradient(rows))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer array ``input``.

    Args:
        input (int array): indices into ``weight``'s first axis.
        weight (array): ``(num_embeddings, embedding_dim)``.
        padding_idx (int, optional): this row gets no gradient.
        max_norm (float, optional): rows looked up whose ``norm_type``-norm exceeds it
            are renormalised to it **in place in** ``weight`` first, as PyTorch does
            (under ``jit`` the write goes back to the array passed in).
        norm_type (float): the norm for ``max_norm``. Default ``2``.
        scale_grad_by_freq, sparse: only ``False``.

    Example::

        >>> embedding(np.array([[0, 2]]), np.arange(6.0).reshape(3, 2))
        array([[[0., 1.],
                [4., 5.]]])
    """
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported")
    ind = fnp.asarray(input)
    if ind.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be integers, got dtype {ind.dtype}")
    if max_norm is not None:
        flat = fnp.reshape(ind, (-1,))
        rows = _renorm_rows(weight, flat, max_norm, norm_type)
        out = fnp.reshape(rows, tuple(shape_of(ind)) + tuple(shape_of(weight))[1:])
    else:
        out = fnp.take(weight, ind, axis=0)
    if padding_idx is not None:
        pad = padding_idx % shape_of(weight)[0]
        out = fnp.where(fnp.expand_dims(ind == pad, -1), stop_gradient(out), out)
    return out


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of ``weight`` rows, without the intermediate
    ``(*, embedding_dim)`` lookup of :func:`embedding` per bag.

    Args:
        input (int array): ``(B, N)`` (``B`` bags of ``N`` indices) or ``(n,)`` with
            ``offsets``.
        weight (array): ``(num_embeddings, embedding_dim)``.
        offsets (int array, optional): for 1-D ``input``, where each bag starts (bag
            ``b`` is ``input[offsets[b]:offsets[b + 1]]``, the last to the end).
        max_norm, norm_type: renormalise looked-up rows in place, as :func:`embedding`.
        scale_grad_by_freq, sparse: only ``False``.
        mode (str): ``'sum'``, ``'mean'`` or ``'max'``. Default ``'mean'``.
        per_sample_weights (array, optional): shaped as ``input``; each row is scaled by
            its weight before the sum (``mode='sum'`` only).
        include_last_offset (bool): ``offsets`` has one more entry, the end of the last
            bag. Default ``False``.
        padding_idx (int, optional): entries with this index are left out of their bag
            (and of a mean's count). Empty bags give zeros.

    Example::

        >>> w = np.arange(6.0).reshape(3, 2)
        >>> embedding_bag(np.array([0, 2, 1]), w, np.array([0, 2]), mode='sum')
        array([[4., 6.],
               [2., 3.]])
    """
    name = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{name}: mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError(f"{name}: scale_grad_by_freq and sparse are not supported")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"{name}: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode={mode!r})")
    ind = fnp.asarray(input)
    shape = tuple(shape_of(ind))
    if ind.dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype {ind.dtype}")
    if per_sample_weights is not None and tuple(shape_of(per_sample_weights)) != shape:
        raise ValueError(f"{name}: per_sample_weights of shape "
                         f"{tuple(shape_of(per_sample_weights))} must have input's shape "
                         f"{shape}")
    if len(shape) == 2:
        if offsets is not None:
            raise ValueError(f"{name}: if input is 2-D (shape {shape}), then offsets has to "
                             f"be None, as input is treated as a mini-batch of fixed length "
                             f"sequences")
        bags, seg = shape[0], None
    elif len(shape) == 1:
        if offsets is None:
            raise ValueError(f"{name}: offsets has to be a 1-D array but got None (input "
                             f"of shape {shape})")
        oshape = tuple(shape_of(offsets))
        if len(oshape) != 1:
            raise ValueError(f"{name}: offsets has to be a 1-D array, got shape {oshape}")
        bags, n = oshape[0] - (1 if include_last_offset else 0), shape[0]
        # the bag of each position: how many offsets are at or before it, less one
        seg = fnp.sum(fnp.expand_dims(fnp.asarray(offsets), -1) <= np.arange(n), axis=0) - 1
    else:
        raise ValueError(f"{name}: input has to be 1-D or 2-D, got shape {shape}")
    flat = fnp.reshape(ind, (-1,))
    if max_norm is not None:
        rows = _renorm_rows(weight, flat, max_norm, norm_type)
    else:
        rows = fnp.take(weight, flat, axis=0)                    # (n, D)
    dt = fnp.asarray(rows).dtype
    if seg is None:             # fixed-length bags: (B, N) positions, no membership matrix
        rows = fnp.reshape(rows, shape + (shape_of(weight)[1],))
        member = fnp.ones(shape, dtype=bool)
        bag_ind = ind
    else:                       # (B, n): which positions belong to which bag
        rows = fnp.expand_dims(rows, 0)
        member = fnp.expand_dims(seg, 0) == np.arange(bags)[:, None]
        bag_ind = fnp.expand_dims(flat, 0)
    if padding_idx is not None:
        member = member & (bag_ind != padding_idx % shape_of(weight)[0])
    if mode == "max":
        masked = fnp.where(fnp.expand_dims(member, -1), rows, -np.inf)
        am = fnp.argmax(masked, axis=1)
        out = fnp.take_along_axis(masked, fnp.expand_dims(am, 1), axis=1)[:, 0]
        return fnp.where(fnp.any(member, axis=1, keepdims=True), out, 0.0).astype(dt)
    weights = member.astype(dt)
    count = fnp.sum(weights, axis=1, keepdims=True)
    if per_sample_weights is not None:
        weights = weights * fnp.reshape(per_sample_weights, (-1, shape[-1]) if seg is None
                                        else (1, -1))
    if seg is None:
        out = fnp.sum(rows * fnp.expand_dims(weights, -1), axis=1)
    else:
        out = fnp.matmul(weights, rows[0])
    return out / fnp.maximum(count, 1.0) if mode == "mean" else out


def one_hot(tensor, num_classes=-1):
    """``int64`` one-hot encoding along a new last axis (``num_classes=-1``: max + 1)."""
    t = np.asarray(tensor) if isinstance(tensor, (list, int)) else tensor
    if num_classes < 0:
        num_classes = int(np.max(np.asarray(t))) + 1
    return (fnp.expand_dims(t, -1) == fnp.arange(num_classes)).astype(np.int64)


@autocast.float32_op
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then
    ``* weight + bias``."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(shape_of(input)[-len(shape):]) != shape:
        raise ValueError(f"layer_norm: input of shape {tuple(shape_of(input))} does not end "
                         f"with normalized_shape {shape}")
    axes = tuple(range(-len(shape), 0))
    mean = fnp.mean(input, axis=axes, keepdims=True)
    var = fnp.mean(fnp.square(input - mean), axis=axes, keepdims=True)
    out = (input - mean) / fnp.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


class BatchedStatWriteError(ValueError):
    """batch_norm under ``vmap`` would write statistics that differ across the batch into a
    running-stat buffer shared by the whole batch; ``buffer`` is the array or tracer written
    (``functional_call`` re-raises with the buffer's dotted name)."""

    def __init__(self, message, buffer):
        super().__init__(message)
        self.buffer = buffer


BN_ADVICE = ("use functorch_core.replace_all_batch_norm_modules_(model) (batch statistics "
              "and no running stats), BatchNorm(..., track_running_stats=False), model.eval(), "
              "or pass one buffer per example (in_dims 0, as an ensemble's stacked buffers)")


def _write_stat(name, buf, value, fn="batch_norm"):
    if is_batched(value) and not is_batched(buf):
        raise BatchedStatWriteError(
            f"{fn}: in training mode under vmap the batch statistics differ across the "
            f"vmapped batch, but {name} (shape {tuple(shape_of(buf))}) is shared by the whole "
            f"batch (not batched), so its running-stat update has no meaning; {BN_ADVICE}",
            buf)
    _write_in_place(buf, ..., value, f"{fn}: training mode writes the batch statistics into "
                    f"{name}", "Pass the buffers to the transform, e.g. functional_call(model, "
                    "(params, buffers), args) with buffers an argument, or use model.eval() / "
                    "track_running_stats=False")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise over every axis but 1 (channels).

    In training mode it uses the batch statistics and, when running stats are given,
    updates them in place: ``running = (1 - momentum) * running + momentum * batch``
    (unbiased variance; ``momentum=None`` is handled by the ``BatchNorm`` modules). In
    eval mode it uses ``running_mean`` / ``running_var``.
    """
    shape = shape_of(input)
    if len(shape) < 2:
        raise ValueError(f"batch_norm: expected input with at least 2 dims (N, C, ...), "
                         f"got shape {tuple(shape)}")
    c = shape[1]
    bshape = (1, c) + (1,) * (len(shape) - 2)
    if training:
        axes = (0,) + tuple(range(2, len(shape)))
        n = int(np.prod([shape[a] for a in axes]))
        if n <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got input of shape {tuple(shape)}")
        out, mean, var = train_norm(input, weight, bias, eps)
        if running_mean is not None:
            _write_stat("running_mean", running_mean,
                        stop_gradient((1 - momentum) * running_mean + momentum * mean))
        if running_var is not None:
            _write_stat("running_var", running_var,
                        stop_gradient((1 - momentum) * running_var
                                      + momentum * var * (n / (n - 1))))
        return out
    mean, var = stop_gradient(running_mean), stop_gradient(running_var)
    out = (input - fnp.reshape(mean, bshape)) / fnp.sqrt(fnp.reshape(var, bshape) + eps)
    if weight is not None:
        out = out * fnp.reshape(weight, bshape)
    return out if bias is None else out + fnp.reshape(bias, bshape)
