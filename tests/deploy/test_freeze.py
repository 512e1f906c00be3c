"""functorch_core.freeze and the freezing passes (ir.passes.freezing)."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.interpreter import run_graph
from functorch_core.ir import check_graph, passes
from functorch_core.ir.core import Lit
from functorch_core.ir.passes.freezing import fold_affine_into_products, pretranspose_constants
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc
import functorch_core.numpy as fnp
from functorch_core import nn

RNG = np.random.default_rng(0)


def _trained_bn(bn):
    c = bn.num_features
    bn.running_mean[...] = RNG.standard_normal(c) * 0.3
    bn.running_var[...] = RNG.uniform(0.3, 2.0, c)
    bn.weight[...] = RNG.uniform(0.5, 2.0, c)
    bn.bias[...] = RNG.standard_normal(c)
    return bn


def _cnn():
    fc.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), _trained_bn(nn.BatchNorm2d(16)), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    return model.eval()


def _prims(graph):
    return [e.prim.name for e in graph.eqns]


@pytest.mark.parametrize("batch", [1, 64])
def test_frozen_cnn_folds_batch_norm_into_the_conv(batch):
    model = _cnn()
    x = RNG.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    frozen = fc.freeze(model)
    folded, _ = frozen.graph_for(x)
    plain, _ = frozen.graph_for(x, folded=False)
    assert len(folded.eqns) < len(plain.eqns)
    assert {"sub", "div", "mul"} & set(_prims(plain))
    assert not {"sub", "div", "mul"} & set(_prims(folded))
    want = fc.jit(lambda m, x: m(x))(model, x)
    np.testing.assert_allclose(frozen(x), want, rtol=1e-5, atol=1e-5)


def test_linear_then_batch_norm1d_folds_into_the_product():
    fc.manual_seed(1)
    model = nn.Sequential(nn.Linear(5, 7, dtype=np.float64),
                          _trained_bn(nn.BatchNorm1d(7, dtype=np.float64)), nn.Tanh()).eval()
    x = RNG.standard_normal((9, 5))
    frozen = fc.freeze(model)
    graph, _ = frozen.graph_for(x)
    assert _prims(graph).count("dot_general") == 1 and "div" not in _prims(graph)
    np.testing.assert_allclose(frozen(x), model(x), rtol=1e-12)


def test_freeze_binds_a_copy_of_the_params_and_exports():
    params = {"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4)}

    def f(p, x):
        return (x @ p["w"] + p["b"]) * 2.0 - 1.0
    frozen = fc.freeze(f, params)
    x = RNG.standard_normal((2, 3))
    want = f(params, x)
    params["w"][...] = 0.0
    np.testing.assert_allclose(frozen(x), want, rtol=1e-12)
    exp = fc.export(frozen, x)
    assert len(exp.in_avals) == 1      # the params are constants, not inputs
    np.testing.assert_allclose(exp(x), want, rtol=1e-12)
    assert _prims(exp.graph).count("dot_general") == 1
    assert not {"mul", "sub"} & set(_prims(exp.graph))


def test_training_mode_batch_norm_is_refused():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    with pytest.raises(ValueError, match=r"model\.eval\(\)"):
        fc.freeze(model)(np.ones((5, 3), np.float32))


_OPS = {"add": lambda y, k: y + k, "sub": lambda y, k: y - k, "rsub": lambda y, k: k - y,
        "mul": lambda y, k: y * k, "div": lambda y, k: y / k}


@given(ops=st.lists(st.sampled_from(sorted(_OPS)), min_size=1, max_size=5),
       scalar=st.lists(st.booleans(), min_size=5, max_size=5), seed=st.integers(0, 2 ** 16))
def test_fold_affine_chain_matches_the_interpreter(ops, scalar, seed):
    """A random chain of per-channel (or scalar) constant ops after a product folds into
    the product's weights with the same result; a non-constant operand ends the chain."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3))
    ks = [rng.uniform(0.5, 2.0, 4) for _ in ops]

    def f(x):
        y = x @ w.T
        for op, k, sc in zip(ops, ks, scalar, strict=False):
            k = k[0] if sc else k
            y = _OPS[op](y, k)
        return fnp.tanh(y) * y      # a non-constant factor: not folded
    x = rng.standard_normal((6, 3))
    graph = passes.simplify(fc.make_graph(f)(x))
    folded = check_graph(passes.simplify(fold_affine_into_products(graph)))
    assert len(folded.eqns) <= len(graph.eqns)
    assert sum(e.prim.name in ("sub", "div") for e in folded.eqns) == 0
    np.testing.assert_allclose(run_graph(folded, [x])[0], run_graph(graph, [x])[0],
                               rtol=1e-12, atol=1e-12)


