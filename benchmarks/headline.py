"""The performance issue's headline table: seven workloads through functorch_core, JAX and
torch in one process, quiet and (``--loaded``) beside two busy-looping processes.

Run from the repository root: ``python3 benchmarks/headline.py [--quick] [--loaded]
[--only NAME,NAME]``. Rows (float32; JAX ``jit``; torch eager / torch.func / torch.jit on
one thread, NumPy's OpenBLAS on one thread unless OPENBLAS_NUM_THREADS is set):

- ``per-sample grads CNN``: the functorch tutorial CNN (conv 1->32->64 3x3, max-pool 2,
  linear 9216->128->10), ``vmap(grad)`` over a batch of 64;
- ``frozen CNN b1``: that CNN's batch-1 inference, frozen (``fc.freeze``; JAX: ``jit`` of
  the forward with the weights closed over; torch: ``torch.jit.freeze(trace)``);
- ``loaded export CNN b1``: the same from a saved and reloaded artifact (``fc.export`` /
  ``load_exported``; ``jax.export`` serialised and deserialised; ``torch.jit.save/load``);
- ``transformer layer``: ``TransformerEncoderLayer(256, 8, 1024, dropout=0,
  batch_first=True)`` on (16, 128, 256), gradient of the mean square output w.r.t. every
  parameter;
- ``ensemble``: 16 MLPs 128-256-256-10 stacked with ``stack_module_state``, ``vmap`` over
  the models on a shared batch of 512;
- ``hvp``: Hessian-vector product ``jvp(grad)`` of a 784-256-10 MLP's cross-entropy, batch 128;
- ``rfft grad``: ``grad`` of ``sum(abs(rfft(x))**2)``, x (256, 4096).

Per implementation: the median over rounds of each round's median time (the rounds
interleave the implementations, so a load change falls on all) and the spread of the
round medians. Every row checks that the implementations agree before it times them.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import tempfile
from contextlib import nullcontext

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _timing
from _timing import Load, median_time, optional_import
from nn import CNN, _jax_cnn_loss, _jax_conv, _jax_max_pool2

import functorch_core as fc
from functorch_core import nn
from functorch_core import numpy as fnp
from functorch_core.nn import functional as F

QUICK = "--quick" in sys.argv
ROUNDS = 3 if QUICK else 5
REPEATS = 3 if QUICK else 7
MIN_TIME = 0.05 if QUICK else 0.3     # sub-millisecond rows: a median over this long


def _close(name, got, want, rtol, atol=0.0):
    for g, w in zip(fc.tree_leaves(got), fc.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=rtol, atol=atol, err_msg=name)


def _tutorial_cnn(torch):
    fc.manual_seed(0)
    model = CNN()
    params = {k: np.array(v) for k, v in model.named_parameters()}
    tmodel = None
    if torch is not None:
        tmodel = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
            torch.nn.Linear(9216, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10),
            torch.nn.LogSoftmax(1))
        names = {"0": "conv1", "2": "conv2", "6": "fc1", "8": "fc2"}
        tmodel.load_state_dict({k: torch.tensor(params[names[k.split(".")[0]] + "." +
                                                       k.split(".")[1]])
                                for k in tmodel.state_dict()})
    return model, params, tmodel


def _jax_cnn_forward(p, x):
    import jax
    h = jax.nn.relu(_jax_conv(x, p["conv1.weight"], p["conv1.bias"], "VALID"))
    h = _jax_max_pool2(jax.nn.relu(_jax_conv(h, p["conv2.weight"], p["conv2.bias"], "VALID")))
    h = jax.nn.relu(h.reshape(x.shape[0], -1) @ p["fc1.weight"].T + p["fc1.bias"])
    return jax.nn.log_softmax(h @ p["fc2.weight"].T + p["fc2.bias"], axis=1)


def per_sample_cnn(torch, jax):
    model, params, tmodel = _tutorial_cnn(torch)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    t = rng.integers(0, 10, 64)

    def loss(p, xi, ti):
        return F.nll_loss(fc.functional_call(model, p, (xi[None],)), ti[None])
    step = fc.jit(fc.vmap(fc.grad(loss), in_dims=(None, 0, 0)))
    runs, want = {"functorch_core": lambda: step(params, x, t)}, step(params, x, t)
    if jax is not None:
        jstep = jax.jit(jax.vmap(jax.grad(_jax_cnn_loss), in_axes=(None, 0, 0)))
        jp = {k: jax.numpy.asarray(v) for k, v in params.items()}
        jx, jt = jax.numpy.asarray(x), jax.numpy.asarray(t)
        _close("per-sample CNN: JAX", jstep(jp, jx, jt), want, 2e-3, 2e-5)
        runs["JAX"] = lambda: jax.block_until_ready(jstep(jp, jx, jt))
    if torch is not None:
        from torch.func import functional_call, grad, vmap
        tp = {k: v.detach() for k, v in tmodel.named_parameters()}
        tx, tt = torch.tensor(x), torch.tensor(t)

        def tloss(p, xi, ti):
            return torch.nn.functional.nll_loss(functional_call(tmodel, p, (xi[None],)),
                                                ti[None])
        tstep = vmap(grad(tloss), in_dims=(None, 0, 0))
        got = tstep(tp, tx, tt)
        _close("per-sample CNN: torch", [got[k] for k in tp],
               [want[n] for n in ("conv1.weight", "conv1.bias", "conv2.weight",
                                  "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight",
                                  "fc2.bias")], 2e-3, 2e-5)
        runs["torch"] = lambda: tstep(tp, tx, tt)
    return runs


def _frozen_cnn(torch, jax, loaded):
    model, params, tmodel = _tutorial_cnn(torch)
    model.eval()
    x = np.random.default_rng(1).standard_normal((1, 1, 28, 28)).astype(np.float32)
    frozen = fc.freeze(model)
    want = model(x)
    tmp = tempfile.mkdtemp(prefix="fc-headline-")
    if loaded:
        path = os.path.join(tmp, "cnn.fcx")
        fc.export(frozen, x).save(path)
        ours = fc.load_exported(path)
    else:
        ours = frozen
    _close("frozen CNN: ours", ours(x), want, 1e-4, 1e-5)
    runs = {"functorch_core": lambda: ours(x)}
    if jax is not None:
        jp = {k: jax.numpy.asarray(v) for k, v in params.items()}
        jf = jax.jit(lambda x: _jax_cnn_forward(jp, x))
        jx = jax.numpy.asarray(x)
        if loaded:
            from jax import export as jexport
            exported = jexport.export(jf)(jax.ShapeDtypeStruct(x.shape, x.dtype))
            try:
                jcall = jexport.deserialize(bytearray(exported.serialize())).call
            except ImportError as err:      # serialising needs flatbuffers
                print(f"  (jax.export: {err}; timing the in-memory export's call instead)")
                jcall = exported.call
            jcall(jx)
        else:
            jcall = jf
        _close("frozen CNN: JAX", jcall(jx), want, 1e-4, 1e-5)
        runs["JAX"] = lambda: jax.block_until_ready(jcall(jx))
    if torch is not None:
        tmodel.eval()
        tx = torch.tensor(x)
        with torch.no_grad():
            traced = torch.jit.freeze(torch.jit.trace(tmodel, tx))
            if loaded:
                path = os.path.join(tmp, "cnn.pt")
                torch.jit.save(traced, path)
                traced = torch.jit.load(path)
            traced(tx)
            traced(tx)
            _close("frozen CNN: torch", traced(tx), want, 1e-4, 1e-5)

        def tcall():
            with torch.no_grad():
                return traced(tx)
        runs["torch"] = tcall
    return runs


def frozen_cnn(torch, jax):
    return _frozen_cnn(torch, jax, loaded=False)


def loaded_export_cnn(torch, jax):
    return _frozen_cnn(torch, jax, loaded=True)


def _jax_layer_norm(x, w, b):
    import jax
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * w + b


def _jax_encoder_layer(p, x, heads):
    """torch's post-norm TransformerEncoderLayer (relu, no dropout, batch first) in JAX."""
    import jax
    n, length, e = x.shape
    d = e // heads
    qkv = x @ p["self_attn.in_proj_weight"].T + p["self_attn.in_proj_bias"]
    q, k, v = (a.reshape(n, length, heads, d).transpose(0, 2, 1, 3)
               for a in jax.numpy.split(qkv, 3, axis=-1))
    att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d), axis=-1)
    o = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, e)
    o = o @ p["self_attn.out_proj.weight"].T + p["self_attn.out_proj.bias"]
    h = _jax_layer_norm(x + o, p["norm1.weight"], p["norm1.bias"])
    f = jax.nn.relu(h @ p["linear1.weight"].T + p["linear1.bias"])
    f = f @ p["linear2.weight"].T + p["linear2.bias"]
    return _jax_layer_norm(h + f, p["norm2.weight"], p["norm2.bias"])


