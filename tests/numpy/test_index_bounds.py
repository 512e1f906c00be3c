"""Out-of-bounds integer indices raise NumPy's IndexError under jit (cpu and interpreter),
vmap and grad, naming the user's call and line; in-bounds results are unchanged; the
take / take_along_axis modes against NumPy's own; ``config.check_bounds=False`` clamps."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from functorch_core.backends.llvm.runtime import compile_graph
from functorch_core.backends.planning.plan import Fallback
from functorch_core.ir import primitives as P
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
import functorch_core.testing as fct
from functorch_core import lax

X = np.arange(6.0)
M = np.arange(12.0).reshape(3, 4)


def _getitem(x, i):
    return x[i]


def _fancy_2d(m, i):
    return m[i, i[::-1] % 4]


def _take(x, i):
    return np.take(x, i)


def _take_along(m, i):
    return np.take_along_axis(m, i, axis=1)


def _iadd(x, i):
    b = x * 1.0
    b[i] += 1.0
    return b


def _setitem(m, i):
    b = m * 1.0
    b[:, i] = -1.0
    return b


def _add_at(x, i):
    b = x * 1.0
    np.add.at(b, i, 2.0)
    return b


# (name, function, operand, index arrays that are out of bounds, in-bounds indices)
FORMS = [
    ("x[i] scalar", _getitem, X, [np.int64(10), np.int64(-7), np.int32(6)],
     [np.int64(5), np.int64(-6), np.int32(0)]),
    ("x[idx]", _getitem, X, [np.array([0, 10, 3]), np.array([[1], [-7]])],
     [np.array([0, 5, -6]), np.array([[1], [-1]])]),
    ("fancy 2-d", _fancy_2d, M, [np.array([[0, 3], [1, 2]]), np.array([-4, 0])],
     [np.array([[0, 2], [1, -3]])]),
    ("take", _take, X, [np.array([2, 6]), np.array([-7])], [np.array([2, -6, 5])]),
    ("take_along_axis", _take_along, M, [np.array([[0], [4], [1]]), np.array([[-5], [0], [0]])],
     [np.array([[0, -1], [3, 2], [-4, 1]])]),
    ("b[idx] += 1", _iadd, X, [np.array([1, 6]), np.int64(-9)], [np.array([1, -1, 1])]),
    ("setitem", _setitem, M, [np.array([0, 4]), np.array([-5])], [np.array([0, -4, 3])]),
    ("np.add.at", _add_at, X, [np.array([0, 0, 7]), np.array([-8])], [np.array([0, 0, -1])]),
]
IDS = [f[0] for f in FORMS]


def _numpy_error(fn, x, i) -> str:
    with pytest.raises(IndexError) as info:
        fn(x, i)
    return str(info.value)


@pytest.fixture(params=["cpu", "interpreter"])
def backend(request):
    return request.param


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_out_of_bounds_raises_like_numpy_under_jit(form, backend):
    name, fn, x, bad, _ = form
    for i in bad:
        expected = _numpy_error(fn, x, i)
        with pytest.raises(IndexError) as info:
            fc.jit(fn, backend=backend)(x, i)
        msg = str(info.value)
        assert msg.startswith(expected), (name, msg, expected)
        assert __file__ in msg, msg                  # the user's file and line
        assert re.search(r":\d+ \(`", msg), msg


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_in_bounds_results_unchanged(form, backend):
    _, fn, x, _, good = form
    for i in good:
        want = fn(x, i)
        got = fc.jit(fn, backend=backend)(x, i)
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype


def test_cpu_is_bitwise_the_interpreter():
    x = np.random.default_rng(0).standard_normal((5, 7))
    idx = np.array([[0, -1, 4], [2, 2, -5]])
    f = lambda x, i: x[i] * 3.0 - x[i[::-1]]  # noqa: E731
    a = fc.jit(f)(x, idx)
    b = fc.jit(f, backend="interpreter")(x, idx)
    assert a.tobytes() == b.tobytes()


def test_message_names_the_call():
    with pytest.raises(IndexError, match=r"axis 0 with size 6, in numpy\.take at "):
        fc.jit(_take)(X, np.array([6]))
    with pytest.raises(IndexError, match=r"size 6, in x\[index\] at .*`return x\[i\]`"):
        fc.jit(_getitem)(X, np.int64(6))
    with pytest.raises(IndexError, match=r"axis 1 with size 4, in numpy\.take_along_axis"):
        fc.jit(_take_along)(M, np.array([[0], [4], [1]]))


def test_eager_transforms_raise_too():
    # vmap and grad trace even without jit: the interpreter runs the check
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 6"):
        fc.vmap(_getitem, in_axes=(None, 0))(X, np.array([1, 10, 2]))
    with pytest.raises(IndexError, match="index -7 is out of bounds for axis 0 with size 6"):
        fc.grad(lambda x, i: (x[i] ** 2).sum())(X, np.array([0, -7]))


def test_vmap_raises_with_the_example_index():
    idx = np.array([[0, 1], [2, 11], [3, -9]])
    with pytest.raises(IndexError) as info:
        [X[i] for i in idx]
    with pytest.raises(IndexError, match=re.escape(str(info.value))):
        fc.jit(fc.vmap(_getitem, in_axes=(None, 0)))(X, idx)
    # batched operand and index: the first bad example of the loop is named
    xs = np.stack([X, X + 1.0])
    with pytest.raises(IndexError, match="index 11 is out of bounds for axis 0 with size 6"):
        fc.jit(fc.vmap(_getitem))(xs, idx[1:])
    np.testing.assert_array_equal(fc.jit(fc.vmap(_getitem))(xs, idx[:1].repeat(2, 0)),
                                  np.stack([x[i] for x, i in zip(xs, idx[:1].repeat(2, 0))]))


def test_grad_raises_and_in_bounds_grad_is_unchanged():
    f = lambda x, i: (np.take(x, i) ** 2).sum()  # noqa: E731
    g = fc.jit(fc.grad(f))
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        g(X, np.array([1, 6]))
    want = np.zeros(6)
    np.add.at(want, [1, 5, 1], 2 * X[[1, 5, 1]])
    np.testing.assert_allclose(g(X, np.array([1, -1, 1])), want)
    fct.check_grads(lambda x: f(x, np.array([1, -1, 1])), (X + 0.5,), order=1)


def test_check_bounds_false_clamps(monkeypatch):
    monkeypatch.setattr(fc.config, "check_bounds", False)
    f = fc.jit(_getitem)
    np.testing.assert_array_equal(f(X, np.array([10, -7, -1])), X[[5, 0, 5]])
    g = fc.make_graph(_getitem)(X, np.array([1]))
    assert P.check_index not in {e.prim for e in g.eqns}


def test_check_bounds_true_puts_one_check_in_the_graph():
    g = fc.make_graph(_getitem)(X, np.array([1]))
    checks = [e for e in g.eqns if e.prim is P.check_index]
    assert len(checks) == 1 and checks[0].params["size"] == 6


# --- take / take_along_axis modes ---------------------------------------------------------

IDX = np.array([-13, -7, -6, -1, 0, 5, 6, 11])


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take_numpy_modes(mode, axis):
    idx = IDX if axis != 0 else IDX // 2
    want = np.take(M, idx, axis=axis, mode=mode)
    f = lambda m, i: fnp.take(m, i, axis=axis, mode=mode)  # noqa: E731
    np.testing.assert_array_equal(f(M, idx), want)
    np.testing.assert_array_equal(fc.jit(f)(M, idx), want)


@pytest.mark.parametrize("fill_value", [None, -1.0])
def test_take_fill(fill_value):
    got = fc.jit(lambda x, i: fnp.take(x, i, mode="fill", fill_value=fill_value))(X, IDX)
    inb = (IDX >= -6) & (IDX < 6)
    want = np.where(inb, X[np.where(inb, IDX, 0)], np.nan if fill_value is None else fill_value)
    np.testing.assert_array_equal(got, want)
    ints = fc.jit(lambda x, i: fnp.take(x, i, mode="fill"))(np.arange(6), IDX)
    assert ints.dtype == np.arange(6).dtype
    assert (ints[~inb] == np.iinfo(ints.dtype).min).all()


def test_take_along_axis_modes():
    idx = np.array([[0, 5, -1, -5]] * 3)
    n = M.shape[1]
    clipped = np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1)
    f = lambda mode: fc.jit(lambda m, i: fnp.take_along_axis(m, i, axis=1, mode=mode))  # noqa
    np.testing.assert_array_equal(f("clip")(M, idx), np.take_along_axis(M, clipped, axis=1))
    np.testing.assert_array_equal(f("wrap")(M, idx), np.take_along_axis(M, idx % n, axis=1))
    inb = (idx >= -n) & (idx < n)
    want = np.where(inb, np.take_along_axis(M, np.where(inb, idx, 0), axis=1), np.nan)
    np.testing.assert_array_equal(f("fill")(M, idx), want)


def test_bad_mode_is_named():
    with pytest.raises(ValueError, match=r"numpy\.take: mode must be one of"):
        fnp.take(X, np.array([0]), mode="promise")
    with pytest.raises(ValueError, match="fill_value is only read with mode='fill'"):
        fnp.take(X, np.array([0]), fill_value=1.0)


# --- the cpu backend's native check ------------------------------------------------------

def test_cpu_check_is_fused_into_the_native_entry():
    exe = compile_graph(fc.make_graph(_getitem)(X, np.array([1, 2])))
    assert exe.checks == 1
    assert not any(isinstance(s, Fallback) for s in exe.plan.steps)
    assert exe.entry is not None
    assert exe([X, np.array([-1, 2])])[0].tolist() == [5.0, 2.0]
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 6"):
        exe([X, np.array([1, 8])])


@pytest.mark.parametrize("where", ["fori_loop", "scan", "cond"])
def test_checks_inside_control_flow(where):
    def f(x, i):
        if where == "fori_loop":
            return lax.fori_loop(0, 3, lambda k, c: c + x[i + k], 0.0)
        if where == "scan":
            return lax.scan(lambda c, k: (c + x[i + k], c), 0.0, np.arange(3))[0]
        return lax.cond(i > 0, lambda: x[i], lambda: x[0])

    last = 3 if where != "cond" else 5      # the largest i that stays in bounds
    want = sum(X[last + k] for k in range(3)) if where != "cond" else X[last]
    np.testing.assert_allclose(fc.jit(f)(X, np.int64(last)), want)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        fc.jit(f)(X, np.int64(last + 1) if where != "cond" else np.int64(6))


def test_native_loop_with_a_check_stays_native():
    def f(x, i):
        return lax.fori_loop(0, 3, lambda k, c: c + x[i + k], 0.0)
    g = fc.make_graph(f)(X, np.int64(0))
    exe = compile_graph(g)
    loops = [run for step, run in zip(exe.plan.steps, exe.steps, strict=True)
             if type(step).__name__ == "Loop"]
    assert exe.checks == 1 and [run.native for run in loops] == [True]


def test_nested_loops_and_a_cond_in_a_body():
    def f(x, i):
        def outer(k, c):
            inner = lax.fori_loop(0, 2, lambda j, d: d + x[i + j + k], 0.0)
            return c + lax.cond(k > 0, lambda: x[i - k], lambda: inner)
        return lax.fori_loop(0, 2, outer, 0.0)

    def loop(x, i):
        c = 0.0
        for k in range(2):
            inner = sum(x[i + j + k] for j in range(2))
            c += x[i - k] if k > 0 else inner
        return c
    jf = fc.jit(f)
    for i in (1, 3):
        np.testing.assert_allclose(jf(X, np.int64(i)), loop(X, i))
    for i in (0, 4):        # x[-1] is fine in NumPy, x[6] is not; x[i - k] at i=0,k=1: -1
        try:
            want = loop(X, i)
        except IndexError as e:
            with pytest.raises(IndexError, match=re.escape(str(e))):
                jf(X, np.int64(i))
        else:
            np.testing.assert_allclose(jf(X, np.int64(i)), want)


_WHILE = """
import numpy as np, functorch_core as fc
from functorch_core import lax
x = np.arange(6.0)
f = fc.jit(lambda x: lax.while_loop(lambda c: x[c] != 99.0, lambda c: c + 1, 0))
try:
    f(x)
