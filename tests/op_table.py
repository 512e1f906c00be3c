"""The op table: one row per NumPy function that ``functorch_core.numpy`` must match.

A row names the function, says how to call it (``fn(m, *args, **kwargs)`` with
``m`` either ``numpy`` or ``functorch_core.numpy``), how to draw inputs for a
given dtype (a hypothesis strategy of :class:`Case`: ``args`` are the arrays and
Python scalars that get traced, ``kwargs`` are static parameters), which dtypes
NumPy accepts for the first operand, a tolerance multiplier, and the known
exceptions with their reasons.

Tests cross this table with NumPy parity (eagerly, under ``jit``, through
NumPy's own API on tracers) and with the graph passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

ALL_DTYPES = tuple(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))
DTYPE_NAMES = ("bool_", "int8", "int16", "int32", "int64", "uint8",
               "float16", "float32", "float64", "complex64", "complex128")


def kinds(k: str) -> tuple[np.dtype, ...]:
    return tuple(d for d in ALL_DTYPES if d.kind in k)


NUMERIC = ALL_DTYPES
NO_BOOL = kinds("iufc")
REAL = kinds("biuf")
REAL_NO_BOOL = kinds("iuf")
INEXACT = kinds("fc")
FLOAT = kinds("f")
INT_BOOL = kinds("biu")

# Relative tolerance by result dtype; a row's ``tol`` multiplies it.
RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12,
        np.dtype(np.complex64): 1e-5, np.dtype(np.complex128): 1e-12}

MODES = ("eager", "jit", "np")   # fnp eagerly, jit(fnp ...), jit(np ...) dispatching on tracers


@dataclass(frozen=True)
class Case:
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def __repr__(self):
        def show(a):
            if isinstance(a, np.ndarray):
                return f"np.array({a.tolist()!r}, dtype=np.{a.dtype})"
            return repr(a)
        kw = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"Case({', '.join(map(show, self.args))}{kw})"


@dataclass(frozen=True)
class Known:
    """A known failure: why, a reproducer, the modes (MODES and 'passes') and dtypes it
    affects, and which inputs trigger it (``when(case)``; None: any input)."""

    reason: str
    example: Case
    modes: tuple[str, ...] = (*MODES, "passes")
    dtypes: tuple[np.dtype, ...] | None = None      # None: every dtype
    when: Any = None

    def hits(self, mode: str, dtype, case=None) -> bool:
        return (mode in self.modes
                and (self.dtypes is None or np.dtype(dtype) in self.dtypes)
                and (case is None or self.when is None or self.when(case)))


def _is_complex(a) -> bool:
    return isinstance(a, complex) or np.asarray(a).dtype.kind == "c"


def has_complex(case: Case) -> bool:
    return any(_is_complex(a) for a in case.args if a is not None)


def mixes_complex(case: Case) -> bool:
    flags = [_is_complex(a) for a in case.args if a is not None]
    return any(flags) and not all(flags)


@dataclass(frozen=True)
class Op:
    name: str                        # the test id; by default also the fnp function's name
    fn: Any                          # fn(m, *args, **kwargs)
    gen: Any                         # gen(dtype) -> strategy of Case
    dtypes: tuple = NUMERIC          # first-operand dtypes NumPy accepts
    tol: float = 1.0                 # multiplier of RTOL
    np_api: bool = True              # fn(np, *tracers) dispatches through NumPy's protocols
    known: tuple[Known, ...] = ()

    def __repr__(self):
        return f"<op {self.name}>"

    def knowns(self, mode, dtype=None, case=None):
        return [k for k in self.known
                if mode in k.modes and (dtype is None or k.hits(mode, dtype, case))]


# --- value strategies ----------------------------------------------------------

SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0)


def elements(dtype, lo=-20.0, hi=20.0, *, specials=True, int_lo=None, int_hi=None):
    """Scalars of ``dtype``; floats in [lo, hi] plus, sometimes, NaN, infinities and -0."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = info.min if int_lo is None else max(info.min, int_lo)
        b = info.max if int_hi is None else min(info.max, int_hi)
        return st.integers(a, b)
    if dt.kind == "f":
        width = dt.itemsize * 8
        base = st.floats(lo, hi, width=width)
        if not specials:
            return base
        return st.one_of(base, base, base, st.sampled_from(SPECIAL_FLOATS))
    width = dt.itemsize * 8
    bound = max(abs(lo), abs(hi))
    return st.builds(complex, st.floats(lo, hi, width=width // 2),
                     st.floats(-bound, bound, width=width // 2))


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def array(dtype, shape, **kw):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **kw))


def _int_range(dtype, lo, hi):
    return {"int_lo": lo, "int_hi": hi} if np.dtype(dtype).kind in "iu" else {}


# --- input generators: gen(dtype) -> strategy of Case -------------------------

def unary(lo=-20.0, hi=20.0, *, specials=True, min_side=0, **kwargs_strategies):
    """One array; ``kwargs_strategies`` draw static keyword arguments."""
    @st.composite
    def draw_case(draw, dtype):
        x = draw(array(dtype, shapes(min_side=min_side), lo=lo, hi=hi, specials=specials))
        kw = {k: draw(s) for k, s in kwargs_strategies.items()}
        return Case((x,), kw)
    return draw_case


def python_scalar_like(dtype):
    """A Python scalar that NumPy 2 accepts next to an array of ``dtype`` without overflow."""
    dt = np.dtype(dtype)
    choices = [st.booleans(), st.floats(-10, 10), st.builds(complex, st.floats(-5, 5),
                                                            st.floats(-5, 5))]
    if dt.kind == "u":
        choices.append(st.integers(0, 100))
    else:
        choices.append(st.integers(-100, 100))
    return st.one_of(*choices)


def binary(lo=-20.0, hi=20.0, *, specials=True, rhs_int_range=None, mixed=True, scalars=True):
    """Two mutually broadcastable arrays; sometimes of different dtypes, sometimes a
    Python scalar in place of one operand."""
    @st.composite
    def draw_case(draw, dtype):
        s1, s2 = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                          max_side=4)).input_shapes
        dt2 = draw(st.sampled_from(ALL_DTYPES)) if mixed and draw(st.integers(0, 3)) == 0 \
            else np.dtype(dtype)
        extra = _int_range(dt2, *rhs_int_range) if rhs_int_range else {}
        x = draw(array(dtype, s1, lo=lo, hi=hi, specials=specials))
        y = draw(array(dt2, s2, lo=lo, hi=hi, specials=specials, **extra))
        if scalars and draw(st.integers(0, 4)) == 0:
            scalar = draw(python_scalar_like(dtype))
            if rhs_int_range and isinstance(scalar, int) and not isinstance(scalar, bool):
                scalar = min(max(scalar, rhs_int_range[0]), rhs_int_range[1])
            if draw(st.booleans()) or rhs_int_range:
                return Case((x, scalar))
            return Case((scalar, x))
        return Case((x, y))
    return draw_case


@st.composite
def _axis_args(draw, ndim, *, tuples=True, none=True, keepdims=True):
    """axis (None, an int -- negative too -- or a tuple) and keepdims, for reductions."""
    options = []
    if none:
        options.append(st.none())
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
        if tuples:
            options.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)
                           .map(tuple))
    kw = {"axis": draw(st.one_of(*options))} if options else {}
    if keepdims and draw(st.booleans()):
        kw["keepdims"] = True
    return kw


def reduction(*, tuples=True, none=True, keepdims=True, ddof=False, lo=-20.0, hi=20.0,
              specials=True, min_side=0, min_dims=0):
    @st.composite
    def draw_case(draw, dtype):
        x = draw(array(dtype, shapes(min_dims=min_dims, min_side=min_side), lo=lo, hi=hi,
                       specials=specials))
        kw = draw(_axis_args(x.ndim, tuples=tuples, none=none, keepdims=keepdims))
        if ddof and draw(st.booleans()):
            kw["ddof"] = draw(st.integers(0, 2))
        return Case((x,), kw)
    return draw_case


def cumulative():
    @st.composite
    def draw_case(draw, dtype):
        x = draw(array(dtype, shapes(max_side=5), lo=-3, hi=3))
        axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim \
            else None
        return Case((x,), {"axis": axis})
    return draw_case


def one_array(make_kwargs, *, min_dims=0, max_dims=3, min_side=0, max_side=4, lo=-20.0,
              hi=20.0, specials=True):
    """One array of a drawn shape; ``make_kwargs(draw, shape)`` draws static arguments."""
    @st.composite
    def draw_case(draw, dtype):
        shape = draw(shapes(min_dims, max_dims, min_side, max_side))
        x = draw(array(dtype, shape, lo=lo, hi=hi, specials=specials))
        return Case((x,), make_kwargs(draw, shape))
    return draw_case


def _reshape_kwargs(draw, shape):
    size = math.prod(shape)
    options = [(size,), (-1,), (1, size), (size, 1), (-1, 1), (1, -1, 1), shape[::-1]]
    if size % 2 == 0 and size:
        options += [(2, -1), (2, size // 2, 1)]
    return {"newshape": draw(st.sampled_from(options))}


def _transpose_kwargs(draw, shape):
    if draw(st.booleans()):
        return {"axes": None}
    return {"axes": tuple(draw(st.permutations(range(len(shape)))))}


def _two_axes(draw, shape):
    n = len(shape)
    return {"a1": draw(st.integers(-n, n - 1)), "a2": draw(st.integers(-n, n - 1))}


def _moveaxis_kwargs(draw, shape):
    n = len(shape)
    k = draw(st.integers(1, n))
    src = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))
    dst = draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k,
                        unique_by=lambda a: a % n))
    return {"src": tuple(src), "dst": tuple(dst)}


def _expand_dims_kwargs(draw, shape):
    n = len(shape) + 1
    if draw(st.booleans()):
        return {"axis": draw(st.integers(-n, n - 1))}
    k = draw(st.integers(1, 2))
    n = len(shape) + k
    return {"axis": tuple(draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k,
                                        unique=True)))}


@st.composite
def _squeeze_case(draw, dtype):
    shape = draw(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=4).map(tuple))
    x = draw(array(dtype, shape))
    ones = [i for i, d in enumerate(shape) if d == 1]
    options = [st.none()]
    if ones:
        options += [st.sampled_from(ones), st.lists(st.sampled_from(ones), unique=True,
                                                    min_size=1).map(tuple)]
    return Case((x,), {"axis": draw(st.one_of(*options))})


@st.composite
def _broadcast_to_case(draw, dtype):
    target = draw(shapes(max_dims=4))
    src = draw(hnp.broadcastable_shapes(target, max_dims=len(target), min_side=0))
    return Case((draw(array(dtype, src)),), {"shape": target})


@st.composite
def _broadcast_arrays_case(draw, dtype):
    n = draw(st.integers(1, 3))
    ss = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, max_dims=3)).input_shapes
    dts = [np.dtype(dtype)] + [draw(st.sampled_from(ALL_DTYPES)) for _ in ss[1:]]
    return Case(tuple(draw(array(d, s)) for d, s in zip(dts, ss, strict=True)))


