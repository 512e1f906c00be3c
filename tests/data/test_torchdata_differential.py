"""Every pipe both libraries register, run on the same generated inputs in TorchData 0.9 and
here, outputs compared (dev venv only: skipped where torch and torchdata are absent).

Each functional name TorchData and we share has a case below, or is named in NOT_COMPARED
with the reason, or has a ``behaviour`` row in tests/data/torchdata_differences.py. Random
pipes draw from different generators, so their outputs are compared as multisets. Tensors
and NumPy arrays compare as (dtype, values).
"""

import asyncio
import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import tarfile
import types
import warnings
import zipfile

import numpy as np
import pytest
import torchdata_differences as differences
import torchdata_registry as registry
from hypothesis import given, settings
from hypothesis import strategies as st

import functorch_core.data.datapipes.iter as our_iter
import functorch_core.data.datapipes.map as our_map
from functorch_core.data.iter import SHARDING_PRIORITIES as OUR_PRIORITIES

torch = pytest.importorskip("torch")
pytest.importorskip("torchdata")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # TorchData's deprecation banner
    import torchdata.datapipes.iter as td_iter
    import torchdata.datapipes.map as td_map
    from torch.utils.data.datapipes.iter.sharding import SHARDING_PRIORITIES as TD_PRIORITIES

OURS = types.SimpleNamespace(iter=our_iter, map=our_map, W=our_iter.IterableWrapper,
                             S=our_map.SequenceWrapper, priorities=OUR_PRIORITIES)
THEIRS = types.SimpleNamespace(iter=td_iter, map=td_map, W=td_iter.IterableWrapper,
                               S=td_map.SequenceWrapper, priorities=TD_PRIORITIES)

NOT_COMPARED = {
    "read_from_http": "reads the network; tests/data/test_data_files.py serves it locally",
    "read_from_remote": "reads the network, as read_from_http",
    "list_files_by_s3": "TorchData's needs its AWS SDK extension; tests/data/test_s3.py "
                        "runs ours on moto",
    "load_files_by_s3": "as list_files_by_s3",
}


def plain(x, tuples_as_lists=False):
    """Outputs in a comparable form: DataChunks as ("batch", items), arrays and tensors as
    ("array", dtype, values), streams as their content."""
    if isinstance(x, torch.Tensor):
        return ("array", str(x.dtype).removeprefix("torch."), x.tolist())
    if isinstance(x, np.ndarray):
        return ("array", str(x.dtype), x.tolist())
    if isinstance(x, dict):
        return {k: plain(v, tuples_as_lists) for k, v in x.items()}
    if type(x).__name__ == "DataChunk":  # a batch: both libraries' DataChunk
        return ("batch", [plain(v, tuples_as_lists) for v in x])
    if isinstance(x, tuple) and not tuples_as_lists:
        return tuple(plain(v, tuples_as_lists) for v in x)
    if isinstance(x, (list, tuple)):
        return [plain(v, tuples_as_lists) for v in x]
    x = getattr(x, "file_obj", x)  # TorchData's StreamWrapper
    if isinstance(x, tarfile.TarFile):
        return ("tar", x.getnames())
    if isinstance(x, zipfile.ZipFile):
        return ("zip", x.namelist())
    if hasattr(x, "read"):
        try:
            return ("stream", x.read())
        finally:
            x.close()
    return x


PIPES = (our_iter.IterDataPipe, our_map.MapDataPipe, td_iter.IterDataPipe, td_map.MapDataPipe,
         list, tuple)


def items(pipe):
    """A pipe's outputs; a map pipe's by index, a tuple of pipes' child by child."""
    if isinstance(pipe, (list, tuple)):
        return [items(p) if isinstance(p, PIPES) else p for p in pipe]
    if isinstance(pipe, (our_map.MapDataPipe, td_map.MapDataPipe)):
        return [pipe[i] for i in range(len(pipe))]
    return list(pipe)


# -- functions the cases use (module level: the pipes pickle them) ---------------------------
def triple(x):
    return (x, -x, str(x))


def double(x):
    return 2 * x


def is_even(x):
    return x % 2 == 0


def mod3(x):
    return x % 3


def none_or_parity(x):
    return None if x % 4 == 0 else x % 2


def pair(a, b):
    return (a, b)


def first(x):
    return x[0]


def twice(x):
    return [x, x]


def plus_one_all(batch):
    return [x + 1 for x in batch]


async def async_double(x):
    await asyncio.sleep(0)
    return 2 * x


