"""Derives the polynomial coefficients of backends/llvm/ (mathfuncs.py, erf.py, bessel.py,
gamma.py), of ir/numerics.py (LOG_*, SINC_F64, COSPI_F64: shared with the API layer) and of
functorch_core/scipy/_normal_tables.py; a developer script, not package code.

Run from the repository root: ``python tools/fit_coefficients.py`` (the erf, ndtri, Bessel
and digamma fits need mpmath).

Each polynomial interpolates its target at Chebyshev nodes (near-minimax), solved exactly in
60-digit ``decimal`` arithmetic, so the printed coefficients are the double nearest each exact
one. The targets are smooth remainders (e.g. ``(e^r - 1 - r) / r^2``), so interpolation error,
not cancellation, is what limits them; the max error on a dense grid is printed with each.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

getcontext().prec = 60


def _exp_remainder(r: Decimal) -> Decimal:
    """(e^r - 1 - r) / r^2 by its series (no cancellation near 0)."""
    term, total, n = Decimal(1) / 2, Decimal(0), 2
    while abs(term) > Decimal(10) ** -58:
        total += term
        n += 1
        term = term * r / n
    return total


def _tanh_remainder(x: Decimal) -> Decimal:
    """(tanh(x) - x) / x^3, from tanh = (e^2x - 1)/(e^2x + 1) at 60 digits."""
    if x == 0:
        return Decimal(-1) / 3
    e2 = (2 * x).exp()
    return ((e2 - 1) / (e2 + 1) - x) / x ** 3


def _atanh(s: Decimal) -> Decimal:
    return ((1 + s) / (1 - s)).ln() / 2


def _log_remainder(s: Decimal) -> Decimal:
    """(2 atanh(s) / s - 2) / s^2: log(1 + f) = f - f^2/2 + s (f^2/2 + s^2 q(s^2)), s = f/(2+f)."""
    if s == 0:
        return Decimal(2) / 3
    return (2 * _atanh(s) / s - 2) / s ** 2


def _solve(a, b):
    """Gaussian elimination with partial pivoting, in Decimal."""
    n = len(b)
    m = [row[:] + [v] for row, v in zip(a, b, strict=True)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        for k in range(i + 1, n):
            f = m[k][i] / m[i][i]
            m[k] = [x - f * y for x, y in zip(m[k], m[i], strict=True)]
    out = [Decimal(0)] * n
    for i in reversed(range(n)):
        out[i] = (m[i][n] - sum(m[i][j] * out[j] for j in range(i + 1, n))) / m[i][i]
    return out


def fit(target, half_width, degree, even=False):
    """Coefficients c_j of sum_j c_j t^j (t = x, or x^2 when ``even``) interpolating ``target``
    at Chebyshev nodes of [-half_width, half_width] (of [0, half_width] in x when even)."""
    n = degree + 1
    if even:
        nodes = [half_width * math.cos(math.pi * (2 * i + 1) / (4 * n)) for i in range(n)]
    else:
        nodes = [half_width * math.cos(math.pi * (2 * i + 1) / (2 * n)) for i in range(n)]
    xs = [Decimal(v) for v in nodes]
    ts = [x * x for x in xs] if even else xs
    coeffs = _solve([[t ** j for j in range(n)] for t in ts], [target(x) for x in xs])
    return [float(c) for c in coeffs]


def max_error(target, coeffs, half_width, even, weight, points=401):
    """Max |poly - target| * weight(x) on a uniform grid, the polynomial in Decimal: the error
    relative to the whole function when ``weight`` is (what multiplies the remainder) / f(x)."""
    worst = 0.0
    for i in range(1, points + 1):
        x = Decimal(half_width) * (Decimal(2 * i - points) / points)
        t = x * x if even else x
        p = Decimal(0)
        for c in reversed(coeffs):
            p = p * t + Decimal(c)
        worst = max(worst, float(abs(p - target(x)) * weight(x)))
    return worst


def _exp_weight(r):
    return r * r / r.exp()


def _log_weight(s):
    return abs(s ** 3 / (2 * _atanh(s)))


def _tanh_weight(x):
    e2 = (2 * x).exp()
    return abs(x ** 3 / ((e2 - 1) / (e2 + 1)))


LOG_S = (math.sqrt(2) - 1) / (math.sqrt(2) + 1)     # |s| for mantissas in [sqrt(1/2), sqrt(2))
SPECS = {
    # name: (target, half width, degree, even, weight)
    "EXP_F32": (_exp_remainder, math.log(2) / 2, 4, False, _exp_weight),
    "EXP_F64": (_exp_remainder, math.log(2) / 2, 10, False, _exp_weight),
    "TANH_F32": (_tanh_remainder, 0.625, 5, True, _tanh_weight),
    "TANH_F64": (_tanh_remainder, 0.625, 11, True, _tanh_weight),
    "LOG_F32": (_log_remainder, LOG_S, 2, True, _log_weight),
    "LOG_F64": (_log_remainder, LOG_S, 6, True, _log_weight),
}


# --- erf and erfc (the targets need mpmath: a dev-only import, for this script alone) ------
# erfc(x) = e^-x^2 g(t) / (1 + 2x) for x >= 0, g(t) = (1 + 2x) erfcx(x) a polynomial in
# t = (x - K) / (x + K), which maps [0, inf) onto [-1, 1) (Shepherd and Laframboise,
# Math. Comp. 36 (1981), 249-253); erf(x) = x + x p(2x^2 - 1) on |x| <= 1.
ERFC_K = 3.75


def _fit_mp(target, degree):
    """Monomial coefficients (lowest first) interpolating ``target`` (of t, an mpf) at the
    Chebyshev nodes of [-1, 1], at 60 digits."""
    import mpmath as mp
    mp.mp.dps = 60
    n = degree + 1
    nodes = [mp.cos(mp.pi * (2 * i + 1) / (2 * n)) for i in range(n)]
    a = mp.matrix([[t ** j for j in range(n)] for t in nodes])
    coeffs = mp.lu_solve(a, mp.matrix([target(t) for t in nodes]))
    return [float(c) for c in coeffs], float(coeffs[0] - float(coeffs[0]))


def _erfc_g(t):
    import mpmath as mp
    if t == 1:
        return 2 / mp.sqrt(mp.pi)
    x = ERFC_K * (1 + t) / (1 - t)
    return (1 + 2 * x) * mp.erfc(x) * mp.exp(x * x)


def _erf_small(t):
    """erf(x) / x - 1 at x^2 = (t + 1) / 2."""
    import mpmath as mp
    x = mp.sqrt((t + 1) / 2)
    return mp.erf(x) / x - 1 if x != 0 else 2 / mp.sqrt(mp.pi) - 1


def _print_erf():
    """The erf/erfc tables: float64's, and float32's (evaluated in float64, rounded once)."""
    for name, target, degree in (("ERFC_G_F64", _erfc_g, 24), ("ERFC_G_F32", _erfc_g, 14),
                                 ("ERF_SMALL_F64", _erf_small, 12),
                                 ("ERF_SMALL_F32", _erf_small, 7)):
        coeffs, c0_lo = _fit_mp(target, degree)
        print(f"{name} = ({', '.join(repr(c) for c in coeffs)})")
        print(f"#   the constant's rest: {c0_lo!r}")


# ndtri and erfinv (functorch_core/scipy/_normal.py). Central, |d| <= NDTRI_CENTRAL:
# ndtri(1/2 + d) = d P(u), u = 2 d^2 / NDTRI_CENTRAL^2 - 1 (erfinv's table is P / (2 sqrt 2));
# tail, q = e^(-t^2/2) <= 1/2 - NDTRI_CENTRAL: ndtri(q) = -sqrt(t^2 H(s)), s = log t, H one
# polynomial per piece of s (NDTRI_TAIL_S), s mapped onto [-1, 1]
NDTRI_CENTRAL = 0.3
NDTRI_TAIL_S = (0.5845160879435279, 1.4, 2.1498841740238412, 3.655839600035736)


def _ndtri_mp(q):
    import mpmath as mp
    x0 = -mp.sqrt(-2 * mp.log(q)) if q < 0.1 else (q - mp.mpf(0.5)) * 2.5
    return mp.findroot(lambda x: mp.log(mp.ncdf(x) / q), x0)


def _ndtri_central(u, scale=1):
    import mpmath as mp
    d = mp.sqrt((u + 1) / 2) * NDTRI_CENTRAL
    return mp.sqrt(2 * mp.pi) * scale if d == 0 else -_ndtri_mp(mp.mpf(0.5) - d) / d * scale


def _ndtri_tail(u, lo, hi):
    import mpmath as mp
    t = mp.e ** ((lo + hi) / 2 + (hi - lo) / 2 * u)
    return (_ndtri_mp(mp.e ** (-t * t / 2)) / t) ** 2


def _print_ndtri():
    import mpmath as mp
    tables = [("NDTRI_CENTRAL_P", _ndtri_central, 16),
              ("ERFINV_CENTRAL_P", lambda u: _ndtri_central(u, 1 / (2 * mp.sqrt(2))), 16)]
    for i, degree in enumerate((16, 16, 18)):
        lo, hi = NDTRI_TAIL_S[i:i + 2]
        tables.append((f"NDTRI_TAIL_H{i}", lambda u, lo=lo, hi=hi: _ndtri_tail(u, lo, hi), degree))
    for name, target, degree in tables:
        coeffs, _ = _fit_mp(target, degree)
        print(f"{name} = ({', '.join(repr(c) for c in coeffs)})")


# sinc (functorch_core/scipy/special.py): on |r| <= 1/4, sin(pi r) / (pi r) and cos(pi r) as
# polynomials in r^2
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def _pi_series(r: Decimal, n: int) -> Decimal:
    """The sum over k of ``(-(pi r)^2)^k n! / (n + 2k)!``: sinc from n = 1, cospi from 0."""
    z = -(_PI * r) ** 2
    term, total = Decimal(1), Decimal(0)
    while abs(term) > Decimal(10) ** -58:
        total += term
        term = term * z / ((n + 1) * (n + 2))
        n += 2
    return total


def _sinc_target(r: Decimal) -> Decimal:
    return _pi_series(r, 1)


def _cospi_target(r: Decimal) -> Decimal:
    return _pi_series(r, 0)


SPECS |= {"SINC_F64": (_sinc_target, 0.25, 7, True, lambda r: Decimal(1)),
          "COSPI_F64": (_cospi_target, 0.25, 8, True, lambda r: Decimal(1))}


# i0e and i1e (bessel.py): on [lo, hi] in BESSEL_PIECES, i0e(a) and i1e(a) / a as polynomials
# in u = (2a - lo - hi) / (hi - lo); from BESSEL_FAR on, sqrt(a) i0e(a) and sqrt(a) i1e(a) as
# polynomials in v = 2 BESSEL_FAR / a - 1
BESSEL_PIECES = ((0.0, 4.0, 26), (4.0, 8.0, 22))
BESSEL_FAR = (8.0, 26)


def _bessel_near(k, lo, hi):
    import mpmath as mp

    def f(u):
        a = lo + (u + 1) * (hi - lo) / 2
        if a == 0:
            return mp.mpf(0.5) if k else mp.mpf(1)
        return mp.besseli(k, a) * mp.exp(-a) / (a if k else 1)
    return f


def _bessel_far(k):
    import mpmath as mp

    def f(v):
        if v == -1:
            return 1 / mp.sqrt(2 * mp.pi)
        a = 2 * BESSEL_FAR[0] / (v + 1)
        return mp.besseli(k, a) * mp.exp(-a) * mp.sqrt(a)
    return f


def _print_bessel():
    for k in (0, 1):
        for i, (lo, hi, degree) in enumerate(BESSEL_PIECES):
            coeffs, _ = _fit_mp(_bessel_near(k, lo, hi), degree)
            print(f"I{k}E_NEAR{i} = ({', '.join(repr(c) for c in coeffs)})")
        coeffs, _ = _fit_mp(_bessel_far(k), BESSEL_FAR[1])
        print(f"I{k}E_FAR = ({', '.join(repr(c) for c in coeffs)})")


# digamma (gamma.py): on [1, 2], psi(x) / (x - x0) (x0 its positive root); on [2, 4] and
# [4, 10], psi(x); each a polynomial in x mapped onto [-1, 1]; from 10 on, the asymptotic
# series log x - 1/(2x) - sum B_2k / (2k x^2k)
PSI_PIECES = ((1.0, 2.0, 24), (2.0, 4.0, 24), (4.0, 10.0, 26))


def _psi_piece(lo, hi, root):
    import mpmath as mp

    def f(u):
        x = lo + (u + 1) * (hi - lo) / 2
        if not root:
            return mp.digamma(x)
        return mp.digamma(x) / (x - root) if abs(x - root) > 1e-40 else mp.polygamma(1, root)
    return f


def _print_digamma():
    import mpmath as mp
    mp.mp.dps = 60
    x0 = mp.findroot(mp.digamma, 1.46)
    print(f"PSI_ROOT = ({float(x0)!r}, {float(x0 - float(x0))!r})")
    for i, (lo, hi, degree) in enumerate(PSI_PIECES):
        coeffs, _ = _fit_mp(_psi_piece(lo, hi, x0 if i == 0 else None), degree)
        print(f"PSI_PIECE{i} = ({', '.join(repr(c) for c in coeffs)})")
    series = [float(mp.bernoulli(2 * k) / (2 * k)) for k in range(1, 11)]
    print(f"PSI_SERIES = ({', '.join(repr(c) for c in series)})")


if __name__ == "__main__":
    for name, (target, width, degree, even, weight) in SPECS.items():
        coeffs = fit(target, width, degree, even)
        print(f"{name} = ({', '.join(repr(c) for c in coeffs)})")
        print(f"#   max relative error {max_error(target, coeffs, width, even, weight):.3g}")
    _print_erf()
    _print_ndtri()
    _print_bessel()
    _print_digamma()
