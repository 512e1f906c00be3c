"""The collective primitives: named vmap axes against explicit loops, JAX's semantics and
finite differences in this process; the process axis on real ranks under mpiexec."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from budget import share
from functorch_core.backends.llvm.aot import NotNativeError, compile_library
from functorch_core.ir import passes
from functorch_core.ir import primitives as P
from hypothesis import given, settings
from hypothesis import strategies as st
from mpirun import needs_mpi, run_ranks

import functorch_core as fc
from functorch_core import lax
from functorch_core.testing import check_grads

RNG = np.random.default_rng(0)


def _loop(fn, xs):
    """Every example's value of a collective, computed with NumPy over the whole batch."""
    return np.stack([fn(xs, k) for k in range(len(xs))])


# --- collectives over a vmapped axis, against a loop over the examples --------------------

@pytest.mark.parametrize("name, collective, reference", [
    ("psum", lambda x: lax.psum(x, "i"), lambda xs, k: xs.sum(0)),
    ("pmean", lambda x: lax.pmean(x, "i"), lambda xs, k: xs.mean(0)),
    ("pmax", lambda x: lax.pmax(x, "i"), lambda xs, k: xs.max(0)),
    ("pmin", lambda x: lax.pmin(x, "i"), lambda xs, k: xs.min(0)),
    ("all_gather", lambda x: lax.all_gather(x, "i"), lambda xs, k: xs),
    ("all_gather axis 1", lambda x: lax.all_gather(x, "i", axis=1),
     lambda xs, k: np.moveaxis(xs, 0, 1)),
    ("all_gather tiled", lambda x: lax.all_gather(x, "i", tiled=True),
     lambda xs, k: np.concatenate(list(xs))),
    ("axis_index", lambda x: x * lax.axis_index("i"), lambda xs, k: xs[k] * k),
    ("psum(1)", lambda x: x * lax.psum(1, "i"), lambda xs, k: xs[k] * len(xs)),
])
def test_a_collective_over_the_vmapped_axis_matches_a_loop(name, collective, reference):
    xs = RNG.normal(size=(4, 3))
    got = fc.vmap(collective, axis_name="i")(xs)
    np.testing.assert_allclose(got, _loop(reference, xs), rtol=1e-12)
    np.testing.assert_allclose(fc.jit(fc.vmap(collective, axis_name="i"))(xs), got,
                               rtol=1e-12)


_LAWS = {"psum": (lax.psum, lambda xs: xs.sum(0)), "pmax": (lax.pmax, lambda xs: xs.max(0)),
         "pmin": (lax.pmin, lambda xs: xs.min(0)), "all_gather": (lax.all_gather, lambda xs: xs)}


@settings(max_examples=share(5))
@given(name=st.sampled_from(sorted(_LAWS)), size=st.integers(1, 4),
       shape=st.lists(st.integers(1, 3), max_size=2), data=st.data())
def test_collectives_match_a_loop_for_any_batch_axis(name, size, shape, data):
    collective, reference = _LAWS[name]
    axis = data.draw(st.integers(0, len(shape)), label="in_axes")
    out_axis = data.draw(st.integers(0, len(shape) + (name == "all_gather")), label="out_axes")
    xs = np.random.default_rng(size).normal(size=(size, *shape))
    got = fc.vmap(lambda x: collective(x, "i"), in_axes=axis, out_axes=out_axis,
                  axis_name="i")(np.moveaxis(xs, 0, axis))
    expect = np.stack([reference(xs)] * size)
    np.testing.assert_allclose(np.moveaxis(got, out_axis, 0), expect, rtol=1e-12)


def test_psum_scatter_gives_each_example_its_row_of_the_sum():
    xs = RNG.normal(size=(3, 3, 2))      # 3 examples, each with one row per example
    got = fc.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(xs)
    np.testing.assert_allclose(got, _loop(lambda xs, k: xs.sum(0)[k], xs), rtol=1e-12)
    tiled = fc.vmap(lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
                    axis_name="i")(RNG.normal(size=(3, 2, 6)))
    assert tiled.shape == (3, 2, 2)


