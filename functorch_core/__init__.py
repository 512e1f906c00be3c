"""functorch_core: composable function transforms for NumPy code.

``jit`` compiles, ``make_graph`` shows the traced graph; transforms arrive in
``functorch_core.transforms``. ``import functorch_core.numpy as fnp`` is the
NumPy API that traces. Every subpackage is an attribute after a bare
``import functorch_core as fc``: ``fc.lax``, ``fc.nn``, ``fc.optim``, ``fc.random``,
``fc.profiler`` are imported with the package, ``fc.scipy`` and ``fc.data`` on first use.
"""

import importlib as _importlib

from functorch_core.backends.registry import default_backend  # loads the eager implementations
from functorch_core.ir import Graph, TracerError, check_graph
from functorch_core.ir.pytree import (
    pytree_dataclass,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

from . import amp, lax, numpy, optim, profiler, random
from .amp import autocast
from .api import clear_caches, jit, make_graph
from .checkpoint import load, save
from .config import config
from .deterministic import (
    are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms,
)
from .devices import backends_available, device_get, device_put

# ``map`` is lax.map (JAX's name); it is left out of __all__ so that a star import
# does not hide the builtin
from .lax import associative_scan, cond, fori_loop, scan, switch, while_loop
from .lax import map as map
from .numpy.internal import install_tracer_methods as _install_tracer_methods
from .precision import (
    default_matmul_precision,
    get_float32_matmul_precision,
    set_float32_matmul_precision,
)
from .random import manual_seed
from .transforms import (
    custom_jvp,
    custom_vjp,
    functionalize,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)

_install_tracer_methods()

from . import nn  # noqa: E402  (modules sit on the transforms above)
from .deploy import Exported, export, freeze, load_exported  # noqa: E402
from .nn.stateless import (  # noqa: E402
    combine_state_for_ensemble,
    functional_call,
    make_functional,
    make_functional_with_buffers,
    replace_all_batch_norm_modules_,
    stack_module_state,
)

__all__ = [
    "Graph", "TracerError", "check_graph", "clear_caches", "config", "default_backend", "jit",
    "make_graph",
    "numpy", "pytree_dataclass", "register_pytree_node", "tree_flatten", "tree_leaves",
    "tree_map", "tree_structure", "tree_unflatten", "vmap",
    "custom_jvp", "custom_vjp", "functionalize",
    "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
    "linearize", "stop_gradient", "value_and_grad", "vjp", "random", "manual_seed",
    "associative_scan", "cond", "fori_loop", "lax", "scan", "switch", "while_loop",
    "load", "optim", "save",
    "nn", "functional_call", "stack_module_state", "make_functional",
    "make_functional_with_buffers", "combine_state_for_ensemble",
    "replace_all_batch_norm_modules_",
    "deploy", "Exported", "export", "freeze", "load_exported",
    "profiler", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "backends_available", "device_get", "device_put",
    "set_float32_matmul_precision", "get_float32_matmul_precision",
    "default_matmul_precision",
    "scipy", "data", "distributed", "amp", "autocast",
]
__version__ = "0.1.0"

_LAZY = ("data", "distributed", "scipy")     # imported on first attribute access (PEP 562)


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f"{__name__}.{name}")   # binds it in globals()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
