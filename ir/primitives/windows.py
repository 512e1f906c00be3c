"""Convolution and windowed reductions (lax's window arithmetic).
"""

from __future__ import annotations

from ..catalogue import fail as _fail
from ..catalogue import kinds_check as _kinds_check
from ..catalogue import register as _register
from ..core import AbstractArray
from ..specs import NUMERIC, REAL
from .checks import check_precision, same_dtype

__all__ = [
    "conv_general_dilated", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
    "select_and_gather_add", "select_and_scatter_add", "WINDOWS"
]


# --- convolution and windowed reductions ------------------------------------

def _dilate(d, k):
    return 0 if d == 0 else 1 + k * (d - 1)


def _window_out(name, sizes, windows, strides, padding, base_dil, win_dil, what):
    """Output extents of windows sliding over ``sizes`` (lax's arithmetic)."""
    out = []
    for i, (d, w, s, (lo, hi), bd, wd) in enumerate(zip(sizes, windows, strides, padding,
                                                        base_dil, win_dil, strict=True)):
        if s < 1 or bd < 1 or wd < 1 or w < 1:
            _fail(f"{name}: strides {strides}, dilations {base_dil}/{win_dil} and {what} "
                  f"{windows} must be positive")
        padded, span = _dilate(d, bd) + lo + hi, _dilate(w, wd)
        if padded < span:
            _fail(f"{name}: {what} {tuple(windows)} (dilated extent {span} along "
                  f"window dimension {i}) is larger than the padded input {tuple(sizes)} "
                  f"(extent {padded} after padding {tuple(padding)})")
        out.append((padded - span) // s + 1)
    return out


def _window_params(name, n, strides, padding, lhs_dil, rhs_dil):
    for what, v in (("strides", strides), ("padding", padding), ("lhs dilation", lhs_dil),
                    ("rhs dilation", rhs_dil)):
        if len(v) != n:
            _fail(f"{name}: {what} {tuple(v)} should have {n} entries, one per spatial "
                  "dimension")


def _conv_rule(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision=None):
    """lax.conv_general_dilated; ``dimension_numbers`` = (lhs, rhs, out) specs of axis
    numbers: (batch, feature, spatial...), (out feature, in feature, spatial...),
    (batch, feature, spatial...)."""
    name = "conv_general_dilated"
    dt = same_dtype(name, [lhs, rhs])
    if precision is not None:
        check_precision(name, dt, precision)
    _kinds_check(name, [lhs], "iufc")
    lspec, rspec, ospec = dimension_numbers
    nd = lhs.ndim
    if nd < 2 or rhs.ndim != nd:
        _fail(f"{name}: lhs {lhs.shape} and rhs {rhs.shape} need the same rank, at least 2")
    for what, spec in (("lhs", lspec), ("rhs", rspec), ("out", ospec)):
        if sorted(spec) != list(range(nd)):
            _fail(f"{name}: dimension_numbers {what} spec {tuple(spec)} is not a permutation "
                  f"of range({nd}) (lhs {lhs.shape}, rhs {rhs.shape})")
    G, B = feature_group_count, batch_group_count
    if G < 1 or B < 1 or (G > 1 and B > 1):
        _fail(f"{name}: feature_group_count {G} and batch_group_count {B} must be positive "
              "and at most one of them above 1")
    n, c = lhs.shape[lspec[0]], lhs.shape[lspec[1]]
    o, i = rhs.shape[rspec[0]], rhs.shape[rspec[1]]
    if c % G or c // G != i:
        _fail(f"{name}: lhs feature dimension {c} (lhs {lhs.shape}) must equal rhs input "
              f"feature dimension {i} (rhs {rhs.shape}) times feature_group_count {G}")
    if o % G or o % B:
        _fail(f"{name}: rhs output feature dimension {o} (rhs {rhs.shape}) is not divisible "
              f"by feature_group_count {G} / batch_group_count {B}")
    if n % B:
        _fail(f"{name}: lhs batch dimension {n} (lhs {lhs.shape}) is not divisible by "
              f"batch_group_count {B}")
    _window_params(name, nd - 2, window_strides, padding, lhs_dilation, rhs_dilation)
    spatial = _window_out(name, [lhs.shape[a] for a in lspec[2:]],
                          [rhs.shape[a] for a in rspec[2:]], window_strides, padding,
                          lhs_dilation, rhs_dilation, "kernel (rhs) spatial shape")
    shape = [0] * nd
    for a, d in zip(ospec, [n // B, o, *spatial], strict=True):
        shape[a] = d
    return [AbstractArray(shape, dt, lhs.weak_type and rhs.weak_type)]


conv_general_dilated = _register("conv_general_dilated", _conv_rule, "conv")


def _window_rule(name, kinds):
    def rule(x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        _kinds_check(name, [x], kinds)
        if len(window_dimensions) != x.ndim:
            _fail(f"{name}: window_dimensions {tuple(window_dimensions)} should have one "
                  f"entry per dimension of the operand {x.shape}")
        _window_params(name, x.ndim, window_strides, padding, base_dilation, window_dilation)
        if any(lo < 0 or hi < 0 for lo, hi in padding):
            _fail(f"{name}: padding {tuple(padding)} must not be negative")
        out = _window_out(name, x.shape, window_dimensions, window_strides, padding,
                          base_dilation, window_dilation, "window_dimensions")
        return [x.update(shape=out)]
    return rule


def _check_select(name, select):
    if select not in ("max", "min"):
        _fail(f"{name}: select must be 'max' or 'min', got {select!r}")


reduce_window_sum = _register("reduce_window_sum", _window_rule("reduce_window_sum", "iufc"),
                              "window")
reduce_window_max = _register("reduce_window_max", _window_rule("reduce_window_max", REAL),
                              "window")
reduce_window_min = _register("reduce_window_min", _window_rule("reduce_window_min", REAL),
                              "window")


def _select_gather_rule(t, x, *, select, **window):
    """select_and_gather_add(t, x): for each window of ``x``, ``t`` at the position of its
    first maximum (``select='max'``) or minimum; linear in ``t``."""
    if t.shape != x.shape:
        _fail(f"select_and_gather_add: tangent {t.shape} and operand {x.shape} differ")
    _kinds_check("select_and_gather_add", [x], REAL)
    _check_select("select_and_gather_add", select)
    out = _window_rule("select_and_gather_add", NUMERIC)(x, **window)[0]
    return [t.update(shape=out.shape)]


def _select_scatter_rule(ct, x, *, select, **window):
    """select_and_scatter_add(ct, x): the transpose of select_and_gather_add in ``t``:
    each window's ``ct`` added at the position its selection picked; shape of ``x``."""
    out = _window_rule("select_and_scatter_add", NUMERIC)(x, **window)[0]
    if ct.shape != out.shape:
        _fail(f"select_and_scatter_add: cotangent {ct.shape} should have the window output "
              f"shape {out.shape} of operand {x.shape}")
    _kinds_check("select_and_scatter_add", [x], REAL)
    _check_select("select_and_scatter_add", select)
    return [ct.update(shape=x.shape).strong()]


select_and_gather_add = _register("select_and_gather_add", _select_gather_rule, "window")
select_and_scatter_add = _register("select_and_scatter_add", _select_scatter_rule, "window")
WINDOWS = [reduce_window_sum, reduce_window_max, reduce_window_min, select_and_gather_add,
           select_and_scatter_add]
