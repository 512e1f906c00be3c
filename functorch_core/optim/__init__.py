"""Optimizers and learning-rate schedules (``torch.optim``'s formulas, as pure functions).

The functional optimizers are ``(init, update)`` pairs over pytrees of arrays (the name,
hyper-parameters and state slots are attributes: ``opt.name``, ``opt.hyperparams``,
``opt.slots``)::

    init, update = optim.adam(lr=1e-3)   # or optim.adam(lr=optim.cosine(1e-3, T_max=1000))
    state = init(params)
    params, state = update(grads, state, params)   # pure; jit-able

Clipping: ``clip_grad_norm(grads, max_norm)`` returns ``(clipped, norm)`` (functional,
jit-able); ``clip_grad_norm_(grads, max_norm)`` scales the arrays in place and returns the
norm, as ``torch.nn.utils.clip_grad_norm_``.

``SGD``, ``Adam``, ``AdamW``, ``RMSprop`` and ``Adagrad`` wrap them for module users
(``optim.Adam(model.parameters())``, ``opt.step(fc.grad(loss)(model, x, y))``): they
hold the state and write the new values into the parameter arrays in place; like
``torch.optim`` they take param groups (``[{"params": ..., "lr": ...}, ...]``) whose
hyper-parameters may change between steps.
"""

from ._base import FunctionalOptimizer
from ._optimizers import adagrad, adam, adamw, lion, rmsprop, sgd
from .clip import clip_grad_norm, clip_grad_norm_, clip_grad_value, clip_grad_value_
from .schedules import constant, cosine, join, linear_warmup, one_cycle, step_lr
from .stateful import SGD, Adagrad, Adam, AdamW, RMSprop

__all__ = [
    "SGD", "Adagrad", "Adam", "AdamW", "FunctionalOptimizer", "RMSprop", "adagrad", "adam",
    "adamw", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
    "clip_grad_value", "constant", "cosine", "join", "linear_warmup", "lion", "one_cycle",
    "rmsprop", "sgd", "step_lr",
]
