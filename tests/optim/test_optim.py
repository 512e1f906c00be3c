"""functorch_core.optim: PyTorch's update formulas, schedules, clipping, stateful wrappers."""

import math
import re

import numpy as np
import pytest

import functorch_core as fc
from functorch_core import optim

STEPS = 5


def _problem(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    params = {"w": rng.standard_normal((3, 4)).astype(dtype),
              "b": rng.standard_normal(4).astype(dtype)}
    grads = [{k: rng.standard_normal(v.shape).astype(dtype) for k, v in params.items()}
             for _ in range(STEPS)]
    return params, grads


def _run(opt, params, grads, jit=False):
    update = fc.jit(opt.update) if jit else opt.update
    state = opt.init(params)
    history = []
    for g in grads:
        params, state = update(g, state, params)
        history.append(params)
    return history, state


# ---- NumPy references of torch.optim's formulas (torch-free) -------------------------------

def _ref_sgd(p, gs, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
             maximize=False):
    out, buf = [], None
    for g in gs:
        d = -g if maximize else g
        d = d + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
        out.append(p)
    return out


def _ref_adam(p, gs, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
              decoupled=False, maximize=False):
    b1, b2 = betas
    m, v, vmax, out = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(gs, start=1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vh = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr / (1 - b1 ** t) * m / (np.sqrt(vh) + eps)
        out.append(p)
    return out


def _ref_rmsprop(p, gs, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False):
    sq, ga, buf, out = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p), []
    for g in gs:
        g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        ga = alpha * ga + (1 - alpha) * g
        avg = np.sqrt(sq - ga * ga if centered else sq) + eps
        if momentum:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
        out.append(p)
    return out


def _ref_adagrad(p, gs, lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                 eps=1e-10):
    s, out = np.full_like(p, initial_accumulator_value), []
    for t, g in enumerate(gs, start=1):
        g = g + weight_decay * p
        s = s + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)
        out.append(p)
    return out


def _ref_lion(p, gs, lr, betas=(0.9, 0.99), weight_decay=0.0):
    m, out = np.zeros_like(p), []
    for g in gs:
        c = np.sign(betas[0] * m + (1 - betas[0]) * g)
        p = p * (1 - lr * weight_decay) - lr * c
        m = betas[1] * m + (1 - betas[1]) * g
        out.append(p)
    return out


