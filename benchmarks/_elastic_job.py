"""The job benchmarks/elastic.py launches to time a recovery: the digits CNN of
examples/cnn_digits.py trained data-parallel (``DistributedDataParallel``) on random 8x8
images, a checkpoint every ``EVERY`` steps. On the first run rank 1 writes the time and
sends itself SIGKILL at step ``KILL``; after the restart rank 0 writes the time its first
step completed. ``python _elastic_job.py OUT`` under the launcher."""

import os
import signal
import sys
import time

import numpy as np
from cnn_digits import make_model

import functorch_core as fc
import functorch_core.distributed as dist
from functorch_core import optim
from functorch_core.data import DataLoader
from functorch_core.distributed import checkpoint
from functorch_core.nn import functional as F
from functorch_core.nn.parallel import DistributedDataParallel

EVERY, KILL, STEPS, BATCH = 5, 12, 16, 64
out = sys.argv[1]
dist.init(timeout=30)
rank, restart = dist.rank(), int(os.environ.get("FUNCTORCH_CORE_RESTART_COUNT", "0"))
fc.manual_seed(0)
model = DistributedDataParallel(make_model())
images = np.random.default_rng(0).random((4096, 1, 8, 8), np.float32)
labels = np.random.default_rng(1).integers(0, 10, 4096)
loader = DataLoader(np.arange(4096), batch_size=BATCH, shuffle=True, seed=0)
opt = optim.sgd(lr=0.01, momentum=0.9)
params = {k: np.array(v) for k, v in model.named_parameters()}
buffers = {k: np.array(v) for k, v in model.named_buffers()}
ost, step = opt.init(params), 0
ckpt = checkpoint.load_latest(os.path.join(out, "ckpt"))
if ckpt is not None:
    params, buffers, ost, step = (ckpt.state[k] for k in ("params", "buffers", "opt", "step"))
    loader.load_state_dict(ckpt.loader)


def loss_fn(params, buffers, x, y):
    return F.cross_entropy(fc.functional_call(model, (params, buffers), (x,)), y), buffers


@fc.jit
def train_step(params, buffers, ost, x, y):
    (_, buffers), g = fc.value_and_grad(loss_fn, has_aux=True)(params, buffers, x, y)
    params, ost = opt.update(g, ost, params)
    return params, buffers, ost


for ids in loader:
    if restart == 0 and rank == 1 and step + 1 == KILL:
        with open(os.path.join(out, "death"), "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    params, buffers, ost = train_step(params, buffers, ost, images[ids], labels[ids])
    step += 1
    if restart and rank == 0 and not os.path.exists(os.path.join(out, "resumed")):
        with open(os.path.join(out, "resumed"), "w") as f:
            f.write(repr(time.time()))
    if step % EVERY == 0:
        checkpoint.save({"params": params, "buffers": buffers, "opt": ost, "step": step},
                        step, os.path.join(out, "ckpt"), loader=loader)
    if step == STEPS:
        break
