"""The float32 matmul precision: the global setting, its scoped override, ``lax.Precision``
and the ``precision`` param a product records.

Read when a product is traced (``param``): ``jit`` and the transforms key their caches by
``current()``, so a change of the setting traces again. Setting it is
``functorch_core.precision``'s (which also drops ``jit``'s fast paths).
"""

from __future__ import annotations

import contextvars
import enum

from functorch_core.ir.passes.precision import PRECISIONS
from functorch_core.ir.source import user_source

from . import scopes

__all__ = ["Precision", "current", "set_global", "scoped", "param", "canonical"]


class Precision(enum.Enum):
    """``jax.lax.Precision``: a product's precision for float32 operands.

    ``DEFAULT``: the global setting (``fc.get_float32_matmul_precision()``); ``HIGH``: the
    three-term bfloat16 split (``"high"``); ``HIGHEST``: plain float32 (``"highest"``).
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self):
        return self.name


_global = {"precision": "highest"}
_scoped: contextvars.ContextVar[str | None] = contextvars.ContextVar("matmul_precision",
                                                                     default=None)

# every spelling a caller may use -> torch's name; None means the setting in force
_NAMES = {
    None: None, Precision.DEFAULT: None, "default": None,
    Precision.HIGH: "high", "high": "high", "bfloat16_3x": "high",
    Precision.HIGHEST: "highest", "highest": "highest", "float32": "highest",
    "medium": "medium", "bfloat16": "medium",
}
ACCEPTED = ("None", "lax.Precision.DEFAULT/HIGH/HIGHEST", "'default'", "'high'", "'highest'",
            "'medium'", "'bfloat16'", "'bfloat16_3x'", "'float32'")


def current() -> str:
    """The float32 matmul precision in force: ``"highest"``, ``"high"`` or ``"medium"``."""
    scoped = _scoped.get()
    return _global["precision"] if scoped is None else scoped


def check_setting(name: str, value) -> str:
    """``value`` as one of torch's names, or a ValueError naming ``name`` and them."""
    if not isinstance(value, str) or value not in PRECISIONS:
        raise ValueError(f"{name}: precision must be one of {', '.join(map(repr, PRECISIONS))}"
                         f", got {value!r}")
    return value


def set_global(value: str) -> None:
    _global["precision"] = check_setting("set_float32_matmul_precision", value)


def is_scoped() -> bool:
    """Whether a ``default_matmul_precision`` block is in force in this context."""
    return _scoped.get() is not None


def scoped(value: str):
    """A token for ``reset``: ``value`` in force in this context."""
    scopes.opened()
    return _scoped.set(value)


def reset(token) -> None:
    _scoped.reset(token)
    scopes.closed()


def canonical(name: str, precision) -> str:
    """A per-call ``precision`` argument as torch's name (None: the setting in force)."""
    if isinstance(precision, tuple) and len(precision) == 2 and precision[0] == precision[1]:
        precision = precision[0]        # lax's (lhs, rhs) pair, when both agree
    try:
        got = _NAMES[precision]
    except (KeyError, TypeError):
        raise ValueError(f"{name}: precision {precision!r} is not one of {', '.join(ACCEPTED)}"
                         f" (at {user_source()})") from None
    return current() if got is None else got


def param(name: str, precision, dtype) -> dict:
    """The params a product of operands of ``dtype`` records for ``precision``: ``{}`` for
    plain float32 (``"highest"``) and for every other dtype (the setting is float32's)."""
    got = canonical(name, precision)
    if got == "highest" or dtype != "float32":
        return {}
    return {"precision": got}
