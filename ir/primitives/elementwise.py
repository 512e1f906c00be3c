"""The elementwise primitives, declared from their rows in ``ir/specs.py``.

Each row of ``specs.ELEMENTWISE`` becomes a primitive of this module under the row's
``attr`` (``tanh``; ``not_`` for ``not``). A unary or binary row gets its family's shape
rule; the few rows whose rule is code of their own (``select``, ``convert``, ``polygamma``,
``bessel_jv``, ``betainc``) name it in ``_OWN_RULES``. ``__all__`` lists every name
declared here.
"""

from __future__ import annotations

from .. import dtypes
from ..catalogue import ALL, complex_of, real_of
from ..catalogue import fail as _fail
from ..catalogue import kinds_check as _kinds_check
from ..catalogue import register as _register
from ..core import AbstractArray
from ..specs import ELEMENTWISE, SPECIAL_FUNCTIONS
from .checks import elementwise_shape, same_dtype


def _same(dt):
    return dt


# a row's ``result``: its primitive's result dtype from its operands' dtype
_RESULT = {
    "same": _same,
    "real": real_of,
    "bool": lambda dt: dtypes.bool_,
    "complex": complex_of,      # complex(re, im) = re + im * 1j, exactly
}


def _unary(spec):
    name, kinds, out_dtype = spec.name, spec.kinds, _RESULT[spec.result]

    def rule(x):
        _kinds_check(name, [x], kinds)
        dt = x.dtype if out_dtype is _same else out_dtype(x.dtype)
        return [AbstractArray(x.shape, dt, x.weak_type and dt == x.dtype)]
    return rule


def _binary(spec):
    name, kinds, out_dtype = spec.name, spec.kinds, _RESULT[spec.result]

    def rule(x, y):
        _kinds_check(name, [x, y], kinds)
        dt = same_dtype(name, [x, y])
        shape = elementwise_shape(name, [x, y])
        out = dt if out_dtype is _same else out_dtype(dt)
        return [AbstractArray(shape, out, x.weak_type and y.weak_type and out == dt)]
    return rule


_FAMILY_RULES = {"unary": _unary, "binary": _binary}


def _select_rule(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        raise TypeError(f"select: predicate must be bool, got {pred.dtype}")
    dt = same_dtype("select", [on_true, on_false])
    shape = elementwise_shape("select", [pred, on_true, on_false])
    return [AbstractArray(shape, dt, on_true.weak_type and on_false.weak_type)]


def _convert_rule(x, *, new_dtype, weak_type=False):
    # weak_type: the value still stands for a Python scalar (NEP 50), e.g. a Python int
    # argument promoted to float by ``0.5 * step``
    return [AbstractArray(x.shape, new_dtype, weak_type)]


def _bessel_jv_rule(v, z):
    """J_v(z): a real order ``v``; ``z`` of ``v``'s dtype or of the complex one whose parts
    have it (the result is ``z``'s dtype)."""
    _kinds_check("bessel_jv", [v], "f")
    _kinds_check("bessel_jv", [z], "fc")
    if real_of(z.dtype) != v.dtype:
        raise TypeError(f"bessel_jv: order dtype {v.dtype} and argument dtype {z.dtype} "
                        "differ; convert them first")
    shape = elementwise_shape("bessel_jv", [v, z])
    return [AbstractArray(shape, z.dtype, v.weak_type and z.weak_type)]


def _polygamma_rule(x, *, order):
    _kinds_check("polygamma", [x], "f")
    if not isinstance(order, int) or order < 0:
        _fail(f"polygamma: order must be a non-negative int, got {order!r}")
    return [AbstractArray(x.shape, x.dtype, x.weak_type)]


def _reduce_precision_rule(x, *, exponent_bits, mantissa_bits):
    _kinds_check("reduce_precision", [x], "f")
    for what, v, least in (("exponent_bits", exponent_bits, 1), ("mantissa_bits",
                                                                  mantissa_bits, 0)):
        if type(v) is not int or v < least:
            _fail(f"reduce_precision: {what} must be an int >= {least}, got {v!r} (operand "
                  f"{x.dtype}{list(x.shape)})")
    return [AbstractArray(x.shape, x.dtype, x.weak_type)]


def _betainc_rule(a, b, x):
    _kinds_check("betainc", [a, b, x], "f")
    dt = same_dtype("betainc", [a, b, x])
    return [AbstractArray(elementwise_shape("betainc", [a, b, x]), dt)]


def _betainc_grad_rule(a, b, x, *, wrt):
    # dI_x(a, b)/da (wrt=0) or /db (wrt=1); d^2I/da^2, /da db, /db^2 (wrt=(0, 0), (0, 1), (1, 1))
    if wrt not in (0, 1, (0, 0), (0, 1), (1, 1)):
        _fail(f"betainc_grad: wrt must be 0 (a), 1 (b) or a pair (0, 0), (0, 1), (1, 1) "
              f"(a second derivative), got {wrt!r}")
    return _betainc_rule(a, b, x)


_OWN_RULES = {
    "select": _select_rule,
    "convert": _convert_rule,
    "bessel_jv": _bessel_jv_rule,
    "polygamma": _polygamma_rule,
    "reduce_precision": _reduce_precision_rule,
    "betainc": _betainc_rule,
    "betainc_grad": _betainc_grad_rule,
}


def _declare(spec):
    rule = _OWN_RULES.get(spec.name)
    if rule is None:
        if spec.family not in _FAMILY_RULES:
            raise ValueError(f"primitive {spec.name}: family {spec.family!r} has no shared "
                             "rule; give the row its own in ir/primitives/elementwise.py")
        rule = _FAMILY_RULES[spec.family](spec)
    return _register(spec.name, rule, spec.family)


__all__ = [spec.attr for spec in ELEMENTWISE]
globals().update({spec.attr: _declare(spec) for spec in ELEMENTWISE})

COMPARISONS = [ALL[n] for n in ("eq", "ne", "lt", "le", "gt", "ge")]
SPECIAL = [ALL[s.name] for s in SPECIAL_FUNCTIONS]
# the arithmetic, rounding, logic and elementary functions of the two families
UNARY = [p for p in ALL.values() if p.family == "unary" and p not in SPECIAL]
BINARY = [p for p in ALL.values() if p.family == "binary" and p not in SPECIAL]
__all__ += ["COMPARISONS", "SPECIAL", "UNARY", "BINARY"]
