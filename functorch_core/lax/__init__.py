"""lax-style functions: structured primitives below the NumPy API.

Convolutions (``conv``), windowed reductions and pooling (``windowed``), and
structured control flow (``control_flow``), each over primitives with every transform
rule.
"""

from .control_flow import (  # noqa: F401
    associative_scan,
    cond,
    fori_loop,
    map,
    scan,
    switch,
    while_loop,
)
from .conv import conv, conv_dimension_numbers, conv_general_dilated, conv_transpose  # noqa: F401
from .windowed import (  # noqa: F401
    adaptive_avg_pool,
    adaptive_max_pool,
    avg_pool,
    max_pool,
    reduce_window,
)
