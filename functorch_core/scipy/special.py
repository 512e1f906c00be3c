"""``scipy.special`` functions, traceable and differentiable (to any order where the
derivative is itself a function here).

Under ``jit`` on the cpu backend every one compiles natively: ``erf``, ``erfc``, ``erfcx``,
``digamma``, ``i0e``, ``i1e``, ``zeta`` and ``polygamma`` to inline code that vectorizes,
``gammaln`` to the C library's, ``gamma``, ``gammainc``, ``gammaincc``, ``betainc``,
``spence``, ``jv``, ``j0``, ``y0``, ``y1``, ``yn``, ``iv``, ``ive``, ``k0``, ``k1``, ``kv``,
``kve`` and complex ``erf``,
``erfc`` and ``erfcx`` to calls into SciPy's compiled functions (its values to the bit); the
functions composed of elementary ones (``expit``, ``logit``, ``xlogy``, ``entr``,
``logsumexp``, ``softmax``, ``ndtr``, ``ndtri``, ``erfinv``, ``erfcinv``, ``sinc``,
``betaln``, ``beta``, ``rgamma``, ``gammasgn``...) compile with them. SciPy's own ufuncs
called on traced arrays (``scipy.special.gammaln(x)`` in unmodified code) run these
(``functorch_core/scipy/ufuncs.py``); the others raise ``NotImplementedError`` naming
``scipy.special``. Inputs are real floating point
(integers become float64, as in SciPy); ``erf``, ``erfc``, ``erfcx``, ``ndtr``,
``log_ndtr``, ``gamma``, ``loggamma``, ``digamma``, ``spence``, ``jv`` (its argument),
``logsumexp``, ``softmax``, ``log_softmax``, ``sinc``, ``xlogy`` and ``xlog1py`` also take
complex ones (SciPy's complex functions), the others raise a ``TypeError`` naming the
function.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from functorch_core.ir import primitives as P
from functorch_core.ir.numerics import COSPI_F64, SINC_F64

from .. import numpy as fnp
from .._internal.horner import horner
from ..numpy.internal import cast, is_tracer, operand, result_type, to_result
from ..transforms import custom_jvp, stop_gradient
from . import _loggamma_complex as _loggamma_c
from . import _normal_complex as _normal_c
from ._betaln import betaln as _betaln
from ._more_special import beta, erfcinv, gammasgn, iv, ive, k0, k1, kv, kve, rgamma, y0, y1, yn
from ._normal import _lower_cdf
from ._normal import erfinv as _erfinv
from ._normal import ndtr as _ndtr
from ._normal import ndtri as _ndtri
from ._operands import ComplexArgument as _ComplexArgument
from ._operands import float_operands as _float
from ._operands import wide as _wide

__all__ = ["erf", "erfc", "erfinv", "erfcx", "ndtr", "ndtri", "log_ndtr", "expit", "logit",
           "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "gamma", "gammaln", "loggamma",
           "digamma", "psi", "polygamma", "multigammaln", "gammainc", "gammaincc", "betaln",
           "betainc", "zeta", "i0", "i0e", "i1", "i1e", "sinc", "logsumexp", "softmax",
           "log_softmax", "spence", "jv", "jn", "j0", "j1", "beta", "rgamma", "gammasgn",
           "erfcinv", "y0", "y1", "yn", "iv", "ive", "k0", "k1", "kv", "kve"]


def _unary(prim, doc, complex_ok=False):
    def fn(x):
        return to_result(prim.bind(_float(x, complex_ok=complex_ok)), scalar=True)
    fn.__doc__ = doc
    return fn


_FADDEEVA = ("; for complex ``z`` SciPy's (the Faddeeva package's, through ``w(z) = "
             "exp(-z**2) erfc(-iz)``), complex64 computed in complex128 and rounded.")
erf = _unary(P.erf, "``scipy.special.erf``: the error function" + _FADDEEVA, True)
erfc = _unary(P.erfc, "``scipy.special.erfc``: ``1 - erf(x)`` without cancellation"
              + _FADDEEVA, True)
erfcx = _unary(P.erfcx, "``scipy.special.erfcx``: ``exp(x**2) * erfc(x)``" + _FADDEEVA,
               True)
gammaln = _unary(P.lgamma, "``scipy.special.gammaln``: ``log|Gamma(x)|``.")


def _complex(fn, z):
    """``fn`` of complex ``z`` computed in complex128 and rounded back (SciPy's loops)."""
    return cast(fn(cast(z, np.complex128)), z.dtype)


def _real_or_complex(real, complex_fn, doc):
    """``real`` of real operands; ``complex_fn`` of complex ones (:func:`_complex`)."""
    def fn(x):
        z = _float(x, complex_ok=True)
        if z.dtype.kind != "c":
            return to_result(real(z), scalar=True)
        return to_result(_complex(complex_fn, z), scalar=True)
    fn.__doc__ = doc
    return fn


gamma = _real_or_complex(
    lambda x: P.tgamma.bind(x), _loggamma_c.gamma,
    "``scipy.special.gamma``: the gamma function; for complex ``x``, ``exp(loggamma(x))`` "
    "as SciPy's (NaN at the poles).")
digamma = _real_or_complex(
    lambda x: P.digamma.bind(x), _loggamma_c.digamma,
    "``scipy.special.digamma``: the logarithmic derivative of gamma; for complex ``x`` by "
    "SciPy's regions (``_loggamma_complex.digamma``: Taylor series about the two real roots "
    "nearest 0, reflection, recurrence, asymptotic series).")
psi = digamma
i0e = _unary(P.bessel_i0e, "``scipy.special.i0e``: ``exp(-|x|) * i0(x)``.")
i1e = _unary(P.bessel_i1e, "``scipy.special.i1e``: ``exp(-|x|) * i1(x)``.")
spence = _unary(P.spence, "``scipy.special.spence``: the dilogarithm, ``integral from 1 to "
                          "x of log(t) / (1 - t) dt`` (for complex ``x``, along a path that "
                          "avoids the cut ``(-inf, 0]`` of ``log``: SciPy's).", True)


def i0(x):
    """``scipy.special.i0``: the modified Bessel function of order 0 (float32 and float16
    computed in float64 and rounded once, as SciPy does)."""
    x, dtype = _wide(_float(x))
    return to_result(cast(P.bessel_i0e.bind(x) * fnp.exp(fnp.abs(x)), dtype), scalar=True)


def i1(x):
    """``scipy.special.i1``: the modified Bessel function of order 1 (float32 and float16
    computed in float64 and rounded once, as SciPy does)."""
    x, dtype = _wide(_float(x))
    return to_result(cast(P.bessel_i1e.bind(x) * fnp.exp(fnp.abs(x)), dtype), scalar=True)


def _inverse(name, impl, tangent):
    """``impl``, the inverse of a function, under a custom jvp: ``tangent(x, t)`` is
    the tangent from the output ``x`` (the derivative is one over the function's at ``x``)."""
    def fn(y):
        return impl(y)
    fn.__name__ = fn.__qualname__ = name      # the name the traced call carries
    fn = custom_jvp(fn)

    @fn.defjvp
    def fn_jvp(primals, tangents):
        (y,), (t,) = primals, tangents
        x = fn(y)
        return x, tangent(x, t)
    return fn


_erfinv_fn = _inverse("_erfinv_fn", _erfinv,
                      lambda x, t: t * (math.sqrt(math.pi) / 2) * fnp.exp(x * x))


def erfinv(y):
    """``scipy.special.erfinv``: the inverse of :func:`erf` on [-1, 1]."""
    return to_result(_erfinv_fn(_float(y)), scalar=True)


@custom_jvp
def _ndtr_fn(x):
    return _ndtr(x)


@_ndtr_fn.defjvp
def _ndtr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _ndtr_fn(x), t * (1 / math.sqrt(2 * math.pi)) * fnp.exp(-0.5 * (x * x))


def ndtr(x):
    """``scipy.special.ndtr``: the standard normal CDF, ``erfc(-x / sqrt(2)) / 2``, without
    the ``x**2`` ulps that rounding ``x / sqrt(2)`` costs in the lower tail.

    Args:
        x: array or scalar; integers become float64. Complex ``x`` takes SciPy's complex
            ``erfc(-x / sqrt(2)) / 2``.

    Returns:
        ``ndtr(x)`` in ``x``'s floating or complex dtype (float32 and complex64 are
        computed in double precision and rounded).

    Example::

        >>> ndtr(np.array([-30.0, 0.0, 1.0]))
        array([4.90671393e-198, 5.00000000e-001, 8.41344746e-001])
    """
    x = _float(x, complex_ok=True)
    if x.dtype.kind == "c":
        return to_result(_complex(_normal_c.ndtr, x), scalar=True)
    # concrete arrays skip the custom_jvp trace: its erfc would be the interpreter's
    # (SciPy's), where _normal computes the tail through erfcx instead
    return to_result(_ndtr_fn(x) if is_tracer(x) else _ndtr(x), scalar=True)


_ndtri_fn = _inverse("_ndtri_fn", _ndtri,
                     lambda x, t: t * math.sqrt(2 * math.pi) * fnp.exp(0.5 * (x * x)))


def ndtri(y):
    """``scipy.special.ndtri``: the inverse of :func:`ndtr`, ``x`` with ``ndtr(x) == y``;
    ``-inf`` at 0, ``inf`` at 1, NaN outside [0, 1]. Accurate in relative terms in both tails
    (down to the subnormals and up to ``1 - 2**-53``) and near ``y = 1/2``.

    Args:
        y: probabilities (array or scalar); integers become float64.

    Returns:
        ``ndtri(y)`` in ``y``'s floating dtype (float32 is computed in float64 and rounded).

    Example::

        >>> ndtri(np.array([1e-300, 0.5, 0.975]))
        array([-37.04710803,   0.        ,   1.95996398])
    """
    y = _float(y)
    return to_result(_ndtri_fn(y), scalar=True)


def log_ndtr(x):
    """``scipy.special.log_ndtr``: ``log(ndtr(x))``, accurate in both tails (through
    ``erfcx`` below zero, ``log1p(-ndtr(-x))`` above); float32 is computed in float64 and
    rounded, as SciPy does. For complex ``x`` the principal branch of ``log(ndtr(x))``, kept
    where ``ndtr`` under- or overflows (``_normal_complex``: SciPy's composition)."""
    x = _float(x, complex_ok=True)
    if x.dtype.kind == "c":
        return to_result(_complex(_normal_c.log_ndtr, x), scalar=True)
    x, dtype = _wide(x)
    below = x < 0
    neg = fnp.where(below, x, 0.0)      # not minimum/maximum: their derivative at 0 is 1/2
    lower = fnp.log(0.5 * P.erfcx.bind(-neg * math.sqrt(0.5))) - 0.5 * (neg * neg)
    upper = fnp.log1p(-_lower_cdf(-fnp.where(below, 0.0, x)))
    return to_result(cast(fnp.where(below, lower, upper), dtype), scalar=True)


def expit(x):
    """``scipy.special.expit``: the logistic sigmoid ``1 / (1 + exp(-x))``."""
    return to_result(P.logistic.bind(_float(x)), scalar=True)


def logit(p):
    """``scipy.special.logit``: ``log(p / (1 - p))``; on [0.3, 0.65] as
    ``log1p((2p - 1) / (1 - p))`` (``2p - 1`` is exact there), so the result keeps its
    relative accuracy near its zero at 1/2."""
    p = _float(p)
    central = fnp.logical_and(p >= 0.3, p <= 0.65)
    pc = fnp.where(central, p, 0.5)
    mid = fnp.log1p((2 * pc - 1) / (1 - pc))
    return to_result(fnp.where(central, mid, fnp.log(p / (1 - p))), scalar=True)


def _x_times(log, dlog):
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN); its derivative in ``x`` is
    ``log(y)`` everywhere (not the 0 of the ``where``)."""
    @custom_jvp
    def f(x, y):
        return fnp.where(fnp.logical_and(x == 0, y == y), fnp.zeros_like(x), x * log(y))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), tx * log(y) + x * dlog(y) * ty

    return f


_xlogy = _x_times(fnp.log, lambda y: 1 / y)
_xlog1py = _x_times(fnp.log1p, lambda y: 1 / (1 + y))


def xlogy(x, y):
    """``scipy.special.xlogy``: ``x * log(y)``, 0 where ``x == 0`` and ``y`` is not NaN; its
    derivative in ``x`` is ``log(y)`` there too (not the 0 of the ``where``). Complex
    arguments take the principal ``log``, as SciPy's."""
    return to_result(_xlogy(*_float(x, y, complex_ok=True)), scalar=True)


