"""The profiler's CUDA activity on the cuda backend, under numba-cuda's simulator: one
``cuda`` event per step of the executable, with its user source lines; the CPU activity
alone keeps the run as one host-side event. (On a GPU the same events end after a device
synchronize; the simulator runs kernels synchronously.)"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import inspect

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if os.environ["NUMBA_ENABLE_CUDASIM"] != "1":
    pytest.skip("numba.cuda was imported without the simulator", allow_module_level=True)

import functorch_core as fc
from functorch_core.profiler import ProfilerActivity, profile


def _layer(x, w):
    y = x @ w
    return np.tanh(y) * 2.0


def _line(k):
    return f"{inspect.getsourcefile(_layer)}:{_layer.__code__.co_firstlineno + k}"


def test_cuda_activity_records_each_step_with_its_lines():
    f = fc.jit(_layer, backend="cuda")
    x, w = np.ones((4, 3), np.float32), np.full((3, 5), 0.1, np.float32)
    f(x, w)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts, with_stack=True) as prof:
        out = f(x, w)
    np.testing.assert_allclose(out, np.tanh(x @ w) * 2.0, rtol=2e-6)
    gpu = [e for e in prof.events() if e.cat == "cuda"]
    assert [e.name for e in gpu] == ["cuda dot_general", "cuda kernel[tanh+mul]"]
    assert [e.stack for e in gpu] == [[_line(1)], [_line(2)]]
    assert all(e.parent.name == "run(cuda)" and e.parent.parent.name == "jit(_layer)"
               for e in gpu)
    with profile(activities=[ProfilerActivity.CUDA]) as only:
        f(x, w)
    assert [e.name for e in only.events()] == [e.name for e in gpu]
    assert all(e.parent is None for e in only.events())
    with profile() as cpu:
        f(x, w)
    assert "run(cuda)" in [e.name for e in cpu.events()]
    assert not [e for e in cpu.events() if e.cat == "cuda"]
