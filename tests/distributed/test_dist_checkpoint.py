"""``functorch_core.distributed.checkpoint`` in one process (a world of one rank): the
layout, the manifest's checks, ``keep``, the RNG and DataLoader state; the multi-rank and
kill cases are in test_elastic.py."""

import hashlib
import json
import os

import numpy as np
import pytest
from functorch_core.backends import mpi

import functorch_core as fc
from functorch_core import random
from functorch_core.data import DataLoader
from functorch_core.distributed import checkpoint as dc


@pytest.fixture(autouse=True)
def one_rank(monkeypatch):
    monkeypatch.setattr(mpi, "_world", mpi.World(None, 0, 1, 0, 1))


def _state(k=0.0):
    return {"model": {"w": np.arange(6.0).reshape(2, 3) + k, "b": np.float32(k)},
            "optim": {"step": 3, "m": [np.ones(2), None]}}


def test_round_trip_with_loader_and_rng(tmp_path):
    loader = DataLoader(np.arange(20), batch_size=4, shuffle=True, seed=1)
    it = iter(loader)
    first = [next(it).tolist() for _ in range(2)]
    fc.manual_seed(11)
    np.random.seed(5)
    path = dc.save(_state(), 7, tmp_path, loader=loader)
    assert os.path.basename(path) == "step-00000007"
    assert sorted(os.listdir(path)) == ["manifest.json", "rank-00000.part"]
    want_key, want_np = random.next_key(), np.random.rand()
    random.next_key()
    ckpt = dc.load_latest(tmp_path)
    assert ckpt.step == 7 and ckpt.world_size == 1
    np.testing.assert_array_equal(ckpt.state["model"]["w"], _state()["model"]["w"])
    assert ckpt.state["optim"]["m"][1] is None and ckpt.state["model"]["b"].dtype == np.float32
    assert (random.next_key() == want_key).all() and np.random.rand() == want_np
    resumed = DataLoader(np.arange(20), batch_size=4, shuffle=True, seed=1)
    resumed.load_state_dict(ckpt.loader)
    rest = [b.tolist() for b in resumed]
    assert sorted(x for b in first + rest for x in b) == list(range(20))


def test_keep_and_the_newest_complete_step(tmp_path):
    for step in (1, 2, 3, 4):
        dc.save(_state(step), step, tmp_path, keep=2)
    assert dc.complete_steps(tmp_path) == [3, 4]
    assert dc.load_latest(tmp_path).state["model"]["b"] == 4
    # a save killed before its manifest: its folder is ignored, the previous one loads
    os.makedirs(tmp_path / ".step-00000005.partial")
    (tmp_path / ".step-00000005.partial" / "rank-00000.part").write_bytes(b"half")
    assert dc.load_latest(tmp_path).step == 4
    dc.save(_state(6), 6, tmp_path, durable=False)
    # the older ones are renamed away at once (a thread deletes them)
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith(".")) == [
        "step-00000004", "step-00000006"]
    dc.wait_for_cleanup()
    assert not os.path.exists(tmp_path / ".step-00000005.partial")
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
    assert dc.load_latest(tmp_path / "nothing-here") is None


def test_same_step_saved_again_replaces_it(tmp_path):
    dc.save(_state(1), 3, tmp_path)
    dc.save(_state(2), 3, tmp_path)
    assert dc.complete_steps(tmp_path) == [3]
    assert dc.load_latest(tmp_path).state["model"]["b"] == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_a_damaged_part_is_refused_by_name(tmp_path, damage):
    dc.save(_state(1), 1, tmp_path)
    dc.save(_state(2), 2, tmp_path)
    part = tmp_path / "step-00000002" / "rank-00000.part"
    data = bytearray(part.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x10
        part.write_bytes(bytes(data))
    elif damage == "truncate":
        part.write_bytes(bytes(data[:-9]))
    else:
        part.unlink()
    why = {"flip": "does not match its manifest's sha256", "truncate": "truncated",
           "delete": "is missing"}[damage]
    with pytest.raises(dc.CheckpointError, match=rf"rank-00000\.part.*{why}"):
        dc.load_latest(tmp_path)
    with pytest.warns(UserWarning, match="trying the previous checkpoint"):
        assert dc.load_latest(tmp_path, fallback=True).step == 1


def test_a_manifest_of_another_world_size_or_format_is_refused(tmp_path):
    path = dc.save(_state(), 1, tmp_path)
    manifest = os.path.join(path, "manifest.json")
    doc = json.load(open(manifest))
    json.dump({**doc, "format": "other"}, open(manifest, "w"))
    with pytest.raises(dc.CheckpointError, match="is not a manifest of"):
        dc.load_latest(tmp_path)
    doc["world_size"] = 2
    doc["files"]["rank-00001.part"] = doc["files"]["rank-00000.part"]
    json.dump(doc, open(manifest, "w"))
    with pytest.raises(dc.CheckpointError, match="saved by 2 ranks, this job has 1; pass "
                       "any_world_size=True"):
        dc.load_latest(tmp_path)


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"save\(step=-1\)"):
        dc.save({}, -1, tmp_path)
    with pytest.raises(ValueError, match=r"save\(keep=0\)"):
        dc.save({}, 1, tmp_path, keep=0)
    with pytest.raises(TypeError, match=r"save: obj\['state'\]\['f'\] is a builtins"):
        dc.save({"f": print}, 1, tmp_path)
    assert not os.path.exists(tmp_path / ".step-00000001.partial")


