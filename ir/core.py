"""The graph IR: abstract values, variables, literals, equations, graphs, primitives."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes

_MAX_BYTES = 2 ** 63 - 1


class ShapeTooLargeError(ValueError):
    """A shape whose byte size does not fit int64 (sizes and offsets would wrap)."""


@dataclass(frozen=True)
class AbstractArray:
    """The type of a value: a static shape, a dtype, and NEP 50 weakness.

    A weakly typed value comes from a bare Python scalar; it yields to the
    dtype of any strongly typed operand it meets (``x_f32 * 2.0`` is f32).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", dtypes.canonical(self.dtype))
        if any(d < 0 for d in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        if math.prod(self.shape) * self.dtype.itemsize > _MAX_BYTES:
            raise ShapeTooLargeError(
                f"the shape {self.shape} of {self.dtype} is too large: "
                f"{math.prod(self.shape)} elements of {self.dtype.itemsize} bytes; an array "
                "holds at most 2**63 - 1 bytes (the element count and byte offsets are int64, "
                "as in NumPy)")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def strong(self) -> AbstractArray:
        return AbstractArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape=None, dtype=None, weak_type=None) -> AbstractArray:
        return AbstractArray(self.shape if shape is None else shape,
                             self.dtype if dtype is None else dtype,
                             self.weak_type if weak_type is None else weak_type)

    def __str__(self):
        weak = "~" if self.weak_type else ""
        return f"{dtypes.SHORT_NAMES[self.dtype]}{weak}[{','.join(map(str, self.shape))}]"


def on_device(value) -> bool:
    """True for a GPU array: CuPy's (``__cuda_array_interface__``) or the simulator's
    stand-in (``backends.cuda.arrays.SimArray``)."""
    t = type(value)
    return t is not np.ndarray and (hasattr(t, "_fc_device") or
                                    hasattr(t, "__cuda_array_interface__"))


def aval_of(value) -> AbstractArray:
    """The abstract value of a concrete array, NumPy scalar or Python scalar."""
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return AbstractArray((), dtypes.python_scalar_dtype(value), weak_type=True)
    if on_device(value):        # no host copy (CuPy refuses one)
        return AbstractArray(tuple(value.shape), np.dtype(value.dtype))
    arr = np.asarray(value)
    return AbstractArray(arr.shape, arr.dtype)


class Var:
    """An SSA value of a graph; compared by identity."""

    __slots__ = ("aval", "hint")
    _ids = itertools.count()

    def __init__(self, aval: AbstractArray, hint: str | None = None):
        self.aval = aval
        self.hint = hint

    def __repr__(self):
        return f"Var({self.aval})"


class Lit:
    """A constant folded into the graph (a scalar, or a closed-over array)."""

    __slots__ = ("aval", "value")

    def __init__(self, value, aval: AbstractArray | None = None):
        if aval is None:
            aval = aval_of(value)
        self.value = np.asarray(value, dtype=aval.dtype)
        self.aval = aval

    def __repr__(self):
        return f"Lit({self.value!r})"


Atom = Var | Lit


@dataclass(eq=False)
class Eqn:
    """One primitive application: ``outputs = prim(*inputs, **params)``."""

    prim: Primitive
    inputs: tuple[Atom, ...]
    outputs: tuple[Var, ...]
    params: dict[str, Any]
    source: str = ""


@dataclass(eq=False)
class Graph:
    """A closed, topologically ordered list of equations."""

    inputs: list[Var]
    eqns: list[Eqn]
    outputs: list[Atom]

    @property
    def in_avals(self) -> list[AbstractArray]:
        return [v.aval for v in self.inputs]

    @property
    def out_avals(self) -> list[AbstractArray]:
        return [v.aval for v in self.outputs]

    def __str__(self):
        from .printer import format_graph
        return format_graph(self)

    def __repr__(self):
        return (f"<Graph: {len(self.inputs)} inputs, {len(self.eqns)} eqns, "
                f"{len(self.outputs)} outputs>")


@dataclass(eq=False)
class Primitive:
    """A primitive operation: a name, a shape/dtype rule and a few flags.

    ``shape_rule(*avals, **params)`` returns the list of output avals and
    raises ``ValueError``/``TypeError`` with a plain message on bad input.
    Rules of transforms and backends live in their own tables keyed by the
    primitive, the eager implementations of the catalogue's too (the backends
    register them in ``ir/eager.py``); ``impl`` is the eager implementation of
    a primitive made outside the catalogue. ``spec`` is the primitive's data
    (ir/specs.py: kinds, linear operands, reference and C library names).
    """

    name: str
    shape_rule: Callable[..., list[AbstractArray]]
    multiple_results: bool = False
    family: str = "other"
    mutates: bool = False
    impl: Callable | None = field(default=None, repr=False)
    spec: Any = field(default=None, repr=False)     # ir.specs.PrimSpec, its data

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        from .trace import bind
        return bind(self, *args, **params)

    def abstract_eval(self, *avals, **params) -> list[AbstractArray]:
        return self.shape_rule(*avals, **params)


def freeze(value):
    """Make a parameter value hashable (lists become tuples, dtypes stay dtypes)."""
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        raise TypeError("array-valued params are not allowed; pass the array as an input")
    return value
