"""bfloat16 vs float32 through jit(cpu): a 1024x1024x1024 product and the digits CNN's
inference at batch 64 (examples/cnn_digits.py's make_model, its parameters and buffers cast
with astype(bfloat16)); torch's bf16 where torch is importable; and the CNN's test accuracy
trained in float32, under autocast, and in bfloat16 with float32 master weights.

Run from the repository root: ``python3 benchmarks/bf16.py [--quick]``.
Each variant's time is the median over rounds (every round times all variants one after
another, so a slow spell of a shared machine falls on all) of per-round medians; the spread
printed is the lowest and highest per-round median. The path each kernel takes is printed:
bf16 products run AVX-512 BF16's vdpbf16ps where the CPU has it (else widened to float32
sgemm), but small ones (the CNN's linear layer) are planned widened to a float32 gemm the
native graph entry calls; small bf16 convolutions run as a native loop nest in float32
(tinyconv.py), bigger ones as float32 gemms on widened operands; each result rounds once to
bf16.
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
from functorch_core.backends.llvm import bf16_gemm, lowering, threads
from functorch_core.ir.dtypes import bfloat16

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import optim


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


def product(repeats, n_rounds, torch):
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
    rows = rounds(runs, repeats, n_rounds)
    if torch is None:
        rows["torch bfloat16"] = None
    show("1024x1024x1024 product", rows, "float32 jit(cpu) (OpenBLAS sgemm)")


def cnn(repeats, n_rounds, torch):
    rng = np.random.default_rng(1)
    model = make_model()
    model.eval()
    params = {k: np.asarray(v) for k, v in model.named_parameters()}
    buffers = {k: np.asarray(v) for k, v in model.named_buffers()}
    x = rng.uniform(0, 1, (64, 1, 8, 8)).astype(np.float32)

    def cast(tree, dt):
        return {k: v.astype(dt) if np.asarray(v).dtype.kind == "f" else v
                for k, v in tree.items()}
    p16, b16, x16 = cast(params, bfloat16), cast(buffers, bfloat16), x.astype(bfloat16)

    @fc.jit
    def infer(p, b, x):
        return fc.functional_call(model, (p, b), (x,))
    want = infer(params, buffers, x)
    got = infer(p16, b16, x16)
    if got.dtype != bfloat16:
        sys.exit(f"bf16 CNN: logits are {got.dtype}, not bfloat16")
    print(f"# digits CNN, batch 64: bf16 logits vs float32 ones, max |diff| "
          f"{np.max(np.abs(got.astype(np.float32) - want)):.3g} "
          f"(max |logit| {np.max(np.abs(want)):.3g})")
    # 64 x 256 x 10 multiply-adds: planned widened, a float32 gemm inside the native entry
    linear = "float32 gemm on widened operands" if 64 * 256 * 10 <= lowering.BF16_WIDEN_MACS \
        else "vdpbf16ps" if bf16_gemm.native() else "widened"
    runs = {"float32 jit(cpu)": lambda: infer(params, buffers, x),
            f"bfloat16 jit(cpu) (conv native loop, linear {linear})":
                lambda: infer(p16, b16, x16)}
    rows = rounds(runs, repeats, n_rounds)
    rows["torch bfloat16"] = None       # the same model is not built in torch here
    show("digits CNN inference, batch 64", rows, "float32 jit(cpu)")


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
          "loop nest accumulating in float32, bigger ones float32 gemms on widened operands; "
          "each result rounded once")
    if torch is None:
        print("# torch is not installed: its rows are skipped")
    product(repeats, n_rounds, torch)
    cnn(repeats, n_rounds, torch)
    training(2 if quick else 8)


if __name__ == "__main__":
    main()
