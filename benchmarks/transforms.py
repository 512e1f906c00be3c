"""Transform workloads through functorch_core, NumPy, and (when installed) JAX and torch.func.

Same process, same inputs; medians over repeats; ratios against functorch_core's jit.
    python benchmarks/transforms.py [--quick]
"""

import functools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import itertools

from _timing import median_time, optional_import, report, result

import functorch_core as fc

QUICK = "--quick" in sys.argv
REPEATS = 3 if QUICK else 7


# --- per-sample gradients of an MLP 784-512-512-10, batch 256, float32 ---------------------

def mlp_params(rng, sizes=(784, 512, 512, 10)):
    return [(rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(np.float32), np.zeros(n, np.float32))
            for m, n in itertools.pairwise(sizes)]


def mlp_forward(tanh, params, x):
    """The MLP on ``x`` with one array library's ``tanh``: the activations each layer reads
    (``x`` first) and the logits."""
    acts = [x]
    for w, b in params[:-1]:
        acts.append(tanh(acts[-1] @ w + b))
    w, b = params[-1]
    return acts, acts[-1] @ w + b


def mlp_loss_of(tanh, logsumexp, total):
    """The MLP's softmax cross-entropy written with one array library's functions."""
    def loss(params, x, y):
        logits = mlp_forward(tanh, params, x)[1]
        return logsumexp(logits) - total(logits * y)
    return loss


def _logsumexp(logits):
    m = np.max(logits)
    return np.log(np.sum(np.exp(logits - m))) + m


mlp_loss = mlp_loss_of(np.tanh, _logsumexp, np.sum)


def numpy_per_sample_loop(params, xs, ys):
    """Hand-written backprop, one example at a time."""
    out = []
    for x, y in zip(xs, ys):
        acts, logits = mlp_forward(np.tanh, params, x)
        p = np.exp(logits - logits.max())
        delta = p / p.sum() - y
        grads = []
        for i in range(len(params) - 1, -1, -1):
            w, _ = params[i]
            grads.append((np.outer(acts[i], delta), delta))
            if i:
                delta = (w @ delta) * (1 - acts[i] ** 2)
        out.append(grads[::-1])
    return out


