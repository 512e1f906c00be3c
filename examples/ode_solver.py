"""An adaptive-step ODE integrator as a while_loop, differentiated with respect to its parameters.

The damped oscillator x'' = -k x - c x' is integrated from t=0 to t=T with an embedded
Heun/Euler pair: each step estimates its error, accepts or rejects itself and picks the
next step size, so the number of steps depends on the data. ``while_loop(...,
max_steps=N)`` records up to N iterations, so ``grad`` differentiates the whole solve
exactly (the step-size control included); the gradient is checked against central
finite differences.

Run: python examples/ode_solver.py
"""

import os
import sys

import numpy as np

try:
    import functorch_core as fc
except ModuleNotFoundError:     # run from a checkout that is not installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import functorch_core as fc
from functorch_core import lax

T_END, TOL, MAX_STEPS = 5.0, 1e-5, 3000


def rhs(y, params):
    k, c = params[0], params[1]
    return np.stack([y[1], -k * y[0] - c * y[1]])


def solve(params, y0):
    """(y(t), t, accepted steps) for the oscillator with ``params = [k, c]``; t == T_END
    unless MAX_STEPS iterations were not enough."""
    def step(state):
        t, h, y, n = state
        h = np.minimum(h, T_END - t)
        f0 = rhs(y, params)
        euler = y + h * f0
        heun = y + 0.5 * h * (f0 + rhs(euler, params))
        err = np.sqrt(np.sum((heun - euler) ** 2)) + 1e-16
        accept = err <= TOL
        t = np.where(accept, t + h, t)
        y = np.where(accept, heun, y)
        h = h * np.clip(0.9 * np.sqrt(TOL / err), 0.2, 5.0)
        return t, h, y, n + accept.astype(np.int64)

    state = (np.float64(0.0), np.float64(0.01), y0, np.int64(0))
    t, _, y, n = lax.while_loop(lambda s: s[0] < T_END, step, state, max_steps=MAX_STEPS)
    return y, t, n


def final_position(params, y0):
    return solve(params, y0)[0][0]


def main():
    params, y0 = np.array([4.0, 0.3]), np.array([1.0, 0.0])
    y, t, n = fc.jit(solve)(params, y0)
    assert t == T_END, f"stopped at t={t} after {MAX_STEPS} iterations"
    k, c = params
    w = np.sqrt(k - c * c / 4)
    exact = np.exp(-c * T_END / 2) * (np.cos(w * T_END) + c / (2 * w) * np.sin(w * T_END))
    print(f"x({T_END}) = {y[0]:.6f} after {n} accepted steps (exact {exact:.6f})")
    assert abs(y[0] - exact) < 1e-3

    g = fc.jit(fc.grad(final_position))(params, y0)
    eps, fd = 1e-5, np.zeros(2)
    for i in range(2):
        d = np.zeros(2)
        d[i] = eps
        fd[i] = (final_position(params + d, y0) - final_position(params - d, y0)) / (2 * eps)
    print(f"grad wrt (k, c): {g}   finite differences: {fd}")
    assert np.allclose(g, fd, rtol=1e-3, atol=1e-5), (g, fd)
    jf = fc.jacfwd(final_position)(params, y0)
    assert np.allclose(jf, g, rtol=1e-10, atol=1e-12), (jf, g)
    print("forward and reverse mode agree")


if __name__ == "__main__":
    main()