def test_batch_axis_elsewhere_and_unbatched_operands():
    xs, y = RNG.normal(size=(3, 4)), RNG.normal(size=3)
    got = fc.vmap(lambda x, y: lax.psum(x, "i") + lax.psum(y, "i"), in_axes=(1, None),
                  axis_name="i")(xs, y)
    # y is the same for each of the 4 examples: its psum is 4 y
    np.testing.assert_allclose(got, np.tile(xs.sum(1) + 4 * y, (4, 1)), rtol=1e-12)
    gathered = fc.vmap(lambda x, y: lax.all_gather(y, "i"), in_axes=(1, None),
                       axis_name="i")(xs, y)
    np.testing.assert_array_equal(gathered, np.broadcast_to(y, (4, 4, 3)))
    scattered = fc.vmap(lambda x, z: lax.psum_scatter(z, "i"), in_axes=(1, None),
                        axis_name="i")(xs, np.arange(8.0).reshape(4, 2))
    np.testing.assert_array_equal(scattered, 4 * np.arange(8.0).reshape(4, 2))


def test_nested_names_and_tuples_of_names():
    xs = RNG.normal(size=(2, 3, 5))

    def f(x):
        return (lax.psum(x, "i"), lax.psum(x, "j"), lax.psum(x, ("i", "j")),
                lax.all_gather(x, ("i", "j")), lax.axis_index(("i", "j")),
                lax.axis_index("j"), lax.pmax(x, ("j", "i")))

    si, sj, sij, g, idx, j, m = fc.vmap(fc.vmap(f, axis_name="j"), axis_name="i")(xs)
    np.testing.assert_allclose(si, np.broadcast_to(xs.sum(0), xs.shape), rtol=1e-12)
    np.testing.assert_allclose(sj, np.broadcast_to(xs.sum(1, keepdims=True), xs.shape),
                               rtol=1e-12)
    np.testing.assert_allclose(sij, np.broadcast_to(xs.sum((0, 1)), xs.shape), rtol=1e-12)
    np.testing.assert_array_equal(g[1, 2], xs.reshape(6, 5))     # the first name slowest
    np.testing.assert_array_equal(idx, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(j, np.tile(np.arange(3), (2, 1)))
    np.testing.assert_array_equal(m, np.broadcast_to(xs.max((0, 1)), xs.shape))


def test_collectives_over_an_outer_axis_batched_by_an_inner_vmap():
    # the inner vmaps batch collectives over the outer name "i": the batching rules that
    # carry a batched operand through a collective over another axis
    xs = RNG.normal(size=(3, 2, 3))      # i: 3, then j (or unnamed): 2, rows of 3 (one per i)

    def f(x):
        return lax.all_gather(x, "i"), lax.psum_scatter(x, "i"), lax.pmin(x, "i")

    for inner in (lambda g: fc.vmap(g, axis_name="j"), fc.vmap):
        g, sc, mn = fc.vmap(inner(f), axis_name="i")(xs)
        for i in range(3):
            for j in range(2):
                np.testing.assert_array_equal(g[i, j], xs[:, j])
                np.testing.assert_allclose(sc[i, j], xs[:, j].sum(0)[i], rtol=1e-12)
                np.testing.assert_array_equal(mn[i, j], xs[:, j].min(0))
    # batch axes in the middle and last: a[r, i, j] = xs[i, j, r]
    g = fc.vmap(fc.vmap(lambda x: lax.all_gather(x, "i"), in_axes=1, out_axes=1),
                in_axes=1, axis_name="i")(xs.transpose(2, 0, 1))
    np.testing.assert_array_equal(g, np.broadcast_to(xs, (3, 3, 2, 3)))


def test_one_body_with_the_axis_name_as_a_parameter():
    def normalize(x, axis_name):
        return x / lax.psum(x, axis_name)

    xs = np.array([1.0, 3.0])
    np.testing.assert_allclose(fc.vmap(lambda x: normalize(x, "batch"),
                                       axis_name="batch")(xs), [0.25, 0.75])


def test_jit_inside_a_named_vmap_retraces_for_another_size():
    g = fc.jit(lambda x: lax.all_gather(x, "i"))
    for n in (2, 3):
        xs = np.arange(float(n))
        np.testing.assert_array_equal(fc.vmap(g, axis_name="i")(xs), np.tile(xs, (n, 1)))


def test_collectives_inside_control_flow_bodies():
    xs = RNG.normal(size=(4, 2))

    def f(x):
        return lax.fori_loop(0, 3, lambda k, c: c + lax.psum(c, "i"), x)

    expect = xs.copy()
    for _ in range(3):
        expect = expect + expect.sum(0)
    np.testing.assert_allclose(fc.vmap(f, axis_name="i")(xs), expect, rtol=1e-12)


# --- derivatives: JAX's convention, finite differences ----------------------------------

COLLECTIVE_FNS = {
    "psum": lambda x: np.sin(x) * lax.psum(x ** 2, "i"),
    "pmean": lambda x: lax.pmean(np.exp(x), "i") * x,
    "pmax": lambda x: lax.pmax(x, "i") * x,
    "pmin": lambda x: np.cos(lax.pmin(x, "i")) + x,
    "all_gather": lambda x: np.sin(lax.all_gather(x, "i")).sum(0) * x,
    "psum_scatter": lambda x: lax.psum_scatter(np.outer(np.arange(1.0, 5.0), x) ** 2, "i"),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVE_FNS))
