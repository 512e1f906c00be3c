"""SciPy's ufuncs called on traced arrays: ``scipy.special.gammaln(x)`` in unmodified SciPy
code reaches a tracer's ``__array_ufunc__`` with SciPy's ufunc, which looks it up here.

Not the user API (that is :mod:`functorch_core.scipy.special`). The tracer imports this
module the first time it meets a ufunc that is not NumPy's, while ``scipy.special`` is
imported, so ``import functorch_core`` does not import SciPy.
"""

from __future__ import annotations

import numpy as np
import scipy.special as _scipy_special

from . import special
from ._special_refusals import NOT_YET

# SciPy's ufunc -> the function of functorch_core.scipy.special of the same name (aliases,
# ``psi`` and ``digamma``, ``jn`` and ``jv``, are one ufunc)
UFUNC_CALLS = {getattr(_scipy_special, name): getattr(special, name)
               for name in special.__all__
               if isinstance(getattr(_scipy_special, name, None), np.ufunc)}

# every ufunc scipy.special offers -> its public name there (the refusal names the module)
SCIPY_NAMES = {fn: name for name, fn in sorted(vars(_scipy_special).items(), reverse=True)
               if isinstance(fn, np.ufunc) and not name.startswith("_")}


def refusal(ufunc, method):
    """The message for ``ufunc`` of scipy.special, which has no traced version (or whose
    ``method`` is not ``__call__``)."""
    name = SCIPY_NAMES[ufunc]
    if method != "__call__":
        return (f"scipy.special.{name}.{method} is not supported on traced arrays; of a "
                "ufunc, only calling it is traced")
    reason = NOT_YET.get(name, "see functorch_core.scipy.special for what is")
    return f"scipy.special.{name} is not supported on traced arrays; {reason}"


__all__ = ["NOT_YET", "SCIPY_NAMES", "UFUNC_CALLS", "refusal"]