CASES = [
    (optim.sgd, _ref_sgd, dict(lr=0.1)),
    (optim.sgd, _ref_sgd, dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
    (optim.sgd, _ref_sgd, dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
    (optim.sgd, _ref_sgd, dict(lr=0.05, momentum=0.8, nesterov=True)),
    (optim.adam, _ref_adam, dict(lr=0.1)),
    (optim.adam, _ref_adam, dict(lr=0.1, weight_decay=0.1, amsgrad=True, betas=(0.8, 0.9))),
    (optim.adam, _ref_adam, dict(lr=0.1, maximize=True, eps=1e-3)),
    (optim.rmsprop, _ref_rmsprop, dict(lr=0.01)),
    (optim.rmsprop, _ref_rmsprop, dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    (optim.adagrad, _ref_adagrad, dict(lr=0.1)),
    (optim.adagrad, _ref_adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.1,
                                      initial_accumulator_value=0.2)),
    (optim.lion, _ref_lion, dict(lr=0.01)),
    (optim.lion, _ref_lion, dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.5)),
]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].__name__}-{sorted(c[2].items())}")
def test_matches_numpy_reference(case, jit):
    factory, ref, kw = case
    params, grads = _problem()
    history, _ = _run(factory(**kw), params, grads, jit=jit)
    for k in params:
        expected = ref(params[k], [g[k] for g in grads], **kw)
        for t in range(STEPS):
            np.testing.assert_allclose(history[t][k], expected[t], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_adamw_matches_numpy_reference(jit):
    params, grads = _problem()
    history, _ = _run(optim.adamw(lr=0.1, weight_decay=0.3), params, grads, jit=jit)
    for k in params:
        expected = _ref_adam(params[k], [g[k] for g in grads], lr=0.1, weight_decay=0.3,
                             decoupled=True)
        np.testing.assert_allclose(history[-1][k], expected[-1], rtol=1e-12, atol=1e-12)


TORCH_CASES = [
    ("sgd", "SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("sgd", "SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
    ("sgd", "SGD", dict(lr=0.1)),
    ("adam", "Adam", dict(lr=0.1)),
    ("adam", "Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1, betas=(0.8, 0.95))),
    ("adam", "Adam", dict(lr=0.05, maximize=True, eps=1e-4)),
    ("adamw", "AdamW", dict(lr=0.1)),
    ("adamw", "AdamW", dict(lr=0.1, weight_decay=0.3, amsgrad=True)),
    ("rmsprop", "RMSprop", dict(lr=0.01)),
    ("rmsprop", "RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1,
                                maximize=True)),
    ("adagrad", "Adagrad", dict(lr=0.1)),
    ("adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1,
                                initial_accumulator_value=0.2, maximize=True)),
]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: f"{c[1]}-{sorted(c[2].items())}")
def test_matches_torch(case, jit):
    torch = pytest.importorskip("torch")
    ours, theirs, kw = case
    params, grads = _problem()
    history, _ = _run(getattr(optim, ours)(**kw), params, grads, jit=jit)
    tparams = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    topt = getattr(torch.optim, theirs)(list(tparams.values()), **kw)
    for t, g in enumerate(grads):
        for k, tp in tparams.items():
            tp.grad = torch.tensor(g[k])
        topt.step()
        for k, tp in tparams.items():
            np.testing.assert_allclose(history[t][k], tp.detach().numpy(), rtol=1e-12,
                                       atol=1e-12)