def test_derivatives_of_a_vmapped_function_with_collectives(name):
    f = COLLECTIVE_FNS[name]
    xs = RNG.permutation(12).reshape(4, 3) * 0.1 + 0.05      # no ties for pmax/pmin
    check_grads(fc.vmap(f, axis_name="i"), (xs,), order=2)


@pytest.mark.parametrize("name", sorted(COLLECTIVE_FNS))
def test_per_example_grad_is_the_derivative_of_the_summed_objective(name):
    # JAX's pmap convention: grad on each member differentiates the sum over members of
    # their outputs, so vmap(grad(f)) == grad(sum of vmap(f)) (psum's transpose is psum)
    f = COLLECTIVE_FNS[name]
    xs = RNG.permutation(12).reshape(4, 3) * 0.1 + 0.05
    per_example = fc.vmap(fc.grad(lambda x: f(x).sum()), axis_name="i")(xs)
    total = fc.grad(lambda xs: fc.vmap(f, axis_name="i")(xs).sum())(xs)
    np.testing.assert_allclose(per_example, total, rtol=1e-10, atol=1e-12)


def test_grad_of_psum_is_the_axis_size_times_the_local_derivative():
    xs = np.array([0.5, 1.0, 2.0])
    g = fc.vmap(fc.grad(lambda x: lax.psum(np.sin(x), "i")), axis_name="i")(xs)
    np.testing.assert_allclose(g, 3 * np.cos(xs), rtol=1e-12)


def test_pmax_tangent_ties_are_averaged():
    xs, ts = np.array([1.0, 3.0, 2.0, 3.0]), np.array([1.0, 10.0, 100.0, 1000.0])
    out = fc.vmap(lambda x, t: fc.jvp(lambda x: lax.pmax(x, "i"), (x,), (t,))[1],
                  axis_name="i")(xs, ts)
    np.testing.assert_allclose(out, np.full(4, 505.0))
    g = fc.vmap(fc.grad(lambda x: lax.pmax(x, "i")), axis_name="i")(xs)
    np.testing.assert_allclose(g, [0.0, 2.0, 0.0, 2.0])      # 4 members / 2 tied


# --- errors ---------------------------------------------------------------------------

