"""The errors a traced function commonly trips on name the call, the value and the fix."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.ir import TracerError

import functorch_core as fc
import functorch_core.numpy as fnp

# --- a list of Python scalars where an array was meant -------------------------------------


def _sum_sq(x):
    return (x ** 2).sum()


def test_list_of_floats_differentiated_names_argument_container_and_length():
    with pytest.raises(TypeError, match=r"grad\(_sum_sq\): argument 0 \(x\) is a list of 2 "
                       r"Python floats; a list is a pytree.*unsupported operand.*Pass an "
                       r"array \(np.asarray"):
        fc.grad(_sum_sq)([1.0, 2.0])
    with pytest.raises(AttributeError, match=r"argument 0 \(x\) is a tuple of 3 Python "
                       r"scalars.*'tuple' object has no attribute 'sum'"):
        fc.jit(lambda x: x.sum())((1.0, 2, 3.0))
    with pytest.raises(TypeError, match=r"jit\(_sum_sq\): argument 0 \(x\) is a list of 2 "
                       r"Python floats"):
        fc.jit(_sum_sq)([1.0, 2.0])
    with pytest.raises(TypeError, match=r"jit\(_sum_sq\): argument 0 \(x\) is a list"):
        fc.jit(fc.grad(_sum_sq))([1.0, 2.0])        # one explanation, not two


def test_lists_of_scalars_and_of_arrays_stay_legal_pytrees():
    g = fc.grad(lambda x: x[0] * x[1])([1.0, 2.0])
    assert type(g) is list and [float(v) for v in g] == [2.0, 1.0]
    g = fc.grad(lambda x: (x[0] * x[1]).sum())([np.ones(2), np.full(2, 3.0)])
    np.testing.assert_array_equal(g[0], [3.0, 3.0])
    np.testing.assert_allclose(fc.grad(_sum_sq)(np.asarray([1.0, 2.0])), [2.0, 4.0])


# --- a traced shape --------------------------------------------------------------------------

@pytest.mark.parametrize("call, f", [
    ("zeros", lambda n: fnp.zeros(n)),
    ("ones", lambda n: fnp.ones((n, 2))),
    ("empty", lambda n: fnp.empty(n)),
    ("full", lambda n: fnp.full(n, 1.0)),
])
def test_fnp_creation_with_a_traced_shape_points_to_static_argnums(call, f):
    with pytest.raises(TracerError, match=rf"^{call}\(shape\): the shape .* holds a traced "
                       r"value.*static_argnums"):
        fc.jit(f)(3)
    assert fc.jit(f, static_argnums=0)(3).shape[0] in (3,)


@pytest.mark.parametrize("f", [
    lambda n: np.zeros(n), lambda n: np.ones(n), lambda n: np.empty(n),
    lambda n: np.full(n, 2.0)])
def test_numpy_creation_with_a_traced_shape_names_the_line(f):
    with pytest.raises(TracerError, match=r"jit\(<lambda>\): a NumPy function at "
                       r".*test_trace_errors.py:\d+ \(`lambda n: np\.\w+\(n.*`\) was given a "
                       r"traced value as a shape.*static_argnums"):
        fc.jit(f)(3)


def test_reshape_and_arange_with_a_traced_size():
    for f in (lambda x, n: x.reshape(n, -1), lambda x, n: fnp.reshape(x, (n, -1)),
              lambda x, n: np.reshape(x, (n, -1))):
        with pytest.raises(TracerError, match=r"reshape\(shape\): the shape \(Traced<i64~\[\]>,"
                           r" -1\) holds a traced value \(entry 0\).*static_argnums"):
            fc.jit(f)(np.ones(6), 2)
    with pytest.raises(TracerError, match=r"arange: arguments that decide the length.*"
                       r"`.*fnp.arange\(n\).*`.*static_argnums"):
        fc.jit(lambda n: fnp.arange(n))(3)
    with pytest.raises(TracerError, match=r"\(`.*np.arange\(n\).*`\).*a length or a shape.*"
                       r"static_argnums"):
        fc.jit(lambda n: np.arange(n))(3)
    with pytest.raises(TracerError, match=r"__index__: a shape, a length, a range\(\) bound.*"
                       r"`.*np.zeros\(\(n, 2\)\).*`.*static_argnums"):
        fc.jit(lambda n: np.zeros((n, 2)))(3)


# --- .item(), float(), int() on a traced value -----------------------------------------------

@pytest.mark.parametrize("call, f", [
    (r"x\.item\(\)", lambda x: x.sum().item()),
    (r"float\(x\)", lambda x: float(x.sum())),
    (r"int\(x\)", lambda x: int(x.sum())),
    (r"x\.tolist\(\)", lambda x: x.tolist()),
])
def test_scalar_conversions_name_themselves_and_the_ways_out(call, f):
    for t in (fc.jit, fc.grad):
        with pytest.raises(TracerError, match=rf"^{call} needs the value of a traced array "
                           r".*The value is traced.*return it from the function.*fnp\.where"
                           r".*functorch_core\.lax\.cond"):
            t(f)(np.ones(3))


# --- writes into a concrete NumPy array from a trace ------------------------------------------

BUFFER = np.zeros(3)


def _write_global(x):
    BUFFER[0] = x.sum()
    return x


def _add_into_global(x):
    np.add(BUFFER, x, out=BUFFER)
    return x


def test_write_into_a_global_array_names_it():
    for t, head in ((fc.jit, r"jit\(_write_global\)"), (fc.vmap, "_write_global")):
        with pytest.raises(ValueError, match=rf"{head}: `BUFFER\[0\] = x\.sum\(\)` at "
                           r".*test_trace_errors.py:\d+ writes a traced value into BUFFER "
                           r"\(float64\[3\]\), a concrete NumPy array the function reads as "
                           r"a global of the module.*Pass BUFFER as an argument"):
            t(_write_global)(np.ones((2, 3)) if t is fc.vmap else np.ones(3))
    with pytest.raises(TypeError, match=r"`np\.add\(BUFFER, x, out=BUFFER\)`.*into BUFFER "
                       r"\(float64\[3\]\).*a global"):
        fc.grad(lambda x: _add_into_global(x).sum())(np.ones(3))
    np.testing.assert_array_equal(BUFFER, np.zeros(3))


def test_write_into_a_closed_over_or_numpy_made_array_names_it():
    acc = np.zeros((2, 2), np.float32)

    def closes_over(x):
        acc[:] += x
        return x.sum()
    with pytest.raises(TypeError, match=r"into acc \(float32\[2, 2\]\), a concrete NumPy "
                       r"array the function reads as a variable it closes over.*Pass acc as "
                       r"an argument"):
        fc.grad(closes_over)(np.ones((2, 2), np.float32))

    def numpy_local(x):
        out = np.zeros(3)
        out[1:] = x[1:]
        return out
    with pytest.raises(TracerError, match=r"into out \(float64\[3\]\), an array the function "
                       r"made with NumPy.*fnp\.zeros"):
        fc.jit(numpy_local)(np.ones(3))


def _set_first(a, v):
    a[0] = v
    return a.sum()


_INNER = fc.jit(_set_first)


def _passes_global_to_inner(x):
    return _INNER(BUFFER, x.sum())


@pytest.mark.parametrize("transform", [fc.jit, fc.grad, fc.functionalize])
def test_write_into_a_global_through_an_inner_jit_names_the_array(transform):
    with pytest.raises(NotImplementedError, match=r"setitem at .*test_trace_errors.py:\d+ "
                       r"\(`return _INNER\(BUFFER, x.sum\(\)\)`\) writes into a constant of the "
                       r"graph: a concrete NumPy array \(float64\[3\]\) the function reads as a "
                       r"global.*Pass the array as an argument"):
        transform(_passes_global_to_inner)(np.ones(3))
    np.testing.assert_array_equal(BUFFER, np.zeros(3))


def test_rebinding_a_name_is_not_taken_for_a_write():
    def f(x):
        buf = np.zeros(3)
        buf = np.asarray(x)
        return buf
    with pytest.raises(TracerError, match=r"^np\.asarray\(\)/np\.array\(\) \(conversion to a "
                       r"concrete NumPy array\) needs the value"):
        fc.jit(f)(np.ones(3))
