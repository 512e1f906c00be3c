"""A subset of ``scipy.signal``, traceable and differentiable: n-d ``convolve``,
``correlate`` and ``fftconvolve`` (modes ``'full'``, ``'same'``, ``'valid'``), and the 2-D
``convolve2d`` / ``correlate2d`` with the ``'fill'``, ``'wrap'`` and ``'symm'`` boundaries.

``method='direct'`` records one ``conv_general_dilated`` primitive (an exact sum of
products, as SciPy's direct method); ``method='fft'`` goes through ``numpy.fft``
(``rfftn``/``irfftn`` for real inputs). Integer and bool inputs always take the direct
path, so they come back exact in their own dtype, as SciPy's rounded FFT result does.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P

from .. import numpy as fnp
from ..numpy.internal import array_operand, aval, cast, to_result

__all__ = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d",
           "choose_conv_method"]

_MODES = ("full", "same", "valid")
_AUTO_FFT_PRODUCTS = 1 << 18     # method='auto': FFT once the direct sum has this many terms


def _operands(name, in1, in2):
    in1, in2 = array_operand(in1), array_operand(in2)
    s1, s2 = aval(in1).shape, aval(in2).shape
    if len(s1) != len(s2):
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality, got "
                         f"shapes {s1} and {s2}")
    dt = dtypes.canonical(np.result_type(aval(in1).dtype, aval(in2).dtype))
    return in1, in2, dt


def _check_mode(name, mode):
    if mode not in _MODES:
        raise ValueError(f"{name}: acceptable mode flags are 'valid', 'same', or 'full', got "
                         f"{mode!r}")


def _swap_needed(name, mode, s1, s2, axes=None):
    """'valid' needs one input at least as large as the other along every axis; True when
    that one is in2."""
    if mode != "valid":
        return False
    axes = range(len(s1)) if axes is None else axes
    ge = all(s1[i] >= s2[i] for i in axes)
    le = all(s1[i] <= s2[i] for i in axes)
    if not (ge or le):
        raise ValueError(f"{name}: for 'valid' mode, one must be at least as large as the "
                         f"other in every dimension, got shapes {s1} and {s2}")
    return not ge


def _slices(x, full, s1, s2, mode, axes):
    """The 'same' (centred on in1) or 'valid' part of a full result along ``axes``."""
    if mode == "full":
        return x
    shape = aval(x).shape
    start, stop = [0] * len(shape), list(shape)
    for i in axes:
        if mode == "same":
            start[i] = (full[i] - s1[i]) // 2
            stop[i] = start[i] + s1[i]
        else:
            start[i] = min(s1[i], s2[i]) - 1
            stop[i] = max(s1[i], s2[i])
    return P.slice.bind(x, start_indices=tuple(start), limit_indices=tuple(stop),
                        strides=(1,) * len(shape))


def _direct_full(in1, in2, dt):
    """The full n-d cross-correlation sum_n in1[n + k] * in2[n] (no conjugation)."""
    compute = np.dtype(np.int64) if dt.kind == "b" else dt
    a, w = cast(in1, compute), cast(in2, compute)
    s1, s2 = aval(a).shape, aval(w).shape
    nd = len(s1)
    x = P.reshape.bind(a, new_sizes=(1, 1) + s1)
    k = P.reshape.bind(w, new_sizes=(1, 1) + s2)
    spec = tuple(range(nd + 2))
    out = P.conv_general_dilated.bind(
        x, k, window_strides=(1,) * nd, padding=tuple((n - 1, n - 1) for n in s2),
        lhs_dilation=(1,) * nd, rhs_dilation=(1,) * nd, dimension_numbers=(spec,) * 3,
        feature_group_count=1, batch_group_count=1)
    out = P.reshape.bind(out, new_sizes=tuple(p + q - 1 for p, q in zip(s1, s2)))
    return fnp.not_equal(out, 0) if dt.kind == "b" else out


def _reverse(x, axes=None):
    axes = tuple(range(aval(x).ndim)) if axes is None else tuple(axes)
    return P.rev.bind(x, dimensions=axes) if axes else x


def _conj(x):
    return fnp.conj(x) if aval(x).dtype.kind == "c" else x


def _use_fft(dt, method, s1, s2, name):
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"{name}: acceptable method flags are 'auto', 'direct', or 'fft', got "
                         f"{method!r}")
    if dt.kind in "biu" or method == "direct":
        return False
    return method == "fft" or math.prod(s1) * math.prod(s2) >= _AUTO_FFT_PRODUCTS


def choose_conv_method(in1, in2, mode="full", measure=False):
    """``scipy.signal.choose_conv_method``: the method ``convolve(..., method='auto')``
    uses here: ``'direct'`` for integer and bool inputs and for sums of fewer than 2**18
    products, ``'fft'`` otherwise (``measure`` is not supported).

    Args:
        in1: the first input.
        in2: the second input, of the same dimensionality.
        mode (str, default ``'full'``): as in :func:`convolve` (does not change the choice).
        measure (bool, default ``False``): timing both methods is not supported.

    Example::

        >>> choose_conv_method(np.ones(10), np.ones(3))
        'direct'
    """
    if measure:
        raise NotImplementedError("choose_conv_method: measure=True is not supported")
    in1, in2, dt = _operands("choose_conv_method", in1, in2)
    fft = _use_fft(dt, "auto", aval(in1).shape, aval(in2).shape, "choose_conv_method")
    return "fft" if fft else "direct"


def _empty(in1, in2):
    return 0 in aval(in1).shape or 0 in aval(in2).shape


def _not_empty(name, in1, in2):
    if _empty(in1, in2):
        raise ValueError(f"{name}: in1 and in2 must not be empty, got shapes "
                         f"{aval(in1).shape} and {aval(in2).shape}")


def _prologue(name, in1, in2, mode, method):
    """The operands, their result dtype and whether to take the FFT path; 0-d inputs pass,
    empty ones are refused."""
    in1, in2, dt = _operands(name, in1, in2)
    _check_mode(name, mode)
    fft = _use_fft(dt, method, aval(in1).shape, aval(in2).shape, name)
    if aval(in1).shape:
        _not_empty(name, in1, in2)
    return in1, in2, dt, fft


def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``: the n-d discrete linear convolution of two arrays.

    Args:
        in1: the first input (any dimensionality, real or complex, int or bool).
        in2: the second input, with as many dimensions as ``in1``.
        mode (str, default ``'full'``): ``'full'`` (shape ``s1 + s2 - 1``), ``'same'``
            (the shape of ``in1``, centred on the full result) or ``'valid'`` (shape
            ``|s1 - s2| + 1``; one input must be at least as large as the other along every
            axis).
        method (str, default ``'auto'``): ``'direct'`` (the sum itself), ``'fft'`` (through
            ``numpy.fft``; integer and bool inputs stay direct, hence exact) or ``'auto'``
            (see :func:`choose_conv_method`).

    Returns:
        An array of ``numpy.result_type(in1, in2)``.

    Example::

        >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
        array([0. , 1. , 2.5, 4. , 1.5])
    """
    return _nd("convolve", in1, in2, mode, method, False)


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate``: the n-d cross-correlation
    ``z[k] = sum_n in1[n + k] * conj(in2[n])``, ``k`` running from ``-(s2 - 1)`` to
    ``s1 - 1`` along each axis, in ``numpy.result_type(in1, in2)``.

    Args:
        in1: the first input (any dimensionality, real or complex, int or bool).
        in2: the second input, with as many dimensions as ``in1``; conjugated.
        mode (str, default ``'full'``): ``'full'``, ``'same'`` or ``'valid'`` as in
            :func:`convolve`.
        method (str, default ``'auto'``): ``'direct'``, ``'fft'`` or ``'auto'`` as in
            :func:`convolve`.

    Example::

        >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
        array([0.5, 2. , 3.5, 3. , 0. ])
    """
    return _nd("correlate", in1, in2, mode, method, True)


def _nd(name, in1, in2, mode, method, correlation):
    in1, in2, dt, fft = _prologue(name, in1, in2, mode, method)
    s1, s2 = aval(in1).shape, aval(in2).shape
    if correlation:
        in2 = _conj(cast(in2, dt))
    if not s1:
        return to_result(fnp.multiply(cast(in1, dt), cast(in2, dt)))
    if fft:     # a correlation is the convolution with the reversed conjugate
        kernel = _reverse(in2) if correlation else in2
        return to_result(cast(_fft_convolve(name, in1, kernel, mode, None), dt))
    swapped = _swap_needed(name, mode, s1, s2)
    if swapped:      # convolution commutes; z(in1, in2)[k] = sum conj(in2)[n - k] in1[n]
        in1, in2, s1, s2 = in2, in1, s2, s1
    full = _direct_full(in1, in2 if correlation else _reverse(in2), dt)
    out = _slices(full, aval(full).shape, s1, s2, mode, range(len(s1)))
    return to_result(_reverse(out) if swapped and correlation else out)


def _fft_axes(name, nd, axes):
    if axes is None:
        return tuple(range(nd))
    axes = (axes,) if isinstance(axes, int | np.integer) else tuple(axes)
    out = []
    for a in axes:
        a = int(a)
        if not -nd <= a < nd:
            raise ValueError(f"{name}: axes {axes} out of range for {nd}-d inputs")
        out.append(a % nd)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: axes {axes} must be unique")
    return tuple(sorted(out))


def _fft_convolve(name, in1, in2, mode, axes):
    s1, s2 = aval(in1).shape, aval(in2).shape
    axes = _fft_axes(name, len(s1), axes)
    for i in range(len(s1)):
        if i not in axes and s1[i] != s2[i] and 1 not in (s1[i], s2[i]):
            raise ValueError(f"{name}: in1 {s1} and in2 {s2} should have the same size or "
                             f"size 1 along axis {i}, which is not in axes {axes}")
    if _swap_needed(name, mode, s1, s2, axes):
        in1, in2, s1, s2 = in2, in1, s2, s1
    full = [s1[i] + s2[i] - 1 for i in axes]
    sizes = [math.prod(s1[i] for i in axes), math.prod(s2[i] for i in axes)]
    if min(sizes) == 1:     # a product, exactly as the FFT would make it (to rounding)
        out = fnp.multiply(in1, in2)
        if aval(out).dtype.kind in "biu":
            out = cast(out, np.float64)
    else:
        dt = np.result_type(aval(in1).dtype, aval(in2).dtype)
        dt = np.dtype(np.float64) if dt.kind in "biu" else dt
        in1, in2 = cast(in1, dt), cast(in2, dt)      # both transforms in the result's precision
        complex_ = dt.kind == "c"
        fwd, inv = (fnp.fft.fftn, fnp.fft.ifftn) if complex_ else (fnp.fft.rfftn,
                                                                   fnp.fft.irfftn)
        prod = fwd(in1, s=full, axes=axes) * fwd(in2, s=full, axes=axes)
        out = inv(prod, s=full, axes=axes)
    full_shape = list(aval(out).shape)
    return _slices(out, full_shape, s1, s2, mode, axes)


def fftconvolve(in1, in2, mode="full", axes=None):
    """``scipy.signal.fftconvolve``: the n-d convolution of two arrays through the FFT.

    Args:
        in1: the first input (real or complex; integers compute in float64).
        in2: the second input, with as many dimensions as ``in1``; along the axes not
            convolved the two must have equal sizes or size 1 (they broadcast).
        mode (str, default ``'full'``): ``'full'``, ``'same'`` or ``'valid'`` as in
            :func:`convolve`, along ``axes``.
        axes (int, sequence of ints or None, default ``None``): the axes to convolve over
            (``None``: all).

    Returns:
        A float array (complex if either input is): float32 stays float32, float16 becomes
        float32 and integers float64, as SciPy's.

    Example::

        >>> a, v = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])
        >>> bool(np.allclose(fftconvolve(a, v), np.convolve(a, v)))
        True
    """
    name = "fftconvolve"
    in1, in2, dt = _operands(name, in1, in2)
    _check_mode(name, mode)
    if not aval(in1).shape:
        out = fnp.multiply(cast(in1, dt), cast(in2, dt))
        return to_result(cast(out, np.float64) if dt.kind in "biu" else out)
    if _empty(in1, in2):
        return np.array([])
    if dt.kind == "b":
        in1, in2 = cast(in1, np.float64), cast(in2, np.float64)
    return to_result(_fft_convolve(name, in1, in2, mode, axes))


# --- 2-D, with boundaries -------------------------------------------------------------------

def _boundary_index(n, pad, boundary):
    """Indices into an axis of length ``n`` for it extended by ``pad`` on each side."""
    i = np.arange(-pad, n + pad)
    if boundary == "wrap":
        return i % n
    period = np.mod(i, 2 * n)                 # 'symm': x[-1] = x[0], x[n] = x[n - 1]
    return np.where(period < n, period, 2 * n - 1 - period)


def _conv2d(name, in1, in2, mode, boundary, fillvalue, correlation):
    in1, in2, dt = _operands(name, in1, in2)
    s1, s2 = aval(in1).shape, aval(in2).shape
    if len(s1) != 2:
        raise ValueError(f"{name}: inputs must both be 2-D arrays, got shapes {s1} and {s2}")
    _check_mode(name, mode)
    if boundary not in ("fill", "wrap", "symm"):
        raise ValueError(f"{name}: acceptable boundary flags are 'fill', 'wrap', and 'symm', "
                         f"got {boundary!r}")
    _not_empty(name, in1, in2)
    swapped = _swap_needed(name, mode, s1, s2)
    if swapped:
        in1, in2, s1, s2 = in2, in1, s2, s1
    kernel = _conj(cast(in2, dt)) if correlation else _reverse(in2)
    if mode == "valid" or (boundary == "fill" and _is_zero(fillvalue)):
        full = _direct_full(in1, kernel, dt)
    elif boundary == "fill":      # the sum over the whole kernel of fillvalue outside in1
        fill = fnp.asarray(fillvalue)
        if aval(fill).ndim != 0:
            raise ValueError(f"{name}: fillvalue must be a scalar, got shape "
                             f"{aval(fill).shape}")
        fill = cast(fill, dt)
        full = _direct_full(fnp.subtract(cast(in1, dt), fill), kernel, dt)
        full = fnp.add(full, cast(fnp.multiply(fill, fnp.sum(cast(kernel, dt))), dt))
        full = cast(full, dt)
    else:
        ext = in1
        for axis in (0, 1):
            idx = _boundary_index(s1[axis], s2[axis] - 1, boundary)
            ext = fnp.take(ext, idx, axis=axis)
        full = _direct_full(ext, kernel, dt)
        start = [n - 1 for n in s2]
        full = P.slice.bind(full, start_indices=tuple(start),
                            limit_indices=tuple(b + p + q - 1 for b, p, q in zip(start, s1, s2)),
                            strides=(1, 1))
    if mode == "same" and correlation:      # SciPy centres correlate2d one step later
        start = tuple(n // 2 for n in s2)
        out = P.slice.bind(full, start_indices=start,
                           limit_indices=tuple(b + n for b, n in zip(start, s1)), strides=(1, 1))
    else:
        out = _slices(full, aval(full).shape, s1, s2, mode, (0, 1))
    if swapped and correlation:     # as SciPy: the swapped sum reversed, i.e. conj(z) if complex
        out = _reverse(out)
    return to_result(cast(out, dt))


def _is_zero(v):
    return isinstance(v, int | float | complex | np.number) and v == 0


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.convolve2d``: the 2-D convolution, ``in1`` extended past its edges
    as ``boundary`` says.

    Args:
        in1: a 2-D array.
        in2: a 2-D array.
        mode (str, default ``'full'``): ``'full'``, ``'same'`` or ``'valid'`` as in
            :func:`convolve`.
        boundary (str, default ``'fill'``): ``'fill'`` (``fillvalue`` outside ``in1``),
            ``'wrap'`` (periodic) or ``'symm'`` (mirrored, the edge repeated).
        fillvalue (scalar, default ``0``): the value outside ``in1`` for ``'fill'``.

    Example::

        >>> convolve2d(np.eye(2), np.ones((1, 2)))
        array([[1., 1., 0.],
               [0., 1., 1.]])
    """
    return _conv2d("convolve2d", in1, in2, mode, boundary, fillvalue, False)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """``scipy.signal.correlate2d``: the 2-D cross-correlation (``in2`` conjugated), ``in1``
    extended past its edges as ``boundary`` says. As SciPy's: ``'same'`` starts at offset
    ``s2 // 2`` of the full result (``correlate``'s at ``(s2 - 1) // 2``), and in ``'valid'``
    mode with ``in2`` the larger the result is the conjugate of the correlation.

    Args:
        in1: a 2-D array.
        in2: a 2-D array.
        mode (str, default ``'full'``): ``'full'``, ``'same'`` or ``'valid'``.
        boundary (str, default ``'fill'``): ``'fill'``, ``'wrap'`` or ``'symm'`` as in
            :func:`convolve2d`.
        fillvalue (scalar, default ``0``): the value outside ``in1`` for ``'fill'``.

    Example::

        >>> x = np.arange(4.0).reshape(2, 2)
        >>> correlate2d(x, np.array([[1.0, -1.0]]), mode="same", boundary="wrap")
        array([[-1.,  1.],
               [-1.,  1.]])
    """
    return _conv2d("correlate2d", in1, in2, mode, boundary, fillvalue, True)
