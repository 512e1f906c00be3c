"""The transform layer's rule manifest: every rule module, and the tables built from them.

Each rule module registers its rules in tables of its own (``JVP_RULES``,
``TRANSPOSE_RULES``, ``BATCH_RULES``, ``NOT_BATCHED_REASONS``) and writes into no other
module's table. This module, imported by the package, assembles the tables the passes
read; a primitive registered twice is an error naming both registrations. A new rule
module is added to the lists below.

Tables that one module fills and reads alone stay there: functionalize's
``MUTATION_RULES``, ``_alias``'s ``VIEWS``/``READ_ONLY`` (and, one layer down,
``ir.updates``' ``UNVIEW``).
"""

from __future__ import annotations

from . import batching, collectives, control_flow, custom, linalg, special, transpose
from .jvp import JVP, JVP_RULES  # by name: the package's ``jvp`` is the function

JVP.include(
    JVP_RULES,
    special.JVP_RULES,
    linalg.JVP_RULES,
    control_flow.JVP_RULES,
    custom.JVP_RULES,
    collectives.JVP_RULES,
)
transpose.TRANSPOSE.include(
    transpose.TRANSPOSE_RULES,
    linalg.TRANSPOSE_RULES,
    control_flow.TRANSPOSE_RULES,
    custom.TRANSPOSE_RULES,
    collectives.TRANSPOSE_RULES,
)
batching.RULES.include(
    batching.BATCH_RULES,
    special.BATCH_RULES,
    linalg.BATCH_RULES,
    control_flow.BATCH_RULES,
    custom.BATCH_RULES,
    collectives.BATCH_RULES,
)
batching.NAMED.include(collectives.NAMED_RULES)
batching.NOT_BATCHED.include(
    batching.NOT_BATCHED_REASONS,
    custom.NOT_BATCHED_REASONS,
    collectives.NOT_BATCHED_REASONS,
)