def joined(kind):
    """Several arrays for concatenate/stack/hstack/vstack, sometimes of mixed dtypes.

    ``kind="flat"`` draws unrelated shapes (for ``concatenate(..., axis=None)``).
    """
    @st.composite
    def draw_case(draw, dtype):
        base = list(draw(shapes(min_dims=1 if kind == "concatenate" else 0)))
        kw, vary = {}, None
        if kind == "concatenate":
            kw["axis"] = vary = draw(st.integers(-len(base), len(base) - 1))
        elif kind == "stack":
            kw["axis"] = draw(st.integers(-len(base) - 1, len(base)))
        elif kind == "hstack" and base:
            vary = 1 if len(base) >= 2 else 0
        elif kind == "vstack" and len(base) >= 2:
            vary = 0
        arrays = []
        for i in range(draw(st.integers(1, 3))):
            shape = list(draw(shapes())) if kind == "flat" else list(base)
            if vary is not None:
                shape[vary] = draw(st.integers(0, 3))
            d = dtype if i == 0 or draw(st.integers(0, 3)) else draw(st.sampled_from(ALL_DTYPES))
            arrays.append(draw(array(d, tuple(shape))))
        return Case(tuple(arrays), kw)
    return draw_case


def _split_kwargs(draw, shape):
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    divisors = [d for d in range(1, 5) if n % d == 0] if n else [1, 2]
    if draw(st.booleans()):
        return {"sections": draw(st.sampled_from(divisors)), "axis": axis}
    cuts = draw(st.lists(st.integers(-n - 1, n + 1), max_size=3))
    return {"sections": cuts, "axis": axis}


def _tile_kwargs(draw, shape):
    reps = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=4)
                          .map(tuple)))
    return {"reps": reps}


def _repeat_kwargs(draw, shape):
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1))) if shape \
        else None
    n = math.prod(shape) if axis is None else shape[axis]
    if draw(st.booleans()):
        return {"repeats": draw(st.integers(0, 3)), "axis": axis}
    return {"repeats": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), "axis": axis}


def _flip_kwargs(draw, shape):
    n = len(shape)
    if not n:
        return {"axis": None}
    return {"axis": draw(st.one_of(st.none(), st.integers(-n, n - 1),
                                   st.lists(st.integers(0, n - 1), unique=True).map(tuple)))}


def _roll_kwargs(draw, shape):
    n = len(shape)
    if draw(st.booleans()) or not n:
        return {"shift": draw(st.integers(-6, 6)), "axis": None}
    axes = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))
    if draw(st.booleans()):
        return {"shift": draw(st.integers(-6, 6)), "axis": tuple(axes)}
    return {"shift": tuple(draw(st.integers(-6, 6)) for _ in axes), "axis": tuple(axes)}


def _pad_kwargs(draw, shape):
    n = len(shape)
    form = draw(st.integers(0, 2))
    if form == 0:
        width = draw(st.integers(0, 2))
    elif form == 1:
        width = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    else:
        width = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(n))
    return {"pad_width": width, "constant_values": draw(st.sampled_from([0, 1, 2]))}


# --- indexing -----------------------------------------------------------------

@st.composite
def _basic_index(draw, shape):
    items, axis = [], 0
    ellipsis_used = False
    while axis < len(shape) and draw(st.integers(0, 3)):
        kind = draw(st.sampled_from(["slice", "slice", "int", "none", "ellipsis"]))
        n = shape[axis]
        if kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
            items.append(slice(draw(bound), draw(bound), step))
            axis += 1
        elif kind == "int" and n:
            items.append(draw(st.integers(-n, n - 1)))
            axis += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not ellipsis_used:
            ellipsis_used = True
            items.append(Ellipsis)
            axis = len(shape) - draw(st.integers(0, len(shape) - axis))
    if draw(st.booleans()) and len(items) == 1:
        return items[0]
    return tuple(items)


@st.composite
def _basic_index_case(draw, dtype):
    x = draw(array(dtype, shapes(max_dims=4)))
    return Case((x,), {"index": draw(_basic_index(x.shape))})


def advanced_index(traced):
    """An index mixing integer arrays (negative entries too) with slices, ints, None and
    Ellipsis; the arrays are traced arguments when ``traced``, static constants otherwise."""
    @st.composite
    def draw_case(draw, dtype):
        x = draw(array(dtype, shapes(min_dims=1, max_dims=3, min_side=1)))
        common = draw(shapes(max_dims=2, max_side=3))
        layout, arrays = [], []
        complete = True
        for n in x.shape:
            kind = draw(st.sampled_from(["array", "array", "slice", "int", "stop"]))
            if kind == "stop" and arrays:
                complete = False
                break
            if kind in ("array", "stop"):
                dt = draw(st.sampled_from([np.int64, np.int32, np.int8]))
                shape = draw(hnp.broadcastable_shapes(common, min_side=0))
                arrays.append(draw(hnp.arrays(dt, shape, elements=st.integers(-n, n - 1))))
                layout.append(("array", len(arrays) - 1))
            elif kind == "slice":
                layout.append(("value", slice(None, None, draw(st.sampled_from([1, -1, 2])))))
            else:
                layout.append(("value", draw(st.integers(-n, n - 1))))
        if draw(st.booleans()):
            layout.insert(draw(st.integers(0, len(layout))), ("value", None))
        if draw(st.booleans()):
            # an Ellipsis stands for the axes no item indexes: anywhere when every axis
            # is indexed, else only after the items (so that each array keeps its axis)
            at = draw(st.integers(0, len(layout))) if complete else len(layout)
            layout.insert(at, ("value", Ellipsis))
        if not traced:
            return Case((x,), {"index": _build_index(arrays, layout)})
        return Case((x, *arrays), {"layout": tuple(layout)})
    return draw_case


def _build_index(arrays, layout):
    return tuple(arrays[v] if k == "array" else v for k, v in layout)


@st.composite
def _take_case(draw, dtype):
    x = draw(array(dtype, shapes(min_dims=1, min_side=1)))
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    idx = draw(hnp.arrays(np.int64, shapes(max_dims=2, max_side=3),
                          elements=st.integers(-n, n - 1)))
    return Case((x, idx), {"axis": axis})


@st.composite
def _take_along_axis_case(draw, dtype):
    x = draw(array(dtype, shapes(min_dims=1, min_side=1)))
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    shape = list(x.shape)
    shape[axis] = draw(st.integers(0, 4))
    idx = draw(hnp.arrays(np.int64, tuple(shape),
                          elements=st.integers(-x.shape[axis], x.shape[axis] - 1)))
    return Case((x, idx), {"axis": axis})


def _sort_kwargs(draw, shape):
    n = len(shape)
    return {"axis": draw(st.one_of(st.none(), st.integers(-n, n - 1)) if n else st.none())}


# --- linear algebra -------------------------------------------------------------

def _matrix_dtype(draw, dtype):
    return np.dtype(dtype) if draw(st.integers(0, 3)) else draw(st.sampled_from(ALL_DTYPES))


def _mm_array(dtype, shape):
    return array(dtype, shape, lo=-4, hi=4, specials=False)


@st.composite
def _matmul_case(draw, dtype):
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    b1, b2 = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                      max_side=3)).input_shapes
    left = draw(st.sampled_from([(k,), (*b1, m, k)]))
    right = draw(st.sampled_from([(k,), (*b2, k, n)]))
    return Case((draw(_mm_array(dtype, left)),
                 draw(_mm_array(_matrix_dtype(draw, dtype), right))))


@st.composite
def _dot_case(draw, dtype):
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    pairs = [((), (k,)), ((k,), ()), ((k,), (k,)), ((m, k), (k,)), ((k,), (k, n)),
             ((m, k), (k, n)), ((2, m, k), (k, n)), ((m, k), (2, k, n)), ((2, m, k), (3, k, n))]
    a, b = draw(st.sampled_from(pairs))
    return Case((draw(_mm_array(dtype, a)), draw(_mm_array(_matrix_dtype(draw, dtype), b))))


@st.composite
def _vdot_case(draw, dtype):
    shape = draw(shapes(min_dims=1, max_side=3))
    other = draw(st.permutations(shape).map(tuple))
    return Case((draw(_mm_array(dtype, shape)),
                 draw(_mm_array(_matrix_dtype(draw, dtype), other))))


@st.composite
def _inner_case(draw, dtype):
    k = draw(st.integers(0, 4))
    a = draw(st.one_of(st.just(()), shapes(max_dims=2, max_side=3).map(lambda s: (*s, k))))
    b = draw(st.one_of(st.just(()), shapes(max_dims=2, max_side=3).map(lambda s: (*s, k))))
    return Case((draw(_mm_array(dtype, a)), draw(_mm_array(_matrix_dtype(draw, dtype), b))))


@st.composite
def _outer_case(draw, dtype):
    return Case((draw(_mm_array(dtype, shapes(max_dims=2))),
                 draw(_mm_array(_matrix_dtype(draw, dtype), shapes(max_dims=2)))))


@st.composite
def _tensordot_case(draw, dtype):
    contracted = draw(st.lists(st.integers(1, 3), max_size=2))
    left = draw(st.lists(st.integers(1, 3), max_size=2))
    right = draw(st.lists(st.integers(1, 3), max_size=2))
    k = len(contracted)
    if draw(st.booleans()):
        a = (*left, *contracted)
        b = (*contracted, *right)
        axes = k
    else:
        perm_a = draw(st.permutations(range(len(left) + k)))
        perm_b = draw(st.permutations(range(len(right) + k)))
        a_shape = [*left, *contracted]
        b_shape = [*contracted, *right]
        a = tuple(a_shape[i] for i in perm_a)
        b = tuple(b_shape[i] for i in perm_b)
        axes = ([list(perm_a).index(len(left) + i) for i in range(k)],
                [list(perm_b).index(i) for i in range(k)])
    return Case((draw(_mm_array(dtype, a)), draw(_mm_array(_matrix_dtype(draw, dtype), b))),
                {"axes": axes})


EINSUM_SPECS = {
    "ij,jk->ik": ((2, 3), (3, 4)), "ij,jk": ((2, 3), (3, 4)), "ii->i": ((3, 3),),
    "ii": ((3, 3),), "ij->ji": ((2, 3),), "ij": ((2, 3),), "ji": ((2, 3),),
    "bij,bjk->bik": ((2, 2, 3), (2, 3, 1)), "i,i": ((3,), (3,)), "i,j->ij": ((2,), (3,)),
    "...ij,...jk->...ik": ((2, 2, 3), (3, 4)), "ij->": ((2, 3),), "ijk->kj": ((2, 3, 4),),
    "ij,ij->i": ((2, 3), (2, 3)), "i,i->": ((4,), (4,)), "ab,bc,cd->ad": ((2, 3), (3, 2), (2, 2)),
}


@st.composite
def _einsum_case(draw, dtype):
    spec = draw(st.sampled_from(sorted(EINSUM_SPECS)))
    arrays = [draw(_mm_array(dtype if i == 0 else _matrix_dtype(draw, dtype), s))
              for i, s in enumerate(EINSUM_SPECS[spec])]
    return Case(tuple(arrays), {"spec": spec})


def _trace_kwargs(draw, shape):
    n = len(shape)
    a1 = draw(st.integers(0, n - 1))
    a2 = draw(st.integers(0, n - 1).filter(lambda a: a != a1))
    return {"offset": draw(st.integers(-3, 3)), "axis1": a1, "axis2": a2}


# --- creation -----------------------------------------------------------------

