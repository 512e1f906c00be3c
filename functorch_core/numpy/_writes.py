"""Writing a value into an existing array: the casts NumPy applies on assignment and
into ``out=``, and the whole-array write every in-place operation ends with.

The NumPy layer's lowest writing module: indexing, masked writes, ``out=`` of the
ufuncs and ``copyto``/``fill`` all build on it.
"""

from __future__ import annotations

import warnings

import numpy as np

from functorch_core.ir import Lit
from functorch_core.ir import primitives as P
from functorch_core.ir.updates import broadcast_value

from ._core import _walk, aval, cast, is_tracer, operand


class UFuncOutputCastingError(TypeError):
    """An in-place operator's result cannot be cast back to the dtype of the array it updates.

    NumPy raises its own ``UFuncTypeError`` subclass, with the same message.
    """


def _whole(shape):
    return tuple(("slice", 0, d, 1) for d in shape)


def _concrete_target_error(what, dst):
    return TypeError(
        f"{what}: cannot write a traced value into a concrete NumPy array of shape "
        f"{np.shape(dst)} (an array the traced function closes over or creates with NumPy). "
        "Create the buffer with functorch_core.numpy (fnp.zeros...) or pass it as an argument")


def _write_whole(dst, value, what):
    value = value if isinstance(value, Lit) or is_tracer(value) else Lit(value)
    full = broadcast_value(value, dst.shape, what)
    P.setitem.bind(dst, full, indexer=_whole(dst.shape))


def assign_cast(value, dtype):
    """``value`` converted to ``dtype`` as ``a[...] = value`` converts it in NumPy.

    Concrete values go through NumPy's own assignment (a float truncates into
    an integer array, an out-of-range Python int raises OverflowError, a
    complex array warns ComplexWarning); traced values are converted.
    """
    if isinstance(value, list | tuple) and any(is_tracer(e) for e in _walk(value)):
        value = operand(value)
    if is_tracer(value):
        if value.dtype.kind == "c" and np.dtype(dtype).kind != "c":
            warnings.warn("Casting complex values to real discards the imaginary part",
                          np.exceptions.ComplexWarning, stacklevel=3)
        return cast(value, dtype)
    out = np.empty(np.shape(value), dtype)
    out[...] = value
    return out


def ufunc_out(name, out, result):
    """Finish ``ufunc(..., out=out)``: check the cast ('same_kind'), write, return ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"{name}: out must be one array, got a tuple of {len(out)}")
        out = out[0]
    rshape, rdtype = aval(operand(result)).shape, aval(operand(result)).dtype
    if not np.can_cast(rdtype, out.dtype, "same_kind"):
        raise UFuncOutputCastingError(f"Cannot cast ufunc {name!r} output from {rdtype!r} to "
                                      f"{out.dtype!r} with casting rule 'same_kind'")
    if np.broadcast_shapes(rshape, out.shape) != tuple(out.shape):
        raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't "
                         f"match the broadcast shape {rshape}")
    if not is_tracer(out):
        if is_tracer(result):
            raise _concrete_target_error(f"{name}(..., out=)", out)
        np.copyto(out, result, casting="unsafe")
        return out
    _write_whole(out, cast(operand(result), out.dtype), f"{name}(..., out=)")
    return out
