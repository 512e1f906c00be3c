"""bfloat16 vs float32 through jit(cpu): a 1024x1024x1024 product, the inference at batch
64 of the digits CNN (examples/cnn_digits.py's make_model: 1x8x8 images) and of a
CIFAR-sized CNN (3x32x32, conv 3->32->64), parameters, buffers and input cast with
astype(bfloat16); torch (autocast(cpu, bfloat16) for the CNNs) and JAX (bf16 arrays) where
they are importable; and the digits CNN's test accuracy trained in float32, under autocast,
and in bfloat16 with float32 master weights.

Run from the repository root: ``python3 benchmarks/bf16.py [--quick] [--no-product]
[--no-training]``. Each variant's time is the median over rounds (every round times all
variants one after another, so a slow spell of a shared machine falls on all) of per-round
medians; the spread printed is the lowest and highest per-round median.

The paths the kernels take (the first line printed names the product path on this host):

- products: AVX-512 BF16's vdpbf16ps (bf16_gemm.py) where the CPU has it, else widened to
  float32 sgemm; small ones (at most lowering.BF16_WIDEN_MACS multiply-adds: both CNNs'
  linear layers) are planned widened to a float32 gemm the native graph entry calls.
- convolutions: small ones (the digits CNN's; tinyconv.TINY_MAX_MACS) a native loop nest
  that widens bf16 as it loads and accumulates in float32; bigger ones (the CIFAR CNN's)
  the float32 gemm blocks of conv.py on operands widened by bf16_cast.py's native loop,
  rounded back by it. vdpbf16ps does not run convolutions yet.
- elementwise chains (bias, batch norm, ReLU) and pooling: fused native kernels computing
  in float32 and rounding each op's result to bf16 once (vectorized integer
  round-to-nearest-even), as the interpreter does, bit for bit.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

from _digits import load_digits
from _timing import median_time, optional_import
from cnn_digits import make_model, make_train_step
from functorch_core.backends.llvm import bf16_gemm, threads
from functorch_core.ir.dtypes import bfloat16

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import nn, optim


def rounds(runs, repeats, n_rounds):
    """name -> (median, lowest, highest) over rounds of each run's median seconds."""
    got = {name: [] for name in runs}
    for _ in range(n_rounds):
        for name, run in runs.items():
            got[name].append(median_time(run, repeats))
    return {name: (float(np.median(t)), min(t), max(t)) for name, t in got.items()}


def show(title, rows, baseline):
    print(f"\n{title}")
    base = rows[baseline][0]
    for name, t in rows.items():
        if t is None:
            print(f"  {name:<44} {'not installed':>12}")
            continue
        med, lo, hi = t
        print(f"  {name:<44} {1e3 * med:9.3f} ms  [{1e3 * lo:.3f} - {1e3 * hi:.3f}]"
              f"  {base / med:5.2f}x vs {baseline}")


def product(repeats, n_rounds, torch, jax):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    a16, b16 = a.astype(bfloat16), b.astype(bfloat16)
    f32, f16 = fc.jit(fnp.matmul), fc.jit(fnp.matmul)
    exact = a16.astype(np.float64) @ b16.astype(np.float64)
    got = f16(a16, b16).astype(np.float64)
    bound = 1024 * 2.0 ** -24 * (np.abs(a16.astype(np.float64)) @ np.abs(b16.astype(np.float64)))
    bound += 2.0 ** -8 * (np.abs(exact) + bound)
    if not (np.abs(got - exact) <= bound).all():
        sys.exit("bf16 product: outside float32 accumulation error + half a bf16 ulp")
    bf16_gemm.force_widen = True    # the step jit builds for a bf16 product, widening
    widened = bf16_gemm.Bf16DotGeneral(a.shape, b.shape, (((1,), (0,)), ((), ())),
                                       parallel=threads.pool, workers=threads.workers)
    bf16_gemm.force_widen = False
    runs = {"float32 jit(cpu) (OpenBLAS sgemm)": lambda: f32(a, b),
            f"bfloat16 jit(cpu) ({bf16_gemm.path()})": lambda: f16(a16, b16),
            "bfloat16 product step, widened to float32 sgemm": lambda: widened(a16, b16)}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        ta16, tb16 = ta.to(torch.bfloat16), tb.to(torch.bfloat16)
        runs["torch float32"] = lambda: ta @ tb
        runs["torch bfloat16"] = lambda: ta16 @ tb16
    if jax is not None:
        mm = jax.jit(jax.numpy.matmul)
        ja, jb = jax.numpy.asarray(a), jax.numpy.asarray(b)
        ja16, jb16 = ja.astype(jax.numpy.bfloat16), jb.astype(jax.numpy.bfloat16)
        runs["JAX float32"] = lambda: mm(ja, jb).block_until_ready()
        runs["JAX bfloat16"] = lambda: mm(ja16, jb16).block_until_ready()
    rows = rounds(runs, repeats, n_rounds)
    for name, peer in (("torch bfloat16", torch), ("JAX bfloat16", jax)):
        if peer is None:
            rows[name] = None
    show("1024x1024x1024 product", rows, "float32 jit(cpu) (OpenBLAS sgemm)")


