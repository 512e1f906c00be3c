"""``dI_x(a, b)/da`` and ``/db``, the derivatives of the regularized incomplete beta function
in its parameters, in NumPy (the interpreter's implementation of ``betainc_grad``).

The continued fraction Cephes and Numerical Recipes evaluate ``I`` with, differentiated
term by term alongside the value (float64 throughout, the result rounded to the operands'
dtype). For ``x <= (a + 1) / (a + b + 2)``:
``I = K F`` with ``K = x^a (1 - x)^b / (a B(a, b))`` and
``F = 1 / (1 + d_1 / (1 + d_2 / (1 + ...)))``,
``d_(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))``,
``d_(2m) = m (b - m) x / ((a + 2m - 1)(a + 2m))``. The convergents ``A_k / B_k`` of ``F`` follow
``A_k = A_(k-1) + d_(k-1) A_(k-2)`` (the same for ``B``); each ``A``, ``B`` is carried with its
derivatives in ``a`` and ``b``, and ``d log K/da = log x - 1/a - psi(a) + psi(a + b)``,
``d log K/db = log1p(-x) - psi(b) + psi(a + b)``. Above that point ``I = 1 - I_(1-x)(b, a)``,
so the roles of ``a`` and ``b`` swap and the signs flip.

The fraction stops when the value and both derivatives have stopped changing (relative
``8 eps``) or after :data:`MAX_TERMS` terms. ``x = 0`` or ``x = 1`` gives 0; ``a <= 0``,
``b <= 0``, ``x`` outside [0, 1] or a NaN gives NaN.
"""

from __future__ import annotations

import numpy as np

MAX_TERMS = 3000
# the stopping test's relative change: the derivatives' convergents drift by a few eps per
# term once converged (rounding), so a test at eps itself would run every term
_TOL = 8 * np.finfo(np.float64).eps
_BIG = 2.0 ** 256


def _fraction(a, b, x):
    """``(K F, K (F d log K/da + dF/da), K (F d log K/db + dF/db))`` for points below the
    switch."""
    from scipy.special import betaln, psi
    k = np.exp(a * np.log(x) + b * np.log1p(-x) - np.log(a) - betaln(a, b))
    both = psi(a + b)
    dlk_a = np.log(x) - 1 / a - psi(a) + both
    dlk_b = np.log1p(-x) - psi(b) + both
    zero, one = np.zeros_like(a), np.ones_like(a)
    # (A, dA/da, dA/db) and (B, ...) for k - 2 and k - 1: A_-1 = 1, A_0 = 0, B_-1 = 0, B_0 = 1,
    # then the first term (numerator 1, denominator 1): A_1 = 1, B_1 = 1
    a2, a2a, a2b, b2, b2a, b2b = zero, zero, zero, one, zero, zero
    a1, a1a, a1b, b1, b1a, b1b = one, zero, zero, one, zero, zero
    f, fa, fb = one, zero, zero
    live = np.ones(a.shape, bool)
    for n in range(1, MAX_TERMS + 1):
        m = n // 2
        if n % 2:
            den = (a + 2 * m) * (a + 2 * m + 1)
            d = -(a + m) * (a + b + m) * x / den
            da = d * (1 / (a + m) + 1 / (a + b + m) - 1 / (a + 2 * m) - 1 / (a + 2 * m + 1))
            db = -(a + m) * x / den
        else:
            den = (a + 2 * m - 1) * (a + 2 * m)
            d = m * (b - m) * x / den
            da = -d * (1 / (a + 2 * m - 1) + 1 / (a + 2 * m))
            db = m * x / den
        new = (a1 + d * a2, a1a + da * a2 + d * a2a, a1b + db * a2 + d * a2b,
               b1 + d * b2, b1a + da * b2 + d * b2a, b1b + db * b2 + d * b2b)
        a2, a2a, a2b, b2, b2a, b2b = a1, a1a, a1b, b1, b1a, b1b
        a1, a1a, a1b, b1, b1a, b1b = new
        with np.errstate(all="ignore"):
            fn = a1 / b1
            fna = (a1a - fn * b1a) / b1
            fnb = (a1b - fn * b1b) / b1
        ok = live & (b1 != 0)
        moved = ok & ((np.abs(fn - f) > _TOL * np.abs(fn))
                      | (np.abs(fna - fa) > _TOL * np.abs(fna))
                      | (np.abs(fnb - fb) > _TOL * np.abs(fnb)))
        f, fa, fb = np.where(ok, fn, f), np.where(ok, fna, fa), np.where(ok, fnb, fb)
        big = np.abs(b1) > _BIG
        if big.any():       # rescale every carried number alike: the ratios stay
            s = np.where(big, 1 / _BIG, 1.0)
            a2, a2a, a2b, b2, b2a, b2b = a2 * s, a2a * s, a2b * s, b2 * s, b2a * s, b2b * s
            a1, a1a, a1b, b1, b1a, b1b = a1 * s, a1a * s, a1b * s, b1 * s, b1a * s, b1b * s
        live &= moved | (b1 == 0)
        if not live.any():
            break
    return k * f, k * (f * dlk_a + fa), k * (f * dlk_b + fb)


def betainc_grad(a, b, x, wrt):
    """``dI_x(a, b)/da`` (``wrt`` 0) or ``/db`` (1) elementwise (operands broadcast; the
    result in their dtype)."""
    dtype = np.result_type(a, b, x)
    a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1) & np.isfinite(a) & np.isfinite(b)
    out[valid & ((x == 0) | (x == 1))] = 0.0
    inner = valid & (x > 0) & (x < 1)
    swap = inner & (x > (a + 1) / (a + b + 2))
    plain = inner & ~swap
    with np.errstate(all="ignore"):
        if plain.any():
            out[plain] = _fraction(a[plain], b[plain], x[plain])[1 + wrt]
        if swap.any():      # I = 1 - I_(1-x)(b, a): a is the second parameter there
            out[swap] = -_fraction(b[swap], a[swap], 1 - x[swap])[2 - wrt]
    return out.astype(dtype)
