"""The float32 matmul precision, torch's and JAX's API: ``set_float32_matmul_precision``,
``get_float32_matmul_precision`` and the ``default_matmul_precision`` context manager.

The setting applies to float32 products (``dot_general``, hence ``matmul``/``@``,
``einsum``, ``tensordot``, ``np.dot``, ``nn.Linear``) and convolutions
(``conv_general_dilated``, ``nn.Conv*``); float64 and complex products are never reduced.
It is read when a product is traced: a jitted function compiled under one setting traces
again under another (the setting is part of its cache key).
"""

from __future__ import annotations

import contextlib

from ._internal import matmul_precision as _mp
from .api import drop_fast_paths

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "default_matmul_precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Set the precision of float32 products and convolutions (``torch``'s function).

    Args:
        precision (str): ``"highest"`` (the default: float32 products),
            ``"high"`` (operands split into two bfloat16 parts, three bfloat16 products
            accumulated in float32: near float32 accuracy) or ``"medium"`` (operands
            rounded to bfloat16, products accumulated in float32).

    Raises:
        ValueError: ``precision`` is not one of the three names.

    Example::

        >>> fc.set_float32_matmul_precision("medium")
        >>> fc.get_float32_matmul_precision()
        'medium'
        >>> fc.set_float32_matmul_precision("highest")
    """
    _mp.set_global(precision)
    drop_fast_paths()       # their entries were compiled under the previous setting


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision in force: ``"highest"``, ``"high"`` or ``"medium"``
    (inside :func:`default_matmul_precision`, its value).

    Example::

        >>> fc.get_float32_matmul_precision()
        'highest'
    """
    return _mp.current()


@contextlib.contextmanager
def default_matmul_precision(precision):
    """A context manager (``jax.default_matmul_precision``): float32 products traced inside
    it use ``precision``; the previous setting is back on exit (also on an exception).

    Args:
        precision: ``"highest"``/``"float32"``/``lax.Precision.HIGHEST``,
            ``"high"``/``"bfloat16_3x"``/``lax.Precision.HIGH``, or
            ``"medium"``/``"bfloat16"``; ``None``/``"default"`` keep the setting in force.

    Example::

        >>> a = np.ones((2, 2), np.float32)
        >>> with fc.default_matmul_precision("bfloat16"):
        ...     y = fc.jit(lambda a, b: a @ b)(a, a)
        >>> fc.get_float32_matmul_precision()
        'highest'
    """
    # per context (thread, task): jit's fast path is bypassed inside, not dropped
    token = _mp.scoped(_mp.canonical("default_matmul_precision", precision))
    try:
        yield
    finally:
        _mp.reset(token)
