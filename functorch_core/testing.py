"""Testing helpers: ``check_grads`` checks derivatives against finite differences."""

from __future__ import annotations

import numpy as np

from functorch_core.ir import aval_of, dtypes
from functorch_core.ir.dtypes import dtype_kind
from functorch_core.ir.pytree import tree_flatten, tree_unflatten

from .transforms.autodiff import jvp, vjp

_DEFAULT_TOL = {dtypes.bfloat16: 1e-1, np.dtype(np.float16): 5e-2, np.dtype(np.float32): 2e-2,
                np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 2e-2,
                np.dtype(np.complex128): 1e-5}
_DEFAULT_EPS = {dtypes.bfloat16: 1.25e-1, np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-2,
                np.dtype(np.float64): 1e-4, np.dtype(np.complex64): 1e-2,
                np.dtype(np.complex128): 1e-4}


def _inexact(x) -> bool:
    return dtype_kind(aval_of(x).dtype) in "fc"


def _lowest(leaves, table):
    """The loosest default among the inexact leaves' dtypes."""
    values = [table[aval_of(x).dtype] for x in leaves if _inexact(x)]
    return max(values) if values else table[np.dtype(np.float64)]


def _random_like(rng, x):
    av = aval_of(x)
    if dtype_kind(av.dtype) not in "fc":
        return np.zeros(av.shape, av.dtype)
    v = rng.standard_normal(av.shape)
    if av.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(av.shape)
    return np.asarray(v, dtype=av.dtype)


def _axpy(a, xs, ys):
    """``xs + a * ys`` leafwise, leaving integer leaves alone."""
    return [x + np.asarray(a * y).astype(aval_of(x).dtype) if _inexact(x) else x
            for x, y in zip(xs, ys, strict=True)]


def _inner(xs, ys) -> float:
    """``Re(sum(x * y))`` over the inexact leaves: the pairing reverse mode transposes under."""
    return float(sum(np.real(np.sum(np.asarray(x, np.complex128) * np.asarray(y, np.complex128)))
                     for x, y in zip(xs, ys, strict=True) if _inexact(x)))