def cast(tree, dt):
    return {k: v.astype(dt) if np.asarray(v).dtype.kind == "f" else v for k, v in tree.items()}


def torch_model(torch, model, params, buffers):
    """``model`` (an nn.Sequential of Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten, Linear)
    rebuilt in torch with the same parameters and buffers, in eval mode."""
    tnn, layers = torch.nn, []
    for i, layer in enumerate(model):
        kind = type(layer).__name__
        if kind == "Conv2d":
            w = params[f"{i}.weight"]
            layers.append(tnn.Conv2d(w.shape[1], w.shape[0], w.shape[2:], padding=1))
        elif kind == "BatchNorm2d":
            layers.append(tnn.BatchNorm2d(params[f"{i}.weight"].shape[0], eps=layer.eps))
        elif kind == "Linear":
            w = params[f"{i}.weight"]
            layers.append(tnn.Linear(w.shape[1], w.shape[0]))
        else:
            layers.append({"ReLU": tnn.ReLU(), "MaxPool2d": tnn.MaxPool2d(2),
                           "Flatten": tnn.Flatten()}[kind])
    net = tnn.Sequential(*layers)
    state = {**params, **buffers}
    net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()}, strict=False)
    return net.eval()


def jax_forward(jax, model):
    """``model``'s inference as a jax.jit function of (params, buffers, x) dicts/arrays."""
    lax, jnp = jax.lax, jax.numpy

    def forward(p, b, x):
        for i, layer in enumerate(model):
            kind = type(layer).__name__
            if kind == "Conv2d":
                x = lax.conv_general_dilated(x, p[f"{i}.weight"], (1, 1), ((1, 1), (1, 1)))
                x = x + p[f"{i}.bias"][:, None, None]
            elif kind == "BatchNorm2d":
                scale = jnp.sqrt(b[f"{i}.running_var"] + layer.eps)
                x = (x - b[f"{i}.running_mean"][:, None, None]) / scale[:, None, None]
                x = x * p[f"{i}.weight"][:, None, None] + p[f"{i}.bias"][:, None, None]
            elif kind == "ReLU":
                x = jnp.maximum(x, 0)
            elif kind == "MaxPool2d":
                x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            elif kind == "Flatten":
                x = x.reshape(x.shape[0], -1)
            else:
                x = x @ p[f"{i}.weight"].T + p[f"{i}.bias"]
        return x
    return jax.jit(forward)


def cnn(title, model, x, repeats, n_rounds, torch, jax):
    """``model``'s inference on ``x`` in float32 and bfloat16 (parameters, buffers and input
    cast with astype(bfloat16)), and the peers': torch under autocast(cpu, bfloat16), JAX on
    bfloat16 arrays."""
    model.eval()
    params = {k: np.asarray(v) for k, v in model.named_parameters()}
    buffers = {k: np.asarray(v) for k, v in model.named_buffers()}
    p16, b16, x16 = cast(params, bfloat16), cast(buffers, bfloat16), x.astype(bfloat16)

    @fc.jit
    def infer(p, b, x):
        return fc.functional_call(model, (p, b), (x,))
    want = infer(params, buffers, x)
    got = infer(p16, b16, x16)
    if got.dtype != bfloat16:
        sys.exit(f"bf16 {title}: logits are {got.dtype}, not bfloat16")
    print(f"# {title}: bf16 logits vs float32 ones, max |diff| "
          f"{np.max(np.abs(got.astype(np.float32) - want)):.3g} "
          f"(max |logit| {np.max(np.abs(want)):.3g})")
    runs = {"float32 jit(cpu)": lambda: infer(params, buffers, x),
            "bfloat16 jit(cpu)": lambda: infer(p16, b16, x16)}
    if torch is not None:
        net, tx = torch_model(torch, model, params, buffers), torch.from_numpy(x)

        def autocast():
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
                return net(tx)
        with torch.no_grad():
            runs["torch float32"] = lambda: net(tx)
        runs["torch autocast(cpu, bfloat16)"] = autocast
    if jax is not None:
        fwd, jnp = jax_forward(jax, model), jax.numpy
        jp, jb = ({k: jnp.asarray(v) for k, v in t.items()} for t in (params, buffers))
        jp16, jb16 = ({k: v.astype(jnp.bfloat16) for k, v in t.items()} for t in (jp, jb))
        jx, jx16 = jnp.asarray(x), jnp.asarray(x).astype(jnp.bfloat16)
        runs["JAX float32"] = lambda: fwd(jp, jb, jx).block_until_ready()
        runs["JAX bfloat16"] = lambda: fwd(jp16, jb16, jx16).block_until_ready()
    rows = rounds(runs, repeats, n_rounds)
    for name, peer in (("torch autocast(cpu, bfloat16)", torch), ("JAX bfloat16", jax)):
        if peer is None:
            rows[name] = None
    show(title, rows, "float32 jit(cpu)")


