"""Training-mode batch normalisation with its own forward-mode rule (``custom_jvp``).

For an ``(N, C, *)`` input with ``n = N * prod(*)`` values per channel:

* every per-channel reduction (the statistics' two sums, the tangent's ``mean(t)`` and
  ``mean(xhat * t)``, and so, transposed, the gradient's ``sum(g)``, ``sum(g * xhat)``
  and the weight's and bias's gradients) accumulates in float64 for float32 input
  (float32 for float16 / bfloat16), whatever order a backend sums in: a float32 sum's
  error grows with ``n`` (``log2 n`` at best), and ``x - mean`` passes the mean's absolute
  error on to every ``xhat`` (the composite's weight gradient was 1e-5 off for
  ``x = 100 + randn``). Elementwise work stays in the input's precision;
* the float64 mean is subtracted as a pair (its rounding, then the rest), so ``x - mean``
  keeps its accuracy; the variance is the mean of squared deviations (two passes);
* the derivative is the fused one, ``dxhat = inv_std * (dx - mean(dx) - xhat *
  mean(xhat * dx))``, whose transpose is the gradient ``inv_std * (g - mean(g) - xhat *
  mean(xhat * g))``: no cancellation between separate paths through the mean and the
  variance, as the composite's derivative has.

Being a ``custom_jvp``, the rule serves ``jvp``, ``grad``, their compositions (Hessians)
and ``vmap``. tests/nn/test_nn_batchnorm_accuracy.py states the rounding-error bounds.
"""

from __future__ import annotations

import functools

import numpy as np

import functorch_core.numpy as fnp
from functorch_core.transforms import custom_jvp

__all__ = ["accumulation_dtype", "train_norm"]


def accumulation_dtype(dtype):
    """The dtype batch statistics accumulate in: float64 for float32 and float64 values,
    float32 for the narrow floats."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 else np.dtype(np.float64)


def _layout(x):
    nd = len(x.shape)
    return (0,) + tuple(range(2, nd)), (1, -1) + (1,) * (nd - 2)


def _stats(x, eps):
    """``(xhat, mean, var, inv_std)``: ``xhat`` in the input's precision, the per-channel
    rest in the accumulation dtype. The mean is subtracted as a float32 pair (its rounding
    and the rest), so ``x - mean`` keeps the float64 mean's accuracy in float32 code."""
    axes, bshape = _layout(x)
    dt = _stat_dtype(x)
    acc = accumulation_dtype(dt)
    xs = fnp.asarray(x, dt)
    mean = fnp.mean(fnp.asarray(xs, acc), axis=axes)
    hi = fnp.asarray(mean, dt)
    d = xs - fnp.reshape(hi, bshape)
    if acc != dt:
        d = d - fnp.reshape(fnp.asarray(mean - fnp.asarray(hi, acc), dt), bshape)
    da = fnp.asarray(d, acc)
    var = fnp.mean(da * da, axis=axes)
    inv = 1.0 / fnp.sqrt(var + eps)
    return d * fnp.reshape(fnp.asarray(inv, dt), bshape), mean, var, inv


def _affine(xhat, weight, bias, bshape):
    out = xhat
    if weight is not None:
        out = out * fnp.reshape(weight, bshape)
    return out if bias is None else out + fnp.reshape(bias, bshape)


def _stat_dtype(x):
    """NumPy's: a float input's own dtype, float64 for integers."""
    return x.dtype if np.issubdtype(x.dtype, np.inexact) else np.dtype(np.float64)


def _out_dtype(x, weight, bias):
    return np.result_type(_stat_dtype(x), *(p.dtype for p in (weight, bias) if p is not None))


@functools.cache
def _norm(eps):
    @custom_jvp
    def batch_norm_train(x, weight, bias):
        xhat, mean, var, _ = _stats(x, eps)
        _, bshape = _layout(x)
        out = _affine(xhat, weight, bias, bshape)
        sd = _stat_dtype(x)
        return (fnp.asarray(out, _out_dtype(x, weight, bias)), fnp.asarray(mean, sd),
                fnp.asarray(var, sd))

    @batch_norm_train.defjvp
    def _jvp(primals, tangents):
        (x, weight, bias), (tx, tw, tb) = primals, tangents
        axes, bshape = _layout(x)
        outs = batch_norm_train(x, weight, bias)
        xhat, _, _, inv = _stats(x, eps)
        acc, dt = inv.dtype, xhat.dtype
        n = xhat.size // xhat.shape[1]

        def spread(v):
            # a per-channel accumulator value over the whole input: broadcast first, then
            # rounded, so that its transpose (a gradient's reduction) accumulates too
            return fnp.asarray(fnp.broadcast_to(fnp.reshape(v, bshape), xhat.shape), dt)

        def channel_mean(v):
            return fnp.sum(fnp.asarray(v, acc), axis=axes) / n

        tx = fnp.asarray(tx, dt)
        t_mean = channel_mean(tx)
        t_proj = channel_mean(xhat * tx)               # mean(xhat * t) = inv * mean(d * t)
        scale = fnp.asarray(inv, dt) if weight is None else fnp.asarray(inv, dt) * weight
        t_out = (tx - spread(t_mean) - xhat * spread(t_proj)) * fnp.reshape(scale, bshape)
        if weight is not None:
            t_out = t_out + xhat * spread(fnp.asarray(tw, acc))
        if bias is not None:
            t_out = t_out + spread(fnp.asarray(tb, acc))
        t_var = 2.0 * t_proj / inv                      # 2 mean(d * t)
        return outs, (fnp.asarray(t_out, outs[0].dtype), fnp.asarray(t_mean, outs[1].dtype),
                      fnp.asarray(t_var, outs[2].dtype))

    return batch_norm_train


def train_norm(x, weight, bias, eps):
    """``((x - mean) / sqrt(var + eps) * weight + bias, mean, var)`` over every axis of
    ``x`` but 1, with the batch's mean and biased variance (``weight``/``bias`` may be
    None)."""
    return _norm(float(eps))(fnp.asarray(x), weight, bias)
