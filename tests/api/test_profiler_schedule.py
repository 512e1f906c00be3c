"""functorch_core.profiler's PyTorch 1.9 API: schedule and its actions, prof.step(),
on_trace_ready per active window, tensorboard_trace_handler's files, with_stack's source
lines, profile_memory's columns, and the argument checks."""

import gzip
import inspect
import json
import os
import re
import socket

import numpy as np
import pytest
from functorch_core.backends import profiling
from functorch_core.backends.llvm import fastpath, runtime
from functorch_core.backends.planning.partition import numpy_gap, partition
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core.api import Jitted
from functorch_core.profiler import (
    ProfilerAction,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)

N, W, R, S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
              ProfilerAction.RECORD_AND_SAVE)


# torch.profiler.schedule's documented behaviour: skip_first idle steps, then cycles of
# wait (NONE), warmup (WARMUP), active (RECORD..., the last RECORD_AND_SAVE), repeat times
# (0: no end), NONE after the last cycle
@pytest.mark.parametrize("kwargs, expected", [
    (dict(wait=1, warmup=1, active=2), [N, W, R, S, N, W, R, S, N, W]),
    (dict(wait=1, warmup=1, active=2, repeat=1), [N, W, R, S, N, N, N, N, N, N]),
    (dict(wait=1, warmup=1, active=3, repeat=2), [N, W, R, R, S, N, W, R, R, S, N, N]),
    (dict(wait=0, warmup=0, active=1), [S, S, S, S]),
    (dict(wait=2, warmup=0, active=1, repeat=2, skip_first=3), [N, N, N, N, N, S, N, N, S, N]),
    (dict(wait=0, warmup=2, active=1, skip_first=1), [N, W, W, S, W, W, S]),
])
def test_schedule_actions_as_torch(kwargs, expected):
    fn = schedule(**kwargs)
    assert [fn(i) for i in range(len(expected))] == expected


