"""Model ensembling (the functorch tutorial): 10 MLPs evaluated at once by ``vmap`` over
``functional_call`` with their states stacked by ``stack_module_state``, with one minibatch
shared by all models and with a different minibatch per model, each checked against a loop.

Run: python examples/ensembling.py
"""

import time

import numpy as np
from _digits import load_digits

import functorch_core as fc
from functorch_core import nn

NUM_MODELS = 10


def make_model():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def main():
    x_train, _, _, _ = load_digits()
    models = []
    for seed in range(NUM_MODELS):
        fc.manual_seed(seed)
        models.append(make_model())
    params, buffers = fc.stack_module_state(models)
    print("stacked parameters:", {k: v.shape for k, v in params.items()})

    base = models[0]

    def fmodel(params, buffers, x):
        return fc.functional_call(base, (params, buffers), (x,))

    # Shared minibatch: every model sees the same 64 examples.
    shared = x_train[:64]
    run_shared = fc.jit(fc.vmap(fmodel, in_dims=(0, 0, None)))
    t0 = time.perf_counter()
    out = run_shared(params, buffers, shared)
    t1 = time.perf_counter()
    loop = np.stack([m(shared) for m in models])
    err_shared = float(np.max(np.abs(out - loop)))
    print(f"shared minibatch: output {out.shape}, largest difference from a loop "
          f"{err_shared:.2e} (first call {1e3 * (t1 - t0):.1f} ms)")

    # A different minibatch per model: (models, batch, features), mapped along axis 0.
    per_model = x_train[:NUM_MODELS * 64].reshape(NUM_MODELS, 64, 64)
    run_split = fc.jit(fc.vmap(fmodel))
    out = run_split(params, buffers, per_model)
    loop = np.stack([m(xb) for m, xb in zip(models, per_model, strict=True)])
    err_split = float(np.max(np.abs(out - loop)))
    print(f"minibatch per model: output {out.shape}, largest difference from a loop "
          f"{err_split:.2e}")
    assert max(err_shared, err_split) < 1e-5

    print(f"ensembling ok: max difference {max(err_shared, err_split):.2e}")


if __name__ == "__main__":
    main()
