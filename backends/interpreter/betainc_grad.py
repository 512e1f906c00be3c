"""``dI_x(a, b)/da`` and ``/db``, the derivatives of the regularized incomplete beta function
in its parameters, and its second derivatives in them, in NumPy (the interpreter's
implementation of ``betainc_grad``).

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

Second derivatives (``wrt`` a pair) carry ``A_ij``, ``B_ij`` (``ij`` in ``aa``, ``ab``, ``bb``)
alongside: ``A_ij = A1_ij + d_ij A2 + d_i A2_j + d_j A2_i + d A2_ij`` with each ``d``'s
second derivatives in closed form (``d`` is linear in ``b``), ``F_ij = (A_ij - F_i B_j - F_j
B_i - F B_ij) / B`` and ``I_ij = K (F (L_i L_j + L_ij) + F_i L_j + F_j L_i + F_ij)``, ``L =
log K``.

The fraction stops when the value and both derivatives have stopped changing (relative
``8 eps``) or after :data:`MAX_TERMS` terms. ``x = 0`` or ``x = 1`` gives 0; ``a <= 0``,
``b <= 0``, ``x`` outside [0, 1] or a NaN gives NaN.
"""

from __future__ import annotations

import numpy as np
from functorch_core.ir.numerics import BETAINC_BIG as _BIG
from functorch_core.ir.numerics import BETAINC_MAX_TERMS as MAX_TERMS
from functorch_core.ir.numerics import BETAINC_TOL as _TOL
from functorch_core.ir.numerics import BETAINC_TOL_SECOND as _TOL_SECOND


def _fraction(a, b, x, second=False):
    """``(K F, K (F d log K/da + dF/da), K (F d log K/db + dF/db))`` for points below the
    switch; with ``second``, also the second derivatives ``(I_aa, I_ab, I_bb)``."""
    from scipy.special import betaln, polygamma, psi
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
    # second derivatives (aa, ab, bb) of A and B at k - 2 and k - 1, and of F
    h_a2, h_b2, h_a1, h_b1, h_f = ([zero, zero, zero] for _ in range(5))
    live = np.ones(a.shape, bool)
    for n in range(1, MAX_TERMS + 1):
        m = n // 2
        if n % 2:
            den = (a + 2 * m) * (a + 2 * m + 1)
            d = -(a + m) * (a + b + m) * x / den
            inv = 1 / (a + m) + 1 / (a + b + m) - 1 / (a + 2 * m) - 1 / (a + 2 * m + 1)
            da = d * inv
            db = -(a + m) * x / den
            if second:      # d is linear in b
                inv2 = (-1 / (a + m) ** 2 - 1 / (a + b + m) ** 2 + 1 / (a + 2 * m) ** 2
                        + 1 / (a + 2 * m + 1) ** 2)
                dd = (d * (inv * inv + inv2),
                      db * (1 / (a + m) - 1 / (a + 2 * m) - 1 / (a + 2 * m + 1)), zero)
        else:
            den = (a + 2 * m - 1) * (a + 2 * m)
            d = m * (b - m) * x / den
            sig = 1 / (a + 2 * m - 1) + 1 / (a + 2 * m)
            da = -d * sig
            db = m * x / den
            if second:
                sig2 = 1 / (a + 2 * m - 1) ** 2 + 1 / (a + 2 * m) ** 2
                dd = (d * (sig * sig + sig2), -db * sig, zero)
        if second:          # v_ij = v1_ij + d_ij v2 + d_i v2_j + d_j v2_i + d v2_ij
            pairs = ((da, da), (da, db), (db, db))
            firsts = ((a2a, a2a), (a2a, a2b), (a2b, a2b)), ((b2a, b2a), (b2a, b2b), (b2b, b2b))
            h_new = [[v1 + dij * v2 + di * w2j + dj * w2i + d * v2ij
                      for v1, dij, (di, dj), (w2i, w2j), v2ij in zip(h1, dd, pairs, fs, h2,
                                                                     strict=True)]
                     for h1, v2, fs, h2 in ((h_a1, a2, firsts[0], h_a2),
                                            (h_b1, b2, firsts[1], h_b2))]
        new = (a1 + d * a2, a1a + da * a2 + d * a2a, a1b + db * a2 + d * a2b,
               b1 + d * b2, b1a + da * b2 + d * b2a, b1b + db * b2 + d * b2b)
        a2, a2a, a2b, b2, b2a, b2b = a1, a1a, a1b, b1, b1a, b1b
        a1, a1a, a1b, b1, b1a, b1b = new
        if second:
            h_a2, h_b2, h_a1, h_b1 = h_a1, h_b1, *h_new
        with np.errstate(all="ignore"):
            fn = a1 / b1
            fna = (a1a - fn * b1a) / b1
            fnb = (a1b - fn * b1b) / b1
            if second:      # A = F B, twice
                h_fn = [(ha - fi * bj - fj * bi - fn * hb) / b1
                        for ha, hb, (fi, fj), (bi, bj) in zip(
                            h_a1, h_b1, ((fna, fna), (fna, fnb), (fnb, fnb)),
                            ((b1a, b1a), (b1a, b1b), (b1b, b1b)), strict=True)]
        ok = live & (b1 != 0)
        moved = ok & ((np.abs(fn - f) > _TOL * np.abs(fn))
                      | (np.abs(fna - fa) > _TOL * np.abs(fna))
                      | (np.abs(fnb - fb) > _TOL * np.abs(fnb)))
        if second:
            for new_h, old_h in zip(h_fn, h_f, strict=True):
                moved |= ok & (np.abs(new_h - old_h) > _TOL_SECOND * (np.abs(new_h)
                                                                     + np.abs(fn)))
            h_f = [np.where(ok, nh, oh) for nh, oh in zip(h_fn, h_f, strict=True)]
        f, fa, fb = np.where(ok, fn, f), np.where(ok, fna, fa), np.where(ok, fnb, fb)
        big = np.abs(b1) > _BIG
        if big.any():       # rescale every carried number alike: the ratios stay
            s = np.where(big, 1 / _BIG, 1.0)
            a2, a2a, a2b, b2, b2a, b2b = a2 * s, a2a * s, a2b * s, b2 * s, b2a * s, b2b * s
            a1, a1a, a1b, b1, b1a, b1b = a1 * s, a1a * s, a1b * s, b1 * s, b1a * s, b1b * s
            h_a2, h_b2, h_a1, h_b1 = ([v * s for v in h] for h in (h_a2, h_b2, h_a1, h_b1))
        live &= moved | (b1 == 0)
        if not live.any():
            break
    first = (k * f, k * (f * dlk_a + fa), k * (f * dlk_b + fb))
    if not second:
        return first
    tri = polygamma(1, a + b)
    logs = ((dlk_a, dlk_a, 1 / (a * a) - polygamma(1, a) + tri), (dlk_a, dlk_b, tri),
            (dlk_b, dlk_b, tri - polygamma(1, b)))
    firsts = ((fa, fa), (fa, fb), (fb, fb))
    return first + tuple(k * (f * (li * lj + lij) + fi * lj + fj * li + hf)
                         for (li, lj, lij), (fi, fj), hf in zip(logs, firsts, h_f, strict=True))


