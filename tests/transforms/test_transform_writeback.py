"""Every transform writes a function's in-place writes into its arguments back to the caller.

``grad``, ``vjp``, ``jvp``, ``vmap`` and the transforms built on them leave the caller's
arrays exactly as an eager call of the function leaves them (the written values are
primal values), compositions included; the outputs and derivatives are those of the same
function written without mutation. Under ``vmap`` a write of per-example values into an
argument shared by the batch is an error, and a write into a batched argument writes
each example's slice. BatchNorm trained through ``grad(loss)(model, x, y)`` ends with
the running statistics of torch's formula and the accuracy of the ``has_aux`` route.
"""

import numpy as np
import pytest
from functorch_core.ir.pytree import tree_flatten

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import nn
from functorch_core.nn import functional as F


def f(b, x):
    """Writes into its argument ``b``: a write from the inputs, one through a view, then
    reads of the written values."""
    b[0] = x.sum()
    v = b[1:]
    v *= x[0]
    return b * x[0] + (x ** 2).sum()


def pure(b, x):
    """``f`` without mutation: the same value at the same inputs."""
    nb = fnp.concatenate([fnp.reshape(x.sum(), (1,)), b[1:] * x[0]])
    return nb * x[0] + (x ** 2).sum()


def scalar(fn):
    return lambda b, x: fn(b, x).sum()


B0, X0 = np.array([0.5, -1.0, 2.0]), np.array([1.5, -0.7])
TB, TX = np.array([1.0, 0.3, -2.0]), np.array([0.2, 1.1])

CASES = {
    "grad": lambda fn, b, x: fc.grad(scalar(fn), argnums=(0, 1))(b, x),
    "grad_has_aux": lambda fn, b, x: fc.grad(lambda b, x: (fn(b, x).sum(), x * 2),
                                             argnums=1, has_aux=True)(b, x),
    "value_and_grad": lambda fn, b, x: fc.value_and_grad(scalar(fn), argnums=1)(b, x),
    "grad_and_value": lambda fn, b, x: fc.grad_and_value(scalar(fn), argnums=(0, 1))(b, x),
    "vjp": lambda fn, b, x: (lambda out, back: (out, back(TB)))(*fc.vjp(fn, b, x)),
    "jvp": lambda fn, b, x: fc.jvp(fn, (b, x), (TB, TX)),
    "linearize": lambda fn, b, x: (lambda out, jf: (out, jf(TB, TX)))(*fc.linearize(fn, b, x)),
    "jacrev": lambda fn, b, x: fc.jacrev(fn, argnums=(0, 1))(b, x),
    "jacfwd": lambda fn, b, x: fc.jacfwd(fn, argnums=(0, 1))(b, x),
    "hessian": lambda fn, b, x: fc.hessian(scalar(fn), argnums=1)(b, x),
    "jit(grad)": lambda fn, b, x: fc.jit(fc.grad(scalar(fn), argnums=1))(b, x),
    "grad(jit)": lambda fn, b, x: fc.grad(scalar(fc.jit(fn)), argnums=1)(b, x),
    "grad(grad)": lambda fn, b, x: fc.grad(
        lambda b, x: fc.grad(scalar(fn), argnums=1)(b, x).sum(), argnums=1)(b, x),
    "jacfwd(grad)": lambda fn, b, x: fc.jacfwd(fc.grad(scalar(fn), argnums=1), argnums=1)(b, x),
    "functionalize(grad)": lambda fn, b, x: fc.functionalize(
        fc.grad(scalar(fn), argnums=1))(b, x),
}