def test_lr_schedule_under_jit_matches_torch_scheduler():
    torch = pytest.importorskip("torch")
    params, grads = _problem()
    history, _ = _run(optim.adam(lr=optim.cosine(0.1, T_max=3, eta_min=0.01)), params, grads,
                      jit=True)
    tparams = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    topt = torch.optim.Adam(list(tparams.values()), lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=3, eta_min=0.01)
    for g in grads:
        for k, tp in tparams.items():
            tp.grad = torch.tensor(g[k])
        topt.step()
        sched.step()
    for k, tp in tparams.items():
        np.testing.assert_allclose(history[-1][k], tp.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_lr_schedule_is_called_with_steps_taken():
    seen = []
    opt = optim.sgd(lr=lambda step: seen.append(int(step)) or 0.1)
    params, grads = _problem()
    _run(opt, params, grads)
    assert seen == list(range(STEPS))


def test_float32_params_stay_float32_under_jit():
    params, grads = _problem(np.float32)
    for factory in (optim.sgd, optim.adam, optim.rmsprop, optim.adagrad, optim.lion):
        history, state = _run(factory(lr=0.01, **({"momentum": 0.9} if factory in
                                                  (optim.sgd, optim.rmsprop) else {})),
                              params, grads, jit=True)
        assert all(v.dtype == np.float32 for v in history[-1].values()), factory.__name__
        assert all(v.dtype == np.float32 for s, tree in state.items() if s != "step"
                   for v in tree.values()), factory.__name__


@pytest.mark.parametrize("factory", [optim.sgd, optim.adam, optim.adagrad, optim.rmsprop])
def test_float32_update_computes_in_float32(factory):
    """Step-dependent scalars (bias corrections, scheduled lr) must not promote the
    elementwise work to float64 (it doubled the jitted Adam step's time)."""
    params = {"w": np.ones((5, 3), np.float32)}
    opt = factory(lr=optim.cosine(0.1, 10))
    text = str(fc.make_graph(opt.update)(params, opt.init(params), params))
    assert re.search(r"f64\[\d", text) is None, text


def test_training_loop_with_grad_and_jit_converges():
    target = np.array([1.0, -2.0, 3.0])

    def loss(p):
        return fc.numpy.sum((p["x"] - target) ** 2)

    opt = optim.adam(lr=0.1)
    step = fc.jit(lambda p, s: opt.update(fc.grad(loss)(p), s, p))
    params = {"x": np.zeros(3)}
    state = opt.init(params)
    for _ in range(300):
        params, state = step(params, state)
    np.testing.assert_allclose(params["x"], target, atol=1e-3)
    assert int(state["step"]) == 300


def test_structure_mismatch_names_both_structures():
    params, grads = _problem()
    opt = optim.adam()
    state = opt.init(params)
    with pytest.raises(ValueError, match=r"adam.update: params/grads have structure "
                       r"\{'v': \*, 'w': \*\} but the optimizer state 'exp_avg' \(from init\) "
                       r"has structure \{'w': \*, 'b': \*\}"):
        opt.update({"v": grads[0]["w"], "w": grads[0]["w"]}, state,
                   {"v": params["w"], "w": params["w"]})
    with pytest.raises(ValueError, match=r"adam.update: grads and params differ"):
        opt.update({"w": grads[0]["w"]}, state, params)
    with pytest.raises(ValueError, match=r"shape \(4,\) but the parameter has shape \(3,\)"):
        opt.update({"b": np.zeros(4), "w": grads[0]["w"]}, state,
                   {"b": np.zeros(3), "w": params["w"]})


def test_state_of_another_optimizer_is_refused():
    params, grads = _problem()
    state = optim.sgd(lr=0.1, momentum=0.9).init(params)
    with pytest.raises(ValueError, match=r"adam.update: state must be what this optimizer's "
                                         r"init returned, with keys \['exp_avg', 'exp_avg_sq', "
                                         r"'step'\]; got \['momentum_buffer', 'step'\]"):
        optim.adam().update(grads[0], state, params)


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match="nesterov"):
        optim.sgd(lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optim.adam(lr=-1.0)
    with pytest.raises(ValueError, match="betas"):
        optim.adamw(betas=(1.0, 0.9))


@pytest.mark.parametrize("make", [optim.sgd, optim.adam, optim.adamw, optim.rmsprop,
                                  optim.adagrad, optim.lion])
def test_functional_optimizers_unpack_as_init_update(make):
    opt = make(lr=0.05)
    init, update = opt                       # optax's habit
    assert init is opt.init and update is opt.update and len(opt) == 2
    assert opt.name == make.__name__ and opt.hyperparams["lr"] == 0.05
    assert isinstance(opt.slots, tuple) and repr(opt).startswith(f"{make.__name__}(lr=0.05")
    params, grads = _problem()
    want, _ = _run(opt, params, grads)
    state = init(params)
    for g in grads:
        params, state = update(g, state, params)
    for k in params:
        np.testing.assert_array_equal(params[k], want[-1][k])


# ---- clipping -----------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_numpy_reference(norm_type, max_norm):
    _, grads = _problem()
    g = grads[0]
    flat = np.concatenate([v.ravel() for v in g.values()])
    expected = np.max(np.abs(flat)) if math.isinf(norm_type) else \
        np.sum(np.abs(flat) ** norm_type) ** (1 / norm_type)
    clipped, total = optim.clip_grad_norm(g, max_norm, norm_type)
    np.testing.assert_allclose(total, expected, rtol=1e-12)
    coef = min(1.0, max_norm / (expected + 1e-6))
    for k in g:
        np.testing.assert_allclose(clipped[k], g[k] * coef, rtol=1e-12)
    clipped_j, total_j = fc.jit(lambda g: optim.clip_grad_norm(g, max_norm, norm_type))(g)
    np.testing.assert_allclose(total_j, expected, rtol=1e-12)
    np.testing.assert_allclose(clipped_j["w"], clipped["w"], rtol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    torch = pytest.importorskip("torch")
    _, grads = _problem()
    ts = [torch.zeros(v.shape, dtype=torch.float64, requires_grad=True) for v in
          grads[0].values()]
    for t, v in zip(ts, grads[0].values(), strict=True):
        t.grad = torch.tensor(v)
    total_t = torch.nn.utils.clip_grad_norm_(ts, 0.7, norm_type)
    clipped, total = optim.clip_grad_norm(grads[0], 0.7, norm_type)
    np.testing.assert_allclose(total, total_t.item(), rtol=1e-12)
    for t, k in zip(ts, grads[0], strict=True):
        np.testing.assert_allclose(clipped[k], t.grad.numpy(), rtol=1e-12)


def test_clip_grad_value():
    g = {"a": np.array([-3.0, 0.2, 5.0]), "b": [np.array(-0.1)]}
    out = optim.clip_grad_value(g, 1.0)
    np.testing.assert_array_equal(out["a"], [-1.0, 0.2, 1.0])
    np.testing.assert_array_equal(out["b"][0], -0.1)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, "inf"])