def xlog1py(x, y):
    """``scipy.special.xlog1py``: ``x * log1p(y)``, 0 where ``x == 0`` and ``y`` is not NaN
    (complex arguments too)."""
    return to_result(_xlog1py(*_float(x, y, complex_ok=True)), scalar=True)


def entr(x):
    """``scipy.special.entr``: ``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below."""
    x = _float(x)
    return to_result(fnp.where(x < 0, fnp.full_like(x, -np.inf), -_xlogy(x, x)), scalar=True)


def rel_entr(x, y):
    """``scipy.special.rel_entr``: ``x log(x / y)`` for ``x, y > 0``, 0 for ``x == 0, y >= 0``,
    NaN where either is NaN, ``inf`` otherwise."""
    x, y, dtype = _wide(*_float(x, y))
    ok = fnp.logical_and(x > 0, y > 0)
    safe_x, safe_y = fnp.where(ok, x, 1.0), fnp.where(ok, y, 1.0)
    ratio = safe_x / safe_y
    # where x / y under- or overflows: log x - log y (x log(x / y) is then far from 0 or inf)
    wide = fnp.logical_or(ratio < np.finfo(np.float64).tiny, fnp.isinf(ratio))
    val = x * fnp.where(wide, fnp.log(safe_x) - fnp.log(safe_y),
                        fnp.log(fnp.where(wide, 1.0, ratio)))
    edge = fnp.where(fnp.logical_and(x == 0, y >= 0), fnp.zeros_like(x), fnp.full_like(x, np.inf))
    return to_result(cast(fnp.where(ok, val, _nan_if_nan(x, y, edge)), dtype), scalar=True)