def size_of(x):
    return len(x)


def sort_bucket(bucket):
    return sorted(bucket)


def key_mod(x):
    return x % 5


def pair_mod(x):
    return (x % 5, x)


# name -> (build(ns, data), compare); compare: "exact", "multiset" (random pipes), "collated"
ITER_CASES = {
    "add_index": (lambda ns, d, k: ns.W([{"v": x} for x in d]).add_index("i"), "exact"),
    "async_map_batches": (lambda ns, d, k: ns.W(d).async_map_batches(async_double, k), "exact"),
    "batch": (lambda ns, d, k: [ns.W(d).batch(k), ns.W(d).batch(k, drop_last=True)], "exact"),
    "bucketbatch": (lambda ns, d, k: ns.W(d).bucketbatch(k, batch_num=2, bucket_num=2,
                                                      sort_key=sort_bucket), "multiset"),
    "collate": (lambda ns, d, k: [ns.W([{"x": x, "y": (float(x), [x, -x])} for x in d])
                               .batch(k).collate(), ns.W([d]).collate() if d else []],
                "collated"),
    "concat": (lambda ns, d, k: [ns.W(d).concat(ns.W(d[::2]), ns.W(d[:3])),
                                 [len(ns.W(d).concat(ns.W(d[:k])))]], "exact"),
    "cycle": (lambda ns, d, k: ns.W(d).cycle(k), "exact"),
    "demux": (lambda ns, d, k: [*ns.W(d).demux(3, mod3),
                                *ns.W(d).demux(2, none_or_parity, drop_none=True),
                                [len(c) for c in ns.W(d).demux(2, is_even)]], "exact"),
    "drop": (lambda ns, d, k: [ns.W([triple(x) for x in d]).drop([0, 2]),
                               ns.W([triple(x) for x in d]).drop(1),
                               ns.W([{"a": x, "b": -x} for x in d]).drop("a")], "exact"),
    "enumerate": (lambda ns, d, k: ns.W(d).enumerate(k - 2), "exact"),
    "filter": (lambda ns, d, k: [ns.W(d).filter(is_even),
                              ns.W([triple(x) for x in d]).filter(is_even, input_col=0)],
               "exact"),
    "flatmap": (lambda ns, d, k: [ns.W(d).flatmap(twice),
                               ns.W([triple(x) for x in d]).flatmap(twice, input_col=1),
                               ns.W([triple(x) for x in d]).flatmap(input_col=(0, 2))],
                "exact"),
    "flatten": (lambda ns, d, k: [ns.W([(x, (x, [x]), [x]) for x in d]).flatten(),
                               ns.W([(x, (x, -x), x) for x in d]).flatten(1),
                               ns.W([{"a": x, "b": {"c": x}} for x in d]).flatten()],
                "exact"),
    "fork": (lambda ns, d, k: ns.W(d).fork(k), "exact"),
    "groupby": (lambda ns, d, k: [ns.W(d).groupby(mod3, group_size=k),
                               ns.W(d).groupby(mod3, keep_key=True),
                               ns.W(d).groupby(mod3, buffer_size=k + 1, group_size=k + 1,
                                               guaranteed_group_size=k, drop_remaining=True)],
                "exact"),
    "header": (lambda ns, d, k: [ns.W(d).header(k), ns.W(d).header(None)], "exact"),
    "in_batch_shuffle": (lambda ns, d, k: ns.W(d).batch(k).in_batch_shuffle(), "multiset"),
    "in_memory_cache": (lambda ns, d, k: ns.W(d).in_memory_cache(size=k), "exact"),
    "map": (lambda ns, d, k: [ns.W(d).map(double),
                           ns.W([triple(x) for x in d]).map(str, input_col=1, output_col=-1),
                           ns.W([triple(x) for x in d]).map(double, input_col=0,
                                                            output_col=1)], "exact"),
    "map_batches": (lambda ns, d, k: ns.W(d).map_batches(plus_one_all, batch_size=k), "exact"),
    "max_token_bucketize": (
        lambda ns, d, k: [ns.W([str(abs(x)) * (abs(x) % 5 + 1) for x in d]).max_token_bucketize(
            6, buffer_size=k),
            ns.W([[0] * (abs(x) % 4 + 1) for x in d]).max_token_bucketize(
                8, len_fn=size_of, include_padding=True, min_len=1)], "exact"),
    "mux": (lambda ns, d, k: ns.W(d).mux(ns.W(d[1:]), ns.W(d[:2])), "exact"),
    "mux_longest": (lambda ns, d, k: ns.W(d).mux_longest(ns.W(d[1:]), ns.W(d[:2])), "exact"),
    "prefetch": (lambda ns, d, k: ns.W(d).prefetch(k), "exact"),
    "random_split": (lambda ns, d, k: [list(p) for p in ns.W(d).random_split(
        {"a": 0.5, "b": 0.5}, seed=0)] if d else [], "multiset"),
    "repeat": (lambda ns, d, k: ns.W(d).repeat(k), "exact"),
    "round_robin_demux": (lambda ns, d, k: ns.W(d).round_robin_demux(k), "exact"),
    "rows2columnar": (lambda ns, d, k: [
        ns.W([[{"a": x, "b": -x} for x in d]] if d else []).rows2columnar(),
        ns.W([[[x, -x] for x in d]] if d else []).rows2columnar(["p", "q"])], "exact"),
    "set_length": (lambda ns, d, k: ns.W(d).set_length(min(len(d), k)), "exact"),
    "sharding_filter": (lambda ns, d, k: _sharded(ns, d, k), "exact"),
    "sharding_round_robin_dispatch": (
        lambda ns, d, k: ns.W(d).sharding_round_robin_dispatch(ns.priorities.MULTIPROCESSING),
        "exact"),
    "shuffle": (lambda ns, d, k: ns.W(d).shuffle(buffer_size=k), "multiset"),
    "shuffled_flatmap": (lambda ns, d, k: ns.W(d).shuffled_flatmap(twice, buffer_size=k),
                         "multiset"),
    "slice": (lambda ns, d, k: [ns.W([triple(x) for x in d]).slice(1, 3),
                             ns.W([list(triple(x)) for x in d]).slice([0, 2]),
                             ns.W([(x, x, x, x) for x in d]).slice(0, 4, 2)], "exact"),
    "threadpool_map": (lambda ns, d, k: ns.W(d).threadpool_map(double, max_workers=k), "exact"),
    "to_map_datapipe": (lambda ns, d, k: _as_map(ns, d), "exact"),
    "unbatch": (lambda ns, d, k: [ns.W(d).batch(k).unbatch(), ns.W(d).batch(k).batch(2)
                               .unbatch(2), ns.W(d).batch(k).batch(2).unbatch(-1)], "exact"),
    "unzip": (lambda ns, d, k: ns.W([triple(x) for x in d]).unzip(3), "exact"),
    "zip": (lambda ns, d, k: [ns.W(d).zip(ns.W(d[1:]), ns.W(d[::-1])),
                              [len(ns.W(d).zip(ns.W(d[k:])))]], "exact"),
    "zip_longest": (lambda ns, d, k: [ns.W(d).zip_longest(ns.W(d[2:])),
                                   ns.W(d).zip_longest(ns.W(d[:1]), fill_value=0)], "exact"),
    "zip_with_iter": (lambda ns, d, k: ns.W(sorted(set(d))).zip_with_iter(
        ns.W(sorted(set(d), reverse=True)), key_fn=key_mod, keep_key=True) if len(
            {x % 5 for x in d}) == len(set(d)) else [], "exact"),
    "zip_with_map": (lambda ns, d, k: [
        ns.W([abs(x) % 4 for x in d]).zip_with_map(ns.S([10, 11, 12, 13]), key_fn=int),
        ns.W([abs(x) % 4 for x in d]).zip_with_map(ns.S([10, 11, 12, 13]), key_fn=int,
                                                   merge_fn=pair, keep_key=True),
        ns.W([abs(x) for x in d]).zip_with_map(ns.S([10, 11]), key_fn=int)], "exact"),
}

