"""Writes through a traced boolean mask: ``x[mask] = v``, ``x[mask] += v``, as a select.

A read ``x[mask]`` has as many elements as the mask has True entries, unknown while
tracing, so it cannot be a value. A write keeps ``x``'s shape: ``x[mask] = v`` is
``where(mask, v, x)``. Python runs ``x[mask] += v`` as a read, an in-place add and a
write, so the read hands back a :class:`MaskedValues`: the values at the mask, kept
as a full array of ``x``'s shape (the positions outside the mask are computed and
then dropped by the select). It takes arithmetic (``x[mask] = x[mask] * 2 + 1``) and
the in-place operators, and goes back into ``x`` (or another array of its shape) at
the same mask (the same traced value: ``m = x > 0; x[m] = x[m] * 2``). Any other use
is the read, refused with the read's message.

A mask covers the leading axes of ``x`` (``mask.shape == x.shape[:mask.ndim]``), as in
NumPy. A value must broadcast to NumPy's target ``(number of True entries, *rest)``
without that number: a scalar, or an array that broadcasts to the rest of the axes. A
value with a length along the masked axis (NumPy's ``x[mask] = values_of_len_count``)
would need it, and is refused with a pointer to ``fnp.where``.
"""

from __future__ import annotations

import numpy as np

from functorch_core.ir import Tracer, TracerError
from functorch_core.ir import primitives as P
from functorch_core.ir.source import user_source

from ._core import aval, cast, is_tracer, operand
from ._elementwise import where
from ._methods import _fnp
from ._writes import UFuncOutputCastingError, _write_whole, assign_cast

READ_HINT = ("the result's shape depends on the mask's values, which are not known while "
             "tracing. Writes keep the shape and are supported (x[mask] = v, x[mask] += v, "
             "x[mask] = x[mask] * 2: a select); for a read use fnp.where(mask, x, fill), or "
             "pass the mask as a static (concrete) argument")


def traced_mask(x, index):
    """The traced boolean mask of ``x[index]`` when the index is one (optionally followed
    by ``...``), checked against ``x``'s leading axes as NumPy checks it; else None."""
    parts = index if isinstance(index, tuple) else (index,)
    if len(parts) == 2 and parts[1] is Ellipsis:
        parts = parts[:1]
    if len(parts) != 1 or not isinstance(parts[0], Tracer) or parts[0].dtype != np.bool_ \
            or not parts[0].ndim or not is_tracer(x):
        return None
    mask = parts[0]
    if mask.ndim > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but "
                         f"{mask.ndim} were indexed")
    for axis, (m, d) in enumerate(zip(mask.shape, x.shape, strict=False)):
        if m != d:
            raise IndexError(f"boolean index did not match indexed array along axis {axis}; "
                             f"size of axis is {d} but size of corresponding boolean axis "
                             f"is {m}")
    return mask


def _read_error(source):
    return TracerError(f"Reading x[mask] with a traced boolean mask (at {source}): "
                       f"{READ_HINT}.")


def _aligned(other, mask, shape, what):
    """``other`` (a scalar or an array broadcastable to NumPy's target ``(count, *rest)``)
    laid out against the full ``shape``: the masked axes become 1s."""
    if isinstance(other, MaskedValues):
        if other.mask is not mask or other.full.shape != tuple(shape):
            raise TracerError(
                f"{what}: the values were read at another traced mask (or from an array of "
                "another shape) than the one written; the two may differ in where they are "
                "True. Compute the mask once and use it for both: m = x > 0; "
                "x[m] = x[m] * 2")
        return other.full
    other = operand(other)
    oshape = tuple(aval(other).shape)
    k, rest = mask.ndim, tuple(shape[mask.ndim:])
    target = f"(number of True entries, {', '.join(map(str, rest))})" if rest else \
        "(number of True entries,)"
    while len(oshape) > len(rest) + 1 and oshape[0] == 1:
        oshape = oshape[1:]
    if len(oshape) == len(rest) + 1:
        if oshape[0] != 1:
            raise TracerError(
                f"{what} with a traced boolean mask: a value of shape {aval(other).shape} "
                f"needs NumPy's target shape {target} to have {oshape[0]} True entries, "
                "and their number is not known while tracing. Pass a scalar or a value that "
                "broadcasts to the unmasked axes, or write fnp.where(mask, values, x) with "
                "values of x's full shape")
        oshape = oshape[1:]
    if any(o not in (1, r) for o, r in zip(oshape[::-1], rest[::-1], strict=False)):
        raise ValueError(f"{what}: could not broadcast a value of shape {aval(other).shape} "
                         f"into shape {target}")
    if not oshape and not is_tracer(other) and np.ndim(other) == 0:
        return other
    new = (1,) * (k + len(rest) - len(oshape)) + oshape
    if tuple(aval(other).shape) != new:
        other = P.reshape.bind(other, new_sizes=new) if is_tracer(other) else \
            np.reshape(np.asarray(other), new)
    return other


