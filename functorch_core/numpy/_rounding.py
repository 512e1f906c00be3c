"""``round``/``around`` (and ``ndarray.round``): NumPy's decimal rounding, half to even.

NumPy scales, rounds with ``rint`` and scales back (``rint(x * 10**d) / 10**d``,
or ``rint(x / 10**-d) * 10**-d`` for negative ``d``) in the array's dtype;
integers round through float64 for negative ``d`` and are copied otherwise;
complex values round their real and imaginary parts.
"""

from __future__ import annotations

import operator

import numpy as np

from functorch_core.ir import primitives as P

from ._core import aval, cast, complex_from_parts, implements, operand, to_result
from ._methods import _fnp
from ._writes import UFuncOutputCastingError

__all__ = ["round", "around"]


def _round_real(x, decimals):
    fnp = _fnp()
    if decimals == 0:
        return fnp.rint(x)
    f = 10.0 ** abs(decimals)
    scale, unscale = (fnp.multiply, fnp.true_divide) if decimals > 0 else \
        (fnp.true_divide, fnp.multiply)
    return unscale(fnp.rint(scale(x, f)), f)


@implements(np.round, np.around)
def round(a, decimals=0, out=None):
    """``numpy.round``: ``a`` rounded to ``decimals`` places, ties to even, in its dtype.

    Booleans round to float16 as ``np.rint`` does (and refuse ``decimals != 0``
    as NumPy does).
    """
    if out is not None:
        raise NotImplementedError("round(..., out=...) is not supported")
    x = operand(a)
    d = operator.index(decimals)
    dt = aval(x).dtype
    if dt.kind in "iu":
        y = _fnp().copy(x) if d >= 0 else cast(_round_real(cast(x, np.float64), d), dt)
    elif dt.kind == "c":
        y = complex_from_parts(_round_real(P.real.bind(x), d), _round_real(P.imag.bind(x), d),
                               dt)
    else:
        if dt == np.bool_ and d:
            raise UFuncOutputCastingError("Cannot cast ufunc 'multiply' output from "
                                          "dtype('float64') to dtype('bool') with casting "
                                          "rule 'same_kind'")
        y = _round_real(x, d)
    return to_result(y, scalar=True)


around = round
