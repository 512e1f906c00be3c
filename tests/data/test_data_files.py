"""File, text, archive, WebDataset, HTTP, on-disk-cache and fsspec pipes on tiny files in
tmp_path: documented semantics, errors that name the pipe and the file, and the same output
as TorchData 0.9 where it is installed."""

import bz2
import gzip
import hashlib
import http.server
import io
import json
import lzma
import os
import pickle
import tarfile
import threading
import zipfile

import numpy as np
import pytest

from functorch_core.data.datapipes import iter as fi

W = fi.IterableWrapper


def read_all(pair):
    path, stream = pair
    try:
        return path, stream.read()
    finally:
        stream.close()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return str(path)


@pytest.fixture
def tree(tmp_path):
    root = str(tmp_path / "tree")
    write(f"{root}/b.csv", "x,y\n1,2\n3,4\n")
    write(f"{root}/a.csv", "x,y\n5,6\n")
    write(f"{root}/notes.txt", "one\ntwo\n\nthree\n")
    write(f"{root}/sub/c.csv", "x,y\n7,8\n")
    write(f"{root}/sub/d.json", json.dumps({"k": [1, 2]}))
    return root


# -- listing and opening ----------------------------------------------------------------------
def test_file_lister_masks_recursion_and_order(tree):
    assert list(fi.FileLister(tree, "*.csv")) == [f"{tree}/a.csv", f"{tree}/b.csv"]
    assert list(fi.FileLister(tree, ["*.csv", "*.json"], recursive=True)) == [
        f"{tree}/a.csv", f"{tree}/b.csv", f"{tree}/sub/c.csv", f"{tree}/sub/d.json"]
    assert list(fi.FileLister(f"{tree}/a.csv")) == [f"{tree}/a.csv"]
    assert list(W([tree]).list_files("*.txt")) == [f"{tree}/notes.txt"]
    rel = os.path.relpath(tree)
    assert all(os.path.isabs(p) for p in fi.FileLister(rel, abspath=True))
    assert len(fi.FileLister(tree, length=2)) == 2
    with pytest.raises(TypeError, match="FileLister instance doesn't have valid length"):
        len(fi.FileLister(tree))
    with pytest.raises(FileNotFoundError, match=r"FileLister: root '.*nowhere' is neither"):
        list(fi.FileLister(f"{tree}/nowhere"))


def test_file_opener_modes_and_missing_file(tree):
    out = [read_all(p) for p in fi.FileLister(tree, "*.csv").open_files(mode="rb")]
    assert out == [(f"{tree}/a.csv", b"x,y\n5,6\n"), (f"{tree}/b.csv", b"x,y\n1,2\n3,4\n")]
    assert len(W([f"{tree}/a.csv"]).open_files()) == 1
    with pytest.raises(ValueError, match="FileOpener: mode must be one of"):
        W([]).open_files(mode="w")
    got = []
    dp = W([f"{tree}/a.csv", f"{tree}/missing.csv"]).open_files().readlines(return_path=False)
    with pytest.raises(FileNotFoundError, match=r"FileOpener: cannot open '.*missing\.csv'"):
        for line in dp:
            got.append(line)
    assert got == ["x,y", "5,6"]  # what came before the error is delivered once


def test_pipes_hold_no_open_files(tree):
    dp = fi.FileLister(tree, "*.csv").open_files().parse_csv()
    it = iter(dp)
    next(it)
    clone = pickle.loads(pickle.dumps(dp))
    assert list(clone) == [["x", "y"], ["5", "6"], ["x", "y"], ["1", "2"], ["3", "4"]]


# -- text formats -----------------------------------------------------------------------------
def test_readlines_and_paragraphs(tree):
    path = f"{tree}/notes.txt"
    lines = list(W([path]).open_files().readlines())
    assert lines == [(path, "one"), (path, "two"), (path, ""), (path, "three")]
    assert list(W([path]).open_files("rb").readlines(skip_lines=1, decode=True,
                                                     return_path=False)) == ["two", "", "three"]
    assert next(iter(W([path]).open_files("rb").readlines(strip_newline=False,
                                                          return_path=False))) == b"one\n"
    assert list(W([path]).open_files().readlines().lines_to_paragraphs()) == [
        (path, "one\ntwo"), (path, "three")]
    two = W([("f", "a"), ("f", "b"), ("g", "c")]).lines_to_paragraphs()
    assert list(two) == [("f", "a\nb"), ("g", "c")]


