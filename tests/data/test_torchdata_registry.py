"""Our DataPipe registry against TorchData 0.9's, recorded in tests/data/torchdata_registry.json.

Runs without TorchData: every functional name and every ``datapipes.iter`` / ``datapipes.map``
class TorchData has is ours too, building the class of the same name with the same
constructor signature, unless tests/data/torchdata_differences.py lists it with a reason.
"""

import os
import re

import numpy as np
import pytest
import torchdata_differences as differences
import torchdata_registry as registry
from paths import ROOT

from functorch_core.data import DataLoader, IndexAdder, IterableWrapper

RECORDED = registry.load()
OURS = registry.ours()
LISTED = differences.by_name()
BASES = {"iter": "IterDataPipe", "map": "MapDataPipe"}


def _functional_names():
    return [(kind, name) for kind in ("iter", "map") for name in RECORDED["functional"][kind]]


def _class_names():
    return [(kind, name) for kind in ("iter", "map") for name in RECORDED["classes"][kind]]


def _same_signature(theirs: str, ours: str) -> bool:
    # a default function is compared by what it does (the differential test), not its name
    def plain(sig):
        return re.sub(r"<callable \w+>", "<callable>", sig)

    return plain(theirs) == plain(ours)


def test_the_recording_is_torchdata_0_9_and_complete():
    assert RECORDED["torchdata_version"] == "0.9.0"
    assert len(RECORDED["functional"]["iter"]) > 80 and len(RECORDED["functional"]["map"]) == 8
    assert len(RECORDED["classes"]["iter"]) > 80 and len(RECORDED["classes"]["map"]) == 9


@pytest.mark.parametrize("kind,name", _functional_names())
def test_every_functional_name_is_ours_or_listed(kind, name):
    key = f"{BASES[kind]}.{name}"
    if key in LISTED and LISTED[key].kind == "missing":
        assert name not in OURS["functional"][kind], f"{key} is ours now: drop its row"
        return
    assert name in OURS["functional"][kind], f"{key} is TorchData's and neither ours nor listed"
    assert OURS["functional"][kind][name] == RECORDED["functional"][kind][name], key


@pytest.mark.parametrize("kind,name", _class_names())
def test_every_class_is_ours_with_torchdatas_signature_or_listed(kind, name):
    key = f"datapipes.{kind}.{name}"
    theirs, ours = RECORDED["classes"][kind][name], OURS["classes"][kind].get(name)
    row = LISTED.get(key)
    if row is not None and row.kind == "missing":
        assert ours is None, f"{key} is ours now: drop its row"
        return
    assert ours is not None, f"{key} is TorchData's and neither ours nor listed"
    if row is not None and row.kind == "signature":
        assert not _same_signature(theirs, ours), f"{key} has TorchData's signature: drop its row"
        return
    assert _same_signature(theirs, ours), f"{key}{ours}: TorchData's is {key}{theirs}"


def test_every_listed_name_is_a_torchdata_name():
    recorded = {f"{BASES[k]}.{n}" for k, n in _functional_names()} | {
        f"datapipes.{k}.{n}" for k, n in _class_names()}
    assert sorted(set(LISTED) - recorded) == []
    assert {row.kind for row in differences.DIFFERENCES} <= {"missing", "signature", "behaviour"}
    assert all(row.reason.endswith(".") for row in differences.DIFFERENCES)


def test_the_docs_show_the_table():
    with open(os.path.join(ROOT, "docs", "data.md")) as f:
        text = f.read()
    section = text.split("## Differences from TorchData\n", 1)
    assert len(section) == 2, "docs/data.md has no 'Differences from TorchData' section"
    assert differences.markdown() in section[1].split("\n## ", 1)[0]


# -- differences the registry and differential tests found, fixed----------------------------------
def test_index_adder_takes_source_datapipe_by_name():
    dp = IndexAdder(source_datapipe=IterableWrapper([{"a": 1}, {"a": 2}]), index_name="i")
    assert list(dp) == [{"a": 1, "i": 0}, {"a": 2, "i": 1}] and len(dp) == 2


def test_loader_collate_fn_none_collates_as_torchs():
    # torch: collate_fn=None is default_collate when batching, samples as they are otherwise
    batches = list(DataLoader(IterableWrapper(range(5)), batch_size=2, collate_fn=None))
    assert all(isinstance(b, np.ndarray) for b in batches)
    assert [b.tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    samples = list(DataLoader([(1, 2), (3, 4)], collate_fn=None))
    assert samples == [(1, 2), (3, 4)]
    assert list(DataLoader(IterableWrapper(range(3)), batch_size=2, collate_fn=list)) == [
        [0, 1], [2]]


def test_max_token_bucketize_breaks_length_ties_as_torchdata():
    # TorchData orders its heap by length alone; its output for this input, recorded
    dp = IterableWrapper(["11", "66", "0"]).max_token_bucketize(6, buffer_size=3)
    assert list(dp) == [["0", "66", "11"]]
    dp = IterableWrapper(["bb", "aa", "cc", "d", "ee"]).max_token_bucketize(4, buffer_size=4)
    assert list(dp) == [["d", "cc"], ["aa", "bb"], ["ee"]]
