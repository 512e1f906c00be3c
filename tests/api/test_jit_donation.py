"""``jit(donate_argnums=/donate_argnames=)``: results in the donated arguments' memory.

Every graph gives the same results with and without donation (fresh copies of the
arguments each time, NumPy as the reference); the cpu backend really reuses the donated
array for an elementwise update; unusable donations are ignored with a warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functorch_core as fc

RNG = np.random.default_rng(0)
W, G = RNG.standard_normal((6, 5)), RNG.standard_normal((6, 5))
X = RNG.standard_normal((4, 6))
BIG = RNG.standard_normal((512, 1024))

GRAPHS = {      # name -> (f, args, donated positions)
    "elementwise step": (lambda w, g: w - 0.1 * g, (W, G), (0, 1)),
    "matmul": (lambda w, x: (x @ w, w * 2), (W, X), (0,)),
    "reduction": (lambda w, g: (w.sum(0), w * g), (W, G), (0,)),
    "output is the input": (lambda w, g: (w, g + 1), (W, G), (0, 1)),
    "two outputs from one input": (lambda w, g: (w + 1, w * g, np.tanh(w)), (W, G), (0,)),
    "transposed read": (lambda s, g: s.T + s, (W[:5], G), (0,)),
    "read after the write": (lambda w, g: (w + g, (w * w).sum()), (W, G), (0,)),
    "shifted read": (lambda w, g: np.concatenate([w[1:], w[:1]]) + w, (W, G), (0,)),
    "reversed read": (lambda w, g: w[::-1] * g, (W, G), (0,)),
    "a chain": (lambda w, g: np.maximum(np.exp(w) - g, 0.0) * w, (W, G), (0, 1)),
    # big enough that the kernels split over threads
    "threaded": (lambda w, g: (w * 0.5 - g, w[:, ::-1] + g), (BIG, BIG[::-1].copy()), (0,)),
}


def _copies(args):
    return tuple(np.array(a, copy=True) for a in args)


def _same(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("name", GRAPHS)
def test_results_are_the_same_with_and_without_donation(name, backend):
    f, args, donated = GRAPHS[name]
    want = fc.jit(f, backend=backend)(*_copies(args))
    eager = f(*_copies(args))
    for a, b in zip(want if isinstance(want, tuple) else (want,),
                    eager if isinstance(eager, tuple) else (eager,), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)   # native tanh, exp
    step = fc.jit(f, backend=backend, donate_argnums=donated)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # a buffer no result can take
        for _ in range(3):                              # the compiled call, reused
            _same(step(*_copies(args)), want)


def test_an_elementwise_update_writes_into_the_donated_array():
    step = fc.jit(lambda w, g: w - 0.1 * g, donate_argnums=0)
    w, g = W.copy(), G.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # every donated buffer used
        out = step(w, g)
    assert np.shares_memory(out, w) and not np.shares_memory(out, g)
    np.testing.assert_array_equal(out, W - 0.1 * G)
    np.testing.assert_array_equal(g, G)                # not donated: untouched
    again = step(out, g)                               # params = step(params, grads)
    assert again is out
    np.testing.assert_array_equal(again, (W - 0.1 * G) - 0.1 * G)


def test_the_decorator_form_and_a_threaded_update():
    @fc.jit(donate_argnums=(0,))
    def step(w, g):
        return w - 0.5 * g
    w = BIG.copy()
    out = step(w, BIG)
    assert np.shares_memory(out, w)
    np.testing.assert_array_equal(out, BIG - 0.5 * BIG)


def test_two_results_matching_one_donated_input_take_it_once():
    f = fc.jit(lambda w: (w + 1, w * 2), donate_argnums=0)
    w = W.copy()
    a, b = f(w)
    assert np.shares_memory(a, w) != np.shares_memory(b, w)
    _same((a, b), (W + 1, W * 2))


def test_a_donated_argument_returned_as_it_is_is_not_copied():
    f = fc.jit(lambda w, g: (w, g * 3), donate_argnums=0)
    w = W.copy()
    out, _ = f(w, G)
    assert out is w


def test_donate_argnames_and_pytrees_of_parameters():
    def sgd(params, grads, lr=0.5):
        return {k: params[k] - lr * grads[k] for k in params}
    params = {"b": np.zeros(5), "w": W.copy()}
    grads = {"b": np.ones(5), "w": G.copy()}
    want = sgd(params, grads)
    for step in (fc.jit(sgd, donate_argnames="params"), fc.jit(sgd, donate_argnums=0)):
        p = {k: v.copy() for k, v in params.items()}
        new = step(p, grads)
        assert all(np.shares_memory(new[k], p[k]) for k in p)
        _same(tuple(new[k] for k in sorted(new)), tuple(want[k] for k in sorted(want)))
    p = {k: v.copy() for k, v in params.items()}
    new = fc.jit(sgd, donate_argnames="params")(params=p, grads=grads)
    assert np.shares_memory(new["w"], p["w"])


def test_a_donated_buffer_no_result_can_take_warns():
    f = fc.jit(lambda w: w.sum(0), donate_argnums=0)
    with pytest.warns(UserWarning, match=r"donated buffers were not usable: w \(float64"):
        np.testing.assert_allclose(f(W.copy()), W.sum(0))


@pytest.mark.parametrize("case", ["read-only", "passed twice", "a view of another argument",
                                  "not contiguous", "a constant of the function"])
def test_unfit_donated_arrays_are_ignored_with_a_warning(case):
    base = W.copy()
    f = lambda w, g: w * 2 + g      # noqa: E731
    if case == "read-only":
        w, g = W.copy(), G
        w.flags.writeable = False
    elif case == "passed twice":
        w = g = base
    elif case == "a view of another argument":
        w, g = base, base[::-1]
    elif case == "not contiguous":
        w, g = np.asfortranarray(base), G
    else:
        w, g = base, G
        f = lambda w, g: w * 2 + g + base      # noqa: E731
    want = f(w, g)
    keep = (w.copy(), np.array(g, copy=True))
    with pytest.warns(UserWarning, match="not usable"):
        _same(fc.jit(f, donate_argnums=0)(w, g), want)
    _same((w, g), keep)                                # nothing was overwritten


@pytest.mark.parametrize("case", ["viewed by a constant", "a view of a constant",
                                  "a constant's view of an argument's view"])
def test_donation_next_to_constants_sharing_an_arguments_memory(case):
    # the check of a call whose arrays all own their memory reads the constants' owners
    base = W.copy()
    if case == "viewed by a constant":
        w, const = base, base.reshape(-1)[::-1].reshape(base.shape)
    elif case == "a view of a constant":
        w, const = base.reshape(-1).reshape(base.shape), base
    else:
        w, const = base[:, :], base[:, :]
    f = lambda w, g: w * 2 + g + const      # noqa: E731
    want, keep = f(w, G), base.copy()
    jitted = fc.jit(f, donate_argnums=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):      # the general path, then the fast path
            base[...] = keep    # what a donated call leaves in its argument is undefined
            _same(jitted(w, G), want)


def test_an_argument_the_function_writes_into_is_not_donated():
    def f(w, g):
        w += g                       # written back to the caller, as eagerly
        return w * 2
    w = W.copy()
    with pytest.warns(UserWarning, match="writes into it"):
        out = fc.jit(f, donate_argnums=0)(w, G)
    np.testing.assert_array_equal(w, W + G)
    np.testing.assert_array_equal(out, (W + G) * 2)


def test_the_interpreter_and_enclosing_transforms_ignore_donation_quietly():
    f = fc.jit(lambda w, g: w - 0.1 * g, donate_argnums=0, backend="interpreter")
    w = W.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(w, G)
    assert not np.shares_memory(out, w)
    step = fc.jit(lambda w, g: w * g, donate_argnums=0)
    np.testing.assert_allclose(fc.grad(lambda w: step(w, G).sum())(W.copy()), G)
    np.testing.assert_allclose(fc.vmap(step)(W.copy(), G), W * G)


def test_bad_donation_arguments_are_named():
    with pytest.raises(ValueError, match="both static and donated"):
        fc.jit(lambda n, x: x * n, static_argnums=0, donate_argnums=0)
    with pytest.raises(ValueError, match="donate_argnums"):
        fc.jit(lambda x: x + 1, donate_argnums=3)(np.ones(2))
    with pytest.raises(TypeError, match="donate_argnames"):
        fc.jit(lambda x: x + 1, donate_argnames=[0])


def test_every_call_is_checked_on_the_fast_path_too():
    f = fc.jit(lambda w, g: w * 2 + g, donate_argnums=0)
    w = W.copy()
    out = f(w, G)                         # the first call: the general path
    assert np.shares_memory(out, w)
    w = W.copy()
    assert np.shares_memory(f(w, G), w)   # the fast path donates as well
    ro = W.copy()
    ro.flags.writeable = False
    with pytest.warns(UserWarning, match="read-only"):
        out = f(ro, G)
    assert not np.shares_memory(out, ro)
    np.testing.assert_array_equal(out, W * 2 + G)
    same = W.copy()
    with pytest.warns(UserWarning, match="passed twice"):   # a signature of its own
        out = f(same, same)
    np.testing.assert_array_equal(out, W * 3)
    np.testing.assert_array_equal(same, W)
