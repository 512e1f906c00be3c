"""The cuda backend under numba-cuda's simulator, against the interpreter.

Skipped when numba-cuda is not installed. The simulator is switched on for the whole
process when this module is imported (numba reads ``NUMBA_ENABLE_CUDASIM`` at import).
Simulator limits: kernels run as Python threads over NumPy arrays, so only small shapes,
and math functions are NumPy's (libdevice's differ by an ulp or two on a GPU).
The last test compiles every kernel the other tests generated to PTX for sm_80/sm_90
and assembles it with ptxas, in a subprocess without the simulator.
"""

from __future__ import annotations

import importlib.util
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if os.environ["NUMBA_ENABLE_CUDASIM"] != "1":
    pytest.skip("numba.cuda was imported without the simulator", allow_module_level=True)

from backend_checks import assert_inputs_kept_and_outputs_fresh, assert_like_the_interpreter
from functorch_core.backends import registry
from functorch_core.backends.cuda import emit, runtime
from functorch_core.backends.cuda.ptx import compile_elsewhere, ptxas_path
from functorch_core.ir import dtypes
from functorch_core.ir import primitives as P
from graph_builder import Builder
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llvm_backend import random_graph_and_args, values

import functorch_core as fc
import functorch_core.numpy as fnp

CUDA = registry.get("cuda")
FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}
GENERATED = []      # every kernel source the tests below ran, for the PTX test


def check(graph, args):
    run = CUDA.compile(graph)
    GENERATED.extend(run.kernel_sources)
    assert_like_the_interpreter(run, graph, args,
                                lambda dt: RTOL.get(dt, 1e-3) if dt.kind == "f" else None)
    return run


def test_backends_available_and_the_missing_device_error(monkeypatch):
    assert fc.backends_available() == ["cpu", "interpreter", "cuda"]
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed: the error would name the driver instead")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    assert fc.backends_available() == ["cpu", "interpreter"]
    with pytest.raises(RuntimeError, match=r"CuPy is not installed.*functorch_core\[cuda\]"):
        fc.jit(lambda x: x, backend="cuda")


def test_the_error_names_numba_cuda_when_it_is_missing(monkeypatch):
    from functorch_core.backends.cuda import availability
    real = importlib.util.find_spec
    monkeypatch.setattr(availability.importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("numba") else real(name, *a))
    assert fc.backends_available() == ["cpu", "interpreter"]
    with pytest.raises(RuntimeError, match=r"numba-cuda is not installed.*pip install"):
        fc.jit(lambda x: x, backend="cuda")
    with pytest.raises(RuntimeError, match=r"device_put\(x, device='cuda'\)"):
        fc.device_put(np.ones(2))


@pytest.mark.parametrize("prim", sorted(emit.UNARY, key=lambda p: p.name), ids=lambda p: p.name)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_ops(prim, dtype):
    b = Builder()
    x = b.input((3, 5), dtype)
    graph = b.graph(b(prim, x))
    run = check(graph, [values(np.random.default_rng(0), (3, 5), dtype)])
    assert run.host_only == [] and len(run.kernel_sources) == 1


@pytest.mark.parametrize("prim", sorted(emit.BINARY, key=lambda p: p.name), ids=lambda p: p.name)
@pytest.mark.parametrize("dtype", [*FLOATS, np.dtype(np.int32)], ids=str)
def test_binary_ops_broadcast_by_index_arithmetic(prim, dtype):
    if prim in emit.FLOAT_ONLY and dtype.kind != "f":
        pytest.skip("float only")
    b = Builder()
    x, y = b.input((4, 3), dtype), b.input((3,), dtype)
    yb = b(P.broadcast_in_dim, y, shape=(4, 3), broadcast_dimensions=(1,))
    xt = b(P.rev, b(P.transpose, x, permutation=(1, 0)), dimensions=(0,))
    out = b(prim, x, yb)
    graph = b.graph(out, b(P.add, xt, xt) if dtype.kind != "b" else xt)
    rng = np.random.default_rng(1)
    run = check(graph, [values(rng, (4, 3), dtype, special=False),
                        values(rng, (3,), dtype, special=False)])
    assert run.host_only == []


@pytest.mark.parametrize("prim", [P.reduce_sum, P.reduce_prod, P.reduce_max, P.reduce_min],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int64)], ids=str)
def test_reductions_fused_with_elementwise(prim, axes, dtype):
    b = Builder()
    x = b.input((3, 4, 5), dtype)
    y = b(P.mul, x, x) if dtype.kind == "i" else b(P.tanh, x)
    graph = b.graph(b(prim, y, axes=axes), y)
    run = check(graph, [values(np.random.default_rng(2), (3, 4, 5), dtype, special=False)])
    assert run.host_only == [] and len(run.kernel_sources) == 1


def test_a_large_reduction_takes_a_deterministic_second_pass(monkeypatch):
    monkeypatch.setattr(emit, "PART_POINTS", 64)
    b = Builder()
    x = b.input((1000,), np.float32)
    graph = b.graph(b(P.reduce_sum, b(P.exp, x), axes=(0,)),
                    b(P.reduce_max, x, axes=(0,)))
    args = [np.random.default_rng(3).standard_normal(1000).astype(np.float32)]
    run = check(graph, args)
    assert len(run.kernel_sources) == 3 and run.kernel_sources[0].scratch
    again = CUDA.compile(graph)(args)
    np.testing.assert_array_equal(run(args)[0], again[0])   # same bits every time


