"""Why a NumPy function has no traced version: the reason a user reads when calling it on a
traced array (``numpy.compress is not supported on traced arrays; <reason>``), reached
through NumPy's ``__array_function__``/``__array_ufunc__`` protocols on the tracer.

``REFUSED``: functions that cannot be traced, by the nature of their result (a shape that
depends on the values, text or a file, a memory layout...). ``NOT_YET``: functions that
can be, and are still to be built. Keys are public names (``numpy.X``,
``numpy.linalg.X``, ``numpy.fft.X``); tests/numpy/test_coverage.py checks that every
public callable of those namespaces is supported or named here (or is not about arrays).
"""

from __future__ import annotations

import functools

import numpy as np

DATA_DEPENDENT = ("the shape of its result depends on the values, and a traced array's "
                  "shape is fixed when the function is traced (fnp.unique and fnp.nonzero "
                  "take size=; masks combine with fnp.where)")
TEXT_OR_FILE = ("it turns the values into text or a file, which needs them computed: call "
                "it on the result of the jit-compiled function")
DATETIME = "datetime64 and timedelta64 are not dtypes of functorch_core's type system"
NO_MEMORY = ("a traced array has no memory of its own to compare; functionalize decides "
             "what aliases what")
MASK_ORDER = ("it hands out its values in the order of the mask's True entries, so which "
              "value lands where depends on how many entries are True (write "
              "fnp.where(mask, values, a) instead)")


def _yet(what):
    return f"not implemented yet (to be built: {what})"


REFUSED = {
    **{f"numpy.{n}": DATA_DEPENDENT for n in (
        "compress", "extract", "intersect1d", "setdiff1d", "setxor1d", "union1d",
        "unique_all", "unique_counts", "unique_inverse", "unique_values", "roots",
        "polydiv", "polymul")},   # polymul and polydiv drop leading zero coefficients
    **{f"numpy.{n}": TEXT_OR_FILE for n in (
        "array2string", "array_repr", "array_str", "save", "savetxt", "savez",
        "savez_compressed")},
    **{f"numpy.{n}": DATETIME for n in (
        "busday_count", "busday_offset", "is_busday", "datetime_as_string", "isnat")},
    "numpy.may_share_memory": NO_MEMORY, "numpy.shares_memory": NO_MEMORY,
    "numpy.place": MASK_ORDER, "numpy.putmask": MASK_ORDER,
}

NOT_YET = {
    "numpy.histogram2d": _yet("fnp.histogram's binning in two dimensions"),
    "numpy.histogramdd": _yet("fnp.histogram's binning in d dimensions"),
    "numpy.poly": _yet("the coefficients from real roots; complex roots give a real or a "
                       "complex result depending on their values"),
    "numpy.put": _yet("a scatter into the flattened array"),
    "numpy.frexp": _yet("the exponent and mantissa from the float's bits"),
    "numpy.ldexp": _yet("a scaling by a power of two without overflow in between"),
    "numpy.nextafter": _yet("a step of one unit in the last place, from the float's bits"),
    "numpy.spacing": _yet("the unit in the last place, from the float's bits"),
}

UFUNC_METHOD = ("of a ufunc, only calling it, its reduce and its at are traced (write outer "
                "products with broadcasting: x[:, None] * y)")


@functools.cache
def _public_names():
    """Each public callable of numpy, numpy.linalg and numpy.fft -> its public name."""
    names = {}
    for prefix, module in (("numpy.fft", np.fft), ("numpy.linalg", np.linalg),
                           ("numpy", np)):
        for name in dir(module):
            fn = getattr(module, name)
            if not name.startswith("_") and callable(fn) and not isinstance(fn, type):
                names.setdefault(fn, f"{prefix}.{name}")
    return names


def public_name(func) -> str:
    """``func``'s public name, ``numpy.linalg.solve``; its module and name otherwise."""
    try:
        return _public_names()[func]
    except (KeyError, TypeError):
        return f"{getattr(func, '__module__', None) or 'numpy'}.{func.__name__}"


def refusal(func, method="__call__") -> str:
    """The message for ``func`` (a NumPy function or ufunc) called on a traced array."""
    name = public_name(func)
    if method != "__call__":
        return f"{name}.{method} is not supported on traced arrays; {UFUNC_METHOD}"
    reason = REFUSED.get(name) or NOT_YET.get(name) or (
        "see functorch_core.numpy for the supported functions")
    return f"{name} is not supported on traced arrays; {reason}"


__all__: list[str] = []
