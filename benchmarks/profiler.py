"""The profiler's cost: a jitted MLP training step with the profiler off and on.

Run from the repository root: ``python benchmarks/profiler.py [--quick]``. In one
process, every row is the median over rounds of the median of timed loops of calls.

- *off, never profiled* and *off, after a profile*: the cached call path of a jitted
  step never called inside a profile, and of one that was (timed in turn, each round).
  Nothing on that path looks at the profiler (its fast path and the executable's own
  steps are never changed), so the ratio is 1.00 up to noise. *off, general call path*:
  the uncached path (signature, cache look-up) that a profiled call takes, without the
  profiler.
- *inside a schedule, NONE steps*: calls between windows of ``schedule(...)``, which take
  the cached path again.
- *on*: calls inside ``profile()``: the general call path and the executable's
  instrumented twin (one event per call, per run and per step); *on, every option*: with
  ``record_shapes``, ``with_stack`` and ``profile_memory``.
- per step: the executable's steps run one by one on the same buffers, bare and
  instrumented inside a profile: the difference over the number of steps is what one
  step's event costs (a graph with a big kernel or product runs its steps this way; one
  of small kernels only runs as one native entry, one event).

torch.profiler's overhead on the same step is printed when torch is installed.
"""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from functorch_core.backends.llvm.profiled import instrumented

import functorch_core as fc
from benchmarks._timing import loop_time, optional_import, result
from functorch_core.profiler import profile, schedule

QUICK = "--quick" in sys.argv
INNER, REPEATS, ROUNDS = (50, 5, 3) if QUICK else (200, 9, 5)
SMALL = (16, (16, 64, 64, 10))      # (batch, layer widths)
TINY = (2, (4, 8, 8, 2))            # steps of a microsecond or two: their events' cost shows


def init(batch, dims):
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a),
               np.zeros(b, np.float32)) for a, b in itertools.pairwise(dims)]
    x = rng.standard_normal((batch, dims[0])).astype(np.float32)
    y = rng.standard_normal((batch, dims[-1])).astype(np.float32)
    return params, x, y


def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
    w, b = params[-1]
    return ((h @ w + b - y) ** 2).mean()


def sgd_step(params, x, y):
    grads = fc.grad(loss)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads,
                                                                          strict=True)]


def per_call(fn, arg):
    return loop_time(fn, arg, REPEATS, INNER, warmup=20)


def rounds(runs):
    """name -> median over ROUNDS of per_call, every round timing each run in turn (odd
    rounds in the reverse order, so that no row always runs first)."""
    got = {name: [] for name in runs}
    for r in range(ROUNDS):
        for name in list(runs)[::-1 if r % 2 else 1]:
            got[name].append(runs[name]())
    return {name: float(np.median(t)) for name, t in got.items()}


def profiled(step, args, **options):
    with profile(**options):
        return per_call(step, args)


def in_none_steps(step, args):
    """Per-call time of calls made in the NONE steps of a schedule."""
    with profile(schedule=schedule(wait=INNER * REPEATS + 50, warmup=0, active=1)) as prof:
        t = per_call(step, args)
        prof.step()
    return t


def steps_per_call(step, args) -> int:
    with profile() as prof:
        step(args)
    return sum(e.cat in ("kernel", "blas", "fallback", "conv", "sort", "loop", "fft")
               and not e.name.endswith(" part") for e in prof.events())


def torch_rows():
    """torch's sgd step of the medium MLP: seconds per call without and with
    torch.profiler (CPU activity), or (None, None)."""
    torch = optional_import("torch")
    if torch is None:
        return None, None
    torch.set_num_threads(fc.backends.llvm.runtime.get_num_threads())
    dims = SMALL[1]
    layers = [torch.nn.Linear(a, b) for a, b in itertools.pairwise(dims)]
    net = torch.nn.Sequential(*[m for lin in layers[:-1] for m in (lin, torch.nn.Tanh())],
                              layers[-1])
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(SMALL[0], dims[0]), torch.randn(SMALL[0], dims[-1])

    def step(_):
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
    off = per_call(step, None)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        on = per_call(step, None)
    return off, on


def call_rows(step, never, args):
    """The per-call rows of one workload; ``never``: the same step jitted apart, never
    called inside a profile."""
    never(args)
    with profile():
        step(args)
    return rounds({
        "off, never profiled": lambda: per_call(never, args),
        "off, after a profile": lambda: per_call(step, args),
        "off, general call path": lambda: per_call(lambda a: step._call((a,), {}, None), args),
        "inside a schedule, NONE steps": lambda: in_none_steps(step, args),
        "on": lambda: profiled(step, args),
        "on, every option": lambda: profiled(step, args, record_shapes=True,
                                             with_stack=True, profile_memory=True),
    })


def step_rows(step, args):
    """The executable's own steps and its instrumented twin's, run one after another on
    the same buffers inside a profile: (n steps, bare, twin, twin with every option)
    seconds per pass over the steps."""
    exe = next(iter(step.cache.values())).run
    flat = fc.tree_leaves(args)
    bufs = exe.new_arena()
    bufs[:exe.n_inputs] = flat
    for slot, shape, dtype in exe.fresh:
        bufs[slot] = np.empty(shape, dtype)
    twin = instrumented(exe)

    def run_all(steps):
        def run(b):
            for st in steps:
                st(b)
        return run

    def timed(**options):
        with profile(**options):
            return per_call(run_all(twin.steps), bufs)
    got = rounds({"bare": lambda: per_call(run_all(exe.steps), bufs), "twin": timed,
                  "every": lambda: timed(record_shapes=True, with_stack=True,
                                         profile_memory=True)})
    return len(exe.steps), got["bare"], got["twin"], got["every"]


def show(title, times):
    base = times["off, never profiled"]
    print(title)
    for name, t in times.items():
        print(f"  {name:<34} {t * 1e6:9.2f} us {t / base:8.3f}x")


def main():
    print(f"per-call time, median of {ROUNDS} rounds of {REPEATS} loops of {INNER} calls")
    step = fc.jit(lambda a: sgd_step(*a))
    args = init(*SMALL)
    times = call_rows(step, fc.jit(lambda a: sgd_step(*a)), args)
    show(f"jitted MLP sgd step {SMALL[1]}, batch {SMALL[0]} (one native entry, "
         f"{steps_per_call(step, args)} step event per call)", times)
    tiny = fc.jit(lambda a: sgd_step(*a))
    tiny_args = init(*TINY)
    tiny(tiny_args)
    n, bare, twin, every = step_rows(tiny, tiny_args)
    print(f"the same step at {TINY[1]}, batch {TINY[0]}: its {n} steps one by one (as a "
          "graph with a big kernel runs them), inside a profile:")
    print(f"  bare steps                         {bare * 1e6:9.2f} us")
    print(f"  instrumented steps                 {twin * 1e6:9.2f} us "
          f"({(twin - bare) / n * 1e6:.2f} us per step)")
    print(f"  instrumented, every option         {every * 1e6:9.2f} us "
          f"({(every - bare) / n * 1e6:.2f} us per step)")
    t_off, t_on = torch_rows()
    if t_off is None:
        print("torch.profiler: not installed")
    else:
        print(f"torch sgd step {SMALL[1]}, batch {SMALL[0]}: off {t_off * 1e6:.2f} us, "
              f"torch.profiler on {t_on * 1e6:.2f} us ({t_on / t_off:.3f}x)")
    result("jitted MLP sgd step, profiler off", times["off, after a profile"], unit="us")
    result("jitted MLP sgd step, profiler on", times["on"], unit="us")


if __name__ == "__main__":
    main()
