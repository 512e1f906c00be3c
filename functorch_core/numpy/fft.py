"""``numpy.fft`` over the ``fft`` primitive: ``fnp.fft.rfft(x)``, or ``np.fft.rfft`` on a tracer.

Every transform is one ``fft`` equation over the trailing axes, with the axes moved
there first and the input cropped or zero-padded to ``n``/``s`` as NumPy does; the
``norm`` scaling is a multiplication outside the primitive (whose inverse transforms
carry NumPy's default 1/n). Results have NumPy 2's dtypes: single precision stays
single (float32 -> complex64), integers and bools become float64/complex128.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from functorch_core.ir import Lit, dtypes
from functorch_core.ir import primitives as P

from ._core import aval, cast, implements, normalize_axis, to_result
from ._creation import array_operand
from ._shape import roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _check_norm(name, norm):
    if norm not in _NORMS:
        raise ValueError(f'fft.{name}: invalid norm value {norm!r}; should be "backward", '
                         '"ortho" or "forward"')


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"fft.{name}(..., out=...) is not supported; use the result")


def _real_dtype(dt):
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt in dtypes.NARROW_FLOATS:
        return np.dtype(np.float32)
    return np.finfo(dt).dtype


def _as(x, name, kind):
    """``x`` as an operand of the transform's input kind ('c' complex, 'f' real)."""
    x = array_operand(x)
    dt = aval(x).dtype
    if kind == "f":
        if dt.kind == "c":
            raise TypeError(f"fft.{name}: the input must be real, got dtype {dt}")
        return cast(x, _real_dtype(dt))
    return cast(x, P.complex_of(_real_dtype(dt)))


def _resize(x, axis, n, name):
    """Crop or zero-pad axis ``axis`` of ``x`` to length ``n``."""
    shape = aval(x).shape
    if n < 1:
        raise ValueError(f"fft.{name}: invalid number of data points ({n}) specified "
                         f"for an input of shape {shape}")
    have = shape[axis]
    if n == have:
        return x
    nd = len(shape)
    if n < have:
        return P.slice.bind(x, start_indices=(0,) * nd,
                            limit_indices=shape[:axis] + (n,) + shape[axis + 1:],
                            strides=(1,) * nd)
    config = tuple((0, n - have if i == axis else 0, 0) for i in range(nd))
    return P.pad.bind(x, Lit(np.zeros((), aval(x).dtype)), padding_config=config)


def _scale(x, factor):
    if factor == 1:
        return x
    return P.mul.bind(x, Lit(np.asarray(factor, aval(x).dtype)))


def _norm_factor(norm, n, inverse):
    """The factor applied on top of the primitive (whose inverse already divides by n)."""
    norm = norm or "backward"
    if norm == "backward":
        return 1.0
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1 / math.sqrt(n)
    return n if inverse else 1 / n


def _transform(x, axes, fft_type, lengths):
    """The primitive over ``axes`` (moved to the end in order, then moved back)."""
    nd = len(aval(x).shape)
    rest = [i for i in range(nd) if i not in axes]
    perm = (*rest, *axes)
    moved = x if perm == tuple(range(nd)) else P.transpose.bind(x, permutation=perm)
    y = P.fft.bind(moved, fft_type=fft_type, fft_lengths=tuple(lengths))
    if perm == tuple(range(nd)):
        return y
    back = tuple(int(i) for i in np.argsort(perm))
    return P.transpose.bind(y, permutation=back)


def _n_axes(name, x, s, axes, default_all=True):
    """NumPy's (s, axes) rules of the n-dimensional transforms."""
    nd = len(aval(x).shape)
    if axes is None:
        if s is None:
            axes = list(range(nd)) if default_all else list(range(nd - 2, nd))
        else:
            axes = list(range(nd - len(s), nd))
    else:
        axes = [normalize_axis(a, nd) for a in axes]
    if s is not None:
        s = [operator.index(n) for n in s]
        if len(s) != len(axes):
            raise ValueError(f"fft.{name}: shape s={tuple(s)} and axes={tuple(axes)} must "
                             "have the same length")
    if not axes:
        raise ValueError(f"fft.{name}: no axes to transform for an input of shape "
                         f"{aval(x).shape}")
    return s, axes


