"""Random bits, mutation (present only before functionalize), calls and user-defined
differentiation rules.
"""

from __future__ import annotations

from .. import dtypes
from ..catalogue import fail as _fail
from ..catalogue import register as _register
from ..core import AbstractArray
from ..indexing import indexed_shape
from .checks import elementwise_shape

__all__ = [
    "threefry2x32", "setitem", "call", "custom_jvp_call", "custom_vjp_call", "custom_lin"
]


# --- random bits ---------------------------------------------------------------

def _threefry2x32_rule(k0, k1, x0, x1):
    avals = [k0, k1, x0, x1]
    for name, a in zip(("k0", "k1", "x0", "x1"), avals, strict=True):
        if a.dtype != dtypes.uint32:
            raise TypeError(f"threefry2x32: operand {name} must be uint32, got {a.dtype} "
                            f"(shape {a.shape})")
    shape = elementwise_shape("threefry2x32", avals)
    return [AbstractArray(shape, dtypes.uint32), AbstractArray(shape, dtypes.uint32)]


# threefry2x32(k0, k1, x0, x1) -> (y0, y1): the Threefry-2x32 block cipher (20 rounds),
# elementwise: key (k0, k1) encrypts the counter (x0, x1). Equal shapes or rank-0 operands.
threefry2x32 = _register("threefry2x32", _threefry2x32_rule, "random", multiple_results=True)
# --- mutation (present only before functionalize) --------------------------

def _setitem_rule(x, value, *index_operands, indexer):
    target = indexed_shape(x.shape, indexer, [a.shape for a in index_operands])
    if not _broadcastable(value.shape, target):
        _fail(f"setitem: could not broadcast value of shape {value.shape} into "
              f"indexed result of shape {target}")
    return []


def _broadcastable(src, dst):
    if len(src) > len(dst):
        src = src[len(src) - len(dst):] if all(d == 1 for d in src[:len(src) - len(dst)]) else None
        if src is None:
            return False
    return all(s in (1, d) for s, d in zip(src[::-1], dst[::-1], strict=False))


setitem = _register("setitem", _setitem_rule, "mutation", mutates=True, multiple_results=True)


# --- structure --------------------------------------------------------------

def _call_rule(*avals, graph, name):
    want = graph.in_avals
    if len(avals) != len(want) or any(a.shape != w.shape or a.dtype != w.dtype
                                      for a, w in zip(avals, want, strict=True)):
        _fail(f"call {name}: arguments {[str(a) for a in avals]} do not match the graph's "
              f"inputs {[str(w) for w in want]}")
    return graph.out_avals


call = _register("call", _call_rule, "call", multiple_results=True)


# --- user-defined differentiation rules (functorch_core.transforms.custom) --------

def _custom_call_rule(*avals, graph, name, **rules):
    return _call_rule(*avals, graph=graph, name=name)


def _custom_lin_rule(*avals, n_res, bwd, out_avals):
    return list(out_avals)


# custom_jvp_call(*args, graph, jvp, name) / custom_vjp_call(*args, graph, fwd, bwd, name):
# run ``graph``; the differentiation passes use the user's rules instead of its equations.
custom_jvp_call = _register("custom_jvp_call", _custom_call_rule, "custom",
                            multiple_results=True)
custom_vjp_call = _register("custom_vjp_call", _custom_call_rule, "custom",
                            multiple_results=True)
# custom_lin(*residuals, *tangents, n_res, bwd, out_avals): the tangent of a custom_vjp
# function; only its transpose (the user's bwd) is defined.
custom_lin = _register("custom_lin", _custom_lin_rule, "custom", multiple_results=True)
