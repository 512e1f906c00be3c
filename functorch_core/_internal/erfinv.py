"""``erfinv`` from traced NumPy ops, for ``random.normal``/``truncated_normal``.

The polynomials are Giles' ("Approximating the erfinv function", GPU Computing Gems,
2011), with the coefficients XLA's ``ErfInv32``/``ErfInv64`` use: float32 (and float16,
computed in float32) in two pieces of ``w = -log1p(-x*x)``, float64 in three. Built
from ``log1p`` (``portable_log``'s), ``sqrt``, ``where`` and arithmetic, so every transform
applies and every backend computes the same bits.
"""

from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from . import portable_log

_F32 = (  # (w below, shift, coefficients from the highest degree), the last piece is sqrt(w)
    (5.0, 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)),
    (None, 3.0, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)),
)
_F64 = (
    (6.25, 3.125, (
        -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
        1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
        6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
        2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
        4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
        0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
        0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, (
        2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
        3.0838856104922207635)),
    (None, 5.0, (
        -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
        -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
        2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
        -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
        7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
        1.0103004648645343977, 4.8499064014085844221)),
)


def _horner(coefs, t, dtype):
    p = np.asarray(coefs[0], dtype)
    for c in coefs[1:]:
        p = p * t + np.asarray(c, dtype)
    return p


def erfinv(x):
    """The inverse error function of a float array ``x`` in [-1, 1] (±inf at ±1)."""
    dtype = np.dtype(fnp.asarray(x).dtype)
    work = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
    x = fnp.asarray(x, dtype=work)
    out = erfinv_ratio(-portable_log.log1p(-x * x), work)
    inf = fnp.where(x < 0, np.asarray(-np.inf, work), np.asarray(np.inf, work))
    out = fnp.where(fnp.abs(x) == 1, inf, out * x)
    return fnp.asarray(out, dtype=dtype)


def erfinv_ratio(w, work):
    """``erfinv(x) / x`` as a function of ``w = -log(1 - x*x)`` (valid to ``w`` ~ 36 in
    float64), in dtype ``work``."""
    pieces = _F64 if work == np.float64 else _F32
    sqrt_w = fnp.sqrt(w)
    out = None
    for i, (below, shift, coefs) in reversed(list(enumerate(pieces))):
        t = (w if i == 0 else sqrt_w) - np.asarray(shift, work)
        p = _horner(coefs, t, work)
        out = p if out is None else fnp.where(w < np.asarray(below, work), p, out)
    return out
