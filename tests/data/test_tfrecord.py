"""TFRecord: the record framing and its CRCs, Example and SequenceExample (needs protobuf)."""

import io
import struct

import numpy as np
import pytest

pytest.importorskip("google.protobuf")

from functorch_core.data import FileOpener, IterableWrapper
from functorch_core.data.iter.crc32c import masked_crc32c
from functorch_core.data.iter.tfrecord import (
    TFRecordLoader,
    sequence_example_class,
)


def framed(record: bytes) -> bytes:
    head = struct.pack("<Q", len(record))
    return (head + struct.pack("<I", masked_crc32c(head)) + record
            + struct.pack("<I", masked_crc32c(record)))


def example(i):
    ex = sequence_example_class("Example")()
    feats = ex.features.feature
    feats["x_float"].float_list.value.extend(np.arange(i * 10, i * 10 + 10, dtype=np.float32))
    feats["x_int"].int64_list.value.extend(range(i * 100, i * 100 + 100, 10))
    feats["x_byte"].bytes_list.value.append(b"test str")
    return ex.SerializeToString()


def write(path, records):
    with open(path, "wb") as f:
        for r in records:
            f.write(framed(r))
    return str(path)


def load(path, **kw):
    return list(TFRecordLoader(FileOpener([path], mode="rb"), **kw))


def test_examples_as_dicts_of_arrays_and_bytes(tmp_path):
    path = write(tmp_path / "a.tfrecord", [example(i) for i in range(4)])
    got = load(path)
    assert len(got) == 4
    for i, ex in enumerate(got):
        assert set(ex) == {"x_float", "x_int", "x_byte"}
        assert ex["x_float"].dtype == np.float32 and ex["x_int"].dtype == np.int64
        np.testing.assert_array_equal(ex["x_float"], np.arange(i * 10, i * 10 + 10))
        np.testing.assert_array_equal(ex["x_int"], np.arange(i * 100, i * 100 + 100, 10))
        assert ex["x_byte"] == [b"test str"]
    spec = {"x_float": ((5, 2), np.float64), "x_int": ((5, 2), np.int32), "x_byte": ((), None)}
    shaped = load(path, spec=spec)[1]
    assert shaped["x_float"].shape == (5, 2) and shaped["x_float"].dtype == np.float64
    assert shaped["x_int"].dtype == np.int32 and shaped["x_int"][4, 1] == 190
    assert shaped["x_byte"] == b"test str"
    assert set(load(path, spec={"x_float": ((10,), np.float32)})[0]) == {"x_float"}
    with pytest.raises(RuntimeError, match=r"lacks the features \['nope'\]"):
        load(path, spec={"nope": ((1,), np.float32)})
    with pytest.raises(RuntimeError, match="cannot reshape 10 values into shape"):
        load(path, spec={"x_float": ((3,), np.float32)})


def test_hand_encoded_wire_bytes_parse_as_tensorflow_defines_them():
    # Example{features{feature{"a": Feature{int64_list{value: [1, 2]}}}}}, field numbers from
    # tensorflow/core/example/{example,feature}.proto: Example.features=1, Features.feature=1
    # (map entry key=1, value=2), Feature.int64_list=3, Int64List.value=1 (packed)
    wire = bytes([0x0A, 13, 0x0A, 11, 0x0A, 1, ord("a"), 0x12, 6, 0x1A, 4, 0x0A, 2, 1, 2])
    stream = io.BytesIO(framed(wire))
    (got,) = list(TFRecordLoader(IterableWrapper([("mem", stream)])))
    assert list(got) == ["a"] and got["a"].tolist() == [1, 2]
    assert sequence_example_class("Example").FromString(wire).SerializeToString() == wire


def test_sequence_examples_hold_context_and_feature_lists(tmp_path):
    seq = sequence_example_class()()
    seq.context.feature["label"].int64_list.value.append(7)
    for rep in range(3):
        f = seq.feature_lists.feature_list["frames"].feature.add()
        f.float_list.value.extend([rep, rep + 0.5])
    path = write(tmp_path / "s.tfrecord", [seq.SerializeToString()])
    (got,) = load(path)
    assert got["label"].tolist() == [7]
    assert [x.tolist() for x in got["frames"]] == [[0, 0.5], [1, 1.5], [2, 2.5]]
    (spec,) = load(path, spec={"label": ((), np.int64), "frames": ((3, 2), np.float64)})
    assert spec["frames"].shape == (3, 2) and spec["frames"].dtype == np.float64
    assert spec["label"].shape == () and spec["label"] == 7


def test_corrupt_and_truncated_files_name_the_file_record_and_offset(tmp_path):
    records = [example(0), example(1)]
    path = write(tmp_path / "c.tfrecord", records)
    raw = bytearray(open(path, "rb").read())
    second = 16 + len(records[0])
    raw[second + 12 + records[1].index(b"test str")] ^= 0x01  # b"test str" of record 1
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match=rf"bad.tfrecord: record 1 at byte {second}: the "
                                           "data's CRC does not match"):
        load(str(bad))
    unchecked = load(str(bad), check_crc=False)
    assert unchecked[1]["x_byte"] != [b"test str"] and len(unchecked) == 2
    raw[second] ^= 0x40  # now the length of record 1 is wrong
    bad.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match=r"record 1 .* the length's CRC does not match"):
        load(str(bad))
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(open(path, "rb").read()[:-7])
    with pytest.raises(RuntimeError, match=r"record 1 .* the file ends inside the record"):
        load(str(cut))


def test_length_and_bad_source_items():
    assert len(TFRecordLoader(IterableWrapper([]), length=3)) == 3
    with pytest.raises(TypeError, match="has no length"):
        len(TFRecordLoader(IterableWrapper([])))
    with pytest.raises(TypeError, match=r"expected \(path, binary stream\) pairs"):
        list(TFRecordLoader(IterableWrapper([b"raw"])))