def bench_per_sample(rng):
    batch = 32 if QUICK else 256
    params = mlp_params(rng)
    xs = rng.normal(size=(batch, 784)).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    eager = fc.vmap(fc.grad(mlp_loss), in_dims=(None, 0, 0))
    jitted = fc.jit(eager)
    rows = {
        "functorch_core jit(vmap(grad))": median_time(lambda: jitted(params, xs, ys), REPEATS),
        "functorch_core vmap(grad) (eager)": median_time(lambda: eager(params, xs, ys), REPEATS),
        "NumPy per-example loop": median_time(lambda: numpy_per_sample_loop(params, xs, ys),
                                              max(1, REPEATS // 2)),
        "JAX jit(vmap(grad))": _jax_per_sample(params, xs, ys),
        "torch.func vmap(grad)": _torch_per_sample(params, xs, ys),
    }
    ref = numpy_per_sample_loop(params, xs[:4], ys[:4])
    got = jitted(params, xs, ys)
    err = max(float(np.max(np.abs(got[k][j][:4] - np.stack([r[k][j] for r in ref]))))
              for k in range(3) for j in range(2))
    report(f"per-sample gradients, MLP 784-512-512-10, batch {batch}, float32 "
           f"(max |error| vs loop {err:.1e})", rows, "functorch_core jit(vmap(grad))")
    result(f"per-sample grads, MLP, batch {batch}, f32", rows["functorch_core jit(vmap(grad))"],
           numpy=rows["NumPy per-example loop"], jax=rows["JAX jit(vmap(grad))"],
           torch=rows["torch.func vmap(grad)"])


def _jax_per_sample(params, xs, ys):
    jax = optional_import("jax")
    if jax is None:
        return None
    import jax.numpy as jnp

    loss = mlp_loss_of(jnp.tanh, jax.nn.logsumexp, jnp.sum)
    f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    jp = jax.tree_util.tree_map(jnp.asarray, params)
    return median_time(lambda: jax.block_until_ready(f(jp, xs, ys)), REPEATS)


def _torch_per_sample(params, xs, ys):
    torch = optional_import("torch")
    if torch is None:
        return None
    from torch.func import grad, vmap

    loss = mlp_loss_of(torch.tanh, lambda logits: torch.logsumexp(logits, 0), torch.sum)
    tp = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in params]
    tx, ty = torch.from_numpy(xs), torch.from_numpy(ys)
    f = vmap(grad(loss), in_dims=(None, 0, 0))
    return median_time(lambda: f(tp, tx, ty), REPEATS)


# --- jacrev / jacfwd of tanh(W x + b), D = 256 -----------------------------------------------

def bench_jacobians(rng):
    d = 64 if QUICK else 256
    w, b, x = rng.normal(size=(d, d)) / np.sqrt(d), rng.normal(size=d), rng.normal(size=d)

    def f(w, b, x):
        return np.tanh(w @ x + b)
    rev, fwd = fc.jacrev(f, argnums=2), fc.jacfwd(f, argnums=2)
    jrev, jfwd = fc.jit(rev), fc.jit(fwd)
    analytic = (1 - f(w, b, x) ** 2)[:, None] * w
    err = float(np.max(np.abs(jrev(w, b, x) - analytic)))
    rows = {
        "functorch_core jit(jacrev)": median_time(lambda: jrev(w, b, x), REPEATS),
        "functorch_core jit(jacfwd)": median_time(lambda: jfwd(w, b, x), REPEATS),
        "functorch_core jacrev (eager)": median_time(lambda: rev(w, b, x), REPEATS),
        "functorch_core jacfwd (eager)": median_time(lambda: fwd(w, b, x), REPEATS),
        "NumPy analytic (1 - y^2)[:, None] * W": median_time(
            lambda: (1 - f(w, b, x) ** 2)[:, None] * w, REPEATS),
    }
    jax = optional_import("jax")
    if jax is not None:
        import jax.numpy as jnp

        def jf(w, b, x):
            return jnp.tanh(w @ x + b)
        jr, jfw = jax.jit(jax.jacrev(jf, argnums=2)), jax.jit(jax.jacfwd(jf, argnums=2))
        with jax.enable_x64(True):      # float64 as here, not JAX's default float32
            rows["JAX jit(jacrev)"] = median_time(lambda: jax.block_until_ready(jr(w, b, x)),
                                                  REPEATS)
            rows["JAX jit(jacfwd)"] = median_time(lambda: jax.block_until_ready(jfw(w, b, x)),
                                                  REPEATS)
    torch = optional_import("torch")
    if torch is not None:
        from torch.func import jacfwd, jacrev
        tw, tb, tx = (torch.from_numpy(a) for a in (w, b, x))

        def tf(w, b, x):
            return torch.tanh(w @ x + b)
        rows["torch.func jacrev"] = median_time(lambda: jacrev(tf, argnums=2)(tw, tb, tx),
                                                REPEATS)
        rows["torch.func jacfwd"] = median_time(lambda: jacfwd(tf, argnums=2)(tw, tb, tx),
                                                REPEATS)
    report(f"Jacobian of tanh(W x + b), D={d}, float64 (max |error| {err:.1e})", rows,
           "functorch_core jit(jacrev)")
    for kind in ("jacrev", "jacfwd"):
        result(f"{kind} of tanh(W x + b), D={d}, f64", rows[f"functorch_core jit({kind})"],
               jax=rows.get(f"JAX jit({kind})"), torch=rows.get(f"torch.func {kind}"))


# --- hessian of a 512-dimensional scalar function ---------------------------------------------

def bench_hessian(rng):
    d = 128 if QUICK else 512
    a = rng.normal(size=(d, d)) / np.sqrt(d)
    q = a @ a.T
    z = rng.normal(size=d)

    def f(z):
        m = np.max(z)
        return np.log(np.sum(np.exp(z - m))) + m + 0.5 * z @ q @ z
    h, jh = fc.hessian(f), fc.jit(fc.hessian(f))
    p = np.exp(z - z.max())
    p /= p.sum()
    exact = np.diag(p) - np.outer(p, p) + q
    err = float(np.max(np.abs(jh(z) - exact)))
    rows = {
        "functorch_core jit(hessian)": median_time(lambda: jh(z), REPEATS),
        "functorch_core hessian (eager)": median_time(lambda: h(z), REPEATS),
        "NumPy analytic": median_time(lambda: np.diag(p) - np.outer(p, p) + q, REPEATS),
    }
    jax = optional_import("jax")
    if jax is not None:
        import jax.numpy as jnp
        with jax.enable_x64(True):      # float64 as here, not JAX's default float32
            jq = jnp.asarray(q)
            hj = jax.jit(jax.hessian(lambda z: jax.nn.logsumexp(z) + 0.5 * z @ jq @ z))
            rows["JAX jit(hessian)"] = median_time(lambda: jax.block_until_ready(hj(z)),
                                                   REPEATS)
    torch = optional_import("torch")
    if torch is not None:
        from torch.func import hessian
        tq, tz = torch.from_numpy(q), torch.from_numpy(z)
        ht = hessian(lambda z: torch.logsumexp(z, 0) + 0.5 * z @ tq @ z)
        rows["torch.func hessian"] = median_time(lambda: ht(tz), REPEATS)
    report(f"Hessian of log-sum-exp + quadratic, d={d}, float64 (max |error| {err:.1e})", rows,
           "functorch_core jit(hessian)")
    result(f"hessian lse(z) + z'Qz/2, d={d}, f64", rows["functorch_core jit(hessian)"],
           jax=rows.get("JAX jit(hessian)"), torch=rows.get("torch.func hessian"))


def bench_hessian_affine(rng, dtype):
    """The Hessian of logsumexp(A x) + |x|^2 / 2: A^T (diag(p) - p p^T) A + I, p =
    softmax(A x); one d^3 product at least."""
    d = 128 if QUICK else 512
    a = (rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype)
    x = rng.normal(size=d).astype(dtype)

    def f(x):
        z = a @ x
        m = np.max(z)
        return np.log(np.sum(np.exp(z - m))) + m + 0.5 * np.sum(x * x)
    jh = fc.jit(fc.hessian(f))
    p = np.exp(a @ x - np.max(a @ x))
    p /= p.sum()
    exact = a.T @ (np.diag(p) - np.outer(p, p)) @ a + np.eye(d, dtype=dtype)
    got = jh(x)
    assert got.dtype == dtype, got.dtype
    err = float(np.max(np.abs(got - exact)))
    name = np.dtype(dtype).name
    rows = {"functorch_core jit(hessian)": median_time(lambda: jh(x), REPEATS)}
    jax = optional_import("jax")
    if jax is not None:
        import jax.numpy as jnp
        ja = jnp.asarray(a)
        with jax.enable_x64(dtype == np.float64):
            hj = jax.jit(jax.hessian(lambda x: jax.nn.logsumexp(ja @ x) + 0.5 * jnp.sum(x * x)))
            jx = jnp.asarray(x)
            rows["JAX jit(hessian)"] = median_time(lambda: jax.block_until_ready(hj(jx)), REPEATS)
    rows["torch.func hessian"] = _torch_hessian_affine(a, x)
    report(f"Hessian of logsumexp(A x) + |x|^2/2, d={d}, {name} (max |error| {err:.1e})", rows,
           "functorch_core jit(hessian)")
    result(f"hessian lse(A x) + |x|^2/2, d={d}, {name}", rows["functorch_core jit(hessian)"],
           jax=rows.get("JAX jit(hessian)"), torch=rows["torch.func hessian"])


def _torch_hessian_affine(a, x):
    torch = optional_import("torch")
    if torch is None:
        return None
    from torch.func import hessian
    ta, tx = torch.from_numpy(a), torch.from_numpy(x)
    ht = hessian(lambda x: torch.logsumexp(ta @ x, 0) + 0.5 * torch.sum(x * x))
    try:
        return median_time(lambda: ht(tx), REPEATS)
    except Exception as e:      # a peer that fails is a row, not a crash
        print(f"  torch.func hessian failed: {type(e).__name__}: {e}")
        return None


# --- jacrev(jacrev) against hessian (jacfwd(jacrev)): second derivatives by reverse mode twice -

def _first_and_warm(make, arg, sync=lambda r: r):
    """(first-call seconds, median warm seconds, result) of ``make()(arg)``: the first call
    of a freshly built transform traces, transforms (and under jit compiles) it."""
    fn = make()
    t0 = time.perf_counter()
    out = sync(fn(arg))
    first = time.perf_counter() - t0
    return first, median_time(lambda: sync(fn(arg)), REPEATS), out


def _second_order_problems(rng):
    """name -> (scalar function of an array library's namespace, input): the MLP loss
    48-24-10 (batch 32) of a flat parameter vector, and an elementwise sum."""
    nin, nh, nout, batch = (16, 8, 10, 16) if QUICK else (48, 24, 10, 32)
    shapes = [(nin, nh), (nh,), (nh, nout), (nout,)]
    sizes = [int(np.prod(s)) for s in shapes]
    theta = rng.normal(size=sum(sizes)) / np.sqrt(nin)
    x = rng.normal(size=(batch, nin))
    y = np.eye(nout)[rng.integers(0, nout, batch)]

    def mlp(lib, t):
        parts, off = [], 0
        for s, k in zip(shapes, sizes, strict=True):
            parts.append(t[off:off + k].reshape(s))
            off += k
        w1, b1, w2, b2 = parts
        logits = lib.tanh(lib.asarray(x) @ w1 + b1) @ w2 + b2
        m = lib.max(logits, axis=1, keepdims=True)
        lse = lib.log(lib.sum(lib.exp(logits - m), axis=1)) + m[:, 0]
        return lib.mean(lse - lib.sum(logits * lib.asarray(y), axis=1))

    def elementwise(lib, z):
        return lib.sum(lib.sin(z) * z ** 2 + lib.exp(-z * z))
    return {f"MLP {nin}-{nh}-{nout} loss, {theta.size} params": (mlp, theta),
            f"sum(sin(x) x^2 + exp(-x^2)), n={128 if QUICK else 1024}":
                (elementwise, rng.normal(size=128 if QUICK else 1024))}


def bench_jacrev_jacrev(rng):
    """jacrev(jacrev(f)) and hessian(f) = jacfwd(jacrev(f)) on the same scalar f, first call
    and warm, with JAX's and torch.func's same pairs."""
    for title, (f, arg) in _second_order_problems(rng).items():
        _bench_second_order(title, f, arg)


def _bench_second_order(title, f, arg):
    def fresh(transform):       # a new function each time: nothing cached from a past call
        return lambda: transform(lambda a: f(np, a))
    runs = {"hessian": fresh(fc.hessian),
            "jacrev(jacrev)": fresh(lambda g: fc.jacrev(fc.jacrev(g)))}
    runs = {**{f"functorch_core jit({k})": (lambda m=m: fc.jit(m())) for k, m in runs.items()},
            **{f"functorch_core {k} (eager)": m for k, m in runs.items()}}
    got = {k: _first_and_warm(m, arg) for k, m in runs.items()}
    ref = got["functorch_core jit(hessian)"][2]
    err = max(float(np.max(np.abs(g[2] - ref))) for g in got.values())
    jax, torch = optional_import("jax"), optional_import("torch")
    if jax is not None:
        import jax.numpy as jnp
        with jax.enable_x64(True):
            jf = functools.partial(f, jnp)
            for k, m in (("hessian", jax.hessian), ("jacrev(jacrev)", _jax_jacrev2)):
                got[f"JAX jit({k})"] = _first_and_warm(
                    lambda m=m: jax.jit(m(jf)), jnp.asarray(arg), jax.block_until_ready)
    if torch is not None:
        from torch.func import hessian, jacrev
        tf = functools.partial(f, _TorchNumpy(torch))
        for k, m in (("hessian", hessian), ("jacrev(jacrev)", lambda g: jacrev(jacrev(g)))):
            got[f"torch.func {k}"] = _first_and_warm(lambda m=m: m(tf), torch.from_numpy(arg))
    print(f"\n{title}, float64: first call")
    for k, (first, _, _) in got.items():
        print(f"  {k:<38} {1e3 * first:10.1f} ms")
    report(f"{title}, float64: warm (max |difference| {err:.1e})",
           {k: g[1] for k, g in got.items()}, "functorch_core jit(hessian)")
    result(f"jit(jacrev(jacrev)), {title}, f64", got["functorch_core jit(jacrev(jacrev))"][1],
           jax=got.get("JAX jit(jacrev(jacrev))", (None, None))[1],
           torch=got.get("torch.func jacrev(jacrev)", (None, None))[1])


def _jax_jacrev2(f):
    jax = optional_import("jax")
    return jax.jacrev(jax.jacrev(f))


class _TorchNumpy:
    """The few NumPy names the second-order problems call, on torch tensors."""

    def __init__(self, torch):
        self.tanh, self.log, self.exp, self.sin = torch.tanh, torch.log, torch.exp, torch.sin
        self.asarray, self.torch = torch.as_tensor, torch

    def max(self, a, axis, keepdims):
        return self.torch.amax(a, dim=axis, keepdim=keepdims)

    def sum(self, a, axis=None):
        return self.torch.sum(a) if axis is None else self.torch.sum(a, dim=axis)

    def mean(self, a):
        return self.torch.mean(a)


def main():
    rng = np.random.default_rng(0)
    print(f"backend: {fc.default_backend()}; numpy {np.__version__}")
    bench_per_sample(rng)
    bench_jacobians(rng)
    bench_hessian(rng)
    bench_hessian_affine(rng, np.float32)
    bench_hessian_affine(rng, np.float64)
    bench_jacrev_jacrev(rng)


if __name__ == "__main__":
    main()
