"""The compile worker (``backends/llvm/compile_worker.py``): LLVM's optimizer in a child
process, so that a process compiling many signatures keeps a flat RSS and a long compile
stops at Ctrl-C. Every scenario runs in a fresh Python process with its own empty disk
cache, bounded by a timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def _child(source, tmp_path, mode="1", args=()):
    env = dict(os.environ, FUNCTORCH_CORE_COMPILE_WORKER=mode,
               FUNCTORCH_CORE_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.Popen([sys.executable, "-c", source, *args], cwd=ROOT, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(child, timeout):
    try:
        out, err = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, out + err
    return out


_RESULTS = r"""
import os
import numpy as np
import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import lax
from functorch_core.backends.llvm import compile_worker

rng = np.random.default_rng(0)
x, w = rng.standard_normal((8, 5)), rng.standard_normal((5, 3))
def net(x, w):
    return fnp.sum(fnp.tanh(x @ w) ** 2, axis=0)
def loop(x):
    return lax.while_loop(lambda c: c[0] < 7, lambda c: (c[0] + 1, c[1] * 1.5 + 1.0), (0, x))
np.testing.assert_allclose(fc.jit(net)(x, w), net(x, w), rtol=1e-12)
np.testing.assert_allclose(fc.jit(fc.grad(lambda w: fnp.sum(net(x, w))))(w),
                           fc.grad(lambda w: fnp.sum(net(x, w)))(w), rtol=1e-12)
np.testing.assert_allclose(fc.jit(loop)(x)[1], loop(x)[1], rtol=1e-12)
assert compile_worker._state["worker"] is not None and compile_worker._state["broken"] is None
pid = os.fork()
if pid == 0:        # a forked child compiles through a worker of its own
    ok = np.allclose(fc.jit(lambda x: fnp.cos(x) * 3.0)(x), np.cos(x) * 3.0)
    ok = ok and compile_worker._state["worker"].pid == os.getpid()
    os._exit(0 if ok else 1)
np.testing.assert_allclose(fc.jit(lambda x: fnp.sin(x) * 2.0)(x), np.sin(x) * 2.0)
_, status = os.waitpid(pid, 0)
assert status == 0, status
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_the_worker_compiles_what_this_process_would(tmp_path):
    assert _finish(_child(_RESULTS, tmp_path), 240).split()[-1] == "ok"


_SIGNATURES = r"""
import os, sys
import numpy as np
import functorch_core as fc
import functorch_core.numpy as fnp

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
f = fc.jit(lambda x: fnp.sum(fnp.tanh(x) * 2.0 + 1.0), cache_size=16)
first, last = int(sys.argv[1]), int(sys.argv[2])
for n in range(1, last + 1):
    np.testing.assert_allclose(f(np.ones(n)), n * (np.tanh(1.0) * 2.0 + 1.0), rtol=1e-12)
    if n == first:
        before = rss_mb()
print(f"{rss_mb() - before:.2f}")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_rss_stays_flat_over_many_signatures(tmp_path):
    # compiled in this process, each optimized module keeps ~70 KB (llvmlite's pass
    # builders) and a signature here costs ~90 KB: ~18 MB over these 200 signatures
    grown = float(_finish(_child(_SIGNATURES, tmp_path, args=("200", "400")), 300).split()[-1])
    assert grown < 4.0, f"RSS grew {grown} MB over 200 signatures"


_INTERRUPTED = r"""
import signal, os, sys, time
# Ctrl-C raises KeyboardInterrupt even when this was started with SIGINT ignored (a
# background job of a non-interactive shell, as a CI script may start the suite)
signal.signal(signal.SIGINT, signal.default_int_handler)
from llvmlite import binding as llvm
import llvmlite
from functorch_core.backends.llvm import compile_worker, engine

def big(n):     # straight-line IR that O3 takes seconds over
    lines = ["define void @f(ptr %p) {", "entry:"]
    for i in range(n):
        prev = f"%w{i - 1}" if i else "0.0"
        lines += [f"  %a{i} = getelementptr double, ptr %p, i64 {i}",
                  f"  %v{i} = load double, ptr %a{i}", f"  %m{i} = fmul double %v{i}, {prev}",
                  f"  %w{i} = fadd double %m{i}, 1.0", f"  store double %w{i}, ptr %a{i}"]
    return "\n".join(lines + ["  ret void", "}"])
text = big(int(sys.argv[1]))
llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
folder = os.path.dirname(os.path.dirname(llvmlite.__file__))
print("go", flush=True)
t = time.time()
try:
    compile_worker.compile_object(text, cpu, features, 3, engine.PIPELINES["full"], folder)
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted {time.time() - t:.2f}", flush=True)
    assert compile_worker._state["worker"] is None
    small = "define i64 @g(i64 %x) {\nentry:\n  %y = add i64 %x, 1\n  ret i64 %y\n}"
    obj = compile_worker.compile_object(small, cpu, features, 3, engine.PIPELINES["full"],
                                        folder)
    assert obj[:4] == b"\x7fELF", obj[:4]
    print("ok", flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_stops_a_long_compile(tmp_path):
    child = _child(_INTERRUPTED, tmp_path, args=("6000",))     # ~10 s of O3 here
    assert child.stdout.readline().strip() == "go"
    time.sleep(1.0)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out = _finish(child, 60)
    assert time.monotonic() - sent < 8.0
    lines = out.split()
    assert lines[0] == "interrupted" and lines[-1] == "ok", out