def test_pretranspose_constant_operand_gemm_cannot_read():
    w = RNG.standard_normal((3, 5, 4))      # (j, b, k): the batch axis is not leading

    def f(x):
        return fnp.einsum("bij,jbk->bik", x, w)
    x = RNG.standard_normal((5, 2, 3))
    graph = passes.simplify(fc.make_graph(f)(x))
    (dot,) = [e for e in graph.eqns if e.prim.name == "dot_general"]
    new = check_graph(pretranspose_constants(graph))
    (ndot,) = [e for e in new.eqns if e.prim.name == "dot_general"]
    assert dot.inputs[1].value.shape == w.shape
    assert ndot.inputs[1].value.shape == (5, 3, 4)
    assert ndot.inputs[1].value.flags.c_contiguous
    np.testing.assert_allclose(run_graph(new, [x])[0], np.einsum("bij,jbk->bik", x, w),
                               rtol=1e-12)


def test_repeated_and_non_contiguous_calls_match():
    w = RNG.standard_normal((4, 3))
    frozen = fc.freeze(lambda p, x: {"y": x @ p}, w)
    x = RNG.standard_normal((6, 4))
    first, again = frozen(x), frozen(x)          # the second call takes the cached run
    np.testing.assert_allclose(again["y"], first["y"], rtol=0)
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(frozen(xt)["y"], x @ w, rtol=1e-12)


def _mlp():
    fc.manual_seed(2)
    return nn.Sequential(_trained_bn(nn.BatchNorm1d(4)), nn.Linear(4, 8),
                         _trained_bn(nn.BatchNorm1d(8)), nn.GELU(), nn.Dropout(0.3),
                         nn.Linear(8, 3), nn.Tanh()).eval()


@pytest.mark.parametrize("make, shape", [(_mlp, (4,)), (_cnn, (1, 8, 8))])
def test_frozen_model_exports_with_a_dynamic_batch(make, shape):
    """The README's deployment snippet: freeze keeps a bias broadcast to the batch as an
    equation (not a batch-shaped constant), so the export follows any batch size."""
    model = make()
    x = RNG.standard_normal((6, *shape)).astype(np.float32)
    frozen = fc.freeze(model)
    exp = fc.export(frozen, x, dynamic={0: {0: "batch"}})
    for batch in (1, 2, 5, 6, 13, 100):
        xb = RNG.standard_normal((batch, *shape)).astype(np.float32)
        np.testing.assert_allclose(exp(xb), model(xb), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(frozen(xb), model(xb), rtol=1e-5, atol=1e-5)
    graph, _ = frozen.graph_for(x)
    consts = [a.value.shape for e in graph.eqns for a in e.inputs if isinstance(a, Lit)]
    assert all(s[:1] != (6,) for s in consts), consts


class _SquaredBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).sum() * fnp.ones((x.shape[0] ** 2,))


@pytest.mark.parametrize("freeze", [False, True])
def test_export_errors_name_the_module_class_not_its_repr(freeze):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), _SquaredBatch()).eval()
    func = fc.freeze(model) if freeze else model
    with pytest.raises(fc.deploy.dynamic.DynamicError) as info:
        fc.export(func, np.ones((6, 4), np.float32), dynamic={0: {0: "batch"}})
    msg = str(info.value)
    assert len(msg) < 250 and "\n" not in msg, msg
    assert ("export(freeze(Sequential))" if freeze else "export(Sequential)") in msg
    assert "args[0] dim 0 'batch'" in msg and "broadcast_in_dim" in msg
    assert "in_features" not in msg and "(25 at 5, 121 at 11)" in msg
