"""Automatic mixed precision: :class:`autocast`, as ``torch.autocast``.

Inside ``with autocast():`` the products and convolutions run in bfloat16 (float32
operands are cast; the backends accumulate in float32) and the operations that need the
range or the precision run in float32: reductions (``sum``, ``mean``, ``var``, ``std``,
``prod``, ``cumsum``, ``cumprod``, ``nansum``, ``nanmean``), ``softmax``/``log_softmax``,
``layer_norm``/``group_norm``/``normalize`` and the losses of ``nn.functional``. Everything
else runs in the dtypes it is given (a bfloat16 activation plus a float32 bias promotes to
float32, as NumPy promotes). Parameters stay float32: the casts are part of the traced
function, so ``grad`` returns float32 gradients for float32 parameters and no loss scaling
is needed with bfloat16.

The state is read when a function is traced or run: a ``jit`` function called inside and
outside autocast is compiled once for each, and ``autocast`` may be used inside a jitted
function. Per thread and per asyncio task (a ``contextvars`` value).

The lists (PyTorch's CUDA lists, narrowed to what functorch_core has):

* lowered (``LOWERED``): ``dot_general`` and what is built on it (``matmul``, ``@``,
  ``dot``, ``einsum``, ``tensordot``, ``inner``, ``nn.functional.linear``/``bilinear``,
  ``nn.Linear``, attention), ``lax.conv_general_dilated`` and ``nn.functional.conv*``;
* float32 (``FLOAT32``): the names above.
"""

from __future__ import annotations

import functools

import numpy as np

from functorch_core.ir import dtypes

from ._internal import autocast as _state
from .amp_scaler import GradScaler

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "GradScaler", "LOWERED",
           "FLOAT32"]

LOWERED = ("dot_general", "matmul", "dot", "einsum", "tensordot", "inner", "linear",
           "bilinear", "conv_general_dilated", "conv1d", "conv2d", "conv3d")
FLOAT32 = ("sum", "mean", "var", "std", "prod", "cumsum", "cumprod", "nansum", "nanmean",
           "softmax", "log_softmax", "layer_norm", "group_norm", "normalize",
           "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss")
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}


class autocast:
    """Run products and convolutions in a lower precision, as ``torch.autocast``.

    Args:
        device_type (str, default ``"cpu"``): ``"cpu"`` or ``"cuda"``; it picks the default
            ``dtype`` (bfloat16 on the CPU, float16 on the GPU, as PyTorch).
        dtype (dtype, default ``None``): ``bfloat16`` or ``float16``; None takes the
            device's default.
        enabled (bool, default ``True``): False turns autocast off inside the block (a
            nested ``autocast(enabled=False)`` runs a region in full precision).
        cache_enabled: accepted for PyTorch compatibility; casts are traced, not cached.

    A context manager and a decorator. float16 needs a loss scale for its small range
    (:class:`GradScaler`, as PyTorch's); bfloat16 has float32's range and needs none.

    Example::

        >>> import functorch_core as fc, functorch_core.numpy as fnp
        >>> with fc.amp.autocast():
        ...     y = fnp.ones((2, 3), fnp.float32) @ fnp.ones((3, 4), fnp.float32)
        >>> y.dtype
        dtype(bfloat16)
        >>> loss = lambda w: fnp.sum(fnp.tanh(fnp.ones((2, 3), fnp.float32) @ w))
        >>> with fc.amp.autocast():
        ...     g = fc.grad(loss)(fnp.ones((3, 4), fnp.float32))
        >>> g.dtype                     # float32 parameters get float32 gradients
        dtype('float32')
    """

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if device_type not in _DEFAULT_DTYPE:
            raise ValueError(f"autocast: device_type must be 'cpu' or 'cuda', got "
                             f"{device_type!r}")
        dt = _DEFAULT_DTYPE[device_type] if dtype is None else np.dtype(dtype)
        if dt not in dtypes.NARROW_FLOATS:
            raise ValueError(f"autocast: dtype must be bfloat16 or float16, got {dt}")
        if not isinstance(enabled, bool | np.bool_):
            raise TypeError(f"autocast: enabled must be a bool, got {enabled!r}")
        self.device_type, self.dtype, self.enabled = device_type, dt, bool(enabled)
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_state.enter(self.dtype if self.enabled else None))
        return self

    def __exit__(self, *exc):
        _state.leave(self._tokens.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with autocast(self.device_type, self.dtype, self.enabled):
                return fn(*args, **kwargs)
        return run

    def __repr__(self):
        return f"autocast(device_type={self.device_type!r}, dtype={self.dtype}, " \
               f"enabled={self.enabled})"


def is_autocast_enabled(device_type=None) -> bool:
    """Whether an :class:`autocast` block is active here (``device_type`` is accepted for
    PyTorch compatibility: one state serves both)."""
    return _state.current() is not None


def get_autocast_dtype(device_type="cpu"):
    """The active autocast dtype, or the device's default when autocast is off."""
    return _state.current() or _DEFAULT_DTYPE[device_type]