# (i, j) of a second derivative -> its index among (I_aa, I_ab, I_bb); swapped roles: I =
# 1 - J(b, a) gives I_aa = -J_bb, I_ab = -J_ab, I_bb = -J_aa
_HESS = {(0, 0): 3, (0, 1): 4, (1, 1): 5}
_HESS_SWAPPED = {(0, 0): 5, (0, 1): 4, (1, 1): 3}


def betainc_grad(a, b, x, wrt):
    """``dI_x(a, b)/da`` (``wrt`` 0) or ``/db`` (1) elementwise, or a second derivative
    (``wrt`` a pair: ``(0, 0)``, ``(0, 1)``, ``(1, 1)``) (operands broadcast; the result in
    their dtype)."""
    dtype = np.result_type(a, b, x)
    a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1) & np.isfinite(a) & np.isfinite(b)
    out[valid & ((x == 0) | (x == 1))] = 0.0
    inner = valid & (x > 0) & (x < 1)
    swap = inner & (x > (a + 1) / (a + b + 2))
    plain = inner & ~swap
    second = isinstance(wrt, tuple)
    at, swapped = (_HESS[wrt], _HESS_SWAPPED[wrt]) if second else (1 + wrt, 2 - wrt)
    with np.errstate(all="ignore"):
        if plain.any():
            out[plain] = _fraction(a[plain], b[plain], x[plain], second)[at]
        if swap.any():      # I = 1 - I_(1-x)(b, a): a is the second parameter there
            out[swap] = -_fraction(b[swap], a[swap], 1 - x[swap], second)[swapped]
    return out.astype(dtype)
