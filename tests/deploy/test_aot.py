"""Exported.compile_library: a shared library with a C entry point, called through ctypes
in a process without functorch_core and from a C program compiled against its header."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from functorch_core.backends.llvm.aot import NotNativeError
from functorch_core.backends.llvm.blas import blas_int_bits

import functorch_core as fc

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
needs_openblas = pytest.mark.skipif(
    blas_int_bits() != 64, reason="products in a .so need NumPy's bundled ILP64 OpenBLAS")

RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((64, 32)).astype(np.float32)
B1 = RNG.standard_normal(32).astype(np.float32)
W2 = RNG.standard_normal((32, 10)).astype(np.float32)


def mlp(x):
    h = np.tanh(x @ W1 + B1)
    logits = h @ W2
    return {"logits": logits, "pred": np.argmax(logits, axis=1), "energy": (h * h).sum()}


def _call_ctypes_elsewhere(so, name, inputs, tmp_path):
    """Call the library from a fresh Python that imports only numpy and ctypes."""
    for i, a in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", a)
    script = textwrap.dedent(f"""
        import ctypes, json, sys
        import numpy as np
        lib = ctypes.CDLL({str(so)!r})
        f = getattr(lib, {name!r})
        for q in ("input", "output"):
            getattr(lib, f"{name}_{{q}}_dtype").restype = ctypes.c_char_p
            getattr(lib, f"{name}_{{q}}_shape").restype = ctypes.POINTER(ctypes.c_int64)
        def avals(q):
            n = getattr(lib, f"{name}_num_{{q}}s")()
            out = []
            for i in range(n):
                rank = getattr(lib, f"{name}_{{q}}_rank")(i)
                shape = getattr(lib, f"{name}_{{q}}_shape")(i)
                dt = getattr(lib, f"{name}_{{q}}_dtype")(i).decode()
                out.append((tuple(shape[k] for k in range(rank)), dt))
            return out
        ins = [np.load({str(tmp_path)!r} + f"/in{{i}}.npy") for i in range(len(avals("input")))]
        outs = [np.empty(s, d) for s, d in avals("output")]
        iv = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
        ov = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
        rc = f(iv, ov)
        assert "functorch_core" not in sys.modules and "llvmlite" not in sys.modules
        for j, o in enumerate(outs):
            np.save({str(tmp_path)!r} + f"/out{{j}}.npy", o)
        print(json.dumps({{"rc": rc, "in": avals("input"), "out": avals("output"),
                          "bad": getattr(lib, f"{name}_input_rank")(99)}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return report, [np.load(tmp_path / f"out{j}.npy") for j in range(len(report["out"]))]


@needs_openblas
def test_library_through_ctypes_in_a_fresh_process(tmp_path):
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    exp = fc.export(mlp, x)
    info = exp.compile_library(tmp_path / "libmlp.so", "mlp")
    assert info["blas"] and os.path.exists(info["header"])
    report, outs = _call_ctypes_elsewhere(tmp_path / "libmlp.so", "mlp", [x], tmp_path)
    assert report["rc"] == 0 and report["bad"] == -1
    assert report["in"] == [[[8, 64], "float32"]]
    assert [tuple(s) for s, _ in report["out"]] == [a.shape for a in exp.out_avals]
    want = exp(x)
    flat = [want["energy"], want["logits"], want["pred"]]     # sorted dict keys
    for got, ref in zip(outs, flat, strict=True):
        assert got.dtype == ref.dtype
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_an_out_of_bounds_index_returns_4(tmp_path):
    x = RNG.standard_normal(6)
    exp = fc.export(lambda x, i: x[i] * 2.0, x, np.array([0, 5]))
    exp.compile_library(tmp_path / "libtake.so", "take")
    for idx, rc in ((np.array([-1, 5]), 0), (np.array([1, 6]), 4), (np.array([-7, 0]), 4)):
        report, outs = _call_ctypes_elsewhere(tmp_path / "libtake.so", "take", [x, idx],
                                              tmp_path)
        assert report["rc"] == rc, (idx, report)
        if rc == 0:
            np.testing.assert_array_equal(outs[0], x[idx] * 2.0)
    assert "4 when an integer index is out of bounds" in \
        (tmp_path / "libtake.h").read_text()


def test_outputs_that_are_inputs_constants_literals_or_repeated(tmp_path):
    c = np.arange(6, dtype=np.float64).reshape(2, 3)

    def f(x):
        y = x * 2.0
        return x, y, y, c, 3.0, y.reshape(3, 2)
    x = RNG.standard_normal((2, 3))
    exp = fc.export(f, x)
    exp.compile_library(tmp_path / "libodd.so", "odd")
    report, outs = _call_ctypes_elsewhere(tmp_path / "libodd.so", "odd", [x], tmp_path)
    assert report["rc"] == 0
    for got, ref in zip(outs, exp(x), strict=True):
        np.testing.assert_array_equal(got, ref)


@needs_openblas
def test_c_program_against_the_header(tmp_path):
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    exp = fc.export(lambda x: np.tanh(x @ W1 + B1) @ W2, x)
    exp.compile_library(tmp_path / "libnet.so", "net")
    x.tofile(tmp_path / "x.bin")
    (tmp_path / "main.c").write_text(textwrap.dedent("""
        #include <stdio.h>
        #include "libnet.h"
        int main(void) {
            float x[4 * 64], y[4 * 10];
            FILE *f = fopen("x.bin", "rb");
            if (fread(x, sizeof x, 1, f) != 1) return 10;
            fclose(f);
            if (net_num_inputs() != 1 || net_output_rank(0) != 2) return 11;
            if (net_output_shape(0)[1] != 10) return 12;
            if (net_init("/nonexistent/libblas.so") != 1) return 13;
            const void *ins[] = {x};
            void *outs[] = {y};
            int rc = net(ins, outs);
            if (rc) return 20 + rc;
            f = fopen("y.bin", "wb");
            fwrite(y, sizeof y, 1, f);
            fclose(f);
            return 0;
        }
    """))
    subprocess.run(["cc", "-O1", "-o", "main", "main.c", "-L.", "-l:libnet.so",
                    "-Wl,-rpath,$ORIGIN"], cwd=tmp_path, check=True, timeout=120)
    done = subprocess.run(["./main"], cwd=tmp_path, timeout=60)
    assert done.returncode == 0
    got = np.fromfile(tmp_path / "y.bin", np.float32).reshape(4, 10)
    np.testing.assert_allclose(got, exp(x), rtol=1e-6, atol=1e-6)


def test_steps_that_are_not_native_are_refused(tmp_path):
    eig = fc.export(np.linalg.eig, np.eye(3) * 1j)
    with pytest.raises(NotNativeError, match="eig on complex128"):
        eig.compile_library(tmp_path / "l.so", "l")
    inner = fc.export(lambda x: fc.lax.scan(lambda c, r: (c + r, np.abs(np.fft.rfft(r))),
                                            x[0], x)[1], np.ones((3, 4)))
    with pytest.raises(NotNativeError, match="fft"):    # refused inside a loop body too
        inner.compile_library(tmp_path / "f.so", "f")
    kgrad = fc.export(lambda x, w: fc.lax.conv_general_dilated(
        x, w, (1,), [(0, 0)], batch_group_count=2), np.ones((2, 2, 5)), np.ones((2, 2, 3)))
    with pytest.raises(NotNativeError, match="batch_group_count"):
        kgrad.compile_library(tmp_path / "c.so", "c")
    dyn = fc.export(lambda x: x + 1, np.ones(3), dynamic={0: {0: "n"}})
    with pytest.raises(ValueError, match="dynamic"):
        dyn.compile_library(tmp_path / "d.so", "d")
    with pytest.raises(ValueError, match="C identifier"):
        fc.export(np.sin, np.ones(3)).compile_library(tmp_path / "s.so", "not-a-name")


def _call_here(so, name, inputs, like):
    """Call the library in this process through ctypes; the outputs shaped like ``like``'s
    arrays."""
    lib = ctypes.CDLL(str(so))
    outs = [np.empty_like(a) for a in like]
    iv = (ctypes.c_void_p * len(inputs))(*[a.ctypes.data for a in inputs])
    ov = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
    return getattr(lib, name)(iv, ov), outs


# (input shape, kernel shape, conv_general_dilated's keyword arguments)
CONVS = {
    "nchw-strided-padded-dilated-grouped": (
        (2, 4, 9, 8), (6, 2, 3, 2), dict(window_strides=(2, 1), padding=[(1, 2), (0, 1)],
                                         rhs_dilation=(2, 1), feature_group_count=2)),
    "nhwc-hwio-scattered": (
        (2, 7, 6, 3), (3, 3, 3, 5), dict(window_strides=(1, 2), padding="SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "1d-transposed-negative-padding": (
        (3, 2, 11), (4, 2, 3), dict(window_strides=(1,), padding=[(-1, 2)],
                                    lhs_dilation=(2,))),
    "3d": ((1, 2, 4, 5, 3), (2, 2, 2, 3, 2), dict(window_strides=(1, 2, 1),
                                                  padding="VALID")),
    "depthwise": ((2, 3, 6, 6), (3, 1, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                                   feature_group_count=3)),
}


@needs_openblas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(CONVS))
def test_convolutions_run_natively_in_the_library(case, dtype, tmp_path):
    xs, ws, kw = CONVS[case]
    x = RNG.standard_normal(xs).astype(dtype)
    w = RNG.standard_normal(ws).astype(dtype)
    kw = dict(kw)
    strides, padding = kw.pop("window_strides"), kw.pop("padding")

    def f(x, w):
        return fc.lax.conv_general_dilated(x, w, strides, padding, **kw)
    exp = fc.export(f, x, w)
    exp.compile_library(tmp_path / "libconv.so", "conv")
    want = fc.jit(f)(x, w)
    rc, (got,) = _call_here(tmp_path / "libconv.so", "conv", [x, w], [want])
    assert rc == 0
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@needs_openblas
def test_a_frozen_cnn_ships_as_a_library(tmp_path):
    """Conv2d-BatchNorm2d-ReLU-MaxPool2d-Linear, frozen (BatchNorm folded into the conv),
    called from a fresh process that imports neither functorch_core nor llvmlite."""
    nn = fc.nn
    fc.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 4, 2, stride=2), nn.Flatten(),
                          nn.Linear(4 * 2 * 2, 10)).eval()
    x = RNG.random((5, 1, 8, 8)).astype(np.float32)
    exp = fc.export(fc.freeze(model), x)
    exp.compile_library(tmp_path / "libcnn.so", "cnn")
    report, (got,) = _call_ctypes_elsewhere(tmp_path / "libcnn.so", "cnn", [x], tmp_path)
    assert report["rc"] == 0
    np.testing.assert_allclose(got, model(x), rtol=1e-5, atol=1e-6)


def _lstm_cell(h, c, x, w, u, b):
    gates = x @ w + h @ u + b
    i, f, g, o = np.split(gates, 4, axis=-1)
    c = fc.nn.functional.sigmoid(f) * c + fc.nn.functional.sigmoid(i) * np.tanh(g)
    return fc.nn.functional.sigmoid(o) * np.tanh(c), c


LOOPS = {
    "scan-lstm": lambda x, w: fc.lax.scan(
        lambda hc, xt: ((hc2 := _lstm_cell(*hc, xt, w, w[:4].T[:, :4].T @ np.eye(16), 0.1)),
                        hc2[0] @ w[:4, :8]), (np.zeros((2, 4)), np.zeros((2, 4))), x),
    "scan-reverse": lambda x, w: fc.lax.scan(lambda c, r: (c * 0.5 + r, c.sum()), x[0], x,
                                             reverse=True),
    "while": lambda x, w: fc.lax.while_loop(lambda c: c[1].sum() < 50.0,
                                            lambda c: (c[0] + 1, c[1] * 1.5 + 0.5),
                                            (np.int32(0), np.abs(x[0]) + 0.1)),
    "fori": lambda x, w: fc.lax.fori_loop(0, 7, lambda i, v: np.tanh(v @ w[:4, :4]) + i, x[0]),
    "cond": lambda x, w: fc.lax.cond(x.sum() > 0, lambda v: v @ w[:4, :8],
                                     lambda v: -v[:, :2].repeat(4, axis=1), x[0]),
    "nested": lambda x, w: fc.lax.scan(lambda c, r: (fc.lax.fori_loop(
        0, 3, lambda i, v: v * 0.9 + r, c), c.sum()), x[0], x),
}


@needs_openblas
@pytest.mark.parametrize("case", list(LOOPS))
def test_control_flow_runs_natively_in_the_library(case, tmp_path):
    x = RNG.standard_normal((5, 2, 4))
    w = RNG.standard_normal((4, 16))
    f = LOOPS[case]
    exp = fc.export(f, x, w)
    exp.compile_library(tmp_path / "libloop.so", "loop")
    want = [np.asarray(v) for v in fc.tree_leaves(fc.jit(f)(x, w))]
    rc, got = _call_here(tmp_path / "libloop.so", "loop", [x, w], want)
    assert rc == 0
    for g, v in zip(got, want, strict=True):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)


