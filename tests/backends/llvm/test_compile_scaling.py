"""Compile cost linear in the program: twin kernels compile once, a long graph's entry is a
table walked by one shared runner (no native code per graph), the arena plan checks each
buffer only against those near its lifetime, and the Python passes do work linear in the
equation count. Checked by counting (functions in the LLVM modules, Python calls), never
by timing; results checked bitwise against the same kernels compiled and called one by one, and
against the interpreter within rounding."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter

import numpy as np
from functorch_core.backends import registry
from functorch_core.backends.interpreter import run_graph
from functorch_core.backends.llvm import codegen, engine, entries, kernels, runtime
from functorch_core.backends.planning import buffers
from functorch_core.backends.planning.plan import Kernel, Op, View
from functorch_core.ir import passes
from functorch_core.ir import primitives as P
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core as fc
from functorch_core import backends, ir

CPU = registry.get("cpu")


def _loop(steps):
    """The issue's unrolled loop: tanh, a small product and a sum per step."""
    def f(x, w):
        s = 0.0
        for _ in range(steps):
            x = np.tanh(x @ w)
            s = s + x.sum()
        return s, x
    return f


def _loop_graph(steps):
    x, w = np.full((4, 4), 0.1), np.eye(4) * 0.5
    return passes.simplify(fc.make_graph(_loop(steps))(x, w)), [x, w]


def _compiled_ir(monkeypatch, graph):
    """(executable, the IR texts LLVM was handed while compiling ``graph``)."""
    texts = []
    add_module = engine.add_module

    def recording(text, *args):
        texts.append(text)
        return add_module(text, *args)
    monkeypatch.setattr(engine, "add_module", recording)
    monkeypatch.setattr(engine, "loaded", type(engine.loaded)())    # compile, do not share
    exe = runtime.Executable(graph)
    monkeypatch.undo()
    return exe, texts


def _defines(texts):
    return sum(text.count("\ndefine ") for text in texts)


def test_twin_kernels_compile_once_and_the_native_code_does_not_grow(monkeypatch):
    small, args = _loop_graph(500)       # 2,000 equations
    big, _ = _loop_graph(1000)           # 4,000
    assert len(big.eqns) == 2 * len(small.eqns)
    exe_small, ir_small = _compiled_ir(monkeypatch, small)
    exe_big, ir_big = _compiled_ir(monkeypatch, big)
    assert exe_small.table_entry and exe_big.table_entry
    # the same functions, whatever the length: the kernels of one step are compiled once
    assert _defines(ir_big) == _defines(ir_small) < 40
    assert sum(map(len, ir_big)) < 1.01 * sum(map(len, ir_small))
    # bitwise what each kernel compiled on its own gives (and close to NumPy's tanh)
    monkeypatch.setattr(codegen, "kernel_key", lambda k, slots=None: object())
    alone = runtime.Executable(small)
    monkeypatch.undo()
    for got, ref, want in zip(exe_small(args), alone(args), run_graph(small, args), strict=True):
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_allclose(got, want, rtol=1e-13)


def _mixed(x, w, c, ys):
    """Steps of every record kind: kernels, kernels of more than 64 arrays (packed),
    products of float64, float32 and complex128, batched and transposed."""
    out = []
    total = sum(ys)                        # reads 70 arrays: a packed kernel
    for i in range(40):
        x = np.tanh(x @ w + i)
        out.append(x.sum())
    b = np.stack([x, x.T, x * 2.0])
    out.append((b @ w).sum(axis=0))        # a batched product
    out.append(x.T @ w)                    # a transposed operand
    f = x.astype(np.float32)
    out.append(np.exp(f @ f))
    out.append((c @ c.conj().T) * 0.5)
    return out, total


def test_table_entry_runs_every_kind_of_call_as_a_compiled_entry(monkeypatch):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 4)), rng.standard_normal((4, 4)) * 0.3
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    ys = [rng.standard_normal((5,)) for _ in range(70)]
    graph = passes.simplify(fc.make_graph(_mixed)(x, w, c, ys))
    exe = CPU.compile(graph)
    if entries.graph_entry_supported():
        assert exe.table_entry and exe.entry is not None
        assert exe.entry_address is None       # no native loop may call it (NULL self)
    args = [x, w, c, *ys]
    # the same kernels called by a compiled entry, and one ctypes call per step
    monkeypatch.setattr(entries, "TABLE_MIN_CALLS", 1 << 30)
    coded = runtime.Executable(graph)
    monkeypatch.setattr(entries, "graph_entry_supported", lambda: False)
    stepped = runtime.Executable(graph)
    monkeypatch.undo()
    assert not coded.table_entry and stepped.entry is None
    want = run_graph(graph, args)
    for _ in range(2):
        for got, ref, ref2, ref3 in zip(exe(args), coded(args), stepped(args), want, strict=True):
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(got, ref2)
            np.testing.assert_allclose(got, ref3, rtol=1e-12)


