"""Global options, set by the user (never flipped by the library itself)."""

import os
from dataclasses import dataclass, field


@dataclass
class Config:
    """Options of functorch_core.

    Attributes:
        log_retraces: log, through the ``functorch_core.jit`` logger, why a
            jitted function traces again (which argument's shape, dtype,
            structure or static value changed). Default: the environment
            variable ``FUNCTORCH_CORE_LOG_RETRACES`` is ``1``. Evictions from a
            jitted function's cache are logged too.
        jit_cache_size: how many input signatures each ``jit`` function keeps
            compiled (least recently used dropped first) when ``jit`` gets no
            ``cache_size``; ``None`` for no bound. Default: the environment
            variable ``FUNCTORCH_CORE_JIT_CACHE_SIZE`` (``0`` meaning no bound),
            else 128.
        check_bounds: whether a traced integer index (``x[i]``, ``x[idx]``,
            ``take``, ``take_along_axis``, ``x[idx] = v``, ``np.add.at``) is
            checked when the graph runs, raising NumPy's ``IndexError`` (with
            the user's call and line) for an index outside ``[-n, n)``. Default:
            True. False drops the check where speed matters: an out-of-bounds
            index is then clamped into range (JAX's behaviour), silently. Read
            when a function is traced: a ``jit`` function keeps the setting of
            the signatures it has compiled (``fc.clear_caches()`` drops them).

    Example::

        >>> import functorch_core as fc
        >>> fc.config.check_bounds = False     # clamp, do not check
        >>> fc.config.check_bounds = True
    """

    log_retraces: bool = os.environ.get("FUNCTORCH_CORE_LOG_RETRACES", "") == "1"
    jit_cache_size: int | None = field(default_factory=lambda: _cache_size_from_env())
    check_bounds: bool = True


def _cache_size_from_env() -> int | None:
    value = os.environ.get("FUNCTORCH_CORE_JIT_CACHE_SIZE", "").strip()
    if not value:
        return 128
    try:
        size = int(value)
    except ValueError:
        raise ValueError(f"FUNCTORCH_CORE_JIT_CACHE_SIZE must be an integer, got {value!r}") \
            from None
    return None if size <= 0 else size


config = Config()
