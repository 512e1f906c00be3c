"""dot_general with a contraction of size 1 (an outer product, as per-sample weight gradients
are) runs as one broadcast multiply instead of ?gemm's k = 1 path: the same values."""

import numpy as np
import pytest
from functorch_core.backends.llvm.blas import DotGeneral

import functorch_core as fc

CASES = [  # lhs shape, rhs shape, ((lhs contract, rhs contract), (lhs batch, rhs batch))
    ((7, 1), (1, 5), (((1,), (0,)), ((), ()))),
    ((1, 7), (1, 5), (((0,), (0,)), ((), ()))),              # lhs stored transposed
    ((7, 1), (5, 1), (((1,), (1,)), ((), ()))),              # rhs stored transposed
    ((4, 1, 6), (4, 1, 3), (((1,), (1,)), ((0,), (0,)))),    # per-sample weight gradient
    ((6, 4, 1), (1, 3, 4), (((2,), (0,)), ((1,), (2,)))),    # batch axes not leading
    ((2, 3, 1, 4), (1, 2, 5), (((2,), (0,)), ((0,), (1,)))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ls, rs, dn", CASES)
def test_k1_dot_general_is_the_outer_product_without_gemm(ls, rs, dn, dtype):
    rng = np.random.default_rng(0)
    lhs, rhs = rng.standard_normal(ls).astype(dtype), rng.standard_normal(rs).astype(dtype)
    dg = DotGeneral(ls, rs, dtype, dn)

    def no_gemm(*args):
        raise AssertionError("a k = 1 product reached ?gemm")
    dg.fn = no_gemm
    (lc, rc), (lb, rb) = dn
    lfree = [i for i in range(len(ls)) if i not in lc + lb]
    rfree = [i for i in range(len(rs)) if i not in rc + rb]
    a = np.transpose(lhs, list(lb) + lfree + list(lc))
    b = np.transpose(rhs, list(rb) + list(rc) + rfree)
    nb = len(lb)
    want = a.reshape(a.shape[:nb] + (-1, 1)) * b.reshape(b.shape[:nb] + (1, -1))
    got = dg(lhs, rhs)
    assert got.dtype == dtype and got.shape == dg.out_shape
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    out = np.full(dg.out_shape, np.nan, dtype)
    assert dg(lhs, rhs, out) is out
    np.testing.assert_array_equal(out.reshape(want.shape), want)


def test_per_sample_linear_weight_gradients_under_jit():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 5)), rng.standard_normal((8, 5))
    g = fc.jit(fc.vmap(fc.grad(lambda w, x: (x @ w.T).sum()), in_dims=(None, 0)))(w, x)
    np.testing.assert_allclose(g, np.broadcast_to(x[:, None, :], (8, 3, 5)), rtol=1e-15)