MAP_CASES = {
    "batch": (lambda ns, d, k: [ns.S(d).batch(k), ns.S(d).batch(k, drop_last=True)], "exact"),
    "concat": (lambda ns, d, k: ns.S(d).concat(ns.S(d[::2])), "exact"),
    "in_memory_cache": (lambda ns, d, k: ns.S(d).in_memory_cache(), "exact"),
    "map": (lambda ns, d, k: [ns.S(d).map(double), ns.S(d).map()], "exact"),
    "shuffle": (lambda ns, d, k: ns.S(d).shuffle(), "multiset"),
    "to_iter_datapipe": (lambda ns, d, k: [ns.S(d).to_iter_datapipe(),
                                        ns.S(d).to_iter_datapipe(indices=list(
                                            range(len(d)))[::-2])], "exact"),
    "unzip": (lambda ns, d, k: ns.S([triple(x) for x in d]).unzip(3), "exact"),
    "zip": (lambda ns, d, k: ns.S(d).zip(ns.S(d[1:])), "exact"),
}


# classes that no functional name builds
CLASS_CASES = {
    "IterableWrapper": (lambda ns, d, k: [ns.iter.IterableWrapper(d),
                                       ns.iter.IterableWrapper([[x] for x in d],
                                                               deepcopy=False)], "exact"),
    "SequenceWrapper": (lambda ns, d, k: [ns.map.SequenceWrapper(d),
                                       ns.map.SequenceWrapper(tuple(d), deepcopy=False)],
                        "exact"),
    "Sampler": (lambda ns, d, k: ns.iter.Sampler(ns.W(d)), "exact"),
    "SampleMultiplexer": (lambda ns, d, k: ns.iter.SampleMultiplexer(
        {ns.W(d): 0.5, ns.W([x + 100 for x in d]): 0.5}, seed=1), "multiset"),
}


