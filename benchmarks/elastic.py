"""Fault tolerance costs (issue 31): recovery time, checkpoint writes, bounded collectives.

1. Recovery: the digits CNN trained data-parallel on 2 ranks under
   ``python -m functorch_core.distributed.run --max-restarts 1`` (``_elastic_job.py``);
   rank 1 sends itself SIGKILL at step 12; the time from just before the kill to the first
   step completed after the restart (which loads the step-10 checkpoint, starts 2 Python
   processes and compiles the step again). Goal <= 5 s.
2. Checkpoint writes (one process): the CNN's parameters, buffers and Adam state, and an
   MLP 784-512-512-10's (about 8 MB with Adam), by ``dist.checkpoint.save`` (durable: every
   file and folder fsynced; and ``durable=False``: as atomic against a killed process,
   without fsync) against ``np.savez`` of the same arrays to one file (no fsync, no
   atomicity) and against ``np.savez`` followed by one fsync of its file. Medians and
   interquartile ranges. Goal <= 1.2x.
3. Bounded collectives: the 2-rank DDP step of benchmarks/_distributed_ddp.py with
   ``init(timeout=30)`` against ``init(timeout=None)``, for the jitted DDP step (unbounded,
   its reduction is a native ``MPI_Allreduce``; bounded, it is MPI's non-blocking call
   polled to the deadline by native code in the step, backends/llvm/bounded.py) and for
   the eager ``all_reduce`` after a jitted gradient. Goal <= 5%.

    python benchmarks/elastic.py [--quick] [--write] [--bounded-only]

``--bounded-only`` runs section 3 alone; with ``--write`` it replaces that section (and its
note) in results/elastic.md, keeping the other two.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

os.environ["FUNCTORCH_CORE_NO_MPI"] = "1"      # this process: a world of one rank

import numpy as np
from _distributed_ddp import _job
from _results import header, markdown_table, results_dir, timing_notes, wants_write, write

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))

from cnn_digits import make_model  # noqa: E402
from functorch_core.ir.pytree import tree_flatten  # noqa: E402

import functorch_core as fc  # noqa: E402
from functorch_core import nn, optim  # noqa: E402
from functorch_core.distributed import checkpoint  # noqa: E402


def recovery(repeats):
    """Seconds from a rank's death to the first completed step after the restart."""
    times = []
    env = {k: v for k, v in os.environ.items() if k != "FUNCTORCH_CORE_NO_MPI"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", FUNCTORCH_CORE_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "examples"), ROOT]))
    for _ in range(repeats):
        out = tempfile.mkdtemp(prefix="fc-elastic-")
        try:
            subprocess.run([sys.executable, "-m", "functorch_core.distributed.run", "-n", "2",
                            "--max-restarts", "1", os.path.join(HERE, "_elastic_job.py"),
                            out], env=env, check=True, timeout=300, capture_output=True)
            with open(os.path.join(out, "death")) as f, open(os.path.join(out, "resumed")) as g:
                times.append(float(g.read()) - float(f.read()))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    return float(np.median(times)), times


def _states():
    fc.manual_seed(0)
    cnn = make_model()
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10))
    out = {}
    for name, model in (("digits CNN + Adam", cnn), ("MLP 784-512-512-10 + Adam", mlp)):
        params = {k: np.array(v) for k, v in model.named_parameters()}
        opt = optim.adam()
        out[name] = {"params": params, "buffers": {k: np.array(v) for k, v in
                                                   model.named_buffers()},
                     "opt": opt.init(params), "step": 100}
    return out