def test_an_unbound_name_raises_at_trace_time_naming_the_bound_ones():
    with pytest.raises(NameError, match=r"unbound axis name 'k'.*\['i', 'world'\]"):
        fc.vmap(lambda x: lax.psum(x, "k"), axis_name="i")(np.ones(2))
    with pytest.raises(NameError, match="unbound axis name 'i'"):
        fc.jit(lambda x: lax.all_gather(x, "i"))(np.ones(2))


def test_world_is_not_a_vmap_axis_name_and_chunks_do_not_mix_with_names():
    with pytest.raises(ValueError, match="axis_name='world' is reserved"):
        fc.vmap(lambda x: x, axis_name="world")
    with pytest.raises(ValueError, match="chunk_size=2 with axis_name='i'"):
        fc.vmap(lambda x: x, axis_name="i", chunk_size=2)
    with pytest.raises(TypeError, match="axis_name must be a non-empty string"):
        fc.vmap(lambda x: x, axis_name=3)


def test_an_implementation_reached_with_another_axis_name_names_it():
    with pytest.raises(NameError, match="all_reduce: unbound axis name 'i'"):
        P.all_reduce.bind(np.ones(2), op="sum", axis_name="i")


def test_bad_operands_name_the_call_and_the_shape():
    with pytest.raises(ValueError, match=r"psum_scatter.*shape \(3, 2\).*axis size 4"):
        fc.vmap(lambda x: lax.psum_scatter(np.ones((3, 2)), "i"), axis_name="i")(np.ones(4))
    with pytest.raises(TypeError, match=r"op='max'.*complex128"):
        fc.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(np.ones(2, complex))
    with pytest.raises(ValueError, match="names an axis twice"):
        fc.vmap(lambda x: lax.psum(x, ("i", "i")), axis_name="i")(np.ones(2))


def test_collectives_are_never_folded_at_compile_time():
    graph = fc.make_graph(lambda: [P.all_reduce.bind(np.float64(1.0), op="sum",
                                                     axis_name="world")])()
    assert [e.prim for e in passes.simplify(graph).eqns] == [P.all_reduce]


# --- the process axis, on real ranks ----------------------------------------------------

_WORLD_SCRIPT = '''
import numpy as np, functorch_core as fc
from functorch_core import lax
from functorch_core.backends import mpi
w = mpi.init(); r, n = w.rank, w.size
W = "world"
x = np.arange(3.0) + r
xs = np.stack([np.arange(3.0) + k for k in range(n)])   # every rank's x
eager = [lax.psum(x, W), lax.pmean(x, W), lax.pmax(x, W), lax.pmin(x, W),
         lax.all_gather(x, W), lax.psum_scatter(np.stack([x * (k + 1) for k in range(n)]), W),
         lax.axis_index(W)]
def f(x):
    return (lax.psum(np.sin(x), W) * x).sum() + lax.pmax(x ** 2, W).sum() \\
        + (lax.all_gather(x, W) ** 2).sum() \\
        + lax.psum_scatter(np.outer(np.arange(1.0, n + 1), x), W).sum()
out = {"rank": r, "eager": [np.asarray(e).tolist() for e in eager]}
for backend in (None, "interpreter"):
    j = fc.jit(lambda x: [lax.psum(x, W), lax.pmean(x, W) * lax.axis_index(W),
                          lax.all_gather(x, W), lax.pmax(x, W)], backend=backend)
    out[f"jit {backend}"] = [np.asarray(v).tolist() for v in j(x)]
    out[f"grad {backend}"] = fc.jit(fc.grad(f), backend=backend)(x).tolist()
out["grad eager"] = fc.grad(f)(x).tolist()
out["jvp"] = float(fc.jvp(f, (x,), (np.ones(3),))[1])
out["f"] = float(f(x))
# one body vmapped over a local axis and over ranks at once
out["vmap"] = fc.vmap(lambda y: lax.psum(y, ("i", W)), axis_name="i")(np.stack([x, 2 * x])).tolist()
# an unnamed vmap of collectives over the world: the operands carry the batch through
pair = np.stack([x, 2 * x], 1)
out["vmap world"] = [v.tolist() for v in fc.jit(fc.vmap(lambda y: [
    lax.all_gather(y, W), lax.psum_scatter(np.stack([y] * n), W), lax.pmax(y, W)],
    in_axes=1))(pair)]
report(out)
'''