def no_args(make_kwargs):
    @st.composite
    def draw_case(draw, dtype):
        return Case((), make_kwargs(draw, dtype))
    return draw_case


def _shape_arg(draw):
    return draw(st.one_of(st.integers(0, 4), shapes(max_dims=3).map(tuple)))


def _arange_kwargs(draw, dtype):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        start, stop = draw(st.integers(0, 20)), draw(st.integers(0, 40))
        step = draw(st.sampled_from([1, 2, 3, -1]))
    else:
        start, stop = draw(st.floats(-5, 5)), draw(st.floats(-5, 10))
        step = draw(st.sampled_from([0.5, 1.0, 1.5, -0.75]))
    form = draw(st.integers(0, 2))
    args = (stop,) if form == 0 else (start, stop) if form == 1 else (start, stop, step)
    return {"args": args, "dtype": dt if draw(st.booleans()) else None}


def _linspace_kwargs(draw, dtype):
    return {"start": draw(st.floats(-5, 5)), "stop": draw(st.floats(-5, 5)),
            "num": draw(st.integers(0, 7)), "endpoint": draw(st.booleans()),
            "dtype": np.dtype(dtype) if draw(st.booleans()) else None}


def _eye_kwargs(draw, dtype):
    return {"N": draw(st.integers(0, 4)), "M": draw(st.one_of(st.none(), st.integers(0, 4))),
            "k": draw(st.integers(-3, 3)), "dtype": np.dtype(dtype)}


@st.composite
def _full_case(draw, dtype):
    """``full(shape, fill)`` with a traced 0-d fill value."""
    fill = np.asarray(draw(elements(dtype, -5, 5, specials=False)), dtype=dtype)
    return Case((fill,), {"shape": _shape_arg(draw),
                          "dtype": None if draw(st.booleans()) else
                          draw(st.sampled_from(ALL_DTYPES))})


def _like_kwargs(with_fill):
    def make(draw, shape):
        kw = {"dtype": None if draw(st.booleans()) else draw(st.sampled_from(ALL_DTYPES))}
        if with_fill:
            kw["fill_value"] = draw(st.sampled_from([0, 1, 2.5, True, -3]))
        return kw
    return make


# --- the table ----------------------------------------------------------------

def _fnp_call(name):
    return lambda m, *a, **kw: getattr(m, name)(*a, **kw)


TRANSCENDENTAL = 4.0
_F16_COMPOSITE = (np.dtype(np.float16),)

UNARY = {
    # name: (dtypes, lo, hi, tol)
    "negative": (NO_BOOL, -20, 20, 1), "positive": (NO_BOOL, -20, 20, 1),
    "abs": (NUMERIC, -20, 20, 1), "sign": (NO_BOOL, -20, 20, 1),
    "exp": (NUMERIC, -20, 20, TRANSCENDENTAL), "exp2": (NUMERIC, -20, 20, TRANSCENDENTAL),
    "expm1": (NUMERIC, -20, 20, TRANSCENDENTAL), "log": (NUMERIC, -2, 50, TRANSCENDENTAL),
    "log2": (NUMERIC, -2, 50, TRANSCENDENTAL), "log10": (NUMERIC, -2, 50, TRANSCENDENTAL),
    "log1p": (NUMERIC, -2, 50, TRANSCENDENTAL), "sqrt": (NUMERIC, -2, 50, TRANSCENDENTAL),
    "cbrt": (REAL, -50, 50, TRANSCENDENTAL), "square": (NUMERIC, -20, 20, 1),
    "reciprocal": (NUMERIC, -20, 20, 1), "sin": (NUMERIC, -20, 20, TRANSCENDENTAL),
    "cos": (NUMERIC, -20, 20, TRANSCENDENTAL), "tan": (NUMERIC, -3, 3, TRANSCENDENTAL),
    "arcsin": (NUMERIC, -1.5, 1.5, TRANSCENDENTAL), "arccos": (NUMERIC, -1.5, 1.5, TRANSCENDENTAL),
    "arctan": (NUMERIC, -20, 20, TRANSCENDENTAL), "sinh": (NUMERIC, -10, 10, TRANSCENDENTAL),
    "cosh": (NUMERIC, -10, 10, TRANSCENDENTAL), "tanh": (NUMERIC, -10, 10, TRANSCENDENTAL),
    "arcsinh": (NUMERIC, -20, 20, TRANSCENDENTAL), "arccosh": (NUMERIC, 0, 20, TRANSCENDENTAL),
    "arctanh": (NUMERIC, -1.5, 1.5, TRANSCENDENTAL), "floor": (REAL, -20, 20, 1),
    "ceil": (REAL, -20, 20, 1), "trunc": (REAL, -20, 20, 1), "rint": (NUMERIC, -20, 20, 1),
    "isnan": (NUMERIC, -20, 20, 1), "isinf": (NUMERIC, -20, 20, 1),
    "isfinite": (NUMERIC, -20, 20, 1), "logical_not": (NUMERIC, -20, 20, 1),
    "fabs": (REAL, -20, 20, 1), "degrees": (REAL, -20, 20, 1), "radians": (REAL, -20, 20, 1),
    "rad2deg": (REAL, -20, 20, 1), "deg2rad": (REAL, -20, 20, 1),
    "sinc": (NUMERIC, -3, 3, TRANSCENDENTAL),
    "signbit": (REAL, -20, 20, 1), "fix": (REAL, -20, 20, 1), "modf": (REAL, -20, 20, 1),
    "isposinf": (REAL, -20, 20, 1), "isneginf": (REAL, -20, 20, 1),
    "bitwise_count": (INT_BOOL, -20, 20, 1), "bitwise_invert": (INT_BOOL, -20, 20, 1),
    "conjugate": (NUMERIC, -20, 20, 1),
}

BINARY = {
    # name: (dtypes, extra generator options, tol)
    "add": (NUMERIC, {}, 1), "subtract": (NO_BOOL, {}, 1), "multiply": (NUMERIC, {}, 1),
    "divide": (NUMERIC, {}, 1), "true_divide": (NUMERIC, {}, 1),
    "floor_divide": (REAL, {}, 1), "mod": (REAL, {}, 1), "remainder": (REAL, {}, 1),
    "power": (NUMERIC, {"lo": -4, "hi": 4, "rhs_int_range": (0, 5)}, TRANSCENDENTAL),
    "maximum": (NUMERIC, {}, 1), "minimum": (NUMERIC, {}, 1), "fmax": (NUMERIC, {}, 1),
    "fmin": (NUMERIC, {}, 1), "arctan2": (REAL, {}, TRANSCENDENTAL),
    "hypot": (REAL, {}, TRANSCENDENTAL), "logaddexp": (REAL, {}, TRANSCENDENTAL),
    "logaddexp2": (REAL, {}, TRANSCENDENTAL), "copysign": (REAL, {}, 1),
    "equal": (NUMERIC, {}, 1), "not_equal": (NUMERIC, {}, 1), "less": (NUMERIC, {}, 1),
    "less_equal": (NUMERIC, {}, 1), "greater": (NUMERIC, {}, 1),
    "greater_equal": (NUMERIC, {}, 1), "logical_and": (NUMERIC, {}, 1),
    "logical_or": (NUMERIC, {}, 1), "logical_xor": (NUMERIC, {}, 1),
    "bitwise_and": (INT_BOOL, {}, 1), "bitwise_or": (INT_BOOL, {}, 1),
    "bitwise_xor": (INT_BOOL, {}, 1),
    "fmod": (REAL, {}, 1), "divmod": (REAL, {}, 1), "heaviside": (REAL, {}, 1),
    "gcd": (INT_BOOL, {}, 1), "lcm": (INT_BOOL, {}, 1),
    "bitwise_left_shift": (INT_BOOL, {"rhs_int_range": (0, 7)}, 1),
    "bitwise_right_shift": (INT_BOOL, {"rhs_int_range": (0, 7)}, 1),
    "float_power": (NUMERIC, {"lo": -4, "hi": 4, "rhs_int_range": (0, 5)}, TRANSCENDENTAL),
}

COMPLEX = kinds("c")
_ELEMENTWISE = "functorch_core/numpy/_elementwise.py"

# Known failures, by row name: bugs to route, or NumPy behaviour we do not copy.
C64 = np.complex64
KNOWN = {
    "log2": (Known(f"complex log2 multiplies log(z) by a complex constant ({_ELEMENTWISE} "
                   "_scaled): log2(0j) has a NaN imaginary part where NumPy has 0",
                   Case((np.array(0j, C64),)), dtypes=COMPLEX),),
    "log10": (Known(f"complex log10 multiplies log(z) by a complex constant ({_ELEMENTWISE} "
                    "_scaled): log10(0j) has a NaN imaginary part where NumPy has 0",
                    Case((np.array(0j, C64),)), dtypes=COMPLEX),),
    "reciprocal": (Known("NumPy's integer reciprocal of 0 is C undefined behaviour: int32 and "
                         "int64 give INT_MIN on x86-64 (int8/int16 give 0); fnp gives 0",
                         Case((np.array(0, np.int32),)), dtypes=kinds("i")[2:]),
                   Known(f"complex reciprocal of 0 is inf+nanj (computed as 1/z, "
                         f"{_ELEMENTWISE} _reciprocal); NumPy gives nan+nanj",
                         Case((np.array(0j, C64),)), dtypes=COMPLEX)),
    **{name: (Known("ordering comparisons reject complex operands (ir/specs.py lt/le/gt/"
                    "ge accept kinds 'biuf'); NumPy orders complex numbers lexicographically",
                    Case((np.array(False), np.array(0j, C64))), when=has_complex),)
       for name in ("less", "less_equal", "greater", "greater_equal")},
}
_U8_ACCUMULATION = ("NumPy accumulates uint8 in uint64, which the type system does not have "
                    "(ir/dtypes.py SUPPORTED); fnp raises a TypeError asking for dtype=")
for _name, _example in [
        ("sum", Case((np.array([1, 2], np.uint8),))),
        ("prod", Case((np.array([1, 2], np.uint8),))),
        ("cumsum", Case((np.array([1, 2], np.uint8),), {"axis": None})),
        ("cumprod", Case((np.array([1, 2], np.uint8),), {"axis": None})),
        ("trace", Case((np.ones((2, 2), np.uint8),))),
        ("method_sum", Case((np.array([1, 2], np.uint8),))),
        ("method_prod", Case((np.array([1, 2], np.uint8),))),
        ("method_cumsum", Case((np.array([1, 2], np.uint8),), {"axis": None})),
        ("nansum", Case((np.array([1, 2], np.uint8),))),
        ("nanprod", Case((np.array([1, 2], np.uint8),))),
        ("nancumsum", Case((np.array([1, 2], np.uint8),), {"axis": None})),
        ("nancumprod", Case((np.array([1, 2], np.uint8),), {"axis": None})),
        ("cumulative_sum", Case((np.array([1, 2], np.uint8),), {"axis": 0})),
        ("cumulative_prod", Case((np.array([1, 2], np.uint8),), {"axis": 0}))]:
    _modes = ("jit", "passes") if _name.startswith("method_") else (*MODES, "passes")
    KNOWN[_name] = (Known(_U8_ACCUMULATION, _example, _modes, (np.dtype(np.uint8),)),)

OPS: list[Op] = []