def test_clip_grad_norm__scales_in_place_and_returns_the_norm(norm_type):
    _, grads = _problem()
    g = {k: v.copy() for k, v in grads[0].items()}
    g["b"] = [g["b"]]                          # any pytree: the Module grad returns, lists
    want, want_total = optim.clip_grad_norm(g, 0.7, norm_type)
    arrays = [g["w"], g["b"][0]]
    total = optim.clip_grad_norm_(g, 0.7, norm_type)
    assert np.ndim(total) == 0
    np.testing.assert_allclose(total, want_total, rtol=1e-12)
    assert g["w"] is arrays[0] and g["b"][0] is arrays[1]      # the same arrays, scaled
    np.testing.assert_allclose(g["w"], want["w"], rtol=1e-12)
    np.testing.assert_allclose(g["b"][0], want["b"][0], rtol=1e-12)
    if norm_type == 2.0:
        np.testing.assert_allclose(np.sqrt(np.sum(g["w"] ** 2) + np.sum(g["b"][0] ** 2)),
                                   0.7, rtol=1e-5)


def test_clip_grad_norm__under_jit_writes_back_and_checks_nonfinite():
    g = {"a": np.array([3.0, 4.0])}
    total = fc.jit(lambda g: optim.clip_grad_norm_(g, 1.0))(g)
    np.testing.assert_allclose(total, 5.0)
    np.testing.assert_allclose(g["a"], [3.0 / (5 + 1e-6), 4.0 / (5 + 1e-6)], rtol=1e-12)
    bad = {"a": np.array([np.inf, 1.0])}
    with pytest.raises(RuntimeError, match=r"norm of order 2.0 .* is inf, so it cannot be clipped"):
        optim.clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(bad["a"], [np.inf, 1.0])      # nothing scaled
    with pytest.raises(RuntimeError, match="cannot be clipped"):
        optim.clip_grad_norm(bad, 1.0, error_if_nonfinite=True)
    with pytest.raises(TypeError, match=r"clip_grad_norm_: leaf grads\[0\] is float.*in "
                                        r"place"):
        optim.clip_grad_norm_([1.0], 1.0)
    with pytest.raises(ValueError, match="norm_type must be positive"):
        optim.clip_grad_norm_([np.ones(2)], 1.0, norm_type=0)


def test_clip_grad_norm__is_reachable_under_its_torch_name():
    from functorch_core import nn
    assert nn.utils.clip_grad_norm_ is optim.clip_grad_norm_
    assert nn.utils.clip_grad_value_ is optim.clip_grad_value_


def test_clip_grad_value__clamps_in_place():
    a = np.array([-3.0, 0.2, 5.0])
    assert optim.clip_grad_value_({"a": a}, 1.0) is None
    np.testing.assert_array_equal(a, [-1.0, 0.2, 1.0])


# ---- schedules ----------------------------------------------------------------------------

