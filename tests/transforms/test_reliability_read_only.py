"""Writes NumPy refuses are refused under the transforms too: into the read-only view
``np.diagonal`` returns (and views of it), and into a read-only argument."""

import numpy as np
import pytest

import functorch_core as fc

READ_ONLY = r"assignment destination is read-only"


def write_diagonal(x):
    np.diagonal(x)[0] = 5.0
    return x


def write_diagonal_slice(x):
    d = np.diagonal(x)
    d[1:][0] = 5.0
    return x


def write_diagonal_reversed(x):
    d = x.diagonal()[::-1]
    d += 1.0
    return x


def write_linalg_diagonal(x):
    np.linalg.diagonal(x)[...] = 0.0
    return x


def write_diagonal_out(x):
    np.add(x[0], 1.0, out=np.diagonal(x))
    return x


WRITES = [write_diagonal, write_diagonal_slice, write_diagonal_reversed, write_linalg_diagonal,
          write_diagonal_out]
TRANSFORMS = {
    "jit": lambda f: fc.jit(f),
    "functionalize": lambda f: fc.functionalize(f),
    "grad": lambda f: fc.grad(lambda x: f(x).sum()),
    "vmap": lambda f: (lambda x: fc.vmap(f)(np.stack([x, x]))),
    "jit(jit)": lambda f: fc.jit(lambda x: fc.jit(f)(x) * 1.0),
}


@pytest.mark.parametrize("write", WRITES)
def test_numpy_refuses_the_write(write):
    with pytest.raises(ValueError, match="read-only"):
        write(np.ones((3, 3)))


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("write", WRITES)
def test_transforms_refuse_it_naming_the_line(write, name):
    x = np.ones((3, 3))
    with pytest.raises(ValueError, match=rf"{READ_ONLY}: setitem at .*test_reliability_read_"
                                         r"only.py:\d+ while tracing .*numpy\.diagonal"):
        TRANSFORMS[name](write)(x)
    np.testing.assert_array_equal(x, np.ones((3, 3)))     # nothing was written


def test_inner_jit_writing_into_a_read_only_view_it_was_passed():
    def inner(d):
        d[0] = 7.0
        return d * 1.0

    def outer(x):
        return fc.jit(inner)(np.diagonal(x))
    with pytest.raises(ValueError):
        outer(np.ones((3, 3)))                # NumPy
    with pytest.raises(ValueError, match=READ_ONLY):
        fc.jit(outer)(np.ones((3, 3)))


def copy_then_write(x):
    d = np.diagonal(x).copy()
    d[0] = 5.0
    x[1, 1] = 2.0           # the array itself stays writable, seen through the view
    return d + np.diagonal(x)


@pytest.mark.parametrize("name", ["jit", "functionalize", "vmap"])
def test_copies_and_the_base_array_stay_writable(name):
    x = np.arange(9.0).reshape(3, 3)
    want = copy_then_write(x.copy())
    got = TRANSFORMS[name](copy_then_write)(x.copy())
    np.testing.assert_array_equal(got, np.stack([want, want]) if name == "vmap" else want)
    np.testing.assert_array_equal(
        fc.grad(lambda x: copy_then_write(x).sum())(x.copy()),
        np.diag([1.0, 1.0, 2.0]))    # d took x[1, 1] before it was overwritten


def test_reshape_numpy_must_copy_is_writable_as_in_numpy():
    def f(x):
        r = np.diagonal(x, axis1=1, axis2=2).reshape(6)     # strides (72, 32): a copy
        r[0] = 9.0
        return r.sum() + x.sum()
    x = np.ones((2, 3, 3))
    assert fc.jit(f)(x.copy()) == f(x.copy())


def write_input(x):
    x[0] = 5.0
    return x * 2.0


@pytest.mark.parametrize("name", ["jit", "functionalize", "grad", "vmap"])
def test_read_only_argument_is_refused_and_left_alone(name):
    x = np.ones((3, 3))
    x.flags.writeable = False
    with pytest.raises(ValueError, match=READ_ONLY):
        write_input(x)
    if name == "vmap":
        f = fc.vmap(write_input)
    else:
        f = TRANSFORMS[name](write_input)
    with pytest.raises(ValueError, match=rf"{READ_ONLY} \(.*writes into argument"):
        f(x)
    np.testing.assert_array_equal(x, np.ones((3, 3)))
