"""Training-mode batch_norm: derivatives (check_grads, Hessians, vmap) and the float32
gradients' accuracy against a float64 reference, bounded by a rounding-error analysis.

The bounds (u = 2**-24, float32's unit roundoff; starred values are exact, computed here
in float64 from the same float32 inputs; n values per channel). batch_norm sums every
per-channel reduction in float64 (an error of at most n * 2**-53 of the sum of the
magnitudes, kept below as ``acc``), and subtracts the float64 mean ``mu`` as a float32
pair (hi, lo), then, step by step, with each float32 operation rounding once (1 + d),
|d| <= u, to first order:

* ``d = (x - hi) - lo``: two roundings, |d - d*| <= 2u |d*| + 2u^2 |mu|;
* ``var = mean(d * d)`` (float64 products): relative error <= 4u, so ``inv_std`` (float64,
  then rounded) is within 2u + u = 3u, and ``xhat = d * inv_std`` (one more rounding)
  within ``ex = 6u |xhat*| + 2u^2 |mu| inv*``;
* ``out = xhat * w + b``: |out - out*| <= |w| ex + u (2 |xhat* w| + |b|);
* ``db = sum(g)``: u |db*| (its rounding) + acc;
* ``dw = sum(xhat * g)``: each product rounds once, so u sum|xhat* g| + sum|g| ex +
  u |dw*| + acc;
* ``dx = r - mean(r) - xhat * mean(xhat * r)`` with ``r = g * (w * inv_std)``: ``r`` within
  5u |r*| (inv_std's 3u, two products); ``mean(r)`` within 5u mean|r*| + u |mean r*|;
  ``mean(xhat * r)`` within mean(ex |r*|) + 5u mean|xhat* r*| + u mean|xhat* r*| + u
  |mean(xhat* r*)| (7u m2 + mean(ex |r*|), m2 = mean|xhat* r*|); the product with xhat
  and the two subtractions round three more times. Summed:
  |dx - dx*| <= 7u |r*| + 7u mean|r*| + ex m2 + |xhat*| (8u m2 + mean(ex |r*|)) + acc.

The bounds are asserted as they stand (no fitted factor); the second-order terms are
below u^2 times the first-order ones and are covered by rounding every bound up by 1%.
"""

import numpy as np
import pytest

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core.nn import functional as F
from functorch_core.testing import check_grads

U = 2.0 ** -24
rng = np.random.default_rng(33)


def _bn(x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True)


def _exact(x, w, b, g, eps=1e-5):
    """Float64 values of the forward and of the gradients, and their error bounds."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    c, nd = x.shape[1], x.ndim
    axes, bs = (0,) + tuple(range(2, nd)), (1, c) + (1,) * (nd - 2)
    n = x.size // c
    w64 = np.ones(c) if w is None else w.astype(np.float64)
    b64 = np.zeros(c) if b is None else b.astype(np.float64)
    mu = x.mean(axes)
    d = x - mu.reshape(bs)
    inv = 1 / np.sqrt((d * d).mean(axes) + eps)
    xhat = d * inv.reshape(bs)
    out = xhat * w64.reshape(bs) + b64.reshape(bs)
    db, dw = g.sum(axes), (g * xhat).sum(axes)
    r = g * (w64 * inv).reshape(bs)
    m2 = np.abs(xhat * r).mean(axes, keepdims=True)
    dx = r - r.mean(axes, keepdims=True) - xhat * (xhat * r).mean(axes, keepdims=True)
    acc = n * 2.0 ** -53
    ex = 6 * U * np.abs(xhat) + 2 * U * U * np.abs(mu * inv).reshape(bs)
    bounds = {
        "out": np.abs(w64.reshape(bs)) * ex + U * (2 * np.abs(xhat * w64.reshape(bs))
                                                  + np.abs(b64.reshape(bs))),
        "db": U * np.abs(db) + acc * np.abs(g).sum(axes),
        "dw": (U * np.abs(xhat * g).sum(axes) + (np.abs(g) * ex).sum(axes) + U * np.abs(dw)
               + acc * np.abs(xhat * g).sum(axes)),
        "dx": (7 * U * np.abs(r) + 7 * U * np.abs(r).mean(axes, keepdims=True) + ex * m2
               + np.abs(xhat) * (8 * U * m2 + (ex * np.abs(r)).mean(axes, keepdims=True))
               + acc * (np.abs(r) + np.abs(xhat) * m2)),
    }
    return {"out": out, "dx": dx, "dw": dw, "db": db}, {k: v * 1.01 for k, v in bounds.items()}


def _ours(x, w, b, g, jit):
    def loss(x, w, b):
        return fnp.sum(_bn(x, w, b) * g)
    grad = fc.grad(loss, argnums=(0, 1, 2) if w is not None else (0,))
    if jit:
        grad, fwd = fc.jit(grad), fc.jit(_bn)
    else:
        fwd = _bn
    got = grad(x, w, b)
    res = {"out": fwd(x, w, b), "dx": got[0]}
    if w is not None:
        res["dw"], res["db"] = got[1], got[2]
    return res


SHAPES = [(64, 8), (32, 6, 10), (64, 4, 16, 16)]      # n = 64, 320, 16384 per channel


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("offset", [0.0, 100.0], ids=["centred", "mean100"])
@pytest.mark.parametrize("cotangent", ["normal", "ones"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_float32_values_and_gradients_within_the_rounding_bound(shape, cotangent, offset,
                                                                affine, jit):
    c = shape[1]
    x = (offset + rng.standard_normal(shape)).astype(np.float32)
    w = (1 + 0.5 * rng.standard_normal(c)).astype(np.float32) if affine else None
    b = rng.standard_normal(c).astype(np.float32) if affine else None
    # ones: loss = sum(out), whose dx (the gradient of a conv bias before BatchNorm) and
    # dw are exactly zero: what the mean's error shows up in most
    g = (np.ones(shape) if cotangent == "ones" else rng.standard_normal(shape)) \
        .astype(np.float32)
    exact, bound = _exact(x, w, b, g)
    got = _ours(x, w, b, g, jit)
    for k, v in got.items():
        assert v.dtype == np.float32, k
        err = np.abs(v.astype(np.float64) - exact[k])
        worst = np.unravel_index(np.argmax(err - bound[k]), err.shape)
        assert np.all(err <= bound[k]), (k, err[worst], bound[k][worst])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("shape", [(64, 16, 16, 16), (128, 32, 8)], ids=str)
def test_float32_gradients_within_1e5_of_float64_normalised(shape, jit):
    """Issue 33's criterion: max |g32 - g64| / max |g64| per gradient, x = 100 + randn,
    a normal cotangent (the composite's weight gradient was 1e-5 to 2e-5 off)."""
    c = shape[1]
    x = (100 + rng.standard_normal(shape)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(c)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    exact, _ = _exact(x, w, b, g)
    got = _ours(x, w, b, g, jit)
    for k in ("dx", "dw", "db"):
        rel = np.max(np.abs(got[k] - exact[k])) / np.max(np.abs(exact[k]))
        assert rel <= 1e-5, (k, rel)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 5), (3, 2, 3, 2)], ids=str)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_check_grads_order_2_forward_and_reverse(shape, affine):
    c = shape[1]
    x = 3 + 2 * rng.standard_normal(shape)
    if affine:
        w, b = 1 + 0.5 * rng.standard_normal(c), rng.standard_normal(c)
        check_grads(_bn, (x, w, b), order=2)
    else:
        check_grads(lambda x: _bn(x, None, None), (x,), order=2)