SCHEDULES = {
    "step_lr": (optim.step_lr(0.1, 7, 0.5), lambda t: 0.1 * 0.5 ** (t // 7)),
    "cosine": (optim.cosine(0.1, 10, 0.01),
               lambda t: 0.01 + 0.09 * (1 + math.cos(math.pi * t / 10)) / 2),
    "linear_warmup": (optim.linear_warmup(0.1, 8, 0.2, 0.9),
                      lambda t: 0.1 * (0.2 + 0.7 * min(t, 8) / 8)),
    "join": (optim.join([optim.constant(0.5), optim.step_lr(0.1, 3)], [4]),
             lambda t: 0.5 if t < 4 else 0.1 * 0.1 ** ((t - 4) // 3)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_closed_forms(name):
    sched, ref = SCHEDULES[name]
    jitted = fc.jit(sched)
    for t in range(30):
        assert float(sched(t)) == pytest.approx(ref(t), rel=1e-13, abs=1e-15)
        assert float(jitted(np.asarray(t))) == pytest.approx(ref(t), rel=1e-13, abs=1e-15)


def test_one_cycle_numpy_reference():
    sched = optim.one_cycle(0.3, 100)
    initial, final = 0.3 / 25, 0.3 / 25 / 1e4

    def ref(t):
        def cos(a, b, pct):
            return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)
        return cos(initial, 0.3, t / 29) if t <= 29 else cos(0.3, final, (t - 29) / 70)
    for t in range(100):
        assert float(sched(t)) == pytest.approx(ref(t), rel=1e-13)
    assert float(sched(29)) == pytest.approx(0.3)
    assert float(sched(99)) == pytest.approx(final)


@pytest.mark.parametrize("kind", ["step", "cosine", "linear", "one_cycle", "one_cycle3",
                                  "sequential"])
def test_schedules_match_torch(kind):
    torch = pytest.importorskip("torch")
    L = torch.optim.lr_scheduler
    makers = {
        "step": (lambda o: L.StepLR(o, 7, 0.5), optim.step_lr(0.1, 7, 0.5)),
        "cosine": (lambda o: L.CosineAnnealingLR(o, 10, 0.01), optim.cosine(0.1, 10, 0.01)),
        "linear": (lambda o: L.LinearLR(o, 0.2, 0.9, 8), optim.linear_warmup(0.1, 8, 0.2, 0.9)),
        "one_cycle": (lambda o: L.OneCycleLR(o, 0.3, total_steps=40),
                      optim.one_cycle(0.3, 40)),
        "one_cycle3": (lambda o: L.OneCycleLR(o, 0.3, total_steps=40, three_phase=True,
                                              anneal_strategy="linear", pct_start=0.25),
                       optim.one_cycle(0.3, 40, pct_start=0.25, three_phase=True,
                                       anneal_strategy="linear")),
        "sequential": (lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 5),
                                                    L.CosineAnnealingLR(o, 20)], [5]),
                       optim.join([optim.linear_warmup(0.1, 5, 0.1), optim.cosine(0.1, 20)],
                                  [5])),
    }
    make, ours = makers[kind]
    topt = torch.optim.SGD([torch.zeros(1)], lr=0.1, momentum=0.9)
    sched = make(topt)
    jitted = fc.jit(ours)
    for t in range(40):
        expected = sched.get_last_lr()[0]
        assert float(ours(t)) == pytest.approx(expected, rel=1e-12, abs=1e-16)
        assert float(jitted(np.asarray(t))) == pytest.approx(expected, rel=1e-12, abs=1e-16)
        topt.step()
        sched.step()


def test_schedule_errors():
    with pytest.raises(ValueError, match="one schedule more than boundaries"):
        optim.join([optim.constant(0.1)], [3])
    with pytest.raises(ValueError, match="anneal_strategy"):
        optim.one_cycle(0.1, 10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="T_max"):
        optim.cosine(0.1, 0)


# ---- stateful wrappers --------------------------------------------------------------------

def test_stateful_adam_updates_arrays_in_place():
    params, grads = _problem()
    arrays = {k: v.copy() for k, v in params.items()}
    ids = {k: id(v) for k, v in arrays.items()}
    opt = optim.Adam(arrays.items(), lr=0.1, amsgrad=True)
    for g in grads:
        opt.zero_grad()
        opt.step(g)
    history, _ = _run(optim.adam(lr=0.1, amsgrad=True), params, grads)
    for k in params:
        assert id(arrays[k]) == ids[k]
        np.testing.assert_allclose(arrays[k], history[-1][k], rtol=1e-12, atol=0)


def test_stateful_list_of_arrays():
    params, grads = _problem()
    arrays = [params["w"].copy(), params["b"].copy()]
    opt = optim.SGD(arrays, lr=0.1, momentum=0.9)
    for g in grads:
        opt.step([g["w"], g["b"]])
    np.testing.assert_allclose(arrays[0], _ref_sgd(params["w"], [g["w"] for g in grads], 0.1,
                                                   0.9)[-1], rtol=1e-12)


def _model_problem():
    from functorch_core import nn
    fc.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.Tanh(),
                          nn.Linear(4, 2, dtype=np.float64))
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    return model, x, y


