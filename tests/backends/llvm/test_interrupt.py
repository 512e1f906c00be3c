"""Ctrl-C reaches a native loop: SIGINT during a jitted ``while_loop`` or ``scan`` that runs
natively (the whole loop one native call holding the GIL) raises KeyboardInterrupt at the
next step instead of running to the end. Each child process is bounded by a timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

_CHILD = r"""
import signal, sys, time
# Ctrl-C raises KeyboardInterrupt even when this was started with SIGINT ignored (a
# background job of a non-interactive shell, as a CI script may start the suite)
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import functorch_core as fc
from functorch_core import lax

KIND = sys.argv[1]
if KIND == "while":
    def f(x):   # never ends on its own (the counter counts up from 0)
        return lax.while_loop(lambda c: c[0] >= 0, lambda c: (c[0] + 1, c[1] * 1.0), (0, x))
    short = lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0),
                                     (0, x))
else:
    def f(x):   # 2**62 steps
        return lax.scan(lambda c, _: (c * 1.0, None), x, None, length=2**62)
    short = lambda x: lax.scan(lambda c, _: (c * 2.0, None), x, None, length=10)
g, s = fc.jit(f), fc.jit(short)
assert float(np.asarray(fc.tree_leaves(s(np.ones(3)))[-1]).ravel()[0]) == 1024.0
print("go", flush=True)
t = time.time()
try:
    g(np.ones(3))
except KeyboardInterrupt:
    print(f"interrupted {time.time() - t:.2f}", flush=True)
    # the function still works after the interrupted call
    assert float(np.asarray(fc.tree_leaves(s(np.ones(3)))[-1]).ravel()[0]) == 1024.0
    print("ok", flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
@pytest.mark.parametrize("kind", ["while", "scan"])
def test_ctrl_c_stops_a_native_loop(kind):
    child = subprocess.Popen([sys.executable, "-c", _CHILD, kind], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == "go", child.stderr.read()
        time.sleep(0.5)     # inside the loop by now (its code was compiled by `short`'s call)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    lines = out.split()
    assert lines[0] == "interrupted" and lines[-1] == "ok", out + err
