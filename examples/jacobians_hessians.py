"""Jacobians and Hessians: the PyTorch 1.11 release-notes Jacobian (vmap over a
vjp_fn), jacrev against jacfwd, a Hessian, and a Hessian-vector product.

Run: python examples/jacobians_hessians.py
"""

from functools import partial

import numpy as np

import functorch_core as fc


def predict(weight, bias, x):
    return np.tanh(x @ weight.T + bias)


def main():
    rng = np.random.default_rng(0)
    D = 16
    weight, bias, x = rng.normal(size=(D, D)), rng.normal(size=D), rng.normal(size=D)

    # Row i of the Jacobian is the vjp of the i-th unit vector; vmap does all rows at once.
    _, vjp_fn = fc.vjp(partial(predict, weight, bias), x)
    unit_vectors = np.eye(D)
    (jacobian,) = fc.vmap(vjp_fn)(unit_vectors)
    analytic = (1 - predict(weight, bias, x) ** 2)[:, None] * weight
    print(f"vmap(vjp_fn) Jacobian {jacobian.shape}, error vs analytic "
          f"{np.max(np.abs(jacobian - analytic)):.1e}")

    j_rev = fc.jacrev(predict, argnums=2)(weight, bias, x)
    j_fwd = fc.jacfwd(predict, argnums=2)(weight, bias, x)
    print(f"jacrev vs jacfwd: max difference {np.max(np.abs(j_rev - j_fwd)):.1e}")

    def f(z):
        return np.log(np.sum(np.exp(z))) + 0.5 * z @ z

    z = rng.normal(size=8)
    h = fc.hessian(f)(z)
    p = np.exp(z) / np.sum(np.exp(z))
    exact = np.diag(p) - np.outer(p, p) + np.eye(8)
    print(f"hessian {h.shape}: symmetric to {np.max(np.abs(h - h.T)):.1e}, "
          f"error vs analytic {np.max(np.abs(h - exact)):.1e}")

    v = rng.normal(size=8)
    _, hvp = fc.jvp(fc.grad(f), (z,), (v,))
    print(f"Hessian-vector product via jvp(grad(f)): error {np.max(np.abs(hvp - h @ v)):.1e}")


if __name__ == "__main__":
    main()
