"""The iter and map pipes beyond the core ones (transform, bucketing, combining, forking,
counting, grouping, random_split): documented semantics, laws, pickling, errors, and the
same outputs as TorchData 0.9 where it is installed."""

import pickle
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functorch_core.data import DataChunk, find, list_datapipes
from functorch_core.data.datapipes import iter as fi
from functorch_core.data.datapipes import map as fm

W = fi.IterableWrapper


def plain(x):
    """DataChunks and defaultdicts as plain lists and dicts, for comparisons."""
    if isinstance(x, list):
        return [plain(v) for v in x]
    if isinstance(x, tuple):
        return tuple(plain(v) for v in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


# module-level functions, so the pipes pickle
def double(x):
    return 2 * x


def twice(x):
    return [x, x]


def parity(x):
    return x % 2


def mod3(x):
    return x % 3


def first(x):
    return x[0]


def plus_one_all(batch):
    return [b + 1 for b in batch]


def sort_bucket(b):
    return sorted(b)


def merge_pair(a, b):
    return (a[1], b[1])


def by_len(x):
    return len(x)


# -- transform --------------------------------------------------------------------------------
def test_map_batches_flatmap_flatten_drop_slice():
    assert list(W(range(5)).map_batches(plus_one_all, batch_size=2)) == [1, 2, 3, 4, 5]
    seen = []

    def record(batch):
        seen.append(list(batch))
        return batch

    list(W([(0, "a"), (1, "b"), (2, "c")]).map_batches(record, 2, input_col=1))
    assert seen == [["a", "b"], ["c"]]
    assert list(W([1, 2]).flatmap(twice)) == [1, 1, 2, 2]
    assert list(W([[1, 2], [3]]).flatmap()) == [1, 2, 3]
    assert list(W([(1, "x"), (2, "y")]).flatmap(twice, input_col=0)) == [1, 1, 2, 2]
    assert list(W([(0, (1, 2)), (3, [4, 5])]).flatten()) == [(0, 1, 2), (3, 4, 5)]
    assert list(W([[0, [1, 2], [3]]]).flatten(1)) == [[0, 1, 2, [3]]]
    assert list(W([{"a": 1, "b": {"c": 2}}]).flatten()) == [{"a": 1, "c": 2}]
    assert list(W([(0, 10, 100), (1, 11, 111)]).drop([0, 2])) == [(10,), (11,)]
    assert list(W([{"a": 1, "b": 2}]).drop("a")) == [{"b": 2}]
    assert list(W([(0, 10, 100), (1, 11, 111)]).slice(1)) == [(10, 100), (11, 111)]
    assert list(W([[0, 10, 100, 1000]]).slice(0, 4, 2)) == [[0, 100]]
    assert list(W([(0, 10, 100)]).slice([0, 2])) == [(0, 100)]
    assert list(W([{"a": 1, "b": 2}]).slice(["b"])) == [{"b": 2}]
    assert len(W([(0, 1)] * 3).drop(0)) == 3
    with pytest.raises(TypeError, match="FlatMapper: fn double must return an iterable"):
        list(W([1]).flatmap(double))
    with pytest.raises(TypeError, match="length relies on"):
        len(W([1]).flatmap(twice))
    with pytest.warns(UserWarning, match="not present"):
        list(W([(0, 1)]).drop(5))


def test_threadpool_map_keeps_order_and_columns():
    dp = W(range(50)).threadpool_map(double, max_workers=4, scheduled_tasks=3)
    assert list(dp) == [2 * x for x in range(50)]
    assert len(dp) == 50
    assert list(W([(1, 2), (3, 4)]).threadpool_map(double, input_col=1)) == [(1, 4), (3, 8)]
    assert list(W([[1, 2]]).threadpool_map(double, input_col=0, output_col=-1)) == [[1, 2, 2]]
    with pytest.raises(ValueError, match="output_col must be None"):
        W([1]).threadpool_map(double, output_col=1)

    def boom(x):
        if x == 3:
            raise KeyError("three")
        return x

    out = []
    with pytest.raises(KeyError, match="three"):
        for x in W(range(6)).threadpool_map(boom, scheduled_tasks=2):
            out.append(x)
    assert out == [0, 1, 2]  # nothing lost or repeated before the failing item


def test_shuffled_flatmap_is_a_seeded_permutation_of_flatmap():
    src = [[i] * (i % 4) + [100 + i] for i in range(30)]
    dp = W(src).shuffled_flatmap(buffer_size=5)
    a = list(dp.set_seed(3))
    b = list(dp.set_seed(3))
    assert a == b
    assert sorted(a) == sorted(x for s in src for x in s)
    assert a != [x for s in src for x in s]
    assert list(W(src).shuffled_flatmap().set_shuffle(False)) == [x for s in src for x in s]
    assert dp._is_random and len(dp) == len(a)
    with pytest.raises(TypeError, match="relies on the output of its function"):
        len(W(src).shuffled_flatmap(twice))


# -- bucketing --------------------------------------------------------------------------------
def test_in_batch_shuffle_and_bucketbatch():
    dp = W([[0, 1, 2, 3], [4, 5]]).in_batch_shuffle()
    out = list(dp.set_seed(1))
    assert [sorted(b) for b in out] == [[0, 1, 2, 3], [4, 5]]
    assert all(isinstance(b, DataChunk) for b in out)
    assert list(dp.set_shuffle(False)) == [[0, 1, 2, 3], [4, 5]]
    bb = W(range(20)).bucketbatch(3, batch_num=2, bucket_num=2, sort_key=sort_bucket)
    out = list(bb.set_seed(0))
    assert sorted(x for b in out for x in b) == list(range(20))
    assert [len(b) for b in out].count(3) == 6 and len(out) == 7 == len(bb)
    assert out == list(bb.set_seed(0))
    dropped = list(W(range(20)).bucketbatch(3, drop_last=True, batch_num=2).set_seed(0))
    assert all(len(b) == 3 for b in dropped) and len(dropped) == 6
    # with a sort_key and one bucket, each bucket is sorted and batches keep bucket order
    assert plain(list(W([5, 3, 1, 4, 2, 0]).bucketbatch(2, batch_num=3, sort_key=sort_bucket))) \
        == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="BucketBatcher: batch_size must be a positive int"):
        W([1]).bucketbatch(0)


