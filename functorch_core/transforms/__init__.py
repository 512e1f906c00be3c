"""Composable function transforms: ``vmap`` (and, with autodiff, ``grad``, ``jvp``, ``vjp``)."""

from . import rules  # noqa: F401  (assembles the rule tables the passes read)
from .autodiff import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from .custom import custom_jvp, custom_vjp, stop_gradient
from .functionalize_transform import functionalize
from .vmap import vmap

__all__ = [
    "custom_jvp", "custom_vjp", "functionalize",
    "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
    "linearize", "stop_gradient", "value_and_grad", "vjp", "vmap",
]
