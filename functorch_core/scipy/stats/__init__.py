"""``scipy.stats``' distributions over the traceable NumPy layer, as ``jax.scipy.stats``:
each distribution an object whose functions (``stats.norm.logpdf(x, loc=0, scale=1)``,
``stats.gamma.cdf(x, a, loc=0, scale=1)``, ``stats.poisson.logpmf(k, mu, loc=0)``, ...) take
SciPy's arguments by SciPy's names, return SciPy's values (its edge and invalid-parameter
rules included) in float64 as SciPy does, and are differentiable, ``jit``- and
``vmap``-able, being built from :mod:`functorch_core.scipy.special` and
:mod:`functorch_core.numpy`.

Example::

    >>> import functorch_core as fc
    >>> from functorch_core.scipy import stats
    >>> fc.grad(lambda mu: stats.norm.logpdf(1.0, loc=mu))(0.25)
    0.75
"""

from ._circular import vonmises
from ._continuous import beta, cauchy, chi2, expon, gamma, laplace, logistic, norm, t, uniform
from ._discrete import bernoulli, binom, geom, nbinom, poisson
from ._multivariate import dirichlet, multinomial, multivariate_normal

__all__ = ["norm", "t", "beta", "gamma", "chi2", "expon", "laplace", "logistic", "cauchy",
           "uniform", "poisson", "binom", "bernoulli", "nbinom", "geom",
           "multivariate_normal", "dirichlet", "multinomial", "vonmises"]
