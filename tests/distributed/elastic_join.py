"""A data-parallel job on uneven inputs that test_elastic.py launches under
``python -m functorch_core.distributed.run``: ``DistributedDataParallel.join()`` around each
epoch, rank r drawing batches of ``2 + r`` samples (so the ranks hold different batch
counts and the shorter ones join early), SGD on a linear model, a checkpoint every
``--every`` steps while every rank still trains. ``--batch B`` gives every rank batches of
``B`` (a checkpoint re-shards onto another world size only between loaders of one batch
size); the shares' sizes then make the batch counts uneven.

``checkpoint.save`` is a collective that a rank shadowing inside ``join()`` does not take
part in, so the ranks save only at steps that every rank reaches in its own loop: at the
start of each epoch (and after a resume) they exchange how many batches each has left
(``all_gather_object``) and save at step ``s`` only if ``s`` is within the fewest. Between
two epochs the parameters (and the step count) of ``ddp.last_joiner``, the rank that
trained longest, are broadcast, as torch's join leaves the module.

Logs as elastic_train.py does: ``LOG/consumed-<rank>-<restart>.jsonl`` (step, epoch, ids),
``LOG/resumed-<restart>.json``, ``LOG/final.npy`` (rank 0); ``--kill R:S`` makes rank R
send itself SIGKILL before its step S on the first run.
"""

import argparse
import json
import os
import signal

import numpy as np

import functorch_core as fc
import functorch_core.distributed as dist
from functorch_core import nn
from functorch_core.data import DataLoader
from functorch_core.distributed import checkpoint
from functorch_core.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser(description="DDP join() on uneven inputs, under the launcher")
for flag in ("--dir", "--log"):
    p.add_argument(flag, required=True)
for flag, default in (("--samples", 40), ("--epochs", 2), ("--every", 2), ("--batch", 0)):
    p.add_argument(flag, type=int, default=default)     # --batch 0: rank r's is 2 + r
p.add_argument("--timeout", type=float, default=20.0)
p.add_argument("--kill", default="")
args = p.parse_args()

dist.init(timeout=args.timeout)
rank, size = dist.rank(), dist.world_size()
restart = int(os.environ.get("FUNCTORCH_CORE_RESTART_COUNT", "0"))
kill = None
if args.kill and not restart:
    r, s = map(int, args.kill.split(":"))
    kill = s if r == rank else None

features = np.random.default_rng(0).standard_normal((args.samples, 4)).astype(np.float32)
target = (features @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.25)[:, None]


def make_loader():
    return DataLoader(np.arange(args.samples), batch_size=args.batch or 2 + rank, shuffle=True,
                      seed=3,
                      rank=rank, world_size=size)


fc.manual_seed(0)
ddp = DDP(nn.Linear(4, 1))
params = {k: np.array(v) for k, v in ddp.named_parameters()}


def loss(p, x, y):
    return ((fc.functional_call(ddp, (p, {}), (x,)) - y) ** 2).mean()


sgd = fc.jit(lambda p, x, y: {k: p[k] - 0.05 * g for k, g in fc.grad(loss)(p, x, y).items()})
loader = make_loader()
step, epoch, ahead = 0, 0, False
ckpt = checkpoint.load_latest(args.dir, any_world_size=True)
if ckpt is not None:
    params, step, epoch = ckpt.state["params"], ckpt.state["step"], ckpt.state["epoch"]
    loader.load_state_dict(ckpt.loader)
    ahead = ckpt.loader["epoch"] > epoch     # this rank's share of the epoch was used up
if rank == 0:
    with open(os.path.join(args.log, f"resumed-{restart}.json"), "w") as f:
        json.dump({"step": step, "world_size": size}, f)
log = open(os.path.join(args.log, f"consumed-{rank}-{restart}.jsonl"), "a")

while epoch < args.epochs:
    probe = make_loader()       # how many batches this rank has left in this epoch
    probe.load_state_dict(loader.state_dict())
    left = 0 if ahead else sum(1 for _ in probe)
    common = step + int(dist.all_reduce(np.int64(left), op="min"))  # every rank trains to here
    it = iter(()) if ahead else iter(loader)
    ahead = False
    with ddp.join():
        for ids in it:
            if step + 1 == kill:
                os.kill(os.getpid(), signal.SIGKILL)
            ids = np.asarray(ids)
            params = sgd(params, features[ids], target[ids])
            step += 1
            log.write(json.dumps({"step": step, "epoch": epoch, "ids": ids.tolist()}) + "\n")
            log.flush()
            if step % args.every == 0 and step <= common:
                checkpoint.save({"params": params, "step": step, "epoch": epoch}, step,
                                args.dir, loader=loader, durable=False)
    params, step = dist.broadcast((params, step), src=ddp.last_joiner)
    step = int(step)
    epoch += 1

if rank == 0:
    np.save(os.path.join(args.log, "final.npy"),
            np.concatenate([np.ravel(params[k]) for k in sorted(params)]))