def test_hessian_matches_finite_differences_of_the_gradient():
    x = 1 + rng.standard_normal((4, 2, 3))
    w, b = 1 + 0.5 * rng.standard_normal(2), rng.standard_normal(2)
    t = rng.standard_normal(x.shape)

    def loss(x):
        return fnp.sum(fnp.tanh(_bn(x, w, b)) * t)
    h = fc.hessian(loss)(x).reshape(x.size, x.size)
    gr = fc.grad(loss)
    step = 1e-5
    fd = np.stack([(gr(x + step * e) - gr(x - step * e)).ravel() / (2 * step)
                   for e in np.eye(x.size).reshape((x.size,) + x.shape)], 1)
    np.testing.assert_allclose(h, fd, atol=1e-6)
    np.testing.assert_allclose(h, h.T, atol=1e-12)


def test_vmap_matches_a_loop_for_values_gradients_and_jvp():
    xs = 5 + rng.standard_normal((3, 6, 4, 2))
    w, b = 1 + 0.5 * rng.standard_normal(4), rng.standard_normal(4)
    g = rng.standard_normal(xs.shape[1:])

    def grad_x(x):
        return fc.grad(lambda x: fnp.sum(_bn(x, w, b) * g))(x)

    def tangent(x):
        return fc.jvp(lambda x: _bn(x, w, b), (x,), (g,))[1]
    for fn in (lambda x: _bn(x, w, b), grad_x, tangent):
        np.testing.assert_allclose(fc.vmap(fn)(xs), np.stack([fn(x) for x in xs]),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fc.jit(fc.vmap(fn))(xs), np.stack([fn(x) for x in xs]),
                                   rtol=1e-12, atol=1e-12)


def test_running_stats_update_and_dtypes_unchanged():
    x = (100 + rng.standard_normal((16, 3, 5))).astype(np.float32)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    out = F.batch_norm(x, rm, rv, training=True, momentum=0.25)
    x64 = x.astype(np.float64)
    mean, var = x64.mean((0, 2)), x64.var((0, 2), ddof=1)
    assert out.dtype == rm.dtype == rv.dtype == np.float32
    np.testing.assert_allclose(rm, 0.25 * mean, rtol=4 * U)
    np.testing.assert_allclose(rv, 0.75 + 0.25 * var, rtol=8 * U)
    assert F.batch_norm(x.astype(np.float16), None, None, training=True).dtype == np.float16
    assert F.batch_norm(x, None, None, np.ones(3), None, training=True).dtype == np.float64
    lists = F.batch_norm([[1.0, 2.0], [3.0, 6.0]], None, None, training=True)
    np.testing.assert_allclose(lists, [[-1.0, -1.0], [1.0, 1.0]], rtol=1e-5)