def _world_reference(n):
    """Each rank's expected values, with NumPy over every rank's input."""
    xs = np.stack([np.arange(3.0) + k for k in range(n)])

    def g(stack):        # the global objective: the sum over ranks of each rank's f
        total = 0.0
        for r in range(n):
            x = stack[r]
            total += (np.sin(stack).sum(0) * x).sum() + (stack ** 2).max(0).sum() \
                + (stack ** 2).sum() + sum((np.arange(1.0, n + 1)[r] * stack[k]).sum()
                                           for k in range(n))
        return total

    eps, grads = 1e-6, np.zeros_like(xs)
    for idx in np.ndindex(xs.shape):
        d = np.zeros_like(xs)
        d[idx] = eps
        grads[idx] = (g(xs + d) - g(xs - d)) / (2 * eps)
    return xs, grads


@needs_mpi
@pytest.mark.parametrize("n", [1, 2])
def test_collectives_over_the_process_axis(n):
    reports = run_ranks(_WORLD_SCRIPT, n=n, timeout=150)
    xs, grads = _world_reference(n)
    jvp_total = sum(rep[0]["jvp"] for rep in reports)
    for r, (rep,) in enumerate(reports):
        psum, pmean, pmax, pmin, gathered, scattered, index = rep["eager"]
        np.testing.assert_allclose(psum, xs.sum(0))
        np.testing.assert_allclose(pmean, xs.mean(0))
        np.testing.assert_allclose(pmax, xs.max(0))
        np.testing.assert_allclose(pmin, xs.min(0))
        np.testing.assert_allclose(gathered, xs)
        np.testing.assert_allclose(scattered, xs.sum(0) * (r + 1))
        assert index == r
        for backend in ("None", "interpreter"):
            s, m, g, mx = rep[f"jit {backend}"]
            np.testing.assert_allclose(s, xs.sum(0))
            np.testing.assert_allclose(m, xs.mean(0) * r)
            np.testing.assert_allclose(g, xs)
            np.testing.assert_allclose(mx, xs.max(0))
            np.testing.assert_allclose(rep[f"grad {backend}"], grads[r], rtol=1e-6)
        np.testing.assert_allclose(rep["grad eager"], grads[r], rtol=1e-6)
        np.testing.assert_allclose(rep["vmap"], np.tile(3 * xs.sum(0), (2, 1)))
        gathered, scattered, top = rep["vmap world"]
        np.testing.assert_allclose(gathered, np.stack([xs, 2 * xs]))
        np.testing.assert_allclose(scattered, np.stack([xs.sum(0), 2 * xs.sum(0)]))
        np.testing.assert_allclose(top, np.stack([xs.max(0), 2 * xs.max(0)]))
    # the sum over ranks of the jvps along ones is the global objective's directional
    # derivative
    np.testing.assert_allclose(jvp_total, grads.sum(), rtol=1e-6)


# --- the cpu backend's native MPI_Allreduce ---------------------------------------------

