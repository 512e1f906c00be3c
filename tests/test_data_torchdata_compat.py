"""TorchData code that used to stop at import or on its first pipeline: typed custom pipes
(``IterDataPipe[T]``), the one-letter file modes ``"b"``/``"t"``, ``to_map_datapipe`` on iter
pipes, TorchData's ``datapipes`` namespaces, ``decompress().load_from_tar()``, and
``collate`` as the function. TorchData is not needed; its behaviour is written down here."""

import pickle
import typing
from typing import Tuple, TypeVar  # noqa: UP035 (TorchData code spells it so)

from functorch_core.data import (
    DataLoader,
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
