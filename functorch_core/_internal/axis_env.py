"""The named axes bound while a function is traced: ``vmap(..., axis_name=...)`` frames
and the process axis ``"world"``.

``vmap`` binds its name for the extent of the trace of its function (``bound``); the
collectives of ``functorch_core.lax.parallel`` look a name up when they are called
(``axis_size``), so an unbound name fails at trace time naming the names that are
bound. The transform caches key their entries by ``current()``: a function traced
under a vmap of one size is traced again under another.
"""

from __future__ import annotations

import contextlib
import contextvars

from functorch_core.backends import mpi

WORLD = mpi.WORLD

_FRAMES: contextvars.ContextVar[tuple[tuple[str, int], ...]] = contextvars.ContextVar(
    "functorch_core_axis_frames", default=())


def current() -> tuple[tuple[str, int], ...]:
    """The bound vmap axes, outermost first: ``((name, size), ...)``."""
    return _FRAMES.get()


@contextlib.contextmanager
def bound(name: str, size: int):
    """Bind the vmap axis ``name`` of ``size`` examples for the ``with`` block."""
    token = _FRAMES.set(_FRAMES.get() + ((name, int(size)),))
    try:
        yield
    finally:
        _FRAMES.reset(token)


def check_name(name, call: str) -> None:
    """A name ``vmap`` may bind: a non-empty string other than the process axis's."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"{call}: axis_name must be a non-empty string (or None), got "
                        f"{name!r}")
    if name == WORLD:
        raise ValueError(
            f"{call}: axis_name={WORLD!r} is reserved for the process axis (the MPI ranks, "
            "functorch_core.distributed.WORLD); give the vmapped axis another name, and "
            "pass the name to the function as a parameter so that one body runs vmapped "
            "or over ranks")


def axis_size(name, call: str) -> int:
    """The size of the axis ``name``: the innermost vmap of that name, or the world's size
    for the process axis. An unbound name raises ``NameError`` naming the bound ones."""
    if not isinstance(name, str):
        raise TypeError(f"{call}: an axis name must be a string, got {name!r}")
    for n, size in reversed(_FRAMES.get()):
        if n == name:
            return size
    if name == WORLD:
        return mpi.world().size
    names = [n for n, _ in _FRAMES.get()] + [WORLD]
    raise NameError(f"{call}: unbound axis name {name!r}; the axes bound here are "
                    f"{names} (vmap(..., axis_name=...) binds a name for its function, "
                    f"{WORLD!r} is the process axis)")
