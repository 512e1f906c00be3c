"""functorch_core.profiler: events, their tree, the table, the Chrome trace, and that the
cached call path is left as it was."""

import json

import numpy as np
import pytest
from functorch_core.backends import profiling
from functorch_core.backends.llvm import runtime

import functorch_core as fc
from functorch_core.profiler import profile, record_function

BIG = (1024, 512)       # 2**19 points: above PARALLEL_MIN_POINTS, split over threads


def _mlp(x, w):
    return np.tanh(x @ w).sum(axis=1)


@pytest.fixture
def three_threads():
    before = runtime.get_num_threads()
    runtime.set_num_threads(3)
    yield
    runtime.set_num_threads(before)


def _names(prof):
    return [e.name for e in prof.events()]


def test_events_name_call_compile_and_steps():
    f = fc.jit(_mlp)
    x, w = np.ones(BIG, np.float32), np.ones((512, 64), np.float32)
    with profile() as prof:
        f(x, w)
        f(x, w)
    events = prof.events()
    calls = [e for e in events if e.name == "jit(_mlp)"]
    assert len(calls) == 2 and all(e.parent is None for e in calls)
    first, second = ({d.name for d in _descendants(c)} for c in calls)
    assert {"trace", "simplify", "compile(cpu)", "partition", "llvm"} <= first
    assert first & {"llvm: optimize+compile", "llvm: disk cache hit", "llvm: compile worker"}
    assert not {"trace", "compile(cpu)"} & second          # cached: no compile
    assert {"dot_general (blas)", "kernel[tanh+reduce_sum]"} <= second
    for e in events:
        assert e.start <= e.end and e.self_ns <= e.duration_ns
        if e.parent is not None:
            assert e.parent.start <= e.start and e.end <= e.parent.end
            assert e.parent.tid == e.tid


def _descendants(ev):
    for c in ev.children:
        yield c
        yield from _descendants(c)


def test_split_kernel_parts_run_on_worker_threads(three_threads):
    f = fc.jit(lambda x: np.exp(x).sum(axis=1))
    x = np.ones(BIG, np.float32)
    f(x)
    with profile() as prof:
        f(x)
    parts = [e for e in prof.events() if e.name == "kernel[exp+reduce_sum] part"]
    assert len(parts) == 3
    assert len({e.tid for e in parts}) >= 2     # the caller and at least one worker
    step, = [e for e in prof.events() if e.name == "kernel[exp+reduce_sum]"]
    assert [p for p in parts if p.parent is step]       # the caller's own part nests
    assert any(p.thread_name.startswith("fc-cpu") for p in parts)


def test_fallback_entry_and_eager_transform_events():
    int_conv = fc.jit(lambda a, b: fc.lax.conv(a, b, (1,), "VALID") + 1)   # no integer gemm
    small = fc.jit(lambda x: np.sin(x) + 1.0)
    loss = lambda x: (x * x).sum()    # noqa: E731
    with profile() as prof:
        int_conv(np.ones((1, 2, 5), np.int32), np.ones((3, 2, 2), np.int32))
        small(np.ones(8))
        fc.grad(loss)(np.ones(3))
        fc.grad(loss)(np.ones(3))
    names = _names(prof)
    assert "fallback[conv_general_dilated]" in names
    entry, = [e for e in prof.events() if e.name.startswith("native entry")]
    assert entry.args["kernels"] == ["kernel[sin+add]"]
    built = [n for n in names if n.startswith("transform grad(") and n.endswith("<lambda>)")]
    assert len(built) == 1       # built once, then cached
    eager = [e for e in prof.events() if e.name == built[0][len("transform "):]]
    assert len(eager) == 2 and all(e.cat == "eager" for e in eager)


def test_interpreter_backend_runs_as_one_event():
    f = fc.jit(lambda x: x * 2, backend="interpreter")
    f(np.ones(3))
    with profile() as prof:
        f(np.ones(3))
    run, = [e for e in prof.events() if e.name == "run(interpreter)"]
    assert run.parent.name.startswith("jit(") and run.parent.cat == "call"


def test_table_columns_sorting_and_row_limit():
    f = fc.jit(_mlp)
    x, w = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
    with profile() as prof:
        with record_function("outer"):
            for _ in range(3):
                f(x, w)
    rows = prof.key_averages()
    by_name = {r.key: r for r in rows}
    assert by_name["jit(_mlp)"].count == 3 and by_name["outer"].count == 1
    outer = by_name["outer"]
    assert outer.cpu_time_total >= by_name["jit(_mlp)"].cpu_time_total
    assert outer.self_cpu_time_total < outer.cpu_time_total
    table = rows.table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert all(h in lines[1] for h in ("Name", "Self CPU", "CPU total", "CPU time avg",
                                       "# of Calls"))
    body = lines[3:-2]
    assert len(body) == 2
    top = sorted(rows, key=lambda r: r.self_cpu_time_total, reverse=True)[:2]
    assert [b.split()[0] for b in body] == [r.key.split()[0] for r in top]
    assert lines[-1].startswith("Self CPU time total:")
    with pytest.raises(ValueError, match="sort_by must be one of"):
        rows.table(sort_by="cuda_time")


