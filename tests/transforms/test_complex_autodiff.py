"""Complex differentiation: JAX's convention for real functions of complex inputs, and
``holomorphic=True`` on grad, vjp, jacrev, jacfwd and hessian."""

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp

Z = np.array([0.5 + 1.0j, -1.5 + 0.25j, 2.0 - 0.5j])


def _fd_complex_derivative(f, z, h=1e-6):
    """f'(z) of a holomorphic f by a central difference along the real axis."""
    return (f(z + h) - f(z - h)) / (2 * h)


@pytest.mark.parametrize("f", [lambda z: z ** 3, lambda z: fnp.exp(z) * fnp.sin(z),
                               lambda z: 1 / (z + 3), lambda z: fnp.log(z) * z])
def test_holomorphic_grad_and_jacobians_are_the_complex_derivative(f):
    want = _fd_complex_derivative(f, Z)
    g = np.array([fc.grad(f, holomorphic=True)(z) for z in Z])
    np.testing.assert_allclose(g, want, rtol=1e-7)
    for jac in (fc.jacrev, fc.jacfwd):
        np.testing.assert_allclose(np.diag(jac(f, holomorphic=True)(Z)), want, rtol=1e-7)
    np.testing.assert_allclose(fc.jit(fc.vmap(fc.grad(f, holomorphic=True)))(Z), want,
                               rtol=1e-7)
    _, pull = fc.vjp(f, Z, holomorphic=True)
    np.testing.assert_allclose(pull(np.ones_like(Z))[0], want, rtol=1e-7)


def test_holomorphic_hessian_is_the_second_derivative():
    h = fc.hessian(lambda z: fnp.sum(z ** 4), holomorphic=True)(Z)
    np.testing.assert_allclose(h, np.diag(12 * Z ** 2), rtol=1e-12)


def test_real_function_of_complex_input_follows_jax():
    # the conjugate of PyTorch's: d|z|^2 is 2 conj(z) here, 2 z in PyTorch
    g = fc.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(Z)
    np.testing.assert_allclose(g, 2 * np.conj(Z), rtol=1e-12)
    # d/dx - i d/dy: for Re(g(z)) with g holomorphic, that is g'(z)
    g = fc.grad(lambda z: fnp.sum(fnp.real(z * z)))(Z)
    np.testing.assert_allclose(g, 2 * Z, rtol=1e-12)


@pytest.mark.parametrize("call,match", [
    (lambda: fc.grad(lambda z: z * z)(Z[0]), "for a holomorphic function pass holomorphic=True"),
    (lambda: fc.grad(lambda z: z * z, holomorphic=True)(1.5),
     "with holomorphic=True the differentiated inputs must be complex, but argument 0 has a "
     "leaf of dtype float64"),
    (lambda: fc.grad(lambda z: fnp.abs(z), holomorphic=True)(Z[0]),
     "with holomorphic=True the function must return a complex scalar"),
    (lambda: fc.jacrev(lambda z: z * z)(Z), "the outputs must be real, but one has dtype "
                                            "complex128"),
    (lambda: fc.jacrev(lambda x: x * 1j)(np.ones(2)), "use vjp directly"),
    (lambda: fc.jacfwd(lambda z: fnp.abs(z))(Z), "the differentiated inputs must be real, but "
                                                 "argument 0 has a leaf of dtype complex128"),
    (lambda: fc.jacfwd(lambda z: fnp.abs(z), holomorphic=True)(Z),
     "with holomorphic=True the outputs must be complex"),
    (lambda: fc.vjp(lambda x: x * 1j, np.ones(2), holomorphic=True),
     "with holomorphic=True the differentiated inputs must be complex"),
    (lambda: fc.hessian(lambda z: fnp.sum(z * z))(Z), "holomorphic=True"),
])
def test_errors_point_to_holomorphic(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_real_jacobians_unchanged():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(fc.jacrev(np.sin)(x), np.diag(np.cos(x)))
    np.testing.assert_allclose(fc.jacfwd(np.sin)(x), np.diag(np.cos(x)))
    # real in, real out, complex in between: fine without holomorphic
    np.testing.assert_allclose(fc.jacrev(lambda x: fnp.abs(fnp.exp(1j * x) * x))(x),
                               np.eye(2), atol=1e-12)