_OURS = tuple(os.path.dirname(m.__file__) for m in (fc, ir, backends))


def _lines_run(fn):
    """{function: lines of ours it ran} for ``fn()`` (loops count a line per iteration)."""
    counts: Counter = Counter()

    def local(frame, event, arg):
        if event == "line":
            counts[frame.f_code.co_filename, frame.f_code.co_firstlineno,
                   frame.f_code.co_name] += 1
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(_OURS) else None
    sys.settrace(calls)
    try:
        fn()
    finally:
        sys.settrace(None)
    return counts


def test_every_function_of_the_compile_does_linear_work():
    """Tracing, simplify, partition, the arena plan, code generation and the runtime's
    set-up: no function of ours runs more than about twice the lines for a chain twice
    as long (a quadratic scan runs four times as many)."""
    CPU.compile(_loop_graph(10)[0])        # imports, the shared table runner
    x, w = np.full((4, 4), 0.1), np.eye(4) * 0.5

    def work(steps):
        def run():
            runtime.Executable(passes.simplify(fc.make_graph(_loop(steps))(x, w)))
        return _lines_run(run)
    # 1,200 and 2,400 equations: past 256 steps the lifetimes of the sums, which wait for
    # the kernel adding up to 128 of them, stop growing
    short, long = work(300), work(600)
    grown = {fn: (short[fn], n) for fn, n in long.items() if n >= 2000 and n > 2.3 * short[fn]}
    assert not grown, grown


def _first_fit(sizes, spans, align):
    """The arena plan by its definition: every placed buffer checked."""
    placed, offsets = [], {}
    for s in sorted(spans, key=lambda s: (-sizes[s], s)):
        first, last = spans[s]
        size = -(-sizes[s] // align) * align
        off = 0
        for lo, hi in sorted((o, e) for f, la, o, e in placed if f <= last and first <= la):
            if off + size <= lo:
                break
            off = max(off, hi)
        offsets[s] = off
        placed.append((first, last, off, off + size))
    return offsets, max((e for *_, e in placed), default=0)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 400), st.sampled_from([0, 1, 3, 63, 64, 65, 300]),
                          st.sampled_from([1, 8, 64, 100, 4096])), max_size=120),
       st.sampled_from([8, 64]))
def test_arena_plan_is_first_fit_over_overlapping_lifetimes(rows, align):
    spans = {s: [a, a + length] for s, (a, length, _) in enumerate(rows)}
    sizes = {s: size for s, (_, _, size) in enumerate(rows)}
    offsets, total = buffers.plan_arena(sizes, spans, align)
    assert (offsets, total) == _first_fit(sizes, spans, align)
    for s in spans:             # overlapping lifetimes never share bytes
        for t in spans:
            if s < t and spans[s][0] <= spans[t][1] and spans[t][0] <= spans[s][1]:
                assert offsets[s] + sizes[s] <= offsets[t] or offsets[t] + sizes[t] <= offsets[s]


def test_kernel_key_covers_every_field_and_tells_constants_apart():
    assert {f.name for f in dataclasses.fields(Kernel)} == codegen.KEY_FIELDS
    f64 = np.dtype(np.float64)

    def kernel(const, slot=3):
        k = Kernel((4,))
        ref = k.read(View(slot, (4,), f64, 0, (1,)))
        k.ops.append(Op(P.add, (ref, ("const", const)), {}, f64, f64))
        k.stores.append((("op", 0), slot + 1, f64))
        return k
    key = codegen.kernel_key
    assert key(kernel(np.float64(0.0))) == key(kernel(np.float64(0.0), slot=9))
    assert key(kernel(np.float64(0.0))) != key(kernel(np.float64(-0.0)))
    assert key(kernel(np.float64(1.0))) != key(kernel(np.float32(1.0)))


def test_twins_share_one_function_in_the_module():
    graph, _ = _loop_graph(20)
    plan = CPU.compile(graph).plan
    steps = [s for s in plan.steps if isinstance(s, Kernel)]
    module, found = kernels.build_module(steps)
    assert str(module).count("\ndefine ") >= len({name for name, _, _ in found.values()})
    names = {name for name, _, _ in found.values()}
    assert len(steps) > 20 > len(names)
    assert len(names) == len({codegen.kernel_key(s) for s in steps})
    for s in steps:     # each call still takes its own arrays, in argument order
        assert found[id(s)][1] == codegen.kernel_slots(s)