def _nan_if_nan(x, y, value):
    """``value``, but NaN where ``x`` or ``y`` is NaN (SciPy's order of tests)."""
    either = fnp.logical_or(fnp.isnan(x), fnp.isnan(y))
    return fnp.where(either, fnp.full_like(value, np.nan), value)


def kl_div(x, y):
    """``scipy.special.kl_div``: ``x log(x / y) - x + y`` for ``x, y > 0``, ``y`` for
    ``x == 0, y >= 0``, NaN where either is NaN, ``inf`` otherwise."""
    x, y, dtype = _wide(*_float(x, y))
    ok = fnp.logical_and(x > 0, y > 0)
    val = rel_entr(x, y) - x + y
    edge = fnp.where(fnp.logical_and(x == 0, y >= 0), y, fnp.full_like(x, np.inf))
    return to_result(cast(fnp.where(ok, val, _nan_if_nan(x, y, edge)), dtype), scalar=True)


loggamma = _real_or_complex(
    lambda x: fnp.where(x < 0, fnp.full_like(x, np.nan), P.lgamma.bind(x)),
    _loggamma_c.loggamma,
    "``scipy.special.loggamma``: for real ``x``, ``log(gamma(x))`` for ``x > 0`` and NaN "
    "below (SciPy's real branch); for complex ``x``, the principal branch of ``log Gamma`` "
    "(analytic off the negative real axis, its imaginary part continuous across it from "
    "above; NaN at the poles), computed as SciPy's (``_loggamma_complex``).")


