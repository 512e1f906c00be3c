"""The cpu backend's inline i0e and i1e (backends/llvm/bessel.py) against mpmath, and the
i0/i1 built on them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss
from functorch_core.backends import registry
from functorch_core.backends.llvm import lowering
from functorch_core.backends.planning.partition import Fallback
from functorch_core.ir import primitives as P
from graph_builder import Builder

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import ulp_distance

mp = pytest.importorskip("mpmath")
CPU = registry.get("cpu")
# measured on these points: i0e/i1e 2 ulp in float64 (SciPy's reach 6), i0/i1 3 (i0e e^|x|:
# SciPy's reach 9); the rounded float64 value in float32
MAX_ULPS = {np.float64: {"i0e": 2, "i1e": 2, "i0": 3, "i1": 3}, np.float32: dict.fromkeys(
    ("i0e", "i1e", "i0", "i1"), 1)}
REFERENCE = {"i0e": lambda x: mp.besseli(0, x) * mp.exp(-abs(x)),
             "i1e": lambda x: mp.besseli(1, x) * mp.exp(-abs(x)),
             "i0": lambda x: mp.besseli(0, x), "i1": lambda x: mp.besseli(1, x)}


def _points(dtype, top):
    rng = np.random.default_rng(7)
    g = np.geomspace(1e-300, 8, 60)
    x = np.r_[rng.uniform(-30, 30, 300), g, -g, np.geomspace(8, top, 60),
              3.9999999, 4.0, 4.0000001, 7.9999999, 8.0, 8.0000001]
    with np.errstate(over="ignore"):
        x = x[np.abs(x) <= top].astype(dtype)
    return x[np.isfinite(x)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["i0e", "i1e", "i0", "i1"])
def test_bessel_within_their_ulp_bounds_of_mpmath(name, dtype):
    top = 1e300 if name.endswith("e") else (700.0 if dtype == np.float64 else 85.0)
    x = _points(dtype, top)
    with mp.workdps(40):
        want = np.array([float(REFERENCE[name](mp.mpf(float(v)))) for v in x]).astype(dtype)
    got = np.asarray(fc.jit(getattr(S, name))(x))
    assert got.dtype == dtype
    err = ulp_distance(got, want)
    assert err.max() <= MAX_ULPS[dtype][name], (x[np.argmax(err)], err.max())


def test_bessel_edges_as_scipy_and_native():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-320, -1e-320])
    for name in ("i0e", "i1e"):
        got = np.asarray(fc.jit(getattr(S, name))(x))
        want = getattr(ss, name)(x)
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want)), name
    b = Builder()
    y = b.input((1 << 12,), "float64")
    plan = lowering.partition(b.graph(b(P.bessel_i0e, y), b(P.bessel_i1e, y)))
    assert not any(isinstance(s, Fallback) for s in plan.steps)
