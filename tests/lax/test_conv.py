"""conv_general_dilated: a direct loop reference, derivatives, vmap, the cpu backend, errors."""

import itertools

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import lax
from functorch_core.testing import check_grads

DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float16: 2e-2, np.float32: 1e-4, np.float64: 1e-11, np.complex64: 1e-4,
       np.complex128: 1e-11}


def reference_conv(x, w, strides, pads, lhs_dil, rhs_dil, groups, batch_groups):
    """Canonical layouts (N, C, *S) and (O, I, *K): loops over the output positions."""
    n, c, *sizes = x.shape
    o, i, *kernel = w.shape
    dilated = [(d - 1) * ld + 1 for d, ld in zip(sizes, lhs_dil)]
    xd = np.zeros((n, c, *dilated), np.complex128)
    xd[(slice(None), slice(None), *(slice(None, None, ld) for ld in lhs_dil))] = x
    padded = [d + lo + hi for d, (lo, hi) in zip(dilated, pads)]
    xp = np.zeros((n, c, *padded), np.complex128)
    for q in itertools.product(*map(range, padded)):
        src = [qq - lo for qq, (lo, _) in zip(q, pads)]
        if all(0 <= s < d for s, d in zip(src, dilated)):
            xp[(slice(None), slice(None), *q)] = xd[(slice(None), slice(None), *src)]
    span = [(k - 1) * rd + 1 for k, rd in zip(kernel, rhs_dil)]
    out_sp = [(p - s_) // st + 1 for p, s_, st in zip(padded, span, strides)]
    nb = n // batch_groups
    out = np.zeros((nb, o, *out_sp), np.complex128)
    for b, f in itertools.product(range(nb), range(o)):
        if batch_groups > 1:
            img, chans = (f // (o // batch_groups)) * nb + b, slice(0, c)
        else:
            g = f // (o // groups)
            img, chans = b, slice(g * i, (g + 1) * i)
        for pos in itertools.product(*map(range, out_sp)):
            window = tuple(slice(p * st, p * st + (k - 1) * rd + 1, rd)
                           for p, st, k, rd in zip(pos, strides, kernel, rhs_dil))
            out[(b, f, *pos)] = np.sum(xp[(img, chans, *window)] * w[f])
    return out


@st.composite
def conv_problems(draw, max_spatial=3):
    nsp = draw(st.integers(1, max_spatial))
    small = 3 if nsp == 3 else 5
    groups = draw(st.sampled_from([(1, 1), (2, 1), (1, 2), (3, 1)]))
    g = max(groups)
    n = draw(st.integers(1, 2)) * groups[1]
    i = draw(st.integers(1, 2))
    c = i * groups[0]
    o = draw(st.integers(1, 2)) * g
    sizes = [draw(st.integers(1, small)) for _ in range(nsp)]
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 2)) for _ in range(nsp)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    pads = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)]
    for d, ld, (lo, hi), k, rd in zip(sizes, lhs_dil, pads, kernel, rhs_dil):
        assume((d - 1) * ld + 1 + lo + hi >= (k - 1) * rd + 1)
    perms = [tuple(draw(st.permutations(range(nsp + 2)))) for _ in range(3)]
    return dict(n=n, c=c, o=o, i=i, sizes=sizes, kernel=kernel, strides=strides,
                lhs_dil=lhs_dil, rhs_dil=rhs_dil, pads=pads, groups=groups, perms=perms)


def _layout(canonical, spec):
    """The array whose axes ``spec`` (batch/out, feature/in, spatial...) hold ``canonical``."""
    return np.transpose(canonical, np.argsort(spec))


def _draw_operands(p, dtype, seed):
    rng = np.random.default_rng(seed)

    def sample(shape):
        v = rng.uniform(-1, 1, shape)
        if np.dtype(dtype).kind == "c":
            v = v + 1j * rng.uniform(-1, 1, shape)
        return v.astype(dtype)
    return sample((p["n"], p["c"], *p["sizes"])), sample((p["o"], p["i"], *p["kernel"]))


def _call(p, x, w):
    return lax.conv_general_dilated(
        _layout(x, p["perms"][0]), _layout(w, p["perms"][1]), p["strides"], p["pads"],
        p["lhs_dil"], p["rhs_dil"], tuple(p["perms"]), feature_group_count=p["groups"][0],
        batch_group_count=p["groups"][1])


