"""DistributedDataParallel and SyncBatchNorm on real ranks under mpiexec, against
single-process training on the same global batches."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mpirun import needs_mpi, run_ranks

ROOT = Path(__file__).resolve().parents[2]

# Shared by every job: a small MLP, deterministic global batches, DDP training (a jitted
# step through functional_call) and its single-process references.
HELPERS = '''
import numpy as np
import functorch_core as fc
import functorch_core.distributed as dist
from functorch_core import nn, optim
from functorch_core.nn.parallel import DistributedDataParallel as DDP

dist.init(timeout=30)
RANK, WORLD = dist.rank(), dist.world_size()
EPS = float(np.finfo(np.float32).eps)


def mlp(norm=None, seed=0):
    fc.manual_seed(seed)
    # no bias before a norm: its gradient is 0 up to rounding, which Adam would normalise
    layers = [nn.Linear(6, 8, bias=norm is None)] + ([norm(8)] if norm else []) + [
        nn.ReLU(), nn.Linear(8, 3)]
    return nn.Sequential(*layers)


def batches(steps, batch, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, WORLD * batch, 6)).astype(np.float32),
            rng.standard_normal((steps, WORLD * batch, 3)).astype(np.float32))


def mine(a, r=None):
    """Rank r's slice of a global batch (rows r*B:(r+1)*B)."""
    b = a.shape[0] // WORLD
    r = RANK if r is None else r
    return a[r * b:(r + 1) * b]


def loss_of(model):
    def loss(params, buffers, x, y):
        out = fc.functional_call(model, (params, buffers), (x,))
        return ((out - y) ** 2).mean(), buffers
    return loss


def state(model):
    return ({k: np.array(v) for k, v in model.named_parameters()},
            {k: np.array(v) for k, v in model.named_buffers()})


def plain(d):
    return {k.removeprefix("module."): v for k, v in d.items()}


def train(model, opt, xs, ys, shard=mine):
    """Train through a jitted step on ``shard`` of each global batch: a DDP on this rank's,
    or one process on the concatenated batches (``shard=None``: SyncBatchNorm's reference)."""
    params, buffers = state(model)
    ost = opt.init(params)
    loss = loss_of(model)

    @fc.jit
    def step(params, buffers, ost, x, y):
        (_, buffers), g = fc.value_and_grad(loss, has_aux=True)(params, buffers, x, y)
        params, ost = opt.update(g, ost, params)
        return params, buffers, ost
    for x, y in zip(xs, ys, strict=True):
        params, buffers, ost = step(params, buffers, ost, *((x, y) if shard is None else
                                                             (shard(x), shard(y))))
    return plain(params), plain(buffers)


def train_per_rank_stats(model, opt, xs, ys):
    """One process, each rank's batch through the model on its own (BatchNorm's statistics
    per rank's batch), the mean of the ranks' gradients; the buffers are rank 0's."""
    params, buffers = state(model)
    ost = opt.init(params)
    vg = fc.value_and_grad(loss_of(model), has_aux=True)
    for x, y in zip(xs, ys, strict=True):
        gs, bufs = [], []
        for r in range(WORLD):
            b = {k: v.copy() for k, v in buffers.items()}
            (_, b), g = vg(params, b, mine(x, r), mine(y, r))
            gs.append(g)
            bufs.append(b)
        g = {k: sum(gr[k] for gr in gs) / WORLD for k in params}
        params, ost = opt.update(g, ost, params)
        buffers = bufs[0]
    return params, buffers


def worst(got, want, steps):
    """The largest difference relative to max(1, |want|), and the tolerance: 64 float32 eps
    per step (each step's gradient is summed in another order)."""
    err = max((float(np.max(np.abs(np.asarray(got[k], np.float64) - want[k])))
               / max(1.0, float(np.max(np.abs(want[k])))) for k in want), default=0.0)
    return err, 64 * EPS * steps


def close(got, want, steps):
    err, tol = worst(got, want, steps)
    return bool(err <= tol) or f"{err:.3g} > {tol:.3g}"
