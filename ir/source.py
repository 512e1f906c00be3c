"""Find the user's file:line for an equation, skipping this package's frames."""

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