def add(name, fn, gen, dtypes=NUMERIC, **kw):
    kw.setdefault("known", KNOWN.get(name, ()))
    OPS.append(Op(name, fn, gen, dtypes, **kw))


for _name, (_dts, _lo, _hi, _tol) in UNARY.items():
    add(_name, _fnp_call(_name), unary(_lo, _hi), _dts, tol=_tol)
add("round", lambda m, x, decimals: m.round(x, decimals), unary(decimals=st.integers(-1, 2)),
    NUMERIC)

for _name, (_dts, _opts, _tol) in BINARY.items():
    add(_name, _fnp_call(_name), binary(**_opts), _dts, tol=_tol)


@st.composite
def _where_case(draw, dtype):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3)).input_shapes
    cond = draw(array(draw(st.sampled_from([np.bool_, np.bool_, np.int8, np.float32])), s[0]))
    x = draw(array(dtype, s[1]))
    y = draw(st.one_of(array(_matrix_dtype(draw, dtype), s[2]), python_scalar_like(dtype)))
    return Case((cond, x, y))


@st.composite
def _clip_case(draw, dtype):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3)).input_shapes
    x = draw(array(dtype, s[0]))
    lo = draw(st.one_of(st.none(), array(dtype, s[1]), st.integers(-5, 0)))
    hi = draw(st.one_of(st.none(), array(dtype, s[2]), st.integers(0, 5)))
    if lo is None and hi is None:
        hi = 3
    if np.dtype(dtype).kind == "u":
        lo = None if isinstance(lo, int) else lo
    return Case((x, lo, hi))


def _clip(m, x, lo, hi):
    return m.clip(x, lo, hi)


add("where", lambda m, c, x, y: m.where(c, x, y), _where_case)
add("clip", _clip, _clip_case)

# Reductions.
for _name, _dts, _kw in [
        ("sum", NUMERIC, {}), ("prod", NUMERIC, {"lo": -3, "hi": 3}),
        ("mean", NUMERIC, {}), ("var", NUMERIC, {"ddof": True}),
        ("std", NUMERIC, {"ddof": True}), ("max", NUMERIC, {}), ("min", NUMERIC, {}),
        ("amax", NUMERIC, {}), ("amin", NUMERIC, {}), ("all", NUMERIC, {}),
        ("any", NUMERIC, {})]:
    add(_name, _fnp_call(_name), reduction(**_kw), _dts, tol=4.0)
for _name in ("argmax", "argmin"):
    add(_name, _fnp_call(_name), reduction(tuples=False), NUMERIC)
for _name in ("cumsum", "cumprod"):
    add(_name, _fnp_call(_name), cumulative(), NUMERIC, tol=4.0)

# Shape manipulation.
add("reshape", lambda m, x, newshape: m.reshape(x, newshape), one_array(_reshape_kwargs))
add("ravel", _fnp_call("ravel"), unary())
add("transpose", lambda m, x, axes: m.transpose(x, axes), one_array(_transpose_kwargs))
add("swapaxes", lambda m, x, a1, a2: m.swapaxes(x, a1, a2), one_array(_two_axes, min_dims=1))
add("moveaxis", lambda m, x, src, dst: m.moveaxis(x, src, dst),
    one_array(_moveaxis_kwargs, min_dims=1))
add("expand_dims", _fnp_call("expand_dims"), one_array(_expand_dims_kwargs))
add("squeeze", _fnp_call("squeeze"), _squeeze_case)
add("broadcast_to", lambda m, x, shape: m.broadcast_to(x, shape), _broadcast_to_case)
add("broadcast_arrays", lambda m, *xs: m.broadcast_arrays(*xs), _broadcast_arrays_case)
add("concatenate", lambda m, *xs, axis: m.concatenate(xs, axis=axis), joined("concatenate"))
add("concatenate_none", lambda m, *xs: m.concatenate(xs, axis=None), joined("flat"))
add("stack", lambda m, *xs, axis: m.stack(xs, axis=axis), joined("stack"))
add("hstack", lambda m, *xs: m.hstack(xs), joined("hstack"))
add("vstack", lambda m, *xs: m.vstack(xs), joined("vstack"))
add("split", lambda m, x, sections, axis: m.split(x, sections, axis),
    one_array(_split_kwargs, min_dims=1, max_side=6))
add("tile", lambda m, x, reps: m.tile(x, reps), one_array(_tile_kwargs))
add("repeat", lambda m, x, repeats, axis: m.repeat(x, repeats, axis), one_array(_repeat_kwargs))
add("flip", lambda m, x, axis: m.flip(x, axis), one_array(_flip_kwargs))
add("roll", lambda m, x, shift, axis: m.roll(x, shift, axis), one_array(_roll_kwargs))
add("pad", lambda m, x, pad_width, constant_values: m.pad(x, pad_width,
                                                         constant_values=constant_values),
    one_array(_pad_kwargs, lo=-5, hi=5))
add("atleast_1d", _fnp_call("atleast_1d"), unary())
add("atleast_2d", _fnp_call("atleast_2d"), unary())

# Indexing and sorting. Indexing has no NumPy function to dispatch through.
add("getitem_basic", lambda m, x, index: x[index], _basic_index_case, np_api=False)
add("getitem_int_arrays", lambda m, x, index: x[index], advanced_index(traced=False),
    np_api=False)
add("getitem_traced_arrays", lambda m, x, *arrays, layout: x[_build_index(arrays, layout)],
    advanced_index(traced=True), np_api=False)
add("take", lambda m, x, idx, axis: m.take(x, idx, axis=axis), _take_case)
add("take_along_axis", lambda m, x, idx, axis: m.take_along_axis(x, idx, axis),
    _take_along_axis_case)
add("sort", lambda m, x, axis: m.sort(x, axis=axis), one_array(_sort_kwargs, max_side=5))
add("argsort", lambda m, x, axis: m.argsort(x, axis=axis, kind="stable"),
    one_array(_sort_kwargs, max_side=5))

# Linear algebra.
add("matmul", lambda m, a, b: m.matmul(a, b), _matmul_case, tol=4.0)
add("matmul_operator", lambda m, a, b: a @ b, _matmul_case, tol=4.0, np_api=False)
add("dot", lambda m, a, b: m.dot(a, b), _dot_case, tol=4.0)
add("vdot", lambda m, a, b: m.vdot(a, b), _vdot_case, tol=4.0)
add("inner", lambda m, a, b: m.inner(a, b), _inner_case, tol=4.0)
add("outer", lambda m, a, b: m.outer(a, b), _outer_case)
add("tensordot", lambda m, a, b, axes: m.tensordot(a, b, axes), _tensordot_case, tol=4.0)
add("linalg_matmul", lambda m, a, b: m.linalg.matmul(a, b), _matmul_case, tol=4.0)
add("linalg_tensordot", lambda m, a, b, axes: m.linalg.tensordot(a, b, axes=axes),
    _tensordot_case, tol=4.0)
add("einsum", lambda m, *xs, spec: m.einsum(spec, *xs), _einsum_case, tol=4.0)
add("trace", lambda m, x, **kw: m.trace(x, **kw), one_array(_trace_kwargs, min_dims=2),
    tol=4.0)
add("diag", lambda m, x, k: m.diag(x, k),
    one_array(lambda d, s: {"k": d(st.integers(-3, 3))}, min_dims=1, max_dims=2))
add("diagonal", lambda m, x, offset, axis1, axis2: m.diagonal(x, offset, axis1, axis2),
    one_array(_trace_kwargs, min_dims=2))
add("tril", lambda m, x, k: m.tril(x, k),
    one_array(lambda d, s: {"k": d(st.integers(-3, 3))}, min_dims=2))
add("triu", lambda m, x, k: m.triu(x, k),
    one_array(lambda d, s: {"k": d(st.integers(-3, 3))}, min_dims=2))

# Creation. Functions without array arguments cannot dispatch through NumPy.
# np.array/np.asarray never dispatch (NEP 18 covers them only through like=).
add("array", lambda m, x: m.array(x), unary(), np_api=False)
add("array_dtype", lambda m, x, dtype: m.array(x, dtype=dtype),
    unary(-5, 5, specials=False, dtype=st.sampled_from(ALL_DTYPES)), np_api=False)
add("asarray", lambda m, x: m.asarray(x), unary(), np_api=False)
add("zeros", lambda m, shape, dtype: m.zeros(shape, dtype),
    no_args(lambda d, dt: {"shape": _shape_arg(d), "dtype": dt}), np_api=False)
add("ones", lambda m, shape, dtype: m.ones(shape, dtype),
    no_args(lambda d, dt: {"shape": _shape_arg(d), "dtype": dt}), np_api=False)
add("zeros_default_dtype", lambda m, shape: m.zeros(shape),
    no_args(lambda d, dt: {"shape": _shape_arg(d)}), (np.dtype(np.float64),), np_api=False)
add("full", lambda m, fill, shape, dtype: m.full(shape, fill, dtype=dtype), _full_case,
    np_api=False)
add("full_static", lambda m, shape, fill, dtype: m.full(shape, fill, dtype),
    no_args(lambda d, dt: {"shape": _shape_arg(d), "dtype": dt,
                           "fill": d(st.sampled_from([0, 1, -2, True, 0.5]))}), np_api=False)
add("zeros_like", lambda m, x, dtype: m.zeros_like(x, dtype=dtype), one_array(_like_kwargs(0)))
add("ones_like", lambda m, x, dtype: m.ones_like(x, dtype=dtype), one_array(_like_kwargs(0)))
add("full_like", lambda m, x, dtype, fill_value: m.full_like(x, fill_value, dtype=dtype),
    one_array(_like_kwargs(1)))
add("arange", lambda m, args, dtype: m.arange(*args, dtype=dtype), no_args(_arange_kwargs),
    REAL_NO_BOOL, np_api=False)
add("linspace", lambda m, start, stop, num, endpoint, dtype:
    m.linspace(start, stop, num, endpoint=endpoint, dtype=dtype), no_args(_linspace_kwargs),
    INEXACT, np_api=False)
add("eye", lambda m, N, M, k, dtype: m.eye(N, M, k, dtype=dtype), no_args(_eye_kwargs),
    np_api=False)
add("identity", lambda m, n, dtype: m.identity(n, dtype=dtype),
    no_args(lambda d, dt: {"n": d(st.integers(0, 4)), "dtype": dt}), np_api=False)
add("astype", lambda m, x, dtype: x.astype(dtype),
    unary(-100, 100, dtype=st.sampled_from(ALL_DTYPES)), np_api=False)
add("dtype_names", lambda m, x, name: m.asarray(x, dtype=getattr(m, name)),
    unary(-5, 5, specials=False, name=st.sampled_from(DTYPE_NAMES)), np_api=False)

# Tracer methods: under jit these run on tracers; eagerly they are NumPy's own.
_METHOD_REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std", "all", "any"]
for _name in _METHOD_REDUCTIONS:
    add(f"method_{_name}", lambda m, x, _n=_name, **kw: getattr(x, _n)(**kw),
        reduction(lo=-3, hi=3), NUMERIC, tol=4.0, np_api=False)
for _name in ("argmax", "argmin"):
    add(f"method_{_name}", lambda m, x, _n=_name, **kw: getattr(x, _n)(**kw),
        reduction(tuples=False), np_api=False)