def test_a_sharded_state_comes_back_to_its_rank_only_at_its_world_size(tmp_path):
    path = dc.save({"shard": np.arange(3.0)}, 5, tmp_path, sharded=True)
    assert json.load(open(os.path.join(path, "manifest.json")))["sharded"] is True
    np.testing.assert_array_equal(dc.load_latest(tmp_path).state["shard"], np.arange(3.0))
    manifest = os.path.join(path, "manifest.json")
    doc = json.load(open(manifest))
    doc["world_size"] = 2
    doc["files"]["rank-00001.part"] = doc["files"]["rank-00000.part"]
    json.dump(doc, open(manifest, "w"))
    with pytest.raises(dc.CheckpointError, match="sharded over 2 ranks, this job has 1"):
        dc.load_latest(tmp_path, any_world_size=True)


def test_a_format_1_checkpoint_still_loads(tmp_path):
    # format 1: rank-<r>.npz parts, functorch_core.save archives, listed by a manifest
    folder = tmp_path / "step-00000003"
    folder.mkdir()
    rng = {"functorch_core": random.get_rng_state(), "numpy": np.random.get_state(legacy=True)}
    part = {"rank": 0, "world_size": 1, "step": 3, "rng": rng, "loader": None}
    fc.save({"state": _state(5), "part": part}, str(folder / "rank-00000.npz"))
    data = (folder / "rank-00000.npz").read_bytes()
    (folder / "manifest.json").write_text(json.dumps({
        "format": "functorch_core.distributed.checkpoint/1", "step": 3, "world_size": 1,
        "sharded": False, "files": {"rank-00000.npz": {
            "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}}}))
    ckpt = dc.load_latest(tmp_path)
    assert ckpt.step == 3 and ckpt.loader is None
    np.testing.assert_array_equal(ckpt.state["model"]["w"], _state(5)["model"]["w"])
    assert ckpt.state["model"]["b"] == np.float32(5) and ckpt.state["optim"]["m"][1] is None


def test_part_file_round_trips_every_leaf_kind(tmp_path):
    state = {"f16": np.arange(5, dtype=np.float16), "big": np.arange(3, dtype=">i4"),
             "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
             "strided": np.arange(10)[::3], "empty": np.zeros((0, 4)), "u": np.array(["ab"]),
             "bool": np.array([True, False]), "c": np.complex64(1 + 2j), "t": (1, 2.5, "x")}
    dc.save(state, 1, tmp_path)
    got = dc.load_latest(tmp_path).state
    for k, v in state.items():
        if isinstance(v, tuple):
            assert got[k] == v
            continue
        assert got[k].dtype == np.asarray(v).dtype and got[k].shape == np.shape(v), k
        np.testing.assert_array_equal(got[k], v)
    assert got["big"].flags.writeable and type(got["c"]) is np.complex64


@pytest.mark.parametrize("edit", ["magic", "offset", "dtype"])
def test_a_part_that_matches_its_manifest_but_is_not_a_part_is_refused(tmp_path, edit):
    # the manifest is rewritten to match, so only the part's own checks can refuse it
    path = dc.save(_state(), 1, tmp_path)
    part = os.path.join(path, "rank-00000.part")
    data = bytearray(open(part, "rb").read())
    n = int.from_bytes(data[8:16], "little")
    head = json.loads(data[16:16 + n])
    if edit == "magic":
        data[:8] = b"NOTAPART"
    else:
        spec = head["arrays"]["a0"]
        spec[2 if edit == "offset" else 0] = 10 ** 9 if edit == "offset" else "O"
        text = json.dumps(head, separators=(",", ":")).encode()     # shorter: same layout
        assert len(text) <= n
        data[16:16 + n] = text.ljust(n)
    open(part, "wb").write(bytes(data))
    manifest = os.path.join(path, "manifest.json")
    doc = json.load(open(manifest))
    doc["files"]["rank-00000.part"] = {"size": len(data),
                                       "sha256": hashlib.sha256(data).hexdigest()}
    json.dump(doc, open(manifest, "w"))
    with pytest.raises(dc.CheckpointError, match=r"rank-00000\.part' is not a part of"):
        dc.load_latest(tmp_path)