class MaskedValues:
    """``x[mask]`` under a trace: the values at a traced mask, pending a write back (see
    the module docstring). Arithmetic and in-place operators give new MaskedValues;
    everything else raises the read's TracerError."""

    __slots__ = ("full", "mask", "source")

    def __init__(self, full, mask, source=None):
        self.full, self.mask = full, mask
        self.source = source or user_source()

    def _binary(self, fn_name, other, reflected=False):
        other = _aligned(other, self.mask, self.full.shape, "x[mask] arithmetic")
        args = (other, self.full) if reflected else (self.full, other)
        out = getattr(_fnp(), fn_name)(*args)
        if tuple(aval(operand(out)).shape) != tuple(self.full.shape):
            raise ValueError(f"x[mask] arithmetic: the result's shape {out.shape} is not the "
                             f"masked array's {self.full.shape}")
        return MaskedValues(out, self.mask, self.source)

    def _inplace(self, fn_name, other):
        new = self._binary(fn_name, other).full
        dt, want = aval(operand(new)).dtype, self.full.dtype
        if not np.can_cast(dt, want, "same_kind"):
            name = getattr(getattr(np, fn_name, None), "__name__", fn_name)
            raise UFuncOutputCastingError(f"Cannot cast ufunc {name!r} output from {dt!r} to "
                                          f"{want!r} with casting rule 'same_kind'")
        return MaskedValues(cast(new, want), self.mask, self.source)

    def _unary(self, fn_name):
        return MaskedValues(getattr(_fnp(), fn_name)(self.full), self.mask, self.source)

    def __getattr__(self, name):
        raise _read_error(object.__getattribute__(self, "source"))

    def _refuse(self, *args, **kwargs):
        raise _read_error(self.source)

    __array__ = __array_ufunc__ = __array_function__ = __getitem__ = __setitem__ = _refuse
    __len__ = __iter__ = __bool__ = __float__ = __int__ = __index__ = __complex__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __matmul__ = __rmatmul__ = _refuse
    __hash__ = None

    def not_a_value(self):
        """The error for a use as a value (a transform's output, say): the read's."""
        return _read_error(self.source)

    def __repr__(self):
        return f"<x[mask] with a traced mask of shape {self.mask.shape}, pending a write>"


for _name, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                   ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                   ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                   ("or", "bitwise_or"), ("xor", "bitwise_xor")]:
    setattr(MaskedValues, f"__{_name}__", lambda self, o, _fn=_fn: self._binary(_fn, o))
    setattr(MaskedValues, f"__r{_name}__",
            lambda self, o, _fn=_fn: self._binary(_fn, o, reflected=True))
    setattr(MaskedValues, f"__i{_name}__", lambda self, o, _fn=_fn: self._inplace(_fn, o))
for _name, _fn in [("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
                   ("invert", "invert")]:
    setattr(MaskedValues, f"__{_name}__", lambda self, _fn=_fn: self._unary(_fn))


def masked_write(x, mask, value):
    """``x[mask] = value`` for a traced boolean ``mask``: ``x`` becomes
    ``where(mask, value, x)`` (one whole-array setitem)."""
    if isinstance(value, MaskedValues):
        value = _aligned(value, mask, x.shape, "x[mask] = value")
    else:
        value = _aligned(assign_cast(value, x.dtype), mask, x.shape, "x[mask] = value")
    value = assign_cast(value, x.dtype)
    keep = P.reshape.bind(mask, new_sizes=mask.shape + (1,) * (x.ndim - mask.ndim))
    _write_whole(x, where(keep, value, x), "x[mask] = value")