def _write_times(state, repeats):
    """Median seconds of np.savez of ``state``'s arrays, of a durable save, of a save
    without fsync (interleaved rounds; the folders a save removes are deleted by a thread,
    waited for outside the timing); and the megabytes."""
    leaves = [x for x in tree_flatten(state)[0] if isinstance(x, np.ndarray)]
    arrays = {f"a{i}": x for i, x in enumerate(leaves)}
    step = [0]
    with tempfile.TemporaryDirectory() as tmp:
        def ours(durable):
            step[0] += 1
            checkpoint.save(state, step[0], tmp, durable=durable)
        def savez_fsync():
            with open(os.path.join(tmp, "y.npz"), "wb") as f:
                np.savez(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
        fns = [lambda: np.savez(os.path.join(tmp, "x.npz"), **arrays), savez_fsync,
               lambda: ours(True), lambda: ours(False)]
        times = [[] for _ in fns]
        for r in range(repeats + 1):
            for fn, got in zip(fns, times, strict=True):
                checkpoint.wait_for_cleanup()
                t0 = time.perf_counter()
                fn()
                if r:
                    got.append(time.perf_counter() - t0)
        checkpoint.wait_for_cleanup()
    return [_spread(t) for t in times], sum(x.nbytes for x in leaves) / 2**20


def _spread(t):
    """The median and the interquartile range of ``t``."""
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return float(med), float(q1), float(q3)


def writes(repeats):
    rows = []
    for name, state in _states().items():
        (t_np, t_npf, t_d, t_f), mb = _write_times(state, repeats)

        def cell(t):
            return f"{t[0] * 1e3:.2f} ({t[1] * 1e3:.2f}-{t[2] * 1e3:.2f})"
        rows.append([name, f"{mb:.2f}", cell(t_np), cell(t_npf), cell(t_f),
                     f"{t_f[0] / t_np[0]:.2f}x", cell(t_d), f"{t_d[0] / t_np[0]:.2f}x",
                     f"{t_d[0] / t_npf[0]:.2f}x"])
    return rows


def bounded(quick):
    """Per variant, jobs (3; 1 with ``quick``) that each alternate rounds of steps without
    and with a timeout in one process (``_distributed_ddp._alternating``)."""
    steps, repeats, jobs = (5, 4, 1) if quick else (10, 30, 3)
    rows = []
    for variant, label in (("ddp25", "jitted DDP step"),
                           ("eager_after", "jitted grad + eager all_reduce"),
                           ("psum_only", "jitted psum of the gradient alone")):
        got = []
        for _ in range(jobs):
            os.environ["FC_BENCH_TIMEOUT"] = "alternate"
            os.environ.pop("FUNCTORCH_CORE_NO_MPI", None)
            r = _job(2, "cnn", variant, steps, repeats)
            os.environ["FUNCTORCH_CORE_NO_MPI"] = "1"
            got.append(r)
        best = min(got, key=lambda r: r["none"])
        lo, hi = best["ratio_spread"]
        rows.append([label, f"{best['none'] * 1e3:.3f}", f"{best['30'] * 1e3:.3f}",
                     f"{(best['ratio'] - 1) * 100:+.1f}% ({(lo - 1) * 100:+.1f}% to "
                     f"{(hi - 1) * 100:+.1f}%)",
                     " ".join(f"{(r['ratio'] - 1) * 100:+.1f}%" for r in got)])
    return rows


BOUNDED_TITLE = "Bounded collectives on the 2-rank DDP step (CNN, batch 64 per rank)"
BOUNDED_COLUMNS = ["step", "timeout=None ms", "timeout=30 ms", "cost (quartiles)",
                   "each job's cost"]
BOUNDED_NOTE = (
    "Bounded collectives: without a timeout a jitted step's all-reduce is a native "
    "MPI_Allreduce called from the step; with one it is MPI's non-blocking call polled to "
    "the deadline by native code in the same step (backends/llvm/bounded.py: MPI_Test, "
    "clock_gettime, MPI_Iprobe of the failure side channel; Python runs only to build an "
    "error), so a missing rank raises DistributedTimeoutError instead of hanging. The eager "
    "all_reduce is MPI's non-blocking call polled from Python. Each 2-rank job alternates "
    "rounds of 10 steps with the timeout lifted and set (mpi.set_timeout; which comes first "
    "alternates), 30 pairs of rounds: the cost is the median of the pairs' ratios (their "
    "quartiles in brackets), a round's time the slowest rank's. The row is the job with "
    "the fastest unbounded median of three; the last column is each job's median cost. "
    "The last row times the DDP step's reduction alone (a jitted psum of the CNN's 2858 "
    "float32 gradient values): its difference in microseconds is what the bounded call "
    "adds to a step, free of the compute's noise.")


def _rewrite_bounded(rows, argv):
    """Replace section 3's table and note in results/elastic.md (``--bounded-only
    --write``), keeping the other sections of the file as they were."""
    path = os.path.join(results_dir(), "elastic.md")
    with open(path) as f:
        text = f.read()
    start = text.index(f"## {BOUNDED_TITLE}")
    end = text.find("\n## ", start + 1)
    table = "\n".join([f"## {BOUNDED_TITLE}", "", *markdown_table(BOUNDED_COLUMNS, rows), ""])
    text = text[:start] + table + ("" if end < 0 else text[end:])
    old = next(p for p in text.split("\n\n") if p.startswith("Bounded collectives:"))
    when = header("elastic.py", argv).split(" on ", 1)[1].split(";")[0]
    text = text.replace(old, BOUNDED_NOTE + f" (Section 3 re-run by `benchmarks/elastic.py "
                        f"{' '.join(argv)}` on {when}.)")
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(path)} (section 3)", flush=True)


