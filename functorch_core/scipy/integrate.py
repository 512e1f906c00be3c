"""A subset of ``scipy.integrate``, traceable and differentiable: the sampled-data rules
``trapezoid``, ``cumulative_trapezoid`` and ``simpson``, and ``odeint`` (adaptive
Dormand-Prince, as ``jax.experimental.ode.odeint``) whose reverse-mode derivative is the
adjoint method; ``solve_ivp`` (RK45 with a static ``t_eval``) runs on it.
"""

from __future__ import annotations

import math

import numpy as np

from functorch_core.ir.dtypes import dtype_kind

from .. import numpy as fnp
from ..lax import scan, while_loop
from ..numpy.internal import array_operand, aval, cast, to_result
from ..transforms import custom_vjp, vjp

__all__ = ["trapezoid", "cumulative_trapezoid", "simpson", "odeint", "solve_ivp",
           "OdeSolution"]


def _axis(name, y, axis):
    nd = aval(y).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"{name}: axis {axis} is out of bounds for y of shape {aval(y).shape}")
    return axis % nd


def _along(nd, axis, sl):
    return tuple(sl if i == axis else slice(None) for i in range(nd))


def _spacing(name, y, x, dx, axis, broadcast=True):
    """The sample spacings along ``axis``, broadcastable against ``y``'s differences."""
    nd = aval(y).ndim
    if x is None:
        return dx
    x = array_operand(x)
    xs, ys = aval(x).shape, aval(y).shape
    if broadcast and len(xs) > 1:
        try:
            np.broadcast_shapes(xs, ys)
        except ValueError:
            raise ValueError(f"{name}: x of shape {xs} does not broadcast to y of shape "
                             f"{ys}") from None
        x = fnp.broadcast_to(x, ys)
        xs = ys
    if len(xs) == 1:
        if xs[0] != ys[axis]:
            raise ValueError(f"{name}: x of shape {xs} does not match y of shape {ys} along "
                             f"axis {axis}")
        return fnp.reshape(fnp.diff(x), tuple(-1 if i == axis else 1 for i in range(nd)))
    if xs != ys:
        raise ValueError(f"{name}: x must be 1-D or shaped as y, got x {xs} and y {ys}")
    return fnp.diff(x, axis=axis)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``scipy.integrate.trapezoid``: the integral of samples by the trapezoidal rule.

    Args:
        y: the samples.
        x (array, default ``None``): the sample points, 1-D along ``axis`` or broadcastable
            to ``y``; ``None`` spaces them ``dx`` apart.
        dx (scalar, default ``1.0``): the spacing when ``x`` is ``None``.
        axis (int, default ``-1``): the axis to integrate along.

    Returns:
        The integral in ``y``'s floating dtype (float64 for integer ``y``), as SciPy.

    Example::

        >>> float(trapezoid(np.array([1.0, 2.0, 3.0])))
        4.0
    """
    y = array_operand(y)
    ax = _axis("trapezoid", y, axis)
    d = _spacing("trapezoid", y, x, dx, ax, broadcast=True)
    dt = _float_of(aval(y).dtype)
    nd = aval(y).ndim
    pair = fnp.add(y[_along(nd, ax, slice(1, None))], y[_along(nd, ax, slice(None, -1))])
    return to_result(fnp.sum(fnp.multiply(d, pair) / 2.0, axis=ax, dtype=dt))


def _float_of(dt):
    """SciPy's result dtype for samples of dtype ``dt``: itself if inexact, else float64."""
    return dt if dtype_kind(dt) in "fc" else np.dtype(np.float64)


