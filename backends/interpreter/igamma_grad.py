"""``dP(a, x)/da`` and ``d^2P(a, x)/da^2``, the derivatives of the regularized lower incomplete
gamma function in its shape ``a``, in NumPy (the interpreter's implementation of
``igamma_grad_a`` and ``igamma_hess_a``).

The two expansions Cephes evaluates ``P`` and ``Q = 1 - P`` with, each differentiated in
``a`` term by term alongside the value (float64 throughout, the result rounded to the
operand's dtype):

- ``x <= 1`` or ``x <= a``: the series ``P = x^a e^-x / Gamma(a + 1) * sum_n c_n`` with
  ``c_0 = 1``, ``c_n = c_(n-1) x / (a + n)``, so ``dc_n/da = x/(a + n) (dc_(n-1) -
  c_(n-1)/(a + n))``; the prefactor's derivative is itself times ``g = log x - psi(a + 1)``,
  its second ``g^2 - psi'(a + 1)``.
- otherwise: Legendre's continued fraction for ``Q`` as convergents ``p_k / q_k`` of the
  three-term recurrence (``y = 1 - a + k``, ``z = x + 2k + 2 - a``), each ``p``, ``q`` carried
  with its ``a``-derivatives (``y`` and ``z`` are linear in ``a``); ``dP/da = -dQ/da``.

For the second derivative every term carries its second derivative too (``c_n'' =
r (c_(n-1)'' - 2 c_(n-1)'/(a + n) + 2 c_(n-1)/(a + n)^2)``, ``r = x / (a + n)``; ``f'' = (p''
- 2 f' q' - f q'') / q`` for a convergent ``f = p / q``). Both stop when the value and the
derivatives have stopped changing (relative ``eps``), or
after :data:`MAX_TERMS` terms (the series needs about ``8 sqrt(a)`` terms near ``x = a``:
accurate to ``a`` about 10^5). ``x = 0`` or ``x = inf`` gives 0; ``a <= 0``, ``x < 0`` or a
NaN gives NaN.
"""

from __future__ import annotations

import numpy as np
from functorch_core.ir.numerics import IGAMMA_BIG as _BIG
from functorch_core.ir.numerics import IGAMMA_MAX_TERMS as MAX_TERMS

_EPS = np.finfo(np.float64).eps


def _series(a, x, order):
    from scipy.special import gammaln, polygamma, psi
    pre = np.exp(a * np.log(x) - x - gammaln(a + 1))
    g = np.log(x) - psi(a + 1)
    dpre = pre * g
    c, dc, d2c = np.ones_like(a), np.zeros_like(a), np.zeros_like(a)
    s, ds, d2s = c.copy(), dc.copy(), d2c.copy()
    r = a.copy()
    live = np.ones(a.shape, bool)
    for _ in range(MAX_TERMS):
        r = r + 1
        ratio = x / r
        if order == 2:      # (ratio c)'' with ratio' = -ratio/r, ratio'' = 2 ratio/r^2
            d2c = np.where(live, ratio * (d2c - 2 * dc / r + 2 * c / (r * r)), d2c)
            d2s = d2s + np.where(live, d2c, 0)
        dc = np.where(live, ratio * (dc - c / r), dc)
        c = np.where(live, c * ratio, c)
        s, ds = s + np.where(live, c, 0), ds + np.where(live, dc, 0)
        still = (np.abs(c) > _EPS * np.abs(s)) | (np.abs(dc) > _EPS * np.abs(ds))
        if order == 2:
            still |= np.abs(d2c) > _EPS * np.abs(d2s)
        live &= still
        if not live.any():
            break
    if order == 1:
        return dpre * s + pre * ds
    d2pre = pre * (g * g - polygamma(1, a + 1))
    return d2pre * s + 2 * dpre * ds + pre * d2s


