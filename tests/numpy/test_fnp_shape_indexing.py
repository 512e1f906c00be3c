"""Shape manipulation, indexing, mutation recording and sorting in ``functorch_core.numpy``.

Each function is checked against NumPy on the same inputs three ways: eagerly
(values, shape, dtype, and scalar-vs-array), under ``fc.jit``, and by tracing
with ``fc.make_graph`` and ``check_graph``. Indices are drawn by hypothesis:
basic slices of any step, integers, None, Ellipsis, integer arrays (concrete
and traced) mixed with slices, and concrete boolean masks. Writes are checked
by running the recorded ``setitem`` on the reference interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import TracerError, check_graph
from functorch_core.ir import primitives as P
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.numpy._methods import METHODS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64,
          np.complex64]


def examples(n):
    return settings(max_examples=min(n, settings.default.max_examples), deadline=None)


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


@st.composite
def arrays(draw, shape=None, dtypes=DTYPES, **shape_kw):
    shape = draw(shapes(**shape_kw)) if shape is None else shape
    dt = draw(st.sampled_from(dtypes))
    return draw(hnp.arrays(dt, shape, elements=hnp.from_dtype(np.dtype(dt), allow_nan=False,
                                                             allow_infinity=False)))


def assert_same(actual, expected, eager=True):
    if isinstance(expected, list | tuple):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_same(a, e, eager)
        return
    if eager:   # a NumPy scalar where NumPy gives one, an array where it gives an array
        assert isinstance(actual, np.generic) == isinstance(expected, np.generic), \
            (type(actual), type(expected))
    a, e = np.asarray(actual), np.asarray(expected)
    assert (a.shape, a.dtype) == (e.shape, e.dtype), (a.shape, a.dtype, e.shape, e.dtype)
    np.testing.assert_array_equal(a, e)


def parity(ours, theirs, *args):
    """``ours`` (fnp) eagerly, under jit and traced against ``theirs`` (NumPy) on ``args``.

    Where NumPy raises, ours must raise the same kind of exception (its public class).
    """
    try:
        expected = theirs(*args)
    except Exception as err:
        kind = next(k for k in type(err).__mro__ if not k.__module__.startswith("numpy._core"))
        with pytest.raises(kind):
            ours(*args)
        with pytest.raises(kind):
            fc.jit(ours)(*args)
        return None
    assert_same(ours(*args), expected)
    assert_same(fc.jit(ours)(*args), expected, eager=False)
    check_graph(fc.make_graph(ours)(*args))
    return expected


def prims(fn, *args):
    return [e.prim for e in fc.make_graph(fn)(*args).eqns]


# --- shape manipulation ---------------------------------------------------------

@st.composite
def reshape_case(draw):
    x = draw(arrays(max_side=3))
    dims = list(x.shape)
    draw(st.randoms()).shuffle(dims)
    dims.insert(draw(st.integers(0, len(dims))), 1)
    if x.size and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return x, tuple(dims)


@given(reshape_case())
@examples(40)
def test_reshape_ravel_flatten(case):
    x, new = case
    parity(lambda x: fnp.reshape(x, new), lambda x: np.reshape(x, new), x)
    parity(lambda x: x.reshape(*new), lambda x: x.reshape(*new), x)
    parity(lambda x: x.reshape(new), lambda x: x.reshape(new), x)
    parity(lambda x: fnp.ravel(x), np.ravel, x)
    parity(lambda x: fnp.flatten(x), lambda x: x.flatten(), x)
    parity(lambda x: x.flatten(), lambda x: x.flatten(), x)


@st.composite
def axes_case(draw):
    x = draw(arrays(min_dims=1))
    nd = x.ndim
    perm = draw(st.permutations(range(nd)))
    a1, a2 = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
    k = draw(st.integers(0, nd))
    src = draw(st.permutations(range(nd)))[:k]
    dst = draw(st.permutations(range(-nd, 0)))[:k]
    return x, perm, a1, a2, src, dst


@given(axes_case())
@examples(40)
def test_transpose_swapaxes_moveaxis(case):
    x, perm, a1, a2, src, dst = case
    parity(lambda x: fnp.transpose(x), np.transpose, x)
    parity(lambda x: fnp.transpose(x, perm), lambda x: np.transpose(x, perm), x)
    parity(lambda x: x.transpose(*perm), lambda x: x.transpose(*perm), x)
    parity(lambda x: x.T, lambda x: x.T, x)
    parity(lambda x: fnp.swapaxes(x, a1, a2), lambda x: np.swapaxes(x, a1, a2), x)
    parity(lambda x: fnp.moveaxis(x, src, dst), lambda x: np.moveaxis(x, src, dst), x)
    if x.ndim >= 2:
        parity(lambda x: x.mT, lambda x: x.mT, x)


@st.composite
def expand_squeeze_case(draw):
    x = draw(arrays(min_side=1, max_side=2))
    k = draw(st.integers(1, 3))
    out_nd = x.ndim + k
    axes = draw(st.permutations(range(out_nd)))[:k]
    axes = tuple(a - out_nd if draw(st.booleans()) else a for a in axes)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    sq = tuple(draw(st.permutations(ones))[:draw(st.integers(0, len(ones)))])
    return x, (axes[0] if len(axes) == 1 else axes), sq


@given(expand_squeeze_case())
@examples(40)
def test_expand_dims_squeeze(case):
    x, axes, sq = case
    parity(lambda x: fnp.expand_dims(x, axes), lambda x: np.expand_dims(x, axes), x)
    parity(lambda x: fnp.squeeze(x), np.squeeze, x)
    parity(lambda x: fnp.squeeze(x, sq), lambda x: np.squeeze(x, sq), x)
    parity(lambda x: x.squeeze(sq), lambda x: x.squeeze(sq), x)


@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), st.data())
@examples(40)
def test_broadcast_to_and_arrays(shapes_, data):
    xs = [data.draw(arrays(shape=s)) for s in shapes_.input_shapes]
    target = shapes_.result_shape
    parity(lambda x: fnp.broadcast_to(x, target), lambda x: np.broadcast_to(x, target), xs[0])
    parity(lambda *xs: fnp.broadcast_arrays(*xs), lambda *xs: np.broadcast_arrays(*xs), *xs)


@st.composite
def join_case(draw):
    base = list(draw(shapes(min_dims=1, max_dims=3, max_side=3)))
    axis = draw(st.integers(-len(base), len(base) - 1))
    xs = []
    for _ in range(draw(st.integers(1, 3))):
        shp = list(base)
        shp[axis] = draw(st.integers(0, 3))
        xs.append(draw(arrays(shape=tuple(shp))))
    same = [draw(arrays(shape=tuple(base))) for _ in range(len(xs))]
    return xs, axis, same


@given(join_case())
@examples(40)
def test_concatenate_stack_hstack_vstack(case):
    xs, axis, same = case
    parity(lambda *xs: fnp.concatenate(xs, axis=axis), lambda *xs: np.concatenate(xs, axis),
           *xs)
    parity(lambda *xs: fnp.concatenate(xs, axis=None),
           lambda *xs: np.concatenate(xs, axis=None), *xs)
    parity(lambda *xs: fnp.stack(xs, axis=axis), lambda *xs: np.stack(xs, axis=axis), *same)
    parity(lambda *xs: fnp.stack(xs, axis=-1), lambda *xs: np.stack(xs, axis=-1), *same)
    parity(lambda *xs: fnp.hstack(xs), lambda *xs: np.hstack(xs), *same)
    parity(lambda *xs: fnp.vstack(xs), lambda *xs: np.vstack(xs), *same)
    parity(lambda *xs: fnp.atleast_1d(*xs), lambda *xs: np.atleast_1d(*xs), *same)
    parity(lambda *xs: fnp.atleast_2d(*xs), lambda *xs: np.atleast_2d(*xs), *same)


def test_join_dtype_and_scalars():
    a, b = np.ones(2, np.int8), np.ones(3, np.float32)
    parity(lambda a, b: fnp.concatenate([a, b]), lambda a, b: np.concatenate([a, b]), a, b)
    parity(lambda a, b: fnp.concatenate([a, b], dtype=np.float64),
           lambda a, b: np.concatenate([a, b], dtype=np.float64), a, b)
    parity(lambda a: fnp.atleast_2d(a[0]), lambda a: np.atleast_2d(a[0]), a)
    parity(lambda a: fnp.atleast_1d(a[0]), lambda a: np.atleast_1d(a[0]), a)
    with pytest.raises(TypeError, match="same_kind"):
        fnp.concatenate([b, b], dtype=np.int64)
    with pytest.raises(ValueError, match="zero-dimensional"):
        fnp.concatenate([np.float32(1), 2.0])


@st.composite
def split_case(draw):
    x = draw(arrays(min_dims=1, max_side=6))
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    divisors = [d for d in range(1, 7) if n % d == 0]
    points = draw(st.lists(st.integers(-n - 1, n + 1), max_size=4))
    return x, axis, draw(st.sampled_from(divisors)), points, draw(st.integers(1, 4))


@given(split_case())
@examples(40)
def test_split(case):
    x, axis, sections, points, unequal = case
    parity(lambda x: fnp.split(x, sections, axis), lambda x: np.split(x, sections, axis), x)
    parity(lambda x: fnp.split(x, points, axis), lambda x: np.split(x, points, axis), x)
    parity(lambda x: fnp.array_split(x, unequal, axis),
           lambda x: np.array_split(x, unequal, axis), x)


def test_split_uneven_raises_like_numpy():
    with pytest.raises(ValueError, match="equal division"):
        np.split(np.arange(5), 2)
    with pytest.raises(ValueError, match="equal division"):
        fnp.split(np.arange(5), 2)


@st.composite
def tile_repeat_case(draw):
    x = draw(arrays(max_dims=3, max_side=3))
    reps = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=4)
                          .map(tuple)))
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    n = x.size if axis is None else x.shape[axis]
    repeats = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=n,
                                                         max_size=n)))
    return x, reps, axis, repeats


@given(tile_repeat_case())
@examples(40)
def test_tile(case):
    x, reps, _, _ = case
    parity(lambda x: fnp.tile(x, reps), lambda x: np.tile(x, reps), x)


@given(tile_repeat_case())
@examples(40)
def test_repeat(case):
    x, _, axis, repeats = case
    parity(lambda x: fnp.repeat(x, repeats, axis), lambda x: np.repeat(x, repeats, axis), x)
    parity(lambda x: x.repeat(repeats, axis), lambda x: x.repeat(repeats, axis), x)


@st.composite
def flip_roll_case(draw):
    x = draw(arrays(max_side=4))
    nd = x.ndim
    kind = draw(st.sampled_from(["none", "int", "tuple"] if nd else ["none", "tuple"]))
    flip_axes = {"none": None,
                 "int": draw(st.integers(-nd, nd - 1)) if nd else None,
                 "tuple": tuple(draw(st.permutations(range(nd)))[:draw(st.integers(0, nd))])
                 }[kind]
    if nd and draw(st.booleans()):
        axes = tuple(draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3)))
        shift = tuple(draw(st.lists(st.integers(-6, 6), min_size=len(axes),
                                    max_size=len(axes))))
    elif nd and draw(st.booleans()):
        axes, shift = draw(st.integers(-nd, nd - 1)), draw(st.integers(-6, 6))
    else:
        axes, shift = None, draw(st.integers(-6, 6))
    return x, flip_axes, shift, axes


@given(flip_roll_case())
@examples(40)
def test_flip(case):
    x, flip_axes, _, _ = case
    parity(lambda x: fnp.flip(x, flip_axes), lambda x: np.flip(x, flip_axes), x)


@given(flip_roll_case())
@examples(40)
def test_roll(case):
    x, _, shift, axes = case
    parity(lambda x: fnp.roll(x, shift, axes), lambda x: np.roll(x, shift, axes), x)


@st.composite
def pad_case(draw):
    x = draw(arrays(max_dims=3, max_side=3))
    nd = x.ndim
    width = draw(st.one_of(
        st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2)),
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=nd, max_size=nd)
        .map(tuple)))
    values = draw(st.one_of(
        st.integers(0, 5), st.floats(-3, 3),
        st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=nd, max_size=nd)
        .map(tuple)))
    return x, width, values


@given(pad_case())
@examples(40)
def test_pad(case):
    x, width, values = case
    parity(lambda x: fnp.pad(x, width, constant_values=values),
           lambda x: np.pad(x, width, constant_values=values), x)


def test_pad_traced_value_and_unsupported_modes():
    x = np.arange(6.0).reshape(2, 3)
    parity(lambda x, v: fnp.pad(x, ((1, 0), (0, 2)), constant_values=v),
           lambda x, v: np.pad(x, ((1, 0), (0, 2)), constant_values=v), x, np.float64(7))
    with pytest.raises(NotImplementedError, match="'reflect'"):
        fnp.pad(x, 1, mode="reflect")
    with pytest.raises(NotImplementedError, match="order='C'"):
        fnp.reshape(x, (3, 2), order="F")


VIEW_FUNCTIONS = [
    (lambda x: fnp.reshape(x, (3, 2)), P.reshape),
    (lambda x: fnp.ravel(x), P.reshape),
    (lambda x: fnp.transpose(x), P.transpose),
    (lambda x: fnp.swapaxes(x, 0, 1), P.transpose),
    (lambda x: fnp.moveaxis(x, 0, -1), P.transpose),
    (lambda x: fnp.squeeze(x[None]), P.squeeze),
    (lambda x: fnp.expand_dims(x, (0, 2)), P.expand_dims),
    (lambda x: fnp.flip(x, 1), P.rev),
    (lambda x: fnp.broadcast_to(x, (4, 2, 3)), P.broadcast_in_dim),
]


@pytest.mark.parametrize("fn, prim", VIEW_FUNCTIONS)
def test_view_functions_apply_exactly_their_layout_primitive(fn, prim):
    x = np.arange(6.0).reshape(2, 3)
    eqns = fc.make_graph(fn)(x).eqns
    assert [e.prim for e in eqns][-1] is prim
    assert [e.prim for e in eqns].count(prim) == 1
    # everything before the primitive under test only prepares its operand (x[None])
    assert all(e.prim in (P.expand_dims,) for e in eqns[:-1])


# --- indexing -------------------------------------------------------------------

@given(st.data())
@examples(60)
def test_getitem_basic(data):
    x = data.draw(arrays(max_side=5))
    index = data.draw(hnp.basic_indices(x.shape, allow_newaxis=True, allow_ellipsis=True))
    parity(lambda x: x[index], lambda x: x[index], x)
    parity(lambda x: fnp.getitem(x, index), lambda x: x[index], x)
    allowed = {P.slice, P.rev, P.squeeze, P.expand_dims}
    if not isinstance(x[index], np.ndarray):
        allowed.add(P.convert)   # NumPy returns a scalar (a copy), not a 0-d view
    assert set(prims(lambda x: x[index], x)) <= allowed


def _slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(bool))
    return st.builds(slice, bound, bound, step)


@st.composite
def mixed_index(draw, shape):
    """Slices, integers and integer arrays (some as lists), with None and maybe an Ellipsis."""
    bshape = draw(shapes(max_dims=2, min_side=1, max_side=3))

    def entry(n):
        kind = draw(st.sampled_from(["slice", "int", "array", "array"] if n else ["slice"]))
        if kind == "slice":
            return draw(_slices(n))
        if kind == "int":
            return draw(st.integers(-n, n - 1))
        k = draw(st.integers(0, len(bshape)))
        sub = tuple(1 if draw(st.booleans()) else d for d in bshape[len(bshape) - k:])
        dt = draw(st.sampled_from([np.int64, np.int32, np.int8, np.uint8]))
        arr = draw(hnp.arrays(dt, sub, elements=st.integers(0 if dt == np.uint8 else -n, n - 1)))
        return arr.tolist() if arr.ndim and draw(st.booleans()) else arr

    nd = len(shape)
    lead = draw(st.integers(0, nd))
    entries = [entry(n) for n in shape[:lead]]
    if draw(st.booleans()):      # an Ellipsis, then entries for the last axes
        trail = draw(st.integers(0, nd - lead))
        entries += [Ellipsis] + [entry(n) for n in shape[nd - trail:]]
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    return tuple(entries)


@given(st.data())
@examples(80)
def test_getitem_advanced(data):
    x = data.draw(arrays(min_dims=1, max_side=4))
    index = data.draw(mixed_index(x.shape))
    parity(lambda x: x[index], lambda x: x[index], x)
    # the same index with its arrays traced (lists of ints become traced arrays too)
    is_arr = [isinstance(e, np.ndarray | list) for e in index]
    arrs = [np.asarray(e, dtype=np.int64 if isinstance(e, list) else None)
            for e, a in zip(index, is_arr, strict=True) if a]

    def traced(x, *arrs):
        it = iter(arrs)
        return x[tuple(next(it) if a else e for e, a in zip(index, is_arr, strict=True))]

    expected = x[index]
    assert_same(fc.jit(traced)(x, *arrs), expected, eager=False)
    check_graph(fc.make_graph(traced)(x, *arrs))


@given(st.data())
@examples(40)
def test_getitem_boolean_mask(data):
    x = data.draw(arrays(min_dims=1, max_side=4))
    start = data.draw(st.integers(0, x.ndim - 1))
    k = data.draw(st.integers(1, x.ndim - start))
    mask = data.draw(hnp.arrays(np.bool_, x.shape[start:start + k]))
    index = (slice(None),) * start + (mask,)
    if data.draw(st.booleans()):
        index = (Ellipsis, mask) if start + k == x.ndim else index + (Ellipsis,)
    parity(lambda x: x[index], lambda x: x[index], x)
    if start == 0 and mask.size:     # a nested list of bools is a mask too
        parity(lambda x: x[mask.tolist()], lambda x: x[mask], x)


def test_getitem_scalars_and_special_cases():
    x = np.arange(24).reshape(2, 3, 4)
    for index in [(1, 2, 3), (-1, -3, 0), (Ellipsis, 0), (1, Ellipsis, 2), np.int64(1),
                  np.array(1), (np.array(-1), 0, 0), [], ([], 0), (slice(None), [0, -1]),
                  ([1, 0], slice(None), [3, 0]), (0, slice(None), [1, 2]),
                  ([[0, 1]], None, [[0], [2]], slice(None, None, -1)),
                  # an Ellipsis of no axes still separates advanced entries: dims go first
                  (slice(None), 0, Ellipsis, [0, 1]),
                  (None, np.array(1), Ellipsis, 0, [[0], [1]])]:
        parity(lambda x, index=index: x[index], lambda x, index=index: x[index], x)
    s = np.array(2.5)
    parity(lambda s: s[()], lambda s: s[()], s)
    parity(lambda s: s[...], lambda s: s[...], s)
    parity(lambda s: s[None], lambda s: s[None], s)
    assert list(fc.jit(lambda x: list(x))(x)[1].ravel()) == list(x[1].ravel())


def test_getitem_errors():
    x = np.arange(6).reshape(2, 3)
    for index in [5, (0, -4), (0, 0, 0), ([0, 3],), (Ellipsis, Ellipsis),
                  np.array([True, False, True]), ([0, 1], [0, 1, 2]), 1.5, (np.array([0.5]),)]:
        with pytest.raises(IndexError) as numpy_error:
            x[index]
        with pytest.raises(type(numpy_error.value)):
            fnp.getitem(x, index)
        with pytest.raises(type(numpy_error.value)):
            fc.make_graph(lambda x, index=index: x[index])(x)
    with pytest.raises(TracerError, match=r"fnp\.where"):
        fc.make_graph(lambda x: x[x > 2])(x)
    with pytest.raises(TracerError, match="not known while tracing"):
        fc.make_graph(lambda x: fnp.nonzero(x))(x)


def test_traced_indices_wrap_and_raise_or_clamp(monkeypatch):
    x = np.arange(5.0)
    f = fc.jit(lambda x, i: x[i])
    np.testing.assert_array_equal(f(x, np.array([-1, -5, 0, 4])), x[[-1, -5, 0, 4]])
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        f(x, np.array([7, -9]))
    with pytest.raises(IndexError, match="index 200 is out of bounds for axis 0 with size 5"):
        f(x, np.array([1, 200], np.uint8))
    monkeypatch.setattr(fc.config, "check_bounds", False)
    g = fc.jit(lambda x, i: x[i])
    np.testing.assert_array_equal(g(x, np.array([7, -9])), [4.0, 0.0])   # clamped
    np.testing.assert_array_equal(g(x, np.array([1, 200], np.uint8)), [1.0, 4.0])


@given(st.data())
@examples(40)
def test_take_and_take_along_axis(data):
    x = data.draw(arrays(min_dims=1, max_side=4, min_side=1))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    idx = data.draw(st.one_of(st.integers(-n, n - 1),
                              hnp.arrays(np.int64, shapes(max_dims=2, max_side=3),
                                         elements=st.integers(-n, n - 1))))
    parity(lambda x: fnp.take(x, idx, axis=axis), lambda x: np.take(x, idx, axis=axis), x)
    parity(lambda x: x.take(idx, axis), lambda x: x.take(idx, axis), x)
    if isinstance(idx, np.ndarray):
        parity(lambda x, i: fnp.take(x, i, axis=axis), lambda x, i: np.take(x, i, axis=axis),
               x, idx)
    ax = (-1 if axis is None else axis) % x.ndim
    along_shape = tuple(data.draw(st.integers(0, 3)) if d == ax else
                        data.draw(st.sampled_from([1, size])) for d, size in enumerate(x.shape))
    along = data.draw(hnp.arrays(np.int64, along_shape,
                                 elements=st.integers(-x.shape[ax], x.shape[ax] - 1)))
    parity(lambda x, i: fnp.take_along_axis(x, i, ax), lambda x, i: np.take_along_axis(x, i, ax),
           x, along)
    parity(lambda x, i: fnp.take_along_axis(x, i, None),
           lambda x, i: np.take_along_axis(x, i, None), x, along.ravel())
    with pytest.raises(IndexError):
        fnp.take(x, n, axis=axis)


def test_nonzero_concrete():
    x = np.array([[0, 1, 2], [3, 0, 0]])
    assert_same(fnp.nonzero(x), np.nonzero(x))


# --- writes ---------------------------------------------------------------------

def _run_write(fn, x, *extra):
    """Record ``fn`` and replay its graph on a copy of ``x`` with the interpreter."""
    graph = check_graph(fc.make_graph(fn)(x, *extra))
    assert P.setitem in [e.prim for e in graph.eqns]
    out = x.copy()
    run_graph(graph, [out, *extra])
    return out


@given(st.data())
@examples(60)
def test_setitem_records_numpy_semantics(data):
    x = data.draw(arrays(min_dims=1, max_side=4, dtypes=[np.int32, np.float64, np.uint8]))
    basic = data.draw(st.booleans())
    index = data.draw(hnp.basic_indices(x.shape, allow_newaxis=True, allow_ellipsis=True)
                      if basic else mixed_index(x.shape))
    target = x[index].shape
    vshape = data.draw(hnp.broadcastable_shapes(target, min_side=0, max_dims=len(target)))
    if np.broadcast_shapes(vshape, target) != target:
        vshape = target
    vshape = (1,) * data.draw(st.integers(0, 1)) + vshape    # NumPy drops leading 1s
    vdt = data.draw(st.sampled_from([np.int64, np.float32, np.bool_]))
    value = data.draw(hnp.arrays(vdt, vshape, elements=st.booleans() if vdt == np.bool_
                                 else st.integers(0, 5)))

    def write(x):
        x[index] = value
        return x

    expected = x.copy()
    try:
        expected[index] = value
    except ValueError:                  # x[0] = np.ones(1): NumPy writes scalars only there
        with pytest.raises(ValueError):
            fc.make_graph(write)(x)
        return
    np.testing.assert_array_equal(_run_write(write, x), expected)
    written = x.copy()
    np.testing.assert_array_equal(fc.jit(write)(written), expected)   # through functionalize
    np.testing.assert_array_equal(written, expected)
    eager = x.copy()
    fnp.setitem(eager, index, value)
    np.testing.assert_array_equal(eager, expected)


def test_setitem_graph_jit_and_errors():
    x = np.zeros((3, 4), np.int64)

    def f(x):
        x[0] = 1
        return x

    graph = fc.make_graph(f)(x)
    (eqn,) = graph.eqns
    assert eqn.prim is P.setitem and "setitem" in str(graph)
    assert eqn.params["indexer"] == (("int", 0), ("slice", 0, 4, 1))
    # under jit, functionalize turns the write into a pure update and writes x back
    expected, mutated = f(x.copy()), x.copy()
    assert_same(fc.jit(f)(mutated), expected, eager=False)
    assert_same(mutated, expected, eager=False)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) "
                                         r"into shape \(4,\)"):
        fc.make_graph(lambda x: x.__setitem__(0, np.ones(3)))(x)
    # NumPy's assignment casting: a float truncates into an integer array
    np.testing.assert_array_equal(_run_write(lambda x: x.__setitem__((1, 2), 1.7), x)[1, 2], 1)
    i, v = np.array([2, -1]), np.array([[5.5, 6.5]])
    expected = x.copy()
    expected[i, ::-2] = v
    np.testing.assert_array_equal(
        _run_write(lambda x, i, v: x.__setitem__((i, slice(None, None, -2)), v), x, i, v),
        expected)
    with pytest.raises(OverflowError):
        fc.make_graph(lambda x: x.__setitem__(0, 300))(x.astype(np.int8))
    # NumPy puts the index dimensions first here; the value is laid out to match
    y, index = np.zeros((2, 3, 4)), (slice(None), [0, 2], Ellipsis, [[1], [3]])
    value = np.arange(8.0).reshape(2, 2, 2)
    expected = y.copy()
    expected[index] = value
    np.testing.assert_array_equal(_run_write(lambda y: y.__setitem__(index, value), y), expected)
    # a write through a traced mask is a select (tests/numpy/test_masked_writes.py); a read is not
    expected = x.copy()
    expected[expected > 0] = 0
    np.testing.assert_array_equal(_run_write(lambda x: x.__setitem__(x > 0, 0), x), expected)
    with pytest.raises(TracerError, match=r"fnp\.where"):
        fc.make_graph(lambda x: x[x > 0] + 1)(x)


def test_inplace_operators():
    def f(x, y):
        x += y
        x *= 2
        return x

    xf = np.arange(3.0)
    graph = check_graph(fc.make_graph(f)(xf, np.float32(1)))
    assert [e.prim for e in graph.eqns].count(P.setitem) == 2
    whole = (("slice", 0, 3, 1),)
    assert all(e.params["indexer"] == whole for e in graph.eqns if e.prim is P.setitem)
    out = xf.copy()
    run_graph(graph, [out, np.float32(1)])
    np.testing.assert_array_equal(out, (xf + 1) * 2)

    xi = np.arange(3)

    def g(x):
        x += 1.5
        return x

    with pytest.raises(TypeError) as ours:
        fc.make_graph(g)(xi)
    with pytest.raises(TypeError) as numpy_error:
        g(xi.copy())
    assert str(ours.value) == str(numpy_error.value)
    with pytest.raises(ValueError, match="non-broadcastable output"):
        fc.make_graph(lambda x: x.__iadd__(np.ones((2, 3))))(xf)
    # int += int and float32 += Python float keep the array's dtype
    check_graph(fc.make_graph(lambda x: x.__iadd__(1))(xi))
    eager = xf.copy()
    fnp.inplace_update(eager, "add", 1)
    np.testing.assert_array_equal(eager, xf + 1)


# --- sorting --------------------------------------------------------------------

@given(st.data())
@examples(40)
def test_sort_argsort(data):
    dt = data.draw(st.sampled_from([np.bool_, np.int8, np.int64, np.uint8, np.float32,
                                    np.float64]))
    values = st.booleans() if dt == np.bool_ else st.integers(0 if dt == np.uint8 else -2, 3)
    x = data.draw(hnp.arrays(dt, shapes(min_dims=1, max_side=5), elements=values))
    if dt in (np.float32, np.float64) and x.size and data.draw(st.booleans()):
        x.flat[data.draw(st.integers(0, x.size - 1))] = np.nan
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    parity(lambda x: fnp.sort(x, axis=axis), lambda x: np.sort(x, axis=axis), x)
    parity(lambda x: fnp.argsort(x, axis=axis),
           lambda x: np.argsort(x, axis=axis, kind="stable"), x)
    # the method on a tracer (on an ndarray, x.argsort() is NumPy's unstable default)
    assert_same(fc.jit(lambda x: x.argsort())(x), x.argsort(kind="stable"), eager=False)


def test_sort_complex_and_errors():
    z = np.array([1 + 2j, 1 + 1j, -1 + 5j, 1 + 1j], np.complex64)
    parity(lambda z: fnp.sort(z), np.sort, z)
    parity(lambda z: fnp.argsort(z), lambda z: np.argsort(z, kind="stable"), z)
    with pytest.raises(np.exceptions.AxisError):
        fnp.sort(np.float64(1.0))
    assert fc.make_graph(lambda x: fnp.argsort(x))(np.ones(3)).eqns[-1].prim is P.sort


@given(arrays(max_side=3), st.integers(-2, 2))
@examples(30)
def test_round(x, decimals):
    parity(lambda x: fnp.round(x, decimals), lambda x: np.round(x, decimals), x)
    parity(lambda x: x.round(decimals), lambda x: x.round(decimals), x)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_round_complex_with_an_overflowing_part_keeps_the_other_part(backend):
    x = np.array([3.4028237e37j, 2.5 - 3.4e38j, np.inf + 1.25j], np.complex64)
    with np.errstate(over="ignore"):
        want = np.round(x, 1)
    np.testing.assert_array_equal(fnp.round(x, 1), want)
    np.testing.assert_array_equal(fc.jit(lambda x: fnp.round(x, 1), backend=backend)(x), want)


def test_complex_from_parts_differentiates_like_re_plus_im_times_1j():
    from functorch_core.testing import check_grads

    def f(a, b):
        z = P.complex.bind(a, b)
        return fnp.real(z * z.conj() + 3 * z)
    check_grads(f, (np.array([0.5, -1.5]), np.array([2.0, 0.25])), order=2)
    g = fc.grad(lambda a, b: fnp.sum(f(a, b)), argnums=(0, 1))(np.array([0.5]), np.array([2.0]))
    np.testing.assert_allclose(np.concatenate(g), [2 * 0.5 + 3, 2 * 2.0])


# --- the tracer's methods -------------------------------------------------------

MINE = ["reshape", "transpose", "ravel", "flatten", "squeeze", "swapaxes", "repeat", "take",
        "nonzero", "argsort", "getitem", "setitem", "inplace_update"]


def test_my_method_targets_resolve():
    for name in MINE:
        assert callable(getattr(fnp, name)), name
    assert {"reshape", "transpose", "ravel", "flatten", "squeeze", "swapaxes", "repeat", "take",
            "nonzero", "argsort", "__getitem__", "__setitem__", "T", "mT", "flat",
            "__iadd__"} <= set(METHODS)


def test_methods_on_tracers():
    x = np.arange(24.0).reshape(2, 3, 4)

    def ours(x):
        return (x.reshape(4, -1), x.reshape((3, -1)), x.T, x.mT, x.flat, x.ravel(),
                x[:, :1].squeeze(1), x.swapaxes(0, 2), x.repeat(2, axis=0),
                x.take([0, -1], 1), x.argsort(), x.transpose(1, 0, 2), x.transpose((2, 0, 1)),
                x.transpose(), x[0], list(x), np.reshape(x, -1), np.transpose(x, (1, 2, 0)))

    def theirs(x):
        return (x.reshape(4, -1), x.reshape((3, -1)), x.T, x.mT, x.ravel(), x.ravel(),
                x[:, :1].squeeze(1), x.swapaxes(0, 2), x.repeat(2, axis=0),
                x.take([0, -1], 1), x.argsort(), x.transpose(1, 0, 2), x.transpose((2, 0, 1)),
                x.transpose(), x[0], list(x), np.reshape(x, -1), np.transpose(x, (1, 2, 0)))

    expected = theirs(x)
    assert_same(fc.jit(ours)(x), expected, eager=False)
    check_graph(fc.make_graph(ours)(x))
    with pytest.raises(TypeError):
        fc.make_graph(lambda x: x.reshape())(x)


def test_broadcast_to_is_read_only_as_in_numpy():
    x = np.arange(3.0)

    def write(view):
        def f(x):
            b = np.broadcast_to(x, (2, 3))
            view(b)[...] = 5.0
            return b
        return f
    for view in (lambda b: b, lambda b: b[0], lambda b: b.T):
        with pytest.raises(ValueError) as numpy_error:
            write(view)(x.copy())
        with pytest.raises(ValueError, match=r"read-only.*numpy\.broadcast_to"):
            fc.jit(write(view))(x)
        assert str(numpy_error.value).startswith("assignment destination is read-only")
    assert not fnp.broadcast_to(x, (2, 3)).flags.writeable
    # a copy, and broadcast_arrays' results (writable in NumPy), take writes
    np.testing.assert_array_equal(
        fc.jit(lambda x: _written(np.broadcast_to(x, (2, 3)).copy()))(x), [[7, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(
        fc.jit(lambda x: _written(np.broadcast_arrays(x, np.ones((2, 1)))[0]))(x),
        [[7, 1, 2], [0, 1, 2]])


def _written(b):
    b[0, 0] = 7.0
    return b
