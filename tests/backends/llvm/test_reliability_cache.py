"""A crafted disk-cache entry (right checksum, wrong object code) never aborts the process:
``objcheck`` refuses it before LLVM sees it, and the module is compiled again.

Each case writes crafted entries with the cache's own ``store`` (so header, length and
SHA-256 are right) and runs a fresh interpreter over them with a timeout; without the
check LLVM ends that interpreter with ``LLVM ERROR`` (signal 6)."""

import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import paths
import pytest
from functorch_core.backends.llvm import cache, objcheck
from llvmlite import binding as llvm

SCRIPT = """
import json
import numpy as np
import functorch_core as fc
from functorch_core.backends.llvm import cache
x = np.linspace(-1, 1, 12).reshape(3, 4)
y = fc.jit(lambda a: np.tanh(a) @ a.T + 1.0, backend="cpu")(x)
np.testing.assert_allclose(y, np.tanh(x) @ x.T + 1.0, rtol=1e-13)
print(json.dumps(dict(cache.stats)))
"""


def run(cache_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FUNCTORCH_CORE_CACHE_DIR"}
    env.update(PYTHONPATH=paths.ROOT, HOME=str(tmp_path / "home"),
               FUNCTORCH_CORE_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=paths.ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _sections(obj):
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shnum, = struct.unpack_from("<H", obj, 0x3C)
    return [(shoff + i * 64, struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * 64))
            for i in range(shnum)]


def _first_relocation(obj):
    for _, (_n, kind, _f, _a, offset, size, *_rest) in _sections(obj):
        if kind == 4 and size:      # SHT_RELA
            return offset
    return None


def garbage_elf(obj):
    return b"\x7fELF" + np.random.default_rng(0).bytes(len(obj) - 4)


def wrong_class(obj):
    return obj[:4] + b"\x01" + obj[5:]


def sections_past_the_end(obj):
    return obj[: len(obj) // 2]


def unknown_relocation_type(obj):
    at = _first_relocation(obj)
    out = bytearray(obj)
    struct.pack_into("<I", out, at + 8, 0xEE)      # low half of r_info: the type
    return bytes(out)


def relocation_past_the_symbols(obj):
    at = _first_relocation(obj)
    out = bytearray(obj)
    struct.pack_into("<I", out, at + 12, 0xFFFFFF)     # high half of r_info: the symbol
    return bytes(out)


def entry_function_renamed(obj):
    return obj.replace(b"fc_", b"fC_")      # the functions looked up are not defined


CRAFTED = [garbage_elf, wrong_class, sections_past_the_end, unknown_relocation_type,
           relocation_past_the_symbols, entry_function_renamed]


@pytest.fixture(scope="module")
def good_cache(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("good")
    first = run(tmp / "cache", tmp)
    assert first.get("hits", 0) == 0 and first["writes"] >= 2
    return tmp / "cache", first["writes"]


def _craft(cache_dir, damage, monkeypatch):
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(cache_dir))
    names = [n[:-2] for n in os.listdir(cache_dir / "llvm") if n.endswith(".o")]
    crafted = 0
    for digest in names:
        obj = cache.load(digest)
        assert obj is not None
        if damage in (unknown_relocation_type, relocation_past_the_symbols) and \
                _first_relocation(obj) is None:
            continue
        assert cache.store(digest, damage(obj))
        crafted += 1
    return crafted


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF objects")
@pytest.mark.parametrize("damage", CRAFTED)
def test_crafted_entry_is_compiled_again_not_an_abort(good_cache, damage, tmp_path,
                                                     monkeypatch):
    cache_dir = tmp_path / "cache"
    shutil.copytree(good_cache[0], cache_dir)
    crafted = _craft(cache_dir, damage, monkeypatch)
    assert crafted >= 1
    second = run(cache_dir, tmp_path)
    assert second["corrupt"] == crafted and second["compiled"] == crafted
    assert second.get("hits", 0) == good_cache[1] - crafted
    third = run(cache_dir, tmp_path)      # the entries were replaced by good ones
    assert third.get("corrupt", 0) == 0 and third["hits"] == good_cache[1]


def test_genuine_objects_pass_the_check(good_cache, monkeypatch):
    monkeypatch.setenv("FUNCTORCH_CORE_CACHE_DIR", str(good_cache[0]))
    triple = llvm.get_process_triple()
    objs = [cache.load(n[:-2]) for n in os.listdir(good_cache[0] / "llvm")]
    assert any(not objcheck.loadable(o, triple, [], lambda s: False) for o in objs)
    for n in os.listdir(good_cache[0] / "llvm"):
        obj = cache.load(n[:-2])
        assert objcheck.loadable(obj, triple, [], lambda s: True)
        assert not objcheck.loadable(obj, triple, ["fc_not_defined_here"], lambda s: True)
        assert not objcheck.loadable(obj[:40], triple, [], lambda s: True)
