"""Graphs of more arrays than a C call takes arguments: kernels of many buffers take them
as one array of pointers, and no kernel grows past the partitioner's bounds."""

from __future__ import annotations

import copy

import numpy as np

import functorch_core as fc
from backends import registry
from backends.llvm import partition as part
from backends.llvm import runtime
from backends.llvm.plan import Kernel

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
    assert any(len(k.reads) + len(k.stores) > runtime.MAX_DIRECT_ARGS for k in kernels)
    through_python = copy.copy(exe)      # each kernel through ctypes, not one native call
    through_python.entry = None
    for run in (exe, through_python):
        got = run(xs)
        assert len(got) == N + 1
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
