"""functorch_core.random and the threefry2x32 primitive.

Known-answer vectors of Threefry-2x32 (Random123's kat_vectors); JAX's numbers for the same
keys (recorded from JAX 0.10.2, ``jax_threefry_partitionable`` on, float64 with
``jax_enable_x64``; JAX is not needed here); distributions against scipy.stats with fixed
keys (deterministic: they cannot flake); vmap over keys against loop-and-stack; the
native backend against the interpreter at several thread counts; vmap's ``randomness``.
"""

import numpy as np
import pytest
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import primitives as P
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

import functorch_core as fc
from functorch_core import random as R

U32 = np.uint32

# threefry2x32 20 rounds: (ctr0, ctr1, key0, key1) -> (out0, out1), Random123 kat_vectors
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xc4923a9c, 0x483df7a0)),
]


def _kat_args():
    ctr0, ctr1, key0, key1 = (np.array([v[0][i] for v in KAT], U32) for i in range(4))
    return key0, key1, ctr0, ctr1


def _kat_want():
    return [np.array([v[1][i] for v in KAT], U32) for i in range(2)]


def test_threefry_known_answers_eager():
    for got, want in zip(P.threefry2x32.bind(*_kat_args()), _kat_want(), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_threefry_known_answers_jit(backend):
    f = fc.jit(lambda *a: P.threefry2x32.bind(*a), backend=backend)
    for got, want in zip(f(*_kat_args()), _kat_want(), strict=True):
        np.testing.assert_array_equal(got, want)


def test_threefry_rank0_operands_broadcast_natively():
    k0, k1, _, c1 = _kat_args()
    f = fc.jit(lambda a, b, x: P.threefry2x32.bind(a, b, np.uint32(0), x), backend="cpu")
    got = f(k0[2], k1[2], c1)
    want = P.threefry2x32.bind(k0[2], k1[2], np.zeros(3, U32), c1)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


_WORDS = hnp.arrays(U32, st.integers(1, 40), elements=st.integers(0, 2 ** 32 - 1))


@given(_WORDS, _WORDS, st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1))
def test_threefry_native_equals_interpreter(x0, x1, k0, k1):
    n = min(len(x0), len(x1))
    args = (U32(k0), U32(k1), x0[:n], x1[:n])
    want = P.threefry2x32.bind(*args)
    got = fc.jit(lambda *a: P.threefry2x32.bind(*a), backend="cpu")(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@given(st.integers(0, 2 ** 64 - 1), st.floats(-1e6, 1e6), st.floats(0, 1e6),
       st.sampled_from([np.float32, np.float64]))
def test_uniform_stays_in_its_bounds(seed, lo, width, dtype):
    lo, hi = dtype(lo), dtype(lo) + dtype(width)
    u = R.uniform(R.key(seed), (64,), dtype, lo, hi)
    assert u.dtype == dtype and np.all(u >= lo) and np.all(u <= hi)


def test_threefry_shape_rule_errors():
    with pytest.raises(TypeError, match="threefry2x32: operand x0 must be uint32"):
        P.threefry2x32.bind(U32(0), U32(0), np.zeros(2, np.int32), np.zeros(2, U32))
    with pytest.raises(ValueError, match=r"threefry2x32: operand shapes"):
        P.threefry2x32.bind(U32(0), U32(0), np.zeros(2, U32), np.zeros(3, U32))


def test_threefry_native_kernel_is_vectorized():
    from functorch_core.backends import registry
    graph = fc.make_graph(lambda a, b: P.threefry2x32.bind(U32(1), U32(2), a, b))(
        np.zeros(4096, U32), np.zeros(4096, U32))
    ir_text = str(registry.get("cpu").compile(graph).ir)
    assert "x i32>" in ir_text          # <4 x i32> or <8 x i32> rounds


# --- JAX's numbers ------------------------------------------------------------------------

K42 = R.key(42)


def test_key_split_fold_in_bits_match_jax():
    np.testing.assert_array_equal(K42, np.array([0, 42], U32))
    np.testing.assert_array_equal(R.split(K42), np.array([[1832780943, 270669613],
                                                          [64467757, 2916123636]], U32))
    np.testing.assert_array_equal(R.fold_in(K42, 7), np.array([2547012911, 1371500959], U32))
    np.testing.assert_array_equal(R.bits(K42, (5,)), np.array(
        [2098992034, 2919706841, 2646866425, 2409546199, 1935504149], U32))
    np.testing.assert_array_equal(R.key(-1), np.array([0xFFFFFFFF, 0xFFFFFFFF], U32))
    np.testing.assert_array_equal(R.key(2 ** 33 + 5), np.array([2, 5], U32))


def test_samplers_match_jax():
    np.testing.assert_array_equal(R.uniform(K42, (3,), np.float32),
                                  np.array([0.48870957, 0.6797972, 0.6162715], np.float32))
    np.testing.assert_allclose(R.uniform(K42, (3,)), [0.42672757, 0.01501007, 0.57414442],
                               atol=5e-9)
    np.testing.assert_array_equal(R.randint(K42, (5,), 0, 10, np.int32), [4, 4, 1, 9, 9])
    np.testing.assert_array_equal(R.permutation(K42, 10), [7, 4, 2, 5, 3, 6, 8, 9, 0, 1])
    np.testing.assert_array_equal(R.choice(K42, 10, (4,)), [4, 4, 1, 9])
    np.testing.assert_array_equal(R.choice(K42, 10, (4,), replace=False), [7, 4, 2, 5])
    p = np.array([.1, .2, .3, .2, .2], np.float32)
    np.testing.assert_array_equal(R.choice(K42, 5, (4,), p=p), [2, 2, 2, 2])
    logits = np.log(np.array([0.2, 0.3, 0.5], np.float32))
    np.testing.assert_array_equal(R.categorical(K42, logits, shape=(8,)),
                                  [2, 2, 2, 2, 0, 0, 1, 2])
    np.testing.assert_allclose(R.normal(K42, (3,), np.float32),
                               [-0.02830462, 0.46713185, 0.29570296], rtol=1e-6)
    np.testing.assert_allclose(R.normal(K42, (3,)), [-0.18471175, -2.16982456, 0.18693555],
                               atol=1e-8)
    np.testing.assert_allclose(R.exponential(K42, (3,), np.float32),
                               [0.6708175, 1.1388006, 0.95782], rtol=1e-6)


# --- distributions ------------------------------------------------------------------------

N = 20000


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_and_normal_distributions(dtype):
    u = R.uniform(R.key(1), (N,), dtype)
    assert u.dtype == dtype and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = R.normal(R.key(2), (N,), dtype)
    assert z.dtype == dtype and abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.02
    assert stats.kstest(z, "norm").pvalue > 1e-3
    s = R.uniform(R.key(3), (N,), dtype, -2.0, 3.0)
    assert s.min() >= -2 and s.max() < 3
    assert stats.kstest(s, stats.uniform(-2, 5).cdf).pvalue > 1e-3


def test_other_distributions():
    assert stats.kstest(R.exponential(R.key(4), (N,)), "expon").pvalue > 1e-3
    assert stats.kstest(R.gumbel(R.key(5), (N,)), "gumbel_r").pvalue > 1e-3
    t = R.truncated_normal(R.key(6), -1.0, 2.0, (N,))
    assert t.min() > -1 and t.max() < 2
    assert stats.kstest(t, stats.truncnorm(-1, 2).cdf).pvalue > 1e-3
    b = R.bernoulli(R.key(7), 0.3, (N,))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.015
    r = R.randint(R.key(8), (N,), -3, 4)
    assert r.dtype == np.int64 and set(np.unique(r)) == set(range(-3, 4))
    assert stats.chisquare(np.bincount(r + 3)).pvalue > 1e-3
    c = R.categorical(R.key(9), np.log([0.2, 0.3, 0.5]), shape=(N,))
    assert stats.chisquare(np.bincount(c), N * np.array([0.2, 0.3, 0.5])).pvalue > 1e-3
    keep = R.dropout_mask(R.key(10), 0.25, (N,))
    assert abs(keep.mean() - 0.75) < 0.015


def test_split_keys_give_independent_streams():
    # fold_in(k, i) == split(k, n)[i], as in JAX (its split is "fold-like"): use other keys
    keys = R.split(R.key(11), 4)
    streams = np.stack([R.uniform(k, (N,)) for k in keys] +
                       [R.uniform(R.fold_in(R.key(111), i), (N,)) for i in range(3)])
    corr = np.corrcoef(streams)
    assert np.all(np.abs(corr[~np.eye(len(streams), dtype=bool)]) < 0.03)
    assert len({tuple(k) for k in R.split(R.key(11), 1000)}) == 1000


def test_permutation_and_choice_without_replacement_are_permutations():
    x = np.arange(12.0).reshape(4, 3)
    p = R.permutation(R.key(12), x)
    assert sorted(map(tuple, p)) == sorted(map(tuple, x))
    q = R.permutation(R.key(12), x, axis=1, independent=True)
    assert all(sorted(row) == sorted(orig) for row, orig in zip(q, x, strict=True))
    c = R.choice(R.key(13), x, (3,), replace=False, axis=0)
    assert len({tuple(r) for r in c}) == 3 and all(tuple(r) in set(map(tuple, x)) for r in c)


# --- transforms and backends ---------------------------------------------------------------

SAMPLERS = {
    "uniform": lambda k: R.uniform(k, (3, 5), np.float32, -1.0, 2.0),
    "normal": lambda k: R.normal(k, (7,)),
    "bits": lambda k: R.bits(k, (6,), np.uint8),
    "randint": lambda k: R.randint(k, (4,), 2, 9),
    "permutation": lambda k: R.permutation(k, 6),
    "split": lambda k: R.split(k, 3),
    "fold_in": lambda k: R.fold_in(k, 5),
    "gumbel": lambda k: R.gumbel(k, (5,), np.float32),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_vmap_over_keys_matches_loop_and_jit_matches_eager(name):
    f = SAMPLERS[name]
    keys = R.split(R.key(14), 4)
    want = np.stack([f(k) for k in keys])
    np.testing.assert_array_equal(fc.vmap(f)(keys), want)
    np.testing.assert_array_equal(fc.vmap(f, in_dims=1)(keys.T), want)
    for backend in ("cpu", "interpreter"):
        np.testing.assert_array_equal(fc.jit(f, backend=backend)(keys[0]), want[0])
        np.testing.assert_array_equal(fc.jit(fc.vmap(f), backend=backend)(keys), want)


def _bitwise(got, want, what=""):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(want).view(np.uint8), err_msg=what)


def _every_sampler(dtype, shape):
    """name -> f(key) for every sampler of this module at ``dtype`` (floats) and ``shape``."""
    p = np.linspace(0.1, 1.0, 5).astype(dtype)
    logits = np.log(np.array([0.2, 0.3, 0.5], dtype))
    return {
        "uniform": lambda k: R.uniform(k, shape, dtype, -1.5, 2.0),
        "normal": lambda k: R.normal(k, shape, dtype),
        "truncated_normal": lambda k: R.truncated_normal(k, -1.0, 2.5, shape, dtype),
        "exponential": lambda k: R.exponential(k, shape, dtype),
        "gumbel": lambda k: R.gumbel(k, shape, dtype),
        "bernoulli": lambda k: R.bernoulli(k, np.asarray(0.3, dtype), shape),
        "dropout_mask": lambda k: R.dropout_mask(k, 0.25, shape),
        "randint": lambda k: R.randint(k, shape, -7, 1000),
        "bits": lambda k: R.bits(k, shape),
        "categorical": lambda k: R.categorical(k, logits, shape=shape),
        "choice_p": lambda k: R.choice(k, 5, shape, p=p),
        "choice_p_no_replace": lambda k: R.choice(k, 5, (3,), replace=False, p=p),
        "permutation": lambda k: R.permutation(k, 9),
        "split": lambda k: R.split(k, 3),
        "fold_in": lambda k: R.fold_in(k, 12345),
    }


_NAMES = list(_every_sampler(np.float32, ()))
_FLOATS = {"uniform", "normal", "truncated_normal", "exponential", "gumbel", "bernoulli",
           "categorical", "choice_p", "choice_p_no_replace"}
_NO_SHAPE = {"choice_p_no_replace", "permutation", "split", "fold_in"}


@pytest.mark.parametrize("name", _NAMES)
def test_every_sampler_gives_the_same_bits_eager_jit_and_vmap(name):
    # eager draws run NumPy, jit the native code: the floats made through log/log1p/sqrt
    # used to differ by an ulp (NumPy's log and the backend's are different functions).
    # One function draws every dtype and shape, so each backend compiles once.
    dtypes = (np.float32, np.float64) if name in _FLOATS else (np.float32,)
    shapes = ((), (33, 9)) if name not in _NO_SHAPE else ((),)
    fs = [_every_sampler(dt, shape)[name] for dt in dtypes for shape in shapes]

    def f(k):
        return tuple(g(k) for g in fs)
    keys = R.split(R.key(2024), 2)
    want = [np.stack(w) for w in zip(*[f(k) for k in keys], strict=True)]
    for backend in ("cpu", "interpreter"):
        jitted = fc.jit(f, backend=backend)
        for j, k in enumerate(keys):
            for got, w in zip(jitted(k), want, strict=True):
                _bitwise(got, w[j], f"{name}, jit on {backend}")
    _bitwise(fc.jit(fc.vmap(fs[-1]), backend="cpu")(keys), want[-1], f"{name}, jit(vmap)")
    for got, w in zip(fc.vmap(f)(keys), want, strict=True):
        _bitwise(got, w, f"{name}, vmap")


def test_a_jitted_function_reading_an_eager_draw_sees_the_eager_numbers():
    noise = R.normal(K42, (1000,), np.float32)        # the case: 1 ulp apart before
    step = fc.jit(lambda k, x: x + R.normal(k, (1000,), np.float32))
    _bitwise(step(K42, np.zeros(1000, np.float32)), noise + np.float32(0))


def _ulps(got, want):
    it = np.int32 if got.dtype == np.float32 else np.int64
    return np.abs(got.view(it).astype(np.int64) - want.view(it).astype(np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_portable_log_is_within_an_ulp_and_the_same_on_every_backend(dtype):
    from functorch_core._internal import portable_log as _portable_log
    fi = np.finfo(dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([np.exp(rng.uniform(np.log(fi.tiny), np.log(fi.max), 20000)),
                        rng.uniform(0.5, 2.0, 20000), fi.smallest_subnormal *
                        rng.integers(1, 2 ** 20, 500), [fi.tiny, fi.max, 1.0]]).astype(dtype)
    x1 = np.concatenate([rng.uniform(-1, 1, 20000), np.exp(rng.uniform(-60, 60, 10000)),
                         -np.exp(rng.uniform(-60, 0, 10000))]).astype(dtype)
    for fn, ref, arg in ((_portable_log.log, np.log, x), (_portable_log.log1p, np.log1p, x1)):
        got = fn(arg)
        # float32: the float64 value rounded; float64: NumPy's (itself within an ulp)
        want = ref(arg.astype(np.float64)).astype(dtype)
        assert _ulps(got, want).max() <= 1
        _bitwise(fc.jit(fn, backend="cpu")(arg), got)
    special = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan], dtype)
    with np.errstate(all="ignore"):     # NaN's sign bit is the hardware's in NumPy
        np.testing.assert_array_equal(_portable_log.log(special), np.log(special))
        np.testing.assert_array_equal(_portable_log.log1p(special), np.log1p(special))
    for fn in (_portable_log.log, _portable_log.log1p):
        _bitwise(fc.jit(fn, backend="cpu")(special), fn(special))


def test_fold_in_of_traced_data_and_key_of_traced_seed():
    keys = fc.vmap(lambda i: R.fold_in(K42, i))(np.arange(3))
    np.testing.assert_array_equal(keys, np.stack([R.fold_in(K42, i) for i in range(3)]))
    np.testing.assert_array_equal(fc.jit(R.key)(np.int64(2 ** 33 + 5)), R.key(2 ** 33 + 5))


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_native_bits_do_not_depend_on_the_thread_count(monkeypatch, workers):
    from functorch_core.backends.llvm import runtime, steps, threads
    monkeypatch.setattr(steps, "PARALLEL_MIN_POINTS", 1)
    monkeypatch.setattr(threads, "workers", workers)
    graph = fc.make_graph(lambda k: R.uniform(k, (257, 129), np.float32))(K42)
    got = runtime.Executable(graph)([K42])[0]
    np.testing.assert_array_equal(got, run_graph(graph, [K42])[0])
    np.testing.assert_array_equal(got, R.uniform(K42, (257, 129), np.float32))


def test_large_native_draw_matches_eager():
    f = fc.jit(lambda k: R.normal(k, (1 << 19,), np.float32), backend="cpu")
    np.testing.assert_array_equal(f(K42), R.normal(K42, (1 << 19,), np.float32))
    g = fc.jit(lambda k: R.bits(k, (1 << 19,)), backend="cpu")
    np.testing.assert_array_equal(g(K42), R.bits(K42, (1 << 19,)))


def test_gradients_flow_through_scale_not_the_key():
    u = R.uniform(K42, (4,))
    np.testing.assert_allclose(fc.grad(lambda s: (R.uniform(K42, (4,)) * s).sum())(2.0),
                               u.sum())
    lo_hi = fc.grad(lambda lo, hi: R.uniform(K42, (4,), minval=lo, maxval=hi).sum(),
                    argnums=(0, 1))(-1.0, 3.0)
    np.testing.assert_allclose(lo_hi, [(1 - u).sum(), u.sum()])
    out, tangent = fc.jvp(lambda s: R.normal(K42, (3,)) * s, (1.0,), (1.0,))
    np.testing.assert_array_equal(out, tangent)


# --- the global generator and vmap's randomness ---------------------------------------------

def _noisy(x):
    return x + R.uniform(R.next_key(), (2,))


def test_manual_seed_makes_next_key_reproducible():
    fc.manual_seed(3)
    a = [R.next_key() for _ in range(3)]
    fc.manual_seed(3)
    b = [R.next_key() for _ in range(3)]
    np.testing.assert_array_equal(a, b)
    assert len({tuple(k) for k in a}) == 3


def test_vmap_randomness_error_is_the_default():
    with pytest.raises(RuntimeError, match=r"vmap\(_noisy\).*randomness='same'.*'different'"):
        fc.vmap(_noisy)(np.zeros((3, 2)))


def test_vmap_randomness_same_and_different():
    fc.manual_seed(0)
    same = fc.vmap(_noisy, randomness="same")(np.zeros((3, 2)))
    assert np.all(same == same[0])
    again = fc.vmap(_noisy, randomness="same")(np.zeros((3, 2)))
    assert not np.array_equal(same, again)          # a fresh key on every call
    diff = fc.vmap(_noisy, randomness="different")(np.zeros((4, 2)))
    assert len({tuple(r) for r in diff}) == 4
    chunked = fc.vmap(_noisy, randomness="different", chunk_size=2)(np.zeros((4, 2)))
    assert len({tuple(r) for r in chunked}) == 4


def test_vmap_randomness_follows_the_global_seed():
    fc.manual_seed(5)
    a = fc.vmap(_noisy, randomness="different")(np.zeros((3, 2)))
    fc.manual_seed(5)
    b = fc.vmap(_noisy, randomness="different")(np.zeros((3, 2)))
    np.testing.assert_array_equal(a, b)
    fc.manual_seed(5)
    k = R.next_key()
    np.testing.assert_array_equal(a, np.stack([R.uniform(kk, (2,)) for kk in R.split(k, 3)]))


def test_nested_vmap_randomness_and_grad_inside():
    fc.manual_seed(1)
    out = fc.vmap(fc.vmap(_noisy, randomness="same"), randomness="different")(
        np.zeros((2, 3, 2)))
    assert np.all(out == out[:, :1]) and not np.array_equal(out[0], out[1])
    g = fc.vmap(lambda x: fc.grad(lambda y: (y * R.uniform(R.next_key(), (2,))).sum())(x),
                randomness="different")(np.zeros((3, 2)))
    assert len({tuple(r) for r in g}) == 3 and np.all((g >= 0) & (g < 1))


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_jit_draws_fresh_keys_on_every_call(backend):
    f = fc.jit(_noisy, backend=backend)
    fc.manual_seed(5)
    got = [f(np.zeros(2)) for _ in range(3)]
    fc.manual_seed(5)
    want = [_noisy(np.zeros(2)) for _ in range(3)]
    np.testing.assert_array_equal(got, want)
    assert len({tuple(g) for g in got}) == 3 and len(f.cache) == 1     # compiled once
    jv = fc.jit(fc.vmap(_noisy, randomness="different"), backend=backend)
    fc.manual_seed(6)
    a = jv(np.zeros((3, 2)))
    fc.manual_seed(6)
    np.testing.assert_array_equal(a, fc.vmap(_noisy, randomness="different")(np.zeros((3, 2))))
    assert len({tuple(r) for r in a}) == 3


def test_grad_of_a_draw_gets_fresh_keys():
    g = fc.grad(lambda x: (x * R.uniform(R.next_key(), (2,))).sum())
    fc.manual_seed(7)
    got = [g(np.zeros(2)), g(np.zeros(2)), fc.jit(g)(np.zeros(2))]
    fc.manual_seed(7)
    np.testing.assert_array_equal(got, [R.uniform(R.next_key(), (2,)) for _ in range(3)])


def test_global_draw_where_nothing_feeds_keys_raises():
    with pytest.raises(RuntimeError, match=r"next_key was called while tracing _noisy outside"
                                           r".*Pass a key as an argument"):
        fc.make_graph(_noisy)(np.zeros(2))


# --- bad arguments -----------------------------------------------------------------------------

def test_bad_keys_are_named():
    with pytest.raises(TypeError, match=r"random.uniform: key must be a uint32 array of shape "
                                        r"\(2,\).*int64 array of shape \(2,\)"):
        R.uniform(np.array([0, 1]), (2,))
    with pytest.raises(TypeError, match=r"random.normal: key.*shape \(3, 2\) \(a batch of "
                                        r"keys: vmap over it\)"):
        R.normal(R.split(K42, 3))
    with pytest.raises(TypeError, match=r"random.split: key.*shape \(3,\)"):
        R.split(np.zeros(3, U32))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"random.randint: minval must be <= maxval"):
        R.randint(K42, (2,), 5, 1)
    with pytest.raises(ValueError, match=r"random.uniform: minval must be <= maxval"):
        R.uniform(K42, (2,), minval=1.0, maxval=0.0)
    with pytest.raises(ValueError, match=r"random.bernoulli: p must be in \[0, 1\]"):
        R.bernoulli(K42, 1.5, (2,))
    with pytest.raises(ValueError, match=r"random.choice: cannot take 5 samples"):
        R.choice(K42, 3, (5,), replace=False)
    with pytest.raises(ValueError, match=r"random.choice: p must have shape \(3,\)"):
        R.choice(K42, 3, (2,), p=np.ones(4) / 4)
    with pytest.raises(ValueError, match=r"random.uniform: minval of shape \(3,\) does not "
                                         r"broadcast to shape \(2,\)"):
        R.uniform(K42, (2,), minval=np.zeros(3))
    with pytest.raises(TypeError, match=r"random.uniform: dtype must be a float dtype"):
        R.uniform(K42, (2,), np.int32)
    with pytest.raises(TypeError, match=r"random.bits: dtype must be uint32 or uint8"):
        R.bits(K42, (2,), np.int64)
    with pytest.raises(ValueError, match=r"random.categorical: shape \(3,\) must end with"):
        R.categorical(K42, np.zeros((2, 4)), shape=(3,))
    with pytest.raises(ValueError, match=r"vmap\(.*\): randomness must be one of"):
        fc.vmap(_noisy, randomness="sometimes")


def test_uint32_arithmetic_matches_numpy_on_every_backend():
    import functorch_core.numpy as fnp
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2 ** 32, 64, dtype=np.uint32) for _ in range(2))
    b[b == 0] = 1

    def f(x, y):
        return [x + y, x * y, x - y, x // y, x % y, x ^ y, x < y, x.astype(np.float32),
                x.astype(np.float64), (x * 2).astype(np.int64), fnp.asarray(-x, np.uint8)]
    want = f(a, b)
    for backend in ("cpu", "interpreter"):
        got = fc.jit(f, backend=backend)(a, b)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    assert fnp.uint32 is np.uint32
