"""The DataPipe core: bases, registry, graph utilities, the core iter/map pipes, collate."""

import pickle
import sys
import warnings
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from functorch_core.data import (
    Batcher,
    Collator,
    DataChunk,
    FullSync,
    InMemoryCacheHolder,
    IterableWrapper,
    IterDataPipe,
    IterToMapConverter,
    Mapper,
    MapToIterConverter,
    Prefetcher,
    Sampler,
    SequenceWrapper,
    ShardingFilter,
    ShardingRoundRobinDispatcher,
    Shuffler,
    apply_random_seed,
    apply_sharding,
    apply_shuffle_settings,
    datapipe,
    default_collate,
    find,
    functional_datapipe,
    list_datapipes,
    render,
    replace,
    traverse,
)
from functorch_core.data.datapipes import iter as diter
from functorch_core.data.datapipes import map as dmap
from functorch_core.data.iter.combinatorics import RandomSampler
from functorch_core.data.iter.sharding import SHARDING_PRIORITIES


def double(x):
    return 2 * x


def is_even(x):
    return x % 2 == 0


def add(a, b):
    return a + b


# -- registry, repr, len, pickling --------------------------------------------------------


def test_registry_methods_and_namespaces():
    dp = IterableWrapper(range(6)).map(double).filter(is_even).batch(2)
    assert isinstance(dp, Batcher) and list(dp) == [[0, 2], [4, 6], [8, 10]]
    assert diter.Mapper is Mapper and dmap.Mapper is not Mapper
    assert issubclass(dmap.SequenceWrapper, dmap.MapDataPipe)
    with pytest.raises(ValueError, match="the name is taken by Mapper"):
        functional_datapipe("map")(type("Other", (IterDataPipe,), {}))


def test_repr_names_class_and_key_arguments():
    assert repr(IterableWrapper([1]).batch(3, drop_last=True)) == \
        "Batcher(batch_size=3, drop_last=True)"
    assert repr(IterableWrapper([1]).map(double)) == \
        "Mapper(fn=double, input_col=None, output_col=None)"


def test_len_where_defined_typeerror_otherwise():
    src = IterableWrapper(range(10))
    assert len(src.map(double)) == 10
    assert len(src.batch(3)) == 4 and len(src.batch(3, drop_last=True)) == 3
    assert len(src.shuffle()) == 10
    with pytest.raises(TypeError, match="Filter instance doesn't have valid length"):
        len(src.filter(is_even))
    with pytest.raises(TypeError, match="IterableWrapper instance doesn't have valid length"):
        len(IterableWrapper(x for x in range(3)))


def test_pipeline_pickles_and_iterates_the_same():
    dp = IterableWrapper(range(20)).map(double).filter(is_even).shuffle().set_seed(3).batch(4)
    dp2 = pickle.loads(pickle.dumps(dp))
    assert list(dp2) == list(dp) and sorted(x for b in dp2 for x in b) == list(range(0, 40, 2))


# -- seeding protocol --------------------------------------------------------------------


def test_set_seed_fixes_the_next_epoch_only():
    dp = IterableWrapper(range(50)).shuffle()
    a = list(dp.set_seed(7))
    b = list(dp.set_seed(7))
    assert a == b and sorted(a) == list(range(50)) and a != list(range(50))
    assert Shuffler._is_random and not Mapper._is_random
    with pytest.raises(TypeError, match="set_seed"):
        dp.set_seed(-1)


def test_set_shuffle_false_passes_through():
    assert list(IterableWrapper(range(9)).shuffle().set_shuffle(False)) == list(range(9))


@given(st.integers(1, 40), st.integers(1, 50), st.integers(0, 2**32))
def test_shuffle_is_a_permutation(n, buffer, seed):
    out = list(IterableWrapper(range(n)).shuffle(buffer_size=buffer).set_seed(seed))
    assert sorted(out) == list(range(n))


def test_resume_blocker_on_one_shot_iterator():
    assert IterableWrapper(iter([1, 2]))._resume_blocker
    assert IterableWrapper([1, 2])._resume_blocker is None


