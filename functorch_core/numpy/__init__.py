"""The NumPy API over primitives: ``import functorch_core.numpy as fnp``.

On concrete arrays outside any transform, each function returns what NumPy
returns (values and dtype); inside ``jit``/``grad``/``vmap`` it records
primitives. Importing this module also installs the NumPy surface of tracers,
so that unmodified NumPy code (``np.tanh(x @ w)``) traces.
"""

import numpy as _np

from functorch_core.ir import dtypes as _dtypes

from . import (
    _arrangement,
    _array_api,
    _calculus,
    _convolve,
    _creation,
    _editing,
    _elementwise,
    _extras,
    _functional,
    _histograms,
    _indexing,
    _info,
    _linalg,
    _math,
    _mutation,
    _polynomial,
    _ranges,
    _reductions,
    _rounding,
    _setops,
    _shape,
    _sorting,
    _static,
    _statistics,
    fft,  # noqa: F401  (fnp.fft: the numpy.fft namespace)
    linalg,  # noqa: F401  (fnp.linalg: the numpy.linalg namespace)
)
from ._arrangement import *  # noqa: F403
from ._array_api import *  # noqa: F403
from ._calculus import *  # noqa: F403
from ._convolve import *  # noqa: F403
from ._creation import *  # noqa: F403
from ._editing import *  # noqa: F403
from ._elementwise import *  # noqa: F403
from ._extras import *  # noqa: F403
from ._functional import *  # noqa: F403
from ._histograms import *  # noqa: F403
from ._indexing import *  # noqa: F403
from ._info import *  # noqa: F403
from ._linalg import *  # noqa: F403
from ._math import *  # noqa: F403
from ._mutation import *  # noqa: F403
from ._polynomial import *  # noqa: F403
from ._ranges import *  # noqa: F403
from ._reductions import *  # noqa: F403
from ._rounding import *  # noqa: F403
from ._setops import *  # noqa: F403
from ._shape import *  # noqa: F403
from ._sorting import *  # noqa: F403
from ._static import *  # noqa: F403
from ._statistics import *  # noqa: F403

bool_, int8, int16, int32, int64, uint8 = (_np.bool_, _np.int8, _np.int16, _np.int32,
                                           _np.int64, _np.uint8)
float16, float32, float64, complex64, complex128 = (_np.float16, _np.float32, _np.float64,
                                                    _np.complex64, _np.complex128)
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
ndarray = _np.ndarray
uint32 = _np.uint32      # random keys and bits (functorch_core.random)
bfloat16 = _dtypes.bfloat16.type     # ml_dtypes' scalar type, as jax.numpy.bfloat16
finfo, iinfo = _np.finfo, _np.iinfo  # NumPy's know bfloat16 once ml_dtypes is imported

__all__ = [*_elementwise.__all__, *_shape.__all__, *_indexing.__all__, *_sorting.__all__,
           *_reductions.__all__, *_creation.__all__, *_linalg.__all__,
           *_mutation.__all__, *_rounding.__all__, *_convolve.__all__, *_info.__all__,
           *_arrangement.__all__, *_math.__all__, *_statistics.__all__,
           *_setops.__all__, *_calculus.__all__,
           *_histograms.__all__, *_polynomial.__all__,
           *_ranges.__all__, *_editing.__all__,
           *_functional.__all__, *_array_api.__all__, *_static.__all__, *_extras.__all__]

# what a ufunc called on a tracer runs (``__array_ufunc__``): the elementwise ones, and
# np.matmul, a generalized ufunc
UFUNC_CALLS = {**_elementwise.UFUNCS, _np.matmul: _linalg.matmul, _np.vecdot: _array_api.vecdot,
               _np.matvec: _array_api.matvec, _np.vecmat: _array_api.vecmat}