@given(st.lists(st.text(min_size=1, max_size=6), max_size=40), st.integers(6, 12),
       st.integers(1, 8), st.booleans())
def test_max_token_bucketize_law(words, max_tokens, buffer_size, padding):
    dp = W(words).max_token_bucketize(max_tokens, buffer_size=buffer_size,
                                      include_padding=padding)
    batches = list(dp)
    assert sorted(x for b in batches for x in b) == sorted(words)
    for b in batches:
        cost = len(b) * max(map(len, b)) if padding else sum(map(len, b))
        assert cost <= max_tokens


def test_max_token_bucketize_example_and_bounds():
    dp = W(["1", "11", "1", "111", "11"])
    assert plain(list(dp.max_token_bucketize(4))) == [["1", "1", "11"], ["11"], ["111"]]
    assert plain(list(dp.max_token_bucketize(4, min_len=2))) == [["11", "11"], ["111"]]
    with pytest.raises(ValueError, match="max_len=5 exceeds max_token_count=4"):
        dp.max_token_bucketize(4, max_len=5)


# -- combining --------------------------------------------------------------------------------
def test_concat_mux_zip_families():
    a, b = W(range(3)), W(range(10, 15))
    assert list(a.concat(b)) == [0, 1, 2, 10, 11, 12, 13, 14] and len(a.concat(b)) == 8
    assert list(a.mux(b)) == [0, 10, 1, 11, 2, 12] and len(a.mux(b)) == 6
    assert list(b.mux(a)) == [10, 0, 11, 1, 12, 2]
    assert list(a.mux_longest(b)) == [0, 10, 1, 11, 2, 12, 13, 14]
    assert list(a.zip(b)) == [(0, 10), (1, 11), (2, 12)] and len(a.zip(b)) == 3
    assert list(a.zip_longest(b, fill_value=-1))[-1] == (-1, 14)
    assert len(a.zip_longest(b)) == 5
    with pytest.raises(TypeError, match="Concater: argument 1 must be an IterDataPipe"):
        a.concat([1, 2])


