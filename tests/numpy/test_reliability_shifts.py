"""``<<`` and ``>>`` (``left_shift``/``right_shift``) against NumPy for every count,
including negative ones and counts at or past the dtype's width, eager, under jit (both
backends) and vmap; values and dtypes."""

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32]


def grid(dt):
    """Every count from -3 to bits + 3 against extreme and ordinary values."""
    dt = np.dtype(dt)
    bits = dt.itemsize * 8
    info = np.iinfo(dt)
    values = np.array(sorted({info.min, info.min + 1, -7 if dt.kind == "i" else 0, -1 if
                              dt.kind == "i" else 1, 0, 1, 5, info.max - 1, info.max}), dt)
    counts = np.arange(-3 if dt.kind == "i" else 0, bits + 4).astype(dt)
    x, n = np.meshgrid(values, counts, indexing="ij")
    return x.ravel(), n.ravel()


OPS = [("<<", lambda a, b: a << b, np.left_shift), (">>", lambda a, b: a >> b, np.right_shift)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize(("name", "op", "ufunc"), OPS)
@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_every_count_matches_numpy(dt, name, op, ufunc, backend):
    x, n = grid(dt)
    want = op(x, n)
    for got in (fc.jit(op, backend=backend)(x, n), fc.jit(ufunc, backend=backend)(x, n),
                getattr(fnp, ufunc.__name__)(x, n)):
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("name", "op", "ufunc"), OPS)
def test_python_int_counts_and_mixed_dtypes_promote_as_numpy(name, op, ufunc):
    x = np.array([1, -8, 7, 2 ** 40], np.int64)
    for count in (0, 3, 63, 64, 65, 200, -1):
        got = fc.jit(lambda a, c=count: op(a, c))(x)
        want = op(x, count)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    small = np.array([3, -3], np.int8)
    wide = np.array([2, 9], np.int32)
    for a, b in ((small, wide), (wide, small), (np.array([200], np.uint8), 3),
                 (np.array([True, False]), np.array([1, 2], np.int8))):
        want = op(a, b)
        got = fc.jit(op)(a, b)
        assert got.dtype == want.dtype, (a.dtype, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)
    got = fc.jit(lambda a: op(3, a))(np.array([1, 70], np.int64))       # reflected
    np.testing.assert_array_equal(got, op(3, np.array([1, 70], np.int64)))


def test_inplace_shifts_and_vmap():
    def f(x):
        y = x.copy()
        y <<= 2
        y >>= np.int64(1)
        return y
    x = np.array([[1, -5, 1 << 62], [7, 0, -1]], np.int64)
    np.testing.assert_array_equal(fc.jit(f)(x), f(x))
    counts = np.array([0, 1, 63, 64, -1, 100], np.int64)
    got = fc.vmap(lambda a, c: a << c, in_axes=(None, 0))(x, counts)
    np.testing.assert_array_equal(got, np.stack([x << c for c in counts]))
    got = fc.vmap(lambda a, c: a >> c, in_axes=(0, None))(x, np.int64(65))
    np.testing.assert_array_equal(got, x >> np.int64(65))


def test_float_operands_are_refused_as_numpy_does():
    with pytest.raises(TypeError):
        np.left_shift(np.ones(2), 1)
    with pytest.raises(TypeError, match="left_shift"):
        fc.jit(lambda a: a << 1)(np.ones(2))