def cifar_model():
    """A CIFAR-sized CNN (3x32x32 input): conv 3->32->64, each with ReLU and 2x2 max
    pooling, then a linear layer; its convolutions are big enough for the gemm-block path."""
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 8 * 8, 10))


def training(epochs):
    """The digits CNN trained ``epochs`` epochs with Adam three ways: float32; float32
    parameters under ``fc.autocast()`` (bf16 products and convolutions); bfloat16 parameters
    (``Module.bfloat16()``) with float32 master weights. Test accuracies side by side."""
    x_train, y_train, x_test, y_test = load_digits()
    x_train = x_train.reshape(-1, 1, 8, 8).astype(np.float32)
    x_test = x_test.reshape(-1, 1, 8, 8).astype(np.float32)
    results = {}
    for name in ("float32", "autocast(bfloat16)", "bfloat16 + float32 master weights"):
        fc.manual_seed(0)
        model = make_model()
        if name.startswith("bfloat16"):
            model.bfloat16()
        params = {k: np.array(v) for k, v in model.named_parameters()}
        buffers = {k: np.array(v) for k, v in model.named_buffers()}
        opt = optim.adam(lr=1e-2, master_dtype=np.float32 if "master" in name else None)
        state, step = opt.init(params), make_train_step(model, opt)
        xs = x_train.astype(bfloat16) if name.startswith("bfloat16") else x_train
        model.train()
        rng = np.random.default_rng(0)
        n = len(xs) // 64 * 64
        with fc.autocast(enabled=name.startswith("autocast")):
            for _ in range(epochs):
                for idx in rng.permutation(len(xs))[:n].reshape(-1, 64):
                    params, buffers, state, _ = step(params, buffers, state, xs[idx],
                                                     y_train[idx])
            model.load_state_dict({**params, **buffers})
            model.eval()
            xt = x_test.astype(bfloat16) if name.startswith("bfloat16") else x_test
            pred = np.argmax(np.asarray(model(xt), np.float32), axis=1)
        results[name] = float(np.mean(pred == y_test))
    print(f"\ndigits CNN trained {epochs} epochs (Adam, lr 1e-2, batch 64): test accuracy")
    for name, acc in results.items():
        print(f"  {name:<44} {acc:.4f}  ({100 * (acc - results['float32']):+.2f} points)")


def main():
    quick = "--quick" in sys.argv
    repeats, n_rounds = (3, 3) if quick else (7, 5)
    torch = optional_import("torch")
    print(f"# bf16 products here: {bf16_gemm.path()}; bf16 convolutions: small ones a native "
          "loop nest accumulating in float32, bigger ones float32 gemms on natively widened "
          "operands; each result rounded once")
    if torch is None:
        print("# torch is not installed: its rows are skipped")
    jax = optional_import("jax")
    if jax is None:
        print("# JAX is not installed: its rows are skipped")
    if "--no-product" not in sys.argv:
        product(repeats, n_rounds, torch, jax)
    rng = np.random.default_rng(1)
    cnn("digits CNN inference, batch 64", make_model(),
        rng.uniform(0, 1, (64, 1, 8, 8)).astype(np.float32), repeats, n_rounds, torch, jax)
    fc.manual_seed(0)
    cnn("CIFAR-sized CNN inference (3x32x32, conv 3->32->64), batch 64", cifar_model(),
        rng.uniform(0, 1, (64, 3, 32, 32)).astype(np.float32), repeats, n_rounds, torch, jax)
    if "--no-training" not in sys.argv:
        training(2 if quick else 8)


if __name__ == "__main__":
    main()
