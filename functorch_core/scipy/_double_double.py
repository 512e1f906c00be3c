"""Double-double arithmetic from traced float64 ops: a value is a pair ``(hi, lo)`` whose
sum carries about 106 bits. Error-free transformations (Knuth's two-sum, Dekker's split
and product), so they rely on every op rounding once, as IEEE float64 does without
fast-math (no backend here reassociates or contracts floating-point ops).

Only finite operands of moderate size: the split overflows above about ``1e300``.
"""

from __future__ import annotations

from .. import numpy as fnp

_SPLITTER = 134217729.0          # 2^27 + 1
# ln 2 with its last 21 bits zero (k * _LN2_HI is exact for |k| < 2^21), and the rest
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.4426950408889634
# 2 atanh(f) = 2 f + 2 f^3 (1/3 + f^2/5 + ...): terms to f^25, below 2^-62 for |f| <= 0.172
_ATANH = tuple(1.0 / (2 * j + 3) for j in range(12))


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def split(a):
    """``(hi, lo)`` with ``hi`` of 26 significant bits and ``hi + lo = a`` (Veltkamp)."""
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def mul(x, y):
    """``x y`` of two pairs (the head is the rounded product, not renormalized)."""
    p, e = two_prod(x[0], y[0])
    return p, e + (x[0] * y[1] + x[1] * y[0])


def div(x, y):
    """``x / y`` of two pairs."""
    q = x[0] / y[0]
    p, e = two_prod(q, y[0])
    return q, (((x[0] - p) - e) + (x[1] - q * y[1])) / y[0]


def log(x):
    """``log(x)`` of a positive pair: ``x = 2^k m`` with ``|log2 m| <= 1/2``, then
    ``log m = 2 atanh f``, ``f = (m - 1) / (m + 1)`` carried as a pair."""
    xh, xl = x
    k = fnp.rint(fnp.log(xh) * _INV_LN2)
    scale = fnp.exp2(-k)                  # exact: a power of two
    mh, ml = xh * scale, xl * scale
    num = two_sum(mh - 1.0, ml)           # mh - 1 is exact for mh in [1/2, 2]
    den_h, den_l = two_sum(mh, 1.0)
    fh, fl = div(num, (den_h, den_l + ml))
    f2 = fh * fh
    poly = fnp.full_like(fh, _ATANH[-1])
    for c in _ATANH[-2::-1]:
        poly = poly * f2 + c
    head, err = two_sum(k * _LN2_HI, 2 * fh)
    return head, err + (k * _LN2_LO + 2 * fl + 2 * fh * f2 * poly)
