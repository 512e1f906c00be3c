"""lax-style functions: structured primitives below the NumPy API.

Convolutions and windowed reductions (``conv``), and structured control flow
(``control_flow``), each a primitive with every transform rule.
"""

from .conv import conv, conv_dimension_numbers, conv_general_dilated, conv_transpose  # noqa: F401
from .windowed import (  # noqa: F401
    adaptive_avg_pool,
    adaptive_max_pool,
    avg_pool,
    max_pool,
    reduce_window,
)
