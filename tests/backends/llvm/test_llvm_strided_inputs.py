"""Arguments that are not C-contiguous (transposed, sliced with a step, reversed) in the cpu
backend: a big one is read where it lies, by an executable planned for its strides
(``runtime.strided_executable``), instead of being copied first. Values must be NumPy's:
reductions within the summation error bound of their order, integer sums and max/min
exactly, and every other consumer (a reshape that needs C order, a product, a result that
is the argument itself) must see the argument's values, not its memory in C order.
"""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.llvm import runtime
from functorch_core.ir.dtypes import bfloat16 as BF16

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.profiler import profile

FLOATS = [np.float64, np.float32, np.float16, BF16]
LAYOUTS = {
    "transposed": lambda b: b.T,
    "column step": lambda b: b[:, ::2],
    "row step": lambda b: b[::3],
    "reversed rows": lambda b: b[::-1],
    "reversed both, stepped": lambda b: b[::-2, ::-3],
    "offset window": lambda b: b[3:-5, 7:-2],
}


@pytest.fixture(autouse=True)
def small_arrays_go_strided(monkeypatch):
    """Plan small arguments for their strides too, so the cases stay fast."""
    monkeypatch.setattr(runtime, "STRIDED_MIN_POINTS", 1)


def _base(dtype, shape=(48, 72), seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _planned(jitted, x):
    """The strided executable ``jitted`` ran ``x`` with (None if it copied)."""
    exe = next(iter(jitted.cache.values())).run
    return runtime.strided_executable(exe, [x])


def _sum_bound(x, axis):
    """|computed - exact| for a float sum in any order whose additions round in float32 or
    the dtype (the wider): n * eps * sum|x| (each of the n - 1 additions errs by at most eps
    times a partial sum), plus the final rounding to the dtype (eps_dtype * |sum|)."""
    x64 = np.asarray(x, np.float64)
    n = x64.size if axis is None else x64.shape[axis]
    acc = np.finfo(np.float32 if np.dtype(x.dtype).itemsize <= 4 else x.dtype).eps
    own = float(np.finfo(x.dtype).eps) if x.dtype != BF16 else 2.0 ** -7
    return n * acc * np.abs(x64).sum(axis=axis) + own * np.abs(x64.sum(axis=axis))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_a_float_sum_of_a_strided_argument_is_within_its_error_bound(layout, dtype, axis):
    x = LAYOUTS[layout](_base(dtype))
    assert not x.flags.c_contiguous
    jf = fc.jit(lambda a: fnp.sum(a, axis=axis))
    got = jf(x)
    assert _planned(jf, x) is not None
    exact = np.asarray(x, np.float64).sum(axis=axis)
    assert np.asarray(got).dtype == np.sum(x, axis=axis).dtype
    err = np.abs(np.asarray(got, np.float64) - exact)
    assert np.all(err <= _sum_bound(x, axis))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, BF16],
                         ids=lambda d: np.dtype(d).name)