def test_sample_multiplexer_weights_and_seed():
    a, b = W([0] * 300), W([1] * 300)
    sm = fi.SampleMultiplexer({a: 0.8, b: 0.2}, seed=5)
    out = list(sm)
    assert sorted(out) == [0] * 300 + [1] * 300 and len(sm) == 600
    assert out == list(sm)  # the constructor's seed replays
    assert 0.7 < out[:200].count(0) / 200 < 0.95
    assert list(sm.set_seed(1)) == list(sm.set_seed(1)) != out
    with pytest.raises(ValueError, match="weights must be > 0"):
        fi.SampleMultiplexer({a: 0})


def test_zip_with_iter_and_map():
    src = W([("a", 1), ("b", 2), ("c", 3)])
    ref = W([("c", 30), ("a", 10), ("b", 20)])
    assert list(src.zip_with_iter(ref, key_fn=first)) == [
        (("a", 1), ("a", 10)), (("b", 2), ("b", 20)), (("c", 3), ("c", 30))]
    assert next(iter(src.zip_with_iter(ref, first, keep_key=True, merge_fn=merge_pair))) == \
        ("a", (1, 10))
    # a full buffer drops its oldest reference item with a warning (TorchData), so the
    # evicted key "c" is then missing
    with pytest.warns(UserWarning, match="FIFO order"), \
            pytest.raises(BufferError, match="no item of ref_datapipe has the key 'c'"):
        list(src.zip_with_iter(W([("c", 30), ("b", 20), ("a", 10)]), first, buffer_size=1))
    with pytest.raises(BufferError, match="no item of ref_datapipe has the key 'c'"):
        list(src.zip_with_iter(W([("a", 0), ("b", 0)]), first))
    m = fm.SequenceWrapper([10, 11, 12])
    assert list(W([(2, "c"), (0, "a")]).zip_with_map(m, first)) == [((2, "c"), 12),
                                                                    ((0, "a"), 10)]
    with pytest.raises(KeyError, match="MapKeyZipper: key 7"):
        list(W([(7, "x")]).zip_with_map(m, first))


# -- forking ----------------------------------------------------------------------------------
@given(st.lists(st.integers(0, 9), max_size=30), st.integers(1, 4))
def test_fork_demux_roundrobin_unzip_laws(xs, n):
    children = W(xs).fork(n) if n > 1 else [W(xs).fork(1)]
    assert [list(c) for c in children] == [xs] * n
    parts = W(xs).demux(3, mod3)
    got = [list(p) for p in parts]
    assert got == [[x for x in xs if x % 3 == k] for k in range(3)]
    rr = W(xs).round_robin_demux(n)
    assert [list(p) for p in rr] == [xs[k::n] for k in range(n)]
    assert [len(p) for p in rr] == [len(xs[k::n]) for k in range(n)]
    a, b = W([(x, -x) for x in xs]).unzip(2)
    assert list(a.zip(b)) == [(x, -x) for x in xs]


def test_fork_buffer_copy_and_epochs():
    a, b = W(range(10)).fork(2, buffer_size=3)
    it = iter(a)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(BufferError, match="Forker: more than buffer_size=3"):
        next(it)
    a, b = W([[1], [2]]).fork(2, copy="deep")
    x, y = next(iter(a)), next(iter(b))
    assert x == y and x is not y
    a, b = W(range(3)).fork(2)
    assert list(a.zip(b)) == list(a.zip(b)) == [(0, 0), (1, 1), (2, 2)]
    assert list(a) == list(b) == [0, 1, 2]  # b read its buffer, after a drained the source
    assert len(a) == 3
    with pytest.raises(ValueError, match="classifier_fn returned 5"):
        list(W([5]).demux(2, int)[0])
    none_dropped = W(range(4)).demux(2, lambda x: None if x == 1 else x % 2, drop_none=True)
    assert [list(p) for p in none_dropped] == [[0, 2], [3]]
    assert [list(p) for p in W([(0, 1, 2)]).unzip(3, columns_to_skip=[1])] == [[0], [2]]


def test_fork_is_one_node_in_the_graph():
    a, b = W(range(3)).fork(2)
    z = a.zip(b)
    nodes = list_datapipes(z)
    assert sum(isinstance(p, fi.IterableWrapper) for p in nodes) == 1
    assert len(find(z, fi.IterableWrapper)) == 1


