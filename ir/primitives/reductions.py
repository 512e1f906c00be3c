"""Reductions, arg-reductions, cumulative scans, dot_general and sort.
"""

from __future__ import annotations

from ..catalogue import fail as _fail
from ..catalogue import kinds_check as _kinds_check
from ..catalogue import register as _register
from ..core import AbstractArray
from ..specs import NUMERIC, REAL
from .checks import check_axes, check_precision, same_dtype

__all__ = [
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin", "cumsum",
    "cumprod", "cummax", "cummin", "dot_general", "sort", "REDUCTIONS"
]


# --- reductions and scans --------------------------------------------------

def _reduce(name, kinds):
    def rule(x, *, axes):
        _kinds_check(name, [x], kinds)
        check_axes(name, axes, x.ndim)
        return [x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))]
    return _register(name, rule, "reduction")


reduce_sum = _reduce("reduce_sum", NUMERIC)
reduce_prod = _reduce("reduce_prod", NUMERIC)
reduce_max = _reduce("reduce_max", NUMERIC)
reduce_min = _reduce("reduce_min", NUMERIC)
REDUCTIONS = [reduce_sum, reduce_prod, reduce_max, reduce_min]


def _arg_reduce(name):
    def rule(x, *, axis, index_dtype):
        _kinds_check(name, [x], REAL)
        check_axes(name, (axis,), x.ndim)
        if x.shape[axis] == 0:
            _fail(f"{name}: attempt to get {name} of an empty sequence (axis {axis} of {x.shape})")
        return [AbstractArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)]
    return _register(name, rule, "arg_reduction")


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


def _cumulative(name, kinds):
    def rule(x, *, axis, reverse):
        _kinds_check(name, [x], kinds)
        check_axes(name, (axis,), x.ndim)
        return [x.strong()]
    return _register(name, rule, "cumulative")


cumsum = _cumulative("cumsum", NUMERIC)
cumprod = _cumulative("cumprod", NUMERIC)
cummax = _cumulative("cummax", REAL)
cummin = _cumulative("cummin", REAL)


# --- contraction and sorting ------------------------------------------------

def _dot_general_rule(lhs, rhs, *, dimension_numbers, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dt = same_dtype("dot_general", [lhs, rhs])
    if precision is not None:
        check_precision("dot_general", dt, precision)
    if len(lc) != len(rc) or len(lb) != len(rb):
        _fail(f"dot_general: dimension_numbers {dimension_numbers} are unbalanced")
    check_axes("dot_general", tuple(lc) + tuple(lb), lhs.ndim)
    check_axes("dot_general", tuple(rc) + tuple(rb), rhs.ndim)
    for a, b in zip(tuple(lc) + tuple(lb), tuple(rc) + tuple(rb), strict=True):
        if lhs.shape[a] != rhs.shape[b]:
            _fail(f"dot_general: shapes {lhs.shape} and {rhs.shape} do not match on "
                  f"dimension {a} ({lhs.shape[a]}) and {b} ({rhs.shape[b]})")
    lfree = [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
    rfree = [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    shape = [lhs.shape[i] for i in lb] + lfree + rfree
    return [AbstractArray(shape, dt, lhs.weak_type and rhs.weak_type)]


dot_general = _register("dot_general", _dot_general_rule, "contraction")


def _sort_rule(*operands, dimension, num_keys):
    if not operands or not 1 <= num_keys <= len(operands):
        _fail(f"sort: num_keys {num_keys} does not fit {len(operands)} operands")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        _fail("sort: operand shapes " + ", ".join(str(o.shape) for o in operands) + " differ")
    check_axes("sort", (dimension,), len(shape))
    _kinds_check("sort", operands[:num_keys], REAL)
    return [o.strong() for o in operands]


sort = _register("sort", _sort_rule, "sort", multiple_results=True)
