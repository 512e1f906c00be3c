"""lax-style functions: structured primitives below the NumPy API.

Convolutions and windowed reductions (``conv``), and structured control flow
(``control_flow``), each a primitive with every transform rule.
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