except IndexError as e:
    print("raised:", e)
"""


def test_a_while_loop_on_a_bad_index_stops_and_raises():
    # clamped, x[c] would read x[5] forever: the flag stops the loop
    out = subprocess.run([sys.executable, "-c", _WHILE], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "raised: index 6 is out of bounds for axis 0 with size 6" in out.stdout, out


def test_donated_and_profiled_calls_check_too():
    f = fc.jit(lambda x, i: x * 2.0 + x[i], donate_argnums=(0,))
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        f(X.copy(), np.int64(9))
    np.testing.assert_array_equal(f(X.copy(), np.int64(-1)), X * 2.0 + 5.0)
    with fc.profiler.profile():
        with pytest.raises(IndexError, match="index -9 is out of bounds"):
            fc.jit(_getitem)(X, np.array([-9]))


# --- hypothesis: "NumPy raises" iff "we raise", and the same values otherwise --------------

def _set_along(x, i, axis):
    b = x * 1.0
    b[(slice(None),) * axis + (i,)] = -1.0
    return b


def _add_at_along(x, i, axis):
    b = x * 1.0
    np.add.at(b, (slice(None),) * axis + (i,), 1.0)
    return b


_HYPOTHESIS_FORMS = {
    "getitem": lambda x, i, axis: x[(slice(None),) * axis + (i,)],
    "take": lambda x, i, axis: np.take(x, i, axis=axis),
    "take_along_axis": lambda x, i, axis: np.take_along_axis(
        x, i.reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1)), axis=axis),
    "setitem": _set_along,
    "np.add.at": _add_at_along,
}


@given(st.data())
def test_random_indices_match_numpy_in_every_form(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-2 * n - 1, 2 * n), min_size=0, max_size=5)),
                   dtype=data.draw(st.sampled_from([np.int64, np.int32])))
    name = data.draw(st.sampled_from(sorted(_HYPOTHESIS_FORMS)))
    form = _HYPOTHESIS_FORMS[name]
    f = lambda x, i: form(x, i, axis)  # noqa: E731
    try:
        want = f(x, idx)
    except IndexError as e:
        with pytest.raises(IndexError, match=re.escape(str(e))):
            fc.jit(f)(x, idx)
        return
    np.testing.assert_array_equal(fc.jit(f)(x, idx), want)


def test_an_exported_function_keeps_its_checks(tmp_path):
    exp = fc.export(lambda x, i: x[i] * 2.0, X, np.array([0, 1]))
    exp.save(tmp_path / "m.fcx")
    for backend in ("cpu", "interpreter"):
        m = fc.load_exported(tmp_path / "m.fcx", backend=backend)
        np.testing.assert_array_equal(m(X, np.array([1, -1])), [2.0, 10.0])
        with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6, "
                                             r"in x\[index\] at .*test_index_bounds\.py:"):
            m(X, np.array([1, 6]))
