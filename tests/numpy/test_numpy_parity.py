"""NumPy parity of ``functorch_core.numpy``, driven by the op table (tests/op_table.py).

Every row is checked eagerly (``fnp.f``), under ``jit`` (``jit(lambda *a: fnp.f(*a))``)
and through NumPy's own API on tracers (``jit(lambda *a: np.f(*a))``), for values,
result dtypes and shapes, on every dtype of the type system: where NumPy accepts the
dtype the results must match, where NumPy rejects it so must we. A second test checks
the traced graph with ``check_graph`` after each generic pass and runs the passes'
results on the reference interpreter.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from budget import share
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import check_graph, passes
from functorch_core.ir.pytree import tree_flatten
from hypothesis import given, settings
from hypothesis import strategies as st
from op_table import ALL_DTYPES, BINARY, MODES, OPS, REQUIRED_NAMES, RTOL, UNARY, Case, Op

import functorch_core as fc
import functorch_core.numpy as fnp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::numpy.exceptions.ComplexWarning")

PASSES = {"dce": passes.dce, "cse": passes.cse, "fold_constants": passes.fold_constants,
          "inline": passes.inline, "simplify": passes.simplify}


# --- running one case -------------------------------------------------------------

def _quietly(fn):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as err:     # the outcome is compared, not raised
            return None, err


def numpy_outcome(op: Op, case: Case):
    return _quietly(lambda: op.fn(np, *case.args, **case.kwargs))


def our_outcome(op: Op, case: Case, mode: str):
    if mode == "eager":
        return _quietly(lambda: op.fn(fnp, *case.args, **case.kwargs))
    m = fnp if mode == "jit" else np
    jitted = fc.jit(lambda *a: op.fn(m, *a, **case.kwargs))
    return _quietly(lambda: jitted(*case.args))


def _leaves(x):
    if isinstance(x, list | tuple):
        return [leaf for e in x for leaf in _leaves(e)]
    return [x]


def _scale(values) -> float:
    """The magnitude that absolute errors are measured against."""
    biggest = 1.0
    for v in values:
        a = np.asarray(v)
        if a.dtype.kind in "biufc" and a.size:
            mag = np.abs(a.astype(np.complex128) if a.dtype.kind == "c" else a.astype(np.float64))
            finite = mag[np.isfinite(mag)]
            if finite.size:
                biggest = max(biggest, float(finite.max()))
    return biggest


def assert_same(actual, expected, *, tol: float, inputs, what: str):
    """Same structure, dtypes, shapes and values (NaN where NumPy has NaN)."""
    exp_leaves, act_leaves = _leaves(expected), _leaves(actual)
    assert len(act_leaves) == len(exp_leaves), \
        f"{what}: {len(act_leaves)} results, NumPy returns {len(exp_leaves)}"
    for e, a in zip(exp_leaves, act_leaves, strict=True):
        e, a = np.asarray(e), np.asarray(a)
        assert a.dtype == e.dtype, f"{what}: dtype {a.dtype}, NumPy gives {e.dtype}"
        assert a.shape == e.shape, f"{what}: shape {a.shape}, NumPy gives {e.shape}"
        rtol = RTOL.get(e.dtype, 0.0) * tol
        if rtol == 0.0:
            np.testing.assert_array_equal(a, e, err_msg=what)
            continue
        atol = rtol * _scale([e, *inputs])
        parts = (np.real, np.imag) if e.dtype.kind == "c" else (np.asarray,)
        for part in parts:
            np.testing.assert_allclose(part(a), part(e), rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=what)


def _compatible(np_err: Exception, err: Exception) -> bool:
    bases = tuple(c for c in (TypeError, ValueError, IndexError, OverflowError)
                  if isinstance(np_err, c))
    return isinstance(err, bases) if bases else True


def check_mode(op: Op, case: Case, mode: str, dtype, expected):
    value, np_err = expected
    before = copy.deepcopy(case.args)
    got, err = our_outcome(op, case, mode)
    what = f"{op.name} [{mode}, {np.dtype(dtype)}] on {case!r}"
    for old, new in zip(before, case.args, strict=True):
        np.testing.assert_array_equal(new, old, err_msg=f"{what}: an input was modified")
    if np_err is not None:
        assert err is not None, (f"{what}: NumPy raises {type(np_err).__name__}({np_err}) "
                                 f"but we return {got!r}")
        assert _compatible(np_err, err), (f"{what}: NumPy raises {type(np_err).__name__}"
                                          f"({np_err}), we raise {type(err).__name__}({err})")
        return
    if err is not None:
        raise AssertionError(f"{what}: NumPy returns a result, we raise "
                             f"{type(err).__name__}: {err}") from err
    assert_same(got, value, tol=op.tol, inputs=case.args, what=what)


def modes_of(op: Op):
    return MODES if op.np_api else tuple(m for m in MODES if m != "np")


# --- parity over every dtype -------------------------------------------------------

@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@settings(max_examples=share(20, floor=1))
@given(data=st.data())
def test_parity(op: Op, data):
    """Each example draws one case per dtype and checks it eagerly and under jit; the
    NumPy-API path (which shares the fnp implementation) runs on one drawn dtype."""
    np_dtype = data.draw(st.sampled_from(op.dtypes), label="dtype for the NumPy-API path")
    for dtype in ALL_DTYPES:
        case = data.draw(op.gen(dtype), label=f"case[{dtype}]")
        expected = numpy_outcome(op, case)
        pure = bool(case.args) and all(isinstance(a, np.ndarray) and a.dtype == dtype
                                       for a in case.args)
        if dtype not in op.dtypes and pure:
            assert expected[1] is not None, (
                f"table error: NumPy accepts {dtype} for {op.name} on {case!r}; "
                "add the dtype to the row")
        for mode in modes_of(op):
            if op.knowns(mode, dtype, case) or (mode == "np" and dtype != np_dtype):
                continue
            check_mode(op, case, mode, dtype, expected)


KNOWN = [pytest.param(op, k, mode, id=f"{op.name}-{mode}-{i}",
                      marks=pytest.mark.xfail(reason=k.reason, strict=True))
         for op in OPS for i, k in enumerate(op.known) for mode in k.modes
         if mode == "passes" or mode in modes_of(op)]


@pytest.mark.parametrize("op,known,mode", KNOWN)
def test_known_failures(op: Op, known, mode):
    """Each known failure's reproducer still fails (strict xfail): once fixed, delete the
    entry from the op table."""
    case = known.example
    expected = numpy_outcome(op, case)
    if mode == "passes":
        check_passes(op, case, expected)
    else:
        dtype = np.asarray(case.args[0]).dtype if case.args else np.dtype(np.float64)
        check_mode(op, case, mode, dtype, expected)


# --- graphs and passes ---------------------------------------------------------------

def check_passes(op: Op, case: Case, expected):
    """check_graph after tracing and after every pass; each pass's graph runs on the
    interpreter and matches NumPy. Traced once with the arguments as inputs and once
    with them closed over as constants (so that fold_constants has work to do)."""
    value, np_err = expected
    what = f"{op.name} [passes] on {case!r}"
    variants = {
        "inputs": (lambda *a: op.fn(fnp, *a, **case.kwargs), case.args),
        "constants": (lambda: op.fn(fnp, *case.args, **case.kwargs), ()),
    }
    for variant, (fn, args) in variants.items():
        graph, err = _quietly(lambda fn=fn, args=args: fc.make_graph(fn)(*args))
        if np_err is not None or err is not None:
            if np_err is None:
                raise AssertionError(f"{what}: tracing fails: {err!r}") from err
            continue
        check_graph(graph)
        flat_args = [np.asarray(a) for a in tree_flatten((tuple(args), {}))[0]]
        for name, rewrite in PASSES.items():
            new = rewrite(graph)
            check_graph(new)
            outs, run_err = _quietly(lambda new=new, fa=flat_args: run_graph(new, fa))
            label = f"{what} after {name} ({variant})"
            if run_err is not None:
                raise AssertionError(f"{label}: the interpreter fails: {run_err!r}") \
                    from run_err
            assert_same(outs, value, tol=op.tol, inputs=case.args, what=label)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@settings(max_examples=share(20, floor=1))
@given(data=st.data())
def test_passes(op: Op, data):
    dtypes = [d for d in op.dtypes if not any(k.when is None for k in op.knowns("passes", d))]
    if not dtypes:
        return
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    case = data.draw(op.gen(dtype), label="case")
    if op.knowns("passes", dtype, case):
        return
    check_passes(op, case, numpy_outcome(op, case))


# --- the API surface -------------------------------------------------------------------

@pytest.mark.parametrize("name", REQUIRED_NAMES)
def test_name_exists(name):
    assert hasattr(fnp, name), f"functorch_core.numpy has no {name}"


@pytest.mark.parametrize("name", ["bool_", "int8", "int16", "int32", "int64", "uint8", "float16",
                                  "float32", "float64", "complex64", "complex128"])
def test_dtype_names_are_numpy_dtypes(name):
    assert np.dtype(getattr(fnp, name)) == np.dtype(getattr(np, name))


def test_tracer_attributes():
    """shape, ndim, size, dtype and len are concrete Python values while tracing."""
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, len=len(x))
        return x
    fc.jit(f)(np.zeros((3, 4, 5), np.float32))
    assert seen == {"shape": (3, 4, 5), "ndim": 3, "size": 60, "dtype": np.dtype(np.float32),
                    "len": 3}
    assert all(type(seen[k]) is int for k in ("ndim", "size", "len"))
    assert all(type(d) is int for d in seen["shape"])


def test_len_of_traced_scalar_raises_like_numpy():
    with pytest.raises(TypeError, match="unsized"):
        fc.jit(lambda x: len(x))(np.float32(1))


UNARY_NAMES, BINARY_NAMES = set(UNARY), set(BINARY)
ELEMENTWISE_NAMES = list(UNARY) + list(BINARY)
_V = np.array([0.5, 1.5, -2.0], np.float32)
_I = np.array([3, 5, -6], np.int16)
_INTEGER_ONLY = ("bitwise", "gcd", "lcm")     # name prefixes of the integer-only ufuncs
SCALAR_KIND_CASES = {
    **{f"{name}-{i}": (name, args) for name in ELEMENTWISE_NAMES
       for i, args in enumerate([(_I if name.startswith(_INTEGER_ONLY) else _V,),
                                 (np.int16(3) if name.startswith(_INTEGER_ONLY)
                                  else np.float32(1.5),),
                                 (_I[0] if name.startswith(_INTEGER_ONLY) else _V[0],)])},
    **{name: (name, (_V,)) for name in ["sum", "prod", "mean", "var", "std", "max", "min",
                                         "amax", "amin", "argmax", "argmin", "all", "any"]},
    "dot": ("dot", (_V, _V)), "vdot": ("vdot", (_V, _V)), "inner": ("inner", (_V, _V)),
    "matmul": ("matmul", (_V, _V)), "trace": ("trace", (np.eye(2),)),
    "round": ("round", (np.float32(2.5),)), "clip": ("clip", (np.float32(3), 0, 1)),
    "where": ("where", (True, np.float32(1), np.float32(2))),
}


@pytest.mark.parametrize("name,args", list(SCALAR_KIND_CASES.values()), ids=list(SCALAR_KIND_CASES))
def test_eager_scalar_results(name, args):
    """Eagerly, fnp returns a NumPy scalar exactly where NumPy does (not a 0-d array)."""
    if name in UNARY_NAMES:
        args = args[:1]
    elif name in BINARY_NAMES:
        args = (args[0], args[0])
    with np.errstate(all="ignore"):
        expected, got = getattr(np, name)(*args), getattr(fnp, name)(*args)
    assert type(got) is type(expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