def _spelled_out(wait, warmup, active, repeat, skip_first, n):
    """torch's documented schedule as a list: the idle steps, then the cycles laid end to
    end, then idle steps."""
    cycle = [N] * wait + [W] * warmup + [R] * (active - 1) + [S]
    seq = [N] * skip_first + cycle * (repeat or -(-n // len(cycle)))
    return (seq + [N] * n)[:n]


@given(st.integers(0, 3), st.integers(0, 3), st.integers(1, 4), st.integers(0, 3),
       st.integers(0, 3), st.integers(0, 30))
def test_schedule_law_and_one_on_trace_ready_per_window(wait, warmup, active, repeat,
                                                        skip_first, n):
    sched = schedule(wait=wait, warmup=warmup, active=active, repeat=repeat,
                     skip_first=skip_first)
    expected = _spelled_out(wait, warmup, active, repeat, skip_first, n + 1)
    assert [sched(i) for i in range(n + 1)] == expected
    saved = []
    with profile(schedule=sched, on_trace_ready=lambda p: saved.append(
            sorted(e.name for e in p.events() if e.name.startswith("it")))) as prof:
        _loop(prof, n)
    # a window closes at each RECORD_AND_SAVE step before n, and at exit inside a window
    windows, current = [], []
    for i, action in enumerate(expected):
        if action in (R, S) and i < n:
            current.append(f"it{i}")
        if (action is S and i < n) or (i == n and action in (R, S)):
            windows.append(sorted(current))
            current = []
    assert saved == windows


@pytest.mark.parametrize("bad, match", [
    (dict(wait=-1, warmup=0, active=1), r"schedule\(wait=-1\): wait must be an int >= 0"),
    (dict(wait=0, warmup=0, active=0), r"schedule\(active=0\): active must be an int >= 1"),
    (dict(wait=0, warmup=1.5, active=1), r"schedule\(warmup=1.5\)"),
    (dict(wait=0, warmup=0, active=1, repeat=-2), r"schedule\(repeat=-2\)"),
    (dict(wait=0, warmup=0, active=1, skip_first=None), r"schedule\(skip_first=None\)"),
])
def test_schedule_rejects_bad_arguments(bad, match):
    with pytest.raises(ValueError, match=match):
        schedule(**bad)
    with pytest.raises(ValueError, match=r"step must be an int >= 0, got -1"):
        schedule(wait=0, warmup=0, active=1)(-1)


def _loop(prof, n, f=None, x=None):
    """n steps, each a record_function range named by its step number (and a jit call)."""
    seen = []
    for i in range(n):
        seen.append((i, prof.current_action, profiling.recorder is not None))
        with record_function(f"it{i}"):
            if f is not None:
                f(x)
        prof.step()
    return seen


def test_events_only_in_record_steps_and_on_trace_ready_per_window():
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    windows = []

    def ready(p):
        windows.append(sorted(e.name for e in p.events() if e.name.startswith("it")))
        steps = [e for e in p.events() if e.name.startswith("ProfilerStep#")]
        assert all(e.parent is None for e in steps)
        assert all(e.parent.name.startswith("ProfilerStep#")
                   for e in p.events() if e.name.startswith("it"))
    f = fc.jit(lambda x: x * 2.0)
    x = np.ones(3)
    with profile(schedule=sched, on_trace_ready=ready) as prof:
        seen = _loop(prof, 10, f, x)
    assert windows == [["it2", "it3"], ["it6", "it7"]]
    recording = [i for i, action, _ in seen if action in (R, S)]
    assert recording == [2, 3, 6, 7] and [sched(i) for i in recording] == [R, S, R, S]
    # profiled while warming up or recording, untouched otherwise
    assert [on for _, _, on in seen] == [sched(i) is not N for i in range(10)]
    assert sorted(e.name for e in prof.events() if e.name.startswith("ProfilerStep#")) == \
        ["ProfilerStep#6", "ProfilerStep#7"]         # the last window
    assert profiling.recorder is None and prof.step_num == 10


def test_window_open_at_exit_is_saved_and_no_schedule_is_one_window():
    calls = []
    with profile(schedule=schedule(wait=0, warmup=1, active=4),
                 on_trace_ready=lambda p: calls.append(sorted(e.name for e in p.events()))) \
            as prof:
        _loop(prof, 3)      # WARMUP, RECORD, RECORD, then step 3 (RECORD) ends at exit
    assert calls == [["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "it1", "it2"]]
    calls.clear()
    with profile(on_trace_ready=lambda p: calls.append(sorted(e.name for e in p.events()))) \
            as prof:
        _loop(prof, 3)
    assert calls == [["it0", "it1", "it2"]]     # no ProfilerStep events without a schedule


def test_none_steps_keep_the_fast_path():
    f = fc.jit(lambda x: x + 5.0)
    x = np.ones(4)
    f(x)
    fast = []
    with profile(schedule=schedule(wait=2, warmup=0, active=1, repeat=1)) as prof:
        for _ in range(4):
            f(x)
            fast.append(bool(f._fast))
            prof.step()
    assert fast == [True, True, False, True]
    assert len([e for e in prof.events() if e.cat == "call"]) == 1


def test_incorrect_schedule_warns_as_torch():
    actions, saved = [R, N, R, S], []
    with pytest.warns(UserWarning, match="RECORD followed by NONE"):
        with profile(schedule=lambda i: actions[min(i, 3)], on_trace_ready=saved.append) \
                as prof:
            with record_function("kept"):
                pass
            prof.step()
    assert saved == [] and [e.name for e in prof.events()] == ["ProfilerStep#0", "kept"]
    with pytest.warns(UserWarning, match="WARMUP followed by NONE at step 1"):
        with profile(schedule=lambda i: [W, N][min(i, 1)]) as prof:
            prof.step()
    assert prof.events() == []
    with pytest.raises(TypeError, match=r"the schedule returned 'record' for step 0"):
        with profile(schedule=lambda i: "record"):
            pass
    assert profiling.recorder is None


def test_argument_checks_name_the_argument():
    with pytest.raises(TypeError, match=r"profile\(schedule=...\): pass a callable or None, "
                       r"got 3"):
        profile(schedule=3)
    with pytest.raises(TypeError, match=r"profile\(on_trace_ready=...\).*'dir'"):
        profile(on_trace_ready="dir")
    for flag in ("record_shapes", "profile_memory", "with_stack", "enabled"):
        with pytest.raises(TypeError, match=rf"profile\({flag}=...\): pass True or False, "
                           r"got 1"):
            profile(**{flag: 1})
    prof = profile()
    prof.step()             # outside the block: nothing
    assert prof.step_num == 0 and profiling.recorder is None


@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_trace_handler_writes_one_file_per_window(tmp_path, use_gzip):
    f = fc.jit(lambda x: np.exp(x) - 1.0)
    x = np.ones(16)
    handler = tensorboard_trace_handler(tmp_path / "log", use_gzip=use_gzip)
    counts = []

    def ready(p):
        counts.append(len(p.events()))
        handler(p)
    with profile(schedule=schedule(wait=1, warmup=0, active=1), on_trace_ready=ready) as prof:
        for _ in range(6):
            f(x)
            prof.step()
    files = sorted(os.listdir(tmp_path / "log"))
    assert len(files) == len(counts) == 3
    worker = re.escape(f"{socket.gethostname()}_{os.getpid()}")
    pattern = rf"{worker}\.\d{{13}}\.pt\.trace\.json" + (r"\.gz" if use_gzip else "")
    assert all(re.fullmatch(pattern, name) for name in files)
    loaded = []
    for name in files:
        opener = gzip.open if use_gzip else open
        with opener(tmp_path / "log" / name, "rt") as fh:
            trace = json.load(fh)["traceEvents"]
        spans = [e for e in trace if e["ph"] == "X"]
        assert {"ProfilerStep#1", "ProfilerStep#3", "ProfilerStep#5"} & {e["name"] for e in spans}
        loaded.append(len(spans))
    assert sorted(loaded) == sorted(counts)


def test_tensorboard_worker_name(tmp_path):
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "rank0")):
        with record_function("r"):
            pass
    name, = os.listdir(tmp_path)
    assert re.fullmatch(r"rank0\.\d+\.pt\.trace\.json", name)


def _fused(x):
    a = np.sin(x)
    b = a * 3.0
    c = b + 1.0
    return c.sum(axis=1) + np.cos(x).sum(axis=1)


def _lines(fn, *offsets):
    first = fn.__code__.co_firstlineno
    return [f"{inspect.getsourcefile(fn)}:{first + k}" for k in offsets]


def test_plan_keeps_the_sources_of_the_equations_of_each_step():
    graph = fc.make_graph(_fused)(np.ones((4, 5)))
    plan = partition(graph, numpy_gap)
    stacks = sorted(plan.sources[id(s)] for s in plan.steps)
    assert sorted(_lines(_fused, 1, 2, 3, 4)) == sorted({ln for st in stacks for ln in st})
    assert any(set(_lines(_fused, 1, 2, 3)) <= set(st) for st in stacks)   # one kernel: all


def test_with_stack_maps_kernels_to_the_users_lines():
    runtime.clear_cache()       # the sources are the first compiled graph's of a structure
    f = fc.jit(_fused)
    x = np.ones((1024, 512))    # above the native entry's size: one event per step
    with profile(with_stack=True) as prof:
        f(x)
    steps = [e for e in prof.events() if e.cat == "kernel"]
    assert steps and all(e.stack for e in steps)
    fused = [e for e in steps if e.name.startswith("kernel[sin+mul+add")]
    assert fused and set(_lines(_fused, 1, 2, 3)) <= set(fused[0].stack)
    assert {ln for e in steps for ln in e.stack} == set(_lines(_fused, 1, 2, 3, 4))
    rows = prof.key_averages(group_by_stack_n=1)
    firsts = {(r.key, tuple(r.stack)) for r in rows if r.stack}
    assert {(e.name, tuple(e.stack[:1])) for e in steps} == firsts
    table = rows.table()
    assert "Source Location" in table.splitlines()[1]
    assert _lines(_fused, 1)[0] in table
    deep = prof.key_averages(group_by_stack_n=3).table()
    assert all(ln in deep for ln in _lines(_fused, 1, 2, 3))   # one line per frame
    with profile() as plain:
        f(x)
    assert all(e.stack == [] for e in plain.events())
    with pytest.raises(ValueError, match=r"group_by_stack_n=2\): the profile recorded no "
                       r"stacks; use profile\(with_stack=True\)"):
        plain.key_averages(group_by_stack_n=2)
    with pytest.raises(ValueError, match=r"group_by_stack_n=...\): pass an int >= 0"):
        prof.key_averages(group_by_stack_n=-1)


def test_with_stack_on_a_native_entry_lists_every_kernels_lines():
    runtime.clear_cache()
    f = fc.jit(_fused)
    with profile(with_stack=True) as prof:
        f(np.ones((3, 4)))
    entry, = [e for e in prof.events() if e.name.startswith("native entry")]
    assert set(entry.stack) == set(_lines(_fused, 1, 2, 3, 4))


def _two_layers(x, w1, w2):
    return np.tanh(np.tanh(x @ w1) @ w2)


def test_profile_memory_reports_the_arena_and_the_results():
    f = fc.jit(_two_layers)
    x, w1, w2 = (np.ones(s, np.float32) for s in ((64, 32), (32, 128), (128, 16)))
    with profile(profile_memory=True) as prof:
        out = f(x, w1, w2)
        f(x, w1, w2)
    exe = next(iter(f.cache.values())).run
    runs = [e for e in prof.events() if e.name == "run(cpu)"]
    assert len(runs) == 2
    hidden = 64 * 128 * 4       # x @ w1 and its tanh, float32: intermediates
    for e in runs:
        assert e.args["arena_bytes"] == exe.arena_bytes >= hidden
        assert hidden <= e.args["arena_peak_bytes"] <= exe.arena_bytes
        assert e.args["result_bytes"] == out.nbytes
        assert e.self_cpu_memory_usage == exe.arena_bytes + out.nbytes > 0
        assert e.parent.name == "jit(_two_layers)"
        assert e.parent.cpu_memory_usage == e.self_cpu_memory_usage
        assert e.parent.self_cpu_memory_usage == 0
    rows = prof.key_averages()
    by_name = {r.key: r for r in rows}
    assert by_name["run(cpu)"].self_cpu_memory_usage == 2 * (exe.arena_bytes + out.nbytes)
    assert by_name["jit(_two_layers)"].cpu_memory_usage == 2 * (exe.arena_bytes + out.nbytes)
    lines = rows.table(sort_by="self_cpu_memory_usage").splitlines()
    assert "CPU Mem" in lines[1] and "Self CPU Mem" in lines[1]
    assert lines[3].startswith("run(cpu)")
    assert rows.table(sort_by="cpu_memory_usage").splitlines()[3].split()[0] in \
        ("jit(_two_layers)", "run(cpu)")
    with profile() as plain:
        f(x, w1, w2)
    assert "CPU Mem" not in plain.key_averages().table()
    assert all(e.cpu_memory_usage == 0 for e in plain.events())


def test_the_cached_call_path_never_looks_at_the_profiler():
    f = fc.jit(lambda x: np.tanh(x) * 2.0)
    x = np.ones((64, 64))
    f(x)
    f(x)
    exe = next(iter(f.cache.values())).run
    codes = [Jitted.__call__.__code__, runtime.Executable.__call__.__code__,
             exe.trusted.__code__, *(s.__code__ for s in exe.steps)]
    for code in codes:
        assert not {"profiling", "recorder"} & set(code.co_names), code.co_name
    assert "profiling" not in vars(fastpath)
    with profile(with_stack=True, profile_memory=True, record_shapes=True):
        f(x)
    assert exe.trusted.__code__ in codes and profiling.recorder is None
