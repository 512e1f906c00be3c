"""Refuse ``numpy.random`` calls made while tracing.

A draw from one of NumPy's generators inside a traced function runs once, at trace
time: its numbers become a constant of the graph, the same noise on every call and in
every row of a ``vmap``. ``trace_call`` therefore watches the outermost trace:

1. Trigger (always on; microseconds per trace, nothing per call): before tracing,
   snapshot the state of the generators the function can reach: NumPy's global
   ``RandomState`` (``np.random.randn``, ``np.random.normal``...), and every
   ``Generator``, ``RandomState`` or ``BitGenerator`` in the function's closure, defaults
   and the globals its code names, following the functions found there a few levels
   deep (helpers), and among the static arguments. After tracing, compare.
2. Confirmation (only when a state moved): trace again holding those generators' locks.
   Every draw takes its bit generator's lock, a reentrant ``RLock``: this thread's draws
   go through, other threads' draws wait for the trace to end. A state that moves during
   this second trace was moved by the traced function, which raises; one that moved only
   during the first came from another thread (a data loader drawing at the same time),
   and the trace stands. Locks are taken in one global order (by id), so two threads
   confirming at once cannot deadlock on them.

A profile hook (``sys.setprofile``) would see every call, but NumPy's generator methods
are Cython functions that emit no profile events in CPython 3.11, and profiling slows
every trace ~2.5x.

Not seen: a generator reachable only through an object's attributes (``self.rng``) or
another module's objects; a generator created and used inside the function.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from functorch_core.ir import TracerError

_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
_DEPTH = 3


def _bit_generator(g):
    if isinstance(g, np.random.Generator):
        return g.bit_generator
    if isinstance(g, np.random.RandomState):
        return g._bit_generator
    return g


def _state(g):
    """A copy of ``g``'s state; a RandomState's includes its cached second Gaussian."""
    if isinstance(g, np.random.RandomState):
        return _copy(g.get_state(legacy=False))
    return _copy(_bit_generator(g).state)


def _copy(state):
    if isinstance(state, dict):
        return {k: _copy(v) for k, v in state.items()}
    return state.copy() if isinstance(state, np.ndarray) else state


def _global_state():
    return np.random.mtrand._rand


def _reachable(fn, static_values) -> list:
    """(generator, how the user names it) for those ``fn`` and its helpers reach directly."""
    glob_rs = _global_state()
    found = {id(glob_rs): (glob_rs, "numpy.random's global RandomState (np.random.randn, "
                                    "np.random.normal...)")}
    seen: set = set()

    def visit(obj, depth, name):
        if isinstance(obj, _GENERATORS):
            found.setdefault(id(obj), (obj, f"the {type(obj).__name__} {name}"))
            return
        if depth > _DEPTH or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, types.MethodType):
            visit(obj.__func__, depth, name)
            visit(obj.__self__, depth + 1, name)
            return
        if isinstance(obj, functools.partial):
            visit(obj.func, depth, name)
            for v in (*obj.args, *obj.keywords.values()):
                visit(v, depth + 1, name)
            return
        attrs = getattr(obj, "__dict__", None)
        if type(attrs) is dict and "__wrapped__" in attrs:    # functools.wraps, jit
            visit(attrs["__wrapped__"], depth, name)
        if not isinstance(obj, types.FunctionType):
            return
        code = obj.__code__
        for var, cell in zip(code.co_freevars, obj.__closure__ or (), strict=True):
            try:
                visit(cell.cell_contents, depth + 1, f"`{var}` (used by {code.co_name})")
            except ValueError:       # an empty cell
                pass
        for value in obj.__defaults__ or ():
            visit(value, depth + 1, f"(a default argument of {code.co_name})")
        glob = obj.__globals__
        for var in _names(code):
            if var in glob:
                visit(glob[var], depth + 1, f"`{var}` (used by {code.co_name})")

    visit(fn, 0, "")
    for v in static_values:
        visit(v, _DEPTH, "(a static argument)")
    return list(found.values())


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k])
                                                                    for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


class Watch:
    """Snapshots of the reachable generators' states, taken before a trace."""

    def __init__(self, fn, static_values=()):
        reach = _reachable(fn, static_values)
        self.gens = [g for g, _ in reach]
        self.names = [name for _, name in reach]
        self.states = [_state(g) for g in self.gens]

    def moved(self) -> list[str]:
        """The names of the generators whose state differs from the snapshot."""
        return [name for g, s, name in zip(self.gens, self.states, self.names, strict=True)
                if not _same(_state(g), s)]

    def confirm(self, trace_again, what):
        """Run ``trace_again()`` holding the generators' locks; raise if it moved one."""
        locks = list({id(b.lock): b.lock for b in map(_bit_generator, self.gens)}.items())
        locks.sort(key=lambda kv: kv[0])
        for _, lock in locks:
            lock.acquire()
        try:
            self.states = [_state(g) for g in self.gens]
            result = trace_again()
            moved = self.moved()
        finally:
            for _, lock in reversed(locks):
                lock.release()
        if moved:
            raise TracerError(
                f"{what} draws from {moved[0]} while it is being traced. The draw runs once, "
                "at trace time, and its numbers would be frozen into the graph: the same "
                "values on every call and in every vmap row. Draw the random numbers outside "
                "the function and pass them in as an argument.")
        return result
