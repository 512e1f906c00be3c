"""The digits CNN (examples/cnn_digits.py) trained data-parallel through
``DistributedDataParallel``: each rank reads its shard of every global batch through the
``DataLoader``, its BatchNorm is a ``SyncBatchNorm`` (statistics of the global batch), and
the gradient is averaged over the ranks inside the jitted backward pass.

At the end every rank checks that its final parameters and buffers equal a single-process
run over the same global batches (the ranks' batches of each step, concatenated), to
float32 rounding, and exits non-zero otherwise.

Run: mpiexec -n 2 python examples/ddp_digits.py [EPOCHS]   (or plain python: a world of one)
"""

import sys
import time

import numpy as np
from _digits import load_digits
from cnn_digits import make_model, make_train_step

import functorch_core as fc
import functorch_core.distributed as dist
from functorch_core import nn, optim
from functorch_core.data import DataLoader
from functorch_core.nn.parallel import DistributedDataParallel

BATCH, LR, MOMENTUM = 64, 0.05, 0.9


class Digits:
    """The training images as a map-style dataset of ``(image, label)``."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def loader(data, rank=None, world_size=None):
    """The batches of ``rank`` of ``world_size`` (default: this rank of the world)."""
    return DataLoader(data, batch_size=BATCH, shuffle=True, drop_last=True, seed=0,
                      rank=rank, world_size=world_size)


def train(model, batches, epochs, log=None):
    """Train ``model`` on ``batches(epoch)``; its final parameters and buffers, and the
    number of steps. ``log(epoch, mean_loss)`` is called after each epoch."""
    params = {k: np.array(v) for k, v in model.named_parameters()}
    buffers = {k: np.array(v) for k, v in model.named_buffers()}
    opt = optim.sgd(lr=LR, momentum=MOMENTUM)
    opt_state = opt.init(params)
    step = make_train_step(model, opt)      # works for the DDP module and the plain one
    model.train()
    steps = 0
    for epoch in range(epochs):
        losses = []
        for x, y in batches(epoch):
            params, buffers, opt_state, loss = step(params, buffers, opt_state,
                                                    x.reshape(-1, 1, 8, 8), y)
            losses.append(float(loss))
            steps += 1
        if log is not None:
            log(epoch, float(np.mean(losses)))
    return {**params, **buffers}, steps


def main(epochs=2):
    dist.init(timeout=120)
    rank, world = dist.rank(), dist.world_size()
    x_train, y_train, _, _ = load_digits()
    data = Digits(x_train, y_train)

    fc.manual_seed(rank)          # different draws on each rank: wrapping broadcasts rank 0's
    ddp = DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(make_model()))
    own = loader(data)              # this rank's shard: the DataLoader reads the world

    def own_batches(epoch):
        own.set_epoch(epoch)
        return own

    t0 = time.perf_counter()
    state, steps = train(ddp, own_batches, epochs, lambda epoch, loss: print(
        f"rank {rank}/{world} epoch {epoch}: mean loss {loss:.4f}", flush=True))
    print(f"rank {rank}: {steps} steps in {time.perf_counter() - t0:.2f} s", flush=True)

    # the reference: one process, the plain model, each step on the ranks' batches together
    fc.manual_seed(0)
    reference = make_model()
    shards = [loader(data, r, world) for r in range(world)]

    def global_batches(epoch):
        for s in shards:
            s.set_epoch(epoch)
        for parts in zip(*shards, strict=True):
            yield (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    ref_state, ref_steps = train(reference, global_batches, epochs)
    assert ref_steps == steps, (ref_steps, steps)

    # Each step's gradient is summed in a different order (per rank, then over the ranks),
    # a relative difference of a few float32 eps per sum; over `steps` small SGD steps these
    # add up, so allow 64 eps per step, relative to each tensor's largest value.
    eps = np.finfo(np.float32).eps
    tol = 64 * eps * steps
    worst = 0.0
    for k, v in ref_state.items():
        got = state["module." + k]
        scale = max(1.0, float(np.max(np.abs(v))))
        err = float(np.max(np.abs(got.astype(np.float64) - v))) / scale if v.size else 0.0
        worst = max(worst, err)
        if not err <= tol:
            print(f"rank {rank}: {k} differs from the single-process run by {err:.3g} "
                  f"(relative; tolerance {tol:.3g})", flush=True)
            return 1
    print(f"rank {rank}: final parameters and buffers equal the single-process run "
          f"(largest relative difference {worst:.3g}, tolerance {tol:.3g})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:2])))
