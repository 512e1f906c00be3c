"""The trusted call paths of an :class:`~.runtime.Executable`: its ``__call__`` on local
names, for callers that guarantee arguments of the right kind (jit's fast path)."""

from __future__ import annotations

import numpy as np

from . import threads


def trusted_calls(exe):
    """(``call(args)``, ``one``) for an executable's caller that guarantees ``n_inputs``
    C-contiguous ndarrays of the input dtypes (jit's fast path keys on exactly that):
    ``call`` is ``exe.__call__`` without the argument checks, on local names (results that
    need copies take ``__call__`` itself); ``one`` is ``call(array) -> array`` for a graph of
    one input and one result run by the native entry, else None."""
    if exe._plain_outputs is None or exe.checks:
        return exe.__call__, None
    one = None
    if exe.entry is not None and exe.n_inputs == 1 and len(exe._plain_outputs) == 1 \
            and [s for s, *_ in exe.fresh] == exe._plain_outputs:
        one = _one_call(exe)
    free, new_arena, entry, steps = exe._free, exe.new_arena, exe.entry, exe.steps
    fresh, outputs, n = exe.fresh, exe._plain_outputs, exe.n_inputs
    nones, results, keep, empty = exe._no_inputs, exe._results, threads.workers, np.empty

    def call(args):
        try:
            bufs = free.pop()
        except IndexError:
            bufs = new_arena()
        try:
            bufs[:n] = args
            for s, shape, dtype in fresh:
                bufs[s] = empty(shape, dtype)
            if entry is not None:
                entry(*bufs)
            else:
                for step in steps:
                    step(bufs)
            return [bufs[s] for s in outputs]
        finally:
            bufs[:n] = nones
            for s in results:
                bufs[s] = None
            if len(free) <= keep:
                free.append(bufs)
    return call, one


def _one_call(exe):
    """The native entry on one array, its result allocated per call. Without
    intermediates every call builds its own argument tuple (nothing shared between
    threads); with them, a call takes an arena from the free list as ``call`` does."""
    entry, empty, free, new_arena = exe.entry, np.empty, exe._free, exe.new_arena
    (out, shape, dtype), = exe.fresh
    bufs = exe.template
    if not exe.arena_offsets and out == len(bufs) - 1:
        mid = tuple(bufs[1:-1])
        if not mid:
            def one(a):
                r = empty(shape, dtype)
                entry(a, r)
                return r
        else:
            def one(a):
                r = empty(shape, dtype)
                entry(a, *mid, r)
                return r
        return one
    keep = threads.workers

    def one_arena(a):
        try:
            bufs = free.pop()
        except IndexError:
            bufs = new_arena()
        r = bufs[out] = empty(shape, dtype)
        bufs[0] = a
        entry(*bufs)
        bufs[0] = bufs[out] = None
        if len(free) <= keep:
            free.append(bufs)
        return r
    return one_arena
