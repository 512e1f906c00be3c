"""numpy.random inside a traced function is an error, not a frozen constant."""

import threading

import numpy as np
import pytest
from functorch_core.ir import TracerError

from functorch_core import grad, jit, vmap

RNG = np.random.default_rng(0)


def _noisy_helper(x):
    return x + RNG.normal(size=x.shape)


def test_global_numpy_random_in_jit_raises():
    f = jit(lambda x: x + np.random.randn(3))
    with pytest.raises(TracerError, match=r"jit\(.*lambda.*\) draws from numpy.random's "
                                          r"global RandomState.*pass them in as an argument"):
        f(np.ones(3))


def test_closed_over_generator_in_vmap_raises_naming_it():
    rng = np.random.default_rng(1)
    with pytest.raises(TracerError, match=r"Generator `rng`"):
        vmap(lambda x: x + rng.normal())(np.ones(3))
    with pytest.raises(TracerError, match="Generator `rng`"):
        vmap(lambda x: x + rng.normal(), randomness="error")(np.ones(3))


def test_generator_used_by_a_helper_in_grad_raises():
    with pytest.raises(TracerError, match=r"Generator `RNG` \(used by _noisy_helper\)"):
        grad(lambda x: np.sum(_noisy_helper(x) ** 2))(np.ones(3))


def test_random_state_as_static_argument_raises():
    rs = np.random.RandomState(0)
    f = jit(lambda x, r: x * r.uniform(), static_argnums=1)
    with pytest.raises(TracerError, match="RandomState"):
        f(np.ones(2), rs)


def test_cached_gaussian_draw_is_seen():
    np.random.randn()          # RandomState caches the second Box-Muller value: the next
    f = jit(lambda x: x + np.random.randn())    # draw moves no bit-generator state
    with pytest.raises(TracerError):
        f(1.0)


def test_random_numbers_passed_in_are_fine():
    f = jit(lambda x, noise: x + noise)
    x = np.ones(3)
    noise = np.random.randn(3)
    np.testing.assert_array_equal(f(x, noise), x + noise)
    noise2 = RNG.normal(size=3)
    np.testing.assert_array_equal(f(x, noise2), x + noise2)
    np.testing.assert_array_equal(vmap(lambda a, n: a * n)(x, noise), x * noise)


def test_other_threads_drawing_while_tracing_is_no_error():
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            np.random.rand(8)
            RNG.random(8)
    threads = [threading.Thread(target=draw) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for k in range(20):
            # a fresh function each time: every call traces
            f = jit(lambda x, k=k: np.tanh(x) * k + RNG.bit_generator.state["state"]["inc"] * 0)
            np.testing.assert_allclose(f(np.ones(2)), np.tanh(np.ones(2)) * k)
            g = vmap(lambda x, k=k: x * k)
            np.testing.assert_allclose(g(np.ones(2)), k)
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_threads_drawing_inside_traces_all_raise_without_deadlock():
    errors, done = [], []

    def work(i):
        rng = np.random.default_rng(i)
        for _ in range(5):
            try:
                jit(lambda x: x + rng.normal() + np.random.rand())(1.0)
            except TracerError:
                errors.append(i)
        done.append(i)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(done) == [0, 1, 2, 3] and len(errors) == 20
