"""The cpu backend's disk cache of object code (backends/llvm/cache.py).

Hits across processes run the same script in fresh interpreters that share a cache
folder; the entry format and its failure modes are tested on the cache module itself.
"""

import json
import os
import subprocess
import sys
import uuid

import numpy as np
import paths
import pytest
from functorch_core.backends.llvm import cache, kernels, runtime

import functorch_core as fc
import functorch_core.numpy as fnp

ROOT = paths.ROOT

# jit three graphs (two differ only in a constant), check them against NumPy and print
# the cache counters and the results' bytes. Each graph is one module of kernels and one
# native graph entry (small kernels only): six modules, six cache entries.
SCRIPT = """
import json, sys
import numpy as np
import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.backends.llvm import cache

x = np.linspace(-2, 2, 3000, dtype=np.float32).reshape(30, 100)
fns = [(lambda a: a * 2.0 + 1.0, lambda a: a * np.float32(2) + np.float32(1)),
       (lambda a: a * 3.0 + 1.0, lambda a: a * np.float32(3) + np.float32(1)),
       (lambda a: fnp.sum(fnp.tanh(a), axis=1), lambda a: np.tanh(a).sum(axis=1))]
results = []
for f, ref in fns:
    got = fc.jit(f, backend="cpu")(x)
    np.testing.assert_allclose(got, ref(x), rtol=1e-5, atol=1e-5)
    results.append(got.tobytes().hex())
print(json.dumps({"stats": dict(cache.stats), "results": results}))
"""


def run_script(cache_dir, tmp_path, script=SCRIPT):
    env = {k: v for k, v in os.environ.items() if k != "FUNCTORCH_CORE_CACHE_DIR"}
    env.update(PYTHONPATH=ROOT, FUNCTORCH_CORE_BACKEND="cpu", HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    if cache_dir is not None:
        env["FUNCTORCH_CORE_CACHE_DIR"] = str(cache_dir)
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(cache_dir):
    folder = os.path.join(cache_dir, "llvm")
    return sorted(n for n in os.listdir(folder) if n.endswith(".o")) if os.path.isdir(
        folder) else []


def test_second_process_loads_object_code_instead_of_compiling(tmp_path):
    cache_dir = tmp_path / "cache"
    first = run_script(cache_dir, tmp_path)
    assert first["stats"].get("hits", 0) == 0
    assert first["stats"]["compiled"] == 6 and first["stats"]["writes"] == 6
    assert len(entries(cache_dir)) == 6     # two per graph: no collisions
    second = run_script(cache_dir, tmp_path)
    assert second["stats"]["hits"] == 6
    assert second["stats"].get("compiled", 0) == 0 and second["stats"].get("writes", 0) == 0
    assert second["results"] == first["results"]


def test_corrupt_entries_are_compiled_again_and_replaced(tmp_path):
    cache_dir = tmp_path / "cache"
    first = run_script(cache_dir, tmp_path)
    names = entries(cache_dir)
    folder = os.path.join(cache_dir, "llvm")
    truncated, flipped, emptied = (os.path.join(folder, n) for n in names[:3])
    with open(truncated, "r+b") as f:
        f.truncate(os.path.getsize(truncated) // 2)
    with open(flipped, "r+b") as f:
        f.seek(-10, os.SEEK_END)
        byte = f.read(1)
        f.seek(-10, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0xFF]))
    open(emptied, "wb").close()
    second = run_script(cache_dir, tmp_path)
    assert second["stats"]["corrupt"] == 3 and second["stats"]["compiled"] == 3
    assert second["results"] == first["results"]
    third = run_script(cache_dir, tmp_path)
    assert third["stats"]["hits"] == 6 and third["stats"].get("compiled", 0) == 0


def test_disabled_cache_writes_nothing(tmp_path):
    out = run_script("", tmp_path)
    assert out["stats"]["compiled"] == 6 and out["stats"].get("writes", 0) == 0
    assert not any(files for _, _, files in os.walk(tmp_path))


def test_default_folder_follows_xdg_cache_home(tmp_path):
    run_script(None, tmp_path)
    assert len(entries(tmp_path / "xdg" / "functorch_core")) == 6


