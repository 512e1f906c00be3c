"""Writes through a traced boolean mask (``x[mask] = v``, ``x[mask] += v``) as a select.

Checked against NumPy running the same function on concrete arrays (values and dtypes),
under jit (both backends), grad (check_grads), vmap (loop and stack) and functionalize;
reads and values whose shape needs the number of True entries are refused by name.
"""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from functorch_core.ir import TracerError
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.testing import check_grads

OPS = {
    "=": lambda y, m, v: y.__setitem__(m, v),
    "+=": lambda y, m, v: y.__setitem__(m, y.__getitem__(m).__iadd__(v)),
    "-=": lambda y, m, v: y.__setitem__(m, y.__getitem__(m).__isub__(v)),
    "*=": lambda y, m, v: y.__setitem__(m, y.__getitem__(m).__imul__(v)),
}


def _step(op):
    def f(x, m, v):
        y = x.copy()
        OPS[op](y, m, v)
        return y
    return f


@st.composite
def _cases(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
    k = draw(st.integers(1, len(shape)))             # the mask covers the leading k axes
    x = draw(hnp.arrays(dtype, shape, elements=st.integers(-50, 50)))
    m = draw(hnp.arrays(np.bool_, shape[:k]))
    rest = shape[k:]
    vshape = draw(st.sampled_from([(), *[(1,) * j + rest[len(rest) - i:]
                                         for i in range(len(rest) + 1) for j in (0, 1)]]))
    v = draw(hnp.arrays(dtype, vshape, elements=st.integers(-9, 9)))
    return x, m, v, draw(st.sampled_from(sorted(OPS)))


@given(_cases())
def test_masked_writes_match_numpy_under_jit(case):
    x, m, v, op = case
    f = _step(op)
    want = f(x, m, v)            # NumPy itself: eager behaviour is unchanged
    for backend in ("cpu", "interpreter"):
        got = fc.jit(f, backend=backend)(x, m, v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_python_scalar_values_and_mixed_dtypes_follow_numpy():
    x = np.arange(-3, 9, dtype=np.int32).reshape(3, 4)

    def f(x):
        y = x.copy()
        y[y > 2] = 7.9          # assignment truncates into int32, as NumPy's does
        y[y < 0] += 1
        z = x.astype(np.float32)
        m = z > 4
        z[m] = z[m] * 2.5 + 1   # arithmetic on the masked values, written back
        z[m] = -z[m]
        return y, z
    for got, want in zip(fc.jit(f)(x), f(x), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_in_place_casting_is_refused_as_numpy_refuses_it():
    def f(x):
        y = x.copy()
        y[y > 0] += 1.5
        return y
    x = np.arange(4)
    with pytest.raises(TypeError):
        f(x)
    with pytest.raises(TypeError, match="same_kind"):
        fc.jit(f)(x)


def test_a_mask_over_the_leading_axes_writes_whole_rows():
    x = np.arange(12.0).reshape(3, 4)
    v = np.array([10.0, 20.0, 30.0, 40.0])

    def f(x, v):
        y = x * 1.0
        rows = y[:, 0] > 3
        y[rows] = v
        y[rows] += v[::-1]
        return y
    np.testing.assert_array_equal(fc.jit(f)(x, v), f(x, v))


def test_grad_of_masked_writes():
    def f(x):
        y = np.sin(x)
        y[x > 0.3] = 0
        m = x < -0.2
        y[m] *= 2
        y[m] += x[m] * x[m]
        return np.sum(y * x)
    # no point near the thresholds, so the finite differences keep the masks
    x = np.array([-1.3, -0.6, 0.1, 0.05, 0.8, 1.7, -0.45, 2.2])
    check_grads(f, (x,), order=2)
    want = np.where(x > 0.3, 0.0, np.where(x < -0.2, 2 * (np.sin(x) + x * np.cos(x)) +
                                           3 * x * x, np.sin(x) + x * np.cos(x)))
    np.testing.assert_allclose(fc.grad(f)(x), want, rtol=1e-12)


def test_vmap_of_masked_writes_matches_loop_and_stack():
    rng = np.random.default_rng(0)
    xs, vs = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 4))

    def f(x, v):
        y = x * 1.0
        m = y > 0.2
        y[m] = -1.0
        y[y[:, 0] < 0] += v
        return y
    np.testing.assert_array_equal(fc.vmap(f)(xs, vs), np.stack([f(x, v) for x, v in
                                                                zip(xs, vs, strict=True)]))
    np.testing.assert_array_equal(fc.vmap(f, in_dims=(0, None))(xs, vs[0]),
                                  np.stack([f(x, vs[0]) for x in xs]))


def test_a_write_into_an_argument_reaches_the_caller_under_jit_and_functionalize():
    def f(x):
        x[x < 0] = 0
        x[x > 1] *= 0.5
    x = np.array([-1.0, 0.5, 3.0, -2.0, 1.5])
    want = x.copy()
    f(want)
    for run in (fc.jit(f), fc.functionalize(f)):
        y = x.copy()
        run(y)
        np.testing.assert_array_equal(y, want)


def test_a_write_through_a_view_lands_in_its_base():
    def f(x):
        y = x * 1.0
        v = y[1:]
        v[v > 0] = 9.0
        return y
    x = np.array([1.0, -1.0, 2.0, 0.5])
    np.testing.assert_array_equal(fc.jit(f)(x), f(x))


def test_reading_with_a_traced_mask_is_refused_with_the_read_line():
    def f(x):
        return np.sum(x[x > 0])
    with pytest.raises(TracerError, match=r"Reading x\[mask\] with a traced boolean mask "
                                          r"\(at .*test_masked_writes.py:\d+\).*fnp.where"):
        fc.jit(f)(np.ones(3))
    with pytest.raises(TracerError, match="Writes keep the shape"):
        fc.jit(lambda x: x[x > 0].sum())(np.ones(3))
    with pytest.raises(TracerError, match="traced boolean mask"):
        fc.jit(lambda x: x[x > 0] + 1)(np.ones(3))      # arithmetic, never written back


def test_a_value_shaped_by_the_number_of_true_entries_is_refused():
    def f(x):
        y = x * 1.0
        y[y > 0] = np.arange(3.0)       # fine in NumPy when exactly 3 entries are True
        return y
    x = np.array([1.0, -1.0, 2.0, 3.0])
    f(x)
    with pytest.raises(TracerError, match=r"number of True entries.*fnp.where\(mask"):
        fc.jit(f)(x)


def test_values_read_at_another_mask_are_refused():
    def f(x):
        y = x * 1.0
        y[y > 0] = y[y > 0] * 2       # two mask values: compute it once
        return y
    with pytest.raises(TracerError, match="Compute the mask once"):
        fc.jit(f)(np.ones(3))


def test_mask_shape_errors_are_numpys():
    def f(x, m):
        y = x * 1.0
        y[m] = 0
        return y
    with pytest.raises(IndexError, match="boolean index did not match"):
        fc.jit(f)(np.ones((3, 2)), np.ones(2, bool))
    with pytest.raises(IndexError, match="too many indices"):
        fc.jit(f)(np.ones(3), np.ones((3, 1), bool))
