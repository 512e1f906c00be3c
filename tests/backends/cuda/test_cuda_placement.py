"""Products, placement and transforms over device arrays, under numba-cuda's simulator.

Skipped when numba-cuda is not installed; the simulator is switched on at import as in
``test_cuda_sim.py``. Device arrays are ``backends.cuda.arrays.SimArray`` here (CuPy's on
a GPU): they refuse ``np.asarray`` as CuPy does, so a path that would quietly copy a
device array to the host fails these tests.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if os.environ["NUMBA_ENABLE_CUDASIM"] != "1":
    pytest.skip("numba.cuda was imported without the simulator", allow_module_level=True)

from functorch_core.backends import registry
from functorch_core.backends.cuda import products
from functorch_core.backends.cuda.arrays import SimArray
from functorch_core.backends.interpreter import IMPLS, run_graph
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp

CUDA = registry.get("cuda")

# (lhs shape, rhs shape, dimension_numbers, both operands taken as views)
LAYOUTS = {
    "nn": ((3, 4), (4, 5), (((1,), (0,)), ((), ())), True),
    "tn": ((4, 3), (4, 5), (((0,), (0,)), ((), ())), True),
    "nt": ((3, 4), (5, 4), (((1,), (1,)), ((), ())), True),
    "tt": ((4, 3), (5, 4), (((0,), (1,)), ((), ())), True),
    "batched": ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), True),
    "batched_tt": ((2, 4, 3), (2, 5, 4), (((1,), (2,)), ((0,), (0,))), True),
    "two_contracted": ((3, 2, 4), (2, 4, 5), (((1, 2), (0, 1)), ((), ())), True),
    "two_free": ((2, 3, 4), (4, 5, 2), (((2,), (0,)), ((), ())), True),
    "vector_dot": ((6,), (6,), (((0,), (0,)), ((), ())), True),
    "outer": ((3,), (4,), (((), ()), ((), ())), True),
    "interleaved": ((3, 4, 2), (4, 5), (((1,), (0,)), ((), ())), False),
    "batch_not_leading": ((3, 2, 4), (4, 2, 5), (((2,), (0,)), ((1,), (1,))), False),
}
DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int32,
          np.int64, np.uint8, np.bool_]


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 7, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_products_over_every_layout_and_dtype(name, dtype):
    ls, rs, dn, views = LAYOUTS[name]
    b = Builder()
    x, y = b.input(ls, dtype), b.input(rs, dtype)
    graph = b.graph(b(P.dot_general, x, y, dimension_numbers=dn))
    rng = np.random.default_rng(0)
    args = [_values(rng, ls, dtype), _values(rng, rs, dtype)]
    run = CUDA.compile(graph)
    (got,) = run(args)
    (want,) = run_graph(graph, args)
    assert run.host_only == [] and run.kernel_sources == []     # no loop-nest kernel
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.dtype(dtype).kind in "fc":
        tol = 2e-3 if dtype == np.float16 else 1e-5 if dtype in (np.float32, np.complex64) \
            else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)
    lay = products.layout(ls, rs, dn)
    assert (lay.lhs_perm is None and lay.rhs_perm is None) == views


@st.composite
def _products(draw):
    """Random dot_general operands: any dimension order on either side."""
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nlf, nrf = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    size = st.integers(1, 3)
    batch = [draw(size) for _ in range(nb)]
    contract = [draw(size) for _ in range(nc)]
    lfree, rfree = [draw(size) for _ in range(nlf)], [draw(size) for _ in range(nrf)]
    lperm = draw(st.permutations(range(nb + nc + nlf)))
    rperm = draw(st.permutations(range(nb + nc + nrf)))
    lroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
        [("f", i) for i in range(nlf)]
    rroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
        [("f", i) for i in range(nrf)]
    sizes = {"b": batch, "c": contract}
    lshape = [{**sizes, "f": lfree}[lroles[p][0]][lroles[p][1]] for p in lperm]
    rshape = [{**sizes, "f": rfree}[rroles[p][0]][rroles[p][1]] for p in rperm]

    def where(perm, roles, role):
        return tuple(perm.index(roles.index((role, i))) for i in range(len(sizes[role])))
    dn = ((where(lperm, lroles, "c"), where(rperm, rroles, "c")),
          (where(lperm, lroles, "b"), where(rperm, rroles, "b")))
    dtype = draw(st.sampled_from([np.float64, np.complex128, np.int64, np.float16, np.bool_]))
    return tuple(lshape), tuple(rshape), dn, dtype


@given(_products())
def test_random_products_match_the_interpreter(case):
    ls, rs, dn, dtype = case
    rng = np.random.default_rng(3)
    a, b = _values(rng, ls, dtype), _values(rng, rs, dtype)
    got = products.matmul(np, a, b, dn)
    want = IMPLS[P.dot_general](a, b, dimension_numbers=dn)
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    tol = 2e-2 if dtype == np.float16 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_gemm_layouts_are_views_not_copies():
    """A transposed operand reaches matmul as a swapped view of its buffer (cuBLAS's
    transpose flag on a GPU), never a copy."""
    for name in ("tn", "nt", "tt", "batched_tt", "two_contracted"):
        ls, rs, dn, _ = LAYOUTS[name]
        lay = products.layout(ls, rs, dn)
        a, c = np.ones(ls), np.ones(rs)
        va = products._operand(np, a, lay.batch_shape, lay.m, lay.k, lay.lhs_swap, lay.lhs_perm)
        vc = products._operand(np, c, lay.batch_shape, lay.k, lay.n, lay.rhs_swap, lay.rhs_perm)
        assert np.shares_memory(va, a) and np.shares_memory(vc, c), name
    assert products.layout(*LAYOUTS["tn"][:3]).lhs_swap
    assert products.layout(*LAYOUTS["nt"][:3]).rhs_swap


def test_float16_products_accumulate_in_float32():
    a = np.full((1, 4096), 1.0, np.float16)
    b = np.full((4096, 1), 1.0, np.float16)
    got = products.matmul(np, a, b, (((1,), (0,)), ((), ())))
    assert got.dtype == np.float16 and got[0, 0] == 4096    # float16 sums stall at 2048


def test_device_arrays_refuse_implicit_host_copies():
    d = fc.device_put(np.arange(3.0))
    assert isinstance(d, SimArray) and d.shape == (3,) and d.dtype == np.float64
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(d)
    np.testing.assert_array_equal(fc.device_get({"a": d})["a"], np.arange(3.0))


def test_results_stay_on_the_device_of_the_inputs():
    def f(a, w):
        return fnp.tanh(a @ w), fnp.sum(a)
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    want = fc.jit(f, backend="interpreter")(a, w)
    on = fc.jit(f, backend="cuda")(fc.device_put(a), fc.device_put(w))
    off = fc.jit(f, backend="cuda")(a, w)
    for d, h, v in zip(on, off, want, strict=True):
        assert isinstance(d, SimArray) and type(h) is np.ndarray
        np.testing.assert_allclose(fc.device_get(d), v, rtol=1e-12)
        np.testing.assert_allclose(h, v, rtol=1e-12)


def test_device_arrays_under_the_default_backend_run_on_cuda(monkeypatch):
    calls = []
    real = CUDA.compile
    monkeypatch.setattr(CUDA, "compile", lambda g: calls.append(g) or real(g))
    f = fc.jit(lambda x, s: fnp.exp(x) * s)
    x = np.linspace(0, 1, 5)
    host = f(x, 2.0)
    assert type(host) is np.ndarray and calls == []          # NumPy inputs: the cpu backend
    dev = f(fc.device_put(x), 2.0)
    assert isinstance(dev, SimArray) and len(calls) == 1
    np.testing.assert_allclose(fc.device_get(dev), host, rtol=1e-12)
    f(fc.device_put(x), 2.0)
    assert len(calls) == 1                                  # compiled once, cached


def test_two_devices_in_one_call_is_a_clear_error():
    def f(x, params):
        return x + params["b"]
    dev, host = fc.device_put(np.ones(3)), np.ones(3)
    for jitted in (fc.jit(f), fc.jit(f, backend="cuda")):
        with pytest.raises(ValueError, match=r"jit\(.*f.*argument x is on cuda \(shape \(3,\)\) "
                                             r"and argument params\['b'\] on the cpu"):
            jitted(dev, {"b": host})
    with pytest.raises(ValueError, match=r"backend='cpu'\): argument params\['b'\] is on "
                                         r"cuda \(shape \(3,\)\).*device_get"):
        fc.jit(f, backend="cpu")(host, {"b": dev})
    with pytest.raises(ValueError, match=r"grad\(.*\): argument x is on cuda.*params\['b'\] on "
                                         r"the cpu"):
        fc.grad(lambda x, params: fnp.sum(f(x, params)))(dev, {"b": host})


def _loss(w, x):
    return fnp.sum(fnp.square(fnp.tanh(fnp.matmul(x, w))))


@pytest.mark.parametrize("transform", ["eager", "grad", "vmap_grad", "jacrev", "jacfwd", "jvp",
                                       "vjp", "grad_of_jit"])
def test_eager_transforms_over_device_arrays(transform):
    rng = np.random.default_rng(2)
    w, x, v = rng.standard_normal((3, 2)), rng.standard_normal((4, 3)), rng.standard_normal(3)

    def elem(u):
        return fnp.exp(u) * u

    cases = {
        "eager": lambda w, x, v: _loss(w, x),
        "grad": lambda w, x, v: fc.grad(_loss)(w, x),
        "vmap_grad": lambda w, x, v: fc.vmap(fc.grad(_loss), in_dims=(None, 0))(
            w, fnp.reshape(x, (4, 1, 3))),
        "jacrev": lambda w, x, v: fc.jacrev(elem)(v),
        "jacfwd": lambda w, x, v: fc.jacfwd(elem)(v),
        "jvp": lambda w, x, v: fc.jvp(elem, (v,), (v,)),
        "vjp": lambda w, x, v: fc.vjp(elem, v)[1](v),
        "grad_of_jit": lambda w, x, v: fc.grad(fc.jit(_loss))(w, x),
    }
    want = cases[transform](w, x, v)
    got = cases[transform](*fc.device_put((w, x, v)))
    for g, h in zip(fc.tree_leaves(got), fc.tree_leaves(want), strict=True):
        assert isinstance(g, SimArray), type(g)
        np.testing.assert_allclose(fc.device_get(g), h, rtol=1e-10, atol=1e-12)


def test_an_eager_call_equation_compiles_its_whole_graph(monkeypatch):
    from functorch_core.backends.cuda import eager
    compiled = []
    real = CUDA.compile
    monkeypatch.setattr(CUDA, "compile", lambda g: compiled.append(g) or real(g))
    eager.clear()
    x = np.linspace(-1, 1, 6)
    graph = fc.make_graph(lambda v: fnp.exp(fnp.tanh(v)) * v)(x)
    (out,) = P.call.bind(fc.device_put(x), graph=graph, name="f")
    assert isinstance(out, SimArray) and compiled == [graph]
    np.testing.assert_allclose(fc.device_get(out), np.exp(np.tanh(x)) * x, rtol=1e-12)


def test_a_transform_sees_a_new_device_array_closed_over():
    scale = fc.device_put(np.array([1.0, 2.0]))

    def f(x):
        return fnp.sum(x * scale)
    g, x = fc.grad(f), fc.device_put(np.ones(2))
    np.testing.assert_array_equal(fc.device_get(g(x)), [1.0, 2.0])
    scale = fc.device_put(np.array([5.0, 7.0]))
    np.testing.assert_array_equal(fc.device_get(g(x)), [5.0, 7.0])
