"""The cpu backend's calls into SciPy's compiled special functions
(backends/llvm/scipy_calls.py): native == interpreter == SciPy to the bit, fused with other
math, under vmap and grad, from many threads at once, and refused by AOT export."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.special as ss
from bitwise import assert_bitwise
from functorch_core.backends import registry
from functorch_core.backends.llvm import lowering, scipy_calls, steps
from functorch_core.backends.planning.partition import Fallback
from functorch_core.ir import primitives as P
from functorch_core.ir.dtypes import bfloat16 as BF16
from graph_builder import Builder

import functorch_core as fc
import functorch_core.scipy.special as S
from functorch_core.profiler import profile
from functorch_core.testing import check_grads

CPU, INTERP = registry.get("cpu"), registry.get("interpreter")
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300, 5e-324, -1e-300, 0.5, 1.0, -1.0,
                  2.0, -2.5, 20.0, 20.5, -20.0, 25.0, 1e3, 1e300, -1e300])
# primitive -> (scipy.special name, number of operands)
PRIMS = {P.igamma: ("gammainc", 2), P.igammac: ("gammaincc", 2), P.betainc: ("betainc", 3),
         P.spence: ("spence", 1), P.bessel_jv: ("jv", 2), P.bessel_j0: ("j0", 1),
         P.tgamma: ("gamma", 1), P.bessel_y0: ("y0", 1), P.bessel_y1: ("y1", 1),
         P.bessel_yn: ("yn", 2), P.bessel_iv: ("iv", 2), P.bessel_ive: ("ive", 2),
         P.bessel_k0: ("k0", 1), P.bessel_k1: ("k1", 1), P.bessel_kv: ("kv", 2),
         P.bessel_kve: ("kve", 2)}
DTYPES = [np.float64, np.float32, np.float16, BF16]


def _operands(n, dtype, seed):
    """``n`` operands broadcasting against each other: every pair of edge values (EDGES along
    a different axis per operand), then random values of wide magnitude and both signs."""
    rng = np.random.default_rng(seed)
    ops = []
    for i in range(n):
        edge = EDGES.reshape((-1,) + (1,) * (n - 1 - i))
        rand = (rng.standard_normal(400) * np.exp(rng.uniform(-8, 8, 400))).reshape(
            (-1,) + (1,) * (n - 1 - i))
        with np.errstate(over="ignore"):
            ops.append((np.concatenate([edge, rand]) if i == 0 else edge).astype(dtype))
    if n == 3:      # betainc's x in [0, 1] mostly
        ops[2] = np.concatenate([ops[2], rng.uniform(0, 1, (64,)).astype(dtype)])
    return ops


def _graph(prim, operands):
    b = Builder()
    shape = np.broadcast_shapes(*(o.shape for o in operands))
    ins = [b.input(o.shape, o.dtype) for o in operands]
    full = [b(P.broadcast_in_dim, x, shape=shape,
              broadcast_dimensions=tuple(range(len(shape) - x.aval.ndim, len(shape))))
            for x in ins]
    return b.graph(b(prim, *full))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("prim", list(PRIMS), ids=lambda p: p.name)
def test_native_equals_interpreter_and_scipy_bitwise(prim, dtype):
    name, n = PRIMS[prim]
    operands = _operands(n, dtype, seed=n)
    if prim is P.bessel_yn:     # SciPy's yn(n, 1e300) recurs |n| times: 20 s at n = 1e300
        order = operands[0]
        operands[0] = np.where(np.abs(order) > 2**20, np.copysign(2**20, order), order)
    graph = _graph(prim, operands)
    exe = CPU.compile(graph)
    assert not any(isinstance(s, Fallback) for s in exe.plan.steps)
    with np.errstate(all="ignore"):
        want = np.asarray(getattr(ss, name)(*operands)).astype(dtype)
        assert_bitwise(exe(operands), [want])
        assert_bitwise(INTERP.compile(graph)(operands), [want])


@pytest.mark.parametrize("prim", list(PRIMS), ids=lambda p: p.name)
def test_every_call_lowers_and_is_isolated_on_big_arrays(prim):
    b = Builder()
    ins = [b.input((1 << 12,), np.float64) for _ in range(PRIMS[prim][1])]
    eqn_graph = b.graph(b(P.mul, b(prim, *ins), ins[0]))
    assert lowering.lowering_gap(eqn_graph.eqns[0]) is None
    kernels = lowering.partition(eqn_graph).steps
    assert [[op.prim for op in k.ops] for k in kernels] == [[prim], [P.mul]]


def _kernel_names(prof):
    names = []
    for e in prof.events():
        names.append(e.name)
        names += e.args.get("kernels", []) if e.args else []
    return names


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
def test_fused_with_other_math_in_one_native_kernel(dtype):
    rng = np.random.default_rng(3)
    a, x, u = (np.abs(rng.standard_normal((7, 5))).astype(dtype) * 4 for _ in range(3))

    def f(a, x, u):     # correctly rounded math around the calls: the same bits in NumPy
        return (S.gammainc(a, x) * 2 + 1, S.betainc(a, x, u / (u + 1)) - x * 0.5,
                S.spence(x) * S.gammaincc(a, x), S.jv(a, x) + S.j0(x * 9), S.gamma(a) - 1)
    native = fc.jit(f, backend="cpu")
    with profile() as prof:
        got = native(a, x, u)
    names = _kernel_names(prof)
    assert not [n for n in names if n.startswith("fallback[")], names
    assert any("igamma+mul+add" in n for n in names), names
    assert_bitwise(got, fc.jit(f, backend="interpreter")(a, x, u))


def test_under_vmap_as_a_loop_of_scipy_calls():
    rng = np.random.default_rng(4)
    a, x = np.abs(rng.standard_normal((6, 9))) * 5, np.abs(rng.standard_normal(9)) * 5
    f = fc.jit(fc.vmap(lambda a, x: S.gammaincc(a, x) + S.jv(a, x), in_axes=(0, None)))
    want = np.stack([ss.gammaincc(r, x) + ss.jv(r, x) for r in a])
    assert_bitwise([f(a, x)], [want])


def test_under_grad_native_as_the_interpreter():
    """The derivative graphs call these primitives again (jv' = (jv(v-1) - jv(v+1)) / 2,
    j0' = -jv(1, x), gamma' = gamma digamma); the cpu backend runs them natively, with the
    interpreter's values (digamma: within an ulp of SciPy's)."""
    v, z = np.array([0.5, 1.0, 2.5, 7.0]), np.array([0.3, 4.0, 19.0, 40.0])

    def f(z):
        return (S.jv(v, z) + S.j0(z) * S.gamma(z)).sum()
    native = fc.jit(fc.grad(f), backend="cpu")
    with profile() as prof:
        got = native(z)
    names = _kernel_names(prof)
    assert not [n for n in names if n.startswith("fallback[")], names
    np.testing.assert_allclose(got, fc.jit(fc.grad(f), backend="interpreter")(z), rtol=1e-15)
    check_grads(fc.jit(lambda z: S.jv(v, z) * S.gammainc(2.0, z) + S.spence(z)), (z,), order=2)


def test_many_threads_at_once_give_the_same_bits():
    """SciPy's functions are nogil and the native call releases the GIL: threads calling the
    same compiled function at once, on arrays small (the native entry) and big (split over
    the runtime's workers), each get the single-threaded bits."""
    rng = np.random.default_rng(5)
    f = fc.jit(lambda a, x, u: S.gammainc(a, x) * S.betainc(a, x, u) + S.spence(x))
    jobs = []
    for size in (100, steps.PARALLEL_MIN_POINTS + 3):
        for _ in range(3):
            a, x = np.abs(rng.standard_normal((2, size))) * 5
            jobs.append((a, x, rng.uniform(0, 1, size)))
    want = [np.asarray(f(*j)) for j in jobs]
    got = [None] * (4 * len(jobs))
    barrier = threading.Barrier(8)

    def work(t):
        barrier.wait()
        for i in range(t, len(got), 8):
            got[i] = np.asarray(f(*jobs[i % len(jobs)]))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_bitwise(got, [want[i % len(jobs)] for i in range(len(got))])


def test_signature_checks_reject_other_functions():
    with pytest.raises(RuntimeError, match="itj0y0"):
        scipy_calls._signature("itj0y0")
    with pytest.raises(RuntimeError, match="takes 2 values, not 3"):
        scipy_calls.bind("gammainc", 3)


def test_aot_export_refuses_calls_into_scipy(tmp_path):
    import shutil

    from functorch_core.backends.llvm.aot import NotNativeError
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    exp = fc.export(lambda a, x: S.gammainc(a, x) * 2, np.ones(3), np.ones(3))
    with pytest.raises(NotNativeError, match="igamma calls SciPy"):
        exp.compile_library(tmp_path / "g.so", "g")


def test_a_kernel_of_calls_releases_the_gil_from_4096_values():
    """Such a kernel counts as POINTS_PER_CALL points per value: it leaves the GIL-holding
    native entry (and splits over threads) well below PARALLEL_MIN_POINTS values."""
    n = steps.PARALLEL_MIN_POINTS // scipy_calls.POINTS_PER_CALL
    assert n <= 4096
    for size, in_entry in ((n - 1, True), (n, False)):
        exe = CPU.compile(_graph(P.spence, [np.ones(size)]))
        assert (exe.entry is not None) == in_entry, size


CACHED_SCRIPT = """
import json
import numpy as np, scipy.special as ss
import functorch_core as fc, functorch_core.scipy.special as S
from functorch_core.backends.llvm import cache
a, x = np.linspace(0.1, 30, 5000), np.linspace(30, 0.2, 5000)
got = fc.jit(lambda a, x: S.gammainc(a, x) * S.gamma(a / 4) + S.jv(a, x))(a, x)
np.testing.assert_array_equal(got, ss.gammainc(a, x) * ss.gamma(a / 4) + ss.jv(a, x))
print(json.dumps({"stats": dict(cache.stats), "results": [got.tobytes().hex()]}))
"""


def test_disk_cached_object_code_calls_scipy_in_a_fresh_process(tmp_path):
    """The kernels name SciPy's functions by symbol, bound in each process when the rule is
    emitted: object code from the disk cache links against the new process's SciPy."""
    from test_llvm_cache import run_script
    first = run_script(tmp_path / "cache", tmp_path, CACHED_SCRIPT)
    second = run_script(tmp_path / "cache", tmp_path, CACHED_SCRIPT)
    assert first["stats"].get("hits", 0) == 0 and second["stats"]["hits"] >= 1
    assert second["stats"].get("compiled", 0) == 0
    assert second["results"] == first["results"]


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_scipy_seterr_does_not_reach_the_native_calls(mode):
    """SciPy's special-function error handling belongs to its ufuncs: the compiled functions
    return their value (NaN for a < 0) and neither warn nor raise, small or split arrays."""
    f = fc.jit(lambda a, x: S.gammainc(a, x) + S.spence(x))
    before = ss.geterr()
    ss.seterr(all=mode)
    try:
        for n in (10, steps.PARALLEL_MIN_POINTS):
            r = f(-np.ones(n), -np.ones(n))
            assert np.isnan(r).all()
    finally:
        ss.seterr(**before)
