"""PyTorch's optimizers as pure ``(init, update)`` pairs over pytrees of arrays.

Each update follows ``torch.optim``'s single-tensor code line by line (same operation
order), so a float64 step matches PyTorch to rounding.
"""

from __future__ import annotations

from .. import numpy as fnp
from ._base import full_like, make_optimizer, scalar


def _zeros(_slot, p):
    return full_like(p, 0.0)


def _check(who, **values):
    for name, v in values.items():
        if v is not None and not callable(v) and v < 0:
            raise ValueError(f"{who}: {name} must be >= 0, got {v}")


def sgd(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
        maximize=False, master_dtype=None):
    """Stochastic gradient descent, ``torch.optim.SGD``'s update.

    Args:
        lr (float or callable): learning rate, or a schedule ``step -> lr`` (see
            ``optim.cosine`` etc.; called with the number of steps already taken). Default 1e-3.
        momentum (float): momentum factor. Default 0.
        dampening (float): dampening of the momentum. Default 0.
        weight_decay (float): L2 penalty added to the gradient. Default 0.
        nesterov (bool): Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        maximize (bool): ascend instead of descend. Default False.
        master_dtype (dtype): keep a copy of the float parameters in this dtype (e.g.
            ``float32`` for bfloat16 parameters) and update it; the parameters are its
            rounding. Default None (update the parameters in their own dtype).

    Returns:
        A ``FunctionalOptimizer`` ``(init, update)``.

    Example::

        >>> opt = optim.sgd(lr=0.1, momentum=0.9)
        >>> state = opt.init(params)
        >>> params, state = opt.update(grad(loss)(params, x), state, params)
    """
    _check("sgd", lr=lr, momentum=momentum, weight_decay=weight_decay)
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("sgd: nesterov momentum requires a momentum and zero dampening")
    slots = ("momentum_buffer",) if momentum != 0 else ()

    def leaf(g, p, s, step, lr_t):
        d_p = -g if maximize else g
        if weight_decay != 0:
            d_p = d_p + weight_decay * p
        out = {}
        if momentum != 0:
            buf = fnp.where(step == 1, d_p, s["momentum_buffer"] * momentum + (1 - dampening) * d_p)
            out["momentum_buffer"] = buf
            d_p = d_p + momentum * buf if nesterov else buf
        return p - lr_t * d_p, out

    hp = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
              nesterov=nesterov, maximize=maximize)
    return make_optimizer("sgd", hp, slots, _zeros, leaf, master_dtype)


def _adam_like(name, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled,
               master_dtype):
    _check(name, lr=lr, eps=eps, weight_decay=weight_decay)
    beta1, beta2 = betas
    if not (0.0 <= beta1 < 1.0 and 0.0 <= beta2 < 1.0):
        raise ValueError(f"{name}: betas must be in [0, 1), got {betas}")
    slots = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())

    def leaf(g, p, s, step, lr_t):
        if maximize:
            g = -g
        if decoupled:
            p = p * (1 - lr_t * weight_decay)
        elif weight_decay != 0:
            g = g + weight_decay * p
        exp_avg = s["exp_avg"] + (1 - beta1) * (g - s["exp_avg"])
        exp_avg_sq = s["exp_avg_sq"] * beta2 + (1 - beta2) * (g * g)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = scalar(lr_t / bias_correction1, p)
        bc2_sqrt = scalar(fnp.sqrt(bias_correction2), p)
        out = {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        if amsgrad:
            out["max_exp_avg_sq"] = fnp.maximum(s["max_exp_avg_sq"], exp_avg_sq)
            denom = fnp.sqrt(out["max_exp_avg_sq"]) / bc2_sqrt + eps
        else:
            denom = fnp.sqrt(exp_avg_sq) / bc2_sqrt + eps
        return p - step_size * (exp_avg / denom), out

    hp = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
              maximize=maximize)
    return make_optimizer(name, hp, slots, _zeros, leaf, master_dtype)


def adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
         maximize=False, master_dtype=None):
    """Adam, ``torch.optim.Adam``'s update (L2 ``weight_decay`` added to the gradient).

    Args:
        lr (float or callable): learning rate or schedule ``step -> lr``. Default 1e-3.
        betas (tuple[float, float]): decay rates of the first and second moments.
            Default (0.9, 0.999).
        eps (float): added to the denominator. Default 1e-8.
        weight_decay (float): L2 penalty. Default 0.
        amsgrad (bool): keep the running maximum of the second moment. Default False.
        maximize (bool): ascend instead of descend. Default False.
        master_dtype (dtype): keep a copy of the float parameters in this dtype (e.g.
            ``float32`` for bfloat16 parameters) and update it; the parameters are its
            rounding. Default None (update the parameters in their own dtype).

    Returns:
        A ``FunctionalOptimizer``; its state holds ``step``, ``exp_avg``, ``exp_avg_sq``
        (and ``max_exp_avg_sq``), the last three shaped like the params.

    Example::

        >>> opt = optim.adam(lr=1e-3)
        >>> state = opt.init(params)
        >>> step = jit(lambda p, s, x: opt.update(grad(loss)(p, x), s, p))
        >>> params, state = step(params, state, x)
    """
    return _adam_like("adam", lr, betas, eps, weight_decay, amsgrad, maximize, False,
                      master_dtype)