def polygamma(n, x):
    """``scipy.special.polygamma``: the ``n``-th derivative of :func:`digamma` (``n`` a
    concrete non-negative integer)."""
    try:
        order = int(np.asarray(n).item()) if np.ndim(n) == 0 else None
    except TypeError:
        order = None
    if order is None or order < 0 or order != np.asarray(n):
        raise TypeError(f"polygamma: n must be a concrete non-negative integer, got {n!r}")
    x = _float(x)
    if order == 0:
        return to_result(P.digamma.bind(x), scalar=True)
    return to_result(P.polygamma.bind(x, order=order), scalar=True)


def multigammaln(a, d):
    """``scipy.special.multigammaln``: the log of the multivariate gamma function of
    dimension ``d`` (a Python int), in float64 as SciPy computes it."""
    d = int(d)
    a = cast(_float(a), np.float64)
    out = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(d):
        out = out + P.lgamma.bind(a - j / 2)
    return to_result(out, scalar=True)


def gammainc(a, x):
    """``scipy.special.gammainc``: the regularized lower incomplete gamma function ``P(a, x)``,
    differentiable in ``x`` to any order and in ``a`` twice (``dP/da`` and ``d^2P/da^2`` by
    Cephes's series and continued fraction differentiated term by term; relative error
    about ``eps a |log x|``, from the prefactor ``x^a e^-x``), the mixed derivatives
    included; a third derivative in ``a`` raises ``NotImplementedError``."""
    return to_result(P.igamma.bind(*_float(a, x)), scalar=True)


