"""DDP training-step rows of benchmarks/distributed.py: ``ddp_rows(quick)``.

Each row is one ``mpiexec -n K`` job of this file's worker (``--worker``): every rank times
its training step (forward, backward with the gradient mean over the ranks, SGD update) on
its own batch of 64, and rank 0 prints the medians over repeats of the slowest rank's step
time (each repeat is a round of steps all ranks run together). Models: the digits CNN of
examples/cnn_digits.py and an MLP 784-512-512-10 (ReLU, cross-entropy).

Variants, ours: ``DistributedDataParallel`` with 25 MiB buckets (one bucket for these
models) and with 0.25 MiB buckets (several, each reduced inside the backward where its
gradients are complete), the same step traced inside ``no_sync()`` (no reduction: the
compute alone, as slowed by the other rank on the same cores),
``dist.all_reduce(grads, op="mean")`` inside the jitted step (one reduction after the
backward), and the same reduction eagerly after the jitted gradient;
torch: ``torch.nn.parallel.DistributedDataParallel`` over gloo (same model, same batch)
when torch is installed. Every rank computes on one thread (ours, torch, OpenBLAS): the
host has two cores. Weak scaling: the same per-rank batch on 1
and on 2 ranks.

Run alone: ``python benchmarks/_distributed_ddp.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BATCH = 64


def _mpiexec():
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job(n, model, variant, steps, repeats, timeout=300):
    """The medians of one variant on ``n`` ranks: {"median": s, "spread": (q1, q3)}, or None
    when the job failed (its output on stderr)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "FUNCTORCH_CORE_NUM_THREADS": "1",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "examples"), str(ROOT)])}
    cmd = [_mpiexec(), "-n", str(n), sys.executable, str(Path(__file__).resolve()),
           "--worker", model, variant, str(steps), str(repeats)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        print(f"{model}/{variant} on {n} ranks: past {timeout} s", file=sys.stderr)
        return None
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        print(f"{model}/{variant} on {n} ranks failed:\n{out.stdout}\n{out.stderr}",
              file=sys.stderr)
        return None
    return json.loads(lines[-1])


def ddp_rows(quick=False):
    """The DDP table: {(model, variant, ranks): {"median", "spread"} or None}."""
    steps, repeats = (5, 3) if quick else (20, 7)
    rows = {}
    for model in ("cnn", "mlp"):
        for variant in ("ddp25", "ddp0.25", "in_graph_after", "eager_after", "ddp_nosync",
                        "torch"):
            rows[(model, variant, 2)] = _job(2, model, variant, steps, repeats)
        for variant in ("ddp25", "torch"):
            rows[(model, variant, 1)] = _job(1, model, variant, steps, repeats)
    return rows


def print_rows(rows):
    print(f"DDP training step, per-rank batch {BATCH} (median ms of the slowest rank, "
          f"[quartiles])")
    for (model, variant, n), r in rows.items():
        txt = "not run" if r is None else \
            f"{1e3 * r['median']:8.2f}  [{1e3 * r['spread'][0]:.2f}, {1e3 * r['spread'][1]:.2f}]"
        print(f"  {model:4s} {variant:15s} {n} rank{'s' if n > 1 else ' '}  {txt}")
    for model in ("cnn", "mlp"):
        ours, one = rows.get((model, "ddp25", 2)), rows.get((model, "ddp25", 1))
        torch2 = rows.get((model, "torch", 2))
        if ours and one:
            print(f"  {model}: weak-scaling efficiency 1->2 ranks (t1/t2): "
                  f"{one['median'] / ours['median']:.2f}")
        if ours and torch2:
            print(f"  {model}: ours / torch DDP step time: {ours['median'] / torch2['median']:.2f}")
        many, after = rows.get((model, "ddp0.25", 2)), rows.get((model, "in_graph_after", 2))
        if many and after:
            print(f"  {model}: bucketed (0.25 MiB) / one reduction after backward: "
                  f"{many['median'] / after['median']:.2f}")


# --- the worker (one rank) ------------------------------------------------------------------

def _ours(model_name, variant):
    import functorch_core as fc
    import functorch_core.distributed as dist
    from functorch_core import nn, optim
    from functorch_core.nn import functional as F
    from functorch_core.nn.parallel import DistributedDataParallel

    # unbounded (native MPI_Allreduce inside the jitted step) unless benchmarks/elastic.py
    # asks for a timeout ("alternate": _worker switches it between rounds)
    bound = os.environ.get("FC_BENCH_TIMEOUT", "none")
    dist.init(timeout=None if bound in ("none", "alternate") else float(bound))
    fc.manual_seed(0)
    if model_name == "cnn":
        from cnn_digits import make_model
        model = make_model()
        x = np.random.default_rng(dist.rank()).random((BATCH, 1, 8, 8), np.float32)
    else:
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        x = np.random.default_rng(dist.rank()).random((BATCH, 784), np.float32)
    y = np.random.default_rng(dist.rank() + 100).integers(0, 10, BATCH)
    wrapped = model if not variant.startswith("ddp") else DistributedDataParallel(
        model, bucket_cap_mb=25.0 if variant == "ddp_nosync" else float(variant[3:]))
    params = {k: np.array(v) for k, v in wrapped.named_parameters()}
    buffers = {k: np.array(v) for k, v in wrapped.named_buffers()}
    opt = optim.sgd(lr=0.01)
    ost = opt.init(params)

    def loss_fn(params, buffers, x, y):
        return F.cross_entropy(fc.functional_call(wrapped, (params, buffers), (x,)), y), buffers

    vg = fc.value_and_grad(loss_fn, has_aux=True)

    if variant == "psum_only":          # the step's reduction alone: one flat gradient
        from functorch_core import lax
        flat = np.concatenate([np.ravel(v) for v in params.values()])
        reduce = fc.jit(lambda v: lax.psum(v, dist.WORLD))

        def step(params, buffers, ost):
            reduce(flat)
            return params, buffers, ost
    elif variant == "eager_after":
        grad_step = fc.jit(lambda p, b, x, y: vg(p, b, x, y))
        update = fc.jit(opt.update)

        def step(params, buffers, ost):
            (_, buffers), g = grad_step(params, buffers, x, y)
            g = dist.all_reduce(g, op="mean")
            params, ost = update(g, ost, params)
            return params, buffers, ost
    else:
        @fc.jit
        def jstep(params, buffers, ost, x, y):
            (_, buffers), g = vg(params, buffers, x, y)
            if variant == "in_graph_after":
                g = dist.all_reduce(g, op="mean")
            params, ost = opt.update(g, ost, params)
            return params, buffers, ost

        def step(params, buffers, ost):
            return jstep(params, buffers, ost, x, y)
        if variant == "ddp_nosync":          # traced inside no_sync: no reduction at all
            with wrapped.no_sync():
                jstep(params, buffers, ost, x, y)
    state = [params, buffers, ost]

    def run():
        state[:] = step(*state)
    return run, dist.barrier, lambda t: float(dist.all_reduce(np.float64(t), op="max"))


def _torch(model_name):
    import torch
    import torch.distributed as tdist
    rank = int(os.environ.get("PMI_RANK", "0"))
    size = int(os.environ.get("PMI_SIZE", "1"))
    torch.set_num_threads(1)
    tdist.init_process_group("gloo", rank=rank, world_size=size)
    torch.manual_seed(0)
    tnn = torch.nn
    if model_name == "cnn":
        model = tnn.Sequential(tnn.Conv2d(1, 16, 3, padding=1), tnn.BatchNorm2d(16), tnn.ReLU(),
                               tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(256, 10))
        x = torch.rand(BATCH, 1, 8, 8)
    else:
        model = tnn.Sequential(tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512),
                               tnn.ReLU(), tnn.Linear(512, 10))
        x = torch.rand(BATCH, 784)
    y = torch.randint(0, 10, (BATCH,))
    ddp = tnn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)

    def run():
        opt.zero_grad()
        tnn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()

    def slowest(t):
        v = torch.tensor([t], dtype=torch.float64)
        tdist.all_reduce(v, op=tdist.ReduceOp.MAX)
        return float(v)
    return run, tdist.barrier, slowest


