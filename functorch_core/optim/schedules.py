"""Learning-rate schedules: callables ``step -> lr`` in closed form.

``step`` is the number of optimizer steps already taken (PyTorch's ``last_epoch`` after that
many ``scheduler.step()`` calls); it may be a Python int, a NumPy integer or a traced array,
so a schedule passed as an optimizer's ``lr`` works under ``jit``.
"""

from __future__ import annotations

import itertools
import math

from .. import numpy as fnp


def constant(lr):
    """``lr`` at every step. Example: ``join([constant(0.1), cosine(0.1, 90)], [10])``."""
    def schedule(step):
        return lr + 0.0 * step
    return schedule


def step_lr(lr, step_size, gamma=0.1):
    """``torch.optim.lr_scheduler.StepLR``: ``lr * gamma ** (step // step_size)``.

    Args:
        lr (float): the initial learning rate.
        step_size (int): steps between decays.
        gamma (float): decay factor. Default 0.1.

    Example::

        >>> optim.step_lr(0.1, step_size=30)(65)   # 0.1 * 0.1 ** 2
    """
    if step_size <= 0:
        raise ValueError(f"step_lr: step_size must be positive, got {step_size}")

    def schedule(step):
        return lr * gamma ** (step // step_size)
    return schedule


def cosine(lr, T_max, eta_min=0.0):
    """``CosineAnnealingLR``'s closed form.

    ``lr_t = eta_min + (lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``.

    Args:
        lr (float): the initial (maximum) learning rate.
        T_max (int): the half period, in steps.
        eta_min (float): the minimum learning rate. Default 0.

    Example::

        >>> optim.cosine(0.1, T_max=100)(50)   # 0.05
    """
    if T_max <= 0:
        raise ValueError(f"cosine: T_max must be positive, got {T_max}")

    def schedule(step):
        return eta_min + (lr - eta_min) * (1 + fnp.cos(math.pi * step / T_max)) / 2
    return schedule


def linear_warmup(lr, warmup_steps, start_factor=1.0 / 3, end_factor=1.0):
    """``LinearLR``: the factor goes linearly from ``start_factor`` to ``end_factor`` over
    ``warmup_steps`` steps, then stays at ``end_factor``.

    Args:
        lr (float): the base learning rate.
        warmup_steps (int): ``total_iters`` of ``LinearLR``.
        start_factor (float): factor at step 0. Default 1/3 (PyTorch's).
        end_factor (float): factor from ``warmup_steps`` on. Default 1.

    Example::

        >>> optim.linear_warmup(1e-3, 100, start_factor=0.01)(50)
    """
    if warmup_steps <= 0:
        raise ValueError(f"linear_warmup: warmup_steps must be positive, got {warmup_steps}")

    def schedule(step):
        t = fnp.minimum(step, warmup_steps)
        return lr * (start_factor + (end_factor - start_factor) * t / warmup_steps)
    return schedule


def one_cycle(max_lr, total_steps, pct_start=0.3, anneal_strategy="cos", div_factor=25.0,
              final_div_factor=1e4, three_phase=False):
    """``OneCycleLR``'s learning rate (PyTorch's defaults; momentum cycling is not done).

    Args:
        max_lr (float): the peak learning rate.
        total_steps (int): the cycle's length.
        pct_start (float): fraction of the cycle spent increasing. Default 0.3.
        anneal_strategy (str): ``'cos'`` or ``'linear'``. Default ``'cos'``.
        div_factor (float): initial lr is ``max_lr / div_factor``. Default 25.
        final_div_factor (float): final lr is ``initial_lr / final_div_factor``. Default 1e4.
        three_phase (bool): a third phase annealing back past the initial lr. Default False.

    Example::

        >>> sched = optim.one_cycle(0.1, total_steps=1000)
    """
    if total_steps <= 0:
        raise ValueError(f"one_cycle: total_steps must be positive, got {total_steps}")
    if anneal_strategy not in ("cos", "linear"):
        raise ValueError(f"one_cycle: anneal_strategy must be 'cos' or 'linear', "
                         f"got {anneal_strategy!r}")
    initial = max_lr / div_factor
    minimum = initial / final_div_factor
    if three_phase:
        phases = [(float(pct_start * total_steps) - 1, initial, max_lr),
                  (float(2 * pct_start * total_steps) - 2, max_lr, initial),
                  (total_steps - 1, initial, minimum)]
    else:
        phases = [(float(pct_start * total_steps) - 1, initial, max_lr),
                  (total_steps - 1, max_lr, minimum)]

    def anneal(start, end, pct):
        if anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (fnp.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def schedule(step):
        start_step = 0.0
        bounds = []
        for end_step, lo, hi in phases:
            bounds.append((end_step, anneal(lo, hi, (step - start_step) / (end_step - start_step))))
            start_step = end_step
        lr = bounds[-1][1]
        for end_step, value in reversed(bounds[:-1]):
            lr = fnp.where(step <= end_step, value, lr)
        return lr
    return schedule


def join(schedules, boundaries):
    """Run ``schedules[i]`` between ``boundaries[i-1]`` and ``boundaries[i]``; each sees the
    steps counted from its own start (like ``SequentialLR`` and optax's ``join_schedules``).

    Args:
        schedules (list[callable]): ``len(boundaries) + 1`` schedules.
        boundaries (list[int]): increasing step counts where the next schedule takes over.

    Example::

        >>> sched = optim.join([optim.linear_warmup(0.1, 10, 0.01),
        ...                     optim.cosine(0.1, T_max=90)], [10])
    """
    schedules, boundaries = list(schedules), list(boundaries)
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join: needs one schedule more than boundaries, got {len(schedules)} "
                         f"schedules and {len(boundaries)} boundaries")
    if any(b <= a for a, b in itertools.pairwise(boundaries)):
        raise ValueError(f"join: boundaries must increase, got {boundaries}")

    def schedule(step):
        lr = schedules[0](step)
        for b, s in zip(boundaries, schedules[1:], strict=True):
            lr = fnp.where(step >= b, s(step - b), lr)
        return lr
    return schedule
