"""Deployment paths: freezing speed-up, inference latency and load time of each artifact.

Run from the repository root: ``python benchmarks/deploy.py [--write]`` (JAX and torch rows
appear when they are installed; ``--write`` rewrites ``benchmarks/results/deploy.md``).
Medians over repeats, in one process (load times: fresh subprocesses, medians of a few).

(a) ``freeze`` on the ``cnn_digits`` model (Conv2d-BatchNorm2d-ReLU-MaxPool2d-Linear) in
    eval mode, batch 1 and 64: ``jit(lambda m, x: m(x))`` (weights as inputs) against the
    frozen function (weights constant, BatchNorm folded into the conv).
(b) one inference of the digits MLP (Linear-BatchNorm1d-ReLU-Linear, frozen), batch 1
    and 64: the jit path, the loaded export, the ``.so`` through ctypes; JAX's
    ``jax.export`` deserialised call and ``torch.jit.trace`` / ``torch.export`` when
    installed.
(c) the ``.so``'s own call cost, timed from C: an entry running one 4-element kernel.
(d) load time + first call of each artifact in a fresh process.
(e) the digits CNN and an LSTM classifier shipped as exports and ``.so`` files.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import functorch_core as fc
from benchmarks._results import timing_notes, wants_write, write
from benchmarks._timing import median_time, optional_import
from functorch_core import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPEATS = 21


def per_call(fn, inner=200):
    return median_time(lambda: [fn() for _ in range(inner)], repeats=REPEATS, warmup=2) / inner


def _bn(bn, rng):
    bn.running_mean[...] = rng.standard_normal(bn.num_features) * 0.1
    bn.running_var[...] = rng.uniform(0.5, 2.0, bn.num_features)
    return bn


def freezing(rng):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from cnn_digits import make_model
    fc.manual_seed(0)
    model = make_model()
    _bn(model[1], rng)
    model.eval()
    jitted = fc.jit(lambda m, x: m(x))
    closure = fc.jit(lambda x: model(x))     # weights constant too, but nothing folded
    frozen = fc.freeze(model)
    print("\n(a) freeze: cnn_digits in eval mode (jit: weights as inputs; jit closure: "
          "weights as constants, no folding)")
    rows = []
    for batch in (1, 64):
        x = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
        plain, _ = frozen.graph_for(x, folded=False)
        folded, _ = frozen.graph_for(x)
        t_jit = per_call(lambda x=x: jitted(model, x))
        t_closure = per_call(lambda x=x: closure(x))
        t_frozen = per_call(lambda x=x: frozen(x))
        print(f"  batch {batch:>2}: jit {1e6 * t_jit:8.1f} us, jit closure "
              f"{1e6 * t_closure:8.1f} us, frozen {1e6 * t_frozen:8.1f} us "
              f"({t_jit / t_frozen:.2f}x / {t_closure / t_frozen:.2f}x), "
              f"{len(plain.eqns)} -> {len(folded.eqns)} equations")
        rows.append([batch, f"{1e6 * t_jit:.1f}", f"{1e6 * t_closure:.1f}",
                     f"{1e6 * t_frozen:.1f}", f"{t_jit / t_frozen:.2f}x",
                     f"{t_closure / t_frozen:.2f}x", f"{len(plain.eqns)} -> {len(folded.eqns)}"])
    return ("(a) `freeze` on `examples/cnn_digits.py`'s model in eval mode, µs per call",
            ["batch", "jit (weights as inputs)", "jit closure", "frozen", "jit / frozen",
             "closure / frozen", "equations"], rows)


def mlp_model(rng):
    fc.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), _bn(nn.BatchNorm1d(64), rng), nn.ReLU(),
                          nn.Linear(64, 10))
    return model.eval()


def _ctypes_call(so, name, x, n_out_shape):
    lib = ctypes.CDLL(so)
    fn = getattr(lib, name)
    out = np.empty(n_out_shape, np.float32)
    ins = (ctypes.c_void_p * 1)(x.ctypes.data)
    outs = (ctypes.c_void_p * 1)(out.ctypes.data)
    return lambda: fn(ins, outs), out


def _jax_rows(model, x):
    jax = optional_import("jax")
    if jax is None:
        return None, None
    import jax.numpy as jnp
    from jax import export as jexport
    w = {k: jnp.asarray(v) for k, v in model.state_dict().items()}

    def f(x):
        h = x @ w["0.weight"].T + w["0.bias"]
        h = (h - w["1.running_mean"]) / jnp.sqrt(w["1.running_var"] + 1e-5) * w["1.weight"] \
            + w["1.bias"]
        return jnp.maximum(h, 0) @ w["3.weight"].T + w["3.bias"]
    exported = jexport.export(jax.jit(f))(jax.ShapeDtypeStruct(x.shape, x.dtype))
    try:
        data = bytes(exported.serialize())
        loaded = jexport.deserialize(bytearray(data))
    except ImportError as err:      # serialization needs the flatbuffers package
        print(f"  (jax.export: {err}; timing the in-memory export's call instead)")
        data, loaded = None, exported
    xj = jnp.asarray(x)
    loaded.call(xj).block_until_ready()
    return per_call(lambda: loaded.call(xj).block_until_ready()), data


def _torch_rows(model, x):
    torch = optional_import("torch")
    if torch is None:
        return None, None, None
    torch.set_num_threads(1)
    tm = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.BatchNorm1d(64),
                             torch.nn.ReLU(), torch.nn.Linear(64, 10))
    tm.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in model.state_dict().items()})
    tm.eval()
    xt = torch.from_numpy(x)
    with torch.no_grad():
        traced = torch.jit.freeze(torch.jit.trace(tm, xt))
        t_trace = per_call(lambda: traced(xt))
        try:
            ep = torch.export.export(tm, (xt,)).module()
            t_export = per_call(lambda: ep(xt))
        except Exception:       # torch.export's support varies by version
            t_export = None
    return t_trace, t_export, traced


def latency(rng, d):
    model = mlp_model(rng)
    frozen = fc.freeze(lambda m, x: m(x), model)
    jitted = fc.jit(lambda m, x: m(x))
    print("\n(b) one inference, digits MLP (Linear-BatchNorm1d-ReLU-Linear)")
    print(f"  {'':>10} {'jit':>9} {'export':>9} {'.so':>9} {'jax.export':>11} "
          f"{'torch.jit':>10} {'torch.export':>13}  (us per call)")
    rows = []
    for batch in (1, 64):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        exp = fc.export(frozen, x)
        path = os.path.join(d, f"mlp{batch}.fcx")
        exp.save(path)
        loaded = fc.load_exported(path)
        so = None
        if shutil.which("cc"):
            so = os.path.join(d, f"libmlp{batch}.so")
            exp.compile_library(so, f"mlp{batch}")
        t_jit = per_call(lambda x=x: jitted(model, x))
        t_exp = per_call(lambda x=x, loaded=loaded: loaded(x))
        t_so = None
        if so:
            call, out = _ctypes_call(so, f"mlp{batch}", x, (batch, 10))
            call()
            np.testing.assert_allclose(out, loaded(x), rtol=1e-5, atol=1e-5)
            t_so = per_call(call)
        t_jax, jax_blob = _jax_rows(model, x)
        t_trace, t_export, traced = _torch_rows(model, x)

        def us(t):
            return "n/a" if t is None else f"{1e6 * t:.1f}"
        print(f"  batch {batch:>4} {us(t_jit):>9} {us(t_exp):>9} {us(t_so):>9} "
              f"{us(t_jax):>11} {us(t_trace):>10} {us(t_export):>13}")
        rows.append([batch] + [us(t) for t in (t_jit, t_exp, t_so, t_jax, t_trace, t_export)])
    table = ("(b) one inference of the digits MLP (Linear-BatchNorm1d-ReLU-Linear, frozen), "
             "µs per call", ["batch", "jit", "loaded export", "the `.so` through ctypes",
                             "`jax.export`", "`torch.jit.trace` + `freeze` (1 thread)",
                             "`torch.export`"], rows)
    return (path, so, jax_blob, traced, x), table


ENTRY_TIMER = """
#include <stdio.h>
#include <time.h>
#include "tiny.h"
int main(void) {
    float x[4] = {1, 2, 3, 4}, y[4];
    const void *ins[] = {x};
    void *outs[] = {y};
    struct timespec a, b;
    double best = 1e9;
    for (int r = 0; r < 15; r++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < 100000; i++) tiny(ins, outs);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 100000;
        if (ns < best) best = ns;
    }
    printf("%.1f\\n", best);
    return 0;
}
"""


def entry_cost(d):
    if shutil.which("cc") is None:
        print("\n(c) .so call cost: skipped (no cc)")
        return None
    fc.export(lambda x: x + 1.0, np.ones(4, np.float32)).compile_library(
        os.path.join(d, "libtiny.so"), "tiny", header=os.path.join(d, "tiny.h"))
    with open(os.path.join(d, "timer.c"), "w") as f:
        f.write(ENTRY_TIMER)
    subprocess.run(["cc", "-O2", "-o", "timer", "timer.c", "-L.", "-l:libtiny.so",
                    "-Wl,-rpath,$ORIGIN"], cwd=d, check=True)
    ns = subprocess.run(["./timer"], cwd=d, check=True, capture_output=True,
                        text=True).stdout.strip()
    print(f"\n(c) .so call from C, x + 1 on f32[4] (entry + one tiny kernel): {ns} ns per call "
          "(best of 15 loops of 100k)")
    return ("(c) the `.so` called from C: `x + 1` on f32[4] (entry + one tiny kernel), "
            "best of 15 loops of 100k", ["ns per call"], [[ns]])


def _fresh(code, env=None):
    """Median seconds a fresh process reports (it prints its own timing)."""
    times = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": ROOT, **(env or {})}, check=True)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return float(np.median(times))


def load_times(d, path, so, jax_blob, traced, x):
    np.save(os.path.join(d, "x.npy"), x)
    xs = os.path.join(d, "x.npy")
    rows = {}
    head = (f"import time, numpy as np, functorch_core as fc\nx = np.load({xs!r})\n"
            "import functorch_core.backends.llvm.runtime  # the backend's import: per process\n"
            "t = time.perf_counter()\n")
    rows["export: load only (file -> graph)"] = _fresh(
        head + f"fc.load_exported({path!r})\nprint(time.perf_counter() - t)")
    first = head + f"fc.load_exported({path!r})(x)\nprint(time.perf_counter() - t)"
    rows["export: load + first call (disk cache warm)"] = _fresh(first)
    rows["export: load + first call (no disk cache)"] = _fresh(
        first, {"FUNCTORCH_CORE_CACHE_DIR": ""})
    rows["export: import backend + load + first call"] = _fresh(
        first.replace("import functorch_core.backends.llvm.runtime  #", "#"))
    plain = os.path.join(d, "compiled_on_load.fcx")     # without its native code
    fc.load_exported(path).save(plain, native=False)
    rows["export saved with native=False: load + first call (no disk cache)"] = _fresh(
        first.replace(repr(path), repr(plain)), {"FUNCTORCH_CORE_CACHE_DIR": ""})
    if so:
        rows[".so: dlopen + first call (ctypes)"] = _fresh(textwrap.dedent(f"""
            import ctypes, time, numpy as np
            x = np.load({xs!r}); out = np.empty((x.shape[0], 10), np.float32)
            t = time.perf_counter()
            lib = ctypes.CDLL({so!r})
            f = getattr(lib, {os.path.basename(so)[3:-3]!r})
            f((ctypes.c_void_p * 1)(x.ctypes.data), (ctypes.c_void_p * 1)(out.ctypes.data))
            print(time.perf_counter() - t)"""))
    if jax_blob is not None:
        blob = os.path.join(d, "jax.bin")
        with open(blob, "wb") as f:
            f.write(jax_blob)
        rows["jax.export: deserialize + first call"] = _fresh(textwrap.dedent(f"""
            import time, numpy as np, jax
            from jax import export
            x = np.load({xs!r}); data = open({blob!r}, "rb").read()
            t = time.perf_counter()
            export.deserialize(bytearray(data)).call(x).block_until_ready()
            print(time.perf_counter() - t)"""))
    if traced is not None:
        pt = os.path.join(d, "m.pt")
        traced.save(pt)
        rows["torch.jit: load + first call"] = _fresh(textwrap.dedent(f"""
            import time, numpy as np, torch
            x = torch.from_numpy(np.load({xs!r}))
            t = time.perf_counter()
            with torch.no_grad():
                torch.jit.load({pt!r})(x)
            print(time.perf_counter() - t)"""))
    print("\n(d) load time + first call in a fresh process (after imports), batch 64")
    for k, t in rows.items():
        print(f"  {k:<46} {1e3 * t:8.2f} ms")
    return ("(d) load time + first call in a fresh process (after imports), batch 64, "
            "median of 5", ["artifact", "ms"], [[k, f"{1e3 * t:.2f}"] for k, t in rows.items()])


class _Classifier(nn.Module):
    """An LSTM over the 8 rows of a digit (8 pixels each), a Linear head on the last step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 32, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def _torch_twin(name, model):
    """The same model in torch (weights copied), frozen by torch.jit, or None."""
    torch = optional_import("torch")
    if torch is None:
        return None
    torch.set_num_threads(1)
    if name == "CNN":
        tm = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
                                 torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                 torch.nn.Linear(16 * 4 * 4, 10))
    else:
        class Twin(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch.nn.LSTM(8, 32, batch_first=True)
                self.head = torch.nn.Linear(32, 10)

            def forward(self, x):
                return self.head(self.lstm(x)[0][:, -1])
        tm = Twin()
    tm.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in model.state_dict().items()})
    return tm.eval()