def adamw(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
          maximize=False, master_dtype=None):
    """AdamW, ``torch.optim.AdamW``'s update: ``params *= 1 - lr * weight_decay``, then Adam.

    Args:
        lr (float or callable): learning rate or schedule ``step -> lr``. Default 1e-3.
        betas (tuple[float, float]): moment decay rates. Default (0.9, 0.999).
        eps (float): added to the denominator. Default 1e-8.
        weight_decay (float): decoupled weight decay. Default 1e-2.
        amsgrad (bool): keep the running maximum of the second moment. Default False.
        maximize (bool): ascend instead of descend. Default False.
        master_dtype (dtype): keep a copy of the float parameters in this dtype (e.g.
            ``float32`` for bfloat16 parameters) and update it; the parameters are its
            rounding. Default None (update the parameters in their own dtype).

    Example::

        >>> opt = optim.adamw(lr=1e-3, weight_decay=0.05)
    """
    return _adam_like("adamw", lr, betas, eps, weight_decay, amsgrad, maximize, True,
                      master_dtype)


def rmsprop(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, *,
            maximize=False, master_dtype=None):
    """RMSprop, ``torch.optim.RMSprop``'s update.

    Args:
        lr (float or callable): learning rate or schedule. Default 1e-2.
        alpha (float): smoothing constant of the squared-gradient average. Default 0.99.
        eps (float): added to the denominator (after the square root). Default 1e-8.
        weight_decay (float): L2 penalty. Default 0.
        momentum (float): momentum factor. Default 0.
        centered (bool): normalise by the gradient's estimated variance. Default False.
        maximize (bool): ascend instead of descend. Default False.
        master_dtype (dtype): keep a copy of the float parameters in this dtype (e.g.
            ``float32`` for bfloat16 parameters) and update it; the parameters are its
            rounding. Default None (update the parameters in their own dtype).

    Example::

        >>> opt = optim.rmsprop(lr=1e-2, centered=True)
    """
    _check("rmsprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
    slots = ("square_avg",) + (("momentum_buffer",) if momentum > 0 else ()) + \
        (("grad_avg",) if centered else ())

    def leaf(g, p, s, step, lr_t):
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        square_avg = s["square_avg"] * alpha + (1 - alpha) * (g * g)
        out = {"square_avg": square_avg}
        if centered:
            grad_avg = s["grad_avg"] + (1 - alpha) * (g - s["grad_avg"])
            out["grad_avg"] = grad_avg
            avg = fnp.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = fnp.sqrt(square_avg)
        avg = avg + eps
        if momentum > 0:
            buf = s["momentum_buffer"] * momentum + g / avg
            out["momentum_buffer"] = buf
            return p - lr_t * buf, out
        return p - lr_t * (g / avg), out

    hp = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
              centered=centered, maximize=maximize)
    return make_optimizer("rmsprop", hp, slots, _zeros, leaf, master_dtype)


def adagrad(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
            *, maximize=False, master_dtype=None):
    """Adagrad, ``torch.optim.Adagrad``'s update.

    Args:
        lr (float or callable): learning rate or schedule. Default 1e-2.
        lr_decay (float): ``clr = lr / (1 + (step - 1) * lr_decay)``. Default 0.
        weight_decay (float): L2 penalty. Default 0.
        initial_accumulator_value (float): the sum of squares starts here. Default 0.
        eps (float): added to the denominator. Default 1e-10.
        maximize (bool): ascend instead of descend. Default False.
        master_dtype (dtype): keep a copy of the float parameters in this dtype (e.g.
            ``float32`` for bfloat16 parameters) and update it; the parameters are its
            rounding. Default None (update the parameters in their own dtype).

    Example::

        >>> opt = optim.adagrad(lr=0.1, lr_decay=1e-3)
    """
    _check("adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
           initial_accumulator_value=initial_accumulator_value, eps=eps)

    def init_sum(_slot, p):
        return full_like(p, initial_accumulator_value)

    def leaf(g, p, s, step, lr_t):
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        clr = scalar(lr_t / (1 + (step - 1) * lr_decay), p)
        state_sum = s["sum"] + g * g
        std = fnp.sqrt(state_sum) + eps
        return p - clr * (g / std), {"sum": state_sum}

    hp = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
              initial_accumulator_value=initial_accumulator_value, eps=eps, maximize=maximize)
    return make_optimizer("adagrad", hp, ("sum",), init_sum, leaf, master_dtype)


def lion(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *, maximize=False,
         master_dtype=None):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms").

    ``update = sign(beta1 * m + (1 - beta1) * g)``; ``p = p * (1 - lr * weight_decay) -
    lr * update``; ``m = beta2 * m + (1 - beta2) * g``. (Not in ``torch.optim``; the formula
    is the paper's Algorithm 2.)

    Args:
        lr (float or callable): learning rate or schedule. Default 1e-4.
        betas (tuple[float, float]): interpolation and momentum decay. Default (0.9, 0.99).
        weight_decay (float): decoupled weight decay. Default 0.
        maximize (bool): ascend instead of descend. Default False.
        master_dtype (dtype): keep a copy of the float parameters in this dtype (e.g.
            ``float32`` for bfloat16 parameters) and update it; the parameters are its
            rounding. Default None (update the parameters in their own dtype).

    Example::

        >>> opt = optim.lion(lr=3e-4, weight_decay=1.0)
    """
    _check("lion", lr=lr, weight_decay=weight_decay)
    beta1, beta2 = betas

    def leaf(g, p, s, step, lr_t):
        if maximize:
            g = -g
        m = s["exp_avg"]
        direction = fnp.sign(beta1 * m + (1 - beta1) * g)
        if weight_decay != 0:
            p = p * (1 - lr_t * weight_decay)
        return p - lr_t * direction, {"exp_avg": m * beta2 + (1 - beta2) * g}

    hp = dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay, maximize=maximize)
    return make_optimizer("lion", hp, ("exp_avg",), _zeros, leaf, master_dtype)