def test_chrome_trace_parses_and_nests(tmp_path, three_threads):
    f = fc.jit(_mlp)
    x, w = np.ones(BIG, np.float32), np.ones((512, 512), np.float32)
    with profile() as prof:
        with record_function("step"):
            f(x, w)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    spans = [e for e in trace if e["ph"] == "X"]
    assert len(spans) == len(prof.events())
    for e in spans:
        assert {"name", "cat", "ts", "dur", "pid", "tid"} <= set(e) and e["dur"] >= 0
    names = {e["tid"]: e["args"]["name"] for e in trace if e["ph"] == "M"}
    assert set(names) == {e["tid"] for e in spans} and len(names) >= 2
    depth = 0
    for tid in names:       # per thread, spans nest like parentheses
        stack = []
        for e in sorted((e for e in spans if e["tid"] == tid),
                        key=lambda e: (e["ts"], -e["dur"])):
            while stack and e["ts"] >= stack[-1]:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1] + 1e-3
            stack.append(e["ts"] + e["dur"])
            depth = max(depth, len(stack))
    assert depth >= 3       # step > jit(_mlp) > kernel > its part


def test_record_shapes_groups_by_input_shape():
    f = fc.jit(lambda x: x + 1)
    with profile(record_shapes=True) as prof:
        f(np.ones(3, np.float32))
        f(np.ones((2, 2)))
    rows = prof.key_averages(group_by_input_shape=True)
    shapes = sorted(str(r.input_shapes) for r in rows if r.key.startswith("jit("))
    assert shapes == ["['float32[3]']", "['float64[2, 2]']"]
    assert "Input Shapes" in rows.table()


def test_profiler_leaves_the_fast_path_and_executables_alone():
    f = fc.jit(lambda x: x * 3.0)
    x = np.ones(4)
    f(x)
    f(x)
    assert f._fast
    exe = next(iter(f.cache.values())).run
    steps, entry = list(exe.steps), exe.entry
    with profile() as prof:
        f(x)
        assert not f._fast          # every call profiled while active
    assert [e.cat for e in prof.events()].count("call") == 1
    np.testing.assert_array_equal(f(x), x * 3.0)
    assert f._fast                  # refilled once the profile ends
    assert exe.steps == steps and exe.entry is entry
    assert profiling.recorder is None


def test_nothing_recorded_when_off_or_disabled():
    f = fc.jit(lambda x: x - 1)
    f(np.ones(2))
    with record_function("outside"):
        f(np.ones(2))
    with profile(enabled=False) as prof:
        f(np.ones(2))
    assert prof.events() == [] and profiling.recorder is None


def test_one_profile_at_a_time_and_errors():
    with profile():
        with pytest.raises(RuntimeError, match="already active"):
            with profile():
                pass
    assert profiling.recorder is None
    with pytest.raises(TypeError, match="record_function: name must be a str"):
        record_function(3)
    with profile() as prof:
        with pytest.raises(ZeroDivisionError):
            with record_function("fails"):
                1 / 0       # noqa: B018
    assert _names(prof) == ["fails"]


def test_activities_as_torch_spells_them():
    from functorch_core.profiler import ProfilerActivity
    f = fc.jit(lambda x: x * 3.0)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        f(np.ones(4))
    assert any(n.startswith("jit(") for n in _names(prof))
    assert prof.activities == {ProfilerActivity.CPU}
    assert profile().activities == {ProfilerActivity.CPU}
    assert profile(activities=[]).activities == set(ProfilerActivity)     # torch: all
    assert fc.profiler.ProfilerActivity is ProfilerActivity


def test_cuda_activity_is_accepted_and_empty_on_the_cpu_backend():
    from functorch_core.profiler import ProfilerActivity
    f = fc.jit(lambda x: x + 1.0)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        f(np.ones(4))
    assert prof.activities == set(acts)
    assert any(n.startswith("jit(") for n in _names(prof))
    assert not [e for e in prof.events() if e.cat == "cuda"]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:       # cuda alone: nothing
        f(np.ones(4))
    assert prof.events() == []


def test_activities_errors():
    from functorch_core.profiler import ProfilerActivity
    with pytest.raises(TypeError, match=r"'cpu' is not a ProfilerActivity"):
        profile(activities=["cpu"])
    with pytest.raises(TypeError, match=r"'CUDA' is not a ProfilerActivity"):
        profile(activities=[ProfilerActivity.CPU, "CUDA"])
    with pytest.raises(TypeError, match=r"pass a list of ProfilerActivity.*got "
                       r"<ProfilerActivity.CPU"):
        profile(activities=ProfilerActivity.CPU)
