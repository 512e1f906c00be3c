"""``scipy.special``'s gamma-sign family (``_gamma_sign``) and the Bessel functions of
the second kind and the modified ones of real order (SciPy's compiled functions: Cephes's
``y0``/``y1``/``yn``, AMOS's ``iv``/``ive``, called from native kernels under ``jit``).
Exported from :mod:`functorch_core.scipy.special`."""

from __future__ import annotations

import numpy as np

from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import dtype_kind

from ..numpy.internal import array_operand, cast, operand, result_type
from . import _gamma_sign as _gs
from ._operands import rounded

gammasgn = rounded(_gs.gammasgn, "gammasgn", """``scipy.special.gammasgn``: the sign of the
    gamma function, 1 or -1 (-1 at ``-0``), NaN at its poles (``0 > x`` an integer, or
    ``-inf``) and at NaN; its derivative is 0.

    Args:
        x: array or scalar; integers become float64.

    Returns:
        The sign in ``x``'s floating dtype.

    Example::

        >>> gammasgn(np.array([2.5, -0.5, -1.5, -2.0]))
        array([ 1., -1.,  1., nan])
    """)
rgamma = rounded(_gs.rgamma, "rgamma", """``scipy.special.rgamma``: ``1 / gamma(x)``, 0 at
    the poles of gamma (and ``-inf``); within 5 ulp of SciPy's (``_gamma_sign``), its
    derivative ``-rgamma(x) digamma(x)`` (NaN at the poles).

    Args:
        x: array or scalar; integers become float64.

    Returns:
        ``1 / gamma(x)`` in ``x``'s floating dtype (float32 computed in float64 and rounded).

    Example::

        >>> rgamma(np.array([4.0, 0.5, -2.0]))
        array([0.16666667, 0.56418958, 0.        ])
    """)
beta = rounded(_gs.beta, "beta", """``scipy.special.beta``: ``B(a, b) = gamma(a) gamma(b) /
    gamma(a + b)`` by SciPy's cases (``_gamma_sign``): the ratio of gammas where they are
    finite, ``exp(betaln)`` with the gammas' signs beyond; differentiable in both
    arguments (``dB/da = B (digamma(a) - digamma(a + b))``).

    Args:
        a, b: arrays or scalars (broadcast together); integers become float64.

    Returns:
        ``B(a, b)`` in the arguments' floating dtype (float32 computed in float64 and
        rounded).

    Example::

        >>> beta(np.array([2.0, 0.5, 300.0]), np.array([3.0, 0.5, 2.0]))
        array([8.33333333e-02, 3.14159265e+00, 1.10741971e-05])
    """)
erfcinv = rounded(_gs.erfcinv, "erfcinv", """``scipy.special.erfcinv``: the inverse of
    :func:`erfc` on [0, 2] (``inf`` at 0, ``-inf`` at 2, NaN outside), as SciPy computes it,
    ``-ndtri(y / 2) / sqrt(2)``; its derivative ``-sqrt(pi)/2 exp(erfcinv(y)**2)``.

    Args:
        y: array or scalar; integers become float64.

    Returns:
        ``erfcinv(y)`` in ``y``'s floating dtype (float32 computed in float64 and rounded).

    Example::

        >>> erfcinv(np.array([1e-10, 0.5, 1.5]))
        array([ 4.57282497,  0.47693628, -0.47693628])
    """)


def _unary_doc(summary, value, call, result):
    """The docstring of a function of one argument ``x``."""
    return f"""{summary}

    Args:
        x: array or scalar; integers become float64.

    Returns:
        ``{value}`` in ``x``'s floating dtype (float32 computed in float64 and rounded).

    Example::

        >>> {call}
        {result}
    """


y0 = rounded(P.bessel_y0.bind, "y0", _unary_doc(
    """``scipy.special.y0``: the Bessel function of the second
    kind of order 0, SciPy's own (Cephes's; ``-inf`` at 0, NaN below); derivative ``-y1``.""",
    "Y_0(x)", "y0(np.array([0.5, 1.0, 10.0]))",
    "array([-0.44451873,  0.08825696,  0.05567117])"))
y1 = rounded(P.bessel_y1.bind, "y1", _unary_doc(
    """``scipy.special.y1``: the Bessel function of the second
    kind of order 1, SciPy's own (Cephes's); derivative ``y0(x) - y1(x) / x``.""",
    "Y_1(x)", "y1(np.array([0.5, 1.0, 10.0]))",
    "array([-1.47147239, -0.78121282,  0.24901542])"))
