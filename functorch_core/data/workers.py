"""What the DataLoader's worker processes share: ``get_worker_info``, seeds, waiting, stopping."""

from __future__ import annotations

import contextlib
import os
import queue
import random
import time

import numpy as np

__all__ = ["DataLoaderWorkerError", "WorkerInfo", "get_worker_info"]


class DataLoaderWorkerError(RuntimeError):
    """A worker process raised; the message holds the worker's traceback."""


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process.

    Attributes: ``id``, ``num_workers``, ``seed`` (this worker's seed for the
    epoch), ``rank``, ``world_size``, ``dataset`` (the worker's copy of the
    pipeline, or of the map-style dataset).
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's ``WorkerInfo``, or ``None`` in the main process.

    Example::

        >>> get_worker_info() is None   # in the main process
        True
    """
    return _worker_info


def enter_worker(seed: int, **info) -> WorkerInfo:
    """In a worker: seed ``random`` and ``numpy.random`` and publish its ``WorkerInfo``."""
    global _worker_info
    random.seed(seed)
    np.random.seed(seed % 2**32)
    _worker_info = WorkerInfo(seed=seed, **info)
    return _worker_info


def seed_of(*words) -> int:
    """A 63-bit seed mixed from non-negative ints (the same in every process)."""
    return int(np.random.SeedSequence([int(w) for w in words]).generate_state(1, np.uint64)[0]
               >> np.uint64(1))


def main_is_gone(parent: int) -> bool:
    return os.getppid() != parent


def receive(results, proc, timeout: float, who: str, accept):
    """The next message on ``results`` that ``accept``s, raising if ``proc`` dies or it times out.

    ``who`` names the worker in the errors, e.g. ``"worker 1 (rank 0)"``.
    """
    start = time.monotonic()
    while True:
        try:
            msg = results.get(timeout=0.1)
        except queue.Empty:
            if not proc.is_alive():
                try:
                    msg = results.get(timeout=0.5)
                except queue.Empty:
                    raise DataLoaderWorkerError(
                        f"DataLoader {who}, pid {proc.pid}, exited unexpectedly with exit code "
                        f"{proc.exitcode}") from None
            elif timeout and time.monotonic() - start > timeout:
                raise DataLoaderWorkerError(
                    f"DataLoader timed out after {timeout} s waiting for {who}, pid "
                    f"{proc.pid}") from None
            else:
                continue
        if accept(msg):
            return msg


def stop(procs, commands, others) -> None:
    """Ask the worker processes to exit (``None`` on each command queue), then make them."""
    for q in commands:
        with contextlib.suppress(Exception):
            q.put(None)
    deadline = time.monotonic() + 0.5
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.terminate()
            p.join(1.0)
    for q in [*commands, *others]:
        q.close()
        q.cancel_join_thread()


def next_command(commands, parent: int):
    """The next command for a worker; ``None`` when it should exit (asked to, or orphaned)."""
    while True:
        try:
            return commands.get(timeout=1.0)
        except queue.Empty:
            if main_is_gone(parent):
                return None


class Epoch:
    """What both kinds of epoch iterator share: counting, the progress bar, closing.

    A subclass sets ``loader``, ``count``, ``bar``, ``finished`` and ``pool``.
    """

    def __iter__(self):
        return self

    def _delivered(self, item):
        self.count += 1
        if self.bar is not None:
            self.bar.update(1)
        return item

    def close(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.bar is not None:
            self.bar.close()
        loader, pool = self.loader, self.pool
        if pool is not None:
            if loader.persistent_workers:
                pool.cancel()
            else:
                pool.shutdown()
                if loader._pool is pool:
                    loader._pool = None
        if loader._live is self:
            loader._live = None  # the state after a finished epoch is the start of the next one

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()