@needs_openblas
def test_a_frozen_lstm_classifier_ships_as_a_library(tmp_path):
    """nn.LSTM (a scan) and a Linear head on the last step, called from a fresh process."""
    nn = fc.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(6, 12, batch_first=True)
            self.head = nn.Linear(12, 5)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    fc.manual_seed(1)
    model = Classifier().eval()
    x = RNG.random((3, 7, 6)).astype(np.float32)
    exp = fc.export(fc.freeze(model), x)
    assert any(e.prim.name == "scan" for e in exp.graph.eqns)
    exp.compile_library(tmp_path / "liblstm.so", "lstm")
    report, (got,) = _call_ctypes_elsewhere(tmp_path / "liblstm.so", "lstm", [x], tmp_path)
    assert report["rc"] == 0
    np.testing.assert_allclose(got, model(x), rtol=1e-5, atol=1e-6)


@needs_openblas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_and_cholesky_run_natively_with_numpys_bits(dtype, tmp_path):
    a = RNG.standard_normal((3, 5, 5)).astype(dtype)
    b = RNG.standard_normal((3, 5, 2)).astype(dtype)
    spd = (a @ a.transpose(0, 2, 1) + 5 * np.eye(5)).astype(dtype)
    cases = {"solve": (np.linalg.solve, (a, b)), "inv": (np.linalg.inv, (a,)),
             "chol": (np.linalg.cholesky, (spd,)),
             "cholu": (lambda m: fc.numpy.linalg.cholesky(m, upper=True), (spd,))}
    for name, (f, args) in cases.items():
        fc.export(f, *args).compile_library(tmp_path / f"lib{name}.so", name)
        want = np.asarray(fc.jit(f)(*args))
        rc, (got,) = _call_here(tmp_path / f"lib{name}.so", name, list(args), [want])
        assert rc == 0, name
        np.testing.assert_array_equal(got, f(*args) if name != "cholu" else want, name)
    # a singular matrix: code 5, where NumPy raises LinAlgError
    fc.export(np.linalg.solve, a, b).compile_library(tmp_path / "libs.so", "s")
    rc, _ = _call_here(tmp_path / "libs.so", "s", [np.zeros_like(a), b], [b])
    assert rc == 5
