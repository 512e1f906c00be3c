"""Where each public callable of NumPy and of the chosen SciPy namespaces stands on traced
arrays; tests/numpy/test_coverage.py reads the live namespaces and checks each name against
this table and the library's refusal tables, so a function new in NumPy or SciPy fails the
test until it is classified.

Categories: *supported* (traced, with an op-table row or the namespace's own tests),
*static* (reads only shapes, dtypes or Python values: works while tracing; each with a
call on a traced ``x`` of shape (3, 3)), *refused* and *not yet* (the library's tables,
functorch_core/numpy/_refusals.py and functorch_core/scipy/_special_refusals.py, whose
reasons the user reads), and *not arrays* (no array argument to trace: configuration,
printing, reading files, classes).
"""

from __future__ import annotations

import numpy as np

# numpy names supported whose op-table row has another name
ROWS = {
    "argpartition": "argpartition_kth", "partition": "partition_kth", "around": "round",
    "argwhere": "argwhere_size", "nonzero": "nonzero_size", "flatnonzero": "flatnonzero_size",
    "unique": "unique_size", "bincount": "bincount_length", "ndim": "ndim_shape_size",
    "shape": "ndim_shape_size", "size": "ndim_shape_size",
}

# NumPy's own functions that only call supported ones: name -> (a call on x, the same call
# through the function it delegates to)
DELEGATING = {
    "row_stack": (lambda x: np.row_stack((x, x)), lambda x: np.vstack((x, x))),
}

# name -> a call on a traced x (float64, shape (3, 3)); it must work while tracing
STATIC = {
    "numpy.empty": lambda x: np.empty(x.shape, x.dtype),
    "numpy.empty_like": lambda x: np.empty_like(x),
    "numpy.can_cast": lambda x: np.can_cast(x, np.float32),
    "numpy.common_type": lambda x: np.common_type(x, x),
    "numpy.min_scalar_type": lambda x: np.min_scalar_type(x),
    "numpy.einsum_path": lambda x: np.einsum_path("ij,jk->ik", x, x),
    "numpy.diag_indices_from": lambda x: np.diag_indices_from(x),
    "numpy.diag_indices": lambda x: np.diag_indices(x.shape[0]),
    "numpy.tril_indices": lambda x: np.tril_indices(x.shape[0]),
    "numpy.triu_indices": lambda x: np.triu_indices(x.shape[0], 1),
    "numpy.mask_indices": lambda x: np.mask_indices(x.shape[0], np.triu),
    "numpy.indices": lambda x: np.indices(x.shape),
    "numpy.fromfunction": lambda x: np.fromfunction(lambda i, j: i + j, x.shape),
    "numpy.broadcast_shapes": lambda x: np.broadcast_shapes(x.shape, (1, 3)),
    "numpy.promote_types": lambda x: np.promote_types(x.dtype, np.int8),
    "numpy.isdtype": lambda x: np.isdtype(x.dtype, "real floating"),
    "numpy.issubdtype": lambda x: np.issubdtype(x.dtype, np.floating),
    "numpy.mintypecode": lambda x: np.mintypecode(x.dtype.char),
    "numpy.typename": lambda x: np.typename(x.dtype.char),
    "numpy.isscalar": lambda x: np.isscalar(x),
    "numpy.iterable": lambda x: np.iterable(x),
    "numpy.bartlett": lambda x: np.bartlett(x.shape[0]),
    "numpy.blackman": lambda x: np.blackman(x.shape[0]),
    "numpy.hamming": lambda x: np.hamming(x.shape[0]),
    "numpy.hanning": lambda x: np.hanning(x.shape[0]),
    "numpy.kaiser": lambda x: np.kaiser(x.shape[0], 5.0),
    "numpy.fft.fftfreq": lambda x: np.fft.fftfreq(x.shape[0], 0.5),
    "numpy.fft.rfftfreq": lambda x: np.fft.rfftfreq(x.shape[0]),
}

_NO_ARRAY = "takes no array to trace"
NOT_ARRAYS = {
    **{f"numpy.{n}": f"configuration or information; {_NO_ARRAY}" for n in (
        "get_include", "get_printoptions", "getbufsize", "geterr", "geterrcall", "info",
        "printoptions", "set_printoptions", "setbufsize", "seterr", "seterrcall",
        "show_config", "show_runtime", "test")},
    **{f"numpy.{n}": f"formats Python numbers as text; {_NO_ARRAY}" for n in (
        "base_repr", "binary_repr", "format_float_positional", "format_float_scientific")},
    **{f"numpy.{n}": f"reads data from a buffer, file, iterator or text; {_NO_ARRAY}"
       for n in ("from_dlpack", "frombuffer", "fromfile", "fromiter", "fromregex",
                 "fromstring", "genfromtxt", "load", "loadtxt")},
    "numpy.datetime_data": f"describes a datetime dtype; {_NO_ARRAY}",
    "numpy.frompyfunc": "makes an object-dtype ufunc from a Python function (object arrays "
                        "are not in the type system); use fc.vmap on the function",
    "numpy.nested_iters": "an iterator over a concrete array's memory",
    "numpy.linalg.test": "runs NumPy's own tests", "numpy.fft.test": "runs NumPy's own tests",
    "numpy.bmat": "builds a numpy.matrix from strings or nested lists (numpy.matrix is not "
                  "supported)",
}

# classes: NumPy's scalar types (np.generic's subclasses) are recognised as such; the others
CLASSES = {
    "numpy": ("broadcast", "busdaycalendar", "dtype", "errstate", "finfo", "flatiter",
              "iinfo", "matrix", "memmap", "ndarray", "ndenumerate", "ndindex", "nditer",
              "poly1d", "recarray", "ufunc", "vectorize"),
    "numpy.linalg": ("LinAlgError",),
    "numpy.fft": (),
}