def cumulative_trapezoid(y, x=None, dx=1.0, axis=-1, initial=None):
    """``scipy.integrate.cumulative_trapezoid``: the running trapezoidal integral.

    Args:
        y: the samples.
        x (array, default ``None``): the sample points, as in :func:`trapezoid`.
        dx (scalar, default ``1.0``): the spacing when ``x`` is ``None``.
        axis (int, default ``-1``): the axis to integrate along.
        initial (scalar, default ``None``): if given, prepended (so the result has ``y``'s
            shape); SciPy accepts only ``0`` or ``None``.

    Example::

        >>> cumulative_trapezoid(np.array([1.0, 2.0, 3.0]), initial=0)
        array([0. , 1.5, 4. ])
    """
    name = "cumulative_trapezoid"
    y = array_operand(y)
    ax = _axis(name, y, axis)
    if initial is not None and not (np.ndim(initial) == 0 and initial == 0):
        raise ValueError(f"{name}: `initial` must be `None` or `0`, got {initial!r}")
    d = _spacing(name, y, x, dx, ax)
    nd = aval(y).ndim
    pair = fnp.add(y[_along(nd, ax, slice(1, None))], y[_along(nd, ax, slice(None, -1))])
    out = fnp.cumsum(fnp.true_divide(fnp.multiply(d, pair), 2.0), axis=ax)
    if initial is not None:
        shape = list(aval(array_operand(out)).shape)
        shape[ax] = 1
        out = fnp.concatenate([fnp.zeros(tuple(shape), aval(array_operand(out)).dtype), out],
                              axis=ax)
    return to_result(out)


def _simpson_pairs(y, h, axis, n):
    """Composite Simpson over the first ``n`` (odd) samples; ``h`` spacings or a scalar."""
    nd = aval(y).ndim

    def take(start, sl_step=2, stop=None):
        return y[_along(nd, axis, slice(start, stop, sl_step))]
    y0, y1, y2 = take(0, 2, n - 2), take(1, 2, n - 1), take(2, 2, n)
    if not isinstance(h, tuple):
        return fnp.sum(fnp.multiply(h / 3.0, y0 + 4.0 * y1 + y2), axis=axis)
    h0, h1 = h
    hsum, hprod, ratio = h0 + h1, h0 * h1, h0 / h1
    term = hsum / 6.0 * (y0 * (2.0 - 1.0 / ratio) + y1 * (hsum * hsum / hprod)
                         + y2 * (2.0 - ratio))
    return fnp.sum(term, axis=axis)


def simpson(y, *, x=None, dx=1.0, axis=-1):
    """``scipy.integrate.simpson``: the integral of samples by the composite Simpson rule;
    for an even number of samples the last interval uses Cartwright's correction, as SciPy
    (since 1.11).

    Args:
        y: the samples.
        x (array, default ``None``): the sample points, 1-D along ``axis`` or broadcastable to
            ``y``; ``None`` spaces them ``dx`` apart.
        dx (scalar, default ``1.0``): the spacing when ``x`` is ``None``.
        axis (int, default ``-1``): the axis to integrate along.

    Example::

        >>> float(simpson(np.array([0.0, 1.0, 4.0]), dx=1.0))
        2.6666666666666665
    """
    name = "simpson"
    y = array_operand(y)
    if aval(y).dtype.kind in "biu":
        y = cast(y, np.float64)
    ax = _axis(name, y, axis)
    nd = aval(y).ndim
    n = aval(y).shape[ax]
    d = _spacing(name, y, x, dx, ax)
    if n < 3:
        return fnp.trapezoid(y, x=x, dx=dx, axis=ax)

    def h(start, stop):
        return d if x is None else d[_along(nd, ax, slice(start, stop))]
    odd_n = n if n % 2 else n - 1
    if x is None:
        spacing = dx
    else:
        spacing = (h(0, odd_n - 1)[_along(nd, ax, slice(0, None, 2))],
                   h(0, odd_n - 1)[_along(nd, ax, slice(1, None, 2))])
    total = _simpson_pairs(y, spacing, ax, odd_n)
    if n % 2 == 0:
        def last(k):
            return fnp.squeeze(y[_along(nd, ax, slice(n - k, n - k + 1))], axis=ax)
        if x is None:
            h0 = h1 = dx
        else:
            h0 = fnp.squeeze(h(n - 3, n - 2), axis=ax)
            h1 = fnp.squeeze(h(n - 2, n - 1), axis=ax)
        alpha = (2 * h1 ** 2 + 3 * h0 * h1) / (6 * (h0 + h1))
        beta = (h1 ** 2 + 3 * h1 * h0) / (6 * h0)
        eta = h1 ** 3 / (6 * h0 * (h0 + h1))
        total = total + alpha * last(1) + beta * last(2) - eta * last(3)
    return to_result(total)