# -- counting, grouping -----------------------------------------------------------------------
def test_counting_pipes():
    assert list(W(range(10)).header(3)) == [0, 1, 2] and len(W(range(10)).header(3)) == 3
    assert list(W(range(2)).header(None)) == [0, 1]
    dp = W(iter(range(5))).set_length(3)
    assert len(dp) == 3 and list(dp) == [0, 1, 2, 3, 4]  # TorchData: the length is declared only
    assert list(W(range(2)).cycle(3)) == [0, 1] * 3 and len(W(range(2)).cycle(3)) == 6
    it = iter(W(range(2)).cycle())
    assert [next(it) for _ in range(5)] == [0, 1, 0, 1, 0]
    with pytest.raises(TypeError, match="forever"):
        len(W(range(2)).cycle())
    assert list(W(range(2)).repeat(3)) == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="Repeater: times must be an int > 1"):
        W([1]).repeat(1)
    assert list(W("ab").enumerate(1)) == [(1, "a"), (2, "b")]
    assert list(W([{"a": 1}, {"a": 2}]).add_index("i")) == [{"a": 1, "i": 0}, {"a": 2, "i": 1}]
    with pytest.raises(TypeError, match="IndexAdder: item 0 is a int, expected a dict"):
        list(W([1]).add_index())


def test_header_reads_no_item_past_the_limit():
    pulled = []

    def gen():
        for i in range(10):
            pulled.append(i)
            yield i

    list(W(gen(), deepcopy=False).header(3))
    assert pulled == [0, 1, 2]


def test_groupby():
    assert plain(list(W(range(7)).groupby(parity, group_size=2))) == [[0, 2], [1, 3], [4, 6],
                                                                       [5]]
    assert plain(list(W(range(5)).groupby(parity, keep_key=True))) == [(0, [0, 2, 4]),
                                                                         (1, [1, 3])]
    # a full buffer yields its largest group
    out = plain(list(W([0, 2, 1, 4, 3]).groupby(parity, buffer_size=3)))
    assert out == [[0, 2], [1, 4, 3]] or out == [[0, 2], [1, 3], [4]]
    with pytest.raises(RuntimeError, match="fewer than guaranteed_group_size=3"):
        list(W(range(6)).groupby(mod3, buffer_size=3, group_size=3))
    dropped = list(W(range(6)).groupby(mod3, buffer_size=3, group_size=3, drop_remaining=True))
    assert sum(map(len, dropped)) < 6


def test_rows2columnar():
    batch = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert list(W([batch]).rows2columnar()) == [{"a": [1, 3], "b": [2, 4]}]
    assert list(W([batch]).rows2columnar(["b"])) == [{"b": [2, 4]}]
    assert list(W([[[1, 2], [3, 4]]]).rows2columnar(["x", "y"])) == [{"x": [1, 3], "y": [2, 4]}]
    with pytest.raises(ValueError, match="has 2 values but column_names has 1"):
        list(W([[[1, 2]]]).rows2columnar(["x"]))


@given(st.integers(0, 60), st.integers(0, 1000))
def test_random_split_law(n, seed):
    train, valid = W(range(n)).random_split({"train": 0.7, "valid": 0.3}, seed=seed)
    a, b = list(train), list(valid)
    assert sorted(a + b) == list(range(n))
    assert a == list(train) and b == list(valid)  # both replay the same draws
    t, v = W(range(10)).random_split({"t": 7, "v": 3}, seed=seed)
    assert len(list(t)) == len(t) == 7 and len(list(v)) == len(v) == 3


def test_random_split_target_and_seed():
    only = W(range(20)).random_split({"a": 1, "b": 1}, seed=0, target="b")
    a, b = W(range(20)).random_split({"a": 1, "b": 1}, seed=0)
    assert list(only) == list(b) and sorted(list(a) + list(b)) == list(range(20))
    assert list(b.override_seed(1)) != list(only)
    with pytest.raises(KeyError, match="target='c'"):
        W(range(3)).random_split({"a": 1}, seed=0, target="c")
    with pytest.raises(TypeError, match="needs total_length"):
        W(iter(range(3))).random_split({"a": 1}, seed=0)


