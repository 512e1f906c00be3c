"""Windowed reductions with lax's semantics (``reduce_window``) and the pooling helpers.

``reduce_window`` records one ``reduce_window_{sum,max,min}`` primitive. Max/min
differentiate through the first selected element of each window
(``select_and_gather_add``; its transpose ``select_and_scatter_add``), so max-pool's
reverse mode never materialises a one-hot per window.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.eager import host_impl
from functorch_core.ir.source import user_source

from .. import numpy as fnp
from ..numpy.internal import array_operand, aval, to_result
from .conv import _dilate, padtype_to_pads

__all__ = ["reduce_window", "max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"]

_COMPUTATIONS = {"add": "add", "sum": "add", "max": "max", "maximum": "max",
                 "min": "min", "minimum": "min"}
_BY_FUNCTION = {np.add: "add", np.maximum: "max", np.minimum: "min", fnp.add: "add",
                fnp.maximum: "max", fnp.minimum: "min", operator.add: "add", max: "max",
                min: "min", np.fmax: "max", np.fmin: "min"}
_PRIMS = {"add": P.reduce_window_sum, "max": P.reduce_window_max, "min": P.reduce_window_min}


def _computation(computation):
    kind = _COMPUTATIONS.get(computation) if isinstance(computation, str) \
        else _BY_FUNCTION.get(computation)
    if kind is None:
        raise ValueError(f"reduce_window: computation {computation!r} is not supported; pass "
                         "'add', 'max' or 'min' (or np.add, np.maximum, np.minimum)")
    return kind


def _tuple(name, arg, value, n, default):
    if value is None:
        return (default,) * n
    value = tuple(operator.index(v) for v in value)
    if len(value) != n:
        raise ValueError(f"{name}: {arg} {value} should have {n} entries, one per dimension "
                         f"of the operand (at {user_source()})")
    return value


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduce every window of ``operand`` with ``computation`` (lax.reduce_window).

    Args:
        operand (array): the array to reduce.
        init_value (scalar): the reduction's start and the padding value. ``'add'``
            takes ``0``; ``'max'``/``'min'`` take any scalar (``-inf``/``inf`` is the
            identity; another value also bounds the result).
        computation (str or function): ``'add'``, ``'max'`` or ``'min'``, or
            ``np.add``/``np.maximum``/``np.minimum`` (or ``fnp.``/``operator`` ones).
        window_dimensions (sequence of int): the window extent per dimension.
        window_strides (sequence of int, default ``None`` = 1s): the step per dimension.
        padding (str or sequence of pairs, default ``'VALID'``): ``'SAME'``, ``'VALID'``
            or ``(low, high)`` per dimension.
        base_dilation (sequence of int, default ``None`` = 1s): operand dilation.
        window_dilation (sequence of int, default ``None`` = 1s): window dilation.

    Example::

        >>> reduce_window(np.arange(4.0), 0.0, 'add', (2,), (1,))
        array([1., 3., 5.])
    """
    name = "reduce_window"
    kind = _computation(computation)
    x = array_operand(operand)
    shape, dt = aval(x).shape, aval(x).dtype
    n = len(shape)
    windows = _tuple(name, "window_dimensions", window_dimensions, n, 1)
    strides = _tuple(name, "window_strides", window_strides, n, 1)
    bd = _tuple(name, "base_dilation", base_dilation, n, 1)
    wd = _tuple(name, "window_dilation", window_dilation, n, 1)
    pads = padtype_to_pads([_dilate(d, b) for d, b in zip(shape, bd, strict=True)],
                           [_dilate(w, d) for w, d in zip(windows, wd, strict=True)],
                           strides, padding, name)
    init = np.asarray(init_value)
    if init.ndim or init.dtype == object:
        raise ValueError(f"{name}: init_value must be a concrete scalar, got {init_value!r}")
    if kind == "add" and init != 0:
        raise ValueError(f"{name}: 'add' takes init_value 0, got {init_value!r} (add a "
                         "constant to the result instead)")
    out = _PRIMS[kind].bind(x, window_dimensions=windows, window_strides=strides, padding=pads,
                            base_dilation=bd, window_dilation=wd)
    identity = -np.inf if kind == "max" else np.inf
    if kind != "add" and init != identity:      # +-inf: no bound, for every dtype
        bound = init.astype(dt)
        if bound != dtypes.extreme_identity(dt, kind):
            out = (fnp.maximum if kind == "max" else fnp.minimum)(out, bound)
    return to_result(out)


def _pool_geometry(name, x, window_shape, strides, padding):
    shape = aval(x).shape
    k = len(window_shape)
    if k > len(shape):
        raise ValueError(f"{name}: window_shape {tuple(window_shape)} has more dimensions "
                         f"than the input {shape}")
    lead = len(shape) - k
    window = (1,) * lead + tuple(window_shape)
    strides = (1,) * lead + (tuple(window_shape) if strides is None else tuple(strides))
    if isinstance(padding, str):
        pads = padtype_to_pads(shape, window, strides, padding, name)
    else:
        if isinstance(padding, int | np.integer):
            padding = [(padding, padding)] * k
        padding = [(p, p) if isinstance(p, int | np.integer) else tuple(p) for p in padding]
        pads = ((0, 0),) * lead + tuple(padding)
    return window, strides, pads


