"""functorch_core.save / load: pytrees of arrays as .npz + JSON, never pickle."""

import io
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import from_dtype

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


_SCALAR_DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "e", "f", "d", "g",
                  "F", "D", "G", "U3", "S3", "M8[s]", "M8[D]", "m8[ms]"]


@given(st.sampled_from(_SCALAR_DTYPES).flatmap(
    lambda dt: from_dtype(np.dtype(dt)).map(lambda v: np.asarray(v, dtype=dt)[()])))
def test_numpy_scalars_keep_their_type_and_dtype(x):
    assert isinstance(x, np.generic)
    buf = io.BytesIO()
    fc.save({"x": x, "in": [x, (x,)]}, buf)
    buf.seek(0)
    got = fc.load(buf)
    _assert_same({"x": x, "in": [x, (x,)]}, got)


def test_float64_complex128_bool_scalars_are_not_python_scalars(tmp_path):
    obj = {"f": np.float64(3.0), "c": np.complex128(1 - 2j), "b": np.bool_(True),
           "i": np.int64(-5), "f32": np.float32(0.1), "v": np.void(b"ab"),
           "pf": 3.0, "pc": 1j, "pb": True, "pi": 7}
    fc.save(obj, tmp_path / "c.npz")
    got = fc.load(tmp_path / "c.npz")
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in obj.items()}
    assert got["f32"] == np.float32(0.1) and got["v"] == obj["v"]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_subclasses_that_would_lose_meaning_are_refused_by_name(tmp_path):
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    with pytest.raises(TypeError, match=r"save: obj\['w'\] is a numpy.ma.MaskedArray; its mask "
                                        r"would be lost: pass \.filled\(\.\.\.\) or the data"):
        fc.save({"w": masked}, tmp_path / "c.npz")
    with pytest.raises(TypeError, match=r"save: obj\[1\]\[0\] is a numpy.ma.MaskedArray"):
        fc.save([0, [np.ma.masked]], tmp_path / "c.npz")
    with pytest.raises(TypeError, match=r"save: obj\['m'\] is a numpy.matrix; .* \* is "
                                        r"elementwise"):
        fc.save({"m": np.matrix(np.eye(2))}, tmp_path / "c.npz")
    assert not (tmp_path / "c.npz").exists()


def test_nn_parameter_saves_as_a_plain_array(tmp_path):
    from functorch_core import nn
    p = nn.Parameter(np.ones((2, 2), np.float32))
    fc.save({"p": p}, tmp_path / "c.npz")
    out = fc.load(tmp_path / "c.npz")["p"]
    assert type(out) is np.ndarray and out.dtype == np.float32


def _good_checkpoint(path):
    fc.save({"w": np.arange(1000.0), "s": np.float32(2), "l": [1, 2.5, "x"]}, path)
    return path.read_bytes()


@pytest.mark.parametrize("keep", [0, 1, 10, 200, 0.5, -22, -1])
def test_a_truncated_checkpoint_is_a_value_error_naming_the_file(tmp_path, keep):
    raw = _good_checkpoint(tmp_path / "c.npz")
    cut = int(len(raw) * keep) if isinstance(keep, float) else keep % len(raw)
    (tmp_path / "c.npz").write_bytes(raw[:cut])
    with pytest.raises(ValueError, match=r"load: '.*c\.npz' is not a readable checkpoint "
                                         r"\(truncated or damaged\?\)"):
        fc.load(tmp_path / "c.npz")


def test_a_flipped_byte_is_a_value_error_naming_the_file(tmp_path):
    raw = bytearray(_good_checkpoint(tmp_path / "c.npz"))
    raw[len(raw) // 3] ^= 0xFF      # inside the w member's data: its CRC no longer matches
    (tmp_path / "c.npz").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"load: '.*c\.npz' is not a readable .*CRC"):
        fc.load(tmp_path / "c.npz")


def _with_tree(path, tree, members=None):
    doc = tree if isinstance(tree, (bytes, str)) else json.dumps(
        {"format": "functorch_core.checkpoint/1", "tree": tree})
    doc = doc.encode() if isinstance(doc, str) else doc
    np.savez(path, allow_pickle=False, __tree__=np.frombuffer(doc, np.uint8),
             **(members or {}))


