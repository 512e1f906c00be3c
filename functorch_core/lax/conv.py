"""Convolutions with lax's semantics: ``conv_general_dilated``, ``conv``, ``conv_transpose``.

Every function records one ``conv_general_dilated`` primitive (plus layout ops), so
it differentiates in both modes, batches under ``vmap`` and lowers under ``jit``.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core._internal import autocast
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.source import user_source

from .._internal import matmul_precision
from ..numpy.internal import array_operand, aval, cast, to_result

__all__ = ["conv_general_dilated", "conv", "conv_transpose", "conv_dimension_numbers",
           "padtype_to_pads"]


def _dilate(d, k):
    return 0 if d == 0 else 1 + k * (d - 1)


def _ints(name, arg, value, n, default=1):
    if value is None:
        return (default,) * n
    if isinstance(value, int | np.integer):
        return (operator.index(value),) * n
    value = tuple(operator.index(v) for v in value)
    if len(value) != n:
        raise ValueError(f"{name}: {arg} {value} should have {n} entries, one per spatial "
                         f"dimension (at {user_source()})")
    return value


def padtype_to_pads(in_shape, window_shape, window_strides, padding, name="conv"):
    """Explicit ``(low, high)`` pads for ``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'``
    (``in_shape`` and ``window_shape`` already dilated), as lax computes them."""
    if not isinstance(padding, str):
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        if len(pads) != len(in_shape):
            raise ValueError(f"{name}: padding {pads} should have {len(in_shape)} (low, high) "
                             f"pairs, one per spatial dimension (at {user_source()})")
        return pads
    mode = padding.upper()
    if mode == "VALID":
        return ((0, 0),) * len(in_shape)
    if mode not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"{name}: padding {padding!r} is not 'SAME', 'SAME_LOWER', 'VALID' "
                         "or a sequence of (low, high) pairs")
    pads = []
    for d, w, s in zip(in_shape, window_shape, window_strides, strict=True):
        total = max((-(-d // s) - 1) * s + w - d, 0)
        small = total // 2
        pads.append((small, total - small) if mode == "SAME" else (total - small, small))
    return tuple(pads)


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers, name="conv_general_dilated"):
    """``dimension_numbers`` as three axis-number specs: lhs (batch, feature, spatial...),
    rhs (out feature, in feature, spatial...), out (batch, feature, spatial...).

    Accepts ``None`` (NCHW-style ``('NC...', 'OI...', 'NC...')``), three layout strings
    such as ``('NHWC', 'HWIO', 'NHWC')`` (spatial letters matched by name) or three
    sequences of axis numbers.
    """
    nd = len(lhs_shape)
    if len(rhs_shape) != nd or nd < 2:
        raise ValueError(f"{name}: lhs {tuple(lhs_shape)} and rhs {tuple(rhs_shape)} need the "
                         f"same rank, at least 2 (at {user_source()})")
    if dimension_numbers is None:
        return tuple(tuple(range(nd)) for _ in range(3))
    try:
        lhs, rhs, out = dimension_numbers
    except (TypeError, ValueError):
        raise ValueError(f"{name}: dimension_numbers {dimension_numbers!r} should be three "
                         "specs (lhs, rhs, out)") from None
    if all(isinstance(s, str) for s in (lhs, rhs, out)):
        specs = _from_strings(name, lhs, rhs, out, nd, lhs_shape, rhs_shape)
    else:
        specs = tuple(tuple(operator.index(a) for a in s) for s in (lhs, rhs, out))
    for what, spec in zip(("lhs", "rhs", "out"), specs, strict=True):
        if sorted(spec) != list(range(nd)):
            raise ValueError(f"{name}: dimension_numbers {what} spec {dimension_numbers!r} "
                             f"does not fit rank {nd} (lhs {tuple(lhs_shape)}, rhs "
                             f"{tuple(rhs_shape)})")
    return specs


def _from_strings(name, lhs, rhs, out, nd, lhs_shape, rhs_shape):
    def bad():
        return ValueError(f"{name}: dimension_numbers {(lhs, rhs, out)!r} are not three "
                          f"layouts of rank {nd} with N/C, O/I, N/C and the same spatial "
                          f"letters (lhs {tuple(lhs_shape)}, rhs {tuple(rhs_shape)})")
    if any(len(s) != nd or len(set(s)) != nd for s in (lhs, rhs, out)):
        raise bad()
    spatial = {c for c in rhs if c not in "OI"}
    if set(lhs) != set(out) or set(lhs) != {"N", "C"} | spatial or set(rhs) - spatial != {
            "O", "I"}:
        raise bad()
    spatial = [c for c in rhs if c in spatial]
    return ((lhs.index("N"), lhs.index("C"), *(lhs.index(c) for c in spatial)),
            (rhs.index("O"), rhs.index("I"), *(rhs.index(c) for c in spatial)),
            (out.index("N"), out.index("C"), *(out.index(c) for c in spatial)))


def operands(name, lhs, rhs, preferred_element_type):
    """The operands of a product or convolution in their common dtype (with
    ``preferred_element_type``'s)."""
    lhs, rhs = autocast.lowered(array_operand(lhs), array_operand(rhs))
    dt = np.result_type(aval(lhs).dtype, aval(rhs).dtype)
    if preferred_element_type is not None:
        dt = np.result_type(dt, preferred_element_type)
    if dtype_kind(dt) not in "iufc":
        raise TypeError(f"{name}: operands of dtype {aval(lhs).dtype} and {aval(rhs).dtype} "
                        f"(shapes {aval(lhs).shape} and {aval(rhs).shape}) are not numeric "
                        f"(at {user_source()})")
    dt = dtypes.canonical(dt)
    return cast(lhs, dt), cast(rhs, dt)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """General n-d convolution (cross-correlation, as in lax and PyTorch).

    Args:
        lhs (array): the input, e.g. ``(N, C, H, W)`` under the default layout.
        rhs (array): the kernel, e.g. ``(O, C // feature_group_count, KH, KW)``.
        window_strides (sequence of int): the stride per spatial dimension.
        padding (str or sequence of pairs): ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or
            ``(low, high)`` per spatial dimension (negative values crop).
        lhs_dilation (sequence of int, default ``None`` = 1s): input dilation (a stride
            of the transposed convolution).
        rhs_dilation (sequence of int, default ``None`` = 1s): kernel (atrous) dilation.
        dimension_numbers (default ``None``): ``None`` for ``('NC...', 'OI...', 'NC...')``,
            three layout strings such as ``('NHWC', 'HWIO', 'NHWC')``, or three tuples
            of axis numbers (batch, feature, spatial...) / (out, in, spatial...).
        feature_group_count (int, default ``1``): grouped convolution: the input
            features split into this many groups, each with its own output features.
        batch_group_count (int, default ``1``): the batch split into groups, each with
            its own output features (the kernel gradient of a grouped convolution).
        precision (default ``None``): for float32 operands, ``lax.Precision.HIGHEST`` /
            ``'highest'`` / ``'float32'`` (float32), ``HIGH`` / ``'high'`` /
            ``'bfloat16_3x'`` (three bfloat16 products), ``'medium'`` / ``'bfloat16'``
            (bfloat16 operands); ``None`` or ``DEFAULT``: the float32 matmul precision in
            force (``fc.get_float32_matmul_precision()``), read when traced.
        preferred_element_type (dtype, default ``None``): compute and return in this
            dtype (operands are converted to it).

    Returns:
        array: the output, laid out by ``dimension_numbers``' out spec.

    Example::

        >>> x, w = np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3))
        >>> conv_general_dilated(x, w, (1, 1), 'SAME')[0, 0, 0]
        array([4., 6., 6., 6., 4.])
    """
    name = "conv_general_dilated"
    lhs, rhs = operands(name, lhs, rhs, preferred_element_type)
    reduced = matmul_precision.param(name, precision, aval(lhs).dtype)
    ls, rs = aval(lhs).shape, aval(rhs).shape
    specs = conv_dimension_numbers(ls, rs, dimension_numbers, name)
    n = len(ls) - 2
    strides = _ints(name, "window_strides", window_strides, n)
    lhs_dil = _ints(name, "lhs_dilation", lhs_dilation, n)
    rhs_dil = _ints(name, "rhs_dilation", rhs_dilation, n)
    in_sp = [_dilate(ls[a], d) for a, d in zip(specs[0][2:], lhs_dil, strict=True)]
    k_sp = [_dilate(rs[a], d) for a, d in zip(specs[1][2:], rhs_dil, strict=True)]
    pads = padtype_to_pads(in_sp, k_sp, strides, padding, name)
    for arg, v in (("feature_group_count", feature_group_count),
                   ("batch_group_count", batch_group_count)):
        if not isinstance(v, int | np.integer) or v < 1:
            raise ValueError(f"{name}: {arg} must be a positive int, got {v!r}")
    out = P.conv_general_dilated.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil, dimension_numbers=specs,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        **reduced)
    return to_result(out)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution in the ``(N, C, spatial...)`` / ``(O, I, spatial...)`` layout, no
    dilation and no groups: ``conv_general_dilated`` with its defaults.

    Args:
        lhs (array): the input ``(N, C, *spatial)``.
        rhs (array): the kernel ``(O, C, *window)``.
        window_strides (sequence of int): the stride per spatial dimension.
        padding (str or sequence of pairs): as in ``conv_general_dilated``.
        precision (default ``None``): as in ``conv_general_dilated``.
        preferred_element_type (dtype, default ``None``): the computation dtype.

    Example::

        >>> conv(np.ones((1, 1, 4)), np.ones((2, 1, 2)), (1,), 'VALID').shape
        (1, 2, 3)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else -(-pad_len // 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    else:
        raise ValueError(f"conv_transpose: padding must be 'SAME', 'VALID' or (low, high) "
                         f"pairs, got {padding!r}")
    return pad_a, pad_len - pad_a


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None):
    """Transposed ("fractionally strided") convolution, as ``jax.lax.conv_transpose``.

    Args:
        lhs (array): the input; default layout ``NHWC``-style (channels last).
        rhs (array): the kernel; default layout ``HWIO``-style.
        strides (sequence of int): the upsampling factor per spatial dimension (the
            lhs dilation of the underlying convolution).
        padding (str or sequence of pairs): ``'SAME'``, ``'VALID'`` or explicit pairs.
        rhs_dilation (sequence of int, default ``None``): kernel dilation.
        dimension_numbers (default ``None``): as in ``conv_general_dilated``; ``None``
            picks the channels-last layouts above.
        transpose_kernel (bool, default ``False``): flip the kernel spatially and swap
            its in/out feature axes, giving the gradient of ``conv_general_dilated``.
        precision (default ``None``): as in ``conv_general_dilated``.
        preferred_element_type (dtype, default ``None``): the computation dtype.

    Example::

        >>> conv_transpose(np.ones((1, 3, 1)), np.ones((2, 1, 1)), (2,), 'VALID').shape
        (1, 6, 1)
    """
    name = "conv_transpose"
    lhs, rhs = operands(name, lhs, rhs, preferred_element_type)
    ls, rs = aval(lhs).shape, aval(rhs).shape
    if dimension_numbers is None:
        if len(ls) not in _TRANSPOSE_LAYOUTS or len(rs) != len(ls):
            raise ValueError(f"{name}: lhs {ls} and rhs {rs} need equal rank 2 to 5 when "
                             "dimension_numbers is None")
        dimension_numbers = _TRANSPOSE_LAYOUTS[len(ls)]
    specs = conv_dimension_numbers(ls, rs, dimension_numbers, name)
    n = len(ls) - 2
    strides = _ints(name, "strides", strides, n)
    rhs_dil = _ints(name, "rhs_dilation", rhs_dilation, n)
    if isinstance(padding, str):
        pads = [_conv_transpose_padding(_dilate(rs[a], d), s, padding.upper())
                for a, d, s in zip(specs[1][2:], rhs_dil, strides, strict=True)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = P.rev.bind(rhs, dimensions=tuple(specs[1][2:]))
        perm = list(range(len(rs)))
        perm[specs[1][0]], perm[specs[1][1]] = perm[specs[1][1]], perm[specs[1][0]]
        rhs = P.transpose.bind(rhs, permutation=tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * n, pads, lhs_dilation=strides,
                                rhs_dilation=rhs_dil, dimension_numbers=specs,
                                precision=precision)