def assert_trees_close(got, want):
    g, gt = tree_flatten(got)
    w, wt = tree_flatten(want)
    assert gt == wt
    for a, b in zip(g, w, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def eager_result(b):
    e = b.copy()
    f(e, X0.copy())
    return e


@pytest.mark.parametrize("name", list(CASES))
def test_transform_writes_back_as_an_eager_call(name):
    run = CASES[name]
    b, x = B0.copy(), X0.copy()
    got = run(f, b, x)
    np.testing.assert_array_equal(b, eager_result(B0))
    np.testing.assert_array_equal(x, X0)
    # values and derivatives: those of the function without mutation, at the inputs given
    assert_trees_close(got, run(pure, B0.copy(), X0.copy()))


def test_each_call_writes_again_through_jits_fast_path():
    step = fc.jit(fc.grad(scalar(f), argnums=1))
    b, want = B0.copy(), B0.copy()
    for _ in range(4):
        expected = fc.grad(scalar(pure), argnums=1)(want, X0)
        g = step(b, X0)
        f(want, X0.copy())
        np.testing.assert_array_equal(b, want)
        np.testing.assert_allclose(g, expected, rtol=1e-12)
    assert len(step._fast) == 1                  # the later calls took the fast path


def test_gradient_is_taken_at_the_value_passed_in():
    # the written argument's gradient is that of its value before the write
    b = B0.copy()
    gb = fc.grad(scalar(f))(b, X0)
    np.testing.assert_allclose(gb, fc.grad(scalar(pure))(B0, X0), rtol=1e-12)
    assert gb[0] == 0.0                            # b[0] is overwritten before any read


def test_scalar_arguments_rebind_and_read_only_arrays_refuse():
    def g(s, b):
        s += 1.0             # a Python float: rebinding, as eagerly
        b[0] = s
        return b.sum() * s

    b = np.zeros(2)
    got = fc.grad(g, argnums=1)(1.0, b)
    np.testing.assert_array_equal(got, [0.0, 2.0])      # b[0] is overwritten
    np.testing.assert_array_equal(b, [2.0, 0.0])

    def h(b, c):
        b[0] = 1.0
        c[0] = 1.0
        return (b + c).sum()

    b, c = np.zeros(2), np.zeros(2)
    c.flags.writeable = False
    with pytest.raises(ValueError, match=r"read-only \(grad\(.*h\) writes into argument leaf 1"):
        fc.grad(h)(b, c)
    np.testing.assert_array_equal(b, 0)           # a refused call writes nothing


def test_write_into_a_closed_over_concrete_array_under_jit_is_refused():
    buf = np.zeros(3)

    def outer(x):
        return fc.grad(lambda b, x: scalar(f)(b, x), argnums=1)(buf, x)

    with pytest.raises(NotImplementedError, match="constant"):
        fc.jit(outer)(X0)
    np.testing.assert_array_equal(buf, 0)


# --- vmap ---------------------------------------------------------------------------------

BS = np.arange(12.0).reshape(4, 3) / 5
XS = np.array([[1.0, 2.0], [-0.5, 0.25], [3.0, -1.0], [0.1, 0.2]])


def looped(bs):
    out = bs.copy()
    for i in range(len(out)):
        f(out[i], XS[i].copy())
    return out


VMAP_CASES = {
    "vmap": lambda fn, b: fc.vmap(fn)(b, XS),
    "vmap(grad) per-sample": lambda fn, b: fc.vmap(fc.grad(scalar(fn), argnums=1))(b, XS),
    "vmap chunked": lambda fn, b: fc.vmap(fn, chunk_size=3)(b, XS),
    "vmap(grad) chunked": lambda fn, b: fc.vmap(fc.grad(scalar(fn), argnums=(0, 1)),
                                                 chunk_size=3)(b, XS),
    "jit(vmap(grad))": lambda fn, b: fc.jit(fc.vmap(fc.grad(scalar(fn), argnums=1)))(b, XS),
    "jit(vmap chunked)": lambda fn, b: fc.jit(fc.vmap(fn, chunk_size=3))(b, XS),
    "grad(vmap)": lambda fn, b: fc.grad(lambda b, x: fc.vmap(fn)(b, x).sum(), argnums=1)(b, XS),
    "vmap(vmap)": lambda fn, b: fc.vmap(fc.vmap(fn))(b.reshape(2, 2, 3), XS.reshape(2, 2, 2)),
    "vmap(jacrev)": lambda fn, b: fc.vmap(fc.jacrev(fn, argnums=1))(b, XS),
    "vmap(jvp)": lambda fn, b: fc.vmap(lambda b, x: fc.jvp(fn, (b, x), (TB, TX)))(b, XS),
}


@pytest.mark.parametrize("name", list(VMAP_CASES))
def test_vmap_writes_each_examples_slice_back(name):
    run = VMAP_CASES[name]
    b = BS.copy()
    got = run(f, b)
    np.testing.assert_array_equal(b.reshape(BS.shape), looped(BS))
    assert_trees_close(got, run(pure, BS.copy()))


def test_vmap_writes_a_batched_argument_at_its_batch_axis():
    bt = BS.T.copy()                                     # batch along axis 1
    fc.vmap(f, in_dims=(1, 0))(bt, XS)
    np.testing.assert_array_equal(bt, looped(BS).T)


def test_vmap_write_into_a_shared_argument():
    def same_for_all(b, x):
        b[0] = 7.0             # the same value for every example: written once
        return b[1:] * x

    b = np.zeros(3)
    fc.vmap(same_for_all, in_dims=(None, 0))(b, XS)
    np.testing.assert_array_equal(b, [7.0, 0.0, 0.0])
    b = np.zeros(3)
    with pytest.raises(ValueError, match=r"vmap\(f\): the function writes values that differ "
                                         r"across the vmapped batch into argument 0 \(shape "
                                         r"\(3,\)\), which is not batched"):
        fc.vmap(f, in_dims=(None, 0))(b, XS)
    with pytest.raises(ValueError, match="which is not batched"):
        fc.vmap(fc.grad(scalar(f), argnums=1), in_dims=(None, 0))(b, XS)
    np.testing.assert_array_equal(b, 0)


def test_vmap_arguments_that_overlap_differently_per_example():
    xs = np.arange(15.0).reshape(5, 3)

    def reads(buf, x, y):      # x is y's first example: the overlap holds for it alone
        buf[0] = 1.0
        return (buf[:3] * x).sum() + 10 * y.sum()

    got = fc.vmap(reads, in_dims=(None, None, 0))(np.zeros(4), xs[0], xs)
    np.testing.assert_allclose(got, [reads(np.zeros(4), xs[0], y) for y in xs], rtol=1e-12)

    def writes(x, y):
        x[0] = 5.0
        return y.sum()

    with pytest.raises(NotImplementedError, match=r"writes into argument 0, which shares "
                                                  r"memory with argument 1"):
        fc.vmap(writes, in_dims=(None, 0))(xs[0], xs)
    assert xs[0, 0] == 0.0


# --- BatchNorm ------------------------------------------------------------------------------

def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    return centers[y] + 0.8 * rng.standard_normal((n, 2)), y


def _mlp():
    fc.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16, dtype=np.float64), nn.BatchNorm1d(16, dtype=np.float64),
                         nn.ReLU(), nn.Linear(16, 3, dtype=np.float64))


