"""The primitive catalogue: a small, closed, lax-like set with shape/dtype rules.

Families make registration one line: every elementwise op shares one rule,
every reduction another. ``ALL`` lists the whole catalogue; tests walk it to
make sure every transform and backend covers every primitive.
"""

from __future__ import annotations

import builtins

import numpy as np

from . import dtypes
from .catalogue import ALL, complex_of
from .catalogue import fail as _fail
from .catalogue import kinds_check as _kinds_check
from .catalogue import real_of as _real_of
from .catalogue import register as _register
from .control_flow import CONTROL_FLOW, cond, scan, while_loop  # noqa: F401
from .core import AbstractArray
from .indexing import indexed_shape
from .linalg import (  # noqa: F401
    LINALG,
    cholesky,
    det,
    eig,
    eigh,
    lu,
    lu_pivots_to_permutation,
    qr,
    slogdet,
    slogdet_inv_t,
    solve,
    sqrtm,
    svd,
    sylvester,
    triangular_solve,
)
from .specs import NUMERIC, REAL, SPECS


def _elementwise_shape(name, avals):
    shapes = {a.shape for a in avals if a.ndim}
    if len(shapes) > 1:
        _fail(f"{name}: operand shapes {' and '.join(str(a.shape) for a in avals)} differ "
              "(elementwise primitives take equal shapes or rank-0 operands)")
    return shapes.pop() if shapes else ()


def _same_dtype(name, avals):
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(f"{name}: operand dtypes {', '.join(str(a.dtype) for a in avals)} "
                        "differ; convert them first")
    return avals[0].dtype


# --- elementwise: kinds and the rest of their data are rows of specs.py ------------

def _unary(name, out_dtype=None):
    kinds = SPECS[name].kinds

    def rule(x):
        _kinds_check(name, [x], kinds)
        dt = out_dtype(x.dtype) if out_dtype else x.dtype
        return [AbstractArray(x.shape, dt, x.weak_type and dt == x.dtype)]
    return _register(name, rule, "unary")


def _binary(name, out_dtype=None):
    kinds = SPECS[name].kinds

    def rule(x, y):
        _kinds_check(name, [x, y], kinds)
        dt = _same_dtype(name, [x, y])
        shape = _elementwise_shape(name, [x, y])
        out = out_dtype(dt) if out_dtype else dt
        return [AbstractArray(shape, out, x.weak_type and y.weak_type and out == dt)]
    return _register(name, rule, "binary")


def _to_bool(_):
    return dtypes.bool_


neg = _unary("neg")
sign = _unary("sign")
abs = _unary("abs", _real_of)
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")          # half to even, as np.rint
is_finite = _unary("is_finite", _to_bool)
exp = _unary("exp")
exp2 = _unary("exp2")
expm1 = _unary("expm1")
log = _unary("log")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
cbrt = _unary("cbrt")
tanh = _unary("tanh")
logistic = _unary("logistic")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
not_ = _unary("not")        # logical not on bool, bitwise invert on ints
real = _unary("real", _real_of)
imag = _unary("imag", _real_of)
conj = _unary("conj")

add = _binary("add")
sub = _binary("sub")
mul = _binary("mul")
div = _binary("div")         # true division
floor_div = _binary("floor_div")   # np.floor_divide, x // 0 == 0 for ints
rem = _binary("rem")           # np.remainder: the sign follows the divisor
pow = _binary("pow")
max = _binary("max")         # NaN-propagating, as np.maximum
min = _binary("min")
atan2 = _binary("atan2")
copysign = _binary("copysign")
and_ = _binary("and")
or_ = _binary("or")
xor = _binary("xor")
eq = _binary("eq", _to_bool)
ne = _binary("ne", _to_bool)
# re + im * 1j, exactly (multiplying by 1j would turn an infinite im into a NaN real part)
complex = _binary("complex", lambda dt: np.result_type(dt, np.complex64))
lt = _binary("lt", _to_bool)
le = _binary("le", _to_bool)
gt = _binary("gt", _to_bool)
ge = _binary("ge", _to_bool)