add("method_cumsum", lambda m, x, axis: x.cumsum(axis=axis), cumulative(), np_api=False)
add("method_reshape", lambda m, x, newshape: x.reshape(*newshape), one_array(_reshape_kwargs),
    np_api=False)
add("method_reshape_tuple", lambda m, x, newshape: x.reshape(newshape),
    one_array(_reshape_kwargs), np_api=False)
add("method_transpose", lambda m, x, axes: x.transpose() if axes is None else x.transpose(*axes),
    one_array(_transpose_kwargs), np_api=False)
add("method_T", lambda m, x: x.T, unary(), np_api=False)
add("method_astype", lambda m, x, dtype: x.astype(dtype),
    unary(-5, 5, specials=False, dtype=st.sampled_from(ALL_DTYPES)), np_api=False)
add("method_ravel", lambda m, x: x.ravel(), unary(), np_api=False)
add("method_flatten", lambda m, x: x.flatten(), unary(), np_api=False)
add("method_squeeze", lambda m, x, axis: x.squeeze(axis), _squeeze_case, np_api=False)
add("method_swapaxes", lambda m, x, a1, a2: x.swapaxes(a1, a2), one_array(_two_axes, min_dims=1),
    np_api=False)
add("method_clip", lambda m, x, lo, hi: x.clip(lo, hi), _clip_case, np_api=False)
add("method_dot", lambda m, a, b: a.dot(b), _dot_case, tol=4.0, np_api=False)
add("method_attributes",
    lambda m, x: m.asarray([x.ndim, x.size, len(x), *x.shape]) + m.zeros((), x.dtype).real,
    unary(min_side=1), np_api=False)

# --- NumPy's main namespace beyond the core (issue 29) ---------------------------------

def _rot90_kwargs(draw, shape):
    n = len(shape)
    a0 = draw(st.integers(-n, n - 1))
    a1 = draw(st.integers(-n, n - 1).filter(lambda a: a % n != a0 % n))
    return {"k": draw(st.integers(-5, 5)), "axes": (a0, a1)}


def _rollaxis_kwargs(draw, shape):
    n = len(shape)
    return {"axis": draw(st.integers(-n, n - 1)), "start": draw(st.integers(-n, n))}


def _diff_kwargs(draw, shape):
    n = len(shape)
    kw = {"n": draw(st.integers(0, 3)), "axis": draw(st.integers(-n, n - 1))}
    if draw(st.booleans()):
        kw["prepend"] = draw(st.sampled_from([0, 1.5, True]))
    if draw(st.booleans()):
        kw["append"] = draw(st.sampled_from([-2, 0.5]))
    return kw


def _axis_split_kwargs(axis):
    def make(draw, shape):
        n = shape[axis] if len(shape) > axis else 0
        divisors = [d for d in range(1, 5) if n % d == 0] if n else [1, 2]
        if draw(st.booleans()):
            return {"sections": draw(st.sampled_from(divisors))}
        return {"sections": draw(st.lists(st.integers(-n - 1, n + 1), max_size=3))}
    return make


def _kth_kwargs(draw, shape):
    if not shape or not shape[-1]:
        return {"kth": 0, "axis": None if not shape else -1}
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return {"kth": draw(st.integers(-shape[axis], shape[axis] - 1)) if shape[axis] else 0,
            "axis": axis}


def _take_kth(m, x, kth, axis, arg):
    if arg:
        return m.take_along_axis(x, m.argpartition(x, kth, axis=axis), axis=axis)[
            (slice(None),) * (axis % x.ndim) + (kth,)]
    out = m.partition(x, kth, axis=axis)
    return out[(slice(None),) * (axis % x.ndim) + (kth,)]


@st.composite
def _two_same_shape(draw, dtype, min_dims=1, max_dims=2, mixed=True):
    shape = draw(shapes(min_dims, max_dims, 1, 4))
    dt2 = _matrix_dtype(draw, dtype) if mixed else np.dtype(dtype)
    return Case((draw(array(dtype, shape, lo=-5, hi=5)), draw(array(dt2, shape, lo=-5, hi=5))))


@st.composite
def _kron_case(draw, dtype):
    a = draw(array(dtype, shapes(0, 2, 0, 3), lo=-5, hi=5))
    b = draw(array(_matrix_dtype(draw, dtype), shapes(0, 3, 0, 3), lo=-5, hi=5))
    return Case((a, b))


@st.composite
def _cross_case(draw, dtype):
    lead = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    na, nb = draw(st.sampled_from([3, 3, 2])), draw(st.sampled_from([3, 3, 2]))
    a = draw(array(dtype, lead.input_shapes[0] + (na,), lo=-5, hi=5))
    b = draw(array(_matrix_dtype(draw, dtype), lead.input_shapes[1] + (nb,), lo=-5, hi=5))
    return Case((a, b), {"axisc": draw(st.sampled_from([-1, 0]))})


@st.composite
def _select_case(draw, dtype):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=2, max_side=3))
    c1, c2 = (draw(array(np.bool_, sh)) for sh in s.input_shapes[:2])
    x = draw(array(dtype, s.input_shapes[2], lo=-5, hi=5))
    y = draw(array(_matrix_dtype(draw, dtype), s.input_shapes[1], lo=-5, hi=5))
    return Case((c1, c2, x, y), {"default": draw(st.sampled_from([0, 1.5, -1]))})


@st.composite
def _column_stack_case(draw, dtype):
    n = draw(st.integers(1, 3))
    xs = [draw(array(dtype if i == 0 else _matrix_dtype(draw, dtype),
                     draw(st.sampled_from([(n,), (n, 2), (n, 1)])))) for i in range(2)]
    return Case(tuple(xs))


@st.composite
def _append_case(draw, dtype):
    shape = draw(shapes(1, 3, 1, 3))
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    other = list(shape)
    if axis is not None:
        other[axis] = draw(st.integers(0, 2))
    y = draw(array(_matrix_dtype(draw, dtype), tuple(other)))
    return Case((draw(array(dtype, shape)), y), {"axis": axis})


@st.composite
def _isclose_case(draw, dtype):
    case = draw(binary(lo=-3, hi=3)(dtype))
    return Case(case.args, {"equal_nan": draw(st.booleans()),
                            "rtol": draw(st.sampled_from([1e-5, 0.1])),
                            "atol": draw(st.sampled_from([1e-8, 0.5]))})


@st.composite
def _interp_case(draw, dtype):
    n = draw(st.integers(1, 5))
    xp = np.sort(draw(array(np.float64, (n,), lo=-4, hi=4, specials=False)))
    fp = draw(array(dtype, (n,), lo=-4, hi=4, specials=False))
    x = draw(array(np.float64, shapes(0, 2, 0, 4), lo=-5, hi=5))
    return Case((x, xp, fp))


@st.composite
def _searchsorted_case(draw, dtype):
    dtype = np.float64 if np.dtype(dtype).kind == "c" else dtype
    a = np.sort(draw(array(dtype, (draw(st.integers(0, 6)),), lo=-4, hi=4)))
    v = draw(array(draw(st.sampled_from(REAL)), shapes(0, 2, 0, 3), lo=-5, hi=5))
    return Case((a, v), {"side": draw(st.sampled_from(["left", "right"]))})


@st.composite
def _digitize_case(draw, dtype):
    bins = np.sort(draw(array(np.float64, (draw(st.integers(1, 5)),), lo=-4, hi=4,
                              specials=False)))
    if draw(st.booleans()):
        bins = bins[::-1].copy()
    x = draw(array(dtype, shapes(0, 2, 0, 4), lo=-5, hi=5))
    return Case((x, bins), {"right": draw(st.booleans())})


@st.composite
def _bincount_case(draw, dtype):
    x = draw(array(dtype, (draw(st.integers(0, 6)),), int_lo=0, int_hi=6, lo=0, hi=6,
                   specials=False))
    w = draw(st.one_of(st.none(), array(np.float64, x.shape, lo=-3, hi=3, specials=False)))
    return Case((x,) if w is None else (x, w), {"length": draw(st.integers(0, 8))})


def _bincount(m, x, w=None, *, length):
    if m is np:     # NumPy has no length=: its minlength and a cut agree
        out = np.bincount(x, w, minlength=length)
        return out[:length]
    return m.bincount(x, w, length=length)


@st.composite
def _cov_case(draw, dtype):
    x = draw(array(dtype, shapes(1, 2, 1, 4), lo=-5, hi=5))
    kw = {"rowvar": draw(st.booleans())}
    if draw(st.booleans()):
        kw["ddof"] = draw(st.integers(0, 1))
    elif draw(st.booleans()):
        kw["bias"] = True
    if draw(st.booleans()):
        return Case((x, draw(array(_matrix_dtype(draw, dtype), x.shape, lo=-5, hi=5))), kw)
    return Case((x,), kw)


@st.composite
def _quantile_case(draw, dtype):
    x = draw(array(dtype, shapes(1, 3, 1, 4), lo=-5, hi=5))
    kw = draw(_axis_args(x.ndim))
    kw["method"] = draw(st.sampled_from(["linear", "linear", "lower", "higher", "midpoint",
                                         "nearest"]))
    q = draw(st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]),
                       array(np.float64, shapes(0, 1, 1, 3), lo=0, hi=1, specials=False)))
    return Case((x, q), kw)


@st.composite
def _average_case(draw, dtype):
    x = draw(array(dtype, shapes(1, 3, 1, 4), lo=-5, hi=5))
    kw = draw(_axis_args(x.ndim, tuples=False))
    w = None
    if draw(st.booleans()):
        if kw.get("axis") is not None and draw(st.booleans()):
            wshape = (x.shape[kw["axis"]],)
        else:
            wshape = x.shape
        w = draw(array(_matrix_dtype(draw, dtype), wshape, lo=0.5, hi=3, int_lo=1, int_hi=3,
                       specials=False))
    kw["returned"] = draw(st.booleans())
    return Case((x,) if w is None else (x, w), kw)


@st.composite
def _nan_reduction_case(draw, dtype):
    x = draw(array(dtype, shapes(0, 3, 0, 4), lo=-3, hi=3))
    kw = draw(_axis_args(x.ndim, tuples=False))
    return Case((x,), kw)


@st.composite
def _meshgrid_case(draw, dtype):
    n = draw(st.integers(1, 3))
    xs = tuple(draw(array(dtype if i == 0 else _matrix_dtype(draw, dtype),
                          shapes(0, 2, 0, 3))) for i in range(n))
    return Case(xs, {"indexing": draw(st.sampled_from(["xy", "ij"])),
                     "sparse": draw(st.booleans())})


@st.composite
def _polyval_case(draw, dtype):
    p = draw(array(dtype, (draw(st.integers(0, 4)),), lo=-3, hi=3))
    x = draw(st.one_of(array(_matrix_dtype(draw, dtype), shapes(0, 2, 0, 3), lo=-2, hi=2),
                       st.floats(-2, 2)))
    return Case((p, x))


@st.composite
def _concatenator_case(draw, dtype):
    a = draw(array(dtype, (draw(st.integers(0, 3)),)))
    b = draw(array(_matrix_dtype(draw, dtype), (draw(st.integers(0, 3)),)))
    return Case((a, b))