@pytest.mark.parametrize("tree, members, message", [
    ({"t": "dict", "items": [["a", {"t": "array", "k": "a9"}]]}, {"a0": np.ones(2)},
     r"has no array member 'a9' for obj\['a'\]"),
    ({"t": "list"}, None, r"has None where the items of obj should be a list"),
    ({"t": "dict", "items": [["a", 1]]}, None, r"has 1 where the tree node of obj\['a'\]"),
    ({"t": "dict", "items": [[1.5, {"t": "none"}]]}, None, r"a \[key, node\] pair of obj"),
    ({"v": 1}, None, r"where the tree node of obj should be"),
    ({"t": "tuple", "items": [{"t": "int", "v": "7"}]}, None,
     r"has '7' where obj\[0\] should be a int"),
    ({"t": "float", "v": "zero"}, None, r"has 'zero' where obj should be a float"),
    ({"t": "complex", "v": [1.0]}, None, r"where obj should be a \[real, imag\] pair"),
    ({"t": "scalar", "k": "a0"}, {"a0": np.ones(3)}, r"shape \(3,\) in member 'a0', where obj "
                                                     r"should be a scalar"),
    ({"t": "set", "items": []}, None, r"unknown node type 'set' for obj"),
    ("[1, 2]", None, r"tree description that is a list"),
    (b"\xff{", None, r"tree description that is not JSON"),
    ("[" * 100_000 + "]" * 100_000, None, r"has a tree nested too deeply to load"),
    ('{"format": "functorch_core.checkpoint/1"}', None, r"has no 'tree'"),
    ('{"format": "other/2", "tree": {"t": "none"}}', None, r"has format 'other/2'"),
])
def test_a_tampered_tree_is_a_value_error_naming_the_file_and_the_node(tmp_path, tree,
                                                                       members, message):
    _with_tree(tmp_path / "c.npz", tree, members)
    with pytest.raises(ValueError, match=r"load: '.*c\.npz' .*" + message):
        fc.load(tmp_path / "c.npz")


def test_deeply_nested_trees_are_refused_not_a_recursion_error(tmp_path):
    depth = 5000
    node = '{"t": "list", "items": [' * depth + '{"t": "none"}' + "]}" * depth
    doc = '{"format": "functorch_core.checkpoint/1", "tree": ' + node + "}"
    _with_tree(tmp_path / "c.npz", doc)
    with pytest.raises(ValueError, match=r"c\.npz' has a tree nested too deeply to load"):
        fc.load(tmp_path / "c.npz")


def test_other_files_are_value_errors_and_file_system_errors_stay(tmp_path):
    np.save(tmp_path / "a.npy", np.ones(2))
    with pytest.raises(ValueError, match=r"a\.npy' is not a functorch_core checkpoint "
                                         r"\(it holds a single \.npy array\)"):
        fc.load(tmp_path / "a.npy")
    (tmp_path / "t.txt").write_text("hello")
    with pytest.raises(ValueError, match=r"t\.txt' is not a readable checkpoint"):
        fc.load(tmp_path / "t.txt")
    with pytest.raises(FileNotFoundError):
        fc.load(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match=r"load: the BytesIO given is not a readable"):
        fc.load(io.BytesIO(b"PK\x03\x04 broken"))


@pytest.mark.parametrize("as_file", [False, True], ids=["BytesIO", "path"])
def test_random_damage_is_a_value_error_or_the_same_content(tmp_path, as_file):
    """Seeded fuzzing of a small checkpoint: overwritten, cut or inserted bytes either leave
    what zip does not check (timestamps) or give a ValueError naming the file, never another
    exception (a real file's seek to a damaged offset is an OSError EINVAL) or other content."""
    obj = {"w": np.arange(50.0), "s": np.float32(2), "l": [1, 2.5, "x", None],
           "d": {"a": np.ones((2, 2), np.int8)}}
    buf = io.BytesIO()
    fc.save(obj, buf)
    raw = buf.getvalue()
    rng = np.random.default_rng(37)
    path = tmp_path / "f.npz"
    for _ in range(1000):
        b = bytearray(raw)
        kind = rng.integers(3)
        if kind == 0:
            for j in rng.integers(len(b), size=rng.integers(1, 5)):
                b[j] = rng.integers(256)
        elif kind == 1:
            b = b[:rng.integers(len(b))]
        else:
            j = rng.integers(len(b))
            b[j:j] = rng.bytes(rng.integers(1, 9))
        if as_file:
            path.write_bytes(bytes(b))
        try:
            got = fc.load(path if as_file else io.BytesIO(bytes(b)))
        except ValueError as e:
            assert str(e).startswith(f"load: {str(path)!r} " if as_file else
                                     "load: the BytesIO given "), e
        else:
            _assert_same(obj, got)


def test_an_encrypted_member_flag_is_a_value_error(tmp_path):
    raw = bytearray(_good_checkpoint(tmp_path / "c.npz"))
    central = raw.rfind(b"PK\x01\x02")      # the last member's central directory entry
    raw[central + 8] |= 1                   # its general-purpose flags: "encrypted"
    (tmp_path / "c.npz").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"c\.npz' is not a readable .*encrypted"):
        fc.load(tmp_path / "c.npz")