def transformer_layer(torch, jax):
    fc.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True)
    params = {k: np.array(v) for k, v in layer.named_parameters()}
    x = np.random.default_rng(2).standard_normal((16, 128, 256)).astype(np.float32)

    def loss(p, x):
        return fnp.mean(fc.functional_call(layer, p, (x,)) ** 2)
    step = fc.jit(fc.grad(loss))
    want = step(params, x)
    runs = {"functorch_core": lambda: step(params, x)}
    if jax is not None:
        jp = {k: jax.numpy.asarray(v) for k, v in params.items()}
        jx = jax.numpy.asarray(x)
        jstep = jax.jit(jax.grad(lambda p, x: (_jax_encoder_layer(p, x, 8) ** 2).mean()))
        _close("transformer: JAX", [jstep(jp, jx)[k] for k in params],
               [want[k] for k in params], 2e-3, 1e-5)
        runs["JAX"] = lambda: jax.block_until_ready(jstep(jp, jx))
    if torch is not None:
        tl = torch.nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True)
        tl.load_state_dict({k: torch.tensor(v) for k, v in params.items()})
        tx = torch.tensor(x)

        def tstep():
            tl.zero_grad(set_to_none=True)
            (tl(tx) ** 2).mean().backward()
            return [p.grad for p in tl.parameters()]
        names = [k for k, _ in tl.named_parameters()]
        _close("transformer: torch", tstep(), [want[k] for k in names], 2e-3, 1e-5)
        runs["torch"] = tstep
    return runs