# -- map pipes --------------------------------------------------------------------------------
def test_map_concat_zip_unzip_cache():
    dp = fm.SequenceWrapper(range(2)).concat(fm.SequenceWrapper(range(10, 13)))
    assert [dp[i] for i in range(len(dp))] == [0, 1, 10, 11, 12] and dp[-1] == 12
    with pytest.raises(IndexError, match=r"Concater\[5\]: index out of range for length 5"):
        dp[5]
    z = fm.SequenceWrapper(range(3)).zip(fm.SequenceWrapper("ab"))
    assert len(z) == 2 and z[1] == (1, "b")
    with pytest.raises(IndexError, match=r"Zipper\[2\]"):
        z[2]
    a, b = fm.SequenceWrapper([(0, "a"), (1, "b")]).unzip(2)
    assert (a[1], b[0], len(b)) == (1, "a", 2)
    calls = []

    def slow(x):
        calls.append(x)
        return x * 10

    c = fm.SequenceWrapper([1, 2]).map(slow).in_memory_cache()
    assert (c[0], c[0], c[1], len(c)) == (10, 10, 20, 2) and calls == [1, 2]
    c = fm.SequenceWrapper([1, 2]).map(double).in_memory_cache()
    c[0]
    assert c._cache and pickle.loads(pickle.dumps(c))._cache == {}


# -- pickling, repr, seeds ----------------------------------------------------------------------
def _pipelines():
    a, b = W(range(6)).fork(2)
    d0, _ = W(range(6)).demux(2, parity)
    tr, _ = W(range(6)).random_split({"t": 1, "v": 1}, seed=0)
    return [
        W(range(6)).map_batches(plus_one_all, 2), W(range(6)).threadpool_map(double),
        W([[1, 2]]).flatmap(), W([[1, 2]]).shuffled_flatmap().set_seed(0),
        W([(0, (1, 2))]).flatten(), W([(1, 2)]).drop(0), W([(1, 2)]).slice(1),
        W(range(6)).bucketbatch(2, batch_num=2).set_seed(0),
        W(["a", "bb"]).max_token_bucketize(3), W([[1, 2]]).in_batch_shuffle().set_seed(0),
        a.zip(b), d0, W(range(4)).round_robin_demux(2)[1], W([(1, 2)]).unzip(2)[0],
        W(range(3)).concat(W(range(2))), W(range(3)).mux(W(range(3))),
        W(range(3)).mux_longest(W(range(2))), W(range(3)).zip_longest(W(range(2))),
        W([("a", 1)]).zip_with_iter(W([("a", 2)]), first),
        W([(0, 1)]).zip_with_map(fm.SequenceWrapper([5]), first),
        W(range(5)).header(2), W(range(5)).set_length(2), W(range(2)).cycle(2),
        W(range(2)).repeat(2), W(range(2)).enumerate(), W([{"a": 1}]).add_index(),
        W(range(5)).groupby(parity), W([[{"a": 1}]]).rows2columnar(), tr,
        fi.SampleMultiplexer({W([1]): 1.0, W([2]): 1.0}, seed=0),
    ]


def test_every_pipe_pickles_and_replays():
    for dp in _pipelines():
        expected = plain(list(dp))
        if getattr(dp, "_is_random", False):
            dp.set_seed(0)
            expected = plain(list(dp))
            dp.set_seed(0)
        clone = pickle.loads(pickle.dumps(dp))
        if getattr(clone, "_is_random", False):
            clone.set_seed(0)
        assert plain(list(clone)) == expected, repr(dp)
        assert type(dp).__name__ in repr(dp) or "[" in repr(dp)


def test_pickling_mid_iteration_of_a_fork():
    a, _ = W(range(4)).fork(2)
    it = iter(a)
    next(it)
    a2 = pickle.loads(pickle.dumps(a))  # live state is not pickled
    assert list(a2) == [0, 1, 2, 3]


def test_random_pipes_follow_the_seed_protocol():
    for dp in (W(range(40)).shuffled_flatmap(twice), W([list(range(30))]).in_batch_shuffle(),
               W(range(40)).bucketbatch(4, batch_num=2, bucket_num=2),
               fi.SampleMultiplexer({W(range(20)): 1.0, W(range(20, 40)): 1.0})):
        assert dp._is_random
        runs = [plain(list(dp.set_seed(s))) for s in (7, 7, 8)]
        assert runs[0] == runs[1] != runs[2], repr(dp)


