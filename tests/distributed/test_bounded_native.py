"""Bounded collectives inside a compiled step (issue 31): under ``init(timeout=...)`` the
jitted step keeps its reduction in the native graph entry (backends/llvm/bounded.py: MPI's
non-blocking call polled to the deadline in native code), equals the unbounded step bit
for bit, times out naming the missing rank, and stops on a failed rank's report. Every job
is real ranks under ``mpiexec``, bounded by a timeout."""

import time
from pathlib import Path

from functorch_core.backends.llvm import entry_codegen
from mpirun import needs_mpi, run_ranks

# the digits CNN's DDP step (as benchmarks/_distributed_ddp.py times it), and a graph
# with an all_gather and a psum_scatter of several dtypes
_STEPS = '''
import sys, time
import numpy as np
import functorch_core as fc
import functorch_core.distributed as dist
from functorch_core import lax, optim
from functorch_core.backends import mpi
from functorch_core.backends.llvm.runtime import compile_graph
from functorch_core.nn import functional as F
from functorch_core.nn.parallel import DistributedDataParallel
sys.path.insert(0, "examples")
from cnn_digits import make_model

dist.init(timeout=None)
r = dist.rank()
fc.manual_seed(0)
model = DistributedDataParallel(make_model(), bucket_cap_mb=0.001)   # a few buckets
x = np.random.default_rng(r).random((16, 1, 8, 8), np.float32)
y = np.random.default_rng(r + 100).integers(0, 10, 16)
params0 = {k: np.array(v) for k, v in model.named_parameters()}
buffers0 = {k: np.array(v) for k, v in model.named_buffers()}
opt = optim.sgd(lr=0.1)

def objective(p, b):
    logits = fc.functional_call(model, (p, b), (x,))
    return F.cross_entropy(logits, y), b

@fc.jit
def jstep(params, buffers, ost):
    (_, buffers), grads = fc.value_and_grad(objective, has_aux=True)(params, buffers)
    params, ost = opt.update(grads, ost, params)
    return params, buffers, ost

def mixed(a, b):
    return [lax.all_gather(a * 2, "world"), lax.psum_scatter(np.stack([b] * 2), "world"),
            lax.pmax(b + 1, "world"), lax.psum(a.astype(np.float64), "world")]
a = np.arange(7, dtype=np.float32) * (r + 1.5)
b = (np.arange(6) * (3 * r + 1)).astype(np.int64)

def long(x):          # 160 native calls: the entry runs them in parts of PART_CALLS
    m = np.eye(4, dtype=np.float32) * 0.5 + 0.1
    for i in range(80):
        x = np.sin(x @ m) * 1.01 + i
        if i in (30, 70):
            x = lax.psum(x, "world")
    return x
c = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4) + r

def train(steps=3):
    state = (params0, buffers0, opt.init(params0))
    for _ in range(steps):
        state = jstep(*state)
    return np.concatenate([np.ravel(v) for v in state[0].values()])

def bits(arrays):
    return [np.ascontiguousarray(v).view(np.uint8).tobytes().hex() for v in arrays]

free = bits([train()]) + bits(fc.jit(mixed)(a, b)) + bits([fc.jit(long)(c)])
dist.init(timeout=30)         # the same compiled code, now bounded
calls = int(mpi._calls[0])
t = time.perf_counter()
timed = bits([train()]) + bits(fc.jit(mixed)(a, b)) + bits([fc.jit(long)(c)])
parts = compile_graph(fc.make_graph(long)(c))
report({"same": free == timed, "counted": int(mpi._calls[0]) - calls,
        "entry": compile_graph(fc.make_graph(mixed)(a, b)).entry is not None,
        "parts": [parts.entry is not None, len(parts.plan.steps)]})
'''


@needs_mpi
def test_the_bounded_jitted_step_equals_the_unbounded_one_bit_for_bit():
    out = run_ranks(_STEPS, n=2, timeout=240, cwd=Path(__file__).resolve().parents[2])
    for rep, in out:
        assert rep["same"] is True
        assert rep["entry"] is True
        # every bounded collective counts (the names of a timeout compare the counts):
        # the DDP step's buckets and the four collectives of ``mixed``
        assert rep["counted"] >= 3 + 4 + 2
        assert rep["parts"][0] is True and rep["parts"][1] > entry_codegen.PART_CALLS
    assert out[0][0]["counted"] == out[1][0]["counted"]


@needs_mpi
def test_a_jitted_ddp_step_times_out_naming_the_sleeping_rank():
    out = run_ranks('''
        import time
        import numpy as np
        import functorch_core as fc
        import functorch_core.distributed as dist
        from functorch_core import lax
        from functorch_core.backends.llvm.runtime import compile_graph
        dist.init(timeout=1.5)

        def step(w, x):
            g = fc.grad(lambda w: (np.sin(x @ w) ** 2).sum())(w)
            return w - 0.1 * lax.pmean(g, "world")
        w = np.full((4, 3), 0.1, np.float32)
        x = np.ones((2, 4), np.float32) * (dist.rank() + 1)
        jstep = fc.jit(step)
        w = jstep(w, x)                    # both ranks: it works
        report(compile_graph(fc.make_graph(step)(w, x)).entry is not None)
        if dist.rank() == 1:
            time.sleep(6.0)                 # rank 1 sleeps inside the next step
        t = time.monotonic()
        try:
            jstep(w, x)
        except dist.DistributedTimeoutError as e:
            report([time.monotonic() - t, str(e)])
        def long(x):        # in parts: the refusal ends the entry from inside one
            m = np.eye(4, dtype=np.float32) * 0.5
            for i in range(80):
                x = np.sin(x @ m) + i
            return lax.psum(x, "world")
        try:
            fc.jit(long)(x)
        except dist.DistributedError as e:
            report(str(e))
    ''', n=2, timeout=90)
    assert out[0][0] is True
    elapsed, msg = out[0][1]
    assert 1.5 <= elapsed < 1.5 + 2.0
    assert msg.startswith("all_reduce did not complete within 1.5 s on rank 0 of 2: rank 1 "
                          "did not reach it"), msg
    assert "the world is unusable" in out[0][2]


@needs_mpi
def test_a_failed_rank_ends_the_native_wait_with_its_message():
    start = time.monotonic()
    _, output = run_ranks('''
        import numpy as np
        import functorch_core as fc
        import functorch_core.distributed as dist
        from functorch_core import lax
        dist.init(timeout=60)
        f = fc.jit(lambda x: lax.psum(x * 2.0, "world") + 1.0)
        f(np.ones(3))
        if dist.rank() == 1:
            raise ValueError("rank 1 fails on purpose")
        f(np.ones(3))                       # rank 0 waits here: the report ends it
    ''', n=2, timeout=50, expect_fail=True)
    assert time.monotonic() - start < 45        # far less than the 60 s timeout
    assert "all_reduce on rank 0 of 2: rank 1 failed with ValueError: rank 1 fails on " \
        "purpose" in output, output