@given(conv_problems(), st.sampled_from(DTYPES), st.integers(0, 2 ** 32 - 1))
def test_conv_matches_a_loop_reference(p, dtype, seed):
    x, w = _draw_operands(p, dtype, seed)
    got = _call(p, x, w)
    want = reference_conv(x.astype(np.complex128), w.astype(np.complex128), p["strides"],
                          p["pads"], p["lhs_dil"], p["rhs_dil"], *p["groups"])
    assert got.dtype == dtype
    want = _layout(want if np.dtype(dtype).kind == "c" else want.real, p["perms"][2])
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * 4)


@given(conv_problems(max_spatial=2), st.sampled_from([np.float32, np.float64,
                                                      np.complex64]),
       st.integers(0, 2 ** 32 - 1))
def test_cpu_backend_matches_the_interpreter(p, dtype, seed):
    x, w = _draw_operands(p, dtype, seed)

    def f(x, w):
        return _call(p, x, w)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(fc.jit(f, backend="cpu")(x, w), f(x, w), rtol=tol, atol=tol)


GRAD_CASES = [
    dict(x=(2, 4, 6, 5), w=(6, 2, 3, 2), strides=(2, 1), pads=((1, 0), (0, 2)),
         lhs_dil=(1, 2), rhs_dil=(2, 1), groups=(2, 1)),
    dict(x=(4, 2, 6, 5), w=(6, 2, 3, 2), strides=(1, 2), pads=((-1, 1), (1, 1)),
         lhs_dil=(2, 1), rhs_dil=(1, 1), groups=(1, 2)),
    dict(x=(2, 3, 7), w=(2, 3, 3), strides=(3,), pads=((2, 1),), lhs_dil=(1,),
         rhs_dil=(2,), groups=(1, 1)),
    dict(x=(1, 2, 4, 3, 3), w=(2, 2, 2, 2, 2), strides=(1, 2, 1), pads=((0, 1),) * 3,
         lhs_dil=(1, 1, 1), rhs_dil=(1, 1, 1), groups=(1, 1)),
]


def _case_fn(c):
    def f(x, w):
        return lax.conv_general_dilated(x, w, c["strides"], c["pads"], c["lhs_dil"],
                                        c["rhs_dil"], feature_group_count=c["groups"][0],
                                        batch_group_count=c["groups"][1])
    return f


@pytest.mark.parametrize("case", GRAD_CASES)
def test_check_grads_order_two_both_modes(case):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=case["x"]), rng.normal(size=case["w"])
    check_grads(_case_fn(case), (x, w), order=2, modes=("fwd", "rev"))


def test_check_grads_complex():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 2, 5)) + 1j * rng.normal(size=(2, 2, 5))
    w = rng.normal(size=(3, 2, 2)) + 1j * rng.normal(size=(3, 2, 2))
    check_grads(lambda x, w: lax.conv(x, w, (2,), "SAME"), (x, w), order=2)


@pytest.mark.parametrize("case", GRAD_CASES[:3])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1), (None, 3)])
def test_vmap_matches_loop_and_stack(case, in_axes):
    rng = np.random.default_rng(2)
    f = _case_fn(case)
    size = 3
    args = []
    for shape, ax in zip((case["x"], case["w"]), in_axes):
        if ax is None:
            args.append(rng.normal(size=shape))
        else:
            args.append(rng.normal(size=shape[:ax] + (size,) + shape[ax:]))
    want = np.stack([f(*[a if ax is None else np.take(a, b, ax)
                         for a, ax in zip(args, in_axes)]) for b in range(size)])
    np.testing.assert_allclose(fc.vmap(f, in_axes=in_axes)(*args), want, rtol=1e-12,
                               atol=1e-12)


def test_vmap_of_grad_runs_on_the_cpu_backend():
    rng = np.random.default_rng(3)
    c = GRAD_CASES[0]
    f = _case_fn(c)
    xs, w = rng.normal(size=(3, *c["x"])), rng.normal(size=c["w"])

    def loss(x, w):
        return (f(x, w) ** 2).sum()
    g = fc.vmap(fc.grad(loss, argnums=1), in_axes=(0, None))
    want = np.stack([fc.grad(loss, argnums=1)(x, w) for x in xs])
    np.testing.assert_allclose(fc.jit(g, backend="cpu")(xs, w), want, rtol=1e-10)