def _sharded(ns, d, k):
    out = []
    for n in (1, k):
        for i in range(n):
            dp = ns.W(d).sharding_filter()
            dp.apply_sharding(n, i)
            out.append((len(dp), list(dp)))
    return out


def _as_map(ns, d):
    table = ns.W([(x, 2 * x) for x in d]).to_map_datapipe()
    found = sorted((k, table[k]) for k in set(d))
    return [found, len(table)]  # TorchData's len() counts keys once a lookup loaded them


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    return [x]


def run_case(case, ns, data, k):
    """The case's outputs, or the type of the error it raised."""
    build, compare = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = items(build(ns, data, k))
        except Exception as e:  # both libraries must refuse alike
            return ("raises", type(e).__name__)
    if compare == "multiset":
        return sorted(map(repr, _flat(plain(got))))
    return plain(got, tuples_as_lists=compare == "collated")


def _shared(kind):
    recorded = registry.load()["functional"][kind]
    ours = registry.ours()["functional"][kind]
    return sorted(set(recorded) & set(ours))


def test_the_recording_is_torchdatas_registry():
    assert registry.torchdatas() == registry.load(), (
        "tests/data/torchdata_registry.json is stale: rewrite it with "
        "python tests/data/torchdata_registry.py")


@pytest.mark.parametrize("kind", ["iter", "map"])
def test_every_shared_name_is_compared(kind):
    cases = ITER_CASES if kind == "iter" else MAP_CASES
    base = "IterDataPipe" if kind == "iter" else "MapDataPipe"
    listed = differences.by_name()
    uncovered = [n for n in _shared(kind) if n not in cases and n not in NOT_COMPARED
                 and f"{base}.{n}" not in listed and n not in FILE_CASES]
    assert uncovered == []
    assert sorted(set(cases) - set(_shared(kind))) == []


def test_every_class_no_functional_name_builds_is_compared():
    recorded = registry.load()
    built = {c for kind in ("iter", "map") for c in recorded["functional"][kind].values()}
    listed = differences.by_name()
    alone = sorted(c for kind in ("iter", "map") for c in recorded["classes"][kind]
                   if c not in built and f"datapipes.{kind}.{c}" not in listed)
    assert alone == sorted(CLASS_CASES)


INTS = st.lists(st.integers(-20, 20), max_size=12)
CASES = {**{("iter", n): c for n, c in ITER_CASES.items()},
         **{("map", n): c for n, c in MAP_CASES.items()},
         **{("class", n): c for n, c in CLASS_CASES.items()}}


@pytest.mark.parametrize("table,name", sorted(CASES))
@settings(max_examples=15)
@given(data=INTS, k=st.integers(1, 4))
def test_same_outputs_as_torchdata(table, name, data, k):
    # k: the batch, buffer, instance and repeat counts the cases take
    case = CASES[table, name]
    assert run_case(case, OURS, data, k) == run_case(case, THEIRS, data, k)


