"""The backend-neutral planner (``backends/planning``): its layering, and the gap rule each
backend hands to the shared partition."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import paths
from functorch_core.backends.llvm import lowering
from functorch_core.backends.planning import buffers
from functorch_core.backends.planning import partition as planning
from functorch_core.backends.planning.plan import Fallback, Kernel
from functorch_core.ir import primitives as P
from graph_builder import Builder

ROOT = Path(paths.ROOT)


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    parts = path.relative_to(ROOT).with_suffix("").parts[:-1]
    if parts[0] in ("ir", "backends"):  # installed as functorch_core.ir, functorch_core.backends
        parts = ("functorch_core", *parts)
    package = ".".join(parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            names.add(mod)
            names |= {f"{mod}.{a.name}" for a in node.names}
    return names


def _package_imports(package: str) -> dict[str, set[str]]:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, package
    return {str(f.relative_to(ROOT)): _imports(f) for f in files}


def _offending(imports: dict, prefixes) -> list:
    return [(f, m) for f, mods in imports.items() for m in sorted(mods)
            if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_import_parser_sees_relative_and_absolute_imports(tmp_path):
    """The layering checks below would pass vacuously if the parser missed imports."""
    found = _imports(ROOT / "backends" / "llvm" / "lowering.py")
    assert {"functorch_core.backends.planning.partition", "functorch_core.backends.llvm.ops",
            "functorch_core.backends.llvm.lapack_steps", "functorch_core.ir.primitives"} <= found
    assert _offending({"x": found}, ["functorch_core.backends.llvm"])
    assert _offending(_package_imports("backends/llvm"), ["llvmlite"])


def test_planning_and_cuda_never_import_llvmlite():
    for package in ("backends/planning", "backends/cuda"):
        assert _offending(_package_imports(package), ["llvmlite"]) == [], package


def test_cuda_imports_nothing_from_the_cpu_backend():
    assert _offending(_package_imports("backends/cuda"), ["functorch_core.backends.llvm"]) == []


def test_planning_imports_no_backend():
    imports = _package_imports("backends/planning")
    assert _offending(imports, [f"functorch_core.backends.{b}" for b in
                                ("llvm", "cuda", "interpreter")] + ["numba", "cupy"]) == []


def test_importing_planning_and_cuda_loads_no_llvmlite():
    """Transitively too: nothing they import pulls in llvmlite or the CPU backend."""
    code = ("import sys, functorch_core; before = set(sys.modules); "
            "import functorch_core.backends.planning.partition, "
            "functorch_core.backends.cuda.runtime; "
            "bad = [m for m in set(sys.modules) - before if m.split('.')[0] == 'llvmlite' "
            "or m.startswith('functorch_core.backends.llvm')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stdout + done.stderr


# -- the gap rule ----------------------------------------------------------------------

def _numpy_gap_cases():
    """Equations NumPy itself refuses (or only its own loop computes): one graph each."""
    cases = []
    b = Builder()
    x = b.input((3,), np.int32)
    cases.append(b.graph(b(P.pow, x, x)))
    b = Builder()
    x = b.input((3,), np.bool_)
    cases.append(b.graph(b(P.neg, x)))
    b = Builder()
    x = b.input((2, 0), np.float32)
    cases.append(b.graph(b(P.reduce_max, x, axes=(1,))))
    b = Builder()
    cases.append(b.graph(b(P.iota, dtype=np.dtype(np.bool_), shape=(3,), dimension=0)))
    return cases


def test_numpy_gap_makes_fallbacks_on_every_backend():
    for graph in _numpy_gap_cases():
        (eqn,) = graph.eqns
        reason = planning.numpy_gap(eqn)
        assert reason, eqn.prim.name
        # the CPU's own rule keeps NumPy's reasons
        assert lowering.lowering_gap(eqn) == reason
        plan = planning.partition(graph, planning.numpy_gap)
        assert [type(s) for s in plan.steps] == [Fallback]
        assert plan.steps[0].reason == reason


def test_partition_follows_the_backends_gap():
    b = Builder()
    x = b.input((4, 3), np.float32)
    y = b(P.sin, x)
    z = b(P.mul, y, y)
    graph = b.graph(b(P.reduce_sum, z, axes=(1,)))
    assert [type(s) for s in planning.partition(graph, planning.numpy_gap).steps] == [Kernel]
    plan = planning.partition(graph, lambda e: "no sin here" if e.prim is P.sin else None)
    assert [type(s) for s in plan.steps] == [Fallback, Kernel]
    assert plan.steps[0].reason == "no sin here"
    assert [type(s) for s in lowering.partition(graph).steps] == [Kernel]



# -- the buffer plan -------------------------------------------------------------------

def _chain(n=4, shape=(6, 5)):
    b = Builder()
    x = b.input(shape, np.float64)
    y = x
    for _ in range(n):
        m = b(P.reduce_max, y, axes=(1,))
        low = b(P.broadcast_in_dim, m, shape=shape, broadcast_dimensions=(0,))
        y = b(P.mul, b(P.sub, y, low), x)
    return b.graph(y)


def test_the_cpu_arena_is_the_shared_buffer_plan():
    from functorch_core.backends.llvm import runtime
    graph = _chain()
    exe = runtime.compile_graph(graph)
    assert exe.arena_offsets
    assert buffers.arena_layout(exe.plan, runtime.ARENA_ALIGN) == (exe.arena_offsets,
                                                                    exe.arena_bytes)


def test_lifetimes_span_first_write_to_last_use_and_skip_kept_slots():
    plan = lowering.partition(_chain())
    result = plan.outputs[0][1]
    spans = buffers.lifetimes(plan.steps, {result})
    assert len(spans) >= 4 and result not in spans and 0 not in spans  # kept; never written
    for s, (first, last) in spans.items():
        touching = [k for k, st in enumerate(plan.steps) if s in set().union(
            *buffers.step_slots(st))]
        assert (first, last) == (touching[0], touching[-1])
        assert s in buffers.step_slots(plan.steps[first])[1]


def _tgamma_of_log(n):
    b = Builder()
    y = b.input((n,), "float64")
    out = b(P.mul, b(P.tgamma, b(P.log, y)), b(P.exp, y))
    return b.graph(out)


def test_a_libm_call_on_a_big_array_is_a_kernel_of_its_own():
    """The CPU isolates lgamma/tgamma on big arrays (the math around a call in one
    loop runs an element at a time): log, tgamma and the rest are three kernels; on a small
    array, one. Either plan gives the fused kernel's values."""
    big, small = (lowering.partition(_tgamma_of_log(n)) for n in
                  (lowering.CALL_ALONE_MIN_POINTS, 16))
    kernels = [s for s in big.steps if isinstance(s, Kernel)]
    assert len(kernels) == 3 and [op.prim for op in kernels[1].ops] == [P.tgamma]
    assert len([s for s in small.steps if isinstance(s, Kernel)]) == 1
    assert len(planning.partition(_tgamma_of_log(lowering.CALL_ALONE_MIN_POINTS),
                                  lowering.lowering_gap).steps) == 1
    import functorch_core as fc
    from functorch_core.scipy import special
    y = np.random.default_rng(0).uniform(3.0, 50.0, lowering.CALL_ALONE_MIN_POINTS)
    f = lambda y: special.gamma(np.log(y)) * np.exp(y)    # noqa: E731
    np.testing.assert_allclose(fc.jit(f)(y), fc.jit(f, backend="interpreter")(y),
                               rtol=1e-15, atol=0)


def test_inline_erf_fuses_with_the_math_around_it():
    """erf/erfc/erfcx are inline IR (backends/llvm/erf.py), not libm calls: log, erf and
    the rest are one kernel on a big array too."""
    b = Builder()
    y = b.input((lowering.CALL_ALONE_MIN_POINTS,), "float64")
    out = b(P.mul, b(P.erfc, b(P.erf, b(P.log, y))), b(P.erfcx, y))
    plan = lowering.partition(b.graph(out))
    assert len([s for s in plan.steps if isinstance(s, Kernel)]) == 1
