"""The collectives' implementations: over the process axis they call ``backends.mpi``.

A collective over any other axis name reaches an implementation only when no ``vmap`` of
that name was around it when it was traced (that ``vmap``'s batching rule replaces it):
the error names the unbound axis.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Primitive
from functorch_core.ir.tables import Table

from .. import mpi

COLLECTIVE_IMPLS: Table[Primitive, Callable] = Table("interpreter: collectives")


def _world(prim, axis_name, axis_size=None):
    if axis_name != mpi.WORLD:
        raise NameError(
            f"{prim}: unbound axis name {axis_name!r}: no vmap(..., axis_name={axis_name!r}) "
            f"encloses this collective, and the only axis bound outside vmap is the process "
            f"axis {mpi.WORLD!r}")
    w = mpi.world()
    if axis_size is not None and axis_size != w.size:
        raise ValueError(f"{prim} over {mpi.WORLD!r}: the graph was traced for a world of "
                         f"{axis_size} processes, this one has {w.size}")
    return w


def _all_reduce(x, *, op, axis_name):
    _world("all_reduce", axis_name)
    return mpi.all_reduce(np.asarray(x), op)


def _all_gather(x, *, axis_name, axis_size):
    _world("all_gather", axis_name, axis_size)
    return mpi.all_gather(np.asarray(x))


def _reduce_scatter(x, *, op, axis_name, axis_size):
    _world("reduce_scatter", axis_name, axis_size)
    return mpi.reduce_scatter(np.asarray(x), op)


def _axis_index(*, axis_name, axis_size):
    return np.int32(_world("axis_index", axis_name, axis_size).rank)


COLLECTIVE_IMPLS.register(P.all_reduce, _all_reduce)
COLLECTIVE_IMPLS.register(P.all_gather, _all_gather)
COLLECTIVE_IMPLS.register(P.reduce_scatter, _reduce_scatter)
COLLECTIVE_IMPLS.register(P.axis_index, _axis_index)