# -- file pipes, on a tree of small files made from a seeded generator -------------------------
def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def _pack(root, rng):
    members = {f"s{i}.{ext}": (str(rng.integers(100)) if ext == "cls" else
                               f"text {rng.integers(1000)}\n").encode()
               for i in range(3) for ext in ("txt", "cls")}
    with tarfile.open(f"{root}/arc/a.tar", "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with open(f"{root}/arc/a.tar", "rb") as f:
        packed = f.read()
    _write(f"{root}/arc/a.tar.gz", gzip.compress(packed))
    with zipfile.ZipFile(f"{root}/arc/a.zip", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    text = b"".join(members.values())
    _write(f"{root}/arc/a.txt.gz", gzip.compress(text))
    _write(f"{root}/arc/a.txt.bz2", bz2.compress(text))
    _write(f"{root}/arc/a.txt.xz", lzma.compress(text))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    rng = np.random.default_rng(28)
    root = str(tmp_path_factory.mktemp("tree"))
    for i in range(3):
        lines = [("" if rng.random() < 0.3 else f"line {rng.integers(100)}") for _ in range(6)]
        _write(f"{root}/t{i}.txt", "\n".join(lines) + "\n")
        rows = rng.integers(0, 50, size=(int(rng.integers(1, 4)), 3))
        _write(f"{root}/sub/c{i}.csv", "x,y,z\n" + "".join(
            ",".join(map(str, r)) + "\n" for r in rows))
    _write(f"{root}/sub/j.json", json.dumps({"k": rng.integers(0, 9, 4).tolist()}))
    os.makedirs(f"{root}/arc")
    _pack(root, rng)
    return root


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _relative(root):
    def shown(pair):
        path, data = pair
        return os.path.relpath(path, root), data
    return shown


def _saved(ns, root, via):
    out = f"{root}/saved-{ns.W.__module__.split('.')[0]}-{via}"
    os.makedirs(out, exist_ok=True)

    def where(name):
        return f"{out}/{name}"

    src = ns.W([("a.txt", "alpha"), ("b.txt", "beta")])
    paths = list(src.save_to_disk(filepath_fn=where) if via == "disk" else
                 src.save_by_fsspec(filepath_fn=where))
    contents = []
    for p in paths:
        with open(p) as f:
            contents.append((os.path.relpath(p, out), f.read()))
    return contents


def _cached(ns, root):
    out = f"{root}/cache-{ns.W.__module__.split('.')[0]}"

    def where(name):
        return f"{out}/{name}.txt"

    def text(name):
        return name, f"content of {name}"

    def stream(name):
        return name, io.BytesIO(f"bytes of {name}\n".encode())

    def run(dp):
        return [os.path.relpath(p, out) for p in dp]

    written = ns.W(["a", "b"]).on_disk_cache(filepath_fn=where).map(text).end_caching(
        mode="w", same_filepath_fn=True, skip_read=True)
    read = ns.W(["c"]).on_disk_cache(filepath_fn=where).map(stream).end_caching(
        same_filepath_fn=True)
    outputs = [run(written), run(written), run(read), run(read)]  # the second run is cached
    contents = []
    for name in "abc":
        with open(where(name)) as f:
            contents.append(f.read())
    return outputs + [contents]


FILE_CASES = {
    "list_files": lambda ns, r: [ns.iter.FileLister(r, ["*.txt", "*.csv"], recursive=True),
                                 ns.W([f"{r}/sub"]).list_files("*.json")],
    "open_files": lambda ns, r: [ns.iter.FileLister(r, "*.txt").open_files(),
                                 ns.iter.FileLister(r, "*.txt").open_files("rb")],
    "readlines": lambda ns, r: [
        ns.iter.FileLister(r, "*.txt").open_files().readlines(),
        ns.iter.FileLister(r, "*.txt").open_files("rb").readlines(
            skip_lines=1, strip_newline=False, decode=True, return_path=False)],
    "lines_to_paragraphs": lambda ns, r: ns.iter.FileLister(r, "*.txt").open_files()
    .readlines().lines_to_paragraphs(),
    "parse_csv": lambda ns, r: [
        ns.iter.FileLister(f"{r}/sub", "*.csv").open_files().parse_csv(),
        ns.iter.FileLister(f"{r}/sub", "*.csv").open_files("rb").parse_csv(
            skip_lines=1, return_path=True, as_tuple=True)],
    "parse_csv_as_dict": lambda ns, r: ns.iter.FileLister(f"{r}/sub", "*.csv").open_files()
    .parse_csv_as_dict(return_path=True),
    "parse_json_files": lambda ns, r: ns.iter.FileLister(f"{r}/sub", "*.json").open_files()
    .parse_json_files(),
    "read_from_stream": lambda ns, r: ns.iter.FileLister(r, "t0.txt").open_files("rb")
    .read_from_stream(5),
    "check_hash": lambda ns, r: ns.iter.FileLister(r, "*.txt").open_files("rb").check_hash(
        {p: _sha256(p) for p in ns.iter.FileLister(r, "*.txt")}),
    "decompress": lambda ns, r: [
        ns.iter.FileLister(f"{r}/arc", ["*.gz", "*.bz2", "*.xz"]).open_files("rb")
        .decompress(),
        ns.iter.FileLister(f"{r}/arc", "a.tar.gz").open_files("rb").decompress()
        .load_from_tar()],
    "extract": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "a.txt.xz").open_files("rb")
    .extract(),
    "load_from_tar": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "*.tar").open_files("rb")
    .load_from_tar(),
    "load_from_zip": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "*.zip").open_files("rb")
    .load_from_zip(),
    "load_from_bz2": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "*.bz2").open_files("rb")
    .load_from_bz2(),
    "load_from_xz": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "*.xz").open_files("rb")
    .load_from_xz(),
    "webdataset": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "a.tar").open_files("rb")
    .load_from_tar().webdataset(),
    "routed_decode": lambda ns, r: ns.iter.FileLister(f"{r}/arc", "a.tar").open_files("rb")
    .load_from_tar().routed_decode(),
    "shard_expand": lambda ns, r: ns.W(["a{00..02}-{1..2}", "plain"]).shard_expand(),
    "list_files_by_fsspec": lambda ns, r: ns.W([r]).list_files_by_fsspec("*.txt"),
    "open_files_by_fsspec": lambda ns, r: ns.iter.FileLister(r, "*.txt").open_files_by_fsspec(
        "rb"),
    "save_to_disk": lambda ns, r: _saved(ns, r, "disk"),
    "save_by_fsspec": lambda ns, r: _saved(ns, r, "fsspec"),
    "on_disk_cache": lambda ns, r: _cached(ns, r),
    "end_caching": lambda ns, r: _cached(ns, r),
}