add("ndim_shape_size", lambda m, x: m.asarray([m.ndim(x), m.size(x), *m.shape(x)]), unary())
add("result_type", lambda m, x, y: m.zeros((), m.result_type(x, y)), binary())
add("iscomplexobj", lambda m, x: m.asarray([m.iscomplexobj(x), m.isrealobj(x)]), unary())
add("iscomplex", _fnp_call("iscomplex"), unary())
add("isreal", _fnp_call("isreal"), unary())
add("real_if_close", _fnp_call("real_if_close"), unary(-3, 3), known=(
    Known("real_if_close of a traced complex array: its result dtype (real or complex) "
          "depends on the values, so fnp refuses it with a TracerError",
          Case((np.array([1 + 0j]),)), modes=("jit", "np", "passes"), dtypes=COMPLEX),))
add("angle", lambda m, x, deg: m.angle(x, deg=deg), unary(deg=st.booleans()), tol=4.0)
add("nan_to_num", lambda m, x, **kw: m.nan_to_num(x, **kw),
    unary(nan=st.sampled_from([0.0, -1.5]), posinf=st.sampled_from([None, 7.0]),
          neginf=st.sampled_from([None, -7.0])))
add("flipud", _fnp_call("flipud"), unary())
add("fliplr", _fnp_call("fliplr"), unary())
add("rot90", lambda m, x, k, axes: m.rot90(x, k, axes), one_array(_rot90_kwargs, min_dims=2))
add("rollaxis", lambda m, x, axis, start: m.rollaxis(x, axis, start),
    one_array(_rollaxis_kwargs, min_dims=1))
add("atleast_3d", _fnp_call("atleast_3d"), unary())
add("diff", lambda m, x, **kw: m.diff(x, **kw), one_array(_diff_kwargs, min_dims=1, lo=-5,
                                                          hi=5))
add("kron", lambda m, a, b: m.kron(a, b), _kron_case)
add("cross", lambda m, a, b, axisc: m.cross(a, b, axisc=axisc), _cross_case)
add("partition_kth", lambda m, x, kth, axis: _take_kth(m, x, kth, axis, False),
    one_array(_kth_kwargs, min_dims=1, min_side=1, max_side=5))
add("argpartition_kth", lambda m, x, kth, axis: _take_kth(m, x, kth, axis, True),
    one_array(_kth_kwargs, min_dims=1, min_side=1, max_side=5))
add("vsplit", lambda m, x, sections: m.vsplit(x, sections),
    one_array(_axis_split_kwargs(0), max_side=6))
add("hsplit", lambda m, x, sections: m.hsplit(x, sections),
    one_array(_axis_split_kwargs(1), max_side=6))
add("dsplit", lambda m, x, sections: m.dsplit(x, sections),
    one_array(_axis_split_kwargs(2), max_side=6))
add("column_stack", lambda m, *xs: m.column_stack(xs), _column_stack_case)
add("append", lambda m, x, y, axis: m.append(x, y, axis=axis), _append_case)
add("select", lambda m, c1, c2, x, y, default: m.select([c1, c2], [x, y], default),
    _select_case)
add("isclose", lambda m, a, b, **kw: m.isclose(a, b, **kw), _isclose_case)
add("allclose", lambda m, a, b, **kw: m.logical_and(m.allclose(a, b, **kw), True),
    _isclose_case)
add("interp", lambda m, x, xp, fp: m.interp(x, xp, fp), _interp_case, tol=4.0)
# complex searchsorted (NumPy orders complex lexicographically) is refused by fnp: the
# row draws real operands only
add("searchsorted", lambda m, a, v, side: m.searchsorted(a, v, side=side), _searchsorted_case,
    REAL)
add("digitize", lambda m, x, bins, right: m.digitize(x, bins, right=right), _digitize_case)
add("bincount_length", _bincount, _bincount_case, INT_BOOL, np_api=False)
add("cov", lambda m, *a, **kw: m.cov(*a, **kw), _cov_case, tol=4.0)
add("corrcoef", lambda m, *a, **kw: m.corrcoef(*a, rowvar=kw.get("rowvar", True)), _cov_case,
    tol=8.0)
add("median", lambda m, x, **kw: m.median(x, **kw), reduction(min_side=1, min_dims=1))
add("quantile", lambda m, x, q, **kw: m.quantile(x, q, **kw), _quantile_case, tol=4.0)
add("percentile", lambda m, x, q, **kw: m.percentile(x, m.multiply(q, 100), **kw),
    _quantile_case, tol=4.0)
add("average", lambda m, x, w=None, **kw: m.average(x, weights=w, **kw), _average_case,
    tol=4.0)
add("ptp", lambda m, x, **kw: m.ptp(x, **kw), reduction(min_side=1))
for _name in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"):
    add(_name, _fnp_call(_name), _nan_reduction_case, tol=4.0)
for _name in ("nancumsum", "nancumprod"):
    add(_name, _fnp_call(_name), cumulative(), tol=4.0)
add("meshgrid", lambda m, *xs, **kw: m.meshgrid(*xs, **kw), _meshgrid_case)
add("tril_indices_from", lambda m, x, k: x[m.tril_indices_from(x, k)],
    one_array(lambda d, s: {"k": d(st.integers(-2, 2))}, min_dims=2, max_dims=2))
add("triu_indices_from", lambda m, x, k: x[m.triu_indices_from(x, k)],
    one_array(lambda d, s: {"k": d(st.integers(-2, 2))}, min_dims=2, max_dims=2))
add("polyval", lambda m, p, x: m.polyval(p, x), _polyval_case, tol=4.0)
add("r_", lambda m, a, b: m.r_[a, 2, b], _concatenator_case)
add("c_", lambda m, a, b: m.c_[a, a], _concatenator_case)
add("r_directive", lambda m, a, b: m.r_["0,2", a, b], _concatenator_case)

# --- data-dependent shapes with a static size= (as jax.numpy), calculus, histograms ---------


def _padded(v, size, fill):
    v = np.asarray(v)[:size]
    return np.concatenate([v, np.full((size - len(v),) + v.shape[1:], fill, v.dtype)])


def _unique(m, x, *, size, fill_value, **flags):
    if m is not np:
        return m.unique(x, size=size, fill_value=fill_value, **flags)
    out = np.unique(x, **flags)
    out = list(out) if isinstance(out, tuple) else [out]
    fill = out[0][0] if fill_value is None and out[0].size else fill_value
    if fill is None:
        raise ValueError("unique of an empty array needs a fill_value")
    res = [_padded(out[0], size, fill)]
    for flag, v in zip([f for f in ("return_index", "return_inverse", "return_counts")
                        if flags.get(f)], out[1:], strict=True):
        res.append(v if flag == "return_inverse" else _padded(v, size, 0))
    return res[0] if len(res) == 1 else tuple(res)


@st.composite
def _unique_case(draw, dtype):
    x = draw(array(dtype, shapes(0, 2, 0, 4), lo=-2, hi=2, int_lo=-2, int_hi=2))
    x = np.round(x) if x.dtype.kind in "fc" else x
    flags = {f: draw(st.booleans()) for f in ("return_index", "return_inverse",
                                              "return_counts")}
    return Case((x,), {"size": draw(st.integers(0, 6)),
                       "fill_value": draw(st.sampled_from([None, 0, 1])), **flags})


def _nonzero(kind):
    def fn(m, x, *, size, fill_value):
        if m is not np:
            return getattr(m, kind)(x, size=size, fill_value=fill_value)
        fill = 0 if fill_value is None else fill_value
        if kind == "nonzero":
            return tuple(_padded(v, size, fill) for v in np.nonzero(x))
        return _padded(getattr(np, kind)(x), size, fill)
    return fn


@st.composite
def _nonzero_case(draw, dtype):
    x = draw(array(dtype, shapes(1, 3, 0, 4), lo=-1, hi=1, int_lo=-1, int_hi=1))
    x = np.round(x) if x.dtype.kind in "fc" else x
    return Case((x,), {"size": draw(st.integers(0, 7)),
                       "fill_value": draw(st.sampled_from([None, -1, 2]))})


def _gradient_kwargs(draw, shape):
    kw = {"edge_order": draw(st.sampled_from([1, 2]))}
    if draw(st.booleans()):
        kw["axis"] = draw(st.integers(-len(shape), len(shape) - 1))
    return kw


@st.composite
def _gradient_case(draw, dtype):
    shape = draw(shapes(1, 3, 3, 5))
    f = draw(array(dtype, shape, lo=-5, hi=5))
    kw = _gradient_kwargs(draw, shape)
    axes = [kw["axis"]] if "axis" in kw else list(range(len(shape)))
    spacing = draw(st.sampled_from(["none", "scalar", "coords"]))
    if spacing == "scalar":
        return Case((f, draw(st.sampled_from([0.5, 2, np.float32(1.5)]))), kw)
    if spacing == "coords":
        coords = tuple(np.cumsum(draw(array(np.float64, (shape[a],), lo=0.5, hi=2,
                                            specials=False))) for a in axes)
        return Case((f, *coords), kw)
    return Case((f,), kw)


@st.composite
def _trapezoid_case(draw, dtype):
    shape = draw(shapes(1, 3, 0, 4))
    y = draw(array(dtype, shape, lo=-5, hi=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    which = draw(st.sampled_from(["dx", "x1", "xfull"]))
    if which == "x1":
        return Case((y, np.cumsum(draw(array(np.float64, (shape[axis],), lo=0, hi=2)))),
                    {"axis": axis})
    if which == "xfull":
        return Case((y, draw(array(_matrix_dtype(draw, dtype), shape, lo=-3, hi=3))),
                    {"axis": axis})
    return Case((y,), {"axis": axis, "dx": draw(st.sampled_from([1.0, 0.5, 2]))})


@st.composite
def _ediff1d_case(draw, dtype):
    x = draw(array(dtype, shapes(0, 2, 0, 4), lo=-5, hi=5))
    kw = {}
    if draw(st.booleans()):
        kw["to_begin"] = draw(st.sampled_from([0, -1, [1, 2], 1.5]))
    if draw(st.booleans()):
        kw["to_end"] = draw(st.sampled_from([3, [0, 1]]))
    return Case((x,), kw)


def _unwrap_kwargs(draw, shape):
    kw = {"axis": draw(st.integers(-len(shape), len(shape) - 1))}
    if draw(st.booleans()):
        kw["period"] = draw(st.sampled_from([6, 4.0, 2 * math.pi]))
    if draw(st.booleans()):
        kw["discont"] = draw(st.sampled_from([1.0, 5.0]))
    return kw


@st.composite
def _nan_quantile_case(draw, dtype):
    x = draw(array(dtype, shapes(1, 3, 1, 4), lo=-5, hi=5))
    kw = draw(_axis_args(x.ndim))
    kw["method"] = draw(st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]))
    # NumPy's result dtype for an array q depends on whether its first slice is all NaN
    # (apply_along_axis): array q only for NaN-free data
    qs = st.sampled_from([0.0, 0.3, 0.5, 1.0])
    if not (x.dtype.kind in "fc" and np.isnan(x).any()):
        qs = st.one_of(qs, array(np.float64, shapes(0, 1, 1, 3), lo=0, hi=1, specials=False))
    return Case((x, draw(qs)), kw)