# refused without the protocols' message: NumPy does not dispatch these and converts the
# tracer (whose error names the value needed), or reads memory a tracer does not have, or
# functorch_core.numpy's version raises a TracerError with its reason
PLAIN_REFUSED = {
    "numpy.trim_zeros": "the result's length depends on the values",
    "numpy.array": "converts to a concrete ndarray; fnp.array keeps a traced array",
    "numpy.asarray": "converts to a concrete ndarray; fnp.asarray keeps a traced array",
    "numpy.asanyarray": "converts to a concrete ndarray; fnp.asarray keeps a traced array",
    "numpy.asarray_chkfinite": "raises on NaN or infinite entries, which needs the values",
    "numpy.ascontiguousarray": "a memory layout of a concrete ndarray",
    "numpy.asfortranarray": "a memory layout of a concrete ndarray",
    "numpy.require": "a memory layout of a concrete ndarray",
    "numpy.isfortran": "a memory layout of a concrete ndarray",
    "numpy.asmatrix": "numpy.matrix is not supported",
}

# scipy.stats' distributions (instances of rv_continuous, rv_discrete and the multivariate
# ones) without a traced version in functorch_core.scipy.stats: to be built, each from
# functorch_core.scipy.special's functions
STATS_NOT_YET = tuple("""
alpha anglit arcsine argus betabinom betanbinom betaprime boltzmann bradford burr burr12 chi
cosine crystalball dgamma dirichlet_multinomial dlaplace dpareto_lognorm dweibull erlang
exponnorm exponpow exponweib f fatiguelife fisk foldcauchy foldnorm gausshyper genexpon
genextreme gengamma genhalflogistic genhyperbolic geninvgauss genlogistic gennorm genpareto
gibrat gompertz gumbel_l gumbel_r halfcauchy halfgennorm halflogistic halfnorm hypergeom
hypsecant invgamma invgauss invweibull invwishart irwinhall jf_skew_t johnsonsb johnsonsu
kappa3 kappa4 ksone kstwo kstwobign landau laplace_asymmetric levy levy_l levy_stable
loggamma loglaplace lognorm logser loguniform lomax matrix_normal matrix_t maxwell mielke
moyal multivariate_hypergeom multivariate_t nakagami ncf nchypergeom_fisher
nchypergeom_wallenius nct ncx2 nhypergeom normal_inverse_gamma norminvgauss ortho_group
pareto pearson3 planck poisson_binom powerlaw powerlognorm powernorm randint
random_correlation random_table rayleigh rdist recipinvgauss reciprocal rel_breitwigner rice
semicircular skellam skewcauchy skewnorm special_ortho_group studentized_range trapezoid
triang truncexpon truncnorm truncpareto truncweibull_min tukeylambda uniform_direction
unitary_group vonmises_fisher vonmises_line wald weibull_max weibull_min wishart
wrapcauchy yulesimon zipf zipfian
""".split())

# the chosen callables of scipy.linalg, scipy.signal and scipy.integrate: None where
# functorch_core.scipy has a traced version, else why not (yet)
_YET = "not implemented yet (to be built: "
CHOSEN = {
    "scipy.linalg": {
        **dict.fromkeys(("solve_triangular", "cho_factor", "cho_solve", "lu_factor",
                         "lu_solve", "lu", "expm", "sqrtm", "block_diag", "eigh", "cholesky",
                         "solve", "inv", "det", "solve_sylvester",
                         "solve_continuous_lyapunov", "solve_banded")),
        "qr": _YET + "fnp.linalg.qr's primitive with SciPy's modes and pivoting)",
        "svd": _YET + "fnp.linalg.svd with SciPy's lapack_driver)",
        "eig": _YET + "fnp.linalg.eig with left vectors and generalized problems)",
        "eigvals": _YET + "fnp.linalg.eigvals with generalized problems)",
        "eigvalsh": _YET + "fnp.linalg.eigvalsh with subsets and generalized problems)",
        "schur": _YET + "a Schur decomposition primitive)",
        "hessenberg": _YET + "a Hessenberg reduction primitive)",
        "logm": _YET + "inverse scaling and squaring over sqrtm)",
        "polar": _YET + "the polar factors from the SVD)",
        "lstsq": _YET + "fnp.linalg.lstsq with SciPy's cond and drivers)",
        "pinv": _YET + "fnp.linalg.pinv with SciPy's atol/rtol)",
    },
    "scipy.signal": {
        **dict.fromkeys(("convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d",
                         "choose_conv_method")),
        "oaconvolve": _YET + "overlap-add over fftconvolve)",
        "lfilter": _YET + "a linear recurrence as a scan)",
        "filtfilt": _YET + "lfilter forwards and backwards with padding)",
        "sosfilt": _YET + "second-order sections as scans)",
    },
    "scipy.integrate": {
        **dict.fromkeys(("trapezoid", "cumulative_trapezoid", "simpson", "odeint",
                         "solve_ivp")),
        "quad": "refused: adaptive, the number of evaluations depends on the values (use "
                "fixed nodes: simpson or trapezoid on a grid)",
    },
}

# where the supported names of each SciPy namespace are tested
SCIPY_TESTS = {
    "scipy.special": ("tests/special",),
    "scipy.stats": ("tests/special/test_scipy_stats.py",),
    "scipy.linalg": ("tests/linalg_fft",),
    "scipy.signal": ("tests/linalg_fft/test_scipy_signal.py",),
    "scipy.integrate": ("tests/lax/test_scipy_integrate.py",),
}