# -- graph utilities ---------------------------------------------------------------------


class _Two(IterDataPipe):
    """A test pipe with two sources (as zip has)."""

    def __init__(self, a, b):
        self.sources_ = [a, b]

    def __iter__(self):
        yield from zip(*self.sources_, strict=True)


def test_traverse_nested_dicts_and_shared_nodes():
    src = IterableWrapper(range(3))
    a, b = src.map(double), src.map(abs)
    top = _Two(a, b)
    g = traverse(top)
    (node, subs), = g.values()
    assert node is top and [p for p, _ in subs.values()] == [a, b]
    sa, sb = (s for _, s in subs.values())
    assert sa[id(src)][1] is sb[id(src)][1]  # one node, two parents
    assert list_datapipes(top) == [top, a, src, b]
    assert find(top, Mapper) == [a, b] and find(top, (Mapper, IterableWrapper))[-1] is b


def test_render_draws_shared_sources_once():
    src = IterableWrapper(range(3))
    text = render(_Two(src.map(double), src.map(abs)).batch(2))
    assert text == "\n".join([
        "[0] Batcher(batch_size=2, drop_last=False)",
        "└─ [1] _Two",
        "   ├─ [2] Mapper(fn=double, input_col=None, output_col=None)",
        "   │  └─ [3] IterableWrapper",
        "   └─ [4] Mapper(fn=abs, input_col=None, output_col=None)",
        "      └─ (see [3] IterableWrapper)",
    ])


def test_replace_rewires_every_consumer():
    src = IterableWrapper(range(3))
    top = _Two(src.map(double), src.map(abs))
    new = IterableWrapper([10, 20, 30])
    assert replace(top, src, new) is top
    assert list(top) == [(20, 10), (40, 20), (60, 30)]
    with pytest.raises(ValueError, match="old is not in the graph"):
        replace(top, src, new)
    assert replace(top, top, new) is new


def test_graph_settings_as_torch():
    dp = IterableWrapper(range(10)).shuffle().sharding_filter().map(double)
    apply_sharding(dp, 3, 1)
    assert find(dp, ShardingFilter)[0].instance_id == 1
    assert list(apply_shuffle_settings(dp, False)) == [2, 8, 14]
    apply_shuffle_settings(dp, True)
    a = list(apply_random_seed(dp, 5))
    assert (a == list(apply_random_seed(dp, 5)) and sorted(a) == [2, 8, 14]) or len(a) == 3
    twice = IterableWrapper(range(10)).sharding_filter().map(double).sharding_filter()
    with pytest.raises(RuntimeError, match="sharding twice on one path loses samples"):
        apply_sharding(twice, 2, 0)


def test_deep_pipeline_walks_without_recursion():
    dp = IterableWrapper([1])
    for _ in range(3000):
        dp = dp.map(abs)
    assert len(list_datapipes(dp)) == 3001 and render(dp).count("\n") == 3000


# -- the core iter pipes -----------------------------------------------------------------


def test_iterable_wrapper_deepcopy():
    data = [[1], [2]]
    dp = IterableWrapper(data)
    it = iter(dp)
    first = next(it)
    first.append(99)
    assert data == [[1], [2]]
    shallow = IterableWrapper(data, deepcopy=False)
    next(iter(shallow)).append(5)
    assert data[0] == [1, 5]


def test_mapper_columns():
    dp = IterableWrapper([(1, 2, 3), (4, 5, 6)])
    assert list(dp.map(str, input_col=1, output_col=-1)) == [(1, 2, 3, "2"), (4, 5, 6, "5")]
    assert list(dp.map(lambda a, b: a + b, input_col=[0, 2])) == [(4, 2), (10, 5)]
    d = IterableWrapper([{"a": 1}]).map(double, input_col="a", output_col="b")
    assert list(d) == [{"a": 1, "b": 2}]
    with pytest.raises(ValueError, match="double takes 1 positional parameters, but 2"):
        dp.map(double, input_col=[0, 1])
    with pytest.raises(ValueError, match="must be None when input_col is None, got output_col=1"):
        dp.map(str, output_col=1)
    with pytest.raises(KeyError, match="input_col='z' is not in the sample"):
        list(IterableWrapper([{"a": 1}]).map(str, input_col="z"))


