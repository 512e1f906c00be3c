"""What every distribution shares: its operands in float64, the namespace object that holds
its functions, and their signatures (SciPy's argument names, so ``inspect.signature`` and
keyword calls work as on ``scipy.stats``)."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ... import numpy as fnp
from ...numpy.internal import array_operand, cast, operand, to_result
from ..internal import ComplexArgument as _ComplexArgument
from ..internal import float_operands as _float


def f64(*xs):
    """The operands broadcast together in float64 (SciPy computes its distributions in
    float64 and returns float64, for float32 and integer inputs too)."""
    out = _float(*(as_array(x) for x in xs))
    out = [out] if len(xs) == 1 else list(out)
    return [cast(x, np.float64) for x in out]


def as_array(x):
    return array_operand(operand(x))


def nan_where(bad, value):
    """``value``, NaN where ``bad``."""
    return fnp.where(bad, np.nan, value)


class Distribution:
    """A ``scipy.stats`` distribution's functions, as ``jax.scipy.stats`` has them: each
    attribute (``logpdf``, ``cdf``, ...) a plain function of arrays, traceable,
    differentiable, ``jit``- and ``vmap``-able."""

    def __init__(self, name, kind, functions):
        self.name = name
        self.kind = kind
        self._functions = dict(functions)
        for fname, fn in functions.items():
            setattr(self, fname, fn)

    @property
    def functions(self):
        """The names of the functions provided (a tuple, in definition order)."""
        return tuple(self._functions)

    def __repr__(self):
        return (f"<functorch_core.scipy.stats.{self.name}: {self.kind} distribution; "
                f"{', '.join(self._functions)}>")

    def __dir__(self):
        return [*super().__dir__(), *self._functions]


def public(dist, fname, params, impl, doc):
    """``impl(**arguments)`` behind SciPy's signature ``params`` (``(name, default)`` pairs;
    ``inspect.Parameter.empty`` for a required one), its errors naming the call."""
    sig = inspect.Signature([
        inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
        for p, d in params])
    qual = f"functorch_core.scipy.stats.{dist}.{fname}"

    @functools.wraps(impl)
    def fn(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{qual}{sig}: {e}") from None
        bound.apply_defaults()
        try:
            with np.errstate(all="ignore"):     # SciPy's: inf - inf outside the support etc.
                return to_result(impl(**bound.arguments), scalar=True)
        except _ComplexArgument as e:
            raise TypeError(f"{qual}: {e}") from None

    fn.__signature__ = sig
    fn.__name__ = fname
    fn.__qualname__ = f"{dist}.{fname}"
    fn.__doc__ = doc
    return fn


REQUIRED = inspect.Parameter.empty
