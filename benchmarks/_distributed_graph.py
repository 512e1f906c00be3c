"""The in-graph column of ``benchmarks/distributed.py``: an all-reduce inside a jitted
function (the cpu backend's native ``MPI_Allreduce`` call) against raw mpi4py
``Allreduce`` on the same buffers (the limit), float32, 1 KB to 64 MB.

Run on 2 ranks from the repository root:
``.venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/_distributed_graph.py [--quick]``.

Each round times, after a barrier, one call of each variant in turn (the host's load
drifts): ``jit(lambda x: psum(x, "world"))`` (a fresh result array per call, as any jitted
function returns), and mpi4py's ``comm.Allreduce(x, out)`` into a
preallocated ``out``. Rank 0 prints, per size, the medians over rounds of the slowest
rank's time, the 10th-90th percentile spread and the ratios to raw. ``in_graph_rows`` is
the function the distributed benchmark calls for its column.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from functorch_core.backends import mpi

import functorch_core as fc
from functorch_core import lax

SIZES_BYTES = (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26)     # 1 KB ... 64 MB


def _rounds(nbytes: int, quick: bool) -> int:
    base = 10 if quick else 40
    return max(5, base if nbytes <= 1 << 18 else base // 4)


def _slowest(comm, seconds: float) -> float:
    """The slowest rank's time (a collective: every rank calls it)."""
    return seconds if comm is None else max(comm.allgather(seconds))


def in_graph_rows(quick: bool = False):
    """Per size: (bytes, then a median in s and its 10-90% spread for in-graph, then for
    raw mpi4py).
    Every rank calls it (it runs collectives); the values are the same on every rank."""
    w = mpi.init()
    comm = w.comm
    step = fc.jit(lambda x: lax.psum(x, mpi.WORLD))
    rows = []
    for nbytes in SIZES_BYTES:
        x = np.full(nbytes // 4, w.rank + 1, np.float32)
        out = np.empty_like(x)
        expect = w.size * (w.size + 1) / 2
        assert step(x)[0] == expect     # compiled, and right
        times = {"graph": [], "raw": []}
        for _ in range(_rounds(nbytes, quick)):
            for name in times:
                if comm is not None:
                    comm.Barrier()
                t0 = time.perf_counter()
                if name == "graph":
                    step(x)
                elif comm is not None:
                    comm.Allreduce(x, out)
                else:
                    np.copyto(out, x)
                times[name].append(_slowest(comm, time.perf_counter() - t0))
        row = [nbytes]
        for name in ("graph", "raw"):
            t = np.asarray(times[name])
            row += [float(np.median(t)), (float(np.percentile(t, 10)),
                                          float(np.percentile(t, 90)))]
        rows.append(tuple(row))
    return rows


def _size(nbytes):
    return f"{nbytes >> 20} MB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KB"


def main():
    rows = in_graph_rows("--quick" in sys.argv)
    w = mpi.world()
    if w.rank != 0:
        return
    print(f"all_reduce (sum) of float32 on {w.size} ranks: in-graph (jit, native "
          "MPI_Allreduce) vs raw mpi4py Allreduce; medians, 10-90% spread")
    print(f"{'size':>8} {'in-graph':>26} {'raw mpi4py':>26} {'graph/raw':>9}")
    for nbytes, g, gs, r, rs in rows:
        cells = [f"{m * 1e6:.1f}us ({s[0] * 1e6:.0f}-{s[1] * 1e6:.0f})"
                 for m, s in ((g, gs), (r, rs))]
        print(f"{_size(nbytes):>8} {cells[0]:>26} {cells[1]:>26} {g / r:9.2f}")


if __name__ == "__main__":
    main()