@st.composite
def _histogram_case(draw, dtype):
    x = draw(array(dtype, shapes(0, 2, 0, 5), lo=-3, hi=3, int_lo=-3, int_hi=3))
    kind = draw(st.sampled_from(["range", "edges", "auto"]))
    kw = {"density": draw(st.sampled_from([None, True]))}
    args = (x,)
    if draw(st.booleans()):
        args = (x, draw(array(draw(st.sampled_from([np.float64, np.float32, np.int16])),
                              x.shape, lo=0, hi=2, int_lo=0, int_hi=2, specials=False)))
    if kind == "range":
        kw.update(bins=draw(st.integers(1, 4)), range=draw(st.sampled_from([(-2, 2), (0, 1.5)])))
    elif kind == "edges":
        kw["bins"] = np.sort(draw(array(np.float64, (draw(st.integers(2, 4)),), lo=-3, hi=3,
                                        specials=False)))
    else:
        kw["bins"] = draw(st.integers(1, 4))
    return Case(args, kw)


@st.composite
def _polyfit_case(draw, dtype):
    n = draw(st.integers(3, 6))
    x = np.arange(n, dtype=np.float64) + draw(st.floats(-1, 1))
    x = x.astype(dtype) if np.dtype(dtype).kind in "fc" else x
    y = draw(array(dtype, draw(st.sampled_from([(n,), (n, 2)])), lo=-3, hi=3, specials=False))
    kw = {"deg": draw(st.integers(0, 2))}
    if draw(st.booleans()):
        kw["cov"] = draw(st.sampled_from([True, "unscaled"]))
    if draw(st.booleans()):
        return Case((x, y, np.linspace(0.5, 1.5, n)), kw)
    return Case((x, y), kw)


add("unique_size", _unique, _unique_case, np_api=False)
for _name in ("nonzero", "argwhere", "flatnonzero"):
    add(f"{_name}_size", _nonzero(_name), _nonzero_case, np_api=False)
add("gradient", lambda m, f, *h, **kw: m.gradient(f, *h, **kw), _gradient_case, tol=4.0)
add("trapezoid", lambda m, y, x=None, **kw: m.trapezoid(y, x, **kw), _trapezoid_case, tol=4.0)
add("ediff1d", lambda m, x, **kw: m.ediff1d(x, **kw), _ediff1d_case)
add("unwrap", lambda m, p, **kw: m.unwrap(p, **kw), one_array(_unwrap_kwargs, min_dims=1,
                                                             lo=-10, hi=10), tol=4.0)
add("nanmedian", _fnp_call("nanmedian"), reduction(min_side=1, min_dims=1))
add("nanquantile", lambda m, x, q, **kw: m.nanquantile(x, q, **kw), _nan_quantile_case,
    tol=4.0)
add("nanpercentile", lambda m, x, q, **kw: m.nanpercentile(x, m.multiply(q, 100), **kw),
    _nan_quantile_case, tol=4.0)
def _autodetected_nonfinite(case):
    x = np.asarray(case.args[0])
    return "range" not in case.kwargs and np.ndim(case.kwargs["bins"]) == 0 and x.size \
        and not np.isfinite(x).all()


_HISTOGRAM_KNOWN = (
    Known("histogram of complex data: NumPy bins complex numbers by their lexicographic "
          "order; fnp's searchsorted refuses complex values (TypeError)",
          Case((np.array(0j, np.complex64),), {"bins": 1, "range": (-2, 2)}), dtypes=COMPLEX),
    Known("a traced array whose autodetected range (min, max) is not finite: NumPy raises "
          "ValueError, which needs the values; under jit fnp returns NaN edges and no counts",
          Case((np.array([1.0, np.inf]),), {"bins": 2}), modes=("jit", "np"),
          dtypes=FLOAT, when=_autodetected_nonfinite))
add("histogram", lambda m, x, w=None, **kw: m.histogram(x, weights=w, **kw), _histogram_case,
    tol=4.0, known=_HISTOGRAM_KNOWN)
add("histogram_bin_edges", lambda m, x, w=None, **kw: m.histogram_bin_edges(
    x, kw["bins"], kw.get("range")), _histogram_case, known=_HISTOGRAM_KNOWN[1:])
add("vander", lambda m, x, **kw: m.vander(x, **kw), one_array(
    lambda d, s: {"N": d(st.sampled_from([None, 0, 2, 4])), "increasing": d(st.booleans())},
    min_dims=1, max_dims=1, lo=-3, hi=3))
add("polyfit", lambda m, x, y, w=None, **kw: m.polyfit(x, y, w=w, **kw), _polyfit_case,
    tol=1e3)


@st.composite
def _space_case(draw, dtype):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=1, max_side=3))
    a = draw(array(dtype, s.input_shapes[0], lo=0.5, hi=3, int_lo=1, int_hi=3, specials=False))
    b = draw(array(_matrix_dtype(draw, dtype), s.input_shapes[1], lo=-3, hi=3, int_lo=1,
                   int_hi=3, specials=False))
    nd = max(len(s.result_shape), 0)
    return Case((a, b), {"num": draw(st.integers(0, 5)), "endpoint": draw(st.booleans()),
                         "axis": draw(st.integers(-nd - 1, nd))})


def _positions(kind):
    def make(draw, shape):
        axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
        n = math.prod(shape) if axis is None else shape[axis]
        obj = draw(st.one_of(st.integers(-n, n if kind == "insert" else n - 1),
                             st.lists(st.integers(-n, n - 1), max_size=3),
                             st.builds(slice, st.integers(0, 2), st.integers(1, 4))) if n
                   else st.just(0 if kind == "insert" else []))
        return {"obj": obj, "axis": axis}
    return make


@st.composite
def _insert_case(draw, dtype):
    shape = draw(shapes(1, 2, 1, 4))
    kw = _positions("insert")(draw, shape)
    v = draw(array(_matrix_dtype(draw, dtype), draw(st.sampled_from([(), (1,), (2,)])),
                   lo=-5, hi=5))
    return Case((draw(array(dtype, shape, lo=-5, hi=5)), v), kw)


add("logspace", lambda m, a, b, **kw: m.logspace(a, b, **kw), _space_case, tol=TRANSCENDENTAL)
add("geomspace", lambda m, a, b, **kw: m.geomspace(a, b, **kw), _space_case,
    tol=TRANSCENDENTAL, known=(
        Known("a zero endpoint: NumPy raises ValueError, which needs the values; under jit "
              "fnp returns NaN/infinite samples",
              Case((np.array([0.0]), np.array(1.0)), {"num": 2, "endpoint": True, "axis": 0}),
              modes=("jit", "np"),
              when=lambda c: any((np.asarray(a) == 0).any() for a in c.args)),))
add("tri", lambda m, x, n, k: m.tri(n, None, k, dtype=x.dtype) * x, one_array(
    lambda d, s: {"n": d(st.integers(0, 3)), "k": d(st.integers(-2, 2))}, max_dims=0))
add("delete", lambda m, x, obj, axis: m.delete(x, obj, axis), one_array(
    _positions("delete"), min_dims=1, max_dims=2))
add("insert", lambda m, x, v, obj, axis: m.insert(x, obj, v, axis), _insert_case)
add("resize", lambda m, x, new_shape: m.resize(x, new_shape), one_array(
    lambda d, s: {"new_shape": d(st.sampled_from([0, 5, (2, 3), (3, 0, 1)]))}))
add("i0", _fnp_call("i0"), unary(-10, 10), REAL, tol=TRANSCENDENTAL)

add("piecewise", lambda m, x: m.piecewise(x, [x.real < 0, x.real > 1], [lambda v: v * 2, 7]),
    unary(-3, 3))
add("piecewise_otherwise", lambda m, x: m.piecewise(x, [x.real < 0], [lambda v: v * 3,
                                                                      lambda v: v + v]),
    unary(-3, 3))
add("apply_along_axis", lambda m, x, axis: m.apply_along_axis(lambda v: v[::-1] * 2, axis, x),
    one_array(lambda d, s: {"axis": d(st.integers(-len(s), len(s) - 1))}, min_dims=1,
              min_side=1, max_side=3))


@st.composite
def _put_along_axis_case(draw, dtype):
    shape = draw(shapes(1, 2, 1, 3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    k = draw(st.integers(1, shape[axis]))
    # distinct positions along the axis (NumPy's order for repeated ones is a loop detail)
    order = np.argsort(draw(array(np.float64, shape, lo=0, hi=1, specials=False)), axis=axis,
                       kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    v = draw(st.one_of(array(_matrix_dtype(draw, dtype), idx.shape, lo=-5, hi=5),
                       python_scalar_like(dtype)))
    return Case((draw(array(dtype, shape, lo=-5, hi=5)), v), {"indices": idx, "axis": axis})


def _put_along_axis(m, x, v, *, indices, axis):
    y = m.copy(x)
    m.put_along_axis(y, indices, v, axis)
    return y


add("put_along_axis", _put_along_axis, _put_along_axis_case)

# --- NumPy 2's array-API additions (functorch_core/numpy/_array_api.py) -------------------

@st.composite
def _vector_pair_case(draw, dtype, kind):
    """Operands of vecdot ('vv'), matvec ('mv') or vecmat ('vm'): core sizes that agree,
    leading axes that broadcast, sometimes a second dtype."""
    lead = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    n, m = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    cores = {"vv": ((n,), (n,)), "mv": ((m, n), (n,)), "vm": ((n,), (n, m))}[kind]
    s1, s2 = (tuple(s) + c for s, c in zip(lead.input_shapes, cores, strict=True))
    kw = {}
    if kind == "vv" and draw(st.booleans()):
        kw["axis"] = draw(st.integers(-1, 0)) if len(s1) == len(s2) == 1 else -1
    return Case((draw(_mm_array(dtype, s1)), draw(_mm_array(_matrix_dtype(draw, dtype), s2))),
                kw)


def _unstack_kwargs(draw, shape):
    return {"axis": draw(st.integers(-len(shape), len(shape) - 1))}


def _cumulative_kwargs(draw, shape):
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1))) if shape \
        else None
    return {"axis": axis, "include_initial": draw(st.booleans())}


@st.composite
def _equal_case(draw, dtype):
    x = draw(array(dtype, shapes(0, 2, 0, 3), lo=-3, hi=3, int_lo=-3, int_hi=3))
    form = draw(st.sampled_from(["same", "changed", "other", "broadcast"]))
    if form == "same":
        y = x.copy()
    elif form == "changed" and x.size:
        y = x.copy()
        y.flat[draw(st.integers(0, x.size - 1))] = draw(elements(dtype, -3, 3))
    elif form == "broadcast":
        y = np.broadcast_to(x, (2, *x.shape)).copy()
    else:
        y = draw(array(_matrix_dtype(draw, dtype), shapes(0, 2, 0, 3), lo=-3, hi=3))
    return Case((x, y), {"equal_nan": draw(st.booleans())})


@st.composite
def _dstack_case(draw, dtype):
    shape = draw(shapes(0, 3, 0, 3))
    n = draw(st.integers(1, 3))
    return Case(tuple(draw(array(_matrix_dtype(draw, dtype), shape)) for _ in range(n)))


add("vecdot", lambda m, a, b, **kw: m.vecdot(a, b, **kw),
    lambda dt: _vector_pair_case(dt, "vv"), tol=4.0)
add("linalg_vecdot", lambda m, a, b, **kw: m.linalg.vecdot(a, b, **kw),
    lambda dt: _vector_pair_case(dt, "vv"), tol=4.0)
