"""``erf`` from traced NumPy ops (Cephes' rational approximations, double precision), for
the exact ``gelu``. Built from ``exp``, ``where`` and arithmetic, so every transform applies."""

from __future__ import annotations

import functorch_core.numpy as fnp
from functorch_core._internal.horner import horner

_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
      7.00332514112805075473e3, 5.55923013010394962768e4)
_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
      2.26290000613890934246e4, 4.92673942608635921086e4)
_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
      4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
      9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
      9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
      1.65666309194161350182e3, 5.57535340817727675546e2)
_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
      6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
      1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)


def _pieces(x):
    a = fnp.abs(x)
    small = fnp.minimum(a, 1.0)
    z = small * small
    inner = small * horner(_T, z) / horner(_U, z)          # erf(|x|) for |x| <= 1
    big = fnp.maximum(a, 1.0)
    e = fnp.exp(-big * big)
    tail = fnp.where(big < 8.0, e * horner(_P, big) / horner(_Q, big),
                     e * horner(_R, big) / horner(_S, big))   # erfc(|x|) for |x| >= 1
    return a, inner, tail


def erf(x):
    """The error function, to double precision for float64 input."""
    a, inner, tail = _pieces(x)
    return fnp.where(a <= 1.0, inner, 1.0 - tail) * fnp.sign(x)


def erfc(x):
    """``1 - erf(x)``, without cancellation for large positive ``x``."""
    a, inner, tail = _pieces(x)
    small = 1.0 - inner * fnp.sign(x)
    return fnp.where(a <= 1.0, small, fnp.where(x > 0, tail, 2.0 - tail))