def test_filter_and_bool_check():
    assert list(IterableWrapper(range(7)).filter(is_even)) == [0, 2, 4, 6]
    assert list(IterableWrapper([(1, 0), (2, 1)]).filter(bool, input_col=1)) == [(2, 1)]
    with pytest.raises(ValueError, match="Filter: filter_fn must return a bool"):
        list(IterableWrapper([1]).filter(double))


@given(st.lists(st.integers(), max_size=30), st.integers(1, 7), st.booleans())
def test_batch_then_unbatch_is_identity(xs, size, drop_last):
    batches = list(IterableWrapper(xs).batch(size, drop_last=drop_last))
    assert all(isinstance(b, DataChunk) for b in batches)
    kept = len(xs) - len(xs) % size if drop_last else len(xs)
    assert list(IterableWrapper(batches).unbatch()) == xs[:kept]


def test_batcher_wrapper_class_and_unbatch_levels():
    assert list(IterableWrapper(range(3)).batch(2, wrapper_class=tuple)) == [(0, 1), (2,)]
    nested = [[[0, 1], [2]], [[3]]]
    assert list(IterableWrapper(nested).unbatch(0)) == nested
    assert list(IterableWrapper(nested).unbatch(2)) == [0, 1, 2, 3]
    assert list(IterableWrapper(nested).unbatch(-1)) == [0, 1, 2, 3]
    with pytest.raises(IndexError, match="unbatch_level 3 exceeds the depth"):
        list(IterableWrapper(nested).unbatch(3))
    with pytest.raises(ValueError, match="batch_size=0"):
        Batcher(IterableWrapper([]), 0)


@given(st.integers(0, 40), st.integers(1, 6))
def test_sharding_partitions_in_order(n, k):
    shards = []
    for i in range(k):
        dp = IterableWrapper(range(n)).sharding_filter()
        dp.apply_sharding(k, i)
        shards.append(list(dp))
        assert len(dp) == len(shards[-1])
    assert sorted(x for s in shards for x in s) == list(range(n))
    assert all(s == sorted(s) for s in shards)


def test_sharding_groups_combine_and_filter():
    dp = IterableWrapper(range(12)).sharding_filter()
    dp.apply_sharding(2, 1, SHARDING_PRIORITIES.DISTRIBUTED)
    dp.apply_sharding(3, 2, SHARDING_PRIORITIES.MULTIPROCESSING)
    assert (dp.num_of_instances, dp.instance_id) == (6, 1 * 3 + 2)
    assert list(dp) == [5, 11]
    with pytest.raises(RuntimeError, match="DEFAULT sharding group cannot be mixed"):
        dp.apply_sharding(2, 0)
    only = IterableWrapper(range(6)).sharding_filter(SHARDING_PRIORITIES.MULTIPROCESSING)
    only.apply_sharding(2, 1, SHARDING_PRIORITIES.DISTRIBUTED)
    only.apply_sharding(3, 0, SHARDING_PRIORITIES.MULTIPROCESSING)
    assert list(only) == [0, 3]
    rr = ShardingRoundRobinDispatcher(IterableWrapper(range(5)))
    assert rr.sharding_group_filter == SHARDING_PRIORITIES.MULTIPROCESSING and list(rr) == [
        0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="instance_id=3"):
        dp.apply_sharding(3, 3, SHARDING_PRIORITIES.DISTRIBUTED)


def test_skip_is_exact_where_offered():
    for make in (lambda: IterableWrapper(list(range(30))).map(double).batch(4),
                 lambda: IterableWrapper(range(30)).sharding_filter(),
                 lambda: SequenceWrapper(range(9)).to_iter_datapipe()):
        full = list(make())
        for n in range(len(full) + 1):
            dp = make()
            if isinstance(dp, ShardingFilter):
                dp.apply_sharding(4, 3)
                full = list(make_sharded(4, 3))
            assert dp._skip(n)
            assert list(dp) == full[n:]
            assert list(dp) == full  # the skip is used once
    assert not IterableWrapper(range(5)).filter(is_even)._skip(1)