def _continued_fraction(a, x, order):
    """``dQ/da`` (``d^2Q/da^2``: ``order`` 2) for ``x > 1`` and ``x > a``."""
    from scipy.special import gammaln, polygamma, psi
    pre = np.exp(a * np.log(x) - x - gammaln(a))
    g = np.log(x) - psi(a)
    dpre = pre * g
    y, z = 1 - a, x + 2 - a
    p2, q2, p1, q1 = np.ones_like(a), x.copy(), x + 1, z * x
    dp2, dq2, dp1, dq1 = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a), -x
    d2p2, d2q2, d2p1, d2q1 = (np.zeros_like(a) for _ in range(4))
    f = p1 / q1
    df = (dp1 * q1 - p1 * dq1) / (q1 * q1)
    d2f = (d2p1 - 2 * df * dq1 - f * d2q1) / q1
    live = np.ones(a.shape, bool)
    for k in range(1, MAX_TERMS + 1):
        y, z = y + 1, z + 2
        yk, dyk = y * k, -float(k)
        p = p1 * z - p2 * yk
        q = q1 * z - q2 * yk
        dp = dp1 * z - p1 - dp2 * yk - p2 * dyk
        dq = dq1 * z - q1 - dq2 * yk - q2 * dyk
        # z' = -1, (yk)' = -k, both linear in a
        d2p = d2p1 * z - 2 * dp1 - d2p2 * yk - 2 * dp2 * dyk
        d2q = d2q1 * z - 2 * dq1 - d2q2 * yk - 2 * dq2 * dyk
        ok = live & (q != 0)
        with np.errstate(all="ignore"):
            fk = p / q
            dfk = (dp * q - p * dq) / (q * q)
            d2fk = (d2p - 2 * dfk * dq - fk * d2q) / q        # p = f q, twice
        moved = ok & ((np.abs(fk - f) > _EPS * np.abs(fk))
                      | (np.abs(dfk - df) > _EPS * np.abs(dfk)))
        if order == 2:
            moved |= ok & (np.abs(d2fk - d2f) > _EPS * np.abs(d2fk))
        f, df, d2f = np.where(ok, fk, f), np.where(ok, dfk, df), np.where(ok, d2fk, d2f)
        p2, q2, p1, q1 = p1, q1, p, q
        dp2, dq2, dp1, dq1 = dp1, dq1, dp, dq
        d2p2, d2q2, d2p1, d2q1 = d2p1, d2q1, d2p, d2q
        big = np.abs(p) > _BIG
        if big.any():       # rescale every carried number alike: the ratios stay
            scale = np.where(big, 1 / _BIG, 1.0)
            p2, q2, p1, q1 = p2 * scale, q2 * scale, p1 * scale, q1 * scale
            dp2, dq2, dp1, dq1 = dp2 * scale, dq2 * scale, dp1 * scale, dq1 * scale
            d2p2, d2q2, d2p1, d2q1 = d2p2 * scale, d2q2 * scale, d2p1 * scale, d2q1 * scale
        live &= moved | (q == 0)
        if not live.any():
            break
    if order == 1:
        return dpre * f + pre * df
    d2pre = pre * (g * g - polygamma(1, a))
    return d2pre * f + 2 * dpre * df + pre * d2f


def igamma_grad_a(a, x, order=1):
    """``dP(a, x)/da`` (``order`` 1) or ``d^2P(a, x)/da^2`` (2) elementwise (``a``, ``x``
    broadcast; the result in their dtype)."""
    dtype = np.result_type(a, x)
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (x >= 0)
    out[valid & ((x == 0) | np.isinf(x))] = 0.0
    inner = valid & (x > 0) & np.isfinite(x) & np.isfinite(a)
    use_cf = inner & (x > 1) & (x > a)
    use_series = inner & ~use_cf
    with np.errstate(all="ignore"):
        if use_series.any():
            out[use_series] = _series(a[use_series], x[use_series], order)
        if use_cf.any():
            out[use_cf] = -_continued_fraction(a[use_cf], x[use_cf], order)
    return out.astype(dtype)
