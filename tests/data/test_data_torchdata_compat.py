"""TorchData code that used to stop at import or on its first pipeline: typed custom pipes
(``IterDataPipe[T]``), the one-letter file modes ``"b"``/``"t"``, ``to_map_datapipe`` on iter
pipes, TorchData's ``datapipes`` namespaces, ``decompress().load_from_tar()``, and
``collate`` as the function. TorchData is not needed; its behaviour is written down here."""

import bz2
import doctest
import gzip
import hashlib
import io
import lzma
import pickle
import tarfile
import typing
import zipfile
import zlib
from typing import Tuple, TypeVar  # noqa: UP035 (TorchData code spells it so)

import numpy as np
import pytest

import functorch_core.data as D
from functorch_core.data import (
    DataLoader,
    FileOpener,
    IterableWrapper,
    IterDataPipe,
    MapDataPipe,
    SequenceWrapper,
    functional_datapipe,
    list_datapipes,
    replace,
    traverse,
)

T = TypeVar("T")


# -- typed custom pipes -------------------------------------------------------------------------
@functional_datapipe("compat_twice")
class Twice(IterDataPipe[T]):
    def __init__(self, source: IterDataPipe[T]) -> None:
        self.source = source

    def __iter__(self):
        for x in self.source:
            yield x
            yield x

    def __len__(self) -> int:
        return 2 * len(self.source)


class Ints(IterDataPipe[int]):
    def __init__(self, n: int) -> None:
        self.n = n
        self._start = 0

    def __iter__(self):
        start, self._start = self._start, 0
        yield from range(start, self.n)

    def __len__(self) -> int:
        return self.n

    def _skip(self, n: int) -> bool:
        self._start += n
        return True


class Named(IterDataPipe[Tuple[str, bytes]]):  # noqa: UP006
    def __iter__(self):
        yield "a", b"1"
        yield "b", b"2"


@functional_datapipe("compat_squares")
class Squares(MapDataPipe[T]):
    def __init__(self, source: MapDataPipe[T]) -> None:
        self.source = source

    def __getitem__(self, i):
        return self.source[i] ** 2

    def __len__(self) -> int:
        return len(self.source)


def test_bases_are_subscriptable_like_torchs():
    for base in (IterDataPipe, MapDataPipe):
        assert typing.get_origin(base[int]) is base
        assert typing.get_args(base[Tuple[str, bytes]]) == (Tuple[str, bytes],)  # noqa: UP006
        assert base[T].__parameters__ == (T,)
    assert Twice.__parameters__ == (T,) and Ints.__parameters__ == ()


def test_typed_iter_pipes_construct_iterate_register_and_pickle():
    dp = Twice(Ints(3))
    assert isinstance(dp, IterDataPipe) and isinstance(Ints(1), IterDataPipe)
    assert list(dp) == [0, 0, 1, 1, 2, 2] and len(dp) == 6
    assert list(Named()) == [("a", b"1"), ("b", b"2")]
    # registered with the functional API, on every iter pipe, typed or not
    assert IterDataPipe._functions["compat_twice"] is Twice
    chained = IterableWrapper([1, 2]).compat_twice().map(abs).compat_twice()
    assert list(chained) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert list(Ints(2).compat_twice()) == [0, 0, 1, 1]
    assert list(pickle.loads(pickle.dumps(chained))) == list(chained)
    # a parametrized instance (MyPipe[int](...)) is the same pipe
    typed = Twice[int](Ints(2))
    assert type(typed) is Twice and list(typed) == [0, 0, 1, 1]
    assert list(pickle.loads(pickle.dumps(typed))) == [0, 0, 1, 1]


def test_typed_map_pipes_index_register_and_pickle():
    sq = Squares(SequenceWrapper([1, 2, 3]))
    assert isinstance(sq, MapDataPipe) and sq[2] == 9 and len(sq) == 3
    assert list(SequenceWrapper([4]).compat_squares()) == [16]
    assert MapDataPipe._functions["compat_squares"] is Squares
    assert pickle.loads(pickle.dumps(sq))[1] == 4
    assert list(sq.to_iter_datapipe()) == [1, 4, 9]


