"""The SciPy layer's interface for its subpackages (``scipy.stats``): the argument
conversion of ``scipy.special`` and the double-double arithmetic.

Not the user API (that is ``functorch_core.scipy.special`` and ``.stats``).
"""

from . import _double_double as double_double
from ._operands import ComplexArgument, float_operands

__all__ = ["ComplexArgument", "double_double", "float_operands"]
