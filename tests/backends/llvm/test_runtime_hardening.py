"""The cpu backend under threads, fork and memory pressure, and its disk cache against
damaged folders (issue 11: sections 1, 2 and the fork and cache-folder defects of 5).

The longer thread stress runs outside CI: ``benchmarks/stress_threads.py``.
"""

import ctypes
import gc
import logging
import multiprocessing
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import uuid
import weakref

import numpy as np
import paths
import pytest
from functorch_core.backends.llvm import cache, runtime, threads
from functorch_core.ir.once import Once

import functorch_core as fc
import functorch_core.numpy as fnp

ROOT = paths.ROOT

# each runs eagerly on NumPy arrays as the reference
WORKLOADS = [
    lambda x: np.tanh(x) * 2 + 1,
    lambda x: np.sum(np.exp(-x * x), axis=-1),
    lambda x: x @ x.T + np.sin(x).sum(),
    lambda x: np.maximum(x, 0.25) / (1 + np.abs(x)),
]


def _hammer(threads, calls, base):
    """``threads`` threads call fresh jits of every workload on shapes no test compiled;
    returns (results checked, wrong, exceptions)."""
    jitted = [(fc.jit(lambda x, f=f: f(x), backend="cpu"), f) for f in WORKLOADS]
    barrier = threading.Barrier(threads)
    wrong, errors, checked = [], [], []

    def worker(t):
        rng = np.random.default_rng(t)
        barrier.wait()
        for k in range(calls):
            for f, ref in jitted:
                x = rng.normal(size=(1 + (t + k) % 3, base + k))
                try:
                    ok = np.allclose(f(x), ref(x), rtol=1e-10, atol=1e-10)
                except Exception as e:  # counted: the assertion shows them
                    errors.append(repr(e))
                    continue
                checked.append(1)
                if not ok:
                    wrong.append((t, k))

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return len(checked), wrong, errors


@pytest.mark.parametrize("disk_cache", [True, False])
def test_concurrent_first_calls_match_numpy(monkeypatch, tmp_path, disk_cache):
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(tmp_path) if disk_cache else "")
    base = 1000 + uuid.uuid4().int % 10000     # shapes no other test compiled
    checked, wrong, errors = _hammer(threads=8, calls=3, base=base)
    assert errors == [] and wrong == [] and checked == 8 * 3 * len(WORKLOADS)


def test_concurrent_transforms_match_numpy():
    def loss(w, x):
        return fnp.sum(fnp.tanh(x @ w) ** 2)

    def expected(w, x):
        t = np.tanh(x @ w)
        return x.T @ (2 * t * (1 - t * t))
    batched = fc.jit(fc.vmap(fc.grad(loss), in_axes=(None, 0)), backend="cpu")
    eager = fc.grad(loss)
    barrier, wrong, errors = threading.Barrier(8), [], []
    n = 3 + uuid.uuid4().int % 1000

    def worker(t):
        rng = np.random.default_rng(t)
        barrier.wait()
        for k in range(3):
            w, xs = rng.normal(size=(n, 2)), rng.normal(size=(4, 5 + k, n))
            try:
                ref = np.stack([expected(w, x) for x in xs])
                if not (np.allclose(batched(w, xs), ref) and np.allclose(eager(w, xs[0]), ref[0])):
                    wrong.append((t, k))
            except Exception as e:  # counted: the assertion shows them
                errors.append(repr(e))
    pool = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert errors == [] and wrong == []


def test_threads_asking_for_one_signature_trace_and_compile_it_once():
    traces = []

    def f(x):
        traces.append(1)
        return np.cos(x) * 3
    g = fc.jit(f, backend="cpu")
    x = np.linspace(0, 1, 11 + uuid.uuid4().int % 1000)
    barrier = threading.Barrier(8)
    results = [None] * 8

    def worker(i):
        barrier.wait()
        results[i] = g(x)
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert len(traces) == 1 and len(g.cache) == 1
    for r in results:
        np.testing.assert_allclose(r, np.cos(x) * 3, rtol=1e-12)