def _setup(name, a, s, axes, norm, kind):
    """The operand of input kind ``kind``, NumPy's (s, axes) and the operand's shape."""
    _check_norm(name, norm)
    x = _as(a, name, kind)
    s, axes = _n_axes(name, x, s, axes)
    return x, s, axes, aval(x).shape


def _sized(x, axes, lengths, name):
    for ax, n in zip(axes, lengths, strict=True):
        x = _resize(x, ax, n, name)
    return x


def _c2c(name, a, s, axes, norm, inverse):
    x, s, axes, shape = _setup(name, a, s, axes, norm, "c")
    if s is None:
        s = [shape[ax] for ax in axes]
    if len(set(axes)) != len(axes):      # NumPy transforms a repeated axis repeatedly
        for ax, n in reversed(list(zip(axes, s, strict=True))):
            x = _c2c(name, x, [n], [ax], norm, inverse)
        return x
    y = _transform(_sized(x, axes, s, name), axes, "ifft" if inverse else "fft", s)
    return _scale(y, _norm_factor(norm, math.prod(s), inverse))


def _r2c(name, a, s, axes, norm):
    x, s, axes, shape = _setup(name, a, s, axes, norm, "f")
    if s is None:
        s = [shape[ax] for ax in axes]
    if len(set(axes)) != len(axes):
        y = _r2c(name, x, s[-1:], axes[-1:], norm)
        return _c2c(name, y, s[:-1], axes[:-1], norm, False)
    y = _transform(_sized(x, axes, s, name), axes, "rfft", s)
    return _scale(y, _norm_factor(norm, math.prod(s), False))