def test_typed_pipes_keep_the_graph_and_resume_machinery():
    src = Ints(5)
    dp = Twice[int](src).map(abs)
    assert src in list_datapipes(dp) and len(list_datapipes(dp)) == 3
    assert len(traverse(dp)) == 1
    new = Ints(2)
    dp = replace(dp, src, new)
    assert list(dp) == [0, 0, 1, 1]
    # _skip is offered through a typed source
    ints = Ints(6)
    assert ints._skip(4) and list(ints) == [4, 5]

    def make():
        return DataLoader(Ints(7).map(abs), batch_size=2, seed=0)

    loader = make()
    it = iter(loader)
    first = next(it).tolist()
    state = loader.state_dict()
    rest = [b.tolist() for b in it]
    assert first == [0, 1] and rest == [[2, 3], [4, 5], [6]]
    resumed = make()
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] == rest


# -- TorchData's one-letter modes, and errors that name the file ----------------------------------
@pytest.fixture
def files(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("héllo\nworld\n", encoding="utf-8")
    data = tmp_path / "d.bin"
    data.write_bytes(b"\x00\x01\x02")
    return tmp_path, str(text), str(data)


def test_file_opener_accepts_torchdatas_b_and_t(files):
    _, text, data = files
    (path, stream), = FileOpener([data], mode="b")
    assert path == data and stream.read() == b"\x00\x01\x02"
    stream.close()
    (_, stream), = FileOpener([text], mode="t", encoding="utf-8")
    assert stream.read() == "héllo\nworld\n"
    stream.close()
    (_, stream), = IterableWrapper([text]).open_files("t", encoding="latin-1")
    assert stream.read() == "héllo\nworld\n".encode().decode("latin-1")
    stream.close()
    assert [len(list(FileOpener([data], mode=m))) for m in ("r", "rb", "rt", "b", "t")] == [1] * 5
    # binary modes take no encoding (TorchData: "binary mode doesn't take an encoding argument")
    with pytest.raises(ValueError, match=r"FileOpener: encoding='utf-8' needs a text mode, "
                                         r"got 'b'"):
        FileOpener([data], mode="b", encoding="utf-8")
    with pytest.raises(ValueError, match=r"FileOpener: mode must be one of .*'b', 't'.*got 'w'"):
        FileOpener([data], mode="w")


def test_line_reader_and_hash_check_on_mode_b(files):
    _, text, _ = files
    lines = list(FileOpener([text], mode="b").readlines(return_path=False))
    assert lines == ["héllo".encode(), b"world"]
    digest = hashlib.sha256(b"h\xc3\xa9llo\nworld\n").hexdigest()
    (_, stream), = FileOpener([text], mode="b").check_hash({text: digest})
    assert stream.read() == "héllo\nworld\n".encode()
    stream.close()


def test_hash_mismatch_names_the_file(files):
    _, text, data = files
    dp = FileOpener([data], mode="b").check_hash({data: "0" * 64})
    with pytest.raises(RuntimeError, match=r"HashChecker: the sha256 of '.*d\.bin' is [0-9a-f]{64}"
                                           r", expected 0{64}"):
        list(dp)
    dp = FileOpener([text], mode="b").check_hash({data: "0" * 32}, "md5")
    with pytest.raises(RuntimeError, match=r"HashChecker: no expected hash for '.*t\.txt'"):
        list(dp)


def _contents(meta):
    return meta, "text of " + meta.rsplit("/", 1)[-1]


def _bytes_of(meta):
    return meta, io.BytesIO(b"bytes of " + meta.rsplit("/", 1)[-1].encode())


def test_end_caching_and_saver_accept_b_and_t(tmp_path):
    names = [str(tmp_path / "c" / "a.txt"), str(tmp_path / "c" / "b.txt")]
    dp = IterableWrapper(names).on_disk_cache().map(_contents).end_caching(mode="t")
    assert dp.mode == "wt" and sorted(dp) == names
    assert open(names[1]).read() == "text of b.txt"
    bins = [str(tmp_path / "c" / "x.bin")]
    dp = IterableWrapper(bins).on_disk_cache().map(_bytes_of).end_caching(mode="b")
    assert dp.mode == "wb" and list(dp) == bins
    assert open(bins[0], "rb").read() == b"bytes of x.bin"
    # a text mode refuses bytes (and names the file)
    dp = IterableWrapper([str(tmp_path / "y.bin")]).on_disk_cache().map(_bytes_of)
    with pytest.raises(TypeError, match=r"EndOnDiskCacheHolder: the stream for '.*y\.bin' "
                                        r"gives bytes, which mode 'wt' cannot write"):
        list(dp.end_caching(mode="t"))
    with pytest.raises(ValueError, match=r"EndOnDiskCacheHolder: mode must be .*'t' or 'b', "
                                         r"got 'r'"):
        IterableWrapper(names).on_disk_cache().end_caching(mode="r")
    out = str(tmp_path / "s" / "z.bin")
    saver = IterableWrapper([(out, b"Z")]).save_to_disk(mode="b")
    assert saver.mode == "wb" and list(saver) == [out] and open(out, "rb").read() == b"Z"
    saver = IterableWrapper([(out, "T")]).save_to_disk(mode="t")
    assert saver.mode == "wt" and list(saver) == [out] and open(out).read() == "T"


def _tar_bytes(members, mode="w"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


MEMBERS = [("a.txt", b"A" * 3000), ("d/b.txt", b"BB")]


def test_corrupt_archives_on_mode_b_name_the_file(tmp_path):
    bad_tar = tmp_path / "bad.tar"
    bad_tar.write_bytes(b"not a tar archive" * 40)
    bad_zip = tmp_path / "bad.zip"
    bad_zip.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(tarfile.ReadError, match=r"TarArchiveLoader: '.*bad\.tar' is not a "
                                                r"valid tar archive"):
        list(FileOpener([str(bad_tar)], mode="b").load_from_tar())
    with pytest.raises(zipfile.BadZipFile, match=r"ZipArchiveLoader: '.*bad\.zip' is not a "
                                                 r"valid zip archive"):
        list(FileOpener([str(bad_zip)], mode="b").load_from_zip())
    with pytest.raises(tarfile.ReadError, match=r"Decompressor: '.*bad\.tar' is not a valid tar"):
        list(FileOpener([str(bad_tar)], mode="b").decompress())
    # a .tar.gz whose deflate data is damaged past the first member's header
    good = gzip.compress(_tar_bytes(MEMBERS))
    damaged = tmp_path / "damaged.tar.gz"
    damaged.write_bytes(good[:40] + bytes(b ^ 0x5A for b in good[40:]))
    with pytest.raises((tarfile.ReadError, OSError, zlib.error), match=r"'.*damaged\.tar\.gz'"):
        for _, stream in FileOpener([str(damaged)], mode="b").decompress().load_from_tar():
            stream.read()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises((tarfile.ReadError, EOFError), match=r"'.*truncated\.tar\.gz'"):
        for _, stream in FileOpener([str(truncated)], mode="b").load_from_tar():
            stream.read()
    # a damaged gzip stream names the file when it is read
    gz = tmp_path / "x.txt.gz"
    raw = gzip.compress(b"payload " * 200)
    gz.write_bytes(raw[:20] + bytes(b ^ 0x33 for b in raw[20:]))
    (_, stream), = FileOpener([str(gz)], mode="b").decompress()
    with pytest.raises((OSError, zlib.error), match=r"Decompressor: '.*x\.txt\.gz' is not a "
                                                      r"valid gzip file"):
        stream.read()


# -- converters and TorchData's namespaces --------------------------------------------------------
def test_to_map_datapipe_is_a_method_of_iter_pipes():
    pairs = IterableWrapper([("a", 1), ("b", 2)])
    m = pairs.to_map_datapipe()
    assert isinstance(m, D.IterToMapConverter) and isinstance(m, MapDataPipe)
    assert m["b"] == 2 and len(m) == 2
    rows = IterableWrapper([("a", 1, 1), ("b", 2, 2)])
    assert rows.to_map_datapipe(key_value_fn=_label_rest)["b"] == (2, 2)
    assert "to_map_datapipe" in IterDataPipe._functions
    assert "to_map_datapipe" not in MapDataPipe._functions
    assert not hasattr(SequenceWrapper([1]), "to_map_datapipe")
    # and back again
    assert list(IterableWrapper([(0, "x"), (1, "y")]).to_map_datapipe().to_iter_datapipe()) == [
        "x", "y"]


def _label_rest(row):
    return row[0], row[1:]


def test_torchdata_namespaces():
    from functorch_core.data.datapipes import DataChunk, functional_datapipe
    from functorch_core.data.datapipes.iter import IterDataPipe as I2
    from functorch_core.data.datapipes.iter import MapToIterConverter
    from functorch_core.data.datapipes.map import IterToMapConverter
    from functorch_core.data.datapipes.map import MapDataPipe as M2

    assert functional_datapipe is D.functional_datapipe and DataChunk is D.DataChunk
    assert MapToIterConverter is D.MapToIterConverter and IterToMapConverter is D.IterToMapConverter
    assert I2 is IterDataPipe and M2 is MapDataPipe
    import functorch_core.data.datapipes.iter as di
    assert "MapToIterConverter" in di.__all__
    assert list(MapToIterConverter(SequenceWrapper("ab"))) == ["a", "b"]


def test_map_util_docstrings_run():
    import functorch_core.data.map.util as util
    result = doctest.testmod(util, extraglobs={"IterableWrapper": IterableWrapper,
                                               "SequenceWrapper": SequenceWrapper})
    assert result.attempted >= 3 and result.failed == 0


# -- archives through decompress -------------------------------------------------------------------
@pytest.mark.parametrize("suffix,mode", [(".tar", "w"), (".tar.gz", "w:gz"), (".tar.xz", "w:xz"),
                                         (".tar.bz2", "w:bz2")])
def test_decompress_then_load_from_tar(tmp_path, suffix, mode):
    path = str(tmp_path / ("x" + suffix))
    with open(path, "wb") as f:
        f.write(_tar_bytes(MEMBERS, mode))
    got = [(p, s.read()) for p, s in FileOpener([path], mode="b").decompress().load_from_tar()]
    assert got == [(path + "/a.txt", b"A" * 3000), (path + "/d/b.txt", b"BB")]
    # and straight from the file, as before
    got2 = [(p, s.read()) for p, s in FileOpener([path], mode="rb").load_from_tar()]
    assert got2 == got


def test_decompress_then_load_from_zip(tmp_path):
    path = str(tmp_path / "x.zip")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.txt", "AA")
        z.writestr("sub/", "")
        z.writestr("sub/b.txt", "BB")
    got = [(p, s.read()) for p, s in FileOpener([path], mode="b").decompress().load_from_zip()]
    assert got == [(path + "/a.txt", b"AA"), (path + "/sub/b.txt", b"BB")]


class _Unseekable(io.RawIOBase):
    """A stream that reads but cannot seek or tell, as an HTTP body."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._inner.read(len(b))
        b[:len(data)] = data
        return len(data)


def test_tar_from_a_stream_that_cannot_seek():
    for mode in ("w", "w:gz", "w:bz2", "w:xz"):
        pairs = IterableWrapper([("x.tar", _Unseekable(_tar_bytes(MEMBERS, mode)))])
        got = [(p, s.read()) for p, s in pairs.load_from_tar()]
        assert got == [("x.tar/a.txt", b"A" * 3000), ("x.tar/d/b.txt", b"BB")], mode
    pairs = IterableWrapper([("x.tar.gz", _Unseekable(_tar_bytes(MEMBERS, "w:gz")))])
    assert [p for p, s in pairs.decompress().load_from_tar()] == ["x.tar.gz/a.txt",
                                                                   "x.tar.gz/d/b.txt"]
    pairs = IterableWrapper([("x.zip", _Unseekable(b"PK"))])
    with pytest.raises(ValueError, match=r"ZipArchiveLoader: the stream of 'x\.zip' cannot seek"):
        list(pairs.load_from_zip())


def test_archives_from_decompress_close_their_source(tmp_path):
    path = str(tmp_path / "x.tar.gz")
    with open(path, "wb") as f:
        f.write(_tar_bytes(MEMBERS, "w:gz"))
    zpath = str(tmp_path / "x.zip")
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("a.txt", "AA")
    for p, load in ((path, "load_from_tar"), (zpath, "load_from_zip")):
        opened = []
        src = IterableWrapper([p]).open_files("b").map(_record(opened))
        streams = []
        for _, s in getattr(src.decompress(), load)():
            s.read()
            streams.append(s)
        assert len(opened) == 1 and not opened[0].closed, p   # its members are still open
        for s in streams:
            s.close()
        assert opened[0].closed, p


def _record(into):
    def keep(pair):
        into.append(pair[1])
        return pair
    return keep


def test_single_file_compressions_through_decompress(tmp_path):
    payload = b"one\ntwo\n"
    for ext, compress in (("gz", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress)):
        path = tmp_path / f"f.txt.{ext}"
        path.write_bytes(compress(payload))
        (p, s), = FileOpener([str(path)], mode="b").decompress()
        assert p == str(path) and s.read() == payload


# -- collate is the function ----------------------------------------------------------------------
def test_collate_is_the_function():
    from functorch_core.data import collate

    assert callable(collate) and D.collate is collate
    out = collate([{"x": np.zeros(2, np.float32), "y": 1}, {"x": np.ones(2, np.float32), "y": 0}])
    assert out["x"].shape == (2, 2) and out["x"].dtype == np.float32
    assert out["y"].tolist() == [1, 0] and out["y"].dtype == np.int64
    ref = D.default_collate([(1, "a"), (2, "b")])
    got = collate([(1, "a"), (2, "b")])
    assert got[0].tolist() == ref[0].tolist() and got[1] == ref[1] == ["a", "b"]
    # the module is still importable under its private name, and does not shadow the function
    import functorch_core.data.collation as module
    assert module.collate is collate and D.collate is collate
    with pytest.raises(ValueError, match=r"collate\(batch\): the batch is empty"):
        collate([])


class Point:
    def __init__(self, x):
        self.x = x


def _points(batch, *, collate_fn_map=None):
    return np.array([p.x for p in batch])


def test_collate_fn_map_handles_leaf_types_first():
    from functorch_core.data import collate

    batch = [{"p": Point(1), "s": "a"}, {"p": Point(2), "s": "b"}]
    out = collate(batch, collate_fn_map={Point: _points})
    assert out["p"].tolist() == [1, 2] and out["s"] == ["a", "b"]
    # a tuple of types, and isinstance for subclasses
    out = collate([(True, 1.5)], collate_fn_map={(bool, float): _as_strings})
    assert out == (["True"], ["1.5"])
    with pytest.raises(TypeError, match=r"collate: batch\['p'\] holds a Point; .* or a "
                                        r"type in collate_fn_map"):
        collate(batch, collate_fn_map={str: _as_strings})
    with pytest.raises(TypeError, match=r"default_collate: batch\['p'\] holds a Point"):
        D.default_collate(batch)
    with pytest.raises(TypeError, match=r"collate\(collate_fn_map=\.\.\.\): expected a dict"):
        collate(batch, collate_fn_map=[Point])


def _as_strings(batch, *, collate_fn_map=None):
    return [str(x) for x in batch]
