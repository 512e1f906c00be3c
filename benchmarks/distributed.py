"""Collectives across processes: functorch_core.distributed against raw mpi4py.

Run from the repository root: ``python3 benchmarks/distributed.py [--quick] [--write]``;
run plainly it starts itself on 2 ranks under the venv's ``mpiexec`` (``-n K`` picks
another count). Needs mpi4py and mpiexec (``pip install -e '.[distributed]'``).

(a) all_reduce(sum) of one float32 array of 1 KB ... 64 MB: ``fc.distributed.all_reduce``
    eagerly (its cross-rank check of the tree's signature included: one 16-byte
    all-reduce), the same with a timeout set (MPI's non-blocking call, polled), raw
    ``comm.Allreduce`` on the same buffers into a preallocated output (the limit) and
    into a new array each call (what ours must do: its result is a new array), and
    ``jit(lambda v: lax.psum(v, WORLD))`` (the cpu backend's native MPI_Allreduce).

Each time is the slowest rank's, per call, the median over repeats (in brackets the 10th
to 90th percentile); every repeat starts after a barrier and runs the columns one after
another (a slow spell falls on all).

Where to add: an all_reduce column (the in-graph one, say) is a function in
``ALL_REDUCE_COLUMNS``: ``(x, comm) -> {name: callable}``; a section with its own table
(DDP's training step, say) is a function in ``SECTIONS``: ``(args) -> (title, columns,
rows)``, run on every rank (rank 0 prints and writes).

(b) DDP training steps (benchmarks/_distributed_ddp.py, its own ``mpiexec`` jobs: 1 and 2
    ranks, the digits CNN and a 784-512-512-10 MLP) follow when the script is run plainly;
    ``--no-ddp`` leaves them out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _results import require, timing_notes, wants_write, write
from _timing import result
from functorch_core.backends import mpi

import functorch_core as fc
import functorch_core.distributed as dist

MPI = require("mpi4py.MPI", "distributed.py")

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26]   # bytes
QUICK_SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 24]


def under_mpiexec() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"))


def launch(argv) -> int:
    """Start this script on K ranks (``-n K``, default 2) under the venv's mpiexec."""
    n = "2"
    if "-n" in argv:
        i = argv.index("-n")
        n, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    cmd = [sys.executable, "-m", "functorch_core.distributed.run", "-n", n,
           os.path.abspath(__file__), *argv]
    return subprocess.call(cmd, env={**os.environ, "OMP_NUM_THREADS": "1"})


def timed(comm, fns, repeats, inner):
    """name -> median over ``repeats`` of the slowest rank's seconds per call."""
    got = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            fn()
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            dt = (time.perf_counter() - t0) / inner
            got[name].append(comm.allreduce(dt, op=MPI.MAX))
    return {name: (float(np.median(t)), float(np.percentile(t, 10)), float(np.percentile(t, 90)))
            for name, t in got.items()}


def eager_columns(x, comm):
    out = np.empty_like(x)

    def ours():
        dist.all_reduce(x)

    def ours_timeout():
        mpi.set_timeout(60)
        try:
            dist.all_reduce(x)
        finally:
            mpi.set_timeout(None)

    return {"ours eager": ours, "ours eager, timeout=60 s (polled)": ours_timeout,
            "mpi4py Allreduce": lambda: comm.Allreduce(x, out),
            "mpi4py Allreduce, new output": lambda: comm.Allreduce(x, np.empty_like(x))}


def in_graph_columns(x, comm):
    step = fc.jit(lambda v: fc.lax.psum(v, dist.WORLD))
    return {"ours in-graph (jit psum)": lambda: step(x)}


ALL_REDUCE_COLUMNS = [eager_columns, in_graph_columns]     # more columns go here


def all_reduce_section(args):
    quick = "--quick" in args
    comm = mpi.world().comm
    rows, names = [], None
    for nbytes in QUICK_SIZES if quick else SIZES:
        x = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
        fns = {}
        for columns in ALL_REDUCE_COLUMNS:
            fns.update(columns(x, comm))
        inner = max(1, min(200, (1 << 22) // nbytes))
        t = timed(comm, fns, repeats=5 if quick else 9, inner=inner)
        names = list(t)
        raw = t["mpi4py Allreduce"][0]
        label = f"{nbytes >> 10} KB" if nbytes < 1 << 20 else f"{nbytes >> 20} MB"
        rows.append([label, *[f"{1e6 * m:.0f} us ({m / raw:.2f}x) [{1e6 * lo:.0f}-{1e6 * hi:.0f}]"
                              for m, lo, hi in (t[k] for k in names)]])
        if comm.Get_rank() == 0:
            result(f"distributed all_reduce float32 {label}, {comm.Get_size()} ranks",
                   t["ours eager"][0], unit="us")
    title = (f"all_reduce(sum) of float32 on {comm.Get_size()} ranks (median time per call, "
             f"x raw mpi4py, [p10-p90])")
    return title, ["size", *names], rows


SECTIONS = [all_reduce_section]     # DDP's sections go here


def main(args):
    dist.init()
    if dist.world_size() < 2:
        print("distributed.py: one rank only; run it plainly (it starts mpiexec) or under "
              "mpiexec -n 2")
    tables = [section(args) for section in SECTIONS]
    if dist.rank() != 0:
        return
    for title, columns, rows in tables:
        print(f"\n{title}")
        print("  " + " | ".join(columns))
        for row in rows:
            print("  " + " | ".join(map(str, row)))
    if wants_write(args):
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        write("distributed", "distributed.py", tables, notes=[
            *timing_notes(), f"The host's load average at the end of the run: {load} (1, 5, "
            f"15 min) on {os.cpu_count()} CPUs. Oversubscribed ranks wait a scheduler slice "
            "whenever one is preempted between two collectives, so every extra "
            "synchronisation costs far more here than on idle cores.",
            "Both ranks share this host's cores: MPICH moves the data "
            "through shared memory; across machines the network sets the large sizes' "
            "times. Ours includes the ranks' check of the tree's signature (one 16-byte "
            "all-reduce before the data), which small messages feel."], argv=args)


if __name__ == "__main__":
    if under_mpiexec():
        main(sys.argv[1:])
    else:
        argv = [a for a in sys.argv[1:] if a != "--no-ddp"]
        status = launch(argv)
        if status == 0 and "--no-ddp" not in sys.argv:
            from _distributed_ddp import ddp_rows, print_rows
            print_rows(ddp_rows("--quick" in argv))
        sys.exit(status)
