"""TFRecord files: ``TFRecordLoader`` (``load_from_tfrecord``), with CRC checks.

A TFRecord file is a run of records, each framed as: the data length (8 bytes,
little-endian), the masked CRC-32C of those 8 bytes, the data, the masked
CRC-32C of the data. The data is a ``tensorflow.Example`` or ``SequenceExample``
protobuf; its message classes are built here from a descriptor written in code,
so only the ``protobuf`` package is needed (``pip install 'functorch_core[tfrecord]'``).
"""

from __future__ import annotations

import struct

import numpy as np

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import LazyModule
from .crc32c import masked_crc32c

# the optional tfrecord extra
descriptor_pb2, descriptor_pool, message_factory = (
    LazyModule(f"google.protobuf.{name}")
    for name in ("descriptor_pb2", "descriptor_pool", "message_factory"))

__all__ = ["TFRecordLoader"]



def _need_protobuf(call: str) -> None:
    if not descriptor_pb2.available():
        raise ModuleNotFoundError(f"{call} needs the optional package protobuf "
                                  "(pip install 'functorch_core[tfrecord]')")


def _message(file, name, fields, entries=()):
    _F = descriptor_pb2.FieldDescriptorProto
    msg = file.message_type.add(name=name)
    for entry_name, value_type in entries:
        entry = msg.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                        type_name=f".tensorflow.{value_type}")
    for field in fields:
        name_, number, kind, label, *rest = field
        f = msg.field.add(name=name_, number=number, type=kind, label=label)
        if rest:
            f.type_name = rest[0]
        if len(rest) > 1:
            f.oneof_index = rest[1]
    return msg


def _build_classes() -> dict:
    """tensorflow/core/example/{feature,example}.proto's messages, as protobuf classes."""
    file = descriptor_pb2.FileDescriptorProto(name="functorch_core_tfrecord_example.proto",
                                              package="tensorflow", syntax="proto3")
    _F = descriptor_pb2.FieldDescriptorProto
    rep, opt = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
    _message(file, "BytesList", [("value", 1, _F.TYPE_BYTES, rep)])
    _message(file, "FloatList", [("value", 1, _F.TYPE_FLOAT, rep)])
    _message(file, "Int64List", [("value", 1, _F.TYPE_INT64, rep)])
    feature = _message(file, "Feature", [
        ("bytes_list", 1, _F.TYPE_MESSAGE, opt, ".tensorflow.BytesList", 0),
        ("float_list", 2, _F.TYPE_MESSAGE, opt, ".tensorflow.FloatList", 0),
        ("int64_list", 3, _F.TYPE_MESSAGE, opt, ".tensorflow.Int64List", 0)])
    feature.oneof_decl.add(name="kind")
    _message(file, "Features", [("feature", 1, _F.TYPE_MESSAGE, rep,
                                 ".tensorflow.Features.FeatureEntry")],
             entries=[("FeatureEntry", "Feature")])
    _message(file, "FeatureList", [("feature", 1, _F.TYPE_MESSAGE, rep, ".tensorflow.Feature")])
    _message(file, "FeatureLists", [("feature_list", 1, _F.TYPE_MESSAGE, rep,
                                     ".tensorflow.FeatureLists.FeatureListEntry")],
             entries=[("FeatureListEntry", "FeatureList")])
    _message(file, "Example", [("features", 1, _F.TYPE_MESSAGE, opt, ".tensorflow.Features")])
    _message(file, "SequenceExample", [
        ("context", 1, _F.TYPE_MESSAGE, opt, ".tensorflow.Features"),
        ("feature_lists", 2, _F.TYPE_MESSAGE, opt, ".tensorflow.FeatureLists")])
    pool = descriptor_pool.DescriptorPool()  # private: no clash with TensorFlow's own
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{name}"))
            for name in ("Example", "SequenceExample", "Feature", "Features")}


_CLASSES: dict = {}


def sequence_example_class(name: str = "SequenceExample"):
    """The protobuf class of ``tensorflow.<name>`` (``Example``, ``SequenceExample``,
    ``Feature`` or ``Features``), built once from a descriptor written in code.

    An ``Example``'s bytes parse as a ``SequenceExample`` whose ``context`` holds its
    features (both are field 1), which is how ``TFRecordLoader`` reads either.

    Args:
        name (str): the message name. Default: ``"SequenceExample"``.
    """
    _need_protobuf("sequence_example_class")
    if not _CLASSES:
        _CLASSES.update(_build_classes())
    return _CLASSES[name]


def _read(stream, n: int, what: str, where: str) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise RuntimeError(f"{where}: the file ends inside the record ({what}: {len(data)} of "
                           f"{n} bytes); the file is truncated or not a TFRecord file")
    return data