def test_once_hands_the_builders_exception_to_every_waiter_and_forgets_it():
    once, cache, started, release = Once(), {}, threading.Event(), threading.Event()
    calls = []

    def build():
        calls.append(1)
        started.set()
        release.wait(5)
        raise ValueError("boom")
    seen = []

    def ask():
        try:
            once.get(cache, "k", build)
        except ValueError as e:
            seen.append(str(e))
    first = threading.Thread(target=ask)
    first.start()
    started.wait(5)
    others = [threading.Thread(target=ask) for _ in range(3)]
    for th in others:
        th.start()
    release.set()
    for th in [first, *others]:
        th.join()
    assert seen == ["boom"] * 4 and calls == [1] and cache == {}
    assert once.get(cache, "k", lambda: 7) == 7 and cache == {"k": 7}


def test_once_waiters_build_their_own_when_the_value_was_not_kept():
    once, cache, started, release = Once(), {}, threading.Event(), threading.Event()
    built = []

    def build():
        built.append(threading.get_ident())
        if len(built) == 1:
            started.set()
            release.wait(5)
        return object()
    got = []
    first = threading.Thread(target=lambda: got.append(once.get(cache, "k", build,
                                                                lambda k, v: False)))
    first.start()
    started.wait(5)
    second = threading.Thread(target=lambda: got.append(once.get(cache, "k", build,
                                                                 lambda k, v: False)))
    second.start()
    time.sleep(0.3)     # let the second thread reach the wait on the first one's build
    release.set()
    first.join()
    second.join()
    assert len(built) == 2 and got[0] is not got[1] and cache == {}


def test_once_lets_a_recursive_builder_build_again():
    once, cache = Once(), {}
    assert once.get(cache, "k", lambda: once.get(cache, "k", lambda: 1) + 1) == 2


# --- fork ----------------------------------------------------------------------------

def _in_child(fn, timeout=60):
    """Run ``fn()`` in a forked child; True when it returned normally in time."""
    pid = os.fork()
    if pid == 0:    # the child: never returns into pytest
        code = 1
        try:
            signal.alarm(timeout)
            code = 0 if fn() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


_FORKED = fc.jit(lambda z: np.tanh(z) * 2, backend="cpu")
_X = np.linspace(-3, 3, 10 ** 6)


def _forked_call(_=None):
    return bool(np.allclose(_FORKED(_X), np.tanh(_X) * 2))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process.*multi-threaded:DeprecationWarning")