def main(argv):
    quick = "--quick" in argv
    t0 = time.time()
    if "--bounded-only" in argv:
        bd = bounded(quick)
        print("bounded", bd, f"({time.time() - t0:.0f} s in all)", flush=True)
        if wants_write(argv):
            _rewrite_bounded(bd, argv)
        return
    # the writes first: the recovery runs' deleted folders keep this disk busy for a while
    # (ext4 with discard), which a durable save's fsyncs would wait for
    wr = writes(5 if quick else 15)
    print("writes", wr, flush=True)
    med, all_times = recovery(1 if quick else 3)
    rec = [["digits CNN, 2 ranks, kill -9 at step 12, resume from step 10", f"{med:.2f}",
            " ".join(f"{t:.2f}" for t in all_times)]]
    print("recovery", rec, flush=True)
    bd = bounded(quick)
    print("bounded", bd, f"({time.time() - t0:.0f} s in all)", flush=True)
    if wants_write(argv):
        write("elastic", "elastic.py", [
            ("Recovery: a rank's death to the first step after resume",
             ["job", "median s", "each run s"], rec),
            ("Checkpoint write (one process)",
             ["state", "MB", "np.savez ms", "np.savez + fsync ms", "save ms (durable=False)",
              "/ np.savez", "save ms (durable)", "/ np.savez", "/ np.savez + fsync"], wr),
            (BOUNDED_TITLE, BOUNDED_COLUMNS, bd)],
            notes=timing_notes() + [
                "Recovery includes detecting the death (mpiexec sees the killed rank), "
                "killing the job, starting 2 new Python processes, importing, loading the "
                "checkpoint and compiling the step again (the disk cache makes that a load).",
                "Format 2: one raw part file per rank (a JSON header with an offsets table, "
                "then the arrays' bytes), written by one writev from views of the arrays and "
                "hashed (sha256) in a thread from the same buffers; np.savez pays a zip "
                "crc32 and per-member headers instead. A durable save fsyncs the part, the "
                "manifest, the step folder and the checkpoint folder (4 fsyncs against "
                "np.savez + fsync's 1: what a small state's durable ratio is made of); "
                "durable=False is as atomic against a killed process. Cells: median "
                "(interquartile range) in ms.",
                BOUNDED_NOTE],
            argv=argv)


if __name__ == "__main__":
    main(sys.argv[1:])