def _model_loss(m, x, y):
    return ((m(x) - y) ** 2).mean()


@pytest.mark.parametrize("given, form", [           # unnamed arrays + a dict: an error, below
    (g, f) for g in ("parameters", "named_parameters", "dict")
    for f in ("module", "dict", "list") if (g, f) != ("parameters", "dict")])
def test_stateful_optimizers_take_module_params_and_step_with_what_grad_returns(given, form):
    model, x, y = _model_problem()
    ref = {k: np.array(v) for k, v in model.named_parameters()}
    params = {"parameters": model.parameters(), "named_parameters": model.named_parameters(),
              "dict": dict(model.named_parameters())}[given]
    opt = optim.Adam(params, lr=0.05)
    fopt = optim.adam(lr=0.05)
    state = fopt.init(ref)
    arrays = dict(model.named_parameters())
    for _ in range(3):
        g = fc.grad(_model_loss)(model, x, y)
        assert isinstance(g, type(model))
        opt.step({"module": g, "dict": dict(g.named_parameters()),
                  "list": list(g.parameters())}[form])
        gref = fc.grad(lambda p: _model_loss(lambda t: fc.functional_call(model, p, t), x,
                                             y))(ref)
        ref, state = fopt.update(gref, state, ref)
    for k, v in model.named_parameters():
        assert v is arrays[k]                              # updated in place
        np.testing.assert_allclose(v, ref[k], rtol=1e-12, atol=1e-15)


def test_stateful_wrong_arguments_say_what_to_pass():
    model, x, y = _model_problem()
    with pytest.raises(TypeError, match=r"Adam\(params\): got a Module \(Sequential\); "
                                        r"pass model\.parameters\(\), "
                                        r"model\.named_parameters\(\), a dict"):
        optim.Adam(model, lr=0.1)
    opt = optim.Adam(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match=r"Adam\.step\(grads\): got a value of type int; "
                                        r"pass what fc\.grad returned for the module \(a "
                                        r"Module of gradients\)"):
        opt.step(3)
    with pytest.raises(ValueError, match=r"got a list of 1 gradients; this optimizer has 4 "
                                         r"parameters"):
        opt.step([np.zeros((4, 3))])
    with pytest.raises(ValueError, match=r"got a dict of named gradients, but this optimizer "
                                         r"was built from unnamed arrays"):
        opt.step(dict(fc.grad(_model_loss)(model, x, y).named_parameters()))
    other = fc.grad(lambda m: (m(x) ** 2).sum())(model[0])
    with pytest.raises(ValueError, match=r"got a Linear of gradients with parameters "
                                         r"\{'weight': \(4, 3\), 'bias': \(4,\)\}, which "
                                         r"do not match"):
        opt.step(other)
    ws = [p for n, p in model.named_parameters() if n.endswith("weight")]
    bs = [p for n, p in model.named_parameters() if n.endswith("bias")]
    split = optim.SGD([{"params": ws, "weight_decay": 0.1}, {"params": bs}], lr=0.1)
    with pytest.raises(ValueError, match=r"param groups hold unnamed arrays, which cannot be "
                                         r"matched"):
        split.step(fc.grad(_model_loss)(model, x, y))
    named = dict(model.named_parameters())              # named groups: matched by name
    split = optim.SGD([{"params": {k: v for k, v in named.items() if "weight" in k},
                        "weight_decay": 0.1},
                       {"params": {k: v for k, v in named.items() if "bias" in k}}], lr=0.1)
    before = {k: np.array(v) for k, v in named.items()}
    g = fc.grad(_model_loss)(model, x, y)
    split.step(g)
    np.testing.assert_allclose(model[0].weight, before["0.weight"] - 0.1 * (
        g[0].weight + 0.1 * before["0.weight"]), rtol=1e-12)
    np.testing.assert_allclose(model[2].bias, before["2.bias"] - 0.1 * g[2].bias, rtol=1e-12)
    sub = optim.SGD(model[2].parameters(), lr=0.1)       # a submodule's: its own grads
    before = np.array(model[2].weight)
    g = fc.grad(_model_loss)(model, x, y)
    sub.step(g[2])
    np.testing.assert_allclose(model[2].weight, before - 0.1 * g[2].weight, rtol=1e-12)