# --- odeint: Dormand-Prince 5(4) with the adjoint method for reverse mode ---------------------

_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0)
_A = ((),
      (1 / 5,),
      (3 / 40, 9 / 40),
      (44 / 45, -56 / 15, 32 / 9),
      (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
      (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656))
_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84)
_E = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


def _rms(x):
    return fnp.sqrt(fnp.mean(fnp.square(fnp.abs(x))))


def _dopri_step(f, y, f0, t, h):
    ks = [f0]
    for c, row in zip(_C[1:], _A[1:]):
        yi = y + h * sum(a * k for a, k in zip(row, ks) if a != 0.0)
        ks.append(f(yi, t + c * h))
    y1 = y + h * sum(b * k for b, k in zip(_B, ks) if b != 0.0)
    f1 = f(y1, t + h)
    ks.append(f1)
    err = h * sum(e * k for e, k in zip(_E, ks) if e != 0.0)
    return y1, f1, err


def _initial_step(f, y0, f0, t0, rtol, atol):
    """Hairer, Nørsett and Wanner's starting step for a method of order 5 (the rule SciPy's
    and JAX's integrators use)."""
    scale = atol + rtol * fnp.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = fnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / fnp.maximum(d1, 1e-300))
    f1 = f(y0 + h0 * f0, t0 + h0)
    d2 = _rms((f1 - f0) / scale) / h0
    big = fnp.maximum(d1, d2)
    h1 = fnp.where(big <= 1e-15, fnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / fnp.maximum(big, 1e-300)) ** (1.0 / 5))
    return fnp.minimum(100 * h0, h1)


def _integrate(f, y0, ts, rtol, atol, mxstep, hmax):
    """y at every ``ts[i]`` (``ts[0]``: ``y0``) for ``dy/dt = f(y, t)`` on a flat ``y``;
    NaN from the first time not reached (``mxstep`` steps spent, a step size of zero, a
    non-finite error or a decreasing ``ts``)."""
    real = aval(y0).dtype if dtype_kind(aval(y0).dtype) == "f" else np.dtype(np.float64)
    t0 = ts[0]
    f0 = f(y0, t0)
    h0 = cast(fnp.minimum(_initial_step(f, y0, f0, t0, rtol, atol), hmax), real)

    def interval(carry, target):
        y, fy, t, h, ok = carry

        def running(s):
            _, _, t, h, n = s
            return (t < target) & (n < mxstep) & (h > 0)

        def attempt(s):
            y, fy, t, h, n = s
            last = h >= target - t
            step = fnp.where(last, target - t, h)
            y1, f1, err = _dopri_step(f, y, fy, t, step)
            scale = atol + rtol * fnp.maximum(fnp.abs(y), fnp.abs(y1))
            ratio = _rms(err / scale)
            accept = ratio <= 1.0
            factor = fnp.where(ratio == 0.0, _MAX_FACTOR,
                               fnp.clip(_SAFETY * fnp.maximum(ratio, 1e-300) ** -0.2,
                                        _MIN_FACTOR, _MAX_FACTOR))
            factor = fnp.where(accept, factor, fnp.minimum(factor, 1.0))
            h_next = fnp.minimum(step * factor, hmax)
            # a step cut short to land on the target does not shrink the next one
            h_next = fnp.where(accept & last, fnp.maximum(h_next, h), h_next)
            return (fnp.where(accept, y1, y), fnp.where(accept, f1, fy),
                    fnp.where(accept, fnp.where(last, target, t + step), t),
                    cast(fnp.where(fnp.isfinite(h_next), h_next, 0.0), real),
                    n + 1)

        y, fy, t_end, h, _ = while_loop(running, attempt, (y, fy, t, h, np.int64(0)))
        ok = ok & (t_end >= target) & (target >= t)
        y_out = fnp.where(ok, y, fnp.full_like(y, np.nan))
        return (y, fy, t_end, h, ok), y_out

    init = (y0, f0, t0, h0, fnp.asarray(True))
    _, ys = scan(interval, init, ts[1:])
    return fnp.concatenate([y0[None], ys], axis=0)


