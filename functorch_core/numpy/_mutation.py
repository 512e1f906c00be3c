"""In-place writes besides ``x[i] = v``: copyto, fill, ufunc ``out=`` and ``ufunc.at``.

On a tracer each records one whole-array ``setitem`` (functionalize turns
it into a pure update); on concrete arrays NumPy runs them itself. Writing a
traced value into a concrete NumPy array cannot be recorded, and raises.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir import Lit
from functorch_core.ir import primitives as P
from functorch_core.ir.updates import broadcast_value, flat_positions, scatter_flat

from ._core import aval, cast, implements, is_tracer, operand, weak_marker
from ._elementwise import UFUNCS
from ._elementwise import where as select
from ._indexing import parse_index
from ._writes import _concrete_target_error, _whole, _write_whole

__all__ = ["copyto", "fill", "ufunc_at"]


def _any_tracer(*xs):
    return any(is_tracer(x) for x in xs)


def _cast_for_write(src, dst_dtype, casting, what):
    """``src`` as an operand of ``dst_dtype``, refused as NumPy refuses it under ``casting``."""
    if not is_tracer(src) and not isinstance(src, np.ndarray):
        probe = np.empty((), dst_dtype)
        np.copyto(probe, src, casting=casting)   # NumPy's own check (and OverflowError)
        if np.ndim(src) == 0:
            return Lit(probe)
        src = np.asarray(src)
    s = aval(operand(src)).dtype
    if not np.can_cast(s, dst_dtype, casting):
        raise TypeError(f"Cannot cast array data from {s!r} to {np.dtype(dst_dtype)!r} "
                        f"according to the rule {casting!r} ({what})")
    if isinstance(src, np.ndarray):
        with np.errstate(all="ignore"):
            return Lit(np.real(src).astype(dst_dtype) if src.dtype.kind == "c"
                       and np.dtype(dst_dtype).kind != "c" else src.astype(dst_dtype))
    return cast(src, dst_dtype)


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    """``numpy.copyto``: write ``src`` (broadcast) into ``dst`` where ``where`` holds.

    Args:
        dst: the array written (a traced array, or a concrete one when nothing is traced).
        src: the values; cast to ``dst.dtype`` if ``casting`` allows it.
        casting (str, default ``'same_kind'``): NumPy's casting rule.
        where (bool array, default ``True``): which elements to write.

    Example::

        >>> def f(x):
        ...     buf = fnp.zeros(3)
        ...     fnp.copyto(buf, x, where=x > 0)
        ...     return buf
    """
    if not is_tracer(dst):
        if _any_tracer(src, where):
            raise _concrete_target_error("copyto", dst)
        return np.copyto(dst, src, casting=casting, where=where)
    value = _cast_for_write(src, dst.dtype, casting, "copyto")
    if where is not True:
        value = select(where, value, dst)
    _write_whole(dst, value, "copyto")
    return None


def fill(a, value):
    """``ndarray.fill``: set every element of ``a`` to the scalar ``value`` (unsafe cast).

    Example::

        >>> def f(x):
        ...     buf = fnp.empty(3)
        ...     buf.fill(x.sum())
        ...     return buf
    """
    if not is_tracer(a):
        if is_tracer(value):
            raise _concrete_target_error("fill", a)
        return a.fill(value)
    if is_tracer(value):
        if value.ndim:
            raise ValueError(f"fill: the value must be a scalar, got an array of shape "
                             f"{value.shape}")
        v = cast(value, a.dtype)
    else:
        probe = np.empty((), a.dtype)
        probe.fill(value)                          # NumPy's own checks and cast
        v = Lit(probe)
    _write_whole(a, v, "fill")
    return None


# --- ufunc.at ----------------------------------------------------------------------

def ufunc_at(ufunc, a, indices, b=None):
    """``ufunc.at(a, indices, b)``: unbuffered in place, repeated indices apply repeatedly.

    ``np.add.at(x, idx, v)`` on a traced ``x`` goes here. Each element is
    updated as NumPy does it, one occurrence after the other, in the dtype
    NumPy computes in and cast back to ``a.dtype``. Traced ``indices`` are
    supported for ``add``/``subtract`` computed in ``a``'s own dtype (one
    ``scatter_add``); other ufuncs need concrete indices.

    Example::

        >>> def hist(bins, x):
        ...     np.add.at(bins, x, 1)      # x may repeat
        ...     return bins
    """
    name = f"numpy.{ufunc.__name__}.at"
    if not is_tracer(a):
        if _any_tracer(b, *(indices if isinstance(indices, tuple) else (indices,))):
            raise _concrete_target_error(name, a)
        return ufunc.at(a, indices, b)
    if ufunc not in UFUNCS or ufunc.nout != 1 or (b is None) != (ufunc.nin == 1):
        raise NotImplementedError(f"{name} is not supported on traced arrays")
    pos = _positions(a, indices, name)
    if math.prod(pos.shape) == 0 or a.size == 0:
        return None
    fn = UFUNCS[ufunc]
    b = None if b is None else operand(b)
    if ufunc in (np.add, np.subtract) and _in_own_dtype(ufunc, a, b):
        return _scatter_add(a, pos, fn, b)
    if not isinstance(pos, np.ndarray):
        raise NotImplementedError(f"{name} with traced indices is supported only for add and "
                                  "subtract computed in the array's own dtype")
    return _rounds(a, pos, fn, b)


def _in_own_dtype(ufunc, a, b):
    try:
        dts = ufunc.resolve_dtypes((a.dtype, weak_marker(b), None))
    except TypeError:
        return False
    return all(d == a.dtype for d in dts)


def _positions(a, indices, name):
    """Flat positions of ``a[indices]``: an ndarray when the index is concrete."""
    parts = indices if isinstance(indices, tuple) else (indices,)
    if not _any_tracer(*parts):
        iota = np.arange(a.size, dtype=np.int64).reshape(a.shape)
        return np.ascontiguousarray(iota[indices])

    indexer, arrays, _ = parse_index(a.shape, indices, name)
    atoms = [x if is_tracer(x) else Lit(np.asarray(x)) for x in arrays]
    return flat_positions(a.shape, indexer, atoms)


def _values(b, shape, dtype):
    b = cast(b, dtype)
    b = b if is_tracer(b) or isinstance(b, Lit) else Lit(np.asarray(b))
    return broadcast_value(b, shape, "ufunc.at")


def _scatter_add(a, pos, fn, b):
    vals = _values(b, pos.shape, a.dtype)
    if fn.__name__ == "subtract":
        vals = P.neg.bind(vals)
    pos = Lit(pos) if isinstance(pos, np.ndarray) else pos
    new = scatter_flat(a, pos, vals, P.scatter_add)
    P.setitem.bind(a, new, indexer=_whole(a.shape))
    return None


def _rounds(a, pos, fn, b):
    """Split the occurrences into rounds of distinct positions, applied in order."""
    flat_pos = pos.reshape(-1)
    seen: dict[int, int] = {}
    rank = np.empty(flat_pos.shape, dtype=np.int64)
    for i, p in enumerate(flat_pos.tolist()):
        rank[i] = seen.get(p, 0)
        seen[p] = rank[i] + 1
    flat = P.reshape.bind(a, new_sizes=(a.size,))
    flat = P.convert.bind(flat, new_dtype=a.dtype)       # a copy, not a view of a
    if b is not None:
        bflat = P.reshape.bind(_values(b, pos.shape, aval(b).dtype), new_sizes=(flat_pos.size,))
    for r in range(int(rank.max()) + 1):
        which = np.nonzero(rank == r)[0]
        idx = Lit(flat_pos[which][:, None])
        cur = P.gather.bind(flat, idx, axes=(0,))
        args = (cur,) if b is None else (cur, P.gather.bind(bflat, Lit(which[:, None]),
                                                            axes=(0,)))
        res = cast(operand(fn(*args)), a.dtype)
        flat = P.scatter.bind(flat, idx, res, axes=(0,))
    P.setitem.bind(a, P.reshape.bind(flat, new_sizes=a.shape), indexer=_whole(a.shape))
    return None