@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_file_pipe_same_outputs_as_torchdata(name, tree):
    def run(ns):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plain(items(FILE_CASES[name](ns, tree)))

    assert run(OURS) == run(THEIRS)


# -- the behaviour rows of tests/data/torchdata_differences.py still describe TorchData --------
def _raises(build, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            list(build())


def test_behaviour_rows_still_hold():
    rows = {name for name, row in differences.by_name().items() if row.kind == "behaviour"}
    assert {"IterDataPipe.collate", "IterDataPipe.pin_memory", "IterDataPipe.fullsync",
            "IterDataPipe.dataframe", "IterDataPipe.to_map_datapipe"} <= rows
    # collate: tensors and lists there, arrays and tuples here
    theirs = next(iter(td_iter.IterableWrapper([(1, 2.0), (3, 4.0)]).batch(2).collate()))
    ours = next(iter(our_iter.IterableWrapper([(1, 2.0), (3, 4.0)]).batch(2).collate()))
    assert type(theirs) is list and all(isinstance(t, torch.Tensor) for t in theirs)
    assert type(ours) is tuple and all(isinstance(a, np.ndarray) for a in ours)
    assert plain(ours, tuples_as_lists=True) == plain(theirs, tuples_as_lists=True)
    # pin_memory: TorchData needs CUDA; here a copying pass-through
    if not torch.cuda.is_available():
        _raises(lambda: td_iter.IterableWrapper(range(3)).pin_memory(), RuntimeError, "CUDA")
    assert list(our_iter.IterableWrapper(range(3)).pin_memory()) == [0, 1, 2]
    # fullsync: TorchData needs torch.distributed; one process is a world of one here
    _raises(lambda: td_iter.IterableWrapper(range(3)).fullsync(), RuntimeError,
            "Distributed is required")
    assert list(our_iter.IterableWrapper(range(3)).fullsync()) == [0, 1, 2]
    # dataframes: TorchData needs TorchArrow
    _raises(lambda: td_iter.IterableWrapper(range(3)).dataframe(), ImportError, "torcharrow")
    _raises(lambda: td_iter.IterableWrapper(["x.parquet"]).load_parquet_as_df(), ImportError,
            "torcharrow")
    # to_map_datapipe: TorchData's len() before a lookup is the source's
    pairs = [(0, "a"), (0, "b"), (1, "c")]
    assert len(td_iter.IterableWrapper(pairs).to_map_datapipe()) == 3
    assert len(our_iter.IterableWrapper(pairs).to_map_datapipe()) == 2
