"""The autocast state (``functorch_core.amp.autocast``) and the two casting policies the
operations read when they are traced or run.

* ``lowered``: the products (``dot_general`` and everything built on it: matmul, einsum,
  tensordot, ``nn.Linear``) and the convolutions cast float32 operands to the autocast
  dtype; the result is in that dtype (accumulated in float32 by the backends).
* ``float32_op``: reductions, softmax, normalizations and losses cast bfloat16/float16
  operands to float32 and return float32.

Inside an operation of either list autocast is off, as in PyTorch (a loss's own sums are
not cast again). Casting goes through the operands' own ``astype`` (NumPy arrays and
tracers), so this module needs no layer above ``ir``.
"""

from __future__ import annotations

import contextvars
import functools

import numpy as np

from functorch_core.ir import dtypes

from . import scopes

_DTYPE: contextvars.ContextVar[np.dtype | None] = contextvars.ContextVar(
    "functorch_core autocast dtype", default=None)
_F32 = dtypes.float32


def current() -> np.dtype | None:
    """The dtype products are cast to, or None when autocast is off."""
    return _DTYPE.get()


def enter(dtype):
    scopes.opened()
    return _DTYPE.set(dtype)


def leave(token) -> None:
    _DTYPE.reset(token)
    scopes.closed()


def lowered(*xs):
    """``xs`` with float32 arrays cast to the autocast dtype (``xs`` itself when off)."""
    dt = _DTYPE.get()
    return xs if dt is None else tuple(map(_lowered_to(dt), xs))


def _widened(x):
    return x.astype(_F32) if getattr(x, "dtype", None) in dtypes.NARROW_FLOATS and \
        hasattr(x, "astype") else x


def _lowered_to(dt):
    def one(x):
        return x.astype(dt) if getattr(x, "dtype", None) == _F32 else x
    return one


def _policy(fn, caster):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        dt = _DTYPE.get()
        if dt is None:
            return fn(*args, **kwargs)
        cast = caster(dt)
        token = _DTYPE.set(None)
        try:
            return fn(*map(cast, args),
                      **{k: v if k == "out" else cast(v) for k, v in kwargs.items()})
        finally:
            _DTYPE.reset(token)
    return run


def float32_op(fn):
    """Decorate an operation of the float32 list: under autocast its bfloat16/float16 array
    arguments are cast to float32, and autocast is off while it runs."""
    return _policy(fn, lambda dt: _widened)


def lowered_op(fn):
    """Decorate a composite operation of the lowered list: under autocast its float32 array
    arguments are cast to the autocast dtype, and autocast is off while it runs (its own
    sums stay in that dtype, as PyTorch's bilinear)."""
    return _policy(fn, _lowered_to)
