"""Numbers that more than one layer computes with: polynomial coefficients, series terms,
and the limits and tolerances of the special functions' iterations. Data only.

Each user builds its own evaluation from them: the cpu backend as LLVM IR
(``backends/llvm/mathfuncs.py``, ``zeta.py``, ``special_grads.py``), the interpreter in NumPy
(``backends/betainc_grad.py``, ``igamma_grad.py``), the API layer as traced code
(``functorch_core/_portable_log.py``, ``scipy/special.py``, ``transforms/special.py``). Sharing
one table is what makes those agree, so a change here changes every one of them.
"""

from __future__ import annotations

from typing import NamedTuple

# log(1 + f) = f - f^2/2 + s (f^2/2 + s^2 q(s^2)), s = f / (2 + f), for 1 + f in
# [sqrt(1/2), sqrt(2)); q's coefficients (q(0) = 2/3), lowest degree first.
LOG_F32 = (0.6666668503957586, 0.3998878056602198, 0.2957994939197279)
LOG_F64 = (0.666666666666667, 0.39999999999899505, 0.28571428625975487, 0.2222221113479508,
           0.18182889125261723, 0.15331721600556042, 0.14616449685043406)
# ln 2 = hi + lo, hi with trailing zero bits so k * hi is exact for every exponent k
LN2_F32 = (0.693145751953125, 1.428606765330187e-06)
LN2_F64 = (0.6931471803691238, 1.9082149292705877e-10)

# sin(pi r) / (pi r) and cos(pi r) as polynomials in r^2 on |r| <= 1/4, lowest degree first
# (sinc, and digamma's reflection)
SINC_F64 = (1.0, -1.6449340668482264, 0.8117424252833524, -0.1907518241219269,
            0.02614784780776427, -0.002346080697728499, 0.00014842240256046724,
            -6.9128635678705135e-06)
COSPI_F64 = (1.0, -4.934802200544679, 4.0587121264167685, -1.3352627688545866,
             0.23533063035866447, -0.025806891379438902, 0.0019295740221589252,
             -0.00010463355639212206, 4.26420091972793e-06)

# Hurwitz zeta by Euler-Maclaurin: B_2j / (2j)!, j = 1, 2, ...
ZETA_BERNOULLI = (0.08333333333333333, -0.001388888888888889, 3.306878306878307e-05,
                  -8.267195767195768e-07, 2.08767569878681e-08, -5.284190138687493e-10,
                  1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
                  -2.174868698558062e-16, 5.5090028283602295e-18, -1.3954464685812522e-19)
# (direct terms N, Bernoulli terms M), keyed by "computed in double" (False: float32)
ZETA_TERMS = {True: (8, 12), False: (4, 8)}

# The continued fraction of betainc's parameter derivatives, and the series and continued
# fraction of igamma's (evaluated alike by the interpreter and the cpu backend):
BETAINC_MAX_TERMS = 3000
# the stopping test's relative change: the derivatives' convergents drift by a few eps per
# term once converged (rounding), so a test at eps itself would run every term
BETAINC_TOL = 8 * 2.0 ** -52
# the second derivatives' convergents drift by hundreds of eps per term once converged (they
# cancel), and one may be 0 itself: their test is relative to it plus F, at this tolerance (a
# test at BETAINC_TOL would run until the convergents underflow)
BETAINC_TOL_SECOND = 2.0 ** -40
BETAINC_BIG = 2.0 ** 256        # convergents are rescaled past this
IGAMMA_MAX_TERMS = 3000
IGAMMA_BIG = 2.0 ** 256


class ReducedPrecision(NamedTuple):
    """The integer constants of XLA's ReducePrecision on the bits of one float dtype, which
    the interpreter (NumPy), the cpu backend (LLVM IR) and the expansion of reduced-precision
    products all evaluate (each its own way, from these numbers):

    - ``shift`` > 0 rounds the mantissa to nearest, ties to even: ``u + (half - 1) + lsb``
      (``lsb`` the bit at ``shift``), then ``u & truncate``; 0 leaves the mantissa;
    - ``clamp``: the exponent is reduced too: a biased exponent field above ``max_field``
      becomes a signed inf, one at or below ``min_field`` a signed zero (XLA flushes the
      reduced format's subnormals);
    - ``keep_nan``: a NaN operand is the result (with no mantissa bit left, NaN becomes
      inf, as in XLA).
    """

    bits: int
    shift: int
    half: int
    truncate: int
    clamp: bool
    exponent_mask: int
    max_field: int
    min_field: int
    sign_mask: int
    keep_nan: bool


def reduced_precision(nexp: int, nmant: int, exponent_bits: int, mantissa_bits: int):
    """:class:`ReducedPrecision` for a float of ``nexp`` exponent and ``nmant`` mantissa
    bits rounded to ``exponent_bits`` and ``mantissa_bits`` (more than the float has: that
    part is left as it is)."""
    bits = 1 + nexp + nmant
    full = (1 << bits) - 1
    shift = max(nmant - mantissa_bits, 0)
    half = (1 << (shift - 1)) if shift else 0
    truncate = full & ~((1 << shift) - 1)
    bias, reduced_bias = (1 << (nexp - 1)) - 1, (1 << (min(exponent_bits, nexp) - 1)) - 1
    return ReducedPrecision(
        bits, shift, half, truncate, exponent_bits < nexp, ((1 << nexp) - 1) << nmant,
        (bias + reduced_bias) << nmant, (bias - reduced_bias) << nmant, 1 << (bits - 1),
        mantissa_bits > 0)
