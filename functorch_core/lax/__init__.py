"""lax-style functions: structured primitives below the NumPy API.

Products, ``Precision`` and ``reduce_precision`` (``products``), convolutions (``conv``),
windowed reductions and pooling (``windowed``),
structured control flow (``control_flow``) and collectives over named axes
(``parallel``: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``axis_index``), each over primitives with every transform rule.
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
from .parallel import (  # noqa: F401
    all_gather,
    axis_index,
    pmax,
    pmean,
    pmin,
    psum,
    psum_scatter,
)
from .products import Precision, dot, dot_general, reduce_precision  # noqa: F401
from .windowed import (  # noqa: F401
    adaptive_avg_pool,
    adaptive_max_pool,
    avg_pool,
    max_pool,
    reduce_window,
)
