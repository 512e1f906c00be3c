"""functionalize: alias analysis and the rewrite of mutation into pure updates.

The reference is NumPy's eager execution of the same function: results and the
final state of every argument must match, through functionalize, jit, grad and
vmap. A hypothesis test draws random programs of views and in-place writes.
"""

import numpy as np
import pytest
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import check_graph
from functorch_core.ir import primitives as P
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import functionalize, grad, jit, make_graph, vmap
from functorch_core.transforms._alias import reshape_strides
from functorch_core.transforms.functionalize import functionalize_graph


def mutation_free(graph):
    return not any(e.prim.mutates for e in graph.eqns)


def eager(f, *args):
    """Run ``f`` on copies of ``args``; return (result, final copies)."""
    copies = [np.array(a, copy=True) for a in args]
    return f(*copies), copies


def check_all_ways(f, *args, ways=("functionalize", "jit")):
    want, want_args = eager(f, *args)
    for way in ways:
        wrapped = functionalize(f) if way == "functionalize" else jit(f)
        copies = [np.array(a, copy=True) for a in args]
        got = wrapped(*copies)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=way)
        assert np.asarray(got).dtype == np.asarray(want).dtype, way
        for c, w in zip(copies, want_args, strict=True):
            np.testing.assert_array_equal(c, w, err_msg=f"{way}: final argument state")


# --- the pass on graphs traced with primitives ------------------------------------

def test_pass_on_primitive_graph_matches_raw_interpreter():
    def f(x):
        y = P.slice.bind(x, start_indices=(1,), limit_indices=(3,), strides=(1,))
        P.setitem.bind(y, P.mul.bind(y, np.float64(2.0)), indexer=(("slice", 0, 2, 1),))
        z = P.rev.bind(x, dimensions=(0,))
        P.setitem.bind(z, np.float64(7.0), indexer=(("int", 0),))
        return [P.reduce_sum.bind(x, axes=(0,)), y]

    raw = make_graph(f)(np.arange(4.0))
    new, mutated = functionalize_graph(raw)
    check_graph(new)
    assert mutation_free(new) and mutated == [0]
    x = np.arange(4.0)
    want = run_graph(raw, [x])
    got = run_graph(new, [np.arange(4.0)])
    for w, g in zip(want, got[:2], strict=True):
        np.testing.assert_array_equal(w, g)
    np.testing.assert_array_equal(got[2], x)


def test_graph_before_and_after():
    def f(x):
        x[1:] *= 2
        return x.sum()

    raw = make_graph(f)(np.ones(3))
    assert any(e.prim is P.setitem for e in raw.eqns)
    pure, mutated = functionalize_graph(raw)
    assert mutation_free(pure) and mutated == [0]
    # a function that writes only into its own buffers has no mutation at all
    g = make_graph(functionalize(lambda x: _buffer_fn(x)))(np.ones(3))
    assert mutation_free(g)


def _buffer_fn(x):
    buf = fnp.zeros((2, 3))
    buf[0] = x
    buf[1, ::-1] = x * 2
    buf[:, 1] += 1
    return buf


def test_traced_functionalize_writes_back_only_at_the_end():
    def f(x):
        x[0] = 1.0
        x[1] += x[0]
        return x * 2

    g = make_graph(functionalize(f))(np.zeros(3))
    muts = [i for i, e in enumerate(g.eqns) if e.prim.mutates]
    assert muts == [len(g.eqns) - 1]          # one whole-array write-back, last