def _assert_close(what, got, want, atol, rtol, slack=None):
    """Leafwise closeness; ``slack`` adds a per-leaf allowance (finite-difference roundoff)."""
    slack = slack or [0.0] * len(want)
    for k, (g, w, extra) in enumerate(zip(got, want, slack, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if not _inexact(w):
            continue
        if g.shape != w.shape or not np.all(np.isclose(g, w, atol=0, rtol=rtol, equal_nan=True)
                                            | (np.abs(g - w) <= atol + extra)):
            err = np.max(np.abs(g - w)) if g.shape == w.shape else "shape mismatch"
            raise AssertionError(f"check_grads: {what}, output leaf {k}: max abs difference "
                                 f"{err} exceeds atol={atol}, rtol={rtol}\n"
                                 f"  got:      {g!r}\n  expected: {w!r}")


def check_grads(f, args, order=2, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check the derivatives of ``f`` at ``args`` numerically, up to ``order``.

    Forward mode (``'fwd'``): ``jvp`` along a random direction against central
    finite differences. Reverse mode (``'rev'``): ``vjp`` against ``jvp`` through
    the identity ``<u, J v> == <J^T u, v>`` for random ``u`` and ``v``. Each
    order above 1 repeats the checks on the derivative functions themselves.

    Args:
        f: the function; its arguments and outputs are arrays or pytrees of them.
        args (tuple): the point at which to check.
        order (int, default ``2``): the highest derivative order to check.
        modes (tuple of str, default ``('fwd', 'rev')``): which modes to check.
        atol (float, default ``None``): absolute tolerance; ``None`` picks one from
            the inputs' dtypes (1e-5 for float64, 2e-2 for float32).
        rtol (float, default ``None``): relative tolerance, defaulting likewise.
        eps (float, default ``None``): the finite-difference step (1e-4 for
            float64, 1e-2 for float32).

    Raises:
        AssertionError: naming the check, the order and the difference found.

    Example::

        >>> check_grads(np.sin, (np.array([0.5, 1.0]),), order=2)
    """
    args = tuple(args)
    leaves, _ = tree_flatten(args)
    atol = _lowest(leaves, _DEFAULT_TOL) if atol is None else atol
    rtol = _lowest(leaves, _DEFAULT_TOL) if rtol is None else rtol
    eps = _lowest(leaves, _DEFAULT_EPS) if eps is None else eps
    rng = np.random.default_rng(0)
    _check(f, args, order, tuple(modes), atol, rtol, eps, rng)


def _check(f, args, order, modes, atol, rtol, eps, rng):
    leaves, in_tree = tree_flatten(args)
    v = [_random_like(rng, x) for x in leaves]
    v_tree = tree_unflatten(in_tree, v)
    if "fwd" in modes:
        _check_jvp(f, args, leaves, in_tree, v, v_tree, order, atol, rtol, eps)
    if "rev" in modes:
        _check_vjp(f, args, v, v_tree, rng, order, atol, rtol)
    if order > 1:
        if "fwd" in modes:
            _check(lambda *a: jvp(f, a, tuple(v_tree))[1], args, order - 1, ("fwd",),
                   atol, rtol, eps, rng)
        if "rev" in modes:
            out = f(*args)
            u = tree_unflatten(tree_flatten(out)[1],
                               [_random_like(rng, o) for o in tree_flatten(out)[0]])
            _check(lambda *a: vjp(f, *a)[1](u), args, order - 1, ("rev",),
                   atol, rtol, eps, rng)


def _check_jvp(f, args, leaves, in_tree, v, v_tree, order, atol, rtol, eps):
    out, tout = jvp(f, args, tuple(v_tree))
    hi = f(*tree_unflatten(in_tree, _axpy(eps, leaves, v)))
    lo = f(*tree_unflatten(in_tree, _axpy(-eps, leaves, v)))
    fd = [(np.asarray(h, np.complex128) - np.asarray(lo_, np.complex128)) / (2 * eps)
          for h, lo_ in zip(tree_flatten(hi)[0], tree_flatten(lo)[0], strict=True)]
    fd = [np.real(d) if np.asarray(o).dtype.kind != "c" else d
          for d, o in zip(fd, tree_flatten(out)[0], strict=True)]
    # roundoff of the difference quotient: a few ulps of the values, divided by the step
    slack = [8 * np.finfo(np.asarray(h).dtype).eps * (np.abs(h) + np.abs(lo_)) / (2 * eps)
             if _inexact(h) else 0.0
             for h, lo_ in zip(tree_flatten(hi)[0], tree_flatten(lo)[0], strict=True)]
    tl = tree_flatten(tout)[0]
    _assert_close(f"jvp against finite differences (order {order} remaining)",
                  [np.asarray(t, np.complex128) for t in tl],
                  [np.asarray(d, np.complex128) for d in fd], atol, rtol, slack)


def _check_vjp(f, args, v, v_tree, rng, order, atol, rtol):
    out, vjp_fn = vjp(f, *args)
    out_leaves, out_tree = tree_flatten(out)
    u = [_random_like(rng, o) for o in out_leaves]
    cts = tree_flatten(vjp_fn(tree_unflatten(out_tree, u)))[0]
    _, tout = jvp(f, args, tuple(v_tree))
    lhs = _inner(u, tree_flatten(tout)[0])
    rhs = _inner(cts, v)
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= atol + rtol * scale:
        raise AssertionError(f"check_grads: vjp disagrees with jvp (order {order} remaining): "
                             f"<u, J v> = {lhs!r} but <J^T u, v> = {rhs!r} "
                             f"(atol={atol}, rtol={rtol})")


def ulp_distance(a, b):
    """How many representable floating-point values lie between ``a`` and ``b``,
    elementwise: 0 for equal values (``+0`` and ``-0`` too) and for two NaNs, ``inf`` where
    only one is NaN.

    Args:
        a (array_like): float16, float32 or float64 values.
        b (array_like): values of ``a``'s dtype, broadcastable with ``a``.

    Returns:
        A float64 array of the distances.

    Example::

        >>> ulp_distance(np.float32(1), np.nextafter(np.float32(1), np.float32(2)))
        array(1.)
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or dtype_kind(a.dtype) != "f":
        raise TypeError(f"ulp_distance: a and b must be floats of one dtype, got {a.dtype} "
                        f"and {b.dtype}")
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    low = int(np.iinfo(bits).min)

    def key(v):      # the values' order as integers, -0 and +0 both 0
        i = v.view(bits).astype(object)
        return np.where(i < 0, low - i, i)

    d = np.asarray(np.abs(key(a) - key(b)), dtype=np.float64)
    return np.where(np.isnan(a) & np.isnan(b), 0.0,
                    np.where(np.isnan(a) ^ np.isnan(b), np.inf, d))
