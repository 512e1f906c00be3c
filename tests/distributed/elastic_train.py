"""A small deterministic data-parallel training job that test_elastic.py launches under
``python -m functorch_core.distributed.run``: least squares on features made from sample
ids, SGD with momentum, a DataLoader over the ids, a checkpoint every ``--every`` steps.

Each rank logs what it consumed to ``LOG/consumed-<rank>-<restart>.jsonl`` (one line per
step: step, epoch, ids) and the step it resumed from to ``LOG/resumed-<restart>.json``;
rank 0 writes the final parameters to ``LOG/final.npy``. On the first run only (restart
0) the job can be told to fail at a step: ``--kill R:S`` (rank R sends itself SIGKILL),
``--raise R:S`` (rank R raises ValueError), ``--sleep R:S`` (rank R sleeps 60 s; a rank
whose collective times out logs the time it waited and the message to
``LOG/timeout-<rank>.json``), ``--kill-in-save R:S`` (rank R is killed inside the save of
step S, after writing its part and before the manifest).
"""

import argparse
import json
import os
import signal
import time

import numpy as np
from functorch_core.backends import mpi

import functorch_core.distributed as dist
from functorch_core.data import DataLoader
from functorch_core.distributed import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--dir", required=True)
p.add_argument("--log", required=True)
p.add_argument("--samples", type=int, default=40)
p.add_argument("--batch", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--every", type=int, default=2)
p.add_argument("--timeout", type=float, default=10.0)
p.add_argument("--kill", default="")
p.add_argument("--raise", dest="raise_", default="")
p.add_argument("--sleep", default="")
p.add_argument("--kill-in-save", default="")
p.add_argument("--step-time", type=float, default=0.0)
args = p.parse_args()

dist.init(timeout=args.timeout)
rank, size = dist.rank(), dist.world_size()
restart = int(os.environ.get("FUNCTORCH_CORE_RESTART_COUNT", "0"))


def at(spec):
    """The step at which this rank fails as ``spec`` ("R:S") says, on the first run."""
    if not spec or restart:
        return None
    r, s = map(int, spec.split(":"))
    return s if r == rank else None


features = np.random.default_rng(0).standard_normal((args.samples, 4))
target = features @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.25
loader = DataLoader(np.arange(args.samples), batch_size=args.batch, shuffle=True, seed=3,
                    rank=rank, world_size=size)
state = {"w": np.zeros(4), "b": np.zeros(()), "mw": np.zeros(4), "mb": np.zeros(()),
         "step": 0, "epoch": 0}
ckpt = checkpoint.load_latest(args.dir, any_world_size=True)
ahead = False      # this rank had ended its share of the epoch the checkpoint is in
if ckpt is not None:
    state = ckpt.state
    loader.load_state_dict(ckpt.loader)
    ahead = ckpt.loader["epoch"] > state["epoch"]
if rank == 0:
    with open(os.path.join(args.log, f"resumed-{restart}.json"), "w") as f:
        json.dump({"step": state["step"], "world_size": size}, f)
log = open(os.path.join(args.log, f"consumed-{rank}-{restart}.jsonl"), "a")
kill, fail, sleep = at(args.kill), at(args.raise_), at(args.sleep)
kill_in_save = at(args.kill_in_save)
if kill_in_save is not None:
    gather = mpi.all_gather

    def dying_gather(x, what=""):     # the save's exchange of hashes: its part is written
        if "checkpoint.save" in what and state["step"] == kill_in_save:
            os.kill(os.getpid(), signal.SIGKILL)
        return gather(x, what)
    mpi.all_gather = dying_gather


def reduce(tree):
    start = time.monotonic()
    try:
        return dist.all_reduce(tree)
    except dist.DistributedTimeoutError as e:
        # written whole or not at all: the first rank to raise aborts the job, which may
        # kill this one mid-write
        path = os.path.join(args.log, f"timeout-{rank}.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"elapsed": time.monotonic() - start, "message": str(e)}, f)
        os.replace(path + ".tmp", path)
        raise


while state["epoch"] < args.epochs:
    it = iter(()) if ahead else iter(loader)
    ahead = False
    while True:
        ids = next(it, None)
        step = state["step"] + 1
        if step == kill:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == fail:
            raise ValueError(f"rank {rank} fails on purpose at step {step}")
        if step == sleep:
            time.sleep(60)
        time.sleep(args.step_time)
        ids = np.zeros(0, np.int64) if ids is None else np.asarray(ids)
        x, y = features[ids], target[ids]
        err = x @ state["w"] + state["b"] - y
        total = reduce({"gw": x.T @ err, "gb": err.sum(), "n": np.float64(len(ids))})
        if total["n"] == 0:
            break
        gw, gb = total["gw"] / total["n"], total["gb"] / total["n"]
        state["mw"] = 0.9 * state["mw"] + gw
        state["mb"] = 0.9 * state["mb"] + gb
        state["w"] = state["w"] - 0.05 * state["mw"]
        state["b"] = state["b"] - 0.05 * state["mb"]
        state["step"] = step
        log.write(json.dumps({"step": step, "epoch": state["epoch"],
                              "ids": ids.tolist()}) + "\n")
        log.flush()
        if step % args.every == 0:
            checkpoint.save(state, step, args.dir, loader=loader, durable=False)
    state["epoch"] += 1

if rank == 0:
    np.save(os.path.join(args.log, "final.npy"), np.append(state["w"], state["b"]))
