"""Eager dispatch: what runs a primitive on arrays, as the backends register it.

``ir`` cannot import the backends, so they register here instead of setting attributes
on the primitives: the interpreter its NumPy implementation of every catalogue
primitive (``register_host``), ``functorch_core.devices`` the evaluation of an equation
with a GPU array operand (``register_device``). The tracer's eager path and constant
folding ask ``host_impl``; a primitive made outside the catalogue brings its own
``impl``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .core import Primitive
from .tables import Table

HOST: Table[Primitive, Callable] = Table("eager host implementations")
# (prim, args, values, in_avals, out_avals, params) -> results, for device operands
DEVICE: Callable | None = None


def register_host(impls: Mapping[Primitive, Callable]) -> None:
    """Register the implementation of each primitive of ``impls`` on host arrays."""
    for prim, impl in impls.items():
        HOST.register(prim, impl)


def register_device(evaluate: Callable) -> None:
    """Register the evaluation of equations that have a device array operand."""
    global DEVICE
    if DEVICE is not None and DEVICE is not evaluate:
        raise ValueError("an eager device evaluation is registered already")
    DEVICE = evaluate


def host_impl(prim: Primitive) -> Callable | None:
    """The implementation of ``prim`` on host arrays, or None."""
    return prim.impl or HOST.get(prim)