def test_parse_csv_and_dicts(tree):
    files = fi.FileLister(tree, "*.csv").open_files()
    assert list(files.parse_csv(skip_lines=1)) == [["5", "6"], ["1", "2"], ["3", "4"]]
    assert list(fi.FileLister(tree, "a.csv").open_files("rb").parse_csv(
        as_tuple=True, return_path=True)) == [(f"{tree}/a.csv", ("x", "y")),
                                              (f"{tree}/a.csv", ("5", "6"))]
    assert list(fi.FileLister(tree, "*.csv").open_files().parse_csv_as_dict()) == [
        {"x": "5", "y": "6"}, {"x": "1", "y": "2"}, {"x": "3", "y": "4"}]
    semi = write(f"{tree}/../semi.csv", "a;b\n1;2\n")
    assert list(W([semi]).open_files().parse_csv(delimiter=";")) == [["a", "b"], ["1", "2"]]


def test_csv_rows_of_the_wrong_width(tmp_path):
    bad = write(f"{tmp_path}/bad.csv", "x,y\n1,2\n3\n4,5\n")
    got = []
    with pytest.raises(ValueError, match=r"CSVParser: '.*bad\.csv' line 3 has 1 fields, "
                                         r"expected 2 \(the width of its first row\)"):
        for row in W([bad]).open_files().parse_csv():
            got.append(row)
    assert got == [["x", "y"], ["1", "2"]]
    with pytest.raises(ValueError, match=r"line 4 has 2 fields, expected 1"):
        list(W([bad]).open_files().parse_csv(skip_lines=2))
    wide = write(f"{tmp_path}/wide.csv", "x,y\n1,2,3\n")
    with pytest.raises(ValueError, match=r"CSVDictParser: '.*wide\.csv' line 2 has 3 fields, "
                                         r"expected 2 \(the header's width\)"):
        list(W([wide]).open_files().parse_csv_as_dict())
    with pytest.raises(ValueError, match=r"CSVDictParser: .* line 3 has 1 fields, expected 2"):
        list(W([bad]).open_files().parse_csv_as_dict())


def test_parse_json(tree, tmp_path):
    assert list(W([f"{tree}/sub/d.json"]).open_files().parse_json_files()) == [
        (f"{tree}/sub/d.json", {"k": [1, 2]})]
    bad = write(f"{tmp_path}/bad.json", "{nope")
    with pytest.raises(ValueError, match=r"JsonParser: '.*bad\.json' is not valid JSON"):
        list(W([bad]).open_files().parse_json_files())


# -- streams, saving, hashes ------------------------------------------------------------------
def test_read_from_stream_save_and_check_hash(tmp_path):
    src = write(f"{tmp_path}/a.bin", b"abcde")
    assert list(W([src]).open_files("rb").read_from_stream(2)) == [
        (src, b"ab"), (src, b"cd"), (src, b"e")]
    assert list(W([src]).open_files("rb").read_from_stream()) == [(src, b"abcde")]

    def out_path(name):
        return f"{tmp_path}/out/{name}.txt"

    saved = list(W([("p", "hello"), ("q", "world")]).save_to_disk(filepath_fn=out_path))
    assert saved == [out_path("p"), out_path("q")]
    assert open(out_path("q")).read() == "world"
    assert list(W([(f"{tmp_path}/b/x.bin", b"\x00\x01")]).save_to_disk(mode="wb"))
    with pytest.raises(TypeError, match=r"Saver: data for .* is bytes"):
        list(W([(f"{tmp_path}/c.txt", b"x")]).save_to_disk())

    good = {src: hashlib.sha256(b"abcde").hexdigest()}
    (_, stream), = W([src]).open_files("rb").check_hash(good)
    assert stream.read() == b"abcde"  # rewound after hashing
    md5 = {src: hashlib.md5(b"abcde").hexdigest()}
    assert list(W([(src, b"abcde")]).check_hash(md5, "md5")) == [(src, b"abcde")]
    with pytest.raises(RuntimeError, match=r"HashChecker: the sha256 of '.*a\.bin' is .*"
                                           r"expected 00"):
        list(W([src]).open_files("rb").check_hash({src: "00"}))
    with pytest.raises(RuntimeError, match="HashChecker: no expected hash for"):
        list(W([src]).open_files("rb").check_hash({}))