def test_fork_after_a_threaded_kernel_runs_in_the_child():
    assert _forked_call()           # the parent's pool threads are now running
    assert threads._state.get("pool") is not None
    assert _in_child(_forked_call)
    # and a new function compiled in the child
    assert _in_child(lambda: bool(np.allclose(
        fc.jit(lambda z: np.sinh(z) + 5, backend="cpu")(_X), np.sinh(_X) + 5)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process.*multi-threaded:DeprecationWarning")
def test_multiprocessing_fork_pool_after_a_threaded_kernel():
    assert _forked_call()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        result = pool.map_async(_forked_call, range(4))
        assert result.get(timeout=120) == [True] * 4


# --- memory --------------------------------------------------------------------------

def _rss_mb():
    """Resident MB, after handing freed heap back to the system where glibc can (so what
    is measured is memory held, not free memory the allocator keeps)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


_COMPILE_ALL = """
import sys
import numpy as np
import functorch_core as fc
x = np.ones(8)
for i in range(int(sys.argv[1])):
    c = i + 0.5
    f = fc.jit(lambda v, c=c: np.tanh(v) * c, backend="cpu")
    assert f(x)[0] == np.tanh(1.0) * c
    del f
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_dropped_jit_functions_free_their_native_code(monkeypatch, tmp_path):
    """400 different jit functions compiled and dropped. A first process puts their
    object code on disk, so no LLVM pass runs here (llvmlite's pass builder leaks ~70 KB
    per optimize, whatever we free): what is left is what the runtime keeps."""
    n = 400
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(tmp_path))
    subprocess.run([sys.executable, "-c", _COMPILE_ALL, str(n)], check=True, timeout=600,
                   env={**os.environ, "PYTHONPATH": ROOT})
    x = np.ones(8)
    for c in (-1.5, -2.5):      # warm up: imports, the first engine, the thread pool
        fc.jit(lambda v, c=c: np.tanh(v) * c, backend="cpu")(x)
    gc.collect()
    before, hits = _rss_mb(), cache.stats["hits"]
    for i in range(n):
        c = i + 0.5
        f = fc.jit(lambda v, c=c: np.tanh(v) * c, backend="cpu")
        assert f(x)[0] == np.tanh(1.0) * c
        del f
    gc.collect()
    grown = _rss_mb() - before
    assert cache.stats["hits"] - hits == 2 * n      # each: its kernel module, its graph entry
    assert grown < 8, f"+{grown:.1f} MB after {n} compiled and dropped functions"


def test_a_collected_jit_frees_its_executable():
    f = fc.jit(lambda v: v * 7.25 - 3, backend="cpu")
    np.testing.assert_allclose(f(np.arange(5.0)), np.arange(5.0) * 7.25 - 3)
    exe = weakref.ref(next(iter(f.cache.values())).run)
    del f
    gc.collect()
    assert exe() is None


def test_cache_size_evicts_the_least_recently_used_signature(caplog, monkeypatch):
    monkeypatch.setattr(fc.config, "log_retraces", True)
    f = fc.jit(lambda v: fnp.exp(v) + 0.125, backend="cpu", cache_size=2)
    a, b, c = np.ones(3), np.ones(4), np.ones(5)
    f(a)
    first = weakref.ref(next(iter(f.cache.values())).run)
    f(b)
    f(v=a)      # a is now the most recent (a keyword call: the general path, see jit)
    with caplog.at_level(logging.WARNING, logger="functorch_core.jit"):
        f(c)                        # evicts b
    assert [k[1][0].shape for k in f.cache] == [(3,), (5,)]
    assert any("evicted" in r.getMessage() and "cache_size=2" in r.getMessage()
               for r in caplog.records)
    for v in (a, b, c):             # b traces again; all stay correct
        np.testing.assert_allclose(f(v), np.exp(v) + 0.125)
    assert len(f.cache) == 2 and f(a) is not None
    f.clear_cache()
    gc.collect()
    assert first() is None


def test_default_cache_bound_comes_from_config(monkeypatch):
    monkeypatch.setattr(fc.config, "jit_cache_size", 3)
    f = fc.jit(lambda v: v + 2.5, backend="cpu")
    for n in range(1, 8):
        np.testing.assert_allclose(f(np.ones(n)), np.ones(n) + 2.5)
    assert len(f.cache) == 3


@pytest.mark.parametrize("bad", [0, -1, 2.0, "8"])
def test_bad_cache_size_is_rejected(bad):
    with pytest.raises(ValueError, match="cache_size"):
        fc.jit(lambda v: v, cache_size=bad)


def test_clear_caches_forgets_every_compiled_and_transformed_function():
    def loss(w):
        return fnp.sum(w * w * 1.75)
    f = fc.jit(lambda v: v * 1.5 + 0.75, backend="cpu")
    g = fc.grad(loss)
    x = np.arange(4.0)
    f(x)
    g(x)
    exe = weakref.ref(next(iter(f.cache.values())).run)
    assert runtime._CACHE
    fc.clear_caches()
    assert not f.cache and not runtime._CACHE and exe() is None
    from functorch_core.transforms import common
    assert loss not in common._CACHES
    np.testing.assert_allclose(f(x), x * 1.5 + 0.75)
    np.testing.assert_allclose(g(x), 3.5 * x)


# --- the disk cache against a damaged folder ------------------------------------------

@pytest.fixture
def folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(tmp_path))
    (tmp_path / "llvm").mkdir()
    return tmp_path / "llvm"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_an_entry_neither_hangs_nor_stays(folder):
    digest = cache.key("fifo", "t")
    path = folder / (digest + ".o")
    os.mkfifo(path)
    result = []
    th = threading.Thread(target=lambda: result.append(cache.load(digest)), daemon=True)
    th.start()
    th.join(20)
    assert not th.is_alive(), "cache.load blocked on a FIFO"
    assert result == [None] and not path.exists()
    assert cache.store(digest, b"obj") and cache.load(digest) == b"obj"


