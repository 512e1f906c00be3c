"""Coverage by construction: every public callable of numpy, numpy.linalg, numpy.fft, every
ufunc of scipy.special, every distribution of scipy.stats and the chosen callables of
scipy.linalg/signal/integrate is supported, static, refused, not yet built, or not about
arrays -- read from the live namespaces, so that a function new in NumPy or SciPy fails
here until it is classified (tests/coverage_table.py, functorch_core/numpy/_refusals.py,
functorch_core/scipy/_special_refusals.py). A refused or not-yet function called on a
traced array raises the message naming its real module and the table's reason.

``PYTHONPATH=tests python tests/numpy/test_coverage.py`` prints the counts table of
docs/numpy.md.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import Counter
from functools import cache

import coverage_table as T
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import TracerError
from op_table import OPS_BY_NAME
from paths import ROOT
from scipy.stats._multivariate import multi_rv_generic

import functorch_core as fc
import functorch_core.numpy as fnp
import functorch_core.scipy as fcs
from functorch_core.numpy import internal
from functorch_core.scipy import ufuncs as scipy_ufuncs

REFUSED, NOT_YET = internal.REFUSED, internal.NOT_YET
HANDLED = internal.HANDLED_FUNCTIONS
pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning",
                                        "ignore::RuntimeWarning")
NUMPY_NAMESPACES = {"numpy": np, "numpy.linalg": np.linalg, "numpy.fft": np.fft}
CATEGORIES = ("supported", "static", "refused", "not yet", "not arrays")


def _callables(module):
    return {name: obj for name in dir(module) if not name.startswith("_")
            for obj in [getattr(module, name)] if callable(obj)}


def _numpy_categories(prefix, name, obj):
    q = f"{prefix}.{name}"
    if isinstance(obj, type):
        known = issubclass(obj, np.generic) or name in T.CLASSES[prefix]
        return ["not arrays"] if known else []
    cats = [c for c, hit in (("static", q in T.STATIC),
                             ("refused", q in REFUSED or q in T.PLAIN_REFUSED),
                             ("not yet", q in NOT_YET),
                             ("not arrays", q in T.NOT_ARRAYS)) if hit]
    traced = obj in HANDLED or obj in fnp.UFUNC_CALLS or (prefix == "numpy"
                                                          and name in T.DELEGATING)
    if traced and not cats:
        cats.append("supported")
    if traced and cats[0] in ("not yet", "not arrays"):
        cats.append("supported")     # traced, but tabled as not traced: a stale entry
    return cats


@cache
def numpy_table(prefix):
    return {name: _numpy_categories(prefix, name, obj)
            for name, obj in _callables(NUMPY_NAMESPACES[prefix]).items()}


@pytest.mark.parametrize("prefix", sorted(NUMPY_NAMESPACES))
def test_every_numpy_callable_is_classified_once(prefix):
    bad = {n: c for n, c in numpy_table(prefix).items() if len(c) != 1}
    assert not bad, (f"{prefix}: classify each of these exactly once (supported: "
                     "functorch_core.numpy implements it with an op-table row; otherwise a "
                     "table of functorch_core/numpy/_refusals.py or tests/coverage_table.py): "
                     f"{bad}")


def test_a_function_new_to_numpy_is_unclassified():
    """What a NumPy release adding ``numpy.brand_new`` does to the test above."""
    def brand_new(x):
        return x
    assert _numpy_categories("numpy", "brand_new", brand_new) == []
    assert _numpy_categories("numpy", "compress", np.compress) == ["refused"]
    assert _numpy_categories("numpy", "sum", np.sum) == ["supported"]


def test_tables_name_only_live_functions():
    live = {f"{p}.{n}" for p in NUMPY_NAMESPACES for n in numpy_table(p)}
    tabled = (set(REFUSED) | set(NOT_YET) | set(T.STATIC) | set(T.NOT_ARRAYS)
              | set(T.PLAIN_REFUSED) | {f"numpy.{n}" for n in [*T.ROWS, *T.DELEGATING]})
    assert not tabled - live, f"stale entries: {sorted(tabled - live)}"


def _row_objects():
    rows = {}
    for row in OPS_BY_NAME:
        obj = getattr(np, row, None)
        if callable(obj):
            rows.setdefault(obj, row)
    return rows


def test_supported_numpy_functions_have_op_table_rows():
    rows = _row_objects()
    missing = [n for n, c in numpy_table("numpy").items() if c == ["supported"]
               and n not in T.DELEGATING and getattr(np, n) not in rows
               and T.ROWS.get(n) not in OPS_BY_NAME]
    assert not missing, f"supported but no op-table row (tests/op_table.py): {missing}"


def _test_text(*paths):
    texts = []
    for path in paths:
        full = os.path.join(ROOT, path)
        files = [full] if full.endswith(".py") else [
            os.path.join(full, f) for f in sorted(os.listdir(full)) if f.endswith(".py")]
        for f in files:
            with open(f, encoding="utf-8") as fh:
                texts.append(fh.read())
    return "\n".join(texts)


@pytest.mark.parametrize("prefix", ["numpy.linalg", "numpy.fft"])
def test_supported_linalg_and_fft_functions_are_tested(prefix):
    """Named by a test of tests/linalg_fft (their tests parametrize over the names), or an
    op-table row ``linalg_<name>``."""
    text = _test_text("tests/linalg_fft")
    missing = [n for n, c in numpy_table(prefix).items() if c == ["supported"]
               and not re.search(rf"\b{n}\b", text) and f"linalg_{n}" not in OPS_BY_NAME]
    assert not missing, f"{prefix}: supported but named by no test of tests/linalg_fft: {missing}"


@pytest.mark.parametrize("name", sorted(T.STATIC))
def test_static_functions_work_while_tracing(name):
    call = T.STATIC[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        fc.make_graph(lambda x: (call(x), x)[1])(np.ones((3, 3)))


@pytest.mark.parametrize("name", sorted(T.DELEGATING))
def test_delegating_functions_match_their_delegate(name):
    call, delegate = T.DELEGATING[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        got = fc.jit(call)(np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(got, delegate(np.arange(9.0).reshape(3, 3)))


def _on_tracer(call):
    """What ``call(x)`` raises for a traced float64 x of shape (3,)."""
    with pytest.raises(Exception) as info:  # each caller checks the kind and the message
        fc.make_graph(lambda x: (call(x), x)[1])(np.ones(3))
    return info.value


def _protocol_call(obj):
    """Calling ``obj`` on tracers through NumPy's protocols, argument lists aside: the
    tracer's ``__array_ufunc__``/``__array_function__`` is what NumPy's dispatch calls."""
    if isinstance(obj, np.ufunc):
        return lambda x: obj(*[x] * obj.nin)
    return lambda x: type(x).__array_function__(x, obj, (type(x),), (x,), {})


TABLED = sorted([(q, REFUSED[q]) for q in REFUSED] + [(q, NOT_YET[q]) for q in NOT_YET])


@pytest.mark.parametrize("name,reason", TABLED, ids=[q for q, _ in TABLED])
def test_refusal_names_the_module_and_the_reason(name, reason):
    prefix, _, short = name.rpartition(".")
    err = _on_tracer(_protocol_call(getattr(NUMPY_NAMESPACES[prefix], short)))
    assert isinstance(err, NotImplementedError), repr(err)
    assert str(err) == f"{name} is not supported on traced arrays; {reason}"


@pytest.mark.parametrize("call,message", [
    (lambda x: np.compress([True, False, True], x), r"^numpy\.compress is not supported on "
                                                    "traced arrays; the shape of its result"),
    (lambda x: np.histogram2d(x, x), r"^numpy\.histogram2d is not supported on traced "
                                      r"arrays; not implemented yet \(to be built: fnp"),
    (lambda x: np.frexp(x), r"^numpy\.frexp is not supported .*the exponent and mantissa"),
    (lambda x: np.add.outer(x, x), r"^numpy\.add\.outer is not supported on traced arrays; "
                                   "of a ufunc, only calling it"),
    (lambda x: scipy.special.yv(1.0, x), r"^scipy\.special\.yv is not supported on traced "
                                         r"arrays; not implemented yet \(to be built: Bessel"),
])
def test_real_calls_read_the_refusal(call, message):
    err = _on_tracer(call)
    assert isinstance(err, NotImplementedError) and re.search(message, str(err)), repr(err)


@pytest.mark.parametrize("name", sorted(T.PLAIN_REFUSED))
def test_plain_refusals_fail_on_tracers(name):
    """NumPy does not dispatch these: it converts the tracer (TracerError naming the value
    needed) or reads memory the tracer does not have."""
    err = _on_tracer(getattr(np, name.rpartition(".")[2]))
    assert isinstance(err, TracerError | AttributeError), repr(err)


# --- scipy.special's ufuncs ----------------------------------------------------------------

SPECIAL_NOT_YET = scipy_ufuncs.NOT_YET


def _scipy_ufuncs():
    return {name: fn for fn, name in scipy_ufuncs.SCIPY_NAMES.items()}


def test_every_scipy_special_ufunc_is_classified_once():
    live = _scipy_ufuncs()
    both = [n for n, f in live.items() if f in scipy_ufuncs.UFUNC_CALLS and n in SPECIAL_NOT_YET]
    neither = [n for n, f in live.items()
               if f not in scipy_ufuncs.UFUNC_CALLS and n not in SPECIAL_NOT_YET]
    stale = sorted(set(SPECIAL_NOT_YET) - set(live))
    assert not (both or neither or stale), (
        f"supported and tabled: {both}; neither (add to functorch_core/scipy/"
        f"_special_refusals.py or build it): {neither}; stale: {stale}")


SUPPORTED_SPECIAL = sorted(n for n, f in _scipy_ufuncs().items()
                           if f in scipy_ufuncs.UFUNC_CALLS)


@pytest.mark.parametrize("name", SUPPORTED_SPECIAL)
def test_supported_scipy_ufuncs_trace_and_match_scipy(name):
    ufunc = getattr(scipy.special, name)
    args = [np.array([0.5, 0.75, 2.0])] * ufunc.nin
    graph = fc.make_graph(lambda *a: ufunc(*a))(*args)
    got = run_graph(graph, args)[0]
    np.testing.assert_allclose(got, ufunc(*args), rtol=1e-9, equal_nan=True)


@pytest.mark.parametrize("name", sorted(SPECIAL_NOT_YET))
def test_scipy_special_refusal_names_the_module_and_the_reason(name):
    err = _on_tracer(_protocol_call(getattr(scipy.special, name)))
    assert isinstance(err, NotImplementedError), repr(err)
    assert str(err) == (f"scipy.special.{name} is not supported on traced arrays; "
                        f"{SPECIAL_NOT_YET[name]}")


# --- scipy.stats' distributions, and the chosen scipy.linalg/signal/integrate callables -----

def _distributions():
    kinds = (scipy.stats.rv_continuous, scipy.stats.rv_discrete, multi_rv_generic)
    return sorted(n for n in dir(scipy.stats) if isinstance(getattr(scipy.stats, n), kinds))


def test_every_scipy_stats_distribution_is_classified_once():
    live = set(_distributions())
    supported = set(fcs.stats.__all__)
    tabled = set(T.STATS_NOT_YET)
    assert not (supported & tabled), f"supported and tabled: {sorted(supported & tabled)}"
    assert not live - supported - tabled, f"unclassified: {sorted(live - supported - tabled)}"
    assert not (supported | tabled) - live, f"stale: {sorted((supported | tabled) - live)}"
    text = _test_text(*T.SCIPY_TESTS["scipy.stats"])
    untested = [n for n in supported if not re.search(rf"\b{n}\.", text)]
    assert not untested, f"supported but used by no test: {untested}"


@pytest.mark.parametrize("prefix", sorted(T.CHOSEN))
def test_chosen_scipy_callables_are_classified(prefix):
    module, ours = getattr(scipy, prefix.split(".")[1]), getattr(fcs, prefix.split(".")[1])
    chosen = T.CHOSEN[prefix]
    assert not [n for n in chosen if not callable(getattr(module, n, None))], "stale"
    supported = {n for n, why in chosen.items() if why is None}
    assert supported == set(ours.__all__) - {"OdeSolution"}, (
        f"{prefix}: functorch_core's names and the table's supported ones differ")
    text = _test_text(*T.SCIPY_TESTS[prefix])
    untested = [n for n in supported if not re.search(rf"\b{n}\b", text)]
    assert not untested, f"{prefix}: supported but named by no test: {untested}"


# --- the counts (docs/numpy.md) ------------------------------------------------------------

def counts():
    """namespace -> Counter of categories."""
    out = {p: Counter(c[0] if len(c) == 1 else "unclassified"
                      for c in numpy_table(p).values()) for p in NUMPY_NAMESPACES}
    special = _scipy_ufuncs()
    out["scipy.special (ufuncs)"] = Counter(
        "supported" if f in scipy_ufuncs.UFUNC_CALLS else "not yet" for f in special.values())
    out["scipy.stats (distributions)"] = Counter(
        "supported" if n in fcs.stats.__all__ else "not yet" for n in _distributions())
    for prefix, chosen in T.CHOSEN.items():
        out[f"{prefix} (chosen)"] = Counter(
            "supported" if why is None else "refused" if why.startswith("refused") else
            "not yet" for why in chosen.values())
    return out


def counts_table():
    lines = ["| namespace | " + " | ".join(CATEGORIES) + " | total |",
             "|---|" + "---:|" * (len(CATEGORIES) + 1)]
    for name, c in counts().items():
        lines.append(f"| {name} | " + " | ".join(str(c[k]) for k in CATEGORIES)
                     + f" | {sum(c.values())} |")
    return "\n".join(lines)


def test_docs_show_the_live_counts():
    with open(os.path.join(ROOT, "docs", "numpy.md"), encoding="utf-8") as f:
        docs = f.read()
    assert counts_table() in docs, ("docs/numpy.md's coverage table is out of date; "
                                    "`PYTHONPATH=tests python tests/numpy/test_coverage.py` prints "
                                    "it:\n"
                                    + counts_table())


if __name__ == "__main__":
    print(counts_table())