# -- compression and archives -------------------------------------------------------------------
@pytest.fixture
def packed(tmp_path):
    d = tmp_path / "packed"
    d.mkdir()
    payload = b"line1\nline2\n"
    with gzip.open(d / "t.txt.gz", "wb") as f:
        f.write(payload)
    with bz2.open(d / "t.txt.bz2", "wb") as f:
        f.write(payload)
    with lzma.open(d / "t.txt.xz", "wb") as f:
        f.write(payload)
    with tarfile.open(d / "t.tar", "w") as tar:
        for name, data in (("s/0.cls", b"3"), ("s/0.txt", b"zero"), ("s/1.cls", b"5"),
                           ("s/1.txt", b"one")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with tarfile.open(d / "t.tar.gz", "w:gz") as tar:
        tar.add(d / "t.txt.gz", arcname="inner.gz")
    with zipfile.ZipFile(d / "t.zip", "w") as z:
        z.writestr("a.txt", "AA")
        z.writestr("dir/b.txt", "BB")
    (d / "bad.tar").write_bytes(b"this is not a tar archive" * 30)
    (d / "bad.zip").write_bytes(b"PK not really")
    (d / "bad.bz2").write_bytes(b"BZh9" + b"\x00" * 40)
    (d / "bad.xz").write_bytes(b"\xfd7zXZ\x00garbage")
    return str(d), payload


def test_tar_and_zip_loaders(packed):
    d, _ = packed
    members = [read_all(p) for p in W([f"{d}/t.tar"]).open_files("rb").load_from_tar()]
    assert members == [(f"{d}/t.tar/s/0.cls", b"3"), (f"{d}/t.tar/s/0.txt", b"zero"),
                       (f"{d}/t.tar/s/1.cls", b"5"), (f"{d}/t.tar/s/1.txt", b"one")]
    gz = [p for p, s in W([f"{d}/t.tar.gz"]).open_files("rb").load_from_tar()]
    assert gz == [f"{d}/t.tar.gz/inner.gz"]
    streamed = [read_all(p)[1] for p in
                W([f"{d}/t.tar"]).open_files("rb").load_from_tar(mode="r|")]
    assert streamed == [b"3", b"zero", b"5", b"one"]
    zipped = [read_all(p) for p in W([f"{d}/t.zip"]).open_files("rb").load_from_zip()]
    assert zipped == [(f"{d}/t.zip/a.txt", b"AA"), (f"{d}/t.zip/dir/b.txt", b"BB")]


def test_corrupt_archives_name_the_pipe_and_file(packed):
    d, _ = packed
    with pytest.raises(tarfile.ReadError, match=r"TarArchiveLoader: '.*bad\.tar' is not a valid "
                                                r"tar archive"):
        list(W([f"{d}/bad.tar"]).open_files("rb").load_from_tar())
    with pytest.raises(zipfile.BadZipFile, match=r"ZipArchiveLoader: '.*bad\.zip' is not a "
                                                 r"valid zip archive"):
        list(W([f"{d}/bad.zip"]).open_files("rb").load_from_zip())
    with pytest.raises(OSError, match=r"Bz2FileLoader: '.*bad\.bz2' is not a valid bz2 file"):
        [read_all(p) for p in W([f"{d}/bad.bz2"]).open_files("rb").load_from_bz2()]
    with pytest.raises(lzma.LZMAError, match=r"XzFileLoader: '.*bad\.xz' is not a valid xz"):
        [read_all(p) for p in W([f"{d}/bad.xz"]).open_files("rb").load_from_xz()]
    with pytest.raises(tarfile.ReadError, match=r"Decompressor: '.*bad\.tar' is not a valid tar"):
        list(W([f"{d}/bad.tar"]).open_files("rb").decompress())


def test_single_file_loaders_and_decompress(packed):
    d, payload = packed
    assert [read_all(p) for p in W([f"{d}/t.txt.bz2"]).open_files("rb").load_from_bz2()] == [
        (f"{d}/t.txt", payload)]
    assert [read_all(p) for p in W([f"{d}/t.txt.xz"]).open_files("rb").load_from_xz()] == [
        (f"{d}/t.txt", payload)]
    lines = list(W([f"{d}/t.txt.bz2"]).open_files("rb").load_from_bz2().readlines(
        decode=True, return_path=False))
    assert lines == ["line1", "line2"]
    for ext in ("gz", "bz2", "xz"):
        (path, stream), = W([f"{d}/t.txt.{ext}"]).open_files("rb").decompress()
        assert path == f"{d}/t.txt.{ext}" and stream.read() == payload
    (path, stream), = W([f"{d}/t.txt.gz"]).open_files("rb").decompress(file_type="gzip")
    assert stream.read() == payload
    (_, tar), = W([f"{d}/t.tar"]).open_files("rb").decompress()
    assert tar.getnames() == ["s/0.cls", "s/0.txt", "s/1.cls", "s/1.txt"]
    (_, z), = W([f"{d}/t.zip"]).open_files("rb").decompress()
    assert z.namelist() == ["a.txt", "dir/b.txt"]
    with pytest.raises(ValueError, match=r"Decompressor: cannot tell the compression of "
                                         r"'x\.csv'"):
        list(W([("x.csv", io.BytesIO())]).decompress())


# -- WebDataset, decoding, shard names ------------------------------------------------------------
def test_webdataset_samples_from_a_tar(packed):
    d, _ = packed
    dp = W([f"{d}/t.tar"]).open_files("rb").load_from_tar().map(read_all).webdataset()
    assert list(dp) == [{"__key__": f"{d}/t.tar/s/0", ".cls": b"3", ".txt": b"zero"},
                        {"__key__": f"{d}/t.tar/s/1", ".cls": b"5", ".txt": b"one"}]
    assert list(W([("a/x.y.z", 1), ("a/noext", 2)]).webdataset()) == [
        {"__key__": "a/x", ".y.z": 1}]
    with pytest.raises(ValueError, match=r"WebDataset: sample 's/0' has two '\.x' files"):
        list(W([("s/0.x", 1), ("s/0.x", 2)]).webdataset())


def test_routed_decode(packed):
    d, _ = packed
    dp = W([f"{d}/t.tar"]).open_files("rb").load_from_tar().routed_decode()
    assert [v for _, v in dp] == [3, "zero", 5, "one"]
    arr = np.arange(4, dtype=np.int16)
    buf = io.BytesIO()
    np.save(buf, arr)
    (_, got), = W([("a.npy", buf.getvalue())]).routed_decode()
    assert got.dtype == np.int16 and (got == arr).all()
    assert list(W([("a.bin", b"\x00")]).routed_decode()) == [("a.bin", b"\x00")]

    def upper(ext, data):
        return data.decode().upper() if ext == "txt" else None

    dec = W([("a.txt", b"hi")]).routed_decode()
    dec.add_handler(upper)
    assert list(dec) == [("a.txt", "HI")]
    with pytest.raises(ValueError, match=r"RoutedDecoder: handler basichandlers failed on "
                                         r"'a\.cls'"):
        list(W([("a.cls", b"x")]).routed_decode())


def test_shard_expand():
    assert list(W(["s-{0..2}.tar"]).shard_expand()) == ["s-0.tar", "s-1.tar", "s-2.tar"]
    assert list(W(["s-{08..10}.tar"]).shard_expand()) == ["s-08.tar", "s-09.tar", "s-10.tar"]
    assert list(W(["{0..1}-{1..2}"]).shard_expand()) == ["0-1", "0-2", "1-1", "1-2"]
    assert list(W(["plain.tar"]).shard_expand()) == ["plain.tar"]
    with pytest.raises(ValueError, match="ShardExpander: bad range"):
        list(W(["{3..1}"]).shard_expand())


# -- HTTP against a local server ----------------------------------------------------------------
@pytest.fixture
def http_root(tmp_path):
    write(f"{tmp_path}/www/a.txt", "alpha\nbeta\n")
    write(f"{tmp_path}/www/b.csv", "1,2\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=f"{tmp_path}/www", **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_reader(http_root):
    dp = W([f"{http_root}/a.txt", f"{http_root}/b.csv"]).read_from_http(timeout=10)
    assert [read_all(p) for p in dp] == [(f"{http_root}/a.txt", b"alpha\nbeta\n"),
                                         (f"{http_root}/b.csv", b"1,2\n")]
    assert list(W([f"{http_root}/a.txt"]).read_from_remote(timeout=10).readlines(
        decode=True, return_path=False)) == ["alpha", "beta"]
    assert dp._resume_blocker and "network" in dp._resume_blocker
    with pytest.raises(OSError, match=r"HttpReader: could not read '.*/nope\.txt': HTTP 404"):
        list(W([f"{http_root}/nope.txt"]).read_from_http(timeout=10))
    with pytest.warns(UserWarning, match="skipped"):
        kept = [p for p, s in W([f"{http_root}/nope", f"{http_root}/a.txt"]).read_from_http(
            timeout=10, skip_on_error=True)]
    assert kept == [f"{http_root}/a.txt"]
    with pytest.raises(ValueError, match="HttpReader: 'ftp://x' is not an http"):
        list(W(["ftp://x"]).read_from_http())


def test_on_disk_cache_downloads_once(http_root, tmp_path):
    cache = tmp_path / "cache"

    def local(url):
        return str(cache / os.path.basename(url))

    def build(**kw):
        dp = W([f"{http_root}/a.txt", f"{http_root}/b.csv"]).on_disk_cache(filepath_fn=local,
                                                                            **kw)
        return dp.read_from_http(timeout=10).end_caching(mode="wb", same_filepath_fn=True)

    assert list(build()) == [local("a.txt"), local("b.csv")]
    assert open(local("a.txt")).read() == "alpha\nbeta\n"
    os.remove(local("b.csv"))
    assert list(build()) == [local("b.csv"), local("a.txt")]  # written now, then cached
    stale = {local("a.txt"): hashlib.sha256(b"alpha\nbeta\n").hexdigest(),
             local("b.csv"): hashlib.sha256(b"1,2\n").hexdigest()}
    write(local("a.txt"), "corrupted")
    assert list(build(hash_dict=stale)) == [local("a.txt"), local("b.csv")]
    assert open(local("a.txt")).read() == "alpha\nbeta\n"
    assert [f for f in os.listdir(cache) if f.startswith(".partial")] == []
    with pytest.raises(RuntimeError, match=r"call \.end_caching"):
        list(W(["x"]).on_disk_cache())
    with pytest.raises(RuntimeError, match="no on_disk_cache"):
        W(["x"]).end_caching()


def make_contents(name):
    return name, f"contents of {name}"


def test_on_disk_cache_without_network(tmp_path):
    def local(name):
        return str(tmp_path / f"{name}.txt")

    dp = W(["a", "b"]).on_disk_cache(filepath_fn=local).map(make_contents).end_caching(
        mode="w", same_filepath_fn=True, skip_read=True)
    assert list(dp) == [local("a"), local("b")]
    assert open(local("b")).read() == "contents of b"
    assert list(dp) == [local("a"), local("b")]  # both cached now
    assert os.path.getmtime(local("a")) > 0
    holder = dp.cache_holder
    holder.filepath_fn = os.path.basename  # picklable, so the pipeline pickles
    assert pickle.loads(pickle.dumps(dp)).cache_holder._end_caching_flag


# -- fsspec (optional) ----------------------------------------------------------------------------
def test_fsspec_pipes(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/fcdata/b.csv", b"3,4\n")
    fs.pipe("/fcdata/a.csv", b"1,2\n")
    fs.pipe("/fcdata/n.txt", b"x")
    urls = list(fi.FSSpecFileLister("memory://fcdata", masks="*.csv"))
    assert urls == ["memory:///fcdata/a.csv", "memory:///fcdata/b.csv"]
    assert list(W(urls).open_files_by_fsspec().parse_csv()) == [["1", "2"], ["3", "4"]]
    out = list(W([("memory://fcout/o.bin", b"\x01")]).save_by_fsspec(mode="wb"))
    assert out == ["memory://fcout/o.bin"] and fs.cat("/fcout/o.bin") == b"\x01"
    local = write(f"{tmp_path}/l.txt", "local")
    assert list(fi.FSSpecFileLister(str(tmp_path), masks="*.txt")) == [local]
    with pytest.raises(FileNotFoundError, match="FSSpecFileOpener: cannot open"):
        list(W(["memory://fcdata/none.csv"]).open_files_by_fsspec())


# -- against TorchData ----------------------------------------------------------------------------
def test_same_file_pipeline_outputs_as_torchdata(tree, packed):
    pytest.importorskip("torch")
    td = pytest.importorskip("torchdata.datapipes.iter")
    d, _ = packed

    def pipelines(m):
        return {
            "list": lambda: list(m.FileLister(tree, ["*.csv", "*.json"], recursive=True)),
            "csv": lambda: list(m.FileLister(tree, "*.csv").open_files().parse_csv(
                skip_lines=1, return_path=True)),
            "csvdict": lambda: list(m.FileLister(tree, "*.csv").open_files()
                                    .parse_csv_as_dict()),
            "lines": lambda: list(m.FileLister(tree, "*.txt").open_files().readlines()
                                  .lines_to_paragraphs()),
            "json": lambda: list(m.FileLister(f"{tree}/sub", "*.json").open_files()
                                 .parse_json_files()),
            "tar": lambda: [(p, s.read()) for p, s in m.FileLister(d, "t.tar").open_files(
                "rb").load_from_tar()],
            "zip": lambda: [(p, s.read()) for p, s in m.FileLister(d, "t.zip").open_files(
                "rb").load_from_zip()],
            "xz": lambda: [(p, s.read()) for p, s in m.FileLister(d, "t.txt.xz").open_files(
                "rb").load_from_xz()],
            "stream": lambda: list(m.FileLister(tree, "a.csv").open_files("rb")
                                   .read_from_stream(3)),
            "shards": lambda: list(m.IterableWrapper(["a{00..02}-{1..2}"]).shard_expand()),
            "wds": lambda: [{k: v for k, v in s.items()} for s in m.FileLister(d, "t.tar")
                            .open_files("rb").load_from_tar().map(read_all).webdataset()],
        }

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = {k: f() for k, f in pipelines(td).items()}
    ours = {k: f() for k, f in pipelines(fi).items()}
    for k in theirs:
        assert ours[k] == theirs[k], k


# -- through the DataLoader -----------------------------------------------------------------------
def row_ints(row):
    return tuple(int(v) for v in row)


def test_file_pipeline_in_workers_exactly_once_and_resumable(tmp_path):
    from functorch_core.data import DataLoader

    for f in range(5):
        write(f"{tmp_path}/part-{f}.csv", "".join(f"{f},{r}\n" for r in range(f + 2)))

    def pipeline():
        return (fi.FileLister(str(tmp_path), "*.csv").shuffle().sharding_filter()
                .open_files().parse_csv().map(row_ints))

    loader = DataLoader(pipeline(), num_workers=2, seed=1, multiprocessing_context="spawn")
    whole = list(loader)
    assert sorted(whole) == sorted((f, r) for f in range(5) for r in range(f + 2))
    loader = DataLoader(pipeline(), num_workers=2, seed=1)  # fork: faster to start
    it = iter(loader)
    head = [next(it) for _ in range(7)]
    state = loader.state_dict()
    loader.close()
    resumed = DataLoader(pipeline(), num_workers=2, seed=1)
    resumed.load_state_dict(state)
    assert head + list(resumed) == whole