def _alternating(run, barrier, slowest, steps, repeats):
    """Rounds of ``steps`` steps with the world's timeout lifted and set to 30 s in turn
    (the first of each pair alternates, against drift; both ranks switch between the same
    two collectives): the medians of each and of each pair's ratio, with its quartiles."""
    from functorch_core.backends import mpi
    got = {None: [], 30.0: []}
    for i in range(repeats):
        for bound in ((None, 30.0) if i % 2 == 0 else (30.0, None)):
            mpi.set_timeout(bound)
            for _ in range(2):
                run()
            barrier()
            t0 = time.perf_counter()
            for _ in range(steps):
                run()
            got[bound].append(slowest((time.perf_counter() - t0) / steps))
    ratios = np.array(got[30.0]) / np.array(got[None])
    return {"none": float(np.median(got[None])), "30": float(np.median(got[30.0])),
            "ratio": float(np.median(ratios)),
            "ratio_spread": [float(np.percentile(ratios, 25)),
                             float(np.percentile(ratios, 75))]}


def _worker(model_name, variant, steps, repeats):
    run, barrier, slowest = _torch(model_name) if variant == "torch" else _ours(model_name,
                                                                                 variant)
    for _ in range(3):
        run()                       # compiles, warms up
    if os.environ.get("FC_BENCH_TIMEOUT") == "alternate":
        result = _alternating(run, barrier, slowest, steps, repeats)
        if int(os.environ.get("PMI_RANK", "0")) == 0:
            print(json.dumps(result), flush=True)
        return
    times = []
    for _ in range(repeats):
        barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            run()
        times.append(slowest((time.perf_counter() - t0) / steps))
    if int(os.environ.get("PMI_RANK", "0")) == 0:
        print(json.dumps({"median": float(np.median(times)),
                          "spread": [float(np.percentile(times, 25)),
                                     float(np.percentile(times, 75))]}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        _worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        print_rows(ddp_rows("--quick" in sys.argv))