UNARY = [p for p in ALL.values() if p.family == "unary"]
BINARY = [p for p in ALL.values() if p.family == "binary"]
COMPARISONS = [eq, ne, lt, le, gt, ge]


def _select_rule(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        raise TypeError(f"select: predicate must be bool, got {pred.dtype}")
    dt = _same_dtype("select", [on_true, on_false])
    shape = _elementwise_shape("select", [pred, on_true, on_false])
    return [AbstractArray(shape, dt, on_true.weak_type and on_false.weak_type)]


select = _register("select", _select_rule, "select")


def _convert_rule(x, *, new_dtype, weak_type=False):
    # weak_type: the value still stands for a Python scalar (NEP 50), e.g. a Python int
    # argument promoted to float by ``0.5 * step``
    return [AbstractArray(x.shape, new_dtype, weak_type)]


convert = _register("convert", _convert_rule, "convert")


# --- creation and layout ---------------------------------------------------

def _iota_rule(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        _fail(f"iota: dimension {dimension} out of range for shape {shape}")
    return [AbstractArray(shape, dtype)]


iota = _register("iota", _iota_rule, "creation")


def _check_axes(name, axes, ndim, unique=True):
    for a in axes:
        if not 0 <= a < ndim:
            _fail(f"{name}: axis {a} out of range for rank {ndim}")
    if unique and len(set(axes)) != len(axes):
        _fail(f"{name}: repeated axis in {axes}")


def _broadcast_in_dim_rule(x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    if len(bd) != x.ndim or list(bd) != sorted(set(bd)):
        _fail(f"broadcast_in_dim: broadcast_dimensions {bd} do not fit operand shape {x.shape}")
    _check_axes("broadcast_in_dim", bd, len(shape))
    for d, od in zip(x.shape, bd, strict=True):
        if d not in (1, shape[od]):
            _fail(f"broadcast_in_dim: cannot broadcast shape {x.shape} to {shape}")
    return [x.update(shape=shape)]


broadcast_in_dim = _register("broadcast_in_dim", _broadcast_in_dim_rule, "layout")


def _reshape_rule(x, *, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        _fail(f"reshape: cannot reshape array of shape {x.shape} into shape {new_sizes}")
    return [x.update(shape=new_sizes)]


reshape = _register("reshape", _reshape_rule, "layout")


def _transpose_rule(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        _fail(f"transpose: permutation {permutation} does not fit shape {x.shape}")
    return [x.update(shape=tuple(x.shape[p] for p in permutation))]


transpose = _register("transpose", _transpose_rule, "layout")


def _squeeze_rule(x, *, dimensions):
    _check_axes("squeeze", dimensions, x.ndim)
    if any(x.shape[d] != 1 for d in dimensions):
        _fail(f"squeeze: dimensions {dimensions} of shape {x.shape} are not all 1")
    return [x.update(shape=tuple(s for i, s in enumerate(x.shape) if i not in dimensions))]


squeeze = _register("squeeze", _squeeze_rule, "layout")


def _expand_dims_rule(x, *, dimensions):
    ndim = x.ndim + len(dimensions)
    _check_axes("expand_dims", dimensions, ndim)
    it = iter(x.shape)
    return [x.update(shape=tuple(1 if i in dimensions else next(it) for i in range(ndim)))]


expand_dims = _register("expand_dims", _expand_dims_rule, "layout")


def _rev_rule(x, *, dimensions):
    _check_axes("rev", dimensions, x.ndim)
    return [x]


rev = _register("rev", _rev_rule, "layout")


def _concatenate_rule(*xs, dimension):
    if not xs:
        _fail("concatenate: needs at least one operand")
    dt = _same_dtype("concatenate", xs)
    ndim = xs[0].ndim
    _check_axes("concatenate", (dimension,), ndim)
    for x in xs:
        others = [d for i, d in enumerate(x.shape) if i != dimension]
        if x.ndim != ndim or others != [d for i, d in enumerate(xs[0].shape) if i != dimension]:
            _fail("concatenate: shapes " + ", ".join(str(x.shape) for x in xs)
                  + f" do not match outside dimension {dimension}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [AbstractArray(shape, dt, all(x.weak_type for x in xs))]


concatenate = _register("concatenate", _concatenate_rule, "layout")


def _pad_rule(x, padding_value, *, padding_config):
    _same_dtype("pad", [x, padding_value])
    if padding_value.ndim:
        _fail("pad: padding value must be a scalar")
    if len(padding_config) != x.ndim:
        _fail(f"pad: padding_config {padding_config} does not fit shape {x.shape}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config, strict=True):
        if interior < 0:
            _fail("pad: interior padding must be >= 0")
        n = lo + hi + d + builtins.max(d - 1, 0) * interior
        if n < 0:
            _fail(f"pad: padding_config {padding_config} gives a negative size for shape {x.shape}")
        shape.append(n)
    return [x.update(shape=shape)]


pad = _register("pad", _pad_rule, "layout")


def _slice_rule(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        _fail(f"slice: indices do not fit shape {x.shape}")
    shape = []
    for d, s, e, st in zip(x.shape, start_indices, limit_indices, strides, strict=True):
        if not (0 <= s <= e <= d) or st < 1:
            _fail(f"slice: start {start_indices}, limit {limit_indices}, strides {strides} "
                  f"out of range for shape {x.shape}")
        shape.append((e - s + st - 1) // st)
    return [x.update(shape=shape)]


slice = _register("slice", _slice_rule, "layout")


def _check_scalar_ints(name, idx, ndim):
    if len(idx) != ndim:
        _fail(f"{name}: needs {ndim} start indices, got {len(idx)}")
    for i in idx:
        if i.ndim or not dtypes.is_integer(i.dtype):
            _fail(f"{name}: start indices must be integer scalars, got {i}")


def _dynamic_slice_rule(x, *idx, slice_sizes):
    _check_scalar_ints("dynamic_slice", idx, x.ndim)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in
                                         zip(slice_sizes, x.shape, strict=True)):
        _fail(f"dynamic_slice: slice_sizes {slice_sizes} do not fit shape {x.shape}")
    return [x.update(shape=slice_sizes)]


dynamic_slice = _register("dynamic_slice", _dynamic_slice_rule, "layout")


def _dynamic_update_slice_rule(x, update, *idx):
    _same_dtype("dynamic_update_slice", [x, update])
    _check_scalar_ints("dynamic_update_slice", idx, x.ndim)
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape, strict=True)):
        _fail(f"dynamic_update_slice: update shape {update.shape} does not fit in {x.shape}")
    return [x.strong()]


dynamic_update_slice = _register("dynamic_update_slice", _dynamic_update_slice_rule, "layout")


def _gather_out_shape(name, x, indices, axes):
    if not dtypes.is_integer(indices.dtype):
        raise TypeError(f"{name}: indices must be integers, got {indices.dtype}")
    _check_axes(name, axes, x.ndim)
    if indices.ndim < 1 or indices.shape[-1] != len(axes):
        _fail(f"{name}: indices of shape {indices.shape} must end in a dimension of "
              f"size {len(axes)} (one column per indexed axis {axes})")
    rest = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return indices.shape[:-1] + rest


def _gather_rule(x, indices, *, axes):
    """out[b..., r...] = x[with indices[b..., k] on axis axes[k], r... on the other axes]."""
    return [x.update(shape=_gather_out_shape("gather", x, indices, axes))]


gather = _register("gather", _gather_rule, "indexing")


def _scatter_rule(name):
    def rule(x, indices, updates, *, axes):
        _same_dtype(name, [x, updates])
        shape = _gather_out_shape(name, x, indices, axes)
        if updates.shape != shape:
            _fail(f"{name}: updates of shape {updates.shape} should have shape {shape}")
        return [x.strong()]
    return rule


scatter_add = _register("scatter_add", _scatter_rule("scatter_add"), "indexing")
scatter = _register("scatter", _scatter_rule("scatter"), "indexing")   # last write wins


# --- reductions and scans --------------------------------------------------

def _reduce(name, kinds):
    def rule(x, *, axes):
        _kinds_check(name, [x], kinds)
        _check_axes(name, axes, x.ndim)
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
        _check_axes(name, (axis,), x.ndim)
        if x.shape[axis] == 0:
            _fail(f"{name}: attempt to get {name} of an empty sequence (axis {axis} of {x.shape})")
        return [AbstractArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)]
    return _register(name, rule, "arg_reduction")


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


def _cumulative(name, kinds):
    def rule(x, *, axis, reverse):
        _kinds_check(name, [x], kinds)
        _check_axes(name, (axis,), x.ndim)
        return [x.strong()]
    return _register(name, rule, "cumulative")


cumsum = _cumulative("cumsum", NUMERIC)
cumprod = _cumulative("cumprod", NUMERIC)
cummax = _cumulative("cummax", REAL)
cummin = _cumulative("cummin", REAL)


# --- contraction and sorting ------------------------------------------------

def _dot_general_rule(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    dt = _same_dtype("dot_general", [lhs, rhs])
    if len(lc) != len(rc) or len(lb) != len(rb):
        _fail(f"dot_general: dimension_numbers {dimension_numbers} are unbalanced")
    _check_axes("dot_general", tuple(lc) + tuple(lb), lhs.ndim)
    _check_axes("dot_general", tuple(rc) + tuple(rb), rhs.ndim)
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
    _check_axes("sort", (dimension,), len(shape))
    _kinds_check("sort", operands[:num_keys], REAL)
    return [o.strong() for o in operands]


sort = _register("sort", _sort_rule, "sort", multiple_results=True)


# --- random bits ---------------------------------------------------------------

def _threefry2x32_rule(k0, k1, x0, x1):
    avals = [k0, k1, x0, x1]
    for name, a in zip(("k0", "k1", "x0", "x1"), avals, strict=True):
        if a.dtype != dtypes.uint32:
            raise TypeError(f"threefry2x32: operand {name} must be uint32, got {a.dtype} "
                            f"(shape {a.shape})")
    shape = _elementwise_shape("threefry2x32", avals)
    return [AbstractArray(shape, dtypes.uint32), AbstractArray(shape, dtypes.uint32)]


# threefry2x32(k0, k1, x0, x1) -> (y0, y1): the Threefry-2x32 block cipher (20 rounds),
# elementwise: key (k0, k1) encrypts the counter (x0, x1). Equal shapes or rank-0 operands.
threefry2x32 = _register("threefry2x32", _threefry2x32_rule, "random", multiple_results=True)
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
               dimension_numbers, feature_group_count, batch_group_count):
    """lax.conv_general_dilated; ``dimension_numbers`` = (lhs, rhs, out) specs of axis
    numbers: (batch, feature, spatial...), (out feature, in feature, spatial...),
    (batch, feature, spatial...)."""
    name = "conv_general_dilated"
    dt = _same_dtype(name, [lhs, rhs])
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


# --- special functions (scipy.special; real floating point) ---------------------------

# erf, erfc, erfcx, spence and bessel_jv's z also take complex operands (SciPy's
# complex functions: the Faddeeva package's, cspence, AMOS's)
erf = _unary("erf")
erfc = _unary("erfc")
erfcx = _unary("erfcx")             # exp(x^2) erfc(x)
lgamma = _unary("lgamma")            # log |gamma(x)|
tgamma = _unary("tgamma")
digamma = _unary("digamma")
bessel_i0e = _unary("bessel_i0e")    # exp(-|x|) I0(x)
bessel_i1e = _unary("bessel_i1e")
spence = _unary("spence")           # the dilogarithm integral of scipy.special.spence
zeta = _binary("zeta")               # Hurwitz zeta(x, q)
igamma = _binary("igamma")           # regularized lower incomplete gamma P(a, x)
igammac = _binary("igammac")         # Q(a, x) = 1 - P(a, x)
igamma_grad_a = _binary("igamma_grad_a")   # dP(a, x)/da
igamma_hess_a = _binary("igamma_hess_a")   # d^2P(a, x)/da^2


def _bessel_jv_rule(v, z):
    """J_v(z): a real order ``v``; ``z`` of ``v``'s dtype or of the complex one whose parts
    have it (the result is ``z``'s dtype)."""
    _kinds_check("bessel_jv", [v], "f")
    _kinds_check("bessel_jv", [z], "fc")
    if _real_of(z.dtype) != v.dtype:
        raise TypeError(f"bessel_jv: order dtype {v.dtype} and argument dtype {z.dtype} "
                        "differ; convert them first")
    shape = _elementwise_shape("bessel_jv", [v, z])
    return [AbstractArray(shape, z.dtype, v.weak_type and z.weak_type)]


bessel_jv = _register("bessel_jv", _bessel_jv_rule, "binary")     # J_v(z)
bessel_j0 = _unary("bessel_j0")      # J_0 (scipy.special.j0: Cephes, not jv's AMOS)


def _polygamma_rule(x, *, order):
    _kinds_check("polygamma", [x], "f")
    if not isinstance(order, int) or order < 0:
        _fail(f"polygamma: order must be a non-negative int, got {order!r}")
    return [AbstractArray(x.shape, x.dtype, x.weak_type)]


def _betainc_rule(a, b, x):
    _kinds_check("betainc", [a, b, x], "f")
    dt = _same_dtype("betainc", [a, b, x])
    return [AbstractArray(_elementwise_shape("betainc", [a, b, x]), dt)]


def _betainc_grad_rule(a, b, x, *, wrt):
    if wrt not in (0, 1, (0, 0), (0, 1), (1, 1)):
        _fail(f"betainc_grad: wrt must be 0 (a), 1 (b) or a pair (0, 0), (0, 1), (1, 1) "
              f"(a second derivative), got {wrt!r}")
    return _betainc_rule(a, b, x)


polygamma = _register("polygamma", _polygamma_rule, "unary")
betainc = _register("betainc", _betainc_rule, "special3")   # regularized I_x(a, b)
# dI_x(a, b)/da (wrt=0) or /db (wrt=1); d^2I/da^2, /da db, /db^2 (wrt=(0, 0), (0, 1), (1, 1))
betainc_grad = _register("betainc_grad", _betainc_grad_rule, "special3")
SPECIAL = [erf, erfc, erfcx, lgamma, tgamma, digamma, bessel_i0e, bessel_i1e, spence, zeta,
           igamma, igammac, igamma_grad_a, igamma_hess_a, bessel_jv, bessel_j0, polygamma, betainc,
           betainc_grad]

# --- discrete Fourier transforms ----------------------------------------------

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")


def _fft_rule(x, *, fft_type, fft_lengths):
    """fft(x): the ``len(fft_lengths)``-dimensional DFT over the trailing axes of ``x``.
    ``ifft`` and ``irfft`` carry NumPy's default 1/n scaling; ``rfft`` keeps the
    non-negative frequencies of the last axis (n // 2 + 1), ``irfft`` inverts it."""
    if fft_type not in FFT_TYPES:
        _fail(f"fft: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    lengths = tuple(fft_lengths)
    k = len(lengths)
    if not 1 <= k <= x.ndim or any(not isinstance(n, int | np.integer) or n < 1
                                   for n in lengths):
        _fail(f"fft: fft_lengths {lengths} must be 1 to {x.ndim} positive sizes for an "
              f"operand of shape {x.shape}")
    lead, trailing = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    if fft_type == "rfft":
        _kinds_check("fft (rfft)", [x], "f")
        want, out = lengths, lengths[:-1] + (lengths[-1] // 2 + 1,)
        dtype = complex_of(x.dtype)
    elif fft_type == "irfft":
        _kinds_check("fft (irfft)", [x], "c")
        want, out = lengths[:-1] + (lengths[-1] // 2 + 1,), lengths
        dtype = _real_of(x.dtype)
    else:
        _kinds_check(f"fft ({fft_type})", [x], "c")
        want, out, dtype = lengths, lengths, x.dtype
    if trailing != want:
        _fail(f"fft ({fft_type}): the trailing axes of an operand of shape {x.shape} must "
              f"be {want} for fft_lengths {lengths}")
    return [AbstractArray(lead + out, dtype)]


fft = _register("fft", _fft_rule, "fft")


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
MUTATIONS = [p for p in ALL.values() if p.mutates]


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