def shipped(rng, d):
    """(e) the digits CNN and an LSTM classifier: jit, loaded export, .so (and torch)."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from cnn_digits import make_model
    fc.manual_seed(0)
    models = {"CNN": (make_model().eval(), (1, 8, 8)), "LSTM": (_Classifier().eval(), (8, 8))}
    print("\n(e) the digits CNN and an LSTM classifier shipped (us per call; .so KB)")
    rows = []
    for name, (model, shape) in models.items():
        frozen = fc.freeze(model)
        twin = _torch_twin(name, model)
        for batch in (1, 64):
            x = rng.random((batch, *shape)).astype(np.float32)
            exp = fc.export(frozen, x)
            path = os.path.join(d, f"{name}{batch}.fcx")
            so = os.path.join(d, f"lib{name}{batch}.so")
            exp.save(path)
            loaded = fc.load_exported(path)
            exp.compile_library(so, f"m{name}{batch}")
            call, out = _ctypes_call(so, f"m{name}{batch}", x, (batch, 10))
            call()
            np.testing.assert_allclose(out, frozen(x), rtol=1e-4, atol=1e-5)
            jitted = fc.jit(frozen)
            times = [per_call(lambda x=x, j=jitted: j(x)), per_call(lambda x=x, e=loaded: e(x)),
                     per_call(call)]
            if twin is not None:
                torch = optional_import("torch")
                xt = torch.from_numpy(x)
                with torch.no_grad():
                    traced = torch.jit.freeze(torch.jit.trace(twin, xt))
                    times.append(per_call(lambda t=traced, xt=xt: t(xt)))
            else:
                times.append(None)
            cells = ["n/a" if t is None else f"{1e6 * t:.1f}" for t in times]
            size = f"{os.path.getsize(so) / 1024:.0f}"
            print(f"  {name:>5} batch {batch:>3}: jit {cells[0]:>8}  loaded export {cells[1]:>8}"
                  f"  .so {cells[2]:>8}  torch.jit {cells[3]:>8}  (.so {size} KB, native "
                  f"export: {loaded.native})")
            rows.append([name, batch, *cells, size])
    return ("(e) the digits CNN and an LSTM classifier shipped: µs per call, the `.so`'s size",
            ["model", "batch", "jit (frozen)", "loaded export", "the `.so` through ctypes",
             "`torch.jit.trace` + `freeze` (1 thread)", "`.so` KB"], rows)


def main():
    rng = np.random.default_rng(0)
    tables = [freezing(rng)]
    with tempfile.TemporaryDirectory() as d:
        artifacts, table = latency(rng, d)
        tables += [table, entry_cost(d), load_times(d, *artifacts), shipped(rng, d)]
    if wants_write():
        write("deploy", "deploy.py", [t for t in tables if t is not None],
              notes=[*timing_notes(), "Medians over repeats in one process; load times in "
                     "fresh subprocesses. 'n/a': the peer is not installed."])


if __name__ == "__main__":
    main()