@pytest.mark.parametrize("shape,strides_of", [
    ((4, 6), lambda a: a), ((4, 6), lambda a: a.T), ((4, 6), lambda a: a[:, ::2]),
    ((4, 6), lambda a: a[::-1]), ((2, 3, 4), lambda a: a.transpose(1, 0, 2)),
    ((2, 3, 4), lambda a: a[:, :1]), ((2, 1, 4), lambda a: a[:, :, 1:3]),
])
@pytest.mark.parametrize("new", [(-1,), (2, -1), (-1, 2), (1, -1, 1)])
def test_reshape_view_rule_agrees_with_numpy(shape, strides_of, new):
    v = strides_of(np.zeros(shape))
    try:
        r = v.reshape(new)
    except ValueError:
        return
    st_ = reshape_strides(v.shape, tuple(s // 8 for s in v.strides), r.shape)
    assert (st_ is not None) == np.shares_memory(r, v)
    if st_ is not None:
        assert all(a * 8 == b for a, b, d in zip(st_, r.strides, r.shape, strict=True) if d > 1)


# --- targeted alias cases ----------------------------------------------------------

def test_write_through_slice_visible_to_base_and_other_views():
    def f(x):
        a = x[1:3]
        b = x[::-1]
        a[0] = 10.0
        c = b[2] * 1
        b[0] += 5
        return c + a[1]

    check_all_ways(f, np.arange(4.0))


def test_transpose_reshape_view_and_copy():
    def f(x):
        t = x.T
        t[0] = -1.0               # writes column 0 of x
        r = x.reshape(-1)         # view (x is contiguous)
        r[5] = 100.0
        rt = t.reshape(-1)        # copy: t is not contiguous
        rt[:] = 0.0
        return x.sum() + rt.sum()

    check_all_ways(f, np.arange(12.0).reshape(3, 4))


def test_noncontiguous_argument_reshape_copies():
    def f(x):
        r = x.reshape(-1)
        r[0] = 42.0
        return x * 1

    x = np.arange(12.0).reshape(3, 4).T     # a reshape of it copies in NumPy
    check_all_ways(f, x)
    base = np.arange(12.0).reshape(3, 4)
    functionalize(f)(base.T)
    np.testing.assert_array_equal(base, np.arange(12.0).reshape(3, 4))


def test_squeeze_expand_dims_newaxis_ellipsis():
    def f(x):
        e = x[None, ..., None]
        e[0, 1, ..., 0] = 3.0
        s = e.squeeze()
        s[-1, -1] += 1
        x[..., 0] *= 2
        return e * 1

    check_all_ways(f, np.arange(6.0).reshape(2, 3))


def test_negative_steps_and_strided_writes():
    def f(x):
        x[::-2] = -1.0
        x[1::3] += 10
        y = x[::-1][1:5:2]
        y *= 3
        return y + 0

    check_all_ways(f, np.arange(9.0))


def test_integer_array_index_is_a_copy_and_last_write_wins():
    def f(x):
        g = x[np.array([0, 2])]
        g[:] = 100.0                          # a copy: x unchanged
        x[np.array([1, 1, 3])] = np.array([[5.0], [6.0], [7.0]])
        x[np.array([[0], [2]]), np.array([1, 0])] = 9.0
        return g + x[0, 0]

    check_all_ways(f, np.arange(8.0).reshape(4, 2))


def test_traced_index_arrays():
    def f(x, i):
        x[i] = 1.0
        x[i, 0] += 2.0
        return x

    check_all_ways(f, np.zeros((4, 2)), np.array([2, 0, -1]))


def test_same_array_twice():
    def f(a, b):
        a[0] = 5.0
        b[1] += a[0]
        return a + b

    x = np.zeros(3)
    want = f(x.copy(), x.copy())
    e = np.zeros(3)
    want_alias = f(e, e)
    for wrap in (functionalize, jit):
        y = np.zeros(3)
        np.testing.assert_array_equal(wrap(f)(y, y), want_alias)
        np.testing.assert_array_equal(y, e)
        z1, z2 = np.zeros(3), np.zeros(3)
        np.testing.assert_array_equal(wrap(f)(z1, z2), want)   # the cache tells them apart


def test_view_and_base_as_two_arguments():
    def f(v, base):
        v[0] = -1.0            # base[2]
        base[3] += v[1]        # reads base[3] through v
        return base.sum() + v.sum()

    for wrap in (functionalize, jit):
        e = np.arange(6.0)
        want = f(e[2:5], e)
        b = np.arange(6.0)
        got = wrap(f)(b[2:5], b)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(b, e)


def test_overlapping_transposed_views_as_arguments():
    def f(a, b):
        a[0, :] = 1.0
        b[:, 0] += 2.0
        return a * b

    for wrap in (functionalize, jit):
        e = np.arange(9.0).reshape(3, 3)
        want = f(e[:, ::-1], e.T)
        x = np.arange(9.0).reshape(3, 3)
        np.testing.assert_array_equal(wrap(f)(x[:, ::-1], x.T), want)
        np.testing.assert_array_equal(x, e)


def test_buffer_inside_function_and_vmap_grad():
    x = np.arange(3.0)
    np.testing.assert_array_equal(functionalize(_buffer_fn)(x), _buffer_fn(x))
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(vmap(_buffer_fn)(xs), np.stack([_buffer_fn(r) for r in xs]))

    def loss(x):
        return (_buffer_fn(x) ** 2).sum()

    def pure(x):
        rows = fnp.stack([x, x[::-1] * 2])
        return ((rows + fnp.array([0.0, 1.0, 0.0])) ** 2).sum()

    np.testing.assert_allclose(grad(loss)(x), grad(pure)(x))
    np.testing.assert_allclose(pure(x), loss(x))


def test_grad_through_writes_into_argument():
    def f(x):
        x[1:] *= x[:-1]           # reads the old values (NumPy buffers overlap)
        return (x ** 2).sum()

    x = np.array([1.0, 2.0, 3.0])
    xc, eager = x.copy(), x.copy()
    f(eager)
    g = grad(f)(x)
    np.testing.assert_array_equal(x, eager)  # grad writes back as the eager call does

    def pure(x):
        return (fnp.concatenate([x[:1], x[1:] * x[:-1]]) ** 2).sum()

    np.testing.assert_allclose(g, grad(pure)(xc))   # the gradient at the value passed in


def test_vmap_writes_into_per_example_buffer_argument():
    def f(buf, x):
        buf[0] = x.sum()
        buf[1:] += x
        return buf * 2

    bufs, xs = np.ones((3, 3)), np.arange(6.0).reshape(3, 2)
    want = np.stack([f(b.copy(), x) for b, x in zip(bufs, xs, strict=True)])
    np.testing.assert_array_equal(vmap(f)(bufs.copy(), xs), want)


def test_jit_inside_a_trace_writes_into_the_outer_value():
    @jit
    def inner(b):
        b[0] = 7.0
        return b.sum()

    def outer(x):
        y = x[1:]
        s = inner(y)
        return s + x[1]

    check_all_ways(outer, np.zeros(3))


# --- other mutation forms -----------------------------------------------------------

def test_ufunc_out_copyto_fill():
    def f(x, y):
        np.multiply(x, 2, out=x)
        np.add(x[:2], y, out=y)
        fnp.copyto(x[1:], 7.0)
        np.copyto(y, x[:2] * 3, where=np.array([True, False]))
        x[2:].fill(-4)
        return x.sum() + y.sum()

    check_all_ways(f, np.arange(4.0), np.ones(2))


def test_add_at_accumulates_and_other_ufunc_at():
    idx = np.array([0, 0, 2, 0])

    def f(x, v):
        np.add.at(x, idx, v)
        np.multiply.at(x, (idx,), 1.5)
        np.negative.at(x, np.array([1, 1]))
        np.subtract.at(x[::-1], np.array([0, 0]), 1.0)
        return x * 1

    check_all_ways(f, np.arange(4.0), np.array([1.0, 2.0, 3.0, 4.0]))

    def h(x, i):               # traced indices: one scatter_add
        np.add.at(x, i, 1)
        return x

    check_all_ways(h, np.zeros(4, np.int64), np.array([3, 3, 1, -1]))


def test_integer_writes_follow_numpy_casting():
    def f(x):
        x[0] = 1.9
        x[1] = -2.7
        x[2:] += 2
        x[3:].fill(7.9)
        return x

    check_all_ways(f, np.zeros(4, np.int32))

    def g(x):
        x += 1.5
        return x

    for wrap in (functionalize, jit):
        x = np.zeros(3, np.int64)
        with pytest.raises(TypeError, match="same_kind"):
            wrap(g)(x)
        np.testing.assert_array_equal(x, 0)


def test_bad_writes_raise_like_numpy_and_write_nothing():
    def shape_mismatch(x):
        x[0] = 1.0
        x[:2] = np.ones(3)
        return x

    with pytest.raises(ValueError):
        shape_mismatch(np.zeros(4))
    for wrap in (functionalize, jit):
        x = np.zeros(4)
        with pytest.raises(ValueError, match="broadcast"):
            wrap(shape_mismatch)(x)
        np.testing.assert_array_equal(x, 0)

    def cast(x):
        fnp.copyto(x, 1.5)

    with pytest.raises(TypeError):
        np.copyto(np.zeros(2, int), 1.5)
    with pytest.raises(TypeError):
        functionalize(cast)(np.zeros(2, int))

    def writes(x):
        x[0] = 1.0
        return x

    ro = np.zeros(3)
    ro.flags.writeable = False
    for wrap in (functionalize, jit):
        with pytest.raises(ValueError, match="read-only"):
            wrap(writes)(ro)


def test_writes_into_closed_over_constant_are_refused():
    const = np.zeros(3)

    def f(x):
        v = P.slice.bind(const, start_indices=(1,), limit_indices=(3,), strides=(1,))
        P.setitem.bind(v, x, indexer=(("slice", 0, 2, 1),))
        return x

    with pytest.raises(NotImplementedError, match="constant"):
        functionalize(f)(np.ones(2))
    np.testing.assert_array_equal(const, 0)


def test_remove_modes():
    def f(x):
        return x[1:]

    x = np.arange(3.0)
    assert np.shares_memory(functionalize(f)(x), x)
    assert not np.shares_memory(functionalize(f, remove="mutations_and_views")(x), x)
    with pytest.raises(ValueError, match="remove"):
        functionalize(f, remove="views")


# --- random programs -------------------------------------------------------------------

_VIEWS = ["slice", "neg_slice", "int", "T", "reshape", "ravel", "newaxis", "squeeze",
          "swapaxes", "ellipsis"]
_WRITES = ["set_scalar", "set_read", "iadd", "imul", "set_array_idx", "copyto", "fill",
           "out", "add_at", "self_overlap"]


def _view(v, kind, a, b):
    n = v.ndim
    if n == 0:
        return v[...]
    ax = a % n
    d = v.shape[ax]
    if kind == "slice":
        return v[(slice(None),) * ax + (slice(a % (d + 1), None, 1 + b % 2),)]
    if kind == "neg_slice":
        return v[(slice(None),) * ax + (slice(None, None, -1 - b % 2),)]
    if kind == "int":
        return v[(slice(None),) * ax + (a % d, Ellipsis)] if d else v
    if kind == "T":
        return v.T
    if kind == "reshape":
        return v.reshape(-1, 1) if v.size else v
    if kind == "ravel":
        return v.ravel()
    if kind == "newaxis":
        return v[None]
    if kind == "squeeze":
        return v.squeeze()
    if kind == "swapaxes":
        return v.swapaxes(0, -1)
    return v[..., None]


def _write(v, kind, a, b, other):
    if v.size == 0:
        return
    if v.ndim == 0 and kind in ("set_scalar", "set_array_idx", "add_at", "self_overlap"):
        kind = "set_read"
    if kind == "set_scalar":
        v[(a % v.shape[0],)] = float(b)
    elif kind == "set_read":
        v[...] = other.sum() * 0.5
    elif kind == "iadd":
        v += 1.0 + b
    elif kind == "imul":
        v *= 0.5
    elif kind == "set_array_idx":
        idx = np.array([a % v.shape[0], b % v.shape[0], a % v.shape[0]])
        v[idx] = np.arange(3.0).reshape((3,) + (1,) * (v.ndim - 1)) + b
    elif kind == "copyto":
        np.copyto(v, 2.0 + a)
    elif kind == "fill":
        v.fill(-1.0 * b)
    elif kind == "out":
        np.add(v, 1.0, out=v)
    elif kind == "add_at":
        np.add.at(v, np.array([a % v.shape[0], a % v.shape[0], b % v.shape[0]]), 0.25)
    else:
        v[...] = v[::-1] * 1.0 if v.ndim else v * 1.0


_op = st.tuples(st.integers(0, 4), st.sampled_from(_VIEWS + [None]),
                st.sampled_from(_WRITES + [None]), st.integers(0, 9), st.integers(0, 9),
                st.booleans())


def _program(ops):
    """Each op takes a value, maybe views it, maybe writes into it, maybe reads another."""
    def run(x, y, sizes=None):
        vals = [x, y, x[1:]]
        outs = []
        for k, vkind, wkind, a, b, read in ops:
            v = vals[-1 - k % len(vals)]      # mostly recent values: chains of views
            if vkind is not None:
                v = _view(v, vkind, a, b)
                vals.append(v)
            if wkind is not None:
                if sizes is not None and wkind == "set_read":
                    sizes.append(np.abs(vals[(k + 1) % len(vals)]).sum() * 0.5)
                _write(v, wkind, a, b, vals[(k + 1) % len(vals)])
            if read:
                outs.append(vals[(k + a) % len(vals)].sum() * (1 + a))
                if sizes is not None:
                    sizes.append(np.abs(vals[(k + a) % len(vals)]).sum() * (1 + a))
        if sizes is not None:
            sizes.append(np.abs(x * y[:, None]).sum() + np.abs(x).sum())
        return sum(outs, x.sum() * 0.0) + (x * y[:, None]).sum() + x.sum(), x, y
    return run


def _sum_bound(f, x, y, n_ops):
    """Two orders of summing the program's sums differ by at most 2 gamma_n times the sum
    of the magnitudes summed (Higham), n the most elements one result sums."""
    sizes = []
    f(x.copy(), y.copy(), sizes)
    n = 12 * (n_ops + 3)
    return 2 * n * np.finfo(np.float64).eps * sum(sizes)


@given(st.lists(_op, min_size=1, max_size=8))
def test_random_programs_match_numpy(ops):
    f = _program(ops)
    x, y = np.arange(12.0).reshape(4, 3) / 7, np.arange(4.0) - 1.5
    (ws, wx, wy), (ex, ey) = eager(f, x, y)
    tol = _sum_bound(f, x, y, len(ops))
    for wrap in (functionalize, jit):
        cx, cy = x.copy(), y.copy()
        s, fx, fy = wrap(f)(cx, cy)
        np.testing.assert_allclose(s, ws, rtol=1e-12, atol=tol)
        for got, want in ((fx, wx), (fy, wy), (cx, ex), (cy, ey)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=tol)
    # vmap over a batch of two examples, per-example writes included
    xs, ys = np.stack([x, x * 2]), np.stack([y, -y])
    per = [eager(f, xs[i], ys[i])[0] for i in range(2)]
    tol = max(_sum_bound(f, xs[i], ys[i], len(ops)) for i in range(2))
    vs, vx, vy = vmap(f)(xs.copy(), ys.copy())
    np.testing.assert_allclose(vs, [p[0] for p in per], rtol=1e-12, atol=tol)
    np.testing.assert_allclose(vx, [p[1] for p in per], rtol=1e-12, atol=tol)
    np.testing.assert_allclose(vy, [p[2] for p in per], rtol=1e-12, atol=tol)
    # grad of the scalar output against central differences (programs are polynomial)
    gx = grad(lambda x, y: f(x, y)[0])(x.copy(), y.copy())
    eps, i = 1e-6, (1, 2)
    xp, xm = x.copy(), x.copy()
    xp[i] += eps
    xm[i] -= eps
    fd = (f(xp, y.copy())[0] - f(xm, y.copy())[0]) / (2 * eps)
    np.testing.assert_allclose(gx[i], fd, rtol=1e-5, atol=1e-5)


def test_exports():
    assert fc.functionalize is functionalize
    assert callable(fnp.copyto) and callable(fnp.ufunc_at)


def test_functionalize_inside_jit_sees_the_callers_aliasing():
    def g(u, v):
        u[0] = 100.0
        return v * 1

    e = np.arange(4.0)
    want = g(e, e)
    a = np.arange(4.0)
    np.testing.assert_array_equal(jit(functionalize(g))(a, a), want)
    np.testing.assert_array_equal(a, e)
    a = np.arange(4.0)
    e = np.arange(4.0)
    want = g(e[1:], e)
    np.testing.assert_array_equal(functionalize(jit(g))(a[1:], a), want)
    np.testing.assert_array_equal(a, e)


def test_ravel_of_strided_view_copies_like_numpy():
    def r(y):
        z = y[::2].ravel()     # not C-contiguous: NumPy copies
        z[0] = 9.0
        w = y[1:3].ravel()     # contiguous: a view
        w[0] = 7.0
        t = y.reshape(2, 2).T.ravel()
        t[1] = 5.0
        return y

    check_all_ways(r, np.zeros(4))
    check_all_ways(lambda y: r(y) * 1, np.zeros(4))


def test_integer_index_gives_a_scalar_copy():
    def s(y):
        v = y[0]
        v += 1                 # a NumPy scalar: y is unchanged
        e = y[0, ...]          # a 0-d view
        e += 1
        return y + v

    check_all_ways(s, np.zeros(2))


def test_input_plan_detects_exactly_the_overlaps():
    from functorch_core.transforms.functionalize import input_plan
    a = np.arange(10.0)
    assert input_plan([a[:5], a[5:], np.ones(2), 1.0], "f") is None   # disjoint halves
    plan = input_plan([a[:6], a[5:]], "f")
    assert [e.offset for e in plan.inputs] == [0, 5] and plan.group_sizes == (10,)
    buf = bytearray(80)                   # two arrays over one foreign buffer
    u, v = np.frombuffer(buf), np.frombuffer(buf)[3:]
    assert input_plan([u, v], "f").inputs[1].offset == 3
    t = input_plan([np.zeros((3, 4)).T], "f")
    assert t.inputs[0].group is None and t.inputs[0].strides == (1, 4)


def test_transform_refuses_writes_into_closed_over_traced_arrays():
    def outer(x):
        buf = fnp.zeros(3)

        def inner(y):
            buf[0] = y
            return y * 2

        return grad(inner)(x[0]) + buf

    with pytest.raises(NotImplementedError, match="closes over"):
        jit(outer)(np.ones(3))


@pytest.mark.parametrize("fn", [lambda x: +x, np.floor, np.trunc, np.conj, np.rint,
                                lambda x: np.positive(x)])
def test_identity_ufuncs_return_new_arrays(fn):
    def f(x):
        y = fn(x)
        y[...] = 99
        return x

    check_all_ways(f, np.zeros(2, np.int64))


@pytest.mark.parametrize("shape, offset", [((3, 4), 1), ((4, 3), -1), ((3, 3), 0),
                                           ((2, 3, 5), 2), ((2, 4, 3), -2)])
def test_diagonal_sees_later_writes_to_its_base(shape, offset):
    def f(x):
        d = np.diagonal(x, offset, -2, -1)
        x[..., 0, :] = 7.0
        x[..., -1, :] *= 3
        return d + 0
    a = np.arange(np.prod(shape), dtype=float).reshape(shape)
    expected_state, state = a.copy(), a.copy()
    expected = f(expected_state)
    np.testing.assert_array_equal(fc.jit(f)(state), expected)
    np.testing.assert_array_equal(state, expected_state)