_NATIVE_SCRIPT = '''
import numpy as np, functorch_core as fc
from functorch_core import lax
from functorch_core.backends import mpi
from functorch_core.backends.llvm import collectives
from functorch_core.backends.llvm.runtime import compile_graph
w = mpi.init(); r = w.rank
W = "world"
out = {}
for dt in ("float32", "float64", "int32", "int64", "complex128", "uint8"):
    x = (np.arange(5) + 3 * r).astype(dt)
    ops = ("sum",) if dt.startswith("complex") else ("sum", "max", "min")
    for op in ops:
        f = {"sum": lax.psum, "max": lax.pmax, "min": lax.pmin}[op]
        g = lambda x: f(x * 2, W)
        out[f"{dt} {op}"] = [fc.jit(g)(x).tolist() if not dt.startswith("complex")
                             else np.abs(fc.jit(g)(x)).tolist(),
                             fc.jit(g, backend="interpreter")(x).tolist()
                             if not dt.startswith("complex")
                             else np.abs(fc.jit(g, backend="interpreter")(x)).tolist()]
    for name, g in (("gather", lambda x: lax.all_gather(x + 1, W)),
                    ("scatter", lambda x: lax.psum_scatter(np.stack([x * (k + 1) for k in
                                                                     range(w.size)]), W))):
        out[f"{dt} {name}"] = [np.abs(fc.jit(g)(x)).tolist(),
                               np.abs(fc.jit(g, backend="interpreter")(x)).tolist()]
# a training step: the gradient's mean over ranks inside the one native entry
x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3) + r
def step(w_, x):
    return lax.pmean(fc.grad(lambda w_: (np.sin(x @ w_) ** 2).sum())(w_), W)
w0 = np.full((3, 4), 0.1, np.float32)
exe = compile_graph(fc.make_graph(step)(w0, x))
calls = [collectives.collective_call(s) for s in exe.plan.steps]
out["entry"] = [exe.entry is not None, sum(c is not None for c in calls)]
both = compile_graph(fc.make_graph(lambda x: [lax.all_gather(x, W) * 2,
                                              lax.psum_scatter(np.stack([x] * w.size), W)])(x))
out["entry gather scatter"] = [both.entry is not None,
                               sum(collectives.collective_call(s) is not None
                                   for s in both.plan.steps)]
out["step"] = [fc.jit(step)(w0, x).tolist(), fc.jit(step, backend="interpreter")(w0, x).tolist()]
# big kernels: the graph runs step by step, the all-reduce as a ctypes call
big = np.arange(1 << 18, dtype=np.float64) * (r + 1)
h = lambda x: lax.psum(np.sin(x) * 2, W) + 1
exe = compile_graph(fc.make_graph(h)(big))
out["steps"] = exe.entry is None
out["big"] = float(np.abs(fc.jit(h)(big) - fc.jit(h, backend="interpreter")(big)).max())
report(out)
'''


@needs_mpi
@pytest.mark.parametrize("n", [1, 2])
def test_the_cpu_backend_calls_mpi_allreduce_natively(n):
    # on 2 ranks twice: the second job loads the entries' object code from the disk cache
    # (the test session's folder), bound again to that job's MPI library
    for _ in range(n):
        for (rep,) in run_ranks(_NATIVE_SCRIPT, n=n, timeout=150):
            for key, value in rep.items():
                if key in ("entry", "entry gather scatter", "steps", "big"):
                    continue
                np.testing.assert_allclose(value[0], value[1], rtol=1e-6, err_msg=key)
            assert rep["entry"] == [True, 1]
            assert rep["entry gather scatter"] == [True, 2]
            assert rep["steps"] is True
            assert rep["big"] < 1e-12


def test_world_of_one_without_mpi_is_a_copy_natively():
    source = textwrap.dedent('''
        import numpy as np, functorch_core as fc
        from functorch_core import lax
        x = np.arange(4.0, dtype=np.float32)
        f = fc.jit(lambda x: lax.psum(x * 3, "world") + lax.axis_index("world"))
        print(f(x).tolist(), lax.all_gather(x, "world").shape)
    ''')
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=120, env={**os.environ,
                                            "FUNCTORCH_CORE_NO_MPI": "1"})
    assert done.stdout.strip() == "[0.0, 3.0, 6.0, 9.0] (1, 4)", done.stderr


def test_compile_library_refuses_a_collective_by_name(tmp_path):
    graph = fc.make_graph(lambda x: P.all_reduce.bind(x, op="sum", axis_name="world"))(
        np.ones(3))
    with pytest.raises(NotNativeError, match="all_reduce is a collective over the process"):
        compile_library(graph, tmp_path / "lib.so", "f")