def test_directory_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(tmp_path))
    assert cache.directory() == str(tmp_path)
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", "")
    assert cache.directory() is None
    monkeypatch.delenv("FUNCTORCH_CORE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.directory() == str(tmp_path / "xdg" / "functorch_core")


# --- the entry format, in this process -------------------------------------------------

@pytest.fixture
def folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(tmp_path))
    return tmp_path / "llvm"


def test_store_then_load_round_trips(folder):
    digest = cache.key("module", "target")
    assert cache.load(digest) is None
    assert cache.store(digest, b"\x7fELF object")
    assert cache.load(digest) == b"\x7fELF object"
    assert not [n for n in os.listdir(folder) if n.startswith(".tmp-")]


def test_clear_removes_every_entry(folder):
    for i in range(3):
        cache.store(cache.key(str(i), "t"), b"obj")
    assert cache.clear() == 3
    assert entries(folder.parent) == [] and cache.clear() == 0


def test_key_depends_on_ir_and_target():
    keys = {cache.key("a", "x86"), cache.key("b", "x86"), cache.key("a", "x86 -avx")}
    assert len(keys) == 3 and cache.key("a", "x86") == cache.key("a", "x86")


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "other key"])
def test_damaged_entry_is_ignored(folder, damage):
    digest, other = cache.key("m", "t"), cache.key("n", "t")
    cache.store(digest, bytes(range(200)))
    path = folder / (digest + ".o")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:-1])
    elif damage == "flip":
        path.write_bytes(data[:-5] + bytes([data[-5] ^ 1]) + data[-4:])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        os.replace(path, folder / (other + ".o"))
        digest = other
    before = cache.stats["corrupt"]
    assert cache.load(digest) is None
    assert cache.stats["corrupt"] == before + 1


def test_unwritable_folder_never_fails_jit(monkeypatch, tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(blocker / "cache"))
    assert cache.store(cache.key("m", "t"), b"obj") is False
    c = np.float32(uuid.uuid4().int % 1000 + 0.5)     # a graph this process has not compiled
    errors = cache.stats["errors"]
    got = fc.jit(lambda a: fnp.exp(a) * c, backend="cpu")(np.ones(5, np.float32))
    np.testing.assert_allclose(got, np.exp(np.float32(1)) * c, rtol=1e-6)
    assert cache.stats["errors"] > errors


def test_eviction_keeps_the_folder_bounded(folder):
    digests = [cache.key(str(i), "t") for i in range(6)]
    for i, d in enumerate(digests):
        cache.store(d, bytes(1000))
        os.utime(folder / (d + ".o"), (1000 + i, 1000 + i))    # oldest first
    cache.load(digests[0])                                      # a hit makes it recent
    cache._evict(str(folder), limit=4 * 1100)
    left = set(entries(folder.parent))
    assert digests[0] + ".o" in left and digests[1] + ".o" not in left
    assert sum(os.path.getsize(folder / n) for n in left) <= 3 * 1100


def test_one_process_compiles_a_module_once(folder):
    c = np.float32(uuid.uuid4().int % 1000 + 0.25)
    x = np.arange(7, dtype=np.float32)
    compiled = cache.stats["compiled"]
    a = fc.jit(lambda v: v * c - 1.0, backend="cpu")(x)
    runtime._CACHE.clear()      # a new executable: same IR, same engine module
    b = fc.jit(lambda v: v * c - 1.0, backend="cpu")(x)
    assert cache.stats["compiled"] == compiled + 2     # its kernels and its graph entry
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, x * c - 1, rtol=1e-6)


def test_small_and_big_kernels_are_two_entries(folder):
    c = np.float32(uuid.uuid4().int % 1000 + 0.75)
    big = np.arange(2 * kernels.SMALL_KERNEL_POINTS, dtype=np.float32)
    small = np.arange(10, dtype=np.float32)
    writes = cache.stats["writes"]
    got_big, got_small = fc.jit(lambda a, b: (a * c, fnp.exp(b) + c), backend="cpu")(big, small)
    np.testing.assert_allclose(got_big, big * c, rtol=1e-6)
    np.testing.assert_allclose(got_small, np.exp(small) + c, rtol=1e-6)
    # the two modules of kernels and the graph entry that calls them all
    assert cache.stats["writes"] == writes + 3 and len(entries(folder.parent)) == 3
