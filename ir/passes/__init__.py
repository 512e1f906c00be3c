"""Graph passes: each takes a Graph and returns a new one, leaving its input untouched.

``generic``: dead-code elimination, CSE, constant folding, inlining and the ``simplify``
pipeline; ``products`` and ``algebra``: rewrites of transposed, outer and diagonal
products; ``scan_outputs``: stacked scan outputs forwarded without a loop; ``freezing``:
the rewrites ``freeze`` applies to a graph with constant weights.
"""

from .generic import (
    CUSTOM_CALLS,
    FOLD_MAX_ELEMENTS,
    FOLD_MAX_SAME_SIZE,
    cse,
    dce,
    fold_constants,
    inline,
    lower_custom,
    simplify,
)

__all__ = ["CUSTOM_CALLS", "FOLD_MAX_ELEMENTS", "FOLD_MAX_SAME_SIZE", "cse", "dce",
           "fold_constants", "inline", "lower_custom", "simplify"]