def ensemble(torch, jax):
    models = []
    for s in range(16):
        fc.manual_seed(s)
        models.append(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256),
                                    nn.ReLU(), nn.Linear(256, 10)))
    params, buffers = fc.stack_module_state(models)
    x = np.random.default_rng(3).standard_normal((512, 128)).astype(np.float32)
    run = fc.jit(fc.vmap(lambda p, b, x: fc.functional_call(models[0], (p, b), (x,)),
                         in_dims=(0, 0, None)))
    want = run(params, buffers, x)
    runs = {"functorch_core": lambda: run(params, buffers, x)}
    if jax is not None:
        jp = {k: jax.numpy.asarray(v) for k, v in params.items()}

        def jmlp(p, x):
            h = jax.nn.relu(x @ p["0.weight"].T + p["0.bias"])
            h = jax.nn.relu(h @ p["2.weight"].T + p["2.bias"])
            return h @ p["4.weight"].T + p["4.bias"]
        jrun = jax.jit(jax.vmap(jmlp, in_axes=(0, None)))
        jx = jax.numpy.asarray(x)
        _close("ensemble: JAX", jrun(jp, jx), want, 1e-4, 1e-5)
        runs["JAX"] = lambda: jax.block_until_ready(jrun(jp, jx))
    if torch is not None:
        from torch.func import functional_call, stack_module_state, vmap
        tms = [torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(),
                                   torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                   torch.nn.Linear(256, 10)) for _ in range(16)]
        tp, tb = stack_module_state(tms)
        tp = {k: torch.tensor(params[k]) for k in tp}
        base = tms[0]
        tf = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))
        tx = torch.tensor(x)

        def trun():
            with torch.no_grad():
                return tf(tp, tb, tx)
        _close("ensemble: torch", trun(), want, 1e-4, 1e-5)
        runs["torch"] = trun
    return runs


def _mlp(rng, sizes):
    return {f"w{i}": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
            for i, (a, b) in enumerate(itertools.pairwise(sizes))} | {
            f"b{i}": np.zeros(b, np.float32) for i, b in enumerate(sizes[1:])}


def _mlp_loss(np_, relu, logsumexp, p, x, onehot):
    h = relu(x @ p["w0"] + p["b0"])
    z = h @ p["w1"] + p["b1"]
    return np_.mean(logsumexp(z) - np_.sum(z * onehot, axis=1))


