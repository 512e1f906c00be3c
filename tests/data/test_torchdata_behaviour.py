"""Behaviours TorchData users rely on: defaults, construction-time checks and warnings.

Each test states TorchData's rule (from its source) and checks ours against it.
"""

import functools
import pickle
import warnings

import pytest

from functorch_core.data import (
    DataChunk,
    IterableWrapper,
    SequenceWrapper,
    Shuffler,
    apply_shuffle_settings,
    find,
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