_yn = rounded(P.bessel_yn.bind, "yn", """``scipy.special.yn``: the Bessel function of the second
    kind of integer order ``n``, SciPy's own (its double-order loop: a non-integer ``n`` is
    truncated); differentiable in ``x`` (``(yn(n - 1, x) - yn(n + 1, x)) / 2``), not in
    ``n`` (``NotImplementedError``).

    Args:
        n: the order (array or scalar), broadcast with ``x``.
        x: the argument (array or scalar); integers become float64.

    Returns:
        ``Y_n(x)``: float64 for an integer ``n`` (SciPy's ``ld->d`` loop, even with a
        float32 ``x``), else the arguments' floating dtype (float32 computed in float64
        and rounded).

    Example::

        >>> yn(2, np.array([0.5, 1.0, 10.0]))
        array([-5.44137084, -1.65068261, -0.00586808])
    """)


def yn(n, x):
    if np.dtype(result_type(operand(n))).kind in "biu":     # SciPy's ld->d loop
        x = cast(array_operand(x), np.float64) if dtype_kind(np.dtype(
            result_type(operand(x)))) in "fbiu" else x
    return _yn(n, x)


yn.__doc__ = _yn.__doc__
# the arguments of iv, ive, kv and kve
_ORDER_AND_ARGUMENT = """
    Args:
        v: the order (array or scalar), broadcast with ``x``.
        x: the argument (array or scalar); integers become float64.
"""
iv = rounded(P.bessel_iv.bind, "iv", """``scipy.special.iv``: the modified Bessel function of the
    first kind of real order ``v`` and real argument, SciPy's own (NaN for ``x < 0`` and a
    non-integer ``v``); differentiable in ``x`` (``(iv(v - 1, x) + iv(v + 1, x)) / 2``), not
    in ``v`` (``NotImplementedError``). Complex ``x`` is not supported here (``TypeError``).
""" + _ORDER_AND_ARGUMENT + """
    Returns:
        ``I_v(x)`` in the arguments' floating dtype (float32 computed in float64 and
        rounded).

    Example::

        >>> iv(0.5, np.array([0.5, 1.0, 10.0]))
        array([5.87993087e-01, 9.37674888e-01, 2.77878460e+03])
    """)
ive = rounded(P.bessel_ive.bind, "ive", """``scipy.special.ive``: ``iv(v, x) * exp(-|x|)``,
    SciPy's own; differentiable in ``x`` (``(ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x)
    ive(v, x)``), not in ``v``.
""" + _ORDER_AND_ARGUMENT + """
    Returns:
        ``exp(-|x|) I_v(x)`` in the arguments' floating dtype (float32 computed in float64
        and rounded).

    Example::

        >>> ive(0.5, np.array([0.5, 1.0, 10.0]))
        array([0.35663583, 0.34495131, 0.12615663])
    """)
k0 = rounded(P.bessel_k0.bind, "k0", _unary_doc(
    """``scipy.special.k0``: the modified Bessel function of the
    second kind of order 0, SciPy's own (Cephes's; ``inf`` at 0, NaN below); derivative
    ``-k1``.""",
    "K_0(x)", "k0(np.array([0.5, 1.0, 10.0]))",
    "array([9.24419071e-01, 4.21024438e-01, 1.77800623e-05])"))
k1 = rounded(P.bessel_k1.bind, "k1", _unary_doc(
    """``scipy.special.k1``: the modified Bessel function of the
    second kind of order 1, SciPy's own (Cephes's); derivative ``-k0(x) - k1(x) / x``.""",
    "K_1(x)", "k1(np.array([0.5, 1.0, 10.0]))",
    "array([1.65644112e+00, 6.01907230e-01, 1.86487735e-05])"))
kv = rounded(P.bessel_kv.bind, "kv", """``scipy.special.kv``: the modified Bessel function of the
    second kind of real order ``v`` and real argument, SciPy's own (AMOS's; NaN for
    ``x < 0``); differentiable in ``x`` (``-(kv(v - 1, x) + kv(v + 1, x)) / 2``), not in
    ``v`` (``NotImplementedError``). Complex ``x`` is not supported here (``TypeError``).
""" + _ORDER_AND_ARGUMENT + """
    Returns:
        ``K_v(x)`` in the arguments' floating dtype (float32 computed in float64 and
        rounded).

    Example::

        >>> kv(0.5, np.array([0.5, 1.0, 10.0]))
        array([1.07504760e+00, 4.61068504e-01, 1.79934781e-05])
    """)
kve = rounded(P.bessel_kve.bind, "kve", """``scipy.special.kve``: ``kv(v, x) * exp(x)``,
    SciPy's own; differentiable in ``x`` (``kve(v, x) - (kve(v - 1, x) + kve(v + 1, x)) /
    2``), not in ``v``.
""" + _ORDER_AND_ARGUMENT + """
    Returns:
        ``exp(x) K_v(x)`` in the arguments' floating dtype (float32 computed in float64
        and rounded).

    Example::

        >>> kve(0.5, np.array([0.5, 1.0, 10.0]))
        array([1.77245385, 1.25331414, 0.39633273])
    """)

__all__ = ["beta", "erfcinv", "gammasgn", "iv", "ive", "k0", "k1", "kv", "kve", "rgamma", "y0",
           "y1", "yn"]