def test_stateful_bad_grads_leave_arrays_untouched():
    params, grads = _problem()
    arrays = {k: v.copy() for k, v in params.items()}
    opt = optim.SGD(arrays, lr=0.1)
    with pytest.raises(ValueError, match=r"SGD.step\(grads\): got a dict with keys \['w'\]; "
                                         r"grads must be keyed like the parameters "
                                         r"\['b', 'w'\]"):
        opt.step({"w": grads[0]["w"]})
    with pytest.raises(ValueError, match="shape"):
        opt.step({"w": grads[0]["w"], "b": np.zeros(5)})
    for k in params:
        np.testing.assert_array_equal(arrays[k], params[k])


@pytest.mark.parametrize("cls, kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.1, amsgrad=True)),
                                     ("AdamW", dict(lr=0.1, weight_decay=0.2))])
def test_state_dict_round_trip_continues_identically(cls, kw, tmp_path):
    params, grads = _problem()
    a = {k: v.copy() for k, v in params.items()}
    opt = getattr(optim, cls)(a, **kw)
    for g in grads[:3]:
        opt.step(g)
    fc.save(opt.state_dict(), tmp_path / "opt.npz")
    b = {k: v.copy() for k, v in a.items()}
    opt2 = getattr(optim, cls)(b, **kw)
    opt2.load_state_dict(fc.load(tmp_path / "opt.npz"))
    for g in grads[3:]:
        opt.step(g)
        opt2.step(g)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_state_dict_layout_matches_torch():
    torch = pytest.importorskip("torch")
    params, grads = _problem()
    for ours, theirs, kw in [("Adam", "Adam", dict(lr=0.1, amsgrad=True)),
                             ("SGD", "SGD", dict(lr=0.1, momentum=0.9)),
                             ("SGD", "SGD", dict(lr=0.1)),
                             ("AdamW", "AdamW", dict(lr=0.1))]:
        arrays = {k: v.copy() for k, v in params.items()}
        opt = getattr(optim, ours)(arrays, **kw)
        tparams = [torch.tensor(v, requires_grad=True) for v in params.values()]
        topt = getattr(torch.optim, theirs)(tparams, **kw)
        for g in grads[:2]:
            opt.step(g)
            for tp, k in zip(tparams, params, strict=True):
                tp.grad = torch.tensor(g[k])
            topt.step()
        sd, tsd = opt.state_dict(), topt.state_dict()
        assert sorted(sd["state"]) == sorted(tsd["state"])
        for i, entry in tsd["state"].items():
            assert sorted(sd["state"][i]) == sorted(entry), ours
            for key, value in entry.items():
                np.testing.assert_allclose(sd["state"][i][key], value.numpy(), rtol=1e-12)
        assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
        for key, value in sd["param_groups"][0].items():
            if key in tsd["param_groups"][0] and key != "params":
                assert tsd["param_groups"][0][key] == value, (ours, key)


