"""``convolve`` and ``correlate``: NumPy's 1-D discrete convolution, through the
``conv_general_dilated`` primitive."""

from __future__ import annotations

import numpy as np

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.source import user_source

from ._core import aval, cast, constant, implements, to_result
from ._creation import array_operand
from ._elementwise import _conj

__all__ = ["convolve", "correlate"]


def _full_correlation(name, a, v):
    """c[k] = sum_n a[n + k] * v[n] for k = -(len(v) - 1) .. len(a) - 1."""
    a, v = array_operand(a), array_operand(v)
    for arg, x in (("a", a), ("v", v)):
        if aval(x).ndim != 1 or aval(x).shape[0] == 0:
            raise ValueError(f"{name}: {arg} must be a non-empty 1-D array, got shape "
                             f"{aval(x).shape} (at {user_source()})")
    dt = dtypes.canonical(np.result_type(aval(a).dtype, aval(v).dtype))
    # bools: NumPy's sum of products is an or of ands: a count of the pairs, not 0
    work = np.dtype(np.int64) if dt.kind == "b" else dt
    a, v = cast(a, work), cast(v, work)
    la, lv = aval(a).shape[0], aval(v).shape[0]
    x = P.reshape.bind(a, new_sizes=(1, 1, la))
    w = P.reshape.bind(v, new_sizes=(1, 1, lv))
    out = P.conv_general_dilated.bind(
        x, w, window_strides=(1,), padding=((lv - 1, lv - 1),), lhs_dilation=(1,),
        rhs_dilation=(1,), dimension_numbers=((0, 1, 2),) * 3, feature_group_count=1,
        batch_group_count=1)
    out = P.reshape.bind(out, new_sizes=(la + lv - 1,))
    if dt.kind == "b":
        out = P.ne.bind(out, constant(0, work))
    return out, la, lv


def _mode_slice(full, la, lv, mode, same_start, name):
    short, long = min(la, lv), max(la, lv)
    if mode == "full":
        return full
    if mode == "valid":
        start, size = short - 1, long - short + 1
    elif mode == "same":
        start, size = same_start, long
    else:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    return P.slice.bind(full, start_indices=(start,), limit_indices=(start + size,),
                        strides=(1,))


@implements(np.convolve)
def convolve(a, v, mode="full"):
    """``numpy.convolve``: the discrete linear convolution of two 1-D sequences.

    Args:
        a (array): the first 1-D input.
        v (array): the second 1-D input.
        mode (str, default ``'full'``): ``'full'`` (length ``N + M - 1``), ``'same'``
            (length ``max(N, M)``) or ``'valid'`` (length ``max(N, M) - min(N, M) + 1``).

    Example::

        >>> convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
        array([0. , 1. , 2.5, 4. , 1.5])
    """
    v = array_operand(v)
    if aval(v).ndim == 1:
        v = P.rev.bind(v, dimensions=(0,))
    full, la, lv = _full_correlation("convolve", a, v)
    return to_result(_mode_slice(full, la, lv, mode, (min(la, lv) - 1) // 2, "convolve"))


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    """``numpy.correlate``: ``c[k] = sum_n a[n + k] * conj(v[n])`` of two 1-D sequences.

    Args:
        a (array): the first 1-D input.
        v (array): the second 1-D input (conjugated when complex).
        mode (str, default ``'valid'``): ``'valid'``, ``'same'`` or ``'full'``, as in
            ``convolve``.

    Example::

        >>> correlate([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
        array([3.5])
    """
    v = array_operand(v)
    if aval(v).dtype.kind == "c":
        v = _conj(v)
    full, la, lv = _full_correlation("correlate", a, v)
    same = (lv - 1) // 2 if la >= lv else la - 1 - (la - 1) // 2
    return to_result(_mode_slice(full, la, lv, mode, same, "correlate"))
