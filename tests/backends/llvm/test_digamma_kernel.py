"""The cpu backend's inline digamma (backends/llvm/gamma.py) against mpmath and SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss
from functorch_core.backends.llvm import lowering
from functorch_core.backends.planning.partition import Fallback
from functorch_core.ir import primitives as P
from graph_builder import Builder

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.testing import ulp_distance

mp = pytest.importorskip("mpmath")
ROOT = 1.4616321449683622


def _exact(x, dtype):
    with mp.workdps(40):
        return np.array([float(mp.digamma(mp.mpf(float(v)))) for v in x]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_digamma_positive_within_2_ulp_of_mpmath_next_to_its_root_too(dtype):
    rng = np.random.default_rng(5)
    x = np.r_[rng.uniform(0, 30, 300), np.geomspace(1e-300, 1, 40), np.geomspace(1, 1e300, 60),
              ROOT + np.geomspace(1e-15, 0.5, 40), ROOT - np.geomspace(1e-15, 0.4, 40),
              1.0, 2.0, 4.0, 9.999999, 10.0, 10.000001]
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    x = x[np.isfinite(x) & (x > 0)]
    got = np.asarray(fc.jit(S.digamma)(x))
    err = ulp_distance(got, _exact(x, dtype))
    assert err.max() <= (2 if dtype == np.float64 else 1), (x[np.argmax(err)], err.max())


def test_digamma_negative_within_4_ulp_of_scipy_where_scipy_is_exact():
    """The reflection psi(1 - x) - pi cot(pi x), 1 - x carried exactly (issue 16's criterion:
    where SciPy is within an ulp of the exact value)."""
    x = np.random.default_rng(6).uniform(-20, 0, 300)
    x = x[x != np.floor(x)]
    exact, scipys = _exact(x, np.float64), ss.digamma(x)
    got = np.asarray(fc.jit(S.digamma)(x))
    fine = ulp_distance(scipys, exact) <= 1
    assert ulp_distance(got, scipys)[fine].max() <= 4


def test_digamma_poles_and_edges_as_scipy_natively():
    x = np.array([0.0, -0.0, -1.0, -2.0, -1e300, np.inf, -np.inf, np.nan, 1e-300, -1e-300,
                  1e300, -0.5])
    got, want = np.asarray(fc.jit(S.digamma)(x)), ss.digamma(x)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    assert ulp_distance(got[finite], want[finite]).max() <= 1
    b = Builder()
    y = b.input((1 << 12,), "float64")
    plan = lowering.partition(b.graph(b(P.digamma, y)))
    assert not any(isinstance(s, Fallback) for s in plan.steps)
