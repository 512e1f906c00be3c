"""Find the user's file:line for an equation, skipping this package's frames."""

import linecache
import os
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A source checkout has ir/, backends/ and functorch_core/ side by side; an installed wheel
# nests ir/ and backends/ inside functorch_core/.
_OURS = ((_ROOT,) if os.path.basename(_ROOT) == "functorch_core" else
         tuple(os.path.join(_ROOT, d) for d in ("ir", "backends", "functorch_core")))
_SKIP = tuple(d + os.sep for d in _OURS) + (os.path.dirname(np.__file__) + os.sep, "<frozen")


def user_frame():
    """The innermost frame that belongs to user code (None if there is none)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_SKIP):
        f = f.f_back
    return f


def user_source() -> str:
    f = user_frame()
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


def _code(filename, lineno) -> str:
    line = linecache.getline(filename, lineno).strip()
    if len(line) > 100:
        line = line[:97] + "..."
    return f" (`{line}`)" if line else ""


def code_at(source: str) -> str:
    """`` (`the source line`)`` of a ``file:line`` string, or ``''``."""
    filename, _, line = source.rpartition(":")
    return _code(filename, int(line)) if line.isdigit() else ""


def user_code() -> str:
    """`` (`the source line`)`` of the user's frame, or ``''``."""
    f = user_frame()
    return "" if f is None else _code(f.f_code.co_filename, f.f_lineno)


def user_frame_of(tb):
    """``(frame, line number)`` of the innermost user frame of a traceback, or None."""
    found = None
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_SKIP):
            found = (tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return found


def user_source_of(tb) -> str:
    """``file:line (`code`)`` of the innermost user frame of a traceback."""
    found = user_frame_of(tb)
    if found is None:
        return "<unknown>"
    filename = found[0].f_code.co_filename
    return f"{filename}:{found[1]}{_code(filename, found[1])}"
