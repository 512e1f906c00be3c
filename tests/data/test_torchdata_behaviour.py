"""Behaviours TorchData users rely on: defaults, construction-time checks and warnings.

Each test states TorchData's rule (from its source) and checks ours against it.
"""

import asyncio
import collections
import functools
import gzip
import io
import pickle
import tarfile
import warnings

import numpy as np
import pytest

from functorch_core.data import (
    DataChunk,
    Decompressor,
    FileOpener,
    IterableWrapper,
    PinMemory,
    SequenceWrapper,
    Shuffler,
    apply_shuffle_settings,
    find,
    remove_dp,
    traverse,
)
from functorch_core.data.datapipes.map import Mapper as MapMapper


def add(a, b):
    return a + b


def add_kw(a, *, scale):
    return a * scale


def first(x):
    return x[0]


def odd(x):
    return x % 2


def keep_all(x):
    return True


def test_flatmap_without_fn_flattens_the_selected_columns():
    # TorchData's default fn returns one argument as is, several as a tuple
    dp = IterableWrapper([(1, 2, 3), (4, 5, 6)])
    assert list(dp.flatmap(input_col=(0, 2))) == [1, 3, 4, 6]
    assert list(IterableWrapper([((1, 2), 0)]).flatmap(input_col=0)) == [1, 2]
    assert list(IterableWrapper([[1, 2], [3]]).flatmap()) == [1, 2, 3]
    assert list(pickle.loads(pickle.dumps(dp.flatmap(input_col=[0, 1])))) == [1, 2, 4, 5]


def test_zip_with_iter_evicts_oldest_with_one_warning():
    src = IterableWrapper([("d", 0), ("e", 1)])
    ref = IterableWrapper([("a", 10), ("b", 20), ("c", 30), ("d", 40), ("e", 50)])
    with pytest.warns(UserWarning, match="FIFO order") as record:
        # looking for "d" reads a, b, c, each evicting the one before
        out = list(src.zip_with_iter(ref, key_fn=first, buffer_size=1))
    assert out == [(("d", 0), ("d", 40)), (("e", 1), ("e", 50))]
    assert sum("FIFO" in str(w.message) for w in record) == 1


def test_zip_with_iter_eviction_then_missing_key_raises():
    src = IterableWrapper([("c", 0), ("a", 1)])
    ref = IterableWrapper([("a", 10), ("b", 20), ("c", 30)])
    with pytest.warns(UserWarning, match="FIFO"), \
            pytest.raises(BufferError, match="key 'a'"):
        list(src.zip_with_iter(ref, key_fn=first, buffer_size=1))
    # large enough: no warning, everything matched
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(src.zip_with_iter(ref, key_fn=first, buffer_size=2))) == 2


def test_header_len_of_unsized_source_is_its_limit_with_a_warning():
    dp = IterableWrapper(range(100)).filter(keep_all)
    with pytest.warns(UserWarning, match="inferred to be equal to its limit"):
        assert len(dp.header(30)) == 30
    with pytest.raises(TypeError, match="Header instance doesn't have valid length"):
        len(dp.header(None))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sized source: exact, no warning
        assert len(IterableWrapper(range(10)).header(30)) == 10
        assert len(IterableWrapper(range(100)).header(30)) == 30


@pytest.mark.parametrize("build", [
    lambda fn, col: IterableWrapper([(1, 2)]).map(fn, input_col=col),
    lambda fn, col: IterableWrapper([(1, 2)]).filter(fn, input_col=col),
    lambda fn, col: IterableWrapper([(1, 2)]).flatmap(fn, input_col=col),
    lambda fn, col: IterableWrapper([(1, 2)]).threadpool_map(fn, input_col=col),
], ids=["map", "filter", "flatmap", "threadpool_map"])
def test_arity_is_checked_at_construction(build):
    # torch's validate_input_col: positional parameters must fit the columns
    with pytest.raises(ValueError, match="first takes 1 positional parameters, but 2"):
        build(first, [0, 1])
    with pytest.raises(ValueError, match="add takes 2 positional parameters, but 1"):
        build(add, 0)
    with pytest.raises(ValueError, match="add takes 2 positional parameters, but 1"):
        build(add, None)
    with pytest.raises(ValueError, match="non-default keyword-only parameters"):
        build(add_kw, 0)
    build(functools.partial(add_kw, scale=2), 0)  # keyword given: fits
    build(add, (0, 1))


