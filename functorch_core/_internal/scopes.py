"""How many scoped settings (``autocast`` and ``default_matmul_precision`` blocks) are open
in this process, in any thread. ``jit``'s fast path is keyed by its arguments only, so it
steps aside while any is open: one list read per call instead of a context variable read
per setting."""

from __future__ import annotations

import threading

OPEN = [0]
_lock = threading.Lock()


def opened() -> None:
    with _lock:
        OPEN[0] += 1


def closed() -> None:
    with _lock:
        OPEN[0] -= 1