def _check_tol(name, arg, v):
    if not isinstance(v, int | float | np.floating | np.integer) or not v >= 0:
        raise ValueError(f"{name}: {arg} must be a non-negative number, got {v!r}")
    return float(v)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=math.inf, hmax=math.inf):
    """``jax.experimental.ode.odeint``: the solution of ``dy/dt = func(y, t, *args)`` with
    ``y(t[0]) = y0`` at every time in ``t``, by adaptive Dormand-Prince 5(4) steps that land
    on each ``t[i]``.

    Reverse mode (``grad``, ``vjp``, to any order) is the adjoint method: the adjoint system
    is integrated backwards by this same integrator, with the same tolerances. Forward mode
    (``jvp``, ``jacfwd``) is not defined, as in JAX. Differentiate with respect to the
    parameters by passing them in ``args``: ``func`` must not close over traced values.

    Args:
        func: ``func(y, t, *args) -> dy/dt``, an array shaped as ``y``.
        y0: the initial state, a float array of any shape.
        t: the increasing times, a 1-D float array; ``t[0]`` is the initial time.
        *args: extra arrays passed to ``func`` (differentiable).
        rtol (float, default ``1.4e-8``): relative tolerance on each step's error.
        atol (float, default ``1.4e-8``): absolute tolerance.
        mxstep (int or inf, default ``inf``): the most steps (accepted or not) per interval
            ``t[i-1], t[i]``.
        hmax (float, default ``inf``): the largest step.

    Returns:
        ``y`` at every ``t``, shape ``t.shape + y0.shape``. From the first time not reached
        (``mxstep`` spent, the step size underflowing, a non-finite ``func`` value) the rows
        are NaN.

    Example::

        >>> odeint(lambda y, t, k: -k * y, np.array([1.0]), np.array([0.0, 1.0]), 2.0)[-1]
        array([0.13533529])
    """
    name = f"odeint({getattr(func, '__name__', 'func')})"
    rtol, atol = _check_tol(name, "rtol", rtol), _check_tol(name, "atol", atol)
    hmax = _check_tol(name, "hmax", hmax)
    if not (mxstep == math.inf or (isinstance(mxstep, int | np.integer) and mxstep > 0)):
        raise ValueError(f"{name}: mxstep must be a positive int or inf, got {mxstep!r}")
    y0, t = array_operand(y0), array_operand(t)
    if aval(t).ndim != 1 or aval(t).shape[0] == 0:
        raise ValueError(f"{name}: t must be a non-empty 1-D array, got shape {aval(t).shape}")
    if dtype_kind(aval(y0).dtype) not in "fiub" or dtype_kind(aval(t).dtype) not in "fiub":
        raise TypeError(f"{name}: y0 and t must be real, got {aval(y0).dtype} and "
                        f"{aval(t).dtype}")
    dt = np.result_type(aval(y0).dtype, aval(t).dtype, np.float32)
    dt = np.dtype(np.float64) if dtype_kind(dt) != "f" else dt
    args = tuple(array_operand(a) for a in args)
    for i, a in enumerate(args):
        if dtype_kind(aval(a).dtype) not in "fiub":
            raise TypeError(f"{name}: args[{i}] must be real, got {aval(a).dtype}")
    args = tuple(cast(a, dt) if dtype_kind(aval(a).dtype) != "f" else a for a in args)
    y0, t = cast(y0, dt), cast(t, dt)
    if isinstance(t, np.ndarray) and np.any(np.diff(t) < 0):
        raise ValueError(f"{name}: t must be non-decreasing, got {t}")
    shape = aval(y0).shape
    out = fnp.asarray(func(y0, t[0], *args))
    if aval(array_operand(out)).shape != shape:
        raise ValueError(f"{name}: func(y0, t[0], *args) has shape "
                         f"{aval(array_operand(out)).shape}; it must have y0's shape {shape}")
    mx = mxstep if mxstep == math.inf else int(mxstep)
    solve = _adjoint_solver(func, shape, rtol, atol, mx, hmax)
    return to_result(solve(fnp.reshape(y0, (-1,)), t, *args))