def _reference_stats(pre_bn, running_mean, running_var, count, momentum=0.1):
    """torch's update for one training batch, from the BatchNorm input ``pre_bn``."""
    axes = (0,) + tuple(range(2, pre_bn.ndim))
    mean = pre_bn.mean(axis=axes)
    var = pre_bn.var(axis=axes, ddof=1)                       # unbiased
    return ((1 - momentum) * running_mean + momentum * mean,
            (1 - momentum) * running_var + momentum * var, count + 1)


def _train_through_module_grad(model, batches, pre_bn, lr):
    """SGD through ``grad(loss)(model, x, y)``; checks the running stats against torch's
    formula after every step."""
    bn = next(m for m in model.modules() if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d))
    rm, rv, count = bn.running_mean.copy(), bn.running_var.copy(), 0
    loss = fc.grad(lambda m, x, y: F.cross_entropy(m(x), y))
    for x, y in batches:
        rm, rv, count = _reference_stats(pre_bn(model, x), rm, rv, count)
        g = loss(model, x, y)
        grads = dict(g.named_parameters())
        for k, p in model.named_parameters():
            p -= lr * grads[k]
        np.testing.assert_allclose(bn.running_mean, rm, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(bn.running_var, rv, rtol=1e-10, atol=1e-12)
        assert bn.num_batches_tracked == count
    return model


def _train_through_has_aux(model, batches, lr):
    params = {k: np.array(v) for k, v in model.named_parameters()}
    buffers = {k: np.array(v) for k, v in model.named_buffers()}

    def loss(p, b, x, y):
        return F.cross_entropy(fc.functional_call(model, (p, b), (x,)), y), b

    step = fc.value_and_grad(loss, has_aux=True)
    for x, y in batches:
        (_, buffers), g = step(params, buffers, x, y)
        params = {k: v - lr * g[k] for k, v in params.items()}
    model.load_state_dict({**params, **buffers})
    return model


def _accuracy(model, x, y):
    model.eval()
    return float(np.mean(np.argmax(model(x), axis=1) == y))


def test_batchnorm1d_trained_through_grad_keeps_torchs_running_stats():
    x, y = _blobs(480, 0)
    batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 480, 32)] * 2
    lin = lambda m, x: x @ np.asarray(m[0].weight).T + np.asarray(m[0].bias)   # noqa: E731
    ours = _train_through_module_grad(_mlp(), batches, lin, lr=0.3)
    ref = _train_through_has_aux(_mlp(), batches, lr=0.3)
    assert int(ours[1].num_batches_tracked) == len(batches)
    for (k, a), (_, b) in zip(ours.state_dict().items(), ref.state_dict().items(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=k)
    xt, yt = _blobs(300, 1)
    acc = _accuracy(ours, xt, yt)
    assert acc == _accuracy(ref, xt, yt) and acc > 0.9


def test_batchnorm2d_in_a_tiny_conv_net_trained_through_grad():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 64)
    x = rng.standard_normal((64, 1, 6, 6)) * 0.5
    x[y == 1, :, 1:4, 1:4] += 1.5                 # class 1: a bright square
    fc.manual_seed(0)

    def net():
        fc.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 3, 3, dtype=np.float64),
                             nn.BatchNorm2d(3, dtype=np.float64), nn.ReLU(), nn.Flatten(),
                             nn.Linear(3 * 4 * 4, 2, dtype=np.float64))

    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)] * 2
    ours = _train_through_module_grad(net(), batches, lambda m, x: m[0](x), lr=0.2)
    ref = _train_through_has_aux(net(), batches, lr=0.2)
    for (k, a), (_, b) in zip(ours.state_dict().items(), ref.state_dict().items(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=k)
    assert _accuracy(ours, x, y) == _accuracy(ref, x, y)


def test_batchnorm_under_jit_of_grad_and_per_sample_ensemble():
    m = _mlp()
    x, y = _blobs(32, 3)
    eager = _mlp()
    eager(x)                                          # one eager training-mode call
    fc.jit(fc.grad(lambda m, x, y: F.cross_entropy(m(x), y)))(m, x, y)
    for (k, a), (_, b) in zip(m.named_buffers(), eager.named_buffers(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=k)
    # an ensemble's stacked buffers under vmap(grad): each model's slice updated
    models = [_mlp() for _ in range(2)]
    ps, bs = fc.stack_module_state(models)
    xs = np.stack([x, 2 * x + 1])

    def loss(p, b, x):
        return fc.functional_call(models[0], (p, b), (x,)).sum()

    fc.vmap(fc.grad(loss))(ps, bs, xs)
    for i, mod in enumerate(models):
        mod(xs[i])
        for k, v in mod.named_buffers():
            np.testing.assert_allclose(bs[k][i], v, rtol=1e-12, err_msg=k)


def test_shared_running_stats_under_vmap_still_refused_and_untouched():
    m = _mlp()
    p = {k: np.array(v) for k, v in m.named_parameters()}
    b = {k: np.array(v) for k, v in m.named_buffers()}
    xs = np.stack([_blobs(8, s)[0] for s in range(3)])
    with pytest.raises(ValueError, match=r"training-mode BatchNorm would update buffer "
                                         r"'1.running_mean'"):
        fc.vmap(fc.grad(lambda p, b, x: fc.functional_call(m, (p, b), (x,)).sum()),
                in_dims=(None, None, 0))(p, b, xs)
    assert np.all(b["1.running_mean"] == 0) and b["1.num_batches_tracked"] == 0


def test_jit_fast_path_of_a_writing_function_writes_and_refuses_read_only():
    @fc.jit
    def bump(x):
        x += 1.0
        return x.sum()

    @fc.jit
    def add_into(b, y):
        b[0] += y.sum()
        return y * 2

    x, b, y = np.zeros(3), np.zeros(3), np.ones(2)
    for _ in range(4):
        bump(x)
        add_into(b, y)
    np.testing.assert_array_equal(x, 4.0)
    np.testing.assert_array_equal(b, [8.0, 0.0, 0.0])
    assert len(bump._fast) == 1 and len(add_into._fast) == 1
    x.flags.writeable = False
    with pytest.raises(ValueError, match=r"read-only \(jit\(.*bump\) writes into argument leaf 0"):
        bump(x)
    np.testing.assert_array_equal(x, 4.0)