def make_sharded(k, i):
    dp = IterableWrapper(range(30)).sharding_filter()
    dp.apply_sharding(k, i)
    return dp


def test_sampler_sequential_and_random():
    src = IterableWrapper(range(5))
    assert list(Sampler(src)) == [0, 1, 2, 3, 4]
    s = Sampler(src, RandomSampler)
    assert s._is_random and sorted(s.set_seed(1)) == [0, 1, 2, 3, 4]
    assert list(s.set_seed(1)) == list(s.set_seed(1))
    rs = Sampler(src, RandomSampler, sampler_kwargs={"replacement": True, "num_samples": 9})
    assert len(rs) == 9 and all(0 <= i < 5 for i in rs)


def test_prefetcher_order_errors_and_early_stop():
    assert list(Prefetcher(IterableWrapper(range(100)), 3)) == list(range(100))

    def boom(x):
        if x == 5:
            raise ValueError("five")
        return x

    with pytest.raises(ValueError, match="five"):
        list(IterableWrapper(range(10)).map(boom).prefetch(2))
    it = iter(IterableWrapper(range(10**6)).prefetch(4))
    assert next(it) == 0
    it.close()


def test_fullsync_single_process_is_identity():
    assert list(FullSync(IterableWrapper(range(4)))) == [0, 1, 2, 3]