def test_warnings_stay_quiet_for_well_formed_items():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(W([(0, 1, 2)]).drop([0, 1]))
        list(W([(0, (1,))]).flatten(1))
        list(W([(0, 1)]).slice([0]))


# -- against TorchData ----------------------------------------------------------------------
def _torchdata():
    pytest.importorskip("torch")
    td = pytest.importorskip("torchdata.datapipes.iter")
    tm = pytest.importorskip("torchdata.datapipes.map")
    return td, tm


DETERMINISTIC = {
    "map_batches": lambda m, w: w(range(7)).map_batches(plus_one_all, batch_size=3),
    "flatmap": lambda m, w: w([1, 2, 3]).flatmap(twice),
    "flatmap_col": lambda m, w: w([(1, "a"), (2, "b")]).flatmap(twice, input_col=0),
    "flatten": lambda m, w: w([(0, (1, 2), [3]), (4, (5,), 6)]).flatten(),
    "flatten_idx": lambda m, w: w([(0, (1, 2), [3]), (4, (5,), 6)]).flatten(1),
    "flatten_dict": lambda m, w: w([{"a": 1, "b": {"c": 2, "d": 3}}]).flatten(),
    "drop": lambda m, w: w([(0, 1, 2), (3, 4, 5)]).drop([0, 2]),
    "slice": lambda m, w: w([(0, 1, 2, 3), (4, 5, 6, 7)]).slice(1, 4, 2),
    "slice_list": lambda m, w: w([[0, 1, 2, 3]]).slice([0, 3]),
    "threadpool_map": lambda m, w: w(range(20)).threadpool_map(double, max_workers=3),
    "max_token": lambda m, w: w(["1", "22", "333", "4444", "1", "55555", "22"])
    .max_token_bucketize(6, buffer_size=3),
    "max_token_pad": lambda m, w: w(["1", "22", "333", "4444", "1", "55555", "22"])
    .max_token_bucketize(6, include_padding=True, min_len=2),
    "bucketbatch_sorted": lambda m, w: w(range(10)).bucketbatch(3, batch_num=2,
                                                                sort_key=sort_bucket),
    "concat": lambda m, w: w(range(3)).concat(w(range(5)), w(range(2))),
    "mux": lambda m, w: w(range(3)).mux(w(range(10, 15)), w(range(20, 24))),
    "mux_longest": lambda m, w: w(range(3)).mux_longest(w(range(10, 15)), w(range(20, 24))),
    "zip": lambda m, w: w(range(3)).zip(w(range(10, 15))),
    "zip_longest": lambda m, w: w(range(3)).zip_longest(w(range(10, 15)), fill_value=0),
    "zip_with_iter": lambda m, w: w([("a", 1), ("b", 2), ("c", 3)]).zip_with_iter(
        w([("c", 30), ("a", 10), ("b", 20)]), key_fn=first, keep_key=True),
    "zip_with_map": lambda m, w: w([(2, "c"), (0, "a")]).zip_with_map(
        m.SequenceWrapper([10, 11, 12]), first),
    "header": lambda m, w: w(range(10)).header(4),
    "cycle": lambda m, w: w(range(3)).cycle(2),
    "repeat": lambda m, w: w(range(3)).repeat(2),
    "enumerate": lambda m, w: w("abc").enumerate(5),
    "add_index": lambda m, w: w([{"a": 1}, {"a": 2}]).add_index("idx"),
    "groupby": lambda m, w: w(range(12)).groupby(mod3, group_size=3),
    "groupby_key": lambda m, w: w(range(10)).groupby(mod3, keep_key=True),
    "rows2columnar": lambda m, w: w([[{"a": 1, "b": 2}, {"a": 3, "b": 4}]]).rows2columnar(),
    "rows2columnar_list": lambda m, w: w([[[1, 2], [3, 4]]]).rows2columnar(["x", "y"]),
    "set_length": lambda m, w: w(range(10)).set_length(4),
}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_same_output_as_torchdata(name):
    td, tm = _torchdata()
    build = DETERMINISTIC[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = plain(list(build(tm, td.IterableWrapper)))
    assert plain(list(build(fm, W))) == expected


@pytest.mark.parametrize("name", ["fork", "demux", "round_robin_demux", "unzip"])
def test_same_children_as_torchdata(name):
    td, _ = _torchdata()

    def build(w):
        src = w([(i, -i) for i in range(7)])
        return {"fork": lambda: src.fork(3), "demux": lambda: src.demux(2, first_parity),
                "round_robin_demux": lambda: src.round_robin_demux(3),
                "unzip": lambda: src.unzip(2)}[name]()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = [list(c) for c in build(td.IterableWrapper)]
    assert [list(c) for c in build(W)] == expected


def first_parity(x):
    return x[0] % 2


def test_same_map_pipes_as_torchdata():
    _, tm = _torchdata()
    ours = fm.SequenceWrapper(range(3)).concat(fm.SequenceWrapper(range(5)))
    theirs = tm.SequenceWrapper(range(3)).concat(tm.SequenceWrapper(range(5)))
    assert [ours[i] for i in range(len(ours))] == [theirs[i] for i in range(len(theirs))]
    ours = fm.SequenceWrapper(range(3)).zip(fm.SequenceWrapper("abcd"))
    theirs = tm.SequenceWrapper(range(3)).zip(tm.SequenceWrapper("abcd"))
    assert len(ours) == len(theirs) and [ours[i] for i in range(3)] == [theirs[i] for i in range(3)]


@pytest.mark.parametrize("name", ["shuffled_flatmap", "bucketbatch", "in_batch_shuffle"])
def test_random_pipes_same_multiset_as_torchdata(name):
    td, _ = _torchdata()
    builds = {
        "shuffled_flatmap": lambda w: w([[i, i + 100] for i in range(20)]).shuffled_flatmap(
            buffer_size=4),
        "bucketbatch": lambda w: w(range(23)).bucketbatch(4, batch_num=2, bucket_num=2,
                                                          sort_key=sort_bucket),
        "in_batch_shuffle": lambda w: w([list(range(5)), list(range(5, 8))]).in_batch_shuffle(),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = plain(list(builds[name](td.IterableWrapper)))
    ours = plain(list(builds[name](W).set_seed(0)))
    flat = (lambda xs: sorted(xs)) if name == "shuffled_flatmap" else \
        (lambda bs: sorted(sorted(b) for b in bs) if name == "in_batch_shuffle"
         else sorted(x for b in bs for x in b))
    assert flat(ours) == flat(theirs)
    if name == "bucketbatch":
        assert sorted(map(len, ours)) == sorted(map(len, theirs))


# -- through the DataLoader --------------------------------------------------------------------
def pair_up(x):
    return [x, 1000 + x]


def _random_pipeline():
    a, b = W(range(40)).shuffle().sharding_filter().shuffled_flatmap(pair_up, buffer_size=3) \
        .fork(2)
    return a.zip(b).bucketbatch(3, batch_num=2, bucket_num=2)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_random_pipes_resume_through_the_loader(num_workers):
    from functorch_core.data import DataLoader

    def run(cut=None):
        loader = DataLoader(_random_pipeline(), num_workers=num_workers, seed=3)
        loader.set_epoch(1)
        out = []
        for k, batch in enumerate(loader):
            out.append(plain(batch))
            if k == cut:
                return out, loader.state_dict()
        return out, None

    whole, _ = run()
    flat = sorted(x for b in whole for pair in b for x in pair)
    assert flat == sorted([x for i in range(40) for x in pair_up(i)] * 2)
    head, state = run(cut=4)
    resumed = DataLoader(_random_pipeline(), num_workers=num_workers, seed=3)
    resumed.load_state_dict(state)
    assert head + [plain(b) for b in resumed] == whole


def test_network_pipes_block_state_dict():
    from functorch_core.data import DataLoader

    loader = DataLoader(W(["http://127.0.0.1:9/x"]).read_from_http(), num_workers=0, seed=0)
    with pytest.raises(RuntimeError, match=r"HttpReader.* cannot be resumed: .*network"):
        loader.state_dict()