def max_pool(x, window_shape, strides=None, padding="VALID"):
    """Max pooling over the trailing ``len(window_shape)`` dimensions (``NCHW``-style).

    Args:
        x (array): the input, e.g. ``(N, C, H, W)``.
        window_shape (sequence of int): the window over the trailing dimensions.
        strides (sequence of int, default ``None`` = ``window_shape``): the step.
        padding (str, int or sequence, default ``'VALID'``): ``'SAME'``/``'VALID'``, one
            int for every side, or an int or ``(low, high)`` per pooled dimension.
            Padding never wins the max.

    Example::

        >>> max_pool(np.arange(16.0).reshape(1, 1, 4, 4), (2, 2))[0, 0]
        array([[ 5.,  7.],
               [13., 15.]])
    """
    x = array_operand(x)
    window, strides, pads = _pool_geometry("max_pool", x, window_shape, strides, padding)
    return reduce_window(x, -np.inf, "max", window, strides, pads)


def avg_pool(x, window_shape, strides=None, padding="VALID", count_include_pad=True):
    """Average pooling over the trailing ``len(window_shape)`` dimensions.

    Args:
        x (array): the input, e.g. ``(N, C, H, W)``.
        window_shape (sequence of int): the window over the trailing dimensions.
        strides (sequence of int, default ``None`` = ``window_shape``): the step.
        padding (str, int or sequence, default ``'VALID'``): as in ``max_pool``.
        count_include_pad (bool, default ``True``): divide by the full window size
            (zero padding counted, as PyTorch's default); ``False`` divides by the
            number of input elements in each window.

    Example::

        >>> avg_pool(np.ones((1, 3)), (2,), (1,), padding=1, count_include_pad=False)
        array([[1., 1., 1., 1.]])
    """
    x = array_operand(x)
    if dtype_kind(aval(x).dtype) not in "fc":
        x = fnp.asarray(x, dtype=np.result_type(aval(x).dtype, np.float64))
    window, strides, pads = _pool_geometry("avg_pool", x, window_shape, strides, padding)
    total = reduce_window(x, 0, "add", window, strides, pads)
    dt = aval(array_operand(total)).dtype
    if count_include_pad:
        return total / np.asarray(int(np.prod(window)), dt)
    k = len(window_shape)
    ones = np.ones(aval(x).shape[len(window) - k:], dt)
    counts = host_impl(P.reduce_window_sum)(
        ones, window_dimensions=window[-k:], window_strides=strides[-k:], padding=pads[-k:],
        base_dilation=(1,) * k, window_dilation=(1,) * k)
    return total / counts


def _adaptive(name, x, output_size, reduce):
    x = array_operand(x)
    shape = aval(x).shape
    output_size = tuple(output_size)
    k = len(output_size)
    if k > len(shape) or any(o < 1 for o in output_size):
        raise ValueError(f"{name}: output_size {output_size} does not fit the input {shape} "
                         "(one positive size per pooled trailing dimension)")
    for axis, out in zip(range(len(shape) - k, len(shape)), output_size, strict=True):
        n = aval(x).shape[axis]
        if n % out == 0:        # equal windows: one windowed reduction
            window = [1] * len(shape)
            window[axis] = n // out
            x = (max_pool if reduce == "max" else avg_pool)(x, window[len(shape) - k:])
            continue
        # PyTorch's windows: [floor(i n / out), ceil((i + 1) n / out)), separable per axis
        parts = []
        for i in range(out):
            lo, hi = (i * n) // out, -(-((i + 1) * n) // out)
            part = x[(slice(None),) * axis + (slice(lo, hi),)]
            parts.append((fnp.max if reduce == "max" else fnp.mean)(part, axis=axis,
                                                                    keepdims=True))
        x = fnp.concatenate(parts, axis=axis)
    return to_result(x)


def adaptive_avg_pool(x, output_size):
    """Average pooling to a given output size over the trailing ``len(output_size)``
    dimensions, with PyTorch's windows ``[floor(i n / out), ceil((i + 1) n / out))``.

    Args:
        x (array): the input, e.g. ``(N, C, H, W)``.
        output_size (sequence of int): the size of each pooled trailing dimension.

    Example::

        >>> adaptive_avg_pool(np.arange(5.0)[None], (3,))
        array([[0.5, 2. , 3.5]])
    """
    x = array_operand(x)
    if dtype_kind(aval(x).dtype) not in "fc":
        x = fnp.asarray(x, dtype=np.result_type(aval(x).dtype, np.float64))
    return _adaptive("adaptive_avg_pool", x, output_size, "avg")


def adaptive_max_pool(x, output_size):
    """Max pooling to a given output size over the trailing ``len(output_size)``
    dimensions, with the windows of ``adaptive_avg_pool``.

    Args:
        x (array): the input, e.g. ``(N, C, H, W)``.
        output_size (sequence of int): the size of each pooled trailing dimension.

    Example::

        >>> adaptive_max_pool(np.arange(5.0)[None], (3,))
        array([[1., 3., 4.]])
    """
    return _adaptive("adaptive_max_pool", x, output_size, "max")