def test_iota_select_convert_and_empty_arrays():
    b = Builder()
    x = b.input((2, 3), np.float32)
    e = b.input((0, 3), np.float32)
    i = b(P.iota, dtype=np.dtype(np.int32), shape=(2, 3), dimension=1)
    f = b(P.convert, i, new_dtype=np.dtype(np.float32))
    s = b(P.select, b(P.gt, x, f), x, f)
    graph = b.graph(s, b(P.convert, s, new_dtype=np.dtype(np.float64)),
                    b(P.reduce_sum, e, axes=(0,)), b(P.exp, e))
    run = check(graph, [np.arange(6, dtype=np.float32).reshape(2, 3) - 2,
                        np.zeros((0, 3), np.float32)])
    assert run.host_only == []


def test_products_and_host_steps_through_jit():
    def f(a, w):
        h = fnp.tanh(a @ w)
        return fnp.cumsum(h, axis=1), fnp.sum(h * h)
    rng = np.random.default_rng(4)
    a, w = rng.standard_normal((4, 6)), rng.standard_normal((6, 5))
    got = fc.jit(f, backend="cuda")(a, w)
    want = fc.jit(f, backend="interpreter")(a, w)
    for g, v in zip(got, want, strict=True):
        np.testing.assert_allclose(g, v, rtol=1e-12)
    graph = fc.make_graph(f)(a, w)
    _, host = runtime.split_for_device(graph)
    assert host == []          # cumsum: a structural kernel (backends/cuda/indexing.py)


def test_a_host_step_result_never_aliases_an_input():
    b = Builder()
    x, i = b.input((3,), np.float32), b.input((), np.int8)
    graph = b.graph(b(P.dynamic_slice, x, i, slice_sizes=(2,)))
    a = np.arange(3, dtype=np.float32)
    (out,) = check(graph, [a, np.int8(1)])([a, np.int8(1)])
    assert not np.shares_memory(out, a)


def test_transforms_of_jitted_functions():
    def loss(w, x):
        return fnp.sum(fnp.tanh(x @ w) ** 2)
    rng = np.random.default_rng(5)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    g = fc.jit(fc.grad(loss), backend="cuda")(w, x)
    np.testing.assert_allclose(g, fc.grad(loss)(w, x), rtol=1e-10)
    per = fc.jit(fc.vmap(fc.grad(loss), in_dims=(None, 0)), backend="cuda")(w, x[:, None])
    np.testing.assert_allclose(per, fc.vmap(fc.grad(loss), in_dims=(None, 0))(w, x[:, None]),
                               rtol=1e-10)
    jac = fc.jit(fc.jacrev(lambda v: fnp.exp(v) * v), backend="cuda")(x[0])
    np.testing.assert_allclose(jac, np.diag(np.exp(x[0]) * (1 + x[0])), rtol=1e-12)


def test_device_put_and_get():
    tree = {"w": np.arange(3.0), "b": [np.ones(2, np.float32)]}
    on = fc.device_put(tree, device="cuda")
    assert on["w"] is not tree["w"]
    out = fc.jit(lambda t: t["w"] * 2, backend="cuda")(on)
    np.testing.assert_array_equal(fc.device_get(out), np.arange(3.0) * 2)
    back = fc.device_put(on, device="cpu")
    assert isinstance(back["b"][0], np.ndarray) and back["b"][0].dtype == np.float32
    with pytest.raises(ValueError, match="device must be"):
        fc.device_put(tree, device="tpu")


def test_out_of_bounds_indices_raise_like_numpy():
    x = np.arange(6.0)
    f = fc.jit(lambda x, i: x[i] * 2.0, backend="cuda")
    np.testing.assert_array_equal(fc.device_get(f(x, np.array([1, -1]))), [2.0, 10.0])
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 6"):
        f(x, np.array([1, 7]))


@settings(deadline=None)
@given(st.data())
def test_random_graphs_match_the_interpreter(data):
    graph, args, before = random_graph_and_args(data)
    assert_inputs_kept_and_outputs_fresh(args, before, check(graph, args)(args))


def test_every_generated_kernel_compiles_to_ptx():
    """compile_ptx + ptxas for sm_80 and sm_90 (needs the NVVM wheels, not a GPU)."""
    try:
        import nvidia.cuda_nvcc
        import nvidia.cuda_nvrtc  # noqa: F401
    except ImportError:
        pytest.skip("nvidia-cuda-nvcc-cu12 / nvidia-cuda-nvrtc-cu12 are not installed")
    if not GENERATED:
        test_reductions_fused_with_elementwise(P.reduce_sum, (1,), np.dtype(np.float32))
    unique = {s.text: s for s in GENERATED}
    records = compile_elsewhere(list(unique.values()), timeout=600)
    assert len(records) == 2 * len(unique)
    if ptxas_path() is not None:
        assert all(r["registers"] is not None and r["spill_stores"] == 0 for r in records)


def test_bfloat16_equations_stay_on_the_host_even_structural_ones():
    # no device kernel takes bfloat16 (CuPy has no such arrays): gathers, slices and
    # concatenations of it run on the host with the rest, next to float32 kernels
    bf16 = dtypes.bfloat16
    x = np.linspace(-2, 2, 24).astype(bf16).reshape(4, 6)
    y = np.arange(12, dtype=np.float32)

    def f(x, y):
        z = fnp.concatenate([x[::2], x[1:3, ::-1]], axis=0)[:, [0, 2, 5]]
        return z * 2, fnp.tanh(y) + 1
    graph = fc.make_graph(f)(x, y)
    run = check(graph, [x, y])
    assert not any(bf16 in map(np.dtype, s.arg_dtypes) for s in run.kernel_sources)
    assert run.kernel_sources        # the float32 part still runs as a kernel