def test_string_dimension_numbers_and_same_padding():
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(2, 7, 6, 3)), rng.normal(size=(3, 2, 3, 4))   # NHWC, HWIO
    got = lax.conv_general_dilated(x, w, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO",
                                                                            "NHWC"))
    want = lax.conv_general_dilated(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (2, 1),
                                    ((1, 1), (0, 1)))
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-12)


def test_conv_transpose_with_transpose_kernel_is_the_input_gradient():
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(2, 8, 3)), rng.normal(size=(3, 3, 4))          # NHC, HIO
    dn = ("NHC", "HIO", "NHC")

    def f(x):
        return lax.conv_general_dilated(x, w, (2,), ((1, 1),), dimension_numbers=dn)
    y, vjp = fc.vjp(f, x)
    ct = rng.normal(size=y.shape)
    got = lax.conv_transpose(ct, w, (2,), ((1, 2),), dimension_numbers=dn,
                             transpose_kernel=True)
    np.testing.assert_allclose(got, vjp(ct)[0], rtol=1e-12)
    assert lax.conv_transpose(np.ones((1, 3, 1)), np.ones((2, 1, 1)), (2,), "VALID").shape \
        == (1, 6, 1)


@pytest.mark.parametrize("la,lv", [(5, 3), (3, 5), (4, 4), (1, 3), (6, 1), (2, 7)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fnp_convolve_and_correlate_match_numpy(la, lv, mode):
    rng = np.random.default_rng(la * 10 + lv)
    a = rng.normal(size=la) + 1j * rng.normal(size=la)
    v = rng.normal(size=lv) + 1j * rng.normal(size=lv)
    np.testing.assert_allclose(fnp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-12)
    np.testing.assert_allclose(fnp.correlate(a, v, mode), np.correlate(a, v, mode),
                               rtol=1e-12)
    ai, vi = np.arange(la), np.arange(1, lv + 1)
    np.testing.assert_array_equal(fnp.convolve(ai, vi, mode), np.convolve(ai, vi, mode))
    # unmodified NumPy code traces through __array_function__
    got = fc.jit(lambda a, v: np.correlate(a, v, mode), backend="cpu")(a.real, v.real)
    np.testing.assert_allclose(got, np.correlate(a.real, v.real, mode), rtol=1e-12)


def test_errors_name_the_function_the_argument_and_the_shapes():
    x, w = np.ones((1, 4, 3, 3)), np.ones((2, 2, 5, 1))
    with pytest.raises(ValueError, match=r"conv_general_dilated: kernel.*\(5, 1\).*larger "
                                         r"than the padded input \(3, 3\)"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2)
    with pytest.raises(ValueError, match=r"lhs feature dimension 4 .*\(1, 4, 3, 3\).*rhs "
                                         r"input feature dimension 2 .*feature_group_count 3"):
        lax.conv_general_dilated(x, np.ones((3, 2, 1, 1)), (1, 1), "VALID",
                                 feature_group_count=3)
    with pytest.raises(ValueError, match=r"batch dimension 1 .*not divisible by "
                                         r"batch_group_count 2"):
        lax.conv_general_dilated(x, np.ones((2, 4, 1, 1)), (1, 1), "VALID",
                                 batch_group_count=2)
    with pytest.raises(ValueError, match=r"dimension_numbers .*'NHWC'.*rank 4"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                 dimension_numbers=("NHWC", "HWIO", "NHXC"))
    with pytest.raises(ValueError, match=r"window_strides \(1,\) should have 2 entries"):
        lax.conv_general_dilated(x, w, (1,), "VALID")


def test_cpu_backend_edge_shapes():
    rng = np.random.default_rng(6)
    cases = [((3, 4), (5, 4), ()),                  # no spatial dimension: a matmul
             ((2, 0, 5), (3, 0, 2), (1,)),          # no input features: zeros
             ((0, 2, 5), (3, 2, 2), (1,))]          # an empty batch
    for xs, ws, strides in cases:
        x, w = rng.normal(size=xs), rng.normal(size=ws)

        def f(x, w, strides=strides):
            return lax.conv_general_dilated(x, w, strides, "VALID")
        want = f(x, w)
        np.testing.assert_allclose(fc.jit(f, backend="cpu")(x, w), want, rtol=1e-12)
    np.testing.assert_allclose(want.shape, (0, 3, 4))