add("matvec", lambda m, a, b: m.matvec(a, b), lambda dt: _vector_pair_case(dt, "mv"), tol=4.0)
add("vecmat", lambda m, a, b: m.vecmat(a, b), lambda dt: _vector_pair_case(dt, "vm"), tol=4.0)
add("matrix_transpose", _fnp_call("matrix_transpose"), one_array(lambda d, s: {}))
add("unstack", lambda m, x, **kw: m.unstack(x, **kw), one_array(_unstack_kwargs, min_dims=1))
add("cumulative_sum", _fnp_call("cumulative_sum"), one_array(_cumulative_kwargs, lo=-3, hi=3))
add("cumulative_prod", _fnp_call("cumulative_prod"), one_array(_cumulative_kwargs, lo=-3,
                                                               hi=3))
add("count_nonzero", _fnp_call("count_nonzero"), reduction())
add("array_equal", lambda m, a, b, **kw: m.array_equal(a, b, **kw), _equal_case)
add("array_equiv", lambda m, a, b, **kw: m.array_equiv(a, b), _equal_case)
add("dstack", lambda m, *xs: m.dstack(xs), _dstack_case)

# functions the rows above left out (tests/numpy/test_coverage.py asks for a row for each)
for _name in ("real", "imag", "copy", "isrealobj"):
    add(_name, _fnp_call(_name), unary())
for _name in ("nanargmax", "nanargmin"):
    add(_name, _fnp_call(_name), reduction(tuples=False, min_side=1))
add("array_split", lambda m, x, sections, axis: m.array_split(x, sections, axis),
    one_array(_split_kwargs, min_dims=1, max_side=6))


@st.composite
def _convolve_case(draw, dtype):
    a = draw(_mm_array(dtype, (draw(st.integers(1, 5)),)))
    v = draw(_mm_array(_matrix_dtype(draw, dtype), (draw(st.integers(1, 5)),)))
    return Case((a, v), {"mode": draw(st.sampled_from(["full", "same", "valid"]))})


add("convolve", lambda m, a, v, mode: m.convolve(a, v, mode), _convolve_case, tol=4.0)
add("correlate", lambda m, a, v, mode: m.correlate(a, v, mode), _convolve_case, tol=4.0)


@st.composite
def _copyto_case(draw, dtype):
    dst = draw(array(dtype, shapes(0, 2, 0, 3)))
    src = draw(array(dtype, draw(hnp.broadcastable_shapes(dst.shape, max_dims=dst.ndim,
                                                          min_side=0))))
    return Case((dst, src))


def _copyto(m, dst, src):
    y = m.copy(dst)
    m.copyto(y, src)
    return y


add("copyto", _copyto, _copyto_case)


# --- functorch_core/numpy/_extras.py ---------------------------------------------------------

@st.composite
def _isin_case(draw, dtype):
    x = draw(array(dtype, shapes(0, 2, 0, 3), lo=-2, hi=2, int_lo=-2, int_hi=2))
    tests = draw(array(_matrix_dtype(draw, dtype), shapes(0, 2, 0, 3), lo=-2, hi=2, int_lo=-2,
                       int_hi=2))
    return Case((x, tests), {"invert": draw(st.booleans())})


@st.composite
def _lexsort_case(draw, dtype):
    shape = draw(shapes(1, 2, 1, 4))
    keys = tuple(draw(array(_matrix_dtype(draw, dtype), shape, lo=-2, hi=2, int_lo=-2,
                            int_hi=2, specials=False)) for _ in range(draw(st.integers(1, 3))))
    return Case(keys, {"axis": draw(st.integers(-len(shape), len(shape) - 1))})


@st.composite
def _fill_diagonal_case(draw, dtype):
    n = draw(st.integers(1, 3))
    shape = draw(st.sampled_from([(n, n), (n + 2, n), (n, n + 1), (n, n, n)]))
    v = draw(st.one_of(array(dtype, draw(st.sampled_from([(), (1,), (2,)]))),
                       python_scalar_like(dtype)))
    return Case((draw(array(dtype, shape)), v), {"wrap": draw(st.booleans())})


def _fill_diagonal(m, a, v, wrap):
    y = m.copy(a)
    m.fill_diagonal(y, v, wrap=wrap)
    return y


@st.composite
def _poly_pair_case(draw, dtype):
    a = draw(array(dtype, (draw(st.integers(0, 4)),), lo=-3, hi=3))
    b = draw(array(_matrix_dtype(draw, dtype), (draw(st.integers(0, 4)),), lo=-3, hi=3))
    return Case((a, b))


@st.composite
def _choose_case(draw, dtype):
    n = draw(st.integers(1, 3))
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=n + 1, max_dims=2, max_side=3))
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    lo, hi = (0, n - 1) if mode == "raise" else (-4, 4)
    idx = draw(hnp.arrays(np.int64, s.input_shapes[0], elements=st.integers(lo, hi)))
    options = tuple(draw(array(dtype if i == 0 else _matrix_dtype(draw, dtype), shape))
                    for i, shape in enumerate(s.input_shapes[1:]))
    return Case((idx, *options), {"mode": mode})


@st.composite
def _unravel_case(draw, dtype):
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    size = int(np.prod(dims))
    if np.dtype(dtype).kind == "b":
        return Case((draw(array(dtype, shapes(0, 2, 0, 3))),), {"shape": (*dims, 2),
                                                                 "order": "C"})
    if np.dtype(dtype).kind not in "iu":     # NumPy refuses other dtypes (TypeError)
        return Case((draw(array(dtype, shapes(0, 2, 0, 3), lo=0, hi=3)),),
                    {"shape": dims, "order": "C"})
    idx = draw(hnp.arrays(np.dtype(dtype), shapes(0, 2, 0, 3), elements=st.integers(
        0, min(size - 1, np.iinfo(dtype).max))))
    return Case((idx,), {"shape": dims, "order": draw(st.sampled_from(["C", "F"]))})


add("choose", lambda m, a, *options, mode: m.choose(a, list(options), mode=mode),
    _choose_case)
add("unravel_index", lambda m, i, shape, order: m.unravel_index(i, shape, order),
    _unravel_case, INT_BOOL)
@st.composite
def _block_case(draw, dtype):
    """A 2x2 layout of blocks whose sizes fit ([[a, b], [c, d]]), or a row of 1-d pieces."""
    if draw(st.booleans()):
        pieces = tuple(draw(array(_matrix_dtype(draw, dtype), (draw(st.integers(0, 3)),)))
                       for _ in range(draw(st.integers(1, 3))))
        return Case(pieces, {"layout": "row"})
    r1, r2, c1, c2 = (draw(st.integers(1, 2)) for _ in range(4))
    blocks = tuple(draw(array(_matrix_dtype(draw, dtype), shape))
                   for shape in [(r1, c1), (r1, c2), (r2, c1), (r2, c2)])
    return Case(blocks, {"layout": "grid"})


def _block(m, *blocks, layout):
    if layout == "row":
        return m.block(list(blocks))
    return m.block([[blocks[0], blocks[1]], [blocks[2], blocks[3]]])


def _ix(m, *seqs):
    return m.ix_(*seqs)


@st.composite
def _ix_case(draw, dtype):
    n = draw(st.integers(1, 3))
    return Case(tuple(draw(hnp.arrays(np.int64, (draw(st.integers(0, 3)),),
                                      elements=st.integers(-3, 3))) for _ in range(n)))


def _pack_kwargs(draw, shape):
    kw = {"axis": draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
          if shape else None, "bitorder": draw(st.sampled_from(["big", "little"]))}
    return kw


def _unpack_kwargs(draw, shape):
    kw = _pack_kwargs(draw, shape)
    if draw(st.booleans()):
        n = (math.prod(shape) if kw["axis"] is None else shape[kw["axis"]]) * 8
        kw["count"] = draw(st.integers(-n, n + 3))
    return kw


add("packbits", lambda m, x, **kw: m.packbits(x, **kw), one_array(_pack_kwargs, max_side=10),
    INT_BOOL)
add("unpackbits", lambda m, x, **kw: m.unpackbits(x, **kw), one_array(_unpack_kwargs),
    (np.dtype(np.uint8),))
@st.composite
def _ravel_multi_case(draw, dtype):
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=len(dims), max_dims=2, max_side=3))
    if np.dtype(dtype).kind in "fc":       # NumPy refuses them (TypeError)
        coords = tuple(draw(array(dtype, sh, lo=0, hi=1)) for sh in s.input_shapes)
    else:
        coords = tuple(draw(array(dtype, sh, int_lo=-5, int_hi=5)) for sh in s.input_shapes)
    modes = tuple(draw(st.sampled_from(["wrap", "clip"])) for _ in dims)
    return Case(coords, {"dims": dims, "mode": modes if draw(st.booleans()) else modes[0],
                         "order": draw(st.sampled_from(["C", "F"]))})


add("ravel_multi_index", lambda m, *coords, **kw: m.ravel_multi_index(coords, **kw),
    _ravel_multi_case, INT_BOOL)
add("block", _block, _block_case)
add("ix_", _ix, _ix_case, np_api=True)
add("sort_complex", _fnp_call("sort_complex"), unary(-3, 3))
add("apply_over_axes", lambda m, x, axes: m.apply_over_axes(m.sum, x, axes), one_array(
    lambda d, s: {"axes": d(st.lists(st.integers(-len(s), len(s) - 1), max_size=2))},
    min_dims=1))
add("isin", lambda m, x, t, invert: m.isin(x, t, invert=invert), _isin_case)
add("lexsort", lambda m, *keys, axis: m.lexsort(keys, axis=axis), _lexsort_case)
add("fill_diagonal", _fill_diagonal, _fill_diagonal_case)
add("polyadd", lambda m, a, b: m.polyadd(a, b), _poly_pair_case)
add("polysub", lambda m, a, b: m.polysub(a, b), _poly_pair_case, NO_BOOL)
add("polyder", lambda m, p, order: m.polyder(p, order), one_array(
    lambda d, s: {"order": d(st.integers(0, 3))}, min_dims=1, max_dims=1, lo=-3, hi=3))
add("polyint", lambda m, p, order, k: m.polyint(p, order, k), one_array(
    lambda d, s: {"order": d(st.integers(0, 3)), "k": d(st.sampled_from([None, 2.0, [1, 2, 3]]))},
    min_dims=1, max_dims=1, lo=-3, hi=3))
add("diagflat", lambda m, x, k: m.diagflat(x, k), one_array(
    lambda d, s: {"k": d(st.integers(-2, 2))}, max_dims=2))

OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate row names"

# Every name the core issue lists; each must be an attribute of fnp.
REQUIRED_NAMES = (
    list(UNARY) + ["round"] + list(BINARY) + ["where", "clip"]
    + ["sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin",
       "all", "any", "cumsum", "cumprod"]
    + ["reshape", "ravel", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
       "broadcast_to", "broadcast_arrays", "concatenate", "stack", "hstack", "vstack", "split",
       "tile", "repeat", "flip", "roll", "pad", "atleast_1d", "atleast_2d"]
    + ["take", "take_along_axis", "sort", "argsort"]
    + ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "trace", "diag",
       "diagonal", "tril", "triu"]
    + ["array", "asarray", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
       "arange", "linspace", "eye", "identity"]
    + list(DTYPE_NAMES)
)