def _flat(func, shape):
    def f(y, t, *args):
        return fnp.reshape(fnp.asarray(func(fnp.reshape(y, shape), t, *args)), (-1,))
    return f


def _adjoint_solver(func, shape, rtol, atol, mxstep, hmax):
    """A custom_vjp ``(y0 flat, t, *args) -> ys (len(t),) + shape``."""
    f = _flat(func, shape)

    def solve(y0, t, *args):
        ys = _integrate(lambda y, s: f(y, s, *args), y0, t, rtol, atol, mxstep, hmax)
        return fnp.reshape(ys, (aval(t).shape[0],) + shape)

    solve.__name__ = solve.__qualname__ = f"odeint({getattr(func, '__name__', 'func')})"
    solve = custom_vjp(solve)

    def fwd(y0, t, *args):
        ys = solve(y0, t, *args)
        return ys, (ys, t, args)

    def bwd(res, g):
        ys, t, args = res
        n = aval(t).shape[0]
        ys = fnp.reshape(ys, (n, -1))
        g = fnp.reshape(g, (n, -1))
        m = aval(ys).shape[1]
        sizes = [math.prod(aval(a).shape) for a in args]

        def augmented(state, s, *args):
            """In reversed time s = -t: y runs back, the adjoint and the parameter
            cotangents gather a^T df/dy and a^T df/dargs."""
            y, a = state[:m], state[m:2 * m]
            dy, pull = vjp(lambda y, *p: f(y, -s, *p), y, *args)
            parts = pull(a)
            flat = [fnp.reshape(p, (-1,)) for p in parts]
            return fnp.concatenate([-dy] + flat)

        aug = _adjoint_solver(augmented, (2 * m + sum(sizes),), rtol, atol, mxstep, hmax)

        def back(carry, xs):
            a, abar = carry
            y_i, t_i, t_prev, g_i, g_prev = xs
            t_bar = fnp.sum(f(y_i, t_i, *args) * g_i)
            state = fnp.concatenate([y_i, a, abar])
            out = aug(state, fnp.stack([-t_i, -t_prev]), *args)[1]
            return (out[m:2 * m] + g_prev, out[2 * m:]), t_bar

        zeros = fnp.zeros((sum(sizes),), aval(ys).dtype)
        steps = tuple(x[::-1] for x in (ys[1:], t[1:], t[:-1], g[1:], g[:-1]))
        (a, abar), t_bars = scan(back, (g[n - 1], zeros), steps)
        t0_bar = -fnp.sum((a - g[0]) * f(ys[0], t[0], *args))
        t_bar = fnp.concatenate([t0_bar[None], t_bars[::-1]])
        arg_bars, at = [], 0
        for arg, k in zip(args, sizes):
            arg_bars.append(fnp.reshape(abar[at:at + k], aval(arg).shape))
            at += k
        return (a, t_bar, *arg_bars)

    solve.defvjp(fwd, bwd)
    return solve





def _time_first(fun):
    def func(y, t, *args):
        return fun(t, y, *args)
    func.__name__ = getattr(fun, "__name__", "fun")
    return func


class OdeSolution:
    """What :func:`solve_ivp` returns: ``t`` (the ``t_eval`` times), ``y`` (shape
    ``(n, len(t))``), ``status`` (``0``: reached the end; ``-1``: a time not reached, its
    columns NaN), ``success`` (``status == 0``) and ``message``; ``status`` and ``success``
    are arrays (traced under a transform, where ``message`` names both outcomes)."""

    def __init__(self, t, y, status):
        self.t, self.y, self.status = t, y, status
        self.success = status == 0
        self.sol, self.t_events, self.y_events = None, None, None
        if isinstance(status, np.ndarray | np.generic):
            self.message = (_REACHED if int(status) == 0 else _NOT_REACHED)
        else:
            self.message = (f"status 0: {_REACHED}; status -1: {_NOT_REACHED} (the status "
                            "is traced)")

    def __repr__(self):
        return (f"OdeSolution(t={self.t!r}, y={self.y!r}, status={self.status!r}, "
                f"message={self.message!r})")


