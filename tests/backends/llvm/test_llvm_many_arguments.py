"""Graphs of more arrays than a C call takes arguments: kernels of many buffers take them
as one array of pointers, and no kernel grows past the partitioner's bounds."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from functorch_core.backends import registry
from functorch_core.backends.llvm import engine, runtime
from functorch_core.backends.llvm.kernels import MAX_DIRECT_ARGS
from functorch_core.backends.planning import partition as part
from functorch_core.backends.planning.plan import Kernel

import functorch_core as fc

CPU = registry.get("cpu")
N = 1100


def many(xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return [x * 2 + 1 for x in xs] + [total]


def test_1100_inputs_and_1100_outputs_run_natively_in_bounded_kernels():
    xs = [np.full(4, float(i)) for i in range(N)]
    want = [x * 2 + 1 for x in xs] + [np.full(4, float(sum(range(N))))]
    exe = CPU.compile(fc.make_graph(many)(xs))
    kernels = [s for s in exe.plan.steps if isinstance(s, Kernel)]
    assert len(kernels) == len(exe.plan.steps) > 1
    for k in kernels:      # the bounds stop a kernel taking more ops (of up to 2 reads)
        assert len(k.reads) <= part.MAX_KERNEL_BUFFERS + 1 and len(k.ops) <= part.MAX_KERNEL_OPS
    assert any(len(k.reads) + len(k.stores) > MAX_DIRECT_ARGS for k in kernels)
    through_python = copy.copy(exe)      # each kernel through ctypes, not one native call
    through_python.entry = None
    for run in (exe, through_python):
        got = run(xs)
        assert len(got) == N + 1
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("by_pointer", [False, True])
def test_a_packed_kernel_split_over_threads(monkeypatch, by_pointer):
    """70 inputs (> MAX_DIRECT_ARGS) of 2**18 points: the kernel runs through ctypes on
    several threads; with no known ndarray layout it takes data pointers instead."""
    if by_pointer:
        monkeypatch.setattr(engine, "DATA_OFFSET", None)
    n = MAX_DIRECT_ARGS + 6
    xs = [np.full(1 << 18, i + (0.5 if by_pointer else 0.25), np.float32) for i in range(n)]
    exe = runtime.Executable(fc.make_graph(lambda *a: sum(a[1:], a[0]) * 2)(*xs))
    assert exe.entry is None
    (kernel,) = [s for s in exe.plan.steps if isinstance(s, Kernel)]
    assert len(kernel.reads) == n
    np.testing.assert_array_equal(exe(xs)[0], 2 * np.sum(xs, axis=0))