def gammaincc(a, x):
    """``scipy.special.gammaincc``: ``Q(a, x) = 1 - P(a, x)``, differentiable as
    :func:`gammainc` (``dQ = -dP``)."""
    return to_result(P.igammac.bind(*_float(a, x)), scalar=True)


@custom_jvp
def _betaln_fn(a, b):
    return _betaln(a, b)


@_betaln_fn.defjvp
def _betaln_jvp(primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    both = P.digamma.bind(a + b)
    return _betaln_fn(a, b), ta * (P.digamma.bind(a) - both) + tb * (P.digamma.bind(b) - both)


def betaln(a, b):
    """``scipy.special.betaln``: ``log|B(a, b)|``, ``B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)``;
    for large ``a`` or ``b`` by differences of Stirling's series (no cancellation between
    :func:`gammaln` terms), differentiable in both arguments.

    Args:
        a, b: arrays or scalars (broadcast together); integers become float64.

    Returns:
        ``log|B(a, b)|`` in the arguments' floating dtype (float32 is computed in float64
        and rounded).

    Example::

        >>> betaln(np.array([1e10, 2.0]), np.array([1.0, 3.0]))
        array([-23.02585093,  -2.48490665])
    """
    return to_result(_betaln_fn(*_float(a, b)), scalar=True)


def betainc(a, b, x):
    """``scipy.special.betainc``: the regularized incomplete beta function ``I_x(a, b)``,
    differentiable in ``x`` to any order and in ``a`` and ``b`` twice (the continued fraction
    differentiated term by term: within 1e-13 relative of mpmath for ``a``, ``b`` in
    0.1..50, the second derivatives within 2e-12; JAX has no derivative in ``a``, ``b``),
    the mixed derivatives with ``x`` included; a third derivative in ``a`` or ``b`` raises
    ``NotImplementedError``."""
    return to_result(P.betainc.bind(*_float(a, b, x)), scalar=True)


def zeta(x, q=None):
    """``scipy.special.zeta``: the Hurwitz zeta function ``zeta(x, q)``, or Riemann's for
    ``q=None``.

    Hurwitz's is defined for ``x > 1`` (``inf`` at 1, NaN below, as SciPy's) and
    differentiable in both arguments to any order (in ``x``: the Euler-Maclaurin sum
    differentiated term by term, within 4.4e-14 of the exact value; NaN where zeta is not
    differentiable in ``x``). Riemann's is continued below 1 as SciPy's is: on
    ``(-1/2, 1)`` as ``1/(x - 1)`` plus the Taylor polynomial of the entire rest (within 4
    ulp of the exact value), from -1/2 down by the
    functional equation ``zeta(x) = 2 (2 pi)^(x-1) sin(pi x / 2) Gamma(1-x) zeta(1-x)``
    (exact zeros at the negative even integers; tens of ulp, SciPy's thousands; past
    ``x = -170``, where ``Gamma`` overflows, in logarithms).

    Args:
        x: the exponent (array or scalar).
        q (default ``None``): Hurwitz's shift; ``None`` for Riemann's zeta.

    Example::

        >>> zeta(np.array([2.0, -1.0, 0.5]))
        array([ 1.64493407, -0.08333333, -1.46035451])
    """
    if q is None:
        return _riemann_zeta(x)
    return to_result(P.zeta.bind(*_float(x, q)), scalar=True)


# zeta(x) - 1/(x - 1), an entire function: its Taylor coefficients at 0, lowest first
# (mpmath at 40 digits; the next is below 3e-23)
_ZETA_REGULAR = (0.5, 0.08106146679532726, -0.0031782279542924255, -0.000785194477042408,
                 0.00012070049942883505, -1.940896320456038e-06, -1.3011460139596242e-06,
                 1.6861582638922007e-07, -5.764675979949394e-09, -9.110164892314166e-10,
                 1.4970075941901138e-10, -9.406895665666177e-12, -4.092582630415831e-14,
                 6.539904805891015e-14, -6.54396874989192e-15, 3.0124248713667866e-16,
                 3.988894706311055e-18, -1.858215043378503e-18, 1.602885638529224e-19,
                 -7.115582739216006e-21, 7.930311915096389e-24)


_TWO_PI_LOW = 3.8981718325193755e-17       # (2 pi - float(2 pi)) / float(2 pi)


def _riemann_zeta(x):
    x, dtype = _wide(_float(x))
    hurwitz = P.zeta.bind(fnp.where(x >= 1, x, 2.0), fnp.ones_like(x))
    u = fnp.where(fnp.logical_and(x > -0.5, x < 1), x, 0.0)
    near = 1 / (u - 1) + _horner(_ZETA_REGULAR, u)
    # x <= -1/2: the functional equation; sin(pi x/2) = pi (x/2) sinc(x/2), exact at its zeros
    v = fnp.where(x <= -0.5, x, -1.0)
    w = 1 - v
    w_low = (-v - (w - (w + v))) + (1 - (w + v))     # 1 - v = w + w_low exactly (TwoSum)
    sine = np.pi * (v / 2) * sinc(v / 2)
    # (2 pi)^-w Gamma(w) at w + w_low, and (2 pi)^-w of the true 2 pi, not of float(2 pi)
    slope = P.digamma.bind(w) - math.log(2 * math.pi)
    power = fnp.power(2 * np.pi, -w)
    power = power + power * (slope * w_low - w * _TWO_PI_LOW)
    direct = 2 * power * sine * P.tgamma.bind(fnp.minimum(w, 170.0))
    logs = (math.log(2) + (v - 1) * math.log(2 * np.pi) + P.lgamma.bind(w)
            + fnp.log(fnp.abs(sine)))
    far = fnp.copysign(fnp.exp(logs), sine)
    reflected = fnp.where(w <= 170, direct, far) * P.zeta.bind(w, fnp.ones_like(w))
    reflected = fnp.where(sine == 0, 0.0, reflected)
    out = fnp.where(x >= 1, hurwitz, fnp.where(x > -0.5, near, reflected))
    out = fnp.where(fnp.isnan(x) | (x == -np.inf), np.nan, out)
    return to_result(cast(out, dtype), scalar=True)


def jv(v, z):
    """``scipy.special.jv``: the Bessel function of the first kind of real order ``v``
    (differentiable in ``z``). For complex ``z`` SciPy's (AMOS's); the order stays real
    (a complex ``v`` raises ``TypeError``, as SciPy's has no loop for it)."""
    order = np.dtype(result_type(operand(v)))
    if order.kind == "c":
        raise _ComplexArgument(f"the order v must be real (got {order}); only the argument z "
                               "may be complex")
    v, z = _float(v, z, complex_ok=True)
    if z.dtype.kind == "c":             # v, cast to z's dtype, comes back exactly
        v = fnp.real(v)
    return to_result(P.bessel_jv.bind(v, z), scalar=True)


jn = jv        # scipy.special.jn is jv


def j0(x):
    """``scipy.special.j0``: the Bessel function of the first kind of order 0.

    SciPy's own ``j0`` (Cephes's) for ``|x| <= 20``, :func:`jv`'s (AMOS's) beyond, where
    Cephes's asymptotic expansion is 15 ulp off the exact value at the median (AMOS's 1):
    so within 4 ulp of SciPy wherever SciPy's ``j0`` is correctly rounded (``jv`` alone was
    up to 23 off there), and within 25 ulp of the exact value on [-100, 100] where SciPy's
    is up to 101 off (``benchmarks/special_accuracy.py``). Differentiable to any order
    (``j0' = -jv(1, x)``)."""
    x = _float(x)
    near = fnp.abs(x) <= _J0_CEPHES_MAX
    # each branch sees 0 where it is not taken: jv(0, 0) is 9x cheaper than jv(0, 30)
    cephes = P.bessel_j0.bind(fnp.where(near, x, 0.0))
    amos = P.bessel_jv.bind(*_float(0.0, fnp.where(near, 0.0, x)))
    return to_result(fnp.where(near, cephes, amos), scalar=True)


# scipy.special.j0 (Cephes) up to this, jv(0, x) (AMOS) above (a 6000-point grid on
# [0, 100] against mpmath: at 8 or 15, jv is 5 to 23 ulp off SciPy's correctly rounded j0
# at a few points; at 20, nowhere more than 3)
_J0_CEPHES_MAX = 20.0


def j1(x):
    """``scipy.special.j1``: :func:`jv` of order 1."""
    return jv(1.0, x)


def _horner(coefs, t):
    """The polynomial of ``coefs`` lowest first."""
    return horner(coefs[::-1], t)


def sinc(x):
    """``numpy.sinc``: ``sin(pi x) / (pi x)``, 1 at 0.

    ``x = n/2 + r`` with ``n = round(2x)`` and ``|r| <= 1/4`` (exact), so ``sin(pi x)`` is
    ``+-sin(pi r)`` or ``+-cos(pi r)`` by ``n mod 4``: polynomials, no ``sin`` call and no
    rounding of ``pi x`` inside the sine (accurate next to the zeros at the integers too).
    float32 and float16 are computed in float64 and rounded once. Complex ``x`` takes
    ``sin(pi x) / (pi x)`` as NumPy does.
    """
    x = _float(x, complex_ok=True)
    if np.dtype(fnp.asarray(x).dtype).kind == "c":
        zero = x == 0
        pix = np.pi * fnp.where(zero, fnp.ones_like(x), x)
        return to_result(fnp.where(zero, fnp.ones_like(x), fnp.sin(pix) / pix), scalar=True)
    x, dtype = _wide(x)
    with np.errstate(invalid="ignore"):             # eager, at +-inf: NaN, as NumPy's
        return _sinc(x, dtype)


def _sinc(x, dtype):
    n = fnp.round(2 * x)
    r = x - 0.5 * n
    quarter = n - 4 * fnp.floor(0.25 * n)           # n mod 4
    sign = fnp.where(quarter >= 2, -1.0, 1.0)
    zero = n == 0
    xs = fnp.where(zero, 1.0, x)                    # the branch not taken stays finite
    rr = r * r
    near = _horner(SINC_F64, rr)                       # sinc itself for |x| <= 1/4
    even = sign * (r / xs) * near                   # sin(pi r) / (pi x)
    odd = sign * _horner(COSPI_F64, rr) / (np.pi * xs)
    out = fnp.where(zero, near, fnp.where(quarter % 2 == 0, even, odd))
    return to_result(cast(out, dtype), scalar=True)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp``: ``log(sum(b * exp(a)))`` over ``axis`` without overflow;
    ``return_sign=True`` returns ``(log|sum|, sign)`` for signed weights ``b``.

    Complex ``a`` or ``b``, as SciPy's: the principal ``log`` of the sum, and with
    ``return_sign=True`` the real ``log|sum|`` and the complex ``sum / |sum|``.

    Example::

        >>> logsumexp(np.array([1000.0, 1000.0]))
        np.float64(1000.6931471805599)
    """
    a = _float(a, complex_ok=True)
    if b is not None:
        a, b = _float(a, b, complex_ok=True)
    is_complex = np.dtype(fnp.asarray(a).dtype).kind == "c"
    top = fnp.max(fnp.real(a) if is_complex else a, axis=axis, keepdims=True)
    top = fnp.where(fnp.isfinite(top), top, 0.0)
    terms = fnp.exp(a - top)
    if b is not None:
        terms = terms * b
    total = fnp.sum(terms, axis=axis, keepdims=True)
    sign = fnp.sign(total)
    signed = return_sign or (b is not None and not is_complex)
    out = fnp.log(fnp.abs(total) if signed else total) + top
    if not keepdims:
        out = fnp.squeeze(out, axis=axis)
        sign = fnp.squeeze(sign, axis=axis)
    if return_sign:
        return to_result(out, scalar=True), to_result(sign, scalar=True)
    if b is not None and not is_complex:
        out = fnp.where(sign < 0, np.nan, out)
    return to_result(out, scalar=True)


def _shift(x, axis):
    """SciPy's shift: the maximum over ``axis`` (complex: NumPy's, by real part then
    imaginary). The results do not depend on it, nor do their derivatives: a complex one
    is held constant (its comparison has no derivative)."""
    top = fnp.max(x, axis=axis, keepdims=True)
    return stop_gradient(top) if np.dtype(fnp.asarray(x).dtype).kind == "c" else top


def softmax(x, axis=None):
    """``scipy.special.softmax``: ``exp(x) / sum(exp(x))`` over ``axis`` (all by default);
    complex ``x`` too, as SciPy's."""
    x = _float(x, complex_ok=True)
    e = fnp.exp(x - _shift(x, axis))
    return to_result(e / fnp.sum(e, axis=axis, keepdims=True))


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: ``x - logsumexp(x)`` over ``axis``; complex ``x`` as
    SciPy's (the principal ``log`` of the shifted sum, whose imaginary part may differ
    from ``x - logsumexp(x)``'s by a multiple of ``2 pi``)."""
    x = _float(x, complex_ok=True)
    top = _shift(x, axis)
    shifted = x - fnp.where(fnp.isfinite(top), top, 0.0)      # SciPy's shift
    return to_result(shifted - fnp.log(fnp.sum(fnp.exp(shifted), axis=axis, keepdims=True)))


def _naming_errors(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _ComplexArgument as e:
            raise TypeError(f"functorch_core.scipy.special.{name}: {e}") from None
    return wrapper


for _name in __all__:
    globals()[_name] = _naming_errors(_name, globals()[_name])
