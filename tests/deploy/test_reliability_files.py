"""Crafted export files and library names give clear errors, never a RecursionError, an
unbounded read or llvmlite's DuplicatedNameError."""

import hashlib
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np
import paths
import pytest
from functorch_core.backends.llvm import cnames
from functorch_core.ir import serialize

import functorch_core as fc


def _export():
    return fc.export(lambda x: np.tanh(x) * 2.0, np.ones(3))


def _file_with_header_text(body: bytes) -> bytes:
    """A graph file around the header text ``body``, checksum and sizes right."""
    payload = struct.pack("<Q", len(body)) + body
    head = struct.pack("<8sI32sQ", serialize.MAGIC, serialize.FORMAT_VERSION,
                       hashlib.sha256(payload).digest(), len(payload))
    return head + payload


@pytest.mark.parametrize("depth", [serialize.MAX_JSON_DEPTH + 1, 100_000])
def test_deeply_nested_header_is_a_format_error(tmp_path, depth):
    good = tmp_path / "good.fcx"
    _export().save(good)
    header, _ = serialize.unpack(good.read_bytes())
    body = json.dumps(header).encode()[:-1] + b',"x":' + b"[" * depth + b"]" * depth + b"}"
    path = tmp_path / "nested.fcx"
    path.write_bytes(_file_with_header_text(body))
    with pytest.raises(serialize.FormatError, match=rf"nests {depth + 1} levels deep; a graph "
                                                    rf"file nests at most \d+"):
        fc.load_exported(path)


def test_json_depth_skips_strings_and_escapes():
    for text, depth in [(b"", 0), (b"1", 0), (b"[]", 1), (b'[[1],{"a":[2]}]', 3),
                        (b'"[[["', 0), (b'["\\"[["]', 1), (b'["\\\\",[[1]]]', 3),
                        (b'{"a":"}}}","b":[{"c":"\\\\\\"["}]}', 3)]:
        assert serialize.json_depth(text) == depth, text
        if text:
            json.loads(text)      # each case is valid JSON


def test_real_exports_are_far_below_the_depth_limit(tmp_path):
    def f(x):
        return fc.cond(x.sum() > 0, lambda y: fc.cond(y[0] > 1, np.sin, np.cos, y),
                       np.tanh, x)
    exp = fc.export(f, np.ones(3))
    exp.save(tmp_path / "e.fcx")
    data = (tmp_path / "e.fcx").read_bytes()
    n, = struct.unpack_from("<Q", data, struct.calcsize("<8sI32sQ"))
    assert serialize.json_depth(data[56:56 + n]) < serialize.MAX_JSON_DEPTH // 4
    np.testing.assert_allclose(fc.load_exported(tmp_path / "e.fcx")(np.ones(3)), f(np.ones(3)))


LOAD_DEV_ZERO = """
import resource, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import functorch_core as fc
from functorch_core.ir import serialize
t = time.perf_counter()
try:
    fc.load_exported("/dev/zero")
except serialize.FormatError as e:
    print("FormatError", time.perf_counter() - t, e)
"""


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_by_its_magic_bytes_without_reading_on():
    proc = subprocess.run([sys.executable, "-c", LOAD_DEV_ZERO], cwd=paths.ROOT, timeout=120,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": paths.ROOT})
    assert proc.returncode == 0, proc.stderr[-1000:]
    kind, seconds, *message = proc.stdout.split()
    assert kind == "FormatError" and float(seconds) < 1.0
    assert "bad magic bytes" in " ".join(message)


def test_declared_size_bounds_what_is_read(tmp_path):
    good = tmp_path / "good.fcx"
    _export().save(good)
    data = good.read_bytes()
    padded = tmp_path / "padded.fcx"
    padded.write_bytes(data + bytes(1 << 20))
    with pytest.raises(serialize.FormatError, match="truncated or padded"):
        fc.load_exported(padded)
    short = tmp_path / "short.fcx"
    short.write_bytes(data[:-1])
    with pytest.raises(serialize.FormatError, match="truncated or padded"):
        fc.load_exported(short)
    np.testing.assert_allclose(fc.load_exported(good)(np.ones(3)), np.tanh(np.ones(3)) * 2)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_read_only_up_to_the_declared_size(tmp_path):
    good = tmp_path / "good.fcx"
    _export().save(good)
    fifo = tmp_path / "pipe.fcx"
    os.mkfifo(fifo)
    # the writer sends the file, then more bytes than the header declares, then blocks
    writer = subprocess.Popen([sys.executable, "-c",
                               f"import sys, time; f = open({str(fifo)!r}, 'wb'); "
                               f"f.write(open({str(good)!r}, 'rb').read() + b'x' * 10); "
                               "f.flush(); time.sleep(60)"])
    try:
        t = time.perf_counter()
        with pytest.raises(serialize.FormatError, match="truncated or padded"):
            fc.load_exported(fifo)
        assert time.perf_counter() - t < 30
    finally:
        writer.kill()
        writer.wait()


# --- library names ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["malloc", "free", "memcpy", "printf", "exp", "tanh",
                                  "abort", "main", "dlopen"])
def test_c_library_names_are_refused_before_llvm(tmp_path, name):
    with pytest.raises(ValueError, match=rf"compile_library: name '{name}' is a C library "
                                         "function.*Choose a name of your own"):
        _export().compile_library(tmp_path / "lib.so", name)


@pytest.mark.parametrize(("name", "why"), [
    ("int", "C keyword"), ("double", "C keyword"), ("_Model", "underscore"),
    ("9lives", "not a C identifier"), ("na-me", "not a C identifier"),
    ("café", "not a C identifier"), ("x" * 300, "at most 128"),
])
def test_names_c_cannot_declare_are_refused(tmp_path, name, why):
    with pytest.raises(ValueError, match=why):
        _export().compile_library(tmp_path / "lib.so", name)


def test_derived_symbol_colliding_with_libc_is_refused():
    # the library exports name + "_init": pthread_mutex_init is libc's
    assert hasattr(__import__("ctypes").CDLL(None), "pthread_mutex_init")
    with pytest.raises(ValueError, match="gives the symbol 'pthread_mutex_init'"):
        cnames.check_library_name("pthread_mutex")
    cnames.check_library_name("mlp")
    cnames.check_library_name("my_model_v2")