_REACHED = "The solver successfully reached the end of the integration interval."
_NOT_REACHED = "Required step size is less than spacing between numbers."


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
              vectorized=False, args=None, rtol=1e-3, atol=1e-6, **options):
    """``scipy.integrate.solve_ivp`` for ``method='RK45'`` with a given ``t_eval``: the
    solution of ``dy/dt = fun(t, y, *args)``, ``y(t_span[0]) = y0``, at the times
    ``t_eval``, by :func:`odeint`'s adaptive Dormand-Prince 5(4) steps (landing on each
    time rather than interpolating, so values agree with SciPy's to the tolerances, not to
    the bit). Differentiable in ``y0``, ``args`` and ``t_eval`` by the adjoint method
    (reverse mode only), ``jit``- and ``vmap``-able.

    Without ``t_eval`` SciPy returns the solver's own steps, a number that depends on the
    values; that (and ``dense_output``, ``events``, other methods) is refused.

    Args:
        fun: ``fun(t, y, *args) -> dy/dt`` (SciPy's argument order), shaped as ``y``.
        t_span: ``(t0, t1)`` with ``t0 <= t1``.
        y0: the 1-D initial state.
        method (str, default ``'RK45'``): only ``'RK45'``.
        t_eval: the increasing times to report, within ``t_span``.
        args (tuple, default ``None``): extra arrays passed to ``fun`` (differentiable).
        rtol (float, default ``1e-3``): relative tolerance.
        atol (float, default ``1e-6``): absolute tolerance.
        **options: ``max_step`` (default inf) is the largest step.

    Example::

        >>> sol = solve_ivp(lambda t, y: -y, (0.0, 1.0), np.array([1.0]),
        ...                 t_eval=np.array([0.0, 1.0]), rtol=1e-8)
        >>> sol.y.shape
        (1, 2)
    """
    name = "solve_ivp"
    if method != "RK45":
        raise NotImplementedError(f"{name}: method={method!r} is not supported; only 'RK45'")
    if t_eval is None:
        raise ValueError(f"{name}: t_eval=None returns the solver's own steps, whose number "
                         "depends on the values, which a traced function cannot return; pass "
                         "the times to report as t_eval")
    if dense_output or events is not None:
        raise NotImplementedError(f"{name}: dense_output and events are not supported")
    unknown = set(options) - {"max_step"}
    if unknown:
        raise TypeError(f"{name}: unsupported options {sorted(unknown)}")
    try:
        t0, t1 = t_span
    except (TypeError, ValueError):
        raise ValueError(f"{name}: t_span must be a pair (t0, t1), got {t_span!r}") from None
    y0 = array_operand(y0)
    if aval(y0).ndim != 1:
        raise ValueError(f"{name}: y0 must be 1-D, got shape {aval(y0).shape}")
    t_eval = array_operand(t_eval)
    if aval(t_eval).ndim != 1:
        raise ValueError(f"{name}: t_eval must be 1-D, got shape {aval(t_eval).shape}")
    concrete = [v for v in (t0, t1, t_eval) if isinstance(v, int | float | np.ndarray |
                                                         np.generic)]
    if len(concrete) == 3:
        if t1 < t0:
            raise NotImplementedError(f"{name}: a decreasing t_span {t_span} is not supported")
        te = np.asarray(t_eval)
        if te.size and (te.min() < t0 or te.max() > t1):
            raise ValueError(f"{name}: values in t_eval are not within t_span {t_span}")
        if np.any(np.diff(te) < 0):
            raise ValueError(f"{name}: t_eval must be increasing")
    args = () if args is None else tuple(args)
    times = fnp.concatenate([fnp.reshape(fnp.asarray(t0, dtype=aval(t_eval).dtype if
                                                     dtype_kind(aval(t_eval).dtype) == "f"
                                                     else np.float64), (1,)),
                             t_eval])
    ys = odeint(_time_first(fun), y0, times, *args, rtol=rtol, atol=atol,
                hmax=options.get("max_step", math.inf))
    ys = fnp.transpose(ys[1:])
    status = fnp.where(fnp.all(fnp.isfinite(ys)), 0, -1)
    return OdeSolution(t_eval, to_result(ys), to_result(status))