def test_map_style_mapper_defaults_to_identity():
    assert list(SequenceWrapper([3, 4]).map()) == [3, 4]
    m = MapMapper(SequenceWrapper([3, 4]))
    assert m[1] == 4 and len(m) == 2
    with pytest.raises(TypeError, match="Mapper: fn=3 is not callable"):
        SequenceWrapper([1]).map(3)


def test_unlimited_buffers_warn():
    with pytest.warns(UserWarning, match="Unlimited buffer size is set for `fork`"):
        IterableWrapper(range(3)).fork(2, buffer_size=-1)
    with pytest.warns(UserWarning, match="Unlimited buffer size is set for `demux`"):
        IterableWrapper(range(3)).demux(2, odd, buffer_size=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = IterableWrapper(range(3)).fork(2)
        assert list(a.zip(b)) == [(0, 0), (1, 1), (2, 2)]


def test_functions_pickle_cannot_send_warn_at_construction():
    def local(x):
        return x

    with pytest.warns(UserWarning, match="Lambda function is not supported by pickle"):
        IterableWrapper([1]).map(lambda x: x)
    with pytest.warns(UserWarning, match="Local function is not supported by pickle"):
        IterableWrapper([1]).filter(local)
    with pytest.warns(UserWarning, match="Lambda function"):
        SequenceWrapper([1]).map(functools.partial(lambda x, y: x, y=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # module-level functions and partials: silent
        IterableWrapper([1]).map(first).map(functools.partial(add, 1)).filter(keep_all)


def test_datachunk_str_is_the_list():
    chunk = DataChunk([1, "a", [2]])
    assert str(chunk) == str([1, "a", [2]]) == "[1, 'a', [2]]"
    assert chunk.as_str("  ") == "  [1, a, [2]]"
    assert list(chunk.raw_iterator()) == [1, "a", [2]]
    assert str(next(iter(IterableWrapper(range(3)).batch(2)))) == "[0, 1]"


def test_apply_shuffle_settings_appends_a_shuffler():
    dp = IterableWrapper(range(20))
    with pytest.warns(UserWarning, match="does not contain a `Shuffler`. Adding one"):
        out = apply_shuffle_settings(dp, shuffle=True)
    assert isinstance(out, Shuffler) and out.datapipe is dp
    assert sorted(out) == list(range(20))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply_shuffle_settings(dp, shuffle=False) is dp  # nothing to turn off
        assert apply_shuffle_settings(dp, shuffle=None) is dp
        s = dp.shuffle()
        assert apply_shuffle_settings(s, shuffle=False) is s and list(s) == list(range(20))
        p = s.map(odd)
        assert apply_shuffle_settings(p, shuffle=True) is p and find(p, Shuffler) == [s]


async def slow_ten_times(x):
    # later items finish first: the output order must still be the input order
    await asyncio.sleep(0.002 * (5 - x % 5))
    return 10 * x


class _Counter:
    def __init__(self):
        self.active = self.peak = 0


def test_async_map_batches_order_length_and_columns():
    dp = IterableWrapper(range(23)).async_map_batches(slow_ten_times, batch_size=5)
    assert list(dp) == [10 * x for x in range(23)]
    assert len(dp) == 23
    pairs = IterableWrapper([(i, i + 1) for i in range(4)])
    assert list(pairs.async_map_batches(slow_ten_times, 3, input_col=1)) == [
        (0, 10), (1, 20), (2, 30), (3, 40)]
    assert list(pairs.async_map_batches(slow_ten_times, 3, input_col=0, output_col=-1,
                                        flatten=False)) == [
        [(0, 1, 0), (1, 2, 10), (2, 3, 20)], [(3, 4, 30)]]
    unsized = IterableWrapper(range(6)).filter(keep_all)
    with pytest.raises(TypeError):
        len(unsized.async_map_batches(slow_ten_times, 4))
    with pytest.raises(ValueError, match="coroutine function"):
        IterableWrapper([1]).async_map_batches(first, 2)
    out = pickle.loads(pickle.dumps(dp))
    assert list(out) == [10 * x for x in range(23)]


def test_async_map_batches_limits_concurrency():
    seen = _Counter()

    async def tracked(x):
        seen.active += 1
        seen.peak = max(seen.peak, seen.active)
        await asyncio.sleep(0.001)
        seen.active -= 1
        return x

    dp = IterableWrapper(range(40)).async_map_batches(tracked, batch_size=20, max_concurrency=3)
    assert list(dp) == list(range(40))
    assert seen.peak == 3


def test_extract_is_a_deprecated_decompress(tmp_path):
    path = tmp_path / "a.txt.gz"
    path.write_bytes(gzip.compress(b"hello"))
    with pytest.warns(DeprecationWarning, match="use Decompressor"):
        dp = FileOpener([str(path)], mode="b").extract()
    assert isinstance(dp, Decompressor)
    [(name, stream)] = list(dp)
    assert name == str(path) and stream.read() == b"hello"
    stream.close()


class _Pinnable:
    def __init__(self):
        self.calls = []

    def pin_memory(self, device):
        self.calls.append(device)
        return self


Pair = collections.namedtuple("Pair", "a b")


def test_pin_memory_is_a_cpu_no_op_copy():
    arr = np.arange(3.0)
    items = [{"x": arr, "s": "t"}, Pair(1, [arr]), (b"raw", 2.5)]
    out = list(IterableWrapper(items, deepcopy=False).pin_memory())
    assert out[0]["x"] is arr and out[0]["s"] == "t" and out[0] is not items[0]
    assert type(out[1]) is Pair and out[1].b[0] is arr
    assert out[2] == (b"raw", 2.5)
    p = _Pinnable()
    assert list(IterableWrapper([p], deepcopy=False).pin_memory(device="dev")) == [p]
    assert p.calls == ["dev"]
    assert len(IterableWrapper(range(4)).pin_memory()) == 4
    assert not PinMemory(IterableWrapper([])).is_replicable()


def test_remove_dp_on_pipes_and_graphs():
    src = IterableWrapper(range(6))
    mapped = src.map(odd)
    last = mapped.batch(3)
    assert list(remove_dp(last, mapped)) == [[0, 1, 2], [3, 4, 5]]
    # TorchData's form: the graph from traverse in, a graph out
    mapped2 = src.map(odd)
    g = remove_dp(traverse(mapped2.filter(keep_all)), mapped2)
    [(top, inner)] = g.values()
    assert list(top) == list(range(6)) and [p for p, _ in inner.values()] == [src]
    assert remove_dp(mapped2, mapped2) is src  # the last pipe removed: its source is last
    with pytest.raises(RuntimeError, match="cannot remove the source"):
        remove_dp(last, src)
    with pytest.raises(RuntimeError, match="reads from 2 DataPipes"):
        zipped = src.zip(IterableWrapper([7]))
        remove_dp(zipped, zipped)
    with pytest.raises(ValueError, match="is not in the graph"):
        remove_dp(last, src.map(odd))


# -- archives: member streams outlive the loader's step to the next archive ------------------
def _tar_file(tmp_path, names):
    path = tmp_path / "shard.tar"
    with tarfile.open(path, "w") as tar:
        for name in names:
            data = name.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_tar_members_read_after_the_loader_moved_past_the_archive(tmp_path):
    path = _tar_file(tmp_path, ["a.txt", "b.txt", "c.txt"])
    # batch reads one item ahead of what it hands out: the last batch's streams were
    # handed out when the archive was already exhausted
    batches = list(FileOpener([path], mode="b").load_from_tar().batch(2))
    assert [[s.read() for _, s in b] for b in batches] == [[b"a.txt", b"b.txt"], [b"c.txt"]]
    # and the webdataset grouping of one sample's members
    path = _tar_file(tmp_path, ["s0.txt", "s0.cls", "s1.txt", "s1.cls"])
    samples = list(FileOpener([path], mode="b").load_from_tar().webdataset())
    assert [{k: v.read() for k, v in s.items() if k != "__key__"} for s in samples] == [
        {".txt": b"s0.txt", ".cls": b"s0.cls"}, {".txt": b"s1.txt", ".cls": b"s1.cls"}]


def test_the_archive_closes_when_its_last_member_stream_closes(tmp_path):
    path = _tar_file(tmp_path, ["a.txt", "b.txt"])
    opened = []
    src = IterableWrapper([path]).open_files("b").map(lambda p: (opened.append(p[1]), p)[1])
    members = list(src.load_from_tar())
    assert not opened[0].closed           # two member streams still open
    members[0][1].close()
    assert not opened[0].closed
    members[1][1].close()
    assert opened[0].closed
    # a consumer that stops early leaves the open members readable, then closes the rest
    first = next(iter(IterableWrapper([path]).open_files("b").load_from_tar()))
    assert first[1].read() == b"a.txt"
