"""The native CPU backend: partition -> LLVM IR (llvmlite) -> MCJIT -> run.

``CpuBackend.compile(graph)`` returns ``run(list of arrays) -> list of arrays``.
Planning (partition, views, buffer plan) is ``backends.planning``, shared with the
GPU backend; this package renders and runs the steps. Primitives that do not lower
natively run through the interpreter for their own equation only;
``lowering.FALLBACK`` lists them with the reason.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401 (its fork handlers: see below)
import os
import sys
import threading

# A child forked while another thread is inside LLVM, or importing this backend, would wait
# forever on a lock only that thread could release (llvmlite's lock around every call into
# LLVM; the module lock of the import). So os.fork() waits for both: the first compile
# imports under ``_importing``, and the fork handlers take it, then llvmlite's lock, and
# give them back on both sides. (The thread pool's module is imported above so that its
# own fork handlers are not registered by an import finishing while a fork waits.)
_importing = threading.RLock()
_held = []


def _llvm_lock():
    """llvmlite's lock (an attribute private to llvmlite: None where it is not found)."""
    lib = getattr(sys.modules.get("llvmlite.binding.ffi"), "lib", None)
    return getattr(getattr(lib, "_lock", None), "_lock", None)


def _before_fork():
    _importing.acquire()
    lock = _llvm_lock()
    if lock is not None:
        lock.acquire()
        _held.append(lock)


def _after_fork():
    while _held:
        _held.pop().release()
    _importing.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork,
                        after_in_child=_after_fork)


class CpuBackend:
    name = "cpu"

    @staticmethod
    def compile(graph):
        with _importing:
            from .runtime import compile_graph
        return compile_graph(graph)

    @staticmethod
    def clear_cache():
        with _importing:            # not a module another thread is half-way importing
            runtime = sys.modules.get(__name__ + ".runtime")
        if runtime is not None:     # nothing compiled yet: do not load LLVM to clear nothing
            runtime.clear_cache()
