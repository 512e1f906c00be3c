"""S3FileLister and S3FileLoader against moto's S3 server on 127.0.0.1, started here."""

import socket

import pytest

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

from functorch_core.data import (  # noqa: E402
    DataLoader,
    IterableWrapper,
    S3FileLister,
    S3FileLoader,
)

OBJECTS = {"train/a.csv": b"1,2\n", "train/b.csv": b"3,4\n", "train/deep/c.txt": b"x" * 70000,
           "trainer.json": b"{}", "test/d.csv": b"5\n"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint():
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        import s3fs

        fs = s3fs.S3FileSystem(endpoint_url=url, key="k", secret="s", skip_instance_cache=True)
        fs.mkdir("bucket")
        for key, data in OBJECTS.items():
            fs.pipe(f"bucket/{key}", data)
        yield {"endpoint_url": url, "key": "k", "secret": "s"}
    finally:
        server.stop()


def test_lister_lists_by_prefix_at_any_depth_and_filters_by_mask(endpoint):
    def urls(prefix, **kw):
        return list(IterableWrapper([prefix]).list_files_by_s3(**endpoint, **kw))

    assert urls("s3://bucket/train/") == ["s3://bucket/train/a.csv", "s3://bucket/train/b.csv",
                                          "s3://bucket/train/deep/c.txt"]
    assert urls("s3://bucket/train") == [*urls("s3://bucket/train/"), "s3://bucket/trainer.json"]
    assert len(urls("s3://bucket")) == len(urls("s3://bucket/")) == 5
    assert urls("s3://bucket", masks="*.csv") == ["s3://bucket/test/d.csv",
                                                  "s3://bucket/train/a.csv",
                                                  "s3://bucket/train/b.csv"]
    assert urls("s3://bucket/nothing/") == []
    assert len(S3FileLister(IterableWrapper([]), length=4, **endpoint)) == 4
    with pytest.raises(ValueError, match="expected an S3 URL"):
        urls("bucket/train")


def test_loader_reads_objects_and_names_a_missing_one(endpoint):
    keys = ["train/a.csv", "train/deep/c.txt"]
    got = list(S3FileLoader(IterableWrapper([f"s3://bucket/{k}" for k in keys]),
                            buffer_size=8192, request_timeout_ms=5000, **endpoint))
    assert [(u, f.read()) for u, f in got] == [(f"s3://bucket/{k}", OBJECTS[k]) for k in keys]
    with pytest.raises(FileNotFoundError, match=r"s3://bucket/missing\.csv does not exist"):
        list(S3FileLoader(IterableWrapper(["s3://bucket/missing.csv"]), **endpoint))
    with pytest.raises(ValueError, match="buffer_size"):
        S3FileLoader(IterableWrapper([]), buffer_size=0, **endpoint)


def read_all(pair):
    return pair[0], pair[1].read()


def test_listed_files_through_two_workers_exactly_once(endpoint):
    dp = (IterableWrapper(["s3://bucket/train/"]).list_files_by_s3(**endpoint)
          .sharding_filter().load_files_by_s3(**endpoint).map(read_all))
    got = list(DataLoader(dp, num_workers=2, timeout=60, multiprocessing_context="fork"))
    assert sorted(got) == sorted((f"s3://bucket/{k}", v) for k, v in OBJECTS.items()
                                 if k.startswith("train/"))