'''


def _job(body, n, timeout=120, args=()):
    return run_ranks(HELPERS + textwrap.dedent(body), n=n, timeout=timeout, args=args)


TRAINING = '''
import sys
STEPS = 4
xs, ys = batches(STEPS, 5)
results = []
OPTS = {"sgd": optim.sgd(lr=0.1, momentum=0.9), "adam": optim.adam(lr=1e-2)}
for config in sys.argv[1:]:
    norm_name, opt_name = config.split("/")
    norm, opt = (None if norm_name == "none" else getattr(nn, norm_name)), OPTS[opt_name]
    if True:
        ddp = DDP(mlp(norm, seed=RANK))            # each rank draws its own; rank 0's wins
        p, b = train(ddp, opt, xs, ys)
        if norm_name == "SyncBatchNorm":
            rp, rb = train(mlp(nn.BatchNorm1d, seed=0), opt, xs, ys, shard=None)
        else:
            rp, rb = train_per_rank_stats(mlp(norm, seed=0), opt, xs, ys)
        ok_b = close(b, rb, STEPS) if RANK == 0 or norm_name == "SyncBatchNorm" else True
        results.append([norm_name, opt_name, close(p, rp, STEPS), ok_b])
report(results)
'''


@needs_mpi
@pytest.mark.parametrize("n, configs", [
    (2, ["BatchNorm1d/sgd", "BatchNorm1d/adam", "SyncBatchNorm/sgd", "SyncBatchNorm/adam"]),
    (3, ["none/adam", "BatchNorm1d/sgd", "SyncBatchNorm/adam"])])
def test_training_equals_single_process(n, configs):
    """SGD and Adam; no norm, BatchNorm (per-rank statistics) and SyncBatchNorm (global):
    each rank's final parameters (and buffers) equal one process on the global batches."""
    out = _job(TRAINING, n, args=configs)
    assert [len(o[0]) for o in out] == [len(configs)] * n
    for r in range(n):
        for norm, opt, ok_p, ok_b in out[r][0]:
            assert ok_p is True, (r, norm, opt, "params", ok_p)
            assert ok_b is True, (r, norm, opt, "buffers", ok_b)


@needs_mpi
def test_wrapping_no_sync_join_and_buckets():
    out = _job('''
    from functorch_core.nn.parallel import plan_buckets
    # wrapping broadcasts rank 0's parameters (in place, every rank's own arrays)
    model = mlp(nn.BatchNorm1d, seed=RANK)
    w = model[0].weight
    model[1].running_mean[...] = RANK + 1.0
    ddp = DDP(model, bucket_cap_mb=100 / 2 ** 20)      # 100-byte buckets: several
    ref = mlp(nn.BatchNorm1d, seed=0)
    report(["wrap", ddp.module[0].weight is w and np.array_equal(w, ref[0].weight)
            and bool(np.all(model[1].running_mean == 1.0))])
    report(["buckets", [list(b) for b in ddp.buckets()]])

    # grad through a plain call of the module pytree, jitted: the rank mean
    x, y = batches(1, 4)
    x, y = x[0], y[0]
    f = lambda m, x, y: ((m(x) - y) ** 2).mean()
    g = fc.jit(fc.grad(f))(DDP(mlp(seed=RANK), bucket_cap_mb=100 / 2 ** 20), mine(x), mine(y))
    local = [fc.grad(f)(mlp(seed=0), mine(x, r), mine(y, r)) for r in range(WORLD)]
    ok = all(np.allclose(getattr(g.module[i], k), sum(getattr(l[i], k) for l in local) / WORLD,
                         rtol=1e-5, atol=1e-6) for i in (0, 2) for k in ("weight", "bias"))
    report(["plain call grad", ok])

    # SyncBatchNorm with an empty batch on rank 1: finite, and rank 0's statistics alone
    ddp = DDP(mlp(nn.SyncBatchNorm, seed=0))
    x, y = batches(1, 4, seed=3)
    n_mine = 4 if RANK == 0 else 0
    xb, yb = x[0][:n_mine], y[0][:n_mine]
    f = lambda m, x, y: ((m(x) - y) ** 2).sum() / 4
    g = fc.jit(fc.grad(f))(ddp, xb, yb)
    ref = mlp(nn.BatchNorm1d, seed=0)
    want = fc.grad(f)(ref, x[0][:4], y[0][:4])
    leaves = fc.tree_leaves(g)
    report(["empty batch", all(bool(np.all(np.isfinite(v))) for v in leaves) and all(
        np.allclose(a, b / WORLD, rtol=1e-5, atol=1e-6)
        for a, b in zip(leaves, fc.tree_leaves(want), strict=True))
        and bool(np.allclose(ddp.module[1].running_mean, ref[1].running_mean, atol=1e-6))])

    # a submodule the forward never runs (one parameter per bucket): an error naming it, or
    # (find_unused_parameters)
    # its zero gradient averaged with the rest; static_graph keeps the first plan
    class Partial(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(6, 3), nn.Linear(6, 3)

        def forward(self, x):
            return self.used(x)
    x, y = batches(1, 4, seed=4)
    f = lambda m, x, y: ((m(x) - y) ** 2).mean()
    try:
        fc.grad(f)(DDP(Partial(), bucket_cap_mb=1e-6), mine(x[0]), mine(y[0]))
        report(["unused error", "no error"])
    except RuntimeError as e:
        report(["unused error", "unused.weight" in str(e) and "find_unused_parameters" in str(e)])
    fc.manual_seed(0)
    m = DDP(Partial(), find_unused_parameters=True, static_graph=True)
    fc.manual_seed(0)
    ref = Partial()
    gs = [fc.jit(fc.grad(f))(m, mine(x[0]), mine(y[0])) for _ in range(2)]
    local = [fc.grad(f)(ref, mine(x[0], r), mine(y[0], r)) for r in range(WORLD)]
    report(["unused averaged", all(
        np.allclose(g.module.used.weight, sum(l.used.weight for l in local) / WORLD,
                    rtol=1e-5, atol=1e-6) and not np.any(g.module.unused.weight) for g in gs)])

    # no_sync: each rank's own gradients; their sum over micro-batches, reduced once,
    # equals the global gradient summed over the micro-batches
    net = DDP(mlp(seed=0), bucket_cap_mb=100 / 2 ** 20)
    params, _ = state(net)
    loss = lambda p, x, y: loss_of(net)(p, {}, x, y)[0]
    xs, ys = batches(3, 4, seed=5)
    with net.no_sync():
        local_grad = fc.jit(fc.grad(loss))
        acc = None
        for x, y in zip(xs, ys):
            g = local_grad(params, mine(x), mine(y))
            acc = g if acc is None else {k: acc[k] + g[k] for k in g}
    total = net.reduce_gradients(acc)
    base = mlp(seed=0)
    bp, _ = state(base)
    bloss = lambda p, x, y: loss_of(base)(p, {}, x, y)[0]
    mine_sum = {k: sum(fc.grad(bloss)(bp, mine(x), mine(y))[k] for x, y in zip(xs, ys))
                for k in bp}
    glob = {k: sum(fc.grad(bloss)(bp, x, y)[k] for x, y in zip(xs, ys)) for k in bp}
    report(["no_sync local", all(np.allclose(acc["module." + k], mine_sum[k], rtol=1e-5,
                                             atol=1e-6) for k in bp)])
    report(["no_sync total", all(np.allclose(total["module." + k], glob[k], rtol=1e-5,
                                             atol=1e-6) for k in bp)])

    # join: rank r holds 3 - 2*(r > 0) batches; steps after a rank ran out reduce only
    # the others' gradients, divided by the world size (torch's default) or by the count
    for by_world in (True, False):
        net = DDP(mlp(seed=0), bucket_cap_mb=100 / 2 ** 20)
        params, _ = state(net)
        loss = lambda p, x, y: loss_of(net)(p, {}, x, y)[0]
        xs, ys = batches(3, 4, seed=7)
        n_mine = 3 if RANK == 0 else 1
        lr = 0.1
        with net.join(divide_by_initial_world_size=by_world):
            step = fc.jit(lambda p, x, y: {k: p[k] - lr * v
                                           for k, v in fc.grad(loss)(p, x, y).items()})
            for x, y in list(zip(xs, ys))[:n_mine]:
                params = step(params, mine(x), mine(y))
        params = dist.broadcast(params, src=net.last_joiner)
        ref, _ = state(base)
        for t in range(3):
            active = [r for r in range(WORLD) if t < (3 if r == 0 else 1)]
            gs = [fc.grad(bloss)(ref, mine(xs[t], r), mine(ys[t], r)) for r in active]
            div = WORLD if by_world else len(active)
            ref = {k: ref[k] - lr * sum(g[k] for g in gs) / div for k in ref}
        report(["join", by_world, net.last_joiner,
                all(np.allclose(params["module." + k], ref[k], rtol=1e-5, atol=1e-6)
                    for k in ref)])
    ''', n=2)
    for r in range(2):
        got = {tuple(e[:-1]) if e[0] == "join" else e[0]: e[-1] for e in out[r]}
        assert got["wrap"] is True, r
        assert len(got["buckets"]) > 1 and got["buckets"][0][0] == "3.bias", \
            got["buckets"]
        assert got["plain call grad"] is True, r
        assert got["empty batch"] is True, r
        assert got["unused error"] is True and got["unused averaged"] is True, r
        assert got["no_sync local"] is True and got["no_sync total"] is True, r
        assert got[("join", True, 0)] is True and got[("join", False, 0)] is True, (r, got)


def test_plan_buckets_reverse_order_by_dtype_and_cap():
    import numpy as np

    from functorch_core.nn.parallel import plan_buckets
    named = [("a", np.zeros(10, np.float32)), ("b", np.zeros(30, np.float32)),
             ("c", np.zeros(5, np.float64)), ("d", np.zeros(20, np.float32))]
    # 100 bytes: d (80) stays open, b (120) closes it; c is float64; a opens the next
    # float32 bucket; the open ones follow in the order they were opened
    assert plan_buckets(named, 100) == (("d", "b"), ("c",), ("a",))
    assert plan_buckets(named, 1 << 20) == (("d", "b", "a"), ("c",))
    assert plan_buckets(named, 1) == (("d",), ("c",), ("b",), ("a",))


def test_world_of_one_sync_batchnorm_is_batchnorm_and_ddp_is_the_module():
    # a child process: the world must not be joined inside pytest
    src = textwrap.dedent('''
        import numpy as np
        import functorch_core as fc
        from functorch_core import nn
        from functorch_core.nn.parallel import DistributedDataParallel as DDP
        fc.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(),
                          nn.Flatten(), nn.Linear(3 * 16, 2))
        bn = m[1]
        s = nn.SyncBatchNorm.convert_sync_batchnorm(m)
        assert type(s[1]) is nn.SyncBatchNorm and s[1].weight is bn.weight
        assert s[1].running_mean is bn.running_mean
        ref = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(),
                            nn.Flatten(), nn.Linear(3 * 16, 2))
        ref.load_state_dict(m.state_dict())
        x = np.random.default_rng(0).standard_normal((4, 1, 6, 6)).astype(np.float32)
        f = lambda m, x: (m(x) ** 2).sum()
        ddp = DDP(s)
        assert ddp.module is s and ddp.state_dict().keys() == {"module." + k for k in
                                                               s.state_dict()}
        g1, g2 = fc.grad(f)(ddp, x), fc.grad(f)(ref, x)
        assert all(np.array_equal(a, b) for a, b in
                   zip(fc.tree_leaves(g1), fc.tree_leaves(g2), strict=True))
        assert np.array_equal(s[1].running_var, ref[1].running_var)
        ddp.load_state_dict(ref.state_dict())                  # plain keys too
        print("ok")
    ''')
    out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                         timeout=120, cwd=ROOT,
                         env={**os.environ, "FUNCTORCH_CORE_NO_MPI": "1"})
    assert out.stdout.strip() == "ok", out.stderr


@needs_mpi
def test_example_ddp_digits_on_two_ranks():
    out = run_ranks((ROOT / "examples" / "ddp_digits.py").read_text(), n=2, timeout=180,
                    args=(1,), cwd=ROOT / "examples",
                    env={"PYTHONPATH": str(ROOT / "examples")})
    assert out == [[], []]
