"""functorch_core.export: trace once, save, load and run without the user's code."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap

import numpy as np
import paths
import pytest
from functorch_core.ir import serialize

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.deploy.dynamic import DynamicError

ROOT = paths.ROOT
RNG = np.random.default_rng(0)
PARAMS = {"w1": RNG.standard_normal((6, 16)).astype(np.float32),
          "b1": RNG.standard_normal(16).astype(np.float32),
          "w2": RNG.standard_normal((16, 3)).astype(np.float32)}


def mlp(params, x):
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"]
    return {"logits": logits, "mean": logits.mean(axis=0)}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        np.testing.assert_array_equal(a[k], b[k])


def test_export_matches_jit_and_round_trips(tmp_path):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    exp = fc.export(mlp, PARAMS, x)
    assert "dot_general" in exp.graph_text
    assert [str(a) for a in exp.in_avals] == ["f32[16]", "f32[6,16]", "f32[16,3]", "f32[4,6]"]
    _same(exp(PARAMS, x), fc.jit(mlp)(PARAMS, x))
    exp.save(tmp_path / "m.fcx")
    loaded = fc.load_exported(tmp_path / "m.fcx")
    assert loaded.graph_text == exp.graph_text
    _same(loaded(PARAMS, x), exp(PARAMS, x))
    for interp in (fc.load_exported(tmp_path / "m.fcx", backend="interpreter"),
                   fc.export(mlp, PARAMS, x, backend="interpreter")):
        assert interp.backend == "interpreter"
        out = interp(PARAMS, x)
        np.testing.assert_allclose(out["logits"], exp(PARAMS, x)["logits"], rtol=1e-5,
                                   atol=1e-5)


def test_loaded_export_runs_in_a_process_without_the_users_module(tmp_path):
    (tmp_path / "usermod.py").write_text(textwrap.dedent("""
        import numpy as np
        def f(x, y):
            return np.tanh(x) @ y, (x.sum(), y * 2)
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import usermod
        x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
        exp = fc.export(usermod.f, x, y)
        expected = exp(x, y)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("usermod", None)
    exp.save(tmp_path / "f.fcx")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import functorch_core as fc
        e = fc.load_exported({str(tmp_path / 'f.fcx')!r})
        a, (s, b) = e(np.load({str(tmp_path / 'x.npy')!r}), np.load({str(tmp_path / 'y.npy')!r}))
        assert "usermod" not in sys.modules
        np.save({str(tmp_path / 'out.npy')!r}, np.concatenate([a.ravel(), [s], b.ravel()]))
    """)
    env = {**os.environ, "PYTHONPATH": ROOT}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=str(tmp_path),
                   timeout=300)
    got = np.load(tmp_path / "out.npy")
    want = np.concatenate([expected[0].ravel(), [expected[1][0]], expected[1][1].ravel()])
    # the sum's additions are reassociated (vectorized) as LLVM unrolls them: the stored
    # library (one module, the full pipeline) may add x's 12 elements in another order than
    # the jit (small kernels: no unrolling), within the bound of any order of 12 additions
    k = expected[0].size            # where the sum sits in the flat results
    np.testing.assert_array_equal(np.delete(got, k), np.delete(want, k))
    bound = (x.size - 1) * np.finfo(np.float64).eps * np.abs(x).sum()
    assert abs(got[k] - want[k]) <= bound


def test_dynamic_batch_substitutes_sizes_without_retracing(tmp_path):
    calls = []

    def f(params, x):
        calls.append(x.shape)
        out = mlp(params, x)
        return out["logits"] - out["mean"], (x - x.sum(0) / x.shape[0]).var(axis=0)
    x = RNG.standard_normal((8, 6)).astype(np.float32)
    exp = fc.export(f, PARAMS, x, dynamic={"x": {0: "batch"}})
    assert exp.dynamic == {"x": {0: "batch"}}
    exp.save(tmp_path / "d.fcx")
    loaded = fc.load_exported(tmp_path / "d.fcx")
    traced = len(calls)
    for n in (8, 1, 2, 13, 64):
        xs = RNG.standard_normal((n, 6)).astype(np.float32)
        before = len(calls)
        want = fc.jit(f)(PARAMS, xs)
        for got in (exp(PARAMS, xs), loaded(PARAMS, xs)):
            assert got[0].shape == (n, 3)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        assert len(calls) == before + 1      # only the reference jit traced
    assert traced == len(calls) - 5


def test_dynamic_dim_through_a_scan():
    def f(x):
        return fc.lax.scan(lambda c, r: (c + r, c * r), np.zeros(x.shape[1], x.dtype), x)
    x = RNG.standard_normal((5, 3))
    exp = fc.export(f, x, dynamic={0: {0: "t"}})
    for n in (2, 9):
        xs = RNG.standard_normal((n, 3))
        got, want = exp(xs), fc.jit(f)(xs)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_dynamic_dims_must_agree_across_inputs():
    exp = fc.export(lambda a, b: a + b, np.ones((4, 2)), np.ones((4, 2)),
                    dynamic={"a": {0: "n"}, 1: {0: "n"}})
    assert exp(np.ones((3, 2)), np.ones((3, 2))).shape == (3, 2)
    with pytest.raises(ValueError, match=r"input b has size 5 in dimension 0 \('n'\)"):
        exp(np.ones((3, 2)), np.ones((5, 2)))


def test_wrong_inputs_name_the_input_and_what_was_expected():
    exp = fc.export(mlp, PARAMS, np.ones((4, 6), np.float32), dynamic={"x": {0: "batch"}})
    with pytest.raises(TypeError, match=r"input x is float64\[4, 6\]; "
                                        r"expected float32\[batch, 6\]"):
        exp(PARAMS, np.ones((4, 6)))
    with pytest.raises(TypeError, match=r"input params\['w2'\] is float32\[16, 4\]; "
                                        r"expected float32\[16, 3\]"):
        exp({**PARAMS, "w2": np.ones((16, 4), np.float32)}, np.ones((4, 6), np.float32))
    with pytest.raises(TypeError, match="structure"):
        exp(PARAMS)


def test_dynamic_sizes_that_cannot_be_rederived_are_refused():
    with pytest.raises(DynamicError, match="slice"):
        fc.export(lambda x: x[: x.shape[0] // 2], np.ones((6, 2)), dynamic={0: {0: "n"}})
    with pytest.raises(ValueError, match="none of the arguments"):
        fc.export(lambda x: x, np.ones(3), dynamic={"y": {0: "n"}})
    with pytest.raises(ValueError, match="out of range"):
        fc.export(lambda x: x, np.ones(3), dynamic={"x": {1: "n"}})


Pair = collections.namedtuple("Pair", ["left", "right"])


def test_namedtuples_round_trip_and_modules_are_refused(tmp_path):
    exp = fc.export(lambda p: Pair(p.right, p.left * 2), Pair(np.ones(2), np.zeros(3)))
    exp.save(tmp_path / "p.fcx")
    loaded = fc.load_exported(tmp_path / "p.fcx")
    out = loaded(Pair(np.ones(2), np.zeros(3)))
    assert type(out).__name__ == "Pair" and out._fields == ("left", "right")
    np.testing.assert_array_equal(out.right, [2.0, 2.0])
    lin = fc.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Linear cannot be saved"):
        fc.export(lambda m, x: m(x), lin, np.ones((1, 2), np.float32))


def test_impure_functions_are_refused():
    def writes(x):
        x[0] = 1.0
        return x * 2
    with pytest.raises(ValueError, match="writes into its argument"):
        fc.export(writes, np.zeros(3))
    with pytest.raises(ValueError, match="global random generator"):
        fc.export(lambda x: x + fc.random.normal(fc.random.next_key(), shape=(3,)), np.zeros(3))


def test_damaged_export_files_are_refused(tmp_path):
    fc.export(np.sin, np.ones(3)).save(tmp_path / "s.fcx")
    data = (tmp_path / "s.fcx").read_bytes()
    (tmp_path / "t.fcx").write_bytes(data[:-3])
    with pytest.raises(serialize.FormatError, match="truncated"):
        fc.load_exported(tmp_path / "t.fcx")
    (tmp_path / "u.fcx").write_bytes(data.replace(b'"sin"', b'"cos"'))
    with pytest.raises(serialize.FormatError, match="checksum"):
        fc.load_exported(tmp_path / "u.fcx")
    serialize.save(tmp_path / "g.fcg", fc.make_graph(np.sin)(np.ones(3)))
    with pytest.raises(serialize.FormatError, match="no functorch_core export"):
        fc.load_exported(tmp_path / "g.fcg")


def test_static_argnums_are_baked_in():
    exp = fc.export(lambda x, n: fnp.sum(x ** n), np.arange(3.0), 3, static_argnums=1)
    assert exp(np.arange(3.0)) == 9.0