def test_a_folder_in_place_of_an_entry_is_repaired(folder):
    digest = cache.key("dir", "t")
    path = folder / (digest + ".o")
    (path / "inner").mkdir(parents=True)
    assert cache.load(digest) is None
    (path / "inner").mkdir(parents=True)
    assert cache.store(digest, b"obj")
    assert stat.S_ISREG(os.lstat(path).st_mode) and cache.load(digest) == b"obj"


def test_a_huge_entry_is_not_read(folder, monkeypatch):
    digest = cache.key("huge", "t")
    path = folder / (digest + ".o")
    with open(path, "wb") as f:
        f.truncate(cache.MAX_ENTRY_BYTES + 1)     # sparse: no disk used
    read = []
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or b"")
    assert cache.load(digest) is None and read == [] and not path.exists()


def test_memory_error_reading_an_entry_never_reaches_the_caller(folder, monkeypatch):
    digest = cache.key("m", "t")
    assert cache.store(digest, b"obj")

    def no_memory(fd, n):
        raise MemoryError
    monkeypatch.setattr(os, "read", no_memory)
    assert cache.load(digest) is None


def test_a_cache_failure_never_fails_jit(folder, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(cache, "_load", broken)
    monkeypatch.setattr(cache, "_store", broken)
    c = np.float32(uuid.uuid4().int % 1000 + 0.5)
    got = fc.jit(lambda a: fnp.exp(a) * c, backend="cpu")(np.ones(5, np.float32))
    np.testing.assert_allclose(got, np.exp(np.float32(1)) * c, rtol=1e-6)


_FORK_WHILE_COMPILING = """
import os, signal, sys, threading, time
import numpy as np
import functorch_core as fc

def chain(x):
    for _ in range(150):
        x = np.tanh(x) * 1.01 + 0.1
    return x

worker = threading.Thread(target=lambda: fc.jit(chain, backend="cpu")(np.ones(8)))
worker.start()
children = 0
while worker.is_alive() or children == 0:   # fork all through the first import and compile
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        y = fc.jit(lambda x: x * 2 + 1, backend="cpu")(np.ones(3))
        os._exit(0 if y[0] == 3 else 3)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        sys.exit(f"child {children} forked while compiling failed: status {status}")
    children += 1
    time.sleep(0.05)
worker.join()
print(children)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_imports_and_compiles():
    # a fresh process: the fork must land during the backend's first import and inside LLVM
    proc = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c",
                           _FORK_WHILE_COMPILING], capture_output=True, text=True,
                          timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split()[-1]) >= 3
    assert "release unlocked lock" not in proc.stderr


_CLEAR_WHILE_FIRST_CALL = """
import threading
import numpy as np
import functorch_core as fc

errors = []
def first_call():
    try:
        assert fc.jit(lambda x: np.tanh(x) + 1, backend="cpu")(np.ones(4))[0] > 1
    except Exception as e:
        errors.append(repr(e))
worker = threading.Thread(target=first_call)
worker.start()
calls = 0
while worker.is_alive() or calls == 0:
    try:
        fc.clear_caches()
    except Exception as e:
        errors.append(repr(e))
    calls += 1
worker.join()
assert not errors, errors[:2]
"""


def test_clear_caches_while_another_thread_makes_the_first_call():
    proc = subprocess.run([sys.executable, "-c", _CLEAR_WHILE_FIRST_CALL], capture_output=True,
                          text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
