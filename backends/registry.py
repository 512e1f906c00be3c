"""The backends by name; ``compile(graph)`` returns ``run(list of arrays) -> list of arrays``.

Importing it loads the interpreter, which registers every primitive's eager implementation;
:func:`evaluate` applies one primitive to host arrays with it.
"""

from __future__ import annotations

import os

import numpy as np
from functorch_core.ir import Lit

from .cuda import CudaBackend
from .interpreter import IMPLS, run_graph
from .llvm import CpuBackend

DEFAULT = os.environ.get("FUNCTORCH_CORE_BACKEND", "cpu")


class InterpreterBackend:
    name = "interpreter"

    @staticmethod
    def compile(graph):
        constant = [isinstance(o, Lit) for o in graph.outputs]

        def run(args):
            outs = run_graph(graph, args)
            return [_own(o, args, c) for o, c in zip(outs, constant, strict=True)]
        return run


def _own(out, args, constant=False):
    """A result the caller may keep and write: never a view of an input or a constant.

    A constant output is a graph literal, which may be the user's closed-over array.
    """
    if (constant or out.base is not None or not out.flags.writeable
            or any(out is a for a in args)):
        return np.array(out, copy=True)
    return out


_BACKENDS = {"interpreter": InterpreterBackend, "cpu": CpuBackend, "cuda": CudaBackend}


def get(name=None):
    name = DEFAULT if name is None else name
    try:
        backend = _BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; available: {sorted(_BACKENDS)}") from None
    check = getattr(backend, "check", None)
    if check is not None:       # a backend that needs hardware says what is missing now
        check()
    return backend


def evaluate(prim, *args, **params):
    """``prim`` applied to host arrays by the reference interpreter, eagerly: no trace, no
    device dispatch (for a value the API layer needs concretely, as a fresh random key)."""
    return IMPLS[prim](*args, **params)


def clear_caches():
    """Forget what every backend compiled (executables in use stay valid)."""
    for backend in _BACKENDS.values():
        clear = getattr(backend, "clear_cache", None)
        if clear is not None:
            clear()


def default_backend() -> str:
    """The backend ``jit`` uses when none is named: ``'cpu'``, or the environment variable
    ``FUNCTORCH_CORE_BACKEND`` when it is set.

    Example::

        >>> fc.default_backend()
        'cpu'
    """
    return DEFAULT
