"""Exported.save stores the export compiled for this CPU (deploy/native.py): load_exported on
a matching machine calls it without compiling or importing LLVM; elsewhere it compiles and
says why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from functorch_core.backends.llvm.blas import blas_int_bits
from functorch_core.ir import serialize

import functorch_core as fc
from functorch_core.deploy import native as stored

pytestmark = [
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)"),
    pytest.mark.skipif(stored.host_flags() is None, reason="no /proc/cpuinfo"),
    pytest.mark.skipif(blas_int_bits() != 64, reason="needs NumPy's ILP64 OpenBLAS"),
]

RNG = np.random.default_rng(0)


def _cnn():
    nn = fc.nn
    fc.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 10)).eval()


def _header(path):
    with open(path, "rb") as f:
        return serialize.unpack(f.read())[0]


def test_a_loaded_cnn_runs_its_stored_code_without_llvm(tmp_path):
    model = _cnn()
    x = RNG.random((3, 1, 8, 8)).astype(np.float32)
    exp = fc.export(fc.freeze(model), x)
    exp.save(tmp_path / "cnn.fcx")
    assert _header(tmp_path / "cnn.fcx")["native"]["machine"]["flags"]
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import functorch_core as fc
        exp = fc.load_exported({str(tmp_path / "cnn.fcx")!r})
        y = exp(np.load({str(tmp_path / "x.npy")!r}))
        np.save({str(tmp_path / "y.npy")!r}, y)
        print(json.dumps({{"native": exp.native, "llvm": "llvmlite" in sys.modules}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"FUNCTORCH_CORE_CACHE_DIR": str(tmp_path / "c"),
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"native": True, "llvm": False}
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), model(x), rtol=1e-5, atol=1e-6)


def test_native_false_and_exports_a_library_cannot_hold_store_none(tmp_path):
    x = np.ones((4, 3), np.float32)
    fc.export(lambda x: x * 2, x).save(tmp_path / "plain.fcx", native=False)
    loop = fc.export(lambda x: np.abs(np.fft.rfft(x)), x)     # fft: not in a library yet
    loop.save(tmp_path / "loop.fcx")
    dyn = fc.export(lambda x: x + 1, x, dynamic={0: {0: "n"}})
    dyn.save(tmp_path / "dyn.fcx")
    for name, arg in (("plain", x), ("loop", x), ("dyn", np.ones((7, 3), np.float32))):
        assert "native" not in _header(tmp_path / f"{name}.fcx"), name
        loaded = fc.load_exported(tmp_path / f"{name}.fcx")
        assert not loaded.native
        assert loaded(arg).shape[0] == arg.shape[0]


def test_another_cpu_compiles_instead_and_says_why(tmp_path, monkeypatch):
    w = RNG.standard_normal((3, 5)).astype(np.float32)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    exp = fc.export(lambda x: np.tanh(x @ w), x)
    exp.save(tmp_path / "m.fcx")
    monkeypatch.setattr(stored, "host_flags", lambda: frozenset({"fpu"}))
    with pytest.warns(RuntimeWarning, match="not using the native code.*this CPU lacks"):
        loaded = fc.load_exported(tmp_path / "m.fcx")
    assert not loaded.native
    np.testing.assert_allclose(loaded(x), np.tanh(x @ w), rtol=1e-6)


def test_the_stored_code_checks_inputs_and_bounds_like_the_compiled_path(tmp_path):
    x = np.arange(6.0)
    exp = fc.export(lambda x, i: x[i] * 2, x, np.int64(2))
    exp.save(tmp_path / "take.fcx")
    loaded = fc.load_exported(tmp_path / "take.fcx")
    assert loaded.native
    assert loaded(x, np.int64(4)) == 8.0
    with pytest.raises(IndexError, match="out of bounds"):
        loaded(x, np.int64(10))
    with pytest.raises(TypeError, match="expected float64\\[6\\]"):
        loaded(np.arange(5.0), np.int64(1))
    assert "native" in _header(tmp_path / "take.fcx")


def test_a_singular_matrix_raises_linalgerror_from_the_stored_code(tmp_path):
    a, b = np.eye(3) * 2.0, np.ones((3, 2))
    fc.export(np.linalg.solve, a, b).save(tmp_path / "s.fcx")
    loaded = fc.load_exported(tmp_path / "s.fcx")
    assert loaded.native
    np.testing.assert_array_equal(loaded(a, b), np.linalg.solve(a, b))
    with pytest.raises(np.linalg.LinAlgError, match=r"(?i)singular"):
        loaded(np.zeros((3, 3)), b)


def test_a_failing_native_build_still_saves_the_file(tmp_path, monkeypatch):
    exp = fc.export(lambda x: x * 2.0, np.ones(3))

    def broken(*args, **kwargs):
        raise KeyError("an internal error of the library's codegen")
    monkeypatch.setattr(type(exp), "compile_library", broken)
    with pytest.warns(RuntimeWarning, match="native code could not be built.*KeyError"):
        exp.save(tmp_path / "m.fcx")
    monkeypatch.undo()
    loaded = fc.load_exported(tmp_path / "m.fcx")
    assert not loaded.native
    np.testing.assert_array_equal(loaded(np.ones(3)), [2.0, 2.0, 2.0])
