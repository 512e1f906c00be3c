"""functorch_core.save / load: pytrees of arrays as .npz + JSON, never pickle."""

import io
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc


def _assert_same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b


def test_round_trip_nested_tree(tmp_path):
    obj = {
        "model": {"layer.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
                  "layer.bias": np.zeros(3, np.float64),
                  "bn.num_batches_tracked": np.array(7, dtype=np.int64)},
        "optimizer": {"state": {0: {"step": np.array(3.0), "exp_avg": np.ones((2, 3))}},
                      "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "amsgrad": False,
                                        "params": [0], "name": None}]},
        "epoch": 12, "loss": float("nan"), "best": float("inf"), "z": 1 + 2j,
        "flags": np.array([True, False]), "scalar": np.float32(2.5), "note": "héllo",
        "empty": [], "nested": ((), [None, (np.int8(-3),)]),
        "complex": np.array([1 + 1j], dtype=np.complex64),
    }
    fc.save(obj, tmp_path / "ckpt.npz")
    _assert_same(obj, fc.load(tmp_path / "ckpt.npz"))


def test_path_is_used_as_given_and_file_objects_work(tmp_path):
    path = tmp_path / "weights.ckpt"
    fc.save({"a": np.ones(2)}, str(path))
    assert path.exists() and not (tmp_path / "weights.ckpt.npz").exists()
    buf = io.BytesIO()
    fc.save([np.arange(3), "x"], buf)
    buf.seek(0)
    _assert_same(fc.load(buf), [np.arange(3), "x"])


def test_file_is_plain_npz_without_pickle(tmp_path):
    fc.save({"w": np.eye(2), "n": 3}, tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz", allow_pickle=False) as data:
        doc = json.loads(bytes(data["__tree__"]).decode())
        names = [n for n in data.files if n != "__tree__"]
        assert len(names) == 1
        np.testing.assert_array_equal(data[names[0]], np.eye(2))
    assert doc["tree"]["t"] == "dict"


def test_parameter_subclass_saved_as_plain_array(tmp_path):
    class Param(np.ndarray):
        pass
    p = np.ones(3).view(Param)
    fc.save({"p": p}, tmp_path / "c.npz")
    out = fc.load(tmp_path / "c.npz")["p"]
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, np.ones(3))


def test_loaded_arrays_are_writable_copies(tmp_path):
    fc.save({"w": np.zeros(2)}, tmp_path / "c.npz")
    w = fc.load(tmp_path / "c.npz")["w"]
    w += 1
    np.testing.assert_array_equal(fc.load(tmp_path / "c.npz")["w"], np.zeros(2))


def test_unsupported_leaves_are_named(tmp_path):
    class Thing:
        pass
    with pytest.raises(TypeError, match=r"save: obj\['a'\]\[1\] is a .*Thing; supported are"):
        fc.save({"a": [1, Thing()]}, tmp_path / "c.npz")
    with pytest.raises(TypeError, match=r"obj\['o'\] is an array of dtype object"):
        fc.save({"o": np.array([{}, 1], dtype=object)}, tmp_path / "c.npz")
    with pytest.raises(TypeError, match=r"obj has key 1.5 of type float"):
        fc.save({1.5: np.ones(1)}, tmp_path / "c.npz")
    with pytest.raises(TypeError, match=r"obj is a builtins.set"):
        fc.save({1, 2}, tmp_path / "c.npz")
    assert not (tmp_path / "c.npz").exists()


def test_load_rejects_other_npz(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="not a functorch_core checkpoint"):
        fc.load(tmp_path / "other.npz")


_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-2**62, 2**62), st.floats(allow_nan=False),
    st.text(max_size=5),
    st.builds(lambda n, dt: np.arange(n).astype(dt), st.integers(0, 4),
              st.sampled_from([np.float32, np.float64, np.int32, np.uint8, np.bool_])),
)
_trees = st.recursive(
    _leaves,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.tuples(kids, kids),
                           st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 9)),
                                           kids, max_size=3)),
    max_leaves=8)


@given(_trees)
def test_round_trip_property(tree):
    buf = io.BytesIO()
    fc.save(tree, buf)
    buf.seek(0)
    _assert_same(tree, fc.load(buf))


def test_a_modules_state_dict_saves_as_torch_users_save_it(tmp_path):
    """``state_dict()`` is an OrderedDict: it saves as is and loads as one, in its order."""
    from functorch_core import nn
    fc.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    fc.save({"model": model.state_dict(), "step": 3}, tmp_path / "c.npz")
    got = fc.load(tmp_path / "c.npz")
    assert type(got["model"]).__name__ == "OrderedDict"
    assert list(got["model"]) == list(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(got["model"][k], v)
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    fresh.load_state_dict(got["model"])
    np.testing.assert_array_equal(fresh[2].bias, model[2].bias)