def hvp(torch, jax):
    rng = np.random.default_rng(4)
    p = _mlp(rng, (784, 256, 10))
    v = {k: rng.standard_normal(a.shape).astype(np.float32) for k, a in p.items()}
    x = rng.standard_normal((128, 784)).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]

    def loss(p, x, y):
        return _mlp_loss(fnp, lambda a: fnp.maximum(a, 0),
                         lambda z: fc.scipy.special.logsumexp(z, axis=1), p, x, y)
    step = fc.jit(lambda p, v: fc.jvp(lambda q: fc.grad(loss)(q, x, onehot), (p,), (v,))[1])
    want = step(p, v)
    runs = {"functorch_core": lambda: step(p, v)}
    if jax is not None:
        jnp = jax.numpy

        def jloss(p, x, y):
            return _mlp_loss(jnp, jax.nn.relu,
                             lambda z: jax.scipy.special.logsumexp(z, axis=1), p, x, y)
        jx, jy = jnp.asarray(x), jnp.asarray(onehot)
        jstep = jax.jit(lambda p, v: jax.jvp(lambda q: jax.grad(jloss)(q, jx, jy), (p,),
                                             (v,))[1])
        jp, jv = ({k: jnp.asarray(a) for k, a in d.items()} for d in (p, v))
        _close("hvp: JAX", [jstep(jp, jv)[k] for k in p], [want[k] for k in p], 2e-3, 1e-5)
        runs["JAX"] = lambda: jax.block_until_ready(jstep(jp, jv))
    if torch is not None:
        from torch.func import grad, jvp

        def tloss(p, x, y):
            return _mlp_loss(torch, torch.relu, lambda z: torch.logsumexp(z, dim=1), p, x, y)
        tx, ty = torch.tensor(x), torch.tensor(onehot)
        tp, tv = ({k: torch.tensor(a) for k, a in d.items()} for d in (p, v))

        def tstep():
            return jvp(lambda q: grad(tloss)(q, tx, ty), (tp,), (tv,))[1]
        _close("hvp: torch", [tstep()[k] for k in p], [want[k] for k in p], 2e-3, 1e-5)
        runs["torch"] = tstep
    return runs


def rfft_grad(torch, jax):
    x = np.random.default_rng(5).standard_normal((256, 4096)).astype(np.float32)
    step = fc.jit(fc.grad(lambda x: fnp.sum(fnp.abs(fnp.fft.rfft(x)) ** 2)))
    want = step(x)
    runs = {"functorch_core": lambda: step(x)}
    if jax is not None:
        jnp = jax.numpy
        jstep = jax.jit(jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2)))
        jx = jnp.asarray(x)
        _close("rfft grad: JAX", jstep(jx), want, 1e-3, 1e-2)
        runs["JAX"] = lambda: jax.block_until_ready(jstep(jx))
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)

        def tstep():
            tx.grad = None
            (torch.fft.rfft(tx).abs() ** 2).sum().backward()
            return tx.grad
        _close("rfft grad: torch", tstep(), want, 1e-3, 1e-2)
        runs["torch"] = tstep
    return runs


ROWS = {"per-sample grads CNN": per_sample_cnn, "frozen CNN b1": frozen_cnn,
        "loaded export CNN b1": loaded_export_cnn, "transformer layer": transformer_layer,
        "ensemble": ensemble, "hvp": hvp, "rfft grad": rfft_grad}


def measure(runs):
    """name -> (median over rounds of the round medians, min, max)."""
    got = {name: [] for name in runs}
    for _ in range(ROUNDS):
        for name, fn in runs.items():
            got[name].append(median_time(fn, REPEATS, min_time=MIN_TIME))
    return {name: (float(np.median(t)), min(t), max(t)) for name, t in got.items()}


def _cell(stats):
    if stats is None:
        return f"{'-':>26}"
    med, lo, hi = (1e3 * s for s in stats)
    return f"{med:9.3f} [{lo:7.3f}-{hi:7.3f}]"


def main():
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), "")
    names = [n for n in ROWS if not only or n in only.split(",")]
    torch = optional_import("torch")
    if torch is not None:
        torch.set_num_threads(1)
    jax = optional_import("jax")
    loaded = "--loaded" in sys.argv
    print(f"# {'loaded: two busy-looping processes beside' if loaded else 'quiet'}; "
          f"ms per call, median [min-max] over {ROUNDS} rounds")
    print(f"{'workload':<22}{'functorch_core':>26}{'JAX':>26}{'torch':>26}{'ours/best':>11}")
    for name in names:
        runs = ROWS[name](torch, jax)
        with Load(seconds=600) if loaded else nullcontext():
            stats = measure(runs)
            load = os.getloadavg()[0]
        peers = [stats[p][0] for p in ("JAX", "torch") if p in stats]
        ratio = f"{stats['functorch_core'][0] / min(peers):10.2f}x" if peers else ""
        print(f"{name:<22}{_cell(stats['functorch_core'])}{_cell(stats.get('JAX'))}"
              f"{_cell(stats.get('torch'))}{ratio}  (load {load:.1f})", flush=True)
        label = f"headline {name}" + (", loaded" if loaded else "")
        _timing.result(label, stats["functorch_core"][0], jax=stats.get("JAX", (None,))[0],
                       torch=stats.get("torch", (None,))[0])


if __name__ == "__main__":
    main()