def iterate_tfrecord(stream, name: str = "<stream>", check_crc: bool = True):
    """Yield the data of each record of a TFRecord byte stream.

    Args:
        stream (binary file): the stream.
        name (str): the file's name, for the errors. Default: ``"<stream>"``.
        check_crc (bool): check both masked CRC-32Cs of every record. Default: ``True``.

    Raises:
        RuntimeError: a truncated record or a CRC mismatch (naming the file,
            the record and its byte offset).
    """
    index = offset = 0
    while True:
        head = stream.read(8)
        if not head:
            return
        where = f"TFRecordLoader: {name}: record {index} at byte {offset}"
        if len(head) != 8:
            raise RuntimeError(f"{where}: the file ends inside the record (length: {len(head)} "
                               "of 8 bytes); the file is truncated or not a TFRecord file")
        (length,) = struct.unpack("<Q", head)
        (length_crc,) = struct.unpack("<I", _read(stream, 4, "length CRC", where))
        if check_crc and masked_crc32c(head) != length_crc:
            raise RuntimeError(f"{where}: the length's CRC does not match; the file is "
                               "corrupt or not a TFRecord file")
        data = _read(stream, length, "data", where)
        (data_crc,) = struct.unpack("<I", _read(stream, 4, "data CRC", where))
        if check_crc and masked_crc32c(data) != data_crc:
            raise RuntimeError(f"{where}: the data's CRC does not match; the file is corrupt")
        yield data
        index += 1
        offset += 16 + length


def _feature_value(feature):
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    values = getattr(feature, kind).value
    if kind == "float_list":
        return np.array(values, dtype=np.float32)
    if kind == "int64_list":
        return np.array(values, dtype=np.int64)
    return list(values)


def _reshape_list(values: list, shape, key: str):
    flat = np.empty(len(values), dtype=object)
    flat[:] = values
    try:
        out = flat.reshape(shape)
    except ValueError:
        raise RuntimeError(f"TFRecordLoader: feature {key!r}: cannot reshape {len(values)} "
                           f"values into shape {tuple(shape)}") from None
    return out.tolist() if out.ndim else out.item()


def _apply_spec(value, spec, key: str):
    if spec is None:
        return value
    shape, dtype = spec
    if dtype is not None:
        arr = np.asarray(value)
        if shape is not None:
            try:
                arr = arr.reshape(shape)
            except ValueError:
                raise RuntimeError(f"TFRecordLoader: feature {key!r}: cannot reshape "
                                   f"{arr.size} values into shape {tuple(shape)}") from None
        return arr.astype(dtype)
    return value if shape is None else _reshape_list(value, shape, key)


def parse_sequence_example(example, spec=None) -> dict:
    """A ``SequenceExample`` (or ``Example``) message as a dict of feature name to value."""
    out = {}
    for key, feature in example.context.feature.items():
        if spec is None or key in spec:
            out[key] = _apply_spec(_feature_value(feature), None if spec is None else spec[key],
                                   key)
    for key, flist in example.feature_lists.feature_list.items():
        if spec is not None and key not in spec:
            continue
        if key in out:
            raise RuntimeError(f"TFRecordLoader: feature {key!r} is both in the context and in "
                               "the feature lists")
        values = [_feature_value(f) for f in flist.feature]
        if spec is not None and spec[key][1] is not None:
            values = np.stack(values) if values else np.zeros((0,))
        out[key] = _apply_spec(values, None if spec is None else spec[key], key)
    if spec is not None and set(out) != set(spec):
        raise RuntimeError(f"TFRecordLoader: the example lacks the features "
                           f"{sorted(set(spec) - set(out))} that the spec names")
    return out


@functional_datapipe("load_from_tfrecord")
class TFRecordLoader(IterDataPipe):
    """Yield the examples of TFRecord streams as dicts (functional name: ``load_from_tfrecord``).

    Each example's features become ``{name: value}``: a ``float_list`` is a
    float32 array, an ``int64_list`` an int64 array, a ``bytes_list`` a list of
    ``bytes``; a ``SequenceExample``'s feature lists are lists of those. With a
    ``spec`` only the named features are kept, each reshaped and cast.

    Args:
        datapipe (IterDataPipe): ``(path, binary stream)`` pairs, e.g. from
            ``FileOpener(..., mode="b")``.
        spec (dict, optional): ``{name: (shape, dtype)}``; ``dtype`` a NumPy
            dtype (the value becomes an array of that shape and dtype) or
            ``None`` (a ``bytes_list`` reshaped as nested lists; ``()`` gives the
            single value). A named feature missing from an example is an error.
            Default: ``None`` (every feature, as stored).
        length (int): the nominal ``len()``; ``-1`` (default) means unknown.
        check_crc (bool): check each record's CRCs (TorchData does not).
            Default: ``True``.

    Example::

        >>> dp = FileOpener(["train.tfrecord"], mode="b").load_from_tfrecord()  # doctest: +SKIP
        >>> next(iter(dp))  # doctest: +SKIP
        {'label': array([3]), 'image': [b'...']}
    """

    _repr_args = ("spec",)

    def __init__(self, datapipe, spec=None, length=-1, *, check_crc=True):
        _need_protobuf("TFRecordLoader")
        self.datapipe = datapipe
        self.spec = spec
        self.length = length
        self.check_crc = check_crc

    def __iter__(self):
        cls = sequence_example_class()
        for item in self.datapipe:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError(f"TFRecordLoader: expected (path, binary stream) pairs from "
                                f"the source, got {type(item).__name__}")
            path, stream = item
            for data in iterate_tfrecord(stream, path, self.check_crc):
                example = cls()
                example.ParseFromString(data)
                yield parse_sequence_example(example, self.spec)

    def __len__(self) -> int:
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} has no length (pass length=)")
        return self.length
