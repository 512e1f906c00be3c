"""Per-call cost of a jitted function taking a ``nn.Module`` against the same function
taking a dict of its arrays (issue 33).

Run from the repository root: ``python benchmarks/module_call.py [--quick]``. Two models:
a small MLP and the digits CNN of ``examples/cnn_digits.py`` (in training mode: BatchNorm
writes its running statistics every call). Rows: ``jit(lambda m, x: m(x))(model, x)``
(the module's structure cached per module and revalidated by the structure epoch), the
same call with that cache switched off (every call flattens the hierarchy: the path before
the cache), and ``jit(lambda p, x: functional_call(model, p, x))(params, x)``. Each row is
the median of timed loops, interleaved in one process; ratios to the dict row.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "examples"))

from _timing import report, result
from cnn_digits import make_model
from functorch_core.ir.pytree import FAST_FLATTEN

import functorch_core as fc
from functorch_core import nn


def _loop(fn, args, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn(*args)
    return (time.perf_counter() - t0) / inner


def measure(model, x, repeats, inner=300):
    params = {k: np.array(v) for k, v in model.state_dict().items()}
    on = fc.jit(lambda m, x: m(x))
    off = fc.jit(lambda m, x: m(x))
    by_dict = fc.jit(lambda p, x: fc.functional_call(model, p, x))
    fast = dict(FAST_FLATTEN)
    rows = {"module": ([], on, (model, x)), "module, no cache": ([], off, (model, x)),
            "dict of arrays": ([], by_dict, (params, x))}
    for _ in range(repeats + 1):            # the first round warms up
        for name, (times, fn, args) in rows.items():
            if name == "module, no cache":
                FAST_FLATTEN.clear()
            times.append(_loop(fn, args, inner))
            FAST_FLATTEN.update(fast)
    return {name: float(np.median(times[1:])) for name, (times, _, _) in rows.items()}


def main():
    repeats = 5 if "--quick" in sys.argv else 15
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                        nn.Linear(16, 4))
    cases = {"MLP 8-16-16-4, x f32[1,8]": (mlp, np.ones((1, 8), np.float32)),
             "digits CNN (train), x f32[4,1,8,8]": (make_model(),
                                                     np.ones((4, 1, 8, 8), np.float32))}
    for title, (model, x) in cases.items():
        rows = measure(model, x, repeats)
        report(f"jit call with a module argument: {title}", rows, "dict of arrays")
        result(f"module call: {title}", rows["module"], unit="us")


if __name__ == "__main__":
    main()
