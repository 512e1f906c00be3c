"""The empirical neural tangent kernel (the functorch tutorial) of a small module:
``NTK(x1, x2) = J(x1) J(x2)^T`` with ``J`` the Jacobian of the outputs with respect to the
parameters, computed two ways that must agree: contracting per-example Jacobians
(``vmap(jacrev(...))``), and ``vmap(jvp)`` of a ``vjp`` (one vector-Jacobian product per
output basis vector, pushed forward through the other example's Jacobian), which never
materialises ``J``.

Run: python examples/neural_tangent_kernel.py
"""

import time

import numpy as np
from _digits import load_digits

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import nn


def make_model():
    return nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 16), nn.Tanh(),
                         nn.Linear(16, 10))


def ntk_by_jacobian_contraction(fnet_single, params, x1, x2):
    """``(N, M, out, out)``: per-example Jacobians, flattened and contracted."""
    jac1 = fc.vmap(fc.jacrev(fnet_single), in_dims=(None, 0))(params, x1)
    jac2 = fc.vmap(fc.jacrev(fnet_single), in_dims=(None, 0))(params, x2)
    return sum(np.einsum("Naf,Mbf->NMab", jac1[k].reshape(*jac1[k].shape[:2], -1),
                         jac2[k].reshape(*jac2[k].shape[:2], -1)) for k in params)


def ntk_by_vector_products(fnet_single, params, x1, x2):
    """``(N, M, out, out)``: for each pair, ``J(x1) (J(x2)^T e_b)`` for every basis
    vector ``e_b`` via ``vmap(jvp)`` of ``vjp``."""
    def ntk_pair(x1, x2):
        out, vjp_fn = fc.vjp(lambda p: fnet_single(p, x2), params)

        def column(vec):               # J(x1) @ J(x2)^T vec
            (cotangent,) = vjp_fn(vec)
            return fc.jvp(lambda p: fnet_single(p, x1), (params,), (cotangent,))[1]
        return fnp.swapaxes(fc.vmap(column)(fnp.eye(out.shape[0], dtype=out.dtype)), 0, 1)
    return fc.vmap(fc.vmap(ntk_pair, in_dims=(None, 0)), in_dims=(0, None))(x1, x2)


def main():
    fc.manual_seed(0)
    model = make_model().double()
    params = {k: np.array(v) for k, v in model.named_parameters()}
    x_train, _, _, _ = load_digits(dtype=np.float64)
    x1, x2 = x_train[:6], x_train[6:11]

    def fnet_single(params, x):
        return fc.functional_call(model, params, (x[None],))[0]

    t0 = time.perf_counter()
    by_jac = ntk_by_jacobian_contraction(fnet_single, params, x1, x2)
    t1 = time.perf_counter()
    by_vp = ntk_by_vector_products(fnet_single, params, x1, x2)
    t2 = time.perf_counter()
    worst = float(np.max(np.abs(by_jac - by_vp)))
    print(f"ntk {by_jac.shape}: jacobian contraction {1e3 * (t1 - t0):.0f} ms, "
          f"vmap(jvp) of vjp {1e3 * (t2 - t1):.0f} ms")
    print(f"largest difference between the two: {worst:.2e} (kernel scale "
          f"{np.abs(by_jac).max():.2e})")
    k = ntk_by_jacobian_contraction(fnet_single, params, x1[:3], x1[:3])
    gram = k.transpose(0, 2, 1, 3).reshape(30, 30)     # NTK(X, X): symmetric, PSD
    print(f"NTK(X, X) (30, 30): asymmetry {np.abs(gram - gram.T).max():.1e}, smallest "
          f"eigenvalue {np.linalg.eigvalsh(gram).min():.2e}")

if __name__ == "__main__":
    main()
