"""Build each cache entry once, however many threads ask for it at the same time.

``Once().get(cache, key, build)`` returns ``cache[key]`` when present; otherwise the
first thread to ask runs ``build()`` while the others asking for the same key wait for
its value (or its exception); different keys build in parallel. After ``os.fork`` the
child starts with every ``Once`` reset (a builder running in another thread of the
parent does not exist in the child).
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import Future

_ALL: weakref.WeakSet = weakref.WeakSet()


class Once:
    """Per-key single-flight building for a dict-like cache."""

    def __init__(self):
        self._lock = threading.Lock()
        self._building: dict = {}      # key -> (Future, thread id of the builder)
        _ALL.add(self)

    def get(self, cache, key, build, store=None):
        """``cache[key]``, built by ``build()`` on a miss and then saved by
        ``store(key, value)`` (default ``cache[key] = value``), called under this object's
        lock; a ``store`` returning False kept nothing (a value private to its builder),
        and the threads that waited build their own. A thread asking again for a key it
        is itself building (a recursive call) builds it again instead of waiting."""
        with self._lock:
            value = cache.get(key)
            if value is not None:
                return value
            pending = self._building.get(key)
            me = threading.get_ident()
            if pending is None:
                future = Future()
                self._building[key] = (future, me)
            elif pending[1] != me:
                future = None
            else:
                return build()
        if future is None:
            value, shared = pending[0].result()
            return value if shared else build()
        try:
            value = build()
        except BaseException as e:
            with self._lock:
                self._building.pop(key, None)
            future.set_exception(e)
            raise
        with self._lock:
            if store is None:
                cache[key] = value
                shared = True
            else:
                shared = store(key, value) is not False
            self._building.pop(key, None)
        future.set_result((value, shared))
        return value

    def _reset(self):
        self._lock = threading.Lock()
        self._building = {}


def _after_fork_in_child():
    for once in list(_ALL):
        once._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