def _c2r(name, a, s, axes, norm):
    x, s, axes, shape = _setup(name, a, s, axes, norm, "c")
    if s is None:
        s = [shape[ax] for ax in axes[:-1]] + [2 * (shape[axes[-1]] - 1)]
    if len(set(axes)) != len(axes):
        x = _c2c(name, x, s[:-1], axes[:-1], norm, True)
        return _c2r(name, x, s[-1:], axes[-1:], norm)
    if s[-1] < 1:
        raise ValueError(f"fft.{name}: invalid number of data points ({s[-1]}) specified "
                         f"for an input of shape {shape}")
    half = list(s[:-1]) + [s[-1] // 2 + 1]
    y = _transform(_sized(x, axes, half, name), axes, "irfft", s)
    return _scale(y, _norm_factor(norm, math.prod(s), True))


def _one(n, axis):
    return None if n is None else [n], [axis]


def _swap(norm):
    """hfft/ihfft are irfft/rfft with the direction of the scaling swapped."""
    return {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}[norm]


@implements(np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    """``numpy.fft.fft``: the one-dimensional discrete Fourier transform along ``axis``.

    Args:
        a: the input (real inputs are converted to complex).
        n (int, optional): crop or zero-pad the input to this length. Default: its length.
        axis (int): the transformed axis. Default: -1.
        norm (str, optional): ``"backward"`` (default, no scaling), ``"ortho"`` (1/sqrt(n))
            or ``"forward"`` (1/n).

    Example::

        >>> fnp.fft.fft(np.array([1.0, 0.0, 0.0, 0.0]))
        array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
        >>> fc.grad(lambda x: fnp.fft.fft(x).real.sum())(np.zeros(4))
        array([4., 0., 0., 0.])
    """
    _no_out("fft", out)
    return to_result(_c2c("fft", a, *_one(n, axis), norm, False))


@implements(np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    """``numpy.fft.ifft``: the inverse of :func:`fft` (scaled by 1/n unless ``norm`` says)."""
    _no_out("ifft", out)
    return to_result(_c2c("ifft", a, *_one(n, axis), norm, True))


@implements(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    """``numpy.fft.rfft``: the transform of a real input, non-negative frequencies only
    (``n // 2 + 1`` of them)."""
    _no_out("rfft", out)
    return to_result(_r2c("rfft", a, *_one(n, axis), norm))


@implements(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    """``numpy.fft.irfft``: the real signal of length ``n`` (default ``2 * (m - 1)``) whose
    :func:`rfft` is ``a``; the imaginary parts of the zero (and Nyquist) terms are ignored."""
    _no_out("irfft", out)
    return to_result(_c2r("irfft", a, *_one(n, axis), norm))


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """``numpy.fft.hfft``: the real spectrum of a signal with Hermitian symmetry given by
    its first half ``a``."""
    _no_out("hfft", out)
    _check_norm("hfft", norm)
    return to_result(_c2r("hfft", P.conj.bind(_as(a, "hfft", "c")), *_one(n, axis),
                          _swap(norm)))


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """``numpy.fft.ihfft``: the inverse of :func:`hfft` (a real input's half spectrum)."""
    _no_out("ihfft", out)
    _check_norm("ihfft", norm)
    return to_result(P.conj.bind(_r2c("ihfft", a, *_one(n, axis), _swap(norm))))


@implements(np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    """``numpy.fft.fftn``: the n-dimensional transform over ``axes`` (default: all, or the
    last ``len(s)``), each cropped or padded to ``s``."""
    _no_out("fftn", out)
    return to_result(_c2c("fftn", a, s, axes, norm, False))


@implements(np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    """``numpy.fft.ifftn``: the inverse of :func:`fftn`."""
    _no_out("ifftn", out)
    return to_result(_c2c("ifftn", a, s, axes, norm, True))


@implements(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    """``numpy.fft.rfftn``: :func:`rfft` over the last of ``axes``, :func:`fft` over the rest."""
    _no_out("rfftn", out)
    return to_result(_r2c("rfftn", a, s, axes, norm))


@implements(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    """``numpy.fft.irfftn``: the inverse of :func:`rfftn`."""
    _no_out("irfftn", out)
    return to_result(_c2r("irfftn", a, s, axes, norm))


@implements(np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``numpy.fft.fft2``: :func:`fftn` over two axes (default the last two)."""
    _no_out("fft2", out)
    return to_result(_c2c("fft2", a, s, axes, norm, False))


@implements(np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``numpy.fft.ifft2``: the inverse of :func:`fft2`."""
    _no_out("ifft2", out)
    return to_result(_c2c("ifft2", a, s, axes, norm, True))


@implements(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``numpy.fft.rfft2``: :func:`rfftn` over two axes (default the last two)."""
    _no_out("rfft2", out)
    return to_result(_r2c("rfft2", a, s, axes, norm))


@implements(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """``numpy.fft.irfft2``: the inverse of :func:`rfft2`."""
    _no_out("irfft2", out)
    return to_result(_c2r("irfft2", a, s, axes, norm))


def fftfreq(n, d=1.0, device=None):
    """``numpy.fft.fftfreq``: the sample frequencies of an ``n``-point :func:`fft` (a
    NumPy array: it depends on no traced value)."""
    return np.fft.fftfreq(n, d)


def rfftfreq(n, d=1.0, device=None):
    """``numpy.fft.rfftfreq``: the sample frequencies of an ``n``-point :func:`rfft`."""
    return np.fft.rfftfreq(n, d)


def _shift(x, axes, sign):
    x = array_operand(x)
    shape = aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, int | np.integer):
        axes = (axes,)
    axes = tuple(normalize_axis(a, len(shape)) for a in axes)
    return roll(x, tuple(sign * (shape[a] // 2) for a in axes), axes)


@implements(np.fft.fftshift)
def fftshift(x, axes=None):
    """``numpy.fft.fftshift``: the zero frequency moved to the centre of ``axes`` (default
    all)."""
    return to_result(_shift(x, axes, 1))


@implements(np.fft.ifftshift)
def ifftshift(x, axes=None):
    """``numpy.fft.ifftshift``: the inverse of :func:`fftshift`."""
    return to_result(_shift(x, axes, -1))