def test_load_state_dict_errors():
    params, grads = _problem()
    opt = optim.Adam({k: v.copy() for k, v in params.items()}, lr=0.1)
    opt.step(grads[0])
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = np.zeros(7)
    other = optim.Adam({k: v.copy() for k, v in params.items()}, lr=0.1)
    with pytest.raises(ValueError, match=r"state 'exp_avg' of parameter 'w' has shape \(7,\)"):
        other.load_state_dict(sd)
    with pytest.raises(ValueError, match="hyper-parameters"):
        optim.SGD({k: v.copy() for k, v in params.items()}, lr=0.1).load_state_dict(
            opt.state_dict())


# ---- composition with the transforms ------------------------------------------------------

@pytest.mark.parametrize("factory, kw", [(optim.sgd, dict(lr=0.1, momentum=0.9)),
                                         (optim.adam, dict(lr=0.1, amsgrad=True)),
                                         (optim.rmsprop, dict(lr=0.1, centered=True,
                                                              momentum=0.3))])
def test_vmap_over_an_ensemble_matches_loop(factory, kw):
    rng = np.random.default_rng(1)
    opt = factory(**kw)
    params = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal((4, 2))}
    grads = [{k: rng.standard_normal(v.shape) for k, v in params.items()} for _ in range(3)]
    p, s = params, fc.vmap(opt.init)(params)
    for g in grads:
        p, s = fc.vmap(opt.update)(g, s, p)
    for e in range(4):
        pe = {k: v[e] for k, v in params.items()}
        se = opt.init(pe)
        for g in grads:
            pe, se = opt.update({k: v[e] for k, v in g.items()}, se, pe)
        for k in params:
            np.testing.assert_allclose(p[k][e], pe[k], rtol=1e-13, atol=1e-15)


def test_grad_through_inner_sgd_steps():
    from functorch_core.testing import check_grads

    opt = optim.sgd(lr=0.1, momentum=0.5)

    def outer(w):
        p, s = {"w": w}, opt.init({"w": w})
        for _ in range(2):
            g = fc.grad(lambda q: fc.numpy.sum(fc.numpy.sin(q["w"]) ** 2))(p)
            p, s = opt.update(g, s, p)
        return fc.numpy.sum(p["w"] ** 3)

    check_grads(outer, (np.array([0.3, -1.2, 0.8]),), order=1)


@pytest.mark.parametrize("cls, kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1)),
                                     ("Adam", dict(lr=0.1, amsgrad=True)),
                                     ("AdamW", dict(lr=0.1))])
def test_load_torch_state_dict_continues_torch_trajectory(cls, kw):
    torch = pytest.importorskip("torch")
    params, grads = _problem()
    tparams = [torch.tensor(v, requires_grad=True) for v in params.values()]
    topt = getattr(torch.optim, cls)(tparams, **kw)

    def torch_step(g):
        for tp, k in zip(tparams, params, strict=True):
            tp.grad = torch.tensor(g[k])
        topt.step()

    for g in grads[:2]:
        torch_step(g)
    tsd = topt.state_dict()
    sd = {"state": {i: {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in e.items()}
                    for i, e in tsd["state"].items()},
          "param_groups": tsd["param_groups"]}
    arrays = {k: tp.detach().numpy().copy() for k, tp in zip(params, tparams, strict=True)}
    opt = getattr(optim, cls)(arrays, **kw)
    opt.load_state_dict(sd)
    for g in grads[2:]:
        torch_step(g)
        opt.step(g)
    for k, tp in zip(params, tparams, strict=True):
        np.testing.assert_allclose(arrays[k], tp.detach().numpy(), rtol=1e-12, atol=1e-12)
    if cls == "Adam":
        with pytest.raises(ValueError, match="decoupled_weight_decay=True"):
            sd["param_groups"][0]["decoupled_weight_decay"] = True
            optim.Adam({k: v.copy() for k, v in arrays.items()}, **kw).load_state_dict(sd)
