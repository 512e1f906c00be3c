"""Arguments the type system cannot stand for are refused by name: an unsupported dtype
names the call, the argument, its shape and what to convert to; ``np.matrix`` (whose ``*``
is a matrix product) is refused rather than traced as a plain array."""

import re

import numpy as np
import pytest
from functorch_core.ir import dtypes

import functorch_core.numpy as fnp
from functorch_core import functionalize, grad, jit, vmap

# (dtype, the conversion the message must advise)
UNSUPPORTED = [
    (np.uint16, r"x\.astype\(np\.int32\)"),
    (np.uint64, r"x\.astype\(np\.int64\).*x\.astype\(np\.float64\)"),
    (np.longdouble, r"x\.astype\(np\.float64\)"),
    (np.clongdouble, r"x\.astype\(np\.complex128\)"),
    (object, r"np\.asarray\(x, dtype=np\.float64\)"),
    ("<U1", r"integer codes"),
    ("datetime64[s]", r"x\.astype\(np\.int64\)"),
    ("timedelta64[ms]", r"x\.astype\(np\.int64\)"),
]


def _unsupported(dt):
    if np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.complex128)):
        pytest.skip("longdouble is float64 on this platform")
    return np.array([1, 2], dtype=dt).reshape(1, 2)


def named_f(x):
    return x + 1


@pytest.mark.parametrize(("dt", "advice"), UNSUPPORTED)
def test_jit_names_the_call_the_argument_its_shape_and_the_conversion(dt, advice):
    x, name = _unsupported(dt), re.escape(str(np.dtype(dt)))
    with pytest.raises(TypeError, match=rf"argument x of jit\(named_f\) \(shape \(1, 2\)\) "
                                        rf"has dtype {name}, which is not supported; .*{advice}"):
        jit(named_f)(x)


@pytest.mark.parametrize("transform", [grad, vmap, functionalize])
def test_transforms_name_the_argument_by_its_pytree_path(transform):
    x = np.ones((2, 3), np.uint16)

    def loss(params):
        return params["w"][1].sum() * 1.0
    name = transform.__name__
    with pytest.raises(TypeError, match=rf"(params|argument 0)\['w'\]\[1\] of {name}\(.*loss\) "
                                        r"\(shape \(2, 3\)\) has dtype uint16.*np\.int32"):
        transform(loss)({"w": [np.ones(3), x]})


def test_nested_jit_argument_and_numpy_scalar_are_named():
    with pytest.raises(TypeError, match=r"argument x\['b'\]\[0\] of jit\(named_f\)"):
        jit(named_f)({"a": np.ones(2), "b": [np.ones(2, np.uint64)]})
    with pytest.raises(TypeError, match=r"argument x of jit\(named_f\) \(shape \(\)\) has dtype "
                                        r"uint16"):
        jit(named_f)(np.uint16(3))


def test_supported_dtypes_and_big_endian_still_pass():
    for dt in dtypes.SUPPORTED:
        y = jit(lambda x: x)(np.zeros(2, dt))
        assert y.dtype == dt
    assert jit(named_f)(np.ones(2, ">f4")).dtype == np.float32


def test_conversion_advice_is_a_supported_dtype_that_holds_every_value():
    for dt in (np.uint16, np.int8, np.uint8, np.uint32):
        hint = dtypes.convert_hint(dt)
        target = np.dtype(hint.split("np.")[1].rstrip(")"))
        assert target in dtypes.SUPPORTED and np.can_cast(dt, target), (dt, hint)


# --- np.matrix: its `*` means a matrix product, a plain array's does not ----------

@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_matrix_is_refused_by_name():
    a = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert not np.array_equal(np.asarray(a * a), np.asarray(a) * np.asarray(a))   # why
    with pytest.raises(TypeError, match=r"argument a of jit\(.*\) is a numpy\.matrix.*`\*`.*"
                                        r"np\.asarray\(x\).*`@`"):
        jit(lambda a, b: a * b)(a, a)
    with pytest.raises(TypeError, match=r"argument params\['m'\] of grad.*numpy\.matrix"):
        grad(lambda params: (params["m"] * params["m"]).sum())({"m": a})
    with pytest.raises(TypeError, match=r"vmap.*numpy\.matrix"):
        vmap(lambda x: x * x)(a)
    with pytest.raises(TypeError, match=r"functionalize.*numpy\.matrix"):
        functionalize(lambda x: x * x)(a)
    np.testing.assert_array_equal(jit(lambda a, b: a @ b)(np.asarray(a), np.asarray(a)),
                                  np.asarray(a * a))


def test_numpy_functions_name_themselves_and_the_operand():
    with pytest.raises(TypeError, match=r"sin: operand 0 \(shape \(2,\)\) has dtype uint16, "
                                        r"which is not supported; .*np\.int32"):
        fnp.sin(np.ones(2, np.uint16))
    closed = np.ones(2, np.uint64)
    with pytest.raises(TypeError, match=r"add: operand 1 \(shape \(2,\)\) has dtype uint64"):
        jit(lambda x: x + closed)(np.ones(2))
    np.testing.assert_array_equal(fnp.add(np.ones(2, ">f8"), 1.0), [2.0, 2.0])
