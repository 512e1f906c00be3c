"""Eager evaluation of one equation whose operands are on the GPU.

The interpreter computes with ``np.`` on host arrays; a CuPy array refuses that. So an
equation evaluated eagerly (outside ``jit``: a function called on device arrays, and the
transforms' eager paths, ``grad``/``vmap``/``jvp``/``jacrev`` of an unjitted function)
runs through the cuda backend instead: the equation alone is compiled as a graph (cached
by primitive, input types and parameters) and run on the device, its results staying
there; a ``call`` equation (a jitted function inside an eager transform) compiles its
whole graph, fused as under ``jit``. ``ir.trace`` calls :func:`evaluate` when an operand
is a device array.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from functorch_core.ir import primitives as P
from functorch_core.ir.core import Eqn, Graph, Var, on_device

from . import CudaBackend

CACHE_SIZE = 512
_CACHE: OrderedDict = OrderedDict()     # (prim, input avals, params) -> compiled run


def _key(prim, in_avals, params):
    try:
        key = (prim, tuple(in_avals), tuple(sorted(params.items())))
        hash(key)
        return key
    except TypeError:       # an unhashable parameter: compiled for this call only
        return None


def _compile(prim, in_avals, out_avals, params):
    if prim is P.call:      # a jitted function inside an eager transform: its whole graph
        return CudaBackend.compile(params["graph"])
    inputs = [Var(a) for a in in_avals]
    outputs = [Var(a) for a in out_avals]
    graph = Graph(inputs, [Eqn(prim, tuple(inputs), tuple(outputs), params)], outputs)
    return CudaBackend.compile(graph)


def evaluate(prim, args, values, in_avals, out_avals, params):
    """``prim.bind(*args, **params)`` on the device; ``values`` are the operands: device
    arrays, and host values (scalars, graph constants, values a transform computed from
    constants on the host), which are copied to the device. Arrays of two devices in one
    user call are refused where the call enters (``jit``'s placement check), not here."""
    key = _key(prim, in_avals, params)
    run = _CACHE.get(key) if key is not None else None
    if run is None:
        run = _compile(prim, in_avals, out_avals, params)
        if key is not None:
            _CACHE[key] = run
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
    ins = [v if on_device(v) else np.asarray(v, a.dtype) for v, a in
           zip(values, in_avals, strict=True)]
    outs = run(ins)
    return outs if prim.multiple_results else outs[0]


def clear():
    _CACHE.clear()