def test_in_memory_cache_holder():
    calls = []

    def note(x):
        calls.append(x)
        return x

    dp = InMemoryCacheHolder(IterableWrapper(range(4)).map(note))
    assert list(dp) == list(dp) == [0, 1, 2, 3] and calls == [0, 1, 2, 3]
    assert dp._skip(2) and list(dp) == [2, 3]
    small = IterableWrapper([np.zeros(300_000)] * 5).in_memory_cache(size=1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert len(list(small)) == 5
    assert any("exceeds size=1" in str(x.message) for x in w) and small._cache is None


def test_progress_plain_text_fallback(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the fallback, whether tqdm is installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert list(IterableWrapper(range(3)).progress("items")) == [0, 1, 2]
    assert "items: 3/3 items" in capsys.readouterr().err


# -- collate -----------------------------------------------------------------------------

Point = namedtuple("Point", "x label")


def test_default_collate_pytrees_and_dtypes():
    batch = [{"img": np.full((2, 2), i, np.float32), "y": i, "w": 0.5, "ok": True,
              "name": f"s{i}", "p": Point(np.int16(i), [i, i + 1])} for i in range(3)]
    out = default_collate(batch)
    assert out["img"].shape == (3, 2, 2) and out["img"].dtype == np.float32
    assert out["y"].dtype == np.int64 and out["w"].dtype == np.float64
    assert out["ok"].dtype == np.bool_ and out["name"] == ["s0", "s1", "s2"]
    assert isinstance(out["p"], Point) and out["p"].x.dtype == np.int16
    assert isinstance(out["p"].label, list) and out["p"].label[1].tolist() == [1, 2, 3]
    t = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(t, tuple) and t[0].tolist() == [1, 3]


def test_default_collate_errors_name_the_place():
    with pytest.raises(ValueError, match=r"batch\['a'\] have different shapes"):
        default_collate([{"a": np.zeros(2)}, {"a": np.zeros(3)}])
    with pytest.raises(ValueError, match="different lengths"):
        default_collate([(1, 2), (1,)])
    with pytest.raises(TypeError, match=r"mixes numbers with \['int', 'str'\]"):
        default_collate([1, "a"])
    with pytest.raises(TypeError, match="holds a object"):
        default_collate([object()])
    with pytest.raises(ValueError, match="empty"):
        default_collate([])


def test_collator_pipe():
    out = list(IterableWrapper([(0, 1.0), (1, 2.0), (2, 3.0)]).batch(2).collate())
    assert [o[0].tolist() for o in out] == [[0, 1], [2]]
    custom = Collator(IterableWrapper([[1, 2]]), collate_fn=sum)
    assert list(custom) == [3]


# -- map pipes ---------------------------------------------------------------------------


def test_map_pipes():
    seq = SequenceWrapper([1, 2, 3, 4, 5])
    assert seq.map(double)[4] == 10 and len(seq.map(double)) == 5
    with pytest.raises(IndexError, match=r"SequenceWrapper\[7\]: no such index in a sequence "
                                         r"of length 5"):
        seq.map(double)[7]
    b = seq.batch(2)
    assert len(b) == 3 and b[2] == [5] and len(seq.batch(2, drop_last=True)) == 2
    with pytest.raises(IndexError, match=r"Batcher\[3\]: index out of range for length 3"):
        b[3]
    sh = seq.shuffle()
    assert isinstance(sh, IterDataPipe) and sorted(sh.set_seed(0)) == [1, 2, 3, 4, 5]
    assert list(sh.set_shuffle(False)) == [1, 2, 3, 4, 5]
    assert list(MapToIterConverter(seq, indices=[4, 0])) == [5, 1]
    m = IterToMapConverter(IterableWrapper(["ab", "cd"]), key_value_fn=tuple)
    assert m["c"] == "d" and len(m) == 2
    with pytest.raises(IndexError, match="no such key"):
        m["z"]
    with pytest.raises(ValueError, match=r"item 0 is 1; expected a \(key, value\) pair"):
        IterToMapConverter(IterableWrapper([1]))["x"]


# -- against TorchData where it is installed ------------------------------------------------


def test_same_outputs_as_torchdata():
    titer = pytest.importorskip("torchdata.datapipes.iter")
    tmap = pytest.importorskip("torchdata.datapipes.map")
    data = [(i, i * 2, str(i)) for i in range(11)]

    def build(W):
        return [
            W(data).map(str, input_col=1, output_col=-1),
            W(data).map(add, input_col=[0, 1]),
            W(data).filter(is_even, input_col=0),
            W(range(11)).batch(3),
            W(range(11)).batch(3, drop_last=True),
            W([[[0, 1], [2]], [[3]]]).unbatch(2),
        ]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ours, theirs in zip(build(IterableWrapper), build(titer.IterableWrapper),
                                strict=True):
            assert list(ours) == [list(x) if isinstance(x, list) else x for x in theirs]
        for k in range(1, 4):
            for i in range(k):
                a = IterableWrapper(range(10)).sharding_filter()
                b = titer.IterableWrapper(range(10)).sharding_filter()
                a.apply_sharding(k, i)
                b.apply_sharding(k, i)
                assert list(a) == list(b) and len(a) == len(b)
        assert list(SequenceWrapper(range(5)).batch(2)[2]) == list(
            tmap.SequenceWrapper(range(5)).batch(2)[2])
        assert sorted(IterableWrapper(range(30)).shuffle(buffer_size=4)) == sorted(
            titer.IterableWrapper(range(30)).shuffle(buffer_size=4))


def _pipe_classes(base=datapipe._DataPipeBase):
    for cls in base.__subclasses__():
        yield cls
        yield from _pipe_classes(cls)


def test_declared_length_and_repr_are_not_overridden():
    # _len_source and _repr_args only act through the base's __len__ and __repr__
    classes = list(_pipe_classes())
    assert sum("_len_source" in vars(c) for c in classes) > 20
    for cls in classes:
        if "_len_source" in vars(cls):
            assert cls.__len__ is datapipe._DataPipeBase.__len__, cls
        if "_repr_args" in vars(cls):
            assert cls.__repr__ is datapipe._DataPipeBase.__repr__, cls


def test_len_source_names_the_source():
    dp = IterableWrapper(range(3)).map(double)
    assert type(dp)._len_source == "datapipe" and len(dp) == 3
    with pytest.raises(TypeError, match="Filter instance doesn't have valid length"):
        len(IterableWrapper(range(3)).filter(bool))
