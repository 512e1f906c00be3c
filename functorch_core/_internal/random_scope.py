"""How a draw from the global random generator becomes a traced value under ``vmap``.

Every transform (``jit``, ``grad``/``vjp``/``jvp``, ``vmap``, custom rules) traces its
function inside a :class:`Scope` (a ``contextvars`` value). A draw there
(``random.next_key()``) adds a fresh ``uint32[2]`` input to the traced graph instead of
freezing a key into it, and the transform lists it as a captured value ``FRESH_KEY``
that it fills with a fresh key on every call (``fill``): the compiled or cached graph
is reused, the numbers are new. ``vmap`` fills it with one key for
``randomness='same'`` and a batch of split keys (batched along the vmap axis) for
``'different'``; under ``'error'`` the draw raises. The fresh key is itself drawn with
``next_key()``: eagerly from the global generator, or, when the transform runs inside
another one, as an input of the enclosing transform's graph.
"""

from __future__ import annotations

import contextvars

import numpy as np

from functorch_core.ir import AbstractArray
from functorch_core.ir.trace import current_trace

_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    "functorch_core_random_scope", default=None)
KEY_AVAL = AbstractArray((2,), np.dtype(np.uint32))


class Scope:
    """The transform being traced: its name, mode (``'fresh'``, or vmap's ``randomness``)
    and the trace around it."""

    def __init__(self, call: str, mode: str):
        self.call, self.mode = call, mode
        self.outer = current_trace()     # the per-example trace is a child of this one
        self.trace = None                # the per-example trace, once a draw finds it
        self.n_keys = 0
        self.in_dims = None              # vmap: the batch axis (or None) of each argument leaf
        self.enclosing = None            # the scope of the transform this one runs in

    def example_trace(self, trace):
        """The per-example trace ``trace`` is in (itself or an ancestor), or None."""
        while trace is not None and trace.parent is not self.outer:
            trace = trace.parent
        return trace

    def new_key(self, trace):
        if trace is not self.trace:      # a re-trace (the numpy.random guard) starts over
            self.trace, self.n_keys = trace, 0
        self.n_keys += 1
        return trace.new_input(KEY_AVAL, "key")

    def __enter__(self):
        self.enclosing = _SCOPE.get()
        self._token = _SCOPE.set(self)
        return self

    def __exit__(self, *exc):
        _SCOPE.reset(self._token)


def current_scope() -> Scope | None:
    return _SCOPE.get()


class FreshKey:
    """Placeholder for a key input that ``vmap`` fills with a fresh key on every call."""

    __slots__ = ()

    def __repr__(self):
        return "FreshKey()"


FRESH_KEY = FreshKey()


def fill(captured, make_key=None) -> list:
    """``captured`` with each FRESH_KEY replaced by a fresh key (``random.next_key()``)."""
    if not any(c is FRESH_KEY for c in captured):
        return list(captured)
    if make_key is None:
        from ..random import next_key as make_key
    return [make_key() if c is FRESH_KEY else c for c in captured]
