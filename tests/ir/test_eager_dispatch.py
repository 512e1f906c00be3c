"""Eager dispatch goes through ir/eager.py's registry: no backend mutates a primitive."""

import numpy as np
import pytest
from functorch_core.backends import interpreter
from functorch_core.backends.cuda import eager as cuda_eager
from functorch_core.ir import AbstractArray, Primitive, eager
from functorch_core.ir import primitives as P

import functorch_core  # noqa: F401  (registers the device evaluation)


def test_the_catalogue_primitives_carry_no_implementation_of_a_backend():
    assert [p.name for p in P.ALL.values() if p.impl is not None] == []


def test_the_interpreter_registers_every_implementation_it_has():
    assert set(eager.HOST) == set(interpreter.IMPLS)
    assert all(eager.host_impl(p) is interpreter.IMPLS[p] for p in interpreter.IMPLS)
    np.testing.assert_array_equal(P.add.bind(np.ones(2), np.ones(2)), [2.0, 2.0])


def test_a_primitive_made_outside_the_catalogue_runs_its_own_impl():
    fake = Primitive("fake_triple", lambda x: [AbstractArray(x.shape, x.dtype)],
                     impl=lambda x: 3 * x)
    assert eager.host_impl(fake) is fake.impl
    np.testing.assert_array_equal(fake.bind(np.ones(2)), [3.0, 3.0])
    bare = Primitive("fake_bare", lambda x: [x])
    with pytest.raises(NotImplementedError, match="fake_bare has no eager implementation"):
        bare.bind(np.ones(2))


def test_the_device_evaluation_is_registered_once():
    assert eager.DEVICE is cuda_eager.evaluate
    eager.register_device(cuda_eager.evaluate)      # the same one again: a re-import
    with pytest.raises(ValueError, match="registered already"):
        eager.register_device(lambda *args: None)