def test_max_min_and_integer_sums_of_strided_arguments_are_exact(layout, dtype):
    x = LAYOUTS[layout](_base(dtype, seed=1))
    for f in (np.max, np.min):
        for axis in (0, 1, None):
            got = fc.jit(lambda a, f=f, axis=axis: f(a, axis=axis))(x)
            np.testing.assert_array_equal(np.asarray(got), f(x, axis=axis))
    if np.dtype(dtype).kind == "i":
        for axis in (0, 1, None):
            got = fc.jit(lambda a, axis=axis: fnp.sum(a, axis=axis))(x)
            want = np.sum(x, axis=axis)
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_mean_of_a_strided_argument_and_under_vmap(layout):
    x = LAYOUTS[layout](_base(np.float32, seed=2))
    got = fc.jit(lambda a: fnp.mean(a, axis=0))(x)
    bound = _sum_bound(x, 0) / x.shape[0] + np.finfo(np.float32).eps * np.abs(x.mean(0))
    assert np.all(np.abs(got - np.asarray(x, np.float64).mean(0)) <= bound)
    for axis in (0, None):
        per_row = fc.jit(fc.vmap(lambda r, axis=axis: fnp.sum(r * r, axis=axis)))(x)
        loop = np.stack([np.asarray(fc.jit(lambda r, axis=axis: fnp.sum(r * r, axis=axis))(
            np.ascontiguousarray(r))) for r in x])
        np.testing.assert_allclose(per_row, loop, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_other_consumer_sees_the_arguments_values(layout):
    """A reshape needing C order, a product, the argument returned itself, a strided and a
    contiguous argument together: all equal NumPy on the same strided array."""
    b = _base(np.float64, seed=3)
    x = LAYOUTS[layout](b)
    y = np.ones((x.shape[1], 5))
    np.testing.assert_array_equal(fc.jit(lambda a: (a * 2).reshape(-1))(x),
                                  (x * 2).reshape(-1))
    np.testing.assert_array_equal(fc.jit(lambda a: a.reshape(-1))(x), x.reshape(-1))
    np.testing.assert_allclose(fc.jit(lambda a, w: a @ w)(x, y), x @ y, rtol=1e-12)
    same = fc.jit(lambda a: a)(x)
    np.testing.assert_array_equal(same, x)
    assert not np.shares_memory(same, b)
    mixed = fc.jit(lambda a, c: fnp.sum(a + c, axis=0))(x, np.ascontiguousarray(x))
    np.testing.assert_allclose(mixed, 2 * x.sum(0), rtol=1e-12, atol=1e-12)


def test_the_argument_is_not_copied_and_layouts_are_bounded(monkeypatch):
    b = _base(np.float32, (64, 64))
    jf = fc.jit(lambda a: fnp.sum(a, axis=0))
    jf(b.T)
    planned = _planned(jf, b.T)
    assert planned.input_strides == ((1, 64),)
    assert len(planned.plan.steps) == 1         # the reduction alone: no copy kernel
    monkeypatch.setattr(runtime, "STRIDED_LAYOUTS", 2)
    jf = fc.jit(lambda a: fnp.sum(a, axis=0))
    views = [b[::2, :32], b[:32, ::2], b[:32, :32], b[::2, ::2]]     # one shape, 4 layouts
    jf(views[0])
    exe = next(iter(jf.cache.values())).run
    for v in views:
        assert np.all(np.abs(jf(v) - v.astype(np.float64).sum(0)) <= _sum_bound(v, 0))
    assert len(exe._layouts) == 2 and runtime.strided_executable(exe, [views[-1]]) is None


def test_small_or_misfit_arguments_are_copied():
    b = _base(np.float32, (64, 64))
    assert runtime.strided_layout([b.T], [np.dtype(np.float32)]) is not None
    assert runtime.strided_layout([b], [np.dtype(np.float32)]) is None
    assert runtime.strided_layout([b.T], [np.dtype(np.float64)]) is None
    raw = np.zeros(64 * 64 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(64, 64)
    assert not raw.flags.aligned and runtime.strided_layout([raw.T], [raw.dtype]) is None


def test_the_profiler_times_the_strided_executables_kernel():
    b = _base(np.float32, (64, 64))
    jf = fc.jit(lambda a: fnp.sum(a, axis=0))
    jf(b.T)
    with profile() as prof:
        got = jf(b.T)
    assert np.all(np.abs(got - b.T.astype(np.float64).sum(0)) <= _sum_bound(b.T, 0))
    names = {e.name for e in prof.events()}      # the strided executable's twin ran it
    assert names & {"kernel[reduce_sum]", "native entry (1 steps)"}


@pytest.mark.parametrize("layout", ["transposed", "column step", "reversed rows"])
def test_a_split_strided_reduction_has_the_same_bits_on_one_and_two_threads(layout):
    x = LAYOUTS[layout](_base(np.float32, (1024, 1024), seed=4))      # split: >= 2^18 points
    fns = {"sum0": lambda a: fnp.sum(a, axis=0), "sum1": lambda a: fnp.sum(a, axis=1),
           "max0": lambda a: fnp.max(a, axis=0)}
    before = runtime.get_num_threads()
    try:
        got = {}
        for n in (1, 2):
            runtime.set_num_threads(n)
            got[n] = {name: np.asarray(fc.jit(f)(x)) for name, f in fns.items()}
    finally:
        runtime.set_num_threads(before)
    for name in fns:
        assert got[1][name].tobytes() == got[2][name].tobytes(), name
