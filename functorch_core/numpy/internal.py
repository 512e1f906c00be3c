"""The NumPy layer's interface for the layers above it (``lax``, ``nn``, ``optim``,
``scipy`` and the package root): the operand conversions and checks their functions are
written with.

This is not the user API (that is ``functorch_core.numpy``). The packages above import
these names from here, never from the NumPy layer's private modules, so the modules
behind this surface can be rearranged without touching them.
"""

from ._core import (
    HANDLED_FUNCTIONS,
    aval,
    cast,
    complex_from_parts,
    is_tracer,
    operand,
    result_type,
    to_result,
)
from ._creation import array_operand
from ._methods import install as install_tracer_methods
from ._refusals import NOT_YET, REFUSED
from .linalg import _float as linalg_float
from .linalg import _hermitian_from as hermitian_from
from .linalg import _mH as conj_transpose
from .linalg import _stacked as linalg_stacked

# HANDLED_FUNCTIONS (what __array_function__ runs), REFUSED and NOT_YET (the reasons a
# refusal gives) are read by tests/numpy/test_coverage.py
__all__ = ["HANDLED_FUNCTIONS", "NOT_YET", "REFUSED", "array_operand", "aval", "cast",
           "complex_from_parts", "conj_transpose",
           "hermitian_from", "install_tracer_methods", "is_tracer", "linalg_float",
           "linalg_stacked", "operand", "result_type", "to_result"]
