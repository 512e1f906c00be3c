"""The argument conversion of ``functorch_core.scipy.special``'s functions (shared by its
modules): SciPy's dtype rules (integers become float64, complex refused where SciPy's
function has no complex loop here), and float64 evaluation rounded once to the operands'
dtype, as SciPy's ``f->f`` loops do."""

from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..numpy.internal import array_operand, cast, operand, result_type, to_result


class ComplexArgument(TypeError):
    """Raised by :func:`float_operands`; the public function's wrapper adds its own name."""


def float_operands(*xs, complex_ok=False):
    """The operands in their common floating (or, with ``complex_ok``, complex) dtype
    (integers: float64)."""
    xs = [operand(x) for x in xs]
    dt = result_type(*xs)             # Python scalars are weak (NEP 50)
    if dt.kind in "biu":
        dt = np.dtype(np.float64)
    if dt.kind == "c" and not complex_ok:
        got = ", ".join(f"{_dtype(a).name}{tuple(np.shape(a))}" for a in xs)
        raise ComplexArgument(f"complex arguments are not supported (got {got}); only "
                               "erf, erfc, erfcx, ndtr, log_ndtr, gamma, loggamma, "
                               "digamma, spence, jv, logsumexp, softmax, log_softmax, sinc, "
                               "xlogy and xlog1py take them")
    xs = [cast(array_operand(x), dt) for x in xs]
    if len(xs) > 1:
        xs = fnp.broadcast_arrays(*xs)
    return xs if len(xs) > 1 else xs[0]


def wide(*xs):
    """The operands in float64 and their own dtype: float32 and float16 results computed in
    float64 and rounded once, as SciPy's loops do, where the float32 formula would lose
    several ulps."""
    dtype = np.dtype(fnp.asarray(xs[0]).dtype)
    return *(cast(x, np.float64) for x in xs), dtype


def _dtype(x):
    """``x``'s dtype; a Python scalar's NumPy one."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def rounded(impl, name, doc):
    """The public function ``name``: ``impl`` on float64 operands (integers become float64),
    its result rounded once to theirs, as SciPy's loops (``f->f``: computed in double)."""
    def fn(*args):
        xs = float_operands(*args)
        *wide_xs, dtype = wide(*(xs if len(args) > 1 else [xs]))
        return to_result(cast(impl(*wide_xs), dtype), scalar=True)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


__all__ = ["ComplexArgument", "float_operands", "rounded", "wide"]
