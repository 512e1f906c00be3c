"""Small convolutions as one native loop nest (backends/llvm/tinyconv.py): every parameter
against the interpreter, gradients, the size and dtype limits, fixed bits."""

import numpy as np
from budget import share
from functorch_core.backends.llvm import runtime, tinyconv
from functorch_core.backends.planning.plan import Conv
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conv import _call, _draw_operands, _layout, conv_problems

import functorch_core as fc
from functorch_core import lax


def _executable(f, *args):
    return runtime.Executable(fc.make_graph(f)(*args))


def _native_convs(exe):
    """(native, all) counts of the executable's conv steps."""
    convs = [s for s in exe.plan.steps if isinstance(s, Conv)]
    return sum(id(s) in exe._fns for s in convs), len(convs)


def _check_convs(f, x, w, native, tol):
    """``f(x, w)``, one conv, compiles with ``native`` native conv steps (0 or 1) and
    matches the eager result within ``tol``."""
    exe = _executable(f, x, w)
    assert _native_convs(exe) == (native, 1)
    np.testing.assert_allclose(exe([x, w])[0], f(x, w), rtol=tol, atol=tol)


@given(conv_problems(), st.sampled_from([np.float32, np.float64]),
       st.integers(0, 2 ** 32 - 1))
def test_small_convs_run_natively_and_match_the_interpreter(p, dtype, seed):
    x, w = _draw_operands(p, dtype, seed)
    lhs, rhs = _layout(x, p["perms"][0]), _layout(w, p["perms"][1])

    def f(lhs, rhs):
        return lax.conv_general_dilated(
            lhs, rhs, p["strides"], p["pads"], p["lhs_dil"], p["rhs_dil"], tuple(p["perms"]),
            feature_group_count=p["groups"][0], batch_group_count=p["groups"][1])
    exe = _executable(f, lhs, rhs)
    assert _native_convs(exe) == (1, 1)
    got, = exe([np.ascontiguousarray(lhs), np.ascontiguousarray(rhs)])
    tol = 1e-12 if dtype == np.float64 else 1e-5
    want = f(lhs, rhs)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@settings(max_examples=share(3))     # each example compiles three new convs (~2 s)
@given(conv_problems(max_spatial=2), st.integers(0, 2 ** 32 - 1))
def test_the_gradient_convs_run_natively_and_match_the_interpreter(p, seed):
    x, w = _draw_operands(p, np.float64, seed)
    ct = np.random.default_rng(seed).uniform(-1, 1, _call(p, x, w).shape)

    def loss(x, w):
        return (_call(p, x, w) * ct).sum()
    g = fc.grad(loss, argnums=(0, 1))
    exe = _executable(g, x, w)
    assert _native_convs(exe) == (3, 3)     # the forward, the input and kernel gradients
    got = fc.jit(g, backend="cpu")(x, w)
    for a, b in zip(got, g(x, w), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


def _digits_step_convs(n=64):
    """cnn_digits' conv (1 -> 16 features, 3x3, padding 1, 8x8 images) and its kernel
    gradient, float32, with operands."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    ct = rng.standard_normal((n, 16, 8, 8)).astype(np.float32)

    def fwd(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)])

    def kernel_grad(x, w, ct):
        return fc.grad(lambda w: (fwd(x, w) * ct).sum())(w)
    return fwd, kernel_grad, (x, w, ct)


def test_the_cnn_digits_convs_run_natively_and_match_the_interpreter():
    fwd, kernel_grad, (x, w, ct) = _digits_step_convs()
    _check_convs(fwd, x, w, 1, 1e-5)
    exe = _executable(kernel_grad, x, w, ct)
    assert _native_convs(exe) == (2, 2)     # the (unused) forward conv stays in the graph
    # a sum of 4096 products of unit normals: float32 rounding well under 1e-3
    np.testing.assert_allclose(exe([x, w, ct])[0], kernel_grad(x, w, ct), rtol=1e-4,
                               atol=1e-3)


def test_the_bits_do_not_depend_on_the_thread_count():
    fwd, kernel_grad, (x, w, ct) = _digits_step_convs()
    before = runtime.get_num_threads()
    results = []
    try:
        for threads in (1, 4):
            runtime.set_num_threads(threads)
            results.append((_executable(fwd, x, w)([x, w])[0],
                            _executable(kernel_grad, x, w, ct)([x, w, ct])[0]))
    finally:
        runtime.set_num_threads(before)
    for a, b in zip(*results, strict=True):
        assert a.tobytes() == b.tobytes()


def test_big_complex_and_half_convs_take_the_gemm_modes(monkeypatch):
    fwd, _, (x, w, _) = _digits_step_convs()
    for xs, ws in [(x.astype(np.complex64), w.astype(np.complex64)),
                   (x.astype(np.float16), w.astype(np.float16))]:
        exe = _executable(fwd, xs, ws)
        assert _native_convs(exe)[0] == 0       # float16 runs in the interpreter
        np.testing.assert_allclose(exe([xs, ws])[0], fwd(xs, ws), rtol=2e-2, atol=2e-2)
    monkeypatch.setattr(tinyconv, "TINY_MAX_MACS", 64 * 16 * 64 * 9 - 1)
    _check_convs(fwd, x, w, 0, 1e-5)


def test_a_long_accumulator_row_takes_the_gemm_modes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, tinyconv.TINY_MAX_ROW + 2)).astype(np.float32)
    w = rng.standard_normal((2, 1, 3)).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1,), [(1, 1)])
    _check_convs(f, x, w, 0, 1e-5)
    x = x[..., :tinyconv.TINY_MAX_ROW]
    _check_convs(f, x, w, 1, 1e-5)


def test_a_padded_input_copy_past_the_stack_bound_takes_the_gemm_modes():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 8, 32, 32)).astype(np.float32)     # 9.4M multiply-adds
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)

    def padded(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)])

    def valid(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "VALID")
    assert 8 * 8 * 34 * 34 * 4 > tinyconv.TINY_MAX_SCRATCH >= 6 * 8 * 34 * 34 * 4
    for f, x_, native in ((padded, x, 0), (valid, x, 1), (padded, x[:6], 1)):
        _check_convs(f, x_, w, native, 1e-4)


def test_a_native_conv_is_named_so_and_only_a_small_one_joins_the_native_entry():
    from functorch_core.profiler import profile
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4, 8, 8)).astype(np.float32)      # 2.4M multiply-adds
    w = rng.standard_normal((16, 4, 3, 3)).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)])
    assert runtime.GEMM_ENTRY_MAX_MACS < 64 * 4 * 16 * 64 * 9 <= tinyconv.TINY_MAX_MACS
    exe = _executable(f, x, w)
    assert _native_convs(exe) == (1, 1) and exe.entry is None     # holds no GIL that long
    g = fc.jit(f, backend="cpu")
    g(x, w)
    with profile() as prof:
        got = g(x, w)
    assert "conv_general_dilated (native)" in prof.key_averages().table()
    np.testing.assert_allclose(got, f(x, w), rtol=1e-4, atol=1e-4)
    small = x[:, :1], w[:, :1]
    exe = _executable(f, *small)
    assert _native_convs(exe) == (1, 1) and exe.entry is not None
