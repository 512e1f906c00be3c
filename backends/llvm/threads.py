"""The cpu backend's threads: how many a big kernel, sort, conv, product or LAPACK batch
splits over (:data:`workers`, the caller's thread included) and the pool running the other
parts. Read ``threads.workers`` at the time of use: ``runtime.set_num_threads`` changes it.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


def _workers_from_env() -> int:
    value = os.environ.get("FUNCTORCH_CORE_NUM_THREADS", "").strip()
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"FUNCTORCH_CORE_NUM_THREADS must be a positive integer, got {value!r}")
    return int(value)


workers = _workers_from_env()
_lock = threading.Lock()
_state: dict = {}


def pool() -> ThreadPoolExecutor:
    """The pool of ``workers`` threads (started on first use)."""
    running = _state.get("pool")
    if running is None:
        with _lock:
            running = _state.get("pool")
            if running is None:
                running = _state["pool"] = ThreadPoolExecutor(workers,
                                                              thread_name_prefix="fc-cpu")
    return running


def set_workers(n: int):
    """Split over ``n`` threads from now on; the old pool finishes what it runs."""
    global workers
    with _lock:
        workers = n
        old = _state.pop("pool", None)
    if old is not None:
        old.shutdown(wait=False)


def _after_fork_in_child():
    """A forked child has only the forking thread: the pool's threads and any holder of
    the lock in the parent do not exist here, so start both afresh."""
    global _lock
    _lock = threading.Lock()
    _state.pop("pool", None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
